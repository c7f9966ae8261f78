/*
 * fuzz_toolchan.c - libFuzzer harness for the host-call channel's intake
 * (call/toolchan.c): what a cell's worker writes on its tools fd.
 *
 * Byte 0 sets the message bound (1 to 256 bytes), byte 1 the calls bound
 * (1 to 8), byte 2 the bytes bound (64 to 16,384 by 64) and byte 3 how the
 * rest is cut into feeds; the rest is the stream.  Properties: a feed
 * never takes more than it is given nor takes anything once the channel
 * is closed; a call names a declared tool (here: "a", "search") with an
 * id and an object of arguments, and no more calls are handed out than
 * the bound; every answer written is one line that parses back as a
 * JSON-RPC error object; a closed channel stays closed, says why, and is
 * told so once; the bytes counted never pass the bound while open.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "toolchan.h"

static bool is_declared(const char *name, void *ctx)
{
	(void)ctx;
	return strcmp(name, "a") == 0 || strcmp(name, "search") == 0;
}

static void check_answer(char *line, size_t n)
{
	json_t *back, *err;

	if (!line)
		return;
	CHECK(n > 0 && line[n - 1] == '\n' && memchr(line, '\n', n) == line + n - 1);
	back = json_loadb(line, n - 1, 0, NULL);
	err = json_object_get(back, "error");
	CHECK(json_is_object(back) && json_is_object(err) &&
	      json_is_integer(json_object_get(err, "code")) &&
	      json_is_string(json_object_get(err, "message")));
	json_decref(back);
	free(line);
}

/* Every event the intake holds; false once it is closed. */
static bool drain(struct toolchan *ch, size_t *calls, size_t *told)
{
	for (;;) {
		struct toolchan_call call;
		char *answer;
		size_t len;
		enum toolchan_event ev = toolchan_next(ch, is_declared, NULL, &call, &answer, &len);

		switch (ev) {
		case TOOLCHAN_NONE:
			CHECK(!answer);
			return !ch->closed;
		case TOOLCHAN_CALL:
			CHECK(!answer && !ch->closed);
			CHECK(is_declared(call.name, NULL));
			CHECK(json_is_string(call.id) || json_is_integer(call.id));
			CHECK(json_is_object(call.arguments));
			CHECK(++*calls <= ch->lim.calls_max);
			toolchan_call_release(&call);
			/* An answer of a few bytes, as a tool's would be. */
			(void)toolchan_count_answer(ch, 16);
			break;
		case TOOLCHAN_REPLY:
			CHECK(answer);
			check_answer(answer, len);
			break;
		case TOOLCHAN_CLOSED:
		default:
			CHECK(ch->closed && ch->why[0] && ch->told);
			*told += answer != NULL;
			check_answer(answer, len);
			return false;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toolchan ch;
	struct toolchan_limits lim;
	size_t step, off = 4, calls = 0, told = 0;

	if (size < 4)
		return 0;
	lim.msg_max = (size_t)data[0] + 1;
	lim.calls_max = (size_t)(data[1] % 8) + 1;
	lim.bytes_max = ((size_t)data[2] + 1) * 64;
	step = (size_t)(data[3] % 23) + 1;
	toolchan_init(&ch, &lim);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		long took = toolchan_feed(&ch, data + off, n);

		CHECK(took >= 0 && (size_t)took <= n);
		if (ch.closed && took == 0)
			break;
		off += (size_t)took;
		if (!drain(&ch, &calls, &told))
			break;
		CHECK(ch.bytes <= lim.bytes_max || ch.closed);
	}
	if (ch.closed) {
		CHECK(toolchan_feed(&ch, "x\n", 2) == 0);
		(void)drain(&ch, &calls, &told);
		CHECK(told <= 1);
	}
	toolchan_release(&ch);
	return 0;
}
