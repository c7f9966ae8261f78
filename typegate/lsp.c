/*
 * lsp.c - frame and decode LSP messages, read published diagnostics.
 *
 * The bytes come from a language server we do not control: every length
 * is checked before use, the header block and the body are capped
 * (LSP_MAX_HEADER, LSP_MAX_BODY), numbers must be plain decimal that fits,
 * and JSON is parsed by jansson with its own depth limit.  Fuzzed by
 * fuzz/fuzz_lsp.c.
 */
#include "lsp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONTENT_LENGTH "content-length:"

/* The value of a Content-Length header line [p, end), or -1. */
static long long content_length(const char *p, const char *end)
{
	long long n = 0;
	bool digits = false;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > (long long)LSP_MAX_BODY)
			return -1;
		digits = true;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return digits && p == end ? n : -1;
}

enum lsp_frame lsp_frame_find(const char *buf, size_t len, size_t *body_off,
                              size_t *body_len, size_t *used)
{
	long long n = -1;
	size_t i = 0;

	for (;;) {
		const char *nl;
		size_t line;

		if (i >= len)
			return len > LSP_MAX_HEADER ? LSP_FRAME_BAD : LSP_FRAME_MORE;
		nl = memchr(buf + i, '\n', len - i);
		if (!nl)
			return len > LSP_MAX_HEADER ? LSP_FRAME_BAD : LSP_FRAME_MORE;
		line = (size_t)(nl - (buf + i));
		if (i + line + 1 > LSP_MAX_HEADER)
			return LSP_FRAME_BAD;
		/* Each header line ends with "\r\n"; an empty one ends the block. */
		if (line == 0 || buf[i + line - 1] != '\r')
			return LSP_FRAME_BAD;
		if (line == 1) {
			i += 2;
			break;
		}
		if (line - 1 >= sizeof(CONTENT_LENGTH) - 1 &&
		    strncasecmp(buf + i, CONTENT_LENGTH, sizeof(CONTENT_LENGTH) - 1) == 0) {
			if (n >= 0)
				return LSP_FRAME_BAD;   /* twice: which one is true? */
			n = content_length(buf + i + sizeof(CONTENT_LENGTH) - 1, buf + i + line - 1);
			if (n < 0)
				return LSP_FRAME_BAD;
		} else if (!memchr(buf + i, ':', line)) {
			return LSP_FRAME_BAD;
		}
		i += line + 1;
	}
	if (n < 0)
		return LSP_FRAME_BAD;
	if (len - i < (size_t)n)
		return LSP_FRAME_MORE;
	*body_off = i;
	*body_len = (size_t)n;
	*used = i + (size_t)n;
	return LSP_FRAME_OK;
}

char *lsp_frame_encode(const json_t *msg, size_t *len)
{
	char *body = json_dumps(msg, JSON_COMPACT), *frame = NULL;
	size_t n;
	int w;

	if (!body)
		return NULL;
	n = strlen(body);
	w = asprintf(&frame, "Content-Length: %zu\r\n\r\n%s", n, body);
	free(body);
	if (w < 0)
		return NULL;
	*len = (size_t)w;
	return frame;
}

int lsp_msg_decode(const char *body, size_t len, json_t **root, struct lsp_msg *m)
{
	json_t *j, *method, *id;

	memset(m, 0, sizeof(*m));
	*root = NULL;
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	if (!j)
		return -1;
	if (!json_is_object(j) || !json_is_string(json_object_get(j, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(j, "jsonrpc")), "2.0") != 0)
		goto bad;
	method = json_object_get(j, "method");
	id = json_object_get(j, "id");
	if (id && !json_is_integer(id) && !json_is_string(id) && !json_is_null(id))
		goto bad;
	m->id = id;
	m->params = json_object_get(j, "params");
	if (m->params && !json_is_object(m->params) && !json_is_array(m->params))
		goto bad;
	if (method) {
		if (!json_is_string(method))
			goto bad;
		m->method = json_string_value(method);
		m->kind = id ? LSP_REQUEST : LSP_NOTIFICATION;
	} else {
		if (!id)
			goto bad;
		m->kind = LSP_RESPONSE;
		m->result = json_object_get(j, "result");
		m->error = json_object_get(j, "error") != NULL;
		if (!m->result && !m->error)
			goto bad;
	}
	*root = j;
	return 0;
bad:
	json_decref(j);
	memset(m, 0, sizeof(*m));
	return -1;
}

/* A position {"line": n, "character": n} with both in range. */
static bool position_ok(const json_t *p)
{
	const json_t *l = json_object_get(p, "line"), *c = json_object_get(p, "character");

	return json_is_object(p) && json_is_integer(l) && json_is_integer(c) &&
	       json_integer_value(l) >= 0 && json_integer_value(c) >= 0 &&
	       json_integer_value(l) < 100000000 && json_integer_value(c) < 100000000;
}

/* One LSP diagnostic as one of pyright's --outputjson; NULL to leave it
 * out (a hint), or sets *bad when it is malformed. */
static json_t *cli_diagnostic(const json_t *d, const char *path, size_t *errors, bool *bad)
{
	static const char *const severities[] = { "error", "warning", "information" };
	const json_t *sev = json_object_get(d, "severity"), *msg = json_object_get(d, "message");
	const json_t *range = json_object_get(d, "range"), *code = json_object_get(d, "code");
	json_int_t s = 1;
	json_t *out;

	if (!json_is_object(d) || !json_is_string(msg) || !json_is_object(range) ||
	    !position_ok(json_object_get(range, "start")) ||
	    !position_ok(json_object_get(range, "end")) || (sev && !json_is_integer(sev))) {
		*bad = true;
		return NULL;
	}
	if (sev)
		s = json_integer_value(sev);
	if (s < 1 || s > 4) {
		*bad = true;
		return NULL;
	}
	if (s == 4)
		return NULL;
	if (s == 1)
		(*errors)++;
	out = json_pack("{s:s, s:s, s:O, s:O}", "file", path, "severity", severities[s - 1],
	                "message", msg, "range", range);
	if (out && json_is_string(code) && json_object_set(out, "rule", (json_t *)code) < 0) {
		json_decref(out);
		out = NULL;
	}
	if (!out)
		*bad = true;
	return out;
}

int lsp_diagnostics(const json_t *result, const char *path, char **out, size_t *errors)
{
	const json_t *kind = json_object_get(result, "kind");
	const json_t *list = json_object_get(result, "items");
	json_t *diags, *doc;
	bool bad = false;
	size_t i;
	const json_t *d;

	*out = NULL;
	*errors = 0;
	if (!json_is_object(result) || !json_is_string(kind) || !json_is_array(list) ||
	    strcmp(json_string_value(kind), "full") != 0)
		return -1;
	diags = json_array();
	if (!diags)
		return -1;
	json_array_foreach(list, i, d) {
		json_t *g = cli_diagnostic(d, path, errors, &bad);

		if (bad)
			break;
		if (g && json_array_append_new(diags, g) < 0) {
			bad = true;
			break;
		}
	}
	if (bad) {
		json_decref(diags);
		return -1;
	}
	doc = json_pack("{s:o}", "generalDiagnostics", diags);
	if (!doc)
		return -1;
	*out = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return *out ? 0 : -1;
}
