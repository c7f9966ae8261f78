/*
 * fuzz_jsonrpc.c - libFuzzer harness for what `dolsot mcp` reads from its
 * client: the line splitter and the message checks (jsonrpc.c).
 *
 * Byte 0 sets the line bound (1 to 256 bytes) and byte 1 how the rest is
 * cut into feeds; the rest is the stream.  Every line handed out must fit
 * the bound and hold no newline; every line is parsed, and a message that
 * passes must be what its kind says; every answer written about it (a
 * result, the raw form, an error quoting its method, a notification) must
 * be one line that parses back as an object.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(char *line, size_t n)
{
	json_t *back;

	CHECK(line && n > 0 && line[n - 1] == '\n' && memchr(line, '\n', n) == line + n - 1);
	back = json_loadb(line, n - 1, 0, NULL);
	CHECK(json_is_object(back));
	json_decref(back);
	free(line);
}

static void check_fault(const struct jsonrpc_fault *f)
{
	size_t n = 0;
	char *out;

	CHECK(f->code == JSONRPC_PARSE_ERROR || f->code == JSONRPC_INVALID_REQUEST);
	CHECK(!f->id || json_is_string(f->id) || json_is_integer(f->id));
	out = jsonrpc_error(f->id, f->code, f->message, &n);
	check_line(out, n);
	json_decref(f->id);
}

/* One message (never a batch): what it holds, and every answer to it. */
static void check_message(struct jsonrpc_msg *m)
{
	size_t n = 0;
	char *out;

	CHECK(json_is_object(m->root));
	switch (m->kind) {
	case JSONRPC_REQUEST:
		CHECK(m->id && m->method && *m->method);
		break;
	case JSONRPC_NOTIFICATION:
		CHECK(!m->id && m->method);
		break;
	case JSONRPC_RESPONSE:
		CHECK(m->id && !m->method);
		break;
	case JSONRPC_BATCH:
	default:
		CHECK(0);
	}
	CHECK(!m->params || json_is_object(m->params) || json_is_array(m->params));
	out = jsonrpc_result(m->id, m->root, &n);
	check_line(out, n);
	out = jsonrpc_result_raw(m->id, "{}", 2, &n);
	check_line(out, n);
	if (m->method) {
		char msg[200];

		snprintf(msg, sizeof(msg), "unknown method '%s'", m->method);
		out = jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND, msg, &n);
		check_line(out, n);
		out = jsonrpc_notification(m->method, m->params, &n);
		check_line(out, n);
	}
	jsonrpc_msg_release(m);
}

static void answer(const char *line, size_t len)
{
	struct jsonrpc_msg m, e;
	struct jsonrpc_fault f;
	size_t i;
	json_t *v;

	if (jsonrpc_parse(line, len, &m, &f) < 0) {
		check_fault(&f);
		return;
	}
	if (m.kind != JSONRPC_BATCH) {
		check_message(&m);
		return;
	}
	CHECK(json_is_array(m.root) && json_array_size(m.root) > 0 && !m.id && !m.method);
	json_array_foreach(m.root, i, v) {
		if (jsonrpc_parse_value(json_incref(v), &e, &f) < 0)
			check_fault(&f);
		else
			check_message(&e);
	}
	jsonrpc_msg_release(&m);
}

static void drain(struct jsonrpc_reader *r, bool end)
{
	const char *line;
	size_t len;
	enum jsonrpc_line got;

	while ((got = end ? jsonrpc_rest(r, &line, &len) : jsonrpc_next(r, &line, &len)) !=
	       JSONRPC_LINE_NONE) {
		if (got == JSONRPC_LINE) {
			CHECK(len <= r->max);
			CHECK(!memchr(line, '\n', len));
			answer(line, len);
		}
		if (end)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_reader r;
	size_t step, off = 2;

	if (size < 2)
		return 0;
	jsonrpc_reader_init(&r, (size_t)data[0] + 1);
	step = (size_t)(data[1] % 17) + 1;
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		long took = jsonrpc_feed(&r, data + off, n);

		CHECK(took > 0 && (size_t)took <= n);
		off += (size_t)took;
		drain(&r, false);
	}
	drain(&r, true);
	jsonrpc_reader_release(&r);
	return 0;
}
