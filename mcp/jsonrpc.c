/*
 * jsonrpc.c - JSON-RPC 2.0 over lines: the splitter, the checks one
 * message must pass, and the writers.  Every byte here came from a client.
 */
#include "jsonrpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonrpc_reader_init(struct jsonrpc_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max;
}

void jsonrpc_reader_release(struct jsonrpc_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
}

static int reserve(struct jsonrpc_reader *r, size_t more)
{
	size_t want = r->len + more, cap = r->cap ? r->cap : 4096;
	char *grown;

	if (want <= r->cap)
		return 0;
	while (cap < want)
		cap = cap > (size_t)-1 / 2 ? want : cap * 2;
	grown = realloc(r->buf, cap);
	if (!grown) {
		errno = ENOMEM;
		return -1;
	}
	r->buf = grown;
	r->cap = cap;
	return 0;
}

long jsonrpc_feed(struct jsonrpc_reader *r, const void *p, size_t n)
{
	const char *s = p, *nl;
	size_t take, body;

	if (r->ready != JSONRPC_LINE_NONE)
		return 0;
	if (r->handed) {
		r->len = 0;
		r->handed = false;
	}
	if (n > (size_t)0x7fffffff)
		n = 0x7fffffff;
	nl = memchr(s, '\n', n);
	take = nl ? (size_t)(nl - s) + 1 : n;
	if (r->skipping) {
		if (nl)
			r->skipping = false;
		return (long)take;
	}
	body = r->len + (nl ? take - 1 : take);
	if (body > r->max) {
		/* Too long: report it now, keep none of it. */
		r->len = 0;
		r->ready = JSONRPC_LINE_OVERSIZE;
		r->skipping = !nl;
		return (long)take;
	}
	if (reserve(r, take) < 0)
		return -1;
	memcpy(r->buf + r->len, s, nl ? take - 1 : take);
	r->len += nl ? take - 1 : take;
	if (nl)
		r->ready = JSONRPC_LINE;
	return (long)take;
}

static enum jsonrpc_line hand(struct jsonrpc_reader *r, const char **line, size_t *len)
{
	size_t n = r->len;

	if (n && r->buf[n - 1] == '\r')
		n--;
	*line = r->buf ? r->buf : "";
	*len = n;
	r->handed = true;
	return JSONRPC_LINE;
}

enum jsonrpc_line jsonrpc_next(struct jsonrpc_reader *r, const char **line, size_t *len)
{
	int ready = r->ready;

	r->ready = JSONRPC_LINE_NONE;
	*line = NULL;
	*len = 0;
	if (ready == JSONRPC_LINE)
		return hand(r, line, len);
	return (enum jsonrpc_line)ready;
}

enum jsonrpc_line jsonrpc_rest(struct jsonrpc_reader *r, const char **line, size_t *len)
{
	enum jsonrpc_line got = jsonrpc_next(r, line, len);

	if (got != JSONRPC_LINE_NONE)
		return got;
	if (r->handed || r->skipping || r->len == 0)
		return JSONRPC_LINE_NONE;
	return hand(r, line, len);
}

static int fault(struct jsonrpc_fault *f, int code, const json_t *id, const char *msg)
{
	f->code = code;
	snprintf(f->message, sizeof(f->message), "%s", msg);
	f->id = id ? json_incref((json_t *)id) : NULL;
	return -1;
}

int jsonrpc_parse(const char *line, size_t len, struct jsonrpc_msg *m,
                  struct jsonrpc_fault *f)
{
	json_error_t je;
	json_t *root;
	char why[160];

	memset(m, 0, sizeof(*m));
	memset(f, 0, sizeof(*f));
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		/* je.text may quote the input: say where, not what. */
		snprintf(why, sizeof(why), "parse error: not valid JSON (at byte %d)",
		         je.position);
		return fault(f, JSONRPC_PARSE_ERROR, NULL, why);
	}
	if (!json_is_array(root))
		return jsonrpc_parse_value(root, m, f);
	if (json_array_size(root) == 0) {
		json_decref(root);
		return fault(f, JSONRPC_INVALID_REQUEST, NULL,
		             "invalid request: an empty batch");
	}
	m->kind = JSONRPC_BATCH;
	m->root = root;
	return 0;
}

int jsonrpc_parse_value(json_t *root, struct jsonrpc_msg *m, struct jsonrpc_fault *f)
{
	json_t *id, *method, *ver, *params;

	memset(m, 0, sizeof(*m));
	memset(f, 0, sizeof(*f));
	if (!json_is_object(root)) {
		json_decref(root);
		return fault(f, JSONRPC_INVALID_REQUEST, NULL,
		             "invalid request: a message is a JSON object");
	}
	id = json_object_get(root, "id");
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		json_decref(root);
		return fault(f, JSONRPC_INVALID_REQUEST, NULL,
		             "invalid request: \"id\" must be a string or an integer");
	}
	ver = json_object_get(root, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
		fault(f, JSONRPC_INVALID_REQUEST, id,
		      "invalid request: \"jsonrpc\" must be \"2.0\"");
		json_decref(root);
		return -1;
	}
	method = json_object_get(root, "method");
	params = json_object_get(root, "params");
	if (!method) {
		if (id && (json_object_get(root, "result") || json_object_get(root, "error"))) {
			m->kind = JSONRPC_RESPONSE;
			m->root = root;
			m->id = id;
			return 0;
		}
		fault(f, JSONRPC_INVALID_REQUEST, id, "invalid request: no \"method\"");
		json_decref(root);
		return -1;
	}
	if (!json_is_string(method) || json_string_length(method) == 0) {
		fault(f, JSONRPC_INVALID_REQUEST, id,
		      "invalid request: \"method\" must be a non-empty string");
		json_decref(root);
		return -1;
	}
	if (params && !json_is_object(params) && !json_is_array(params)) {
		fault(f, JSONRPC_INVALID_REQUEST, id,
		      "invalid request: \"params\" must be an object or an array");
		json_decref(root);
		return -1;
	}
	m->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	m->root = root;
	m->id = id;
	m->method = json_string_value(method);
	m->params = params;
	return 0;
}

void jsonrpc_msg_release(struct jsonrpc_msg *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

/* obj as one line; takes obj's reference. */
static char *line_of(json_t *obj, size_t *len)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	char *out = NULL;
	size_t n;

	json_decref(obj);
	if (!text) {
		errno = ENOMEM;
		return NULL;
	}
	n = strlen(text);
	out = realloc(text, n + 2);
	if (!out) {
		free(text);
		errno = ENOMEM;
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	*len = n + 1;
	return out;
}

static json_t *envelope(const json_t *id)
{
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "jsonrpc", json_string("2.0")) < 0 ||
	    json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null()) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *jsonrpc_result(const json_t *id, const json_t *result, size_t *len)
{
	json_t *o = envelope(id);

	if (o && json_object_set_new(o, "result", json_deep_copy(result)) < 0) {
		json_decref(o);
		o = NULL;
	}
	return line_of(o, len);
}

char *jsonrpc_result_raw(const json_t *id, const char *result, size_t n, size_t *len)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char mid[] = ",\"result\":";
	char *idtext = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
	size_t idn, total;
	char *out;

	if (!idtext) {
		errno = ENOMEM;
		return NULL;
	}
	idn = strlen(idtext);
	total = sizeof(head) - 1 + idn + sizeof(mid) - 1 + n + 2;
	out = malloc(total + 1);
	if (!out) {
		free(idtext);
		errno = ENOMEM;
		return NULL;
	}
	*len = 0;
	memcpy(out, head, sizeof(head) - 1);
	*len += sizeof(head) - 1;
	memcpy(out + *len, idtext, idn);
	*len += idn;
	memcpy(out + *len, mid, sizeof(mid) - 1);
	*len += sizeof(mid) - 1;
	memcpy(out + *len, result, n);
	*len += n;
	out[(*len)++] = '}';
	out[(*len)++] = '\n';
	out[*len] = '\0';
	free(idtext);
	return out;
}

/* message as a JSON string; bytes that are not UTF-8 become '?'. */
static json_t *text_value(const char *message)
{
	json_t *s = json_string(message);
	char *copy;

	if (s)
		return s;
	copy = strdup(message);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	s = json_string(copy);
	free(copy);
	return s;
}

char *jsonrpc_error(const json_t *id, int code, const char *message, size_t *len)
{
	json_t *o = envelope(id), *e = json_object();

	if (!o || !e || json_object_set_new(e, "code", json_integer(code)) < 0 ||
	    json_object_set_new(e, "message", text_value(message)) < 0) {
		json_decref(o);
		json_decref(e);
		errno = ENOMEM;
		return NULL;
	}
	if (json_object_set_new(o, "error", e) < 0) {   /* e is taken either way */
		json_decref(o);
		errno = ENOMEM;
		return NULL;
	}
	return line_of(o, len);
}

char *jsonrpc_notification(const char *method, const json_t *params, size_t *len)
{
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "jsonrpc", json_string("2.0")) < 0 ||
	    json_object_set_new(o, "method", json_string(method)) < 0 ||
	    (params && json_object_set_new(o, "params", json_deep_copy(params)) < 0)) {
		json_decref(o);
		errno = ENOMEM;
		return NULL;
	}
	return line_of(o, len);
}
