/*
 * output_json.c - the --json contract: one JSON object on stdout per call,
 * built with jansson from the same struct result output.c renders as text.
 * Field names follow Jupyter's where it has one; schema/result.schema.json
 * is the contract and dolsot(1) (JSON OUTPUT) documents it.
 *
 * Every string goes through output_json_utf8_clean() first: jansson refuses
 * invalid UTF-8, and a cell's output may be any bytes.
 */
#include "output_json.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "utc.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char b = p[0];
	size_t len;
	unsigned long cp;

	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf) {
		len = 2;
		cp = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3;
		cp = b & 0x0f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4;
		cp = b & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

size_t output_json_utf8_clean(const char *in, size_t n, char *out)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		size_t len = utf8_seq(p + i, n - i);

		if (len == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, len);
		o += len;
		i += len;
	}
	return o;
}

/* A JSON string of any bytes; NULL only when memory ran out. */
static json_t *jstr(const char *s, size_t n)
{
	char *clean;
	size_t len;
	json_t *j;

	if (!s)
		return json_stringn("", 0);
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	clean = malloc(n * 3 + 1);
	if (!clean)
		return NULL;
	len = output_json_utf8_clean(s, n, clean);
	j = json_stringn(clean, len);
	free(clean);
	return j;
}

json_t *output_json_string(const char *s, size_t n)
{
	return jstr(s, n);
}

static json_t *jstr0(const char *s)
{
	return s ? jstr(s, strlen(s)) : json_null();
}

/* jansson's set_new steals the value; a NULL value marks the object bad. */
static void put(json_t *obj, const char *key, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		*bad = true;
}

static void push(json_t *arr, json_t *v, bool *bad)
{
	if (!v || json_array_append_new(arr, v) < 0)
		*bad = true;
}

static struct span span_owned(const struct owned *o)
{
	return (struct span){ (const uint8_t *)o->p, o->len, o->p != NULL };
}

/* The next line of a '\n'-separated text (NULL: none) into *line. */
static bool next_line(const char **p, const char **line, size_t *n)
{
	const char *nl;

	if (!*p || !**p)
		return false;
	nl = strchr(*p, '\n');
	*line = *p;
	*n = nl ? (size_t)(nl - *p) : strlen(*p);
	*p += *n + (nl != NULL);
	return true;
}

/* Lines of a '\n'-separated text as an array of strings. */
static json_t *lines_array(const char *text, bool *bad)
{
	json_t *arr = json_array();
	const char *line;
	size_t n;

	if (!arr) {
		*bad = true;
		return NULL;
	}
	while (next_line(&text, &line, &n))
		push(arr, jstr(line, n), bad);
	return arr;
}

#define HINT_PREFIX "hint: "

/* How many blanks come before a hint line's "hint: " (the type gate
 * indents its hints under their diagnostic); n + 1 when it is no hint. */
static size_t hint_indent(const char *line, size_t n)
{
	size_t i = 0;

	while (i < n && line[i] == ' ')
		i++;
	return n - i >= strlen(HINT_PREFIX) && strncmp(line + i, HINT_PREFIX,
	                                              strlen(HINT_PREFIX)) == 0 ? i : n + 1;
}

static bool is_hint(const char *line, size_t n)
{
	return hint_indent(line, n) <= n;
}

/* An error text of dolsot's own (a timeout, a crash) without its hint
 * lines, which go to the error's "hints" as a cell's hints do (malloc'd;
 * NULL when out of memory). */
static char *without_hints(const char *text)
{
	char *out = malloc(strlen(text) + 1), *at = out;
	const char *line;
	size_t n;

	if (!out)
		return NULL;
	while (next_line(&text, &line, &n))
		if (!is_hint(line, n)) {
			if (at != out)
				*at++ = '\n';
			memcpy(at, line, n);
			at += n;
		}
	*at = '\0';
	return out;
}

/* Push the hint lines of an error text of dolsot's own onto arr. */
static void push_hints(json_t *arr, const char *text, bool *bad)
{
	const char *line;
	size_t n;

	while (arr && next_line(&text, &line, &n))
		if (is_hint(line, n))
			push(arr, jstr(line + hint_indent(line, n), n - hint_indent(line, n)), bad);
}

static json_t *items_array(const struct owned *o, bool *bad)
{
	struct span rest = span_owned(o), item;
	json_t *arr = json_array();

	if (!arr) {
		*bad = true;
		return NULL;
	}
	while (span_next_item(&rest, &item))
		push(arr, jstr((const char *)item.p, item.len), bad);
	return arr;
}

/* A decimal number of an item; -1 when it is not one. */
static long long item_number(struct span s)
{
	long long v = 0;

	if (s.len == 0 || s.len > 12)
		return -1;
	for (size_t i = 0; i < s.len; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return -1;
		v = v * 10 + (s.p[i] - '0');
	}
	return v;
}

static json_t *number_or_null(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* ename and evalue from an error text: "Name: message" when it starts
 * with an identifier, else the text is dolsot's own. */
static void split_error(const char *text, json_t *err, bool *bad)
{
	const char *nl = strchr(text, '\n');
	size_t first = nl ? (size_t)(nl - text) : strlen(text);
	size_t name = 0;

	while (name < first && (text[name] == '_' || text[name] == '.' ||
	                        (text[name] >= 'A' && text[name] <= 'Z') ||
	                        (text[name] >= 'a' && text[name] <= 'z') ||
	                        (name && text[name] >= '0' && text[name] <= '9')))
		name++;
	if (name && name < first && text[name] == ':' && strncmp(text, "dolsot", name) != 0) {
		const char *v = text + name + 1 + (text[name + 1] == ' ');

		put(err, "ename", jstr(text, name), bad);
		put(err, "evalue", jstr(v, strlen(v)), bad);
	} else if (name == first) {
		put(err, "ename", jstr(text, name), bad);
		put(err, "evalue", jstr(nl ? nl + 1 : "", nl ? strlen(nl + 1) : 0), bad);
	} else {
		const char *v = strncmp(text, "dolsot: ", 8) == 0 ? text + 8 : text;

		put(err, "ename", json_string("DolsotError"), bad);
		put(err, "evalue", jstr(v, strlen(v)), bad);
	}
}

static json_t *error_object(const struct result *r, bool *bad)
{
	struct span rest = span_owned(&r->error_info), item;
	json_t *err, *tb, *hints;
	bool own = false;   /* the error is a text of dolsot's own */

	if (!r->error)
		return json_null();
	err = json_object();
	if (!err) {
		*bad = true;
		return NULL;
	}
	if (span_next_item(&rest, &item)) {
		struct span value = { 0 }, line = { 0 };

		put(err, "ename", jstr((const char *)item.p, item.len), bad);
		span_next_item(&rest, &value);
		span_next_item(&rest, &line);
		put(err, "evalue", jstr((const char *)value.p, value.len), bad);
		put(err, "line", number_or_null(line.present ? item_number(line) : -1), bad);
		tb = json_array();
		while (tb && span_next_item(&rest, &item))
			push(tb, jstr((const char *)item.p, item.len), bad);
		if (tb && json_array_size(tb) == 0) {
			json_decref(tb);
			tb = lines_array(r->error, bad);
		}
		put(err, "traceback", tb, bad);
	} else {
		char *message = without_hints(r->error);

		if (!message)
			*bad = true;
		own = true;
		split_error(message ? message : r->error, err, bad);
		put(err, "line", json_null(), bad);
		put(err, "traceback", lines_array(message ? message : r->error, bad), bad);
		free(message);
	}
	hints = items_array(&r->hints, bad);
	if (own)
		push_hints(hints, r->error, bad);
	put(err, "hints", hints, bad);
	return err;
}

static const char *state_name(const struct result *r)
{
	if (r->saved)
		return r->found ? "committed" : "created";
	return r->ran ? "rolled_back" : "unchanged";
}

/* "name\treason" lines as [{name, reason}]. */
static json_t *named_reasons(const char *text, bool *bad)
{
	json_t *arr = json_array();
	const char *p;
	size_t n;

	if (!arr) {
		*bad = true;
		return NULL;
	}
	while (next_line(&text, &p, &n)) {
		const char *tab = memchr(p, '\t', n);
		json_t *o = json_object();

		if (!o) {
			*bad = true;
			break;
		}
		put(o, "name", jstr(p, tab ? (size_t)(tab - p) : n), bad);
		put(o, "reason", tab ? jstr(tab + 1, n - (size_t)(tab - p) - 1) : json_string(""),
		    bad);
		push(arr, o, bad);
	}
	return arr;
}

/* The type gate: whether it checks the cells, with what, and why not or
 * why another checker than the configured one. */
static json_t *gate_object(const struct gate_state *g, bool *bad)
{
	json_t *o = json_object();

	if (!o) {
		*bad = true;
		return NULL;
	}
	put(o, "on", json_boolean(g->checker[0] != '\0'), bad);
	put(o, "checker", g->checker[0] ? jstr0(g->checker) : json_null(), bad);
	put(o, "note", g->note[0] ? jstr0(g->note) : json_null(), bad);
	return o;
}

static json_t *session_object(const struct result *r, bool *bad)
{
	json_t *s = json_object();

	if (!s) {
		*bad = true;
		return NULL;
	}
	put(s, "id", jstr0(r->session), bad);
	put(s, "state", json_string(state_name(r)), bad);
	/* After every call: the new state's names, or, rolled back (rejected,
	 * timed out, killed), what the worker said the session held when the
	 * cell began; a session that did not exist holds nothing; null only
	 * when the call ended before the worker could say. */
	put(s, "held", r->saved || r->held ? lines_array(r->held, bad) :
	               r->ran && !r->found ? json_array() : json_null(), bad);
	put(s, "dropped", named_reasons(r->dropped, bad), bad);
	put(s, "kept_unloaded", named_reasons(r->kept, bad), bad);
	return s;
}

/* What was kept of a cut text: chars in all, of its head and of its tail,
 * and the chars and bytes cut between them. */
struct cut_counts {
	unsigned long long kept, cut, head, tail, cut_bytes;
};

static json_t *cut_object(const struct cut_counts *k, bool *bad)
{
	json_t *o = json_object();

	if (!o) {
		*bad = true;
		return NULL;
	}
	put(o, "kept", json_integer((json_int_t)k->kept), bad);
	put(o, "cut", json_integer((json_int_t)k->cut), bad);
	put(o, "head", json_integer((json_int_t)k->head), bad);
	put(o, "tail", json_integer((json_int_t)k->tail), bad);
	put(o, "cut_bytes", json_integer((json_int_t)k->cut_bytes), bad);
	return o;
}

static json_t *capture_cut(const struct capture *c, bool *bad)
{
	struct cut_counts k = { c->chars, c->cut_chars, c->head_chars, c->tail_chars,
	                        c->cut_bytes };

	return cut_object(&k, bad);
}

static json_t *truncated_object(const struct result *r, bool *bad)
{
	json_t *t = json_object();
	size_t n;

	if (!t) {
		*bad = true;
		return NULL;
	}
	if (r->out.truncated)
		put(t, "stdout", capture_cut(&r->out, bad), bad);
	if (r->err.truncated)
		put(t, "stderr", capture_cut(&r->err, bad), bad);
	/* The worker's "what\tkept\tcut\thead\ttail\tcut_bytes" lines: the
	 * value, the error. */
	for (const char *p = r->truncated.p, *line; next_line(&p, &line, &n);) {
		char what[16];
		struct cut_counts k;

		if (sscanf(line, "%15[a-z]\t%llu\t%llu\t%llu\t%llu\t%llu", what, &k.kept, &k.cut,
		           &k.head, &k.tail, &k.cut_bytes) == 6 &&
		    (strcmp(what, "value") == 0 || strcmp(what, "error") == 0))
			put(t, what, cut_object(&k, bad), bad);
	}
	return t;
}

static json_t *diagnostics_array(const struct result *r, bool *bad)
{
	struct span rest = span_owned(&r->diagnostics), f[4];
	json_t *arr = json_array();

	if (!arr) {
		*bad = true;
		return NULL;
	}
	for (;;) {
		json_t *d;

		for (int i = 0; i < 4; i++)
			if (!span_next_item(&rest, &f[i]))
				return arr;
		d = json_object();
		if (!d) {
			*bad = true;
			return arr;
		}
		put(d, "line", number_or_null(item_number(f[0])), bad);
		put(d, "column", number_or_null(item_number(f[1])), bad);
		put(d, "code", f[2].len ? jstr((const char *)f[2].p, f[2].len) : json_null(), bad);
		put(d, "message", jstr((const char *)f[3].p, f[3].len), bad);
		push(arr, d, bad);
	}
}

int output_json_displays_next(struct span *rest, struct display_view *d)
{
	struct span head;
	long long w = -1, h = -1, n = -1;

	if (!span_next_item(rest, &head))
		return 0;
	if (head.len < 64) {
		char buf[64];

		memcpy(buf, head.p, head.len);
		buf[head.len] = '\0';
		if (sscanf(buf, "%lld\t%lld\t%lld", &w, &h, &n) != 3 || w < 0 || h < 0 ||
		    n < 0 || n > DISPLAY_MAX_MIMES)
			return -1;
	} else {
		return -1;
	}
	d->width = (unsigned)(w > 0xffffff ? 0xffffff : w);
	d->height = (unsigned)(h > 0xffffff ? 0xffffff : h);
	d->n = (size_t)n;
	for (size_t i = 0; i < d->n; i++)
		if (!span_next_item(rest, &d->mime[i]) || !span_next_item(rest, &d->data[i]))
			return -1;
	return 1;
}

static json_t *displays_array(const struct result *r, bool *bad)
{
	struct span rest = span_owned(&r->displays);
	struct display_view d;
	json_t *arr = json_array();

	if (!arr) {
		*bad = true;
		return NULL;
	}
	while (output_json_displays_next(&rest, &d) > 0) {
		json_t *o = json_object(), *data = json_object(), *meta = json_object();

		if (!o || !data || !meta) {
			json_decref(o);
			json_decref(data);
			json_decref(meta);
			*bad = true;
			return arr;
		}
		for (size_t i = 0; i < d.n; i++) {
			char mime[128];
			size_t n = d.mime[i].len < sizeof(mime) - 1 ? d.mime[i].len : sizeof(mime) - 1;
			char clean[128 * 3];
			size_t cn = output_json_utf8_clean((const char *)d.mime[i].p, n, clean);

			/* Cut to fit, at a char boundary: a key must be UTF-8 too. */
			if (cn >= sizeof(mime)) {
				cn = sizeof(mime) - 1;
				while (cn && ((unsigned char)clean[cn] & 0xc0) == 0x80)
					cn--;
			}
			memcpy(mime, clean, cn);
			mime[cn] = '\0';
			put(data, mime, jstr((const char *)d.data[i].p, d.data[i].len), bad);
		}
		if (d.width || d.height) {
			put(meta, "width", json_integer(d.width), bad);
			put(meta, "height", json_integer(d.height), bad);
		}
		put(o, "data", data, bad);
		put(o, "metadata", meta, bad);
		push(arr, o, bad);
	}
	return arr;
}

static json_t *timings_object(const struct result *r, bool *bad)
{
	json_t *t = json_object();

	if (!t) {
		*bad = true;
		return NULL;
	}
	for (int i = 0; i < N_TIMINGS; i++)
		put(t, result_timing_names[i],
		    r->timings_ms[i] < 0 ? json_null()
		                         : json_real((double)(long long)(r->timings_ms[i] * 1000) / 1000),
		    bad);
	return t;
}

static const char *status_name(enum result_status s)
{
	switch (s) {
	case STATUS_OK:
		return "ok";
	case STATUS_TIMEOUT:
		return "timeout";
	case STATUS_KILLED:
		return "killed";
	case STATUS_REJECTED:
		return "rejected";
	case STATUS_ERROR:
	default:
		return "error";
	}
}

static json_t *warnings_array(const struct result *r, bool *bad)
{
	json_t *arr = lines_array(r->warnings, bad);

	if (arr && r->save_error) {
		char *line = NULL;

		if (asprintf(&line, "warning: session '%s' not saved: %s", r->session,
		             r->save_error) < 0)
			*bad = true;
		else
			push(arr, jstr0(line), bad);
		free(line);
	}
	return arr;
}

/* One object, one line, then flush: hosts read until the newline. */
static int emit(json_t *obj, bool bad, FILE *out)
{
	int rc = -1;

	if (bad) {
		errno = ENOMEM;
	} else if (json_dumpf(obj, out, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6)) == 0 &&
	           fputc('\n', out) != EOF && fflush(out) != EOF && !ferror(out)) {
		rc = 0;
	}
	json_decref(obj);
	return rc;
}

int output_json_chunk(const struct stream_chunk *c, FILE *out)
{
	json_t *o = json_object();
	bool bad = !o;

	if (!bad) {
		put(o, "stream", json_string(c->name), &bad);
		put(o, "seq", json_integer((json_int_t)c->seq), &bad);
		put(o, "text", jstr(c->text, c->len), &bad);
		put(o, "dropped", json_integer((json_int_t)c->dropped), &bad);
	}
	return emit(o, bad, out);
}

int output_json_run(const struct result *r, FILE *out)
{
	json_t *o = json_object();
	bool bad = !o;

	if (bad)
		return emit(o, bad, out);
	put(o, "status", json_string(status_name(r->status)), &bad);
	put(o, "exit_code", json_integer(r->exit_code), &bad);
	put(o, "execution_count", r->count ? json_integer((json_int_t)r->count) : json_null(),
	    &bad);
	put(o, "stdout", jstr(r->out.data, r->out.len), &bad);
	put(o, "stderr", jstr(r->err.data, r->err.len), &bad);
	put(o, "value", r->value ? jstr(r->value, r->value_len) : json_null(), &bad);
	put(o, "error", error_object(r, &bad), &bad);
	put(o, "limit", jstr0(r->limit), &bad);
	put(o, "session", session_object(r, &bad), &bad);
	put(o, "truncated", truncated_object(r, &bad), &bad);
	put(o, "diagnostics", diagnostics_array(r, &bad), &bad);
	put(o, "displays", displays_array(r, &bad), &bad);
	put(o, "timings_ms", timings_object(r, &bad), &bad);
	put(o, "warnings", warnings_array(r, &bad), &bad);
	put(o, "type_gate", gate_object(&r->gate, &bad), &bad);
	return emit(o, bad, out);
}

static json_t *limits_object(const struct limits *l, double timeout, bool *bad)
{
	json_t *o = json_object();

	if (!o) {
		*bad = true;
		return NULL;
	}
	put(o, "timeout", json_real(timeout), bad);
	for (int k = 0; k < LIMIT_COUNT; k++)
		put(o, limit_name((enum limit_kind)k),
		    l->v[k] ? json_integer((json_int_t)l->v[k]) : json_null(), bad);
	return o;
}

int output_json_describe(const struct result *r, const struct limits *l, double timeout,
                         FILE *out)
{
	json_t *o = NULL;
	bool bad = false;

	if (r->describe_json.p)
		o = json_loadb(r->describe_json.p, r->describe_json.len, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		/* The worker failed (a toolbox that does not import): say why,
		 * in the same shape. */
		o = json_object();
		bad = !o;
		if (!bad) {
			put(o, "toolboxes", json_array(), &bad);
			put(o, "session", json_null(), &bad);
			put(o, "sandbox", json_false(), &bad);
			put(o, "mounts", json_array(), &bad);
			put(o, "error", error_object(r, &bad), &bad);
		}
	}
	if (!bad) {
		put(o, "limits", limits_object(l, timeout, &bad), &bad);
		put(o, "warnings", warnings_array(r, &bad), &bad);
		put(o, "type_gate", gate_object(&r->gate, &bad), &bad);
	}
	return emit(o, bad, out);
}

void output_describe_limits(const struct limits *l, double timeout, FILE *out)
{
	char set[256];

	limits_describe(l, set, sizeof(set));
	fprintf(out, "limits: --timeout %gs%s%s\n", timeout, set[0] ? ", " : "", set);
}

int output_json_sessions(const struct session_info *info, size_t n, FILE *out)
{
	json_t *o = json_object(), *arr = json_array();
	bool bad = !o || !arr;

	for (size_t i = 0; !bad && i < n; i++) {
		json_t *s = json_object();
		char when[UTC_TEXT_LEN];

		if (!s) {
			bad = true;
			break;
		}
		utc_text(info[i].mtime.tv_sec, when, sizeof(when));
		put(s, "id", jstr0(info[i].id), &bad);
		put(s, "size", json_integer((json_int_t)info[i].size), &bad);
		put(s, "last_used", json_string(when), &bad);
		push(arr, s, &bad);
	}
	if (bad) {
		json_decref(arr);
		return emit(o, true, out);
	}
	put(o, "sessions", arr, &bad);
	return emit(o, bad, out);
}

int output_json_reset(const char *target, unsigned removed, unsigned images,
                      const char *kept, FILE *out)
{
	json_t *o = json_object(), *ids = json_array();
	bool bad = !o || !ids;

	/* kept is "a, b": the ids a call held, which --reset all left */
	for (const char *p = kept; !bad && p && *p;) {
		size_t n = strcspn(p, ",");

		bad = json_array_append_new(ids, json_stringn(p, n)) < 0;
		p += n;
		p += strspn(p, ", ");
	}
	if (!bad) {
		put(o, "reset", jstr0(target), &bad);
		put(o, "removed", json_integer(removed), &bad);
		put(o, "removed_images", json_integer(images), &bad);
		if (strcmp(target, "all") == 0) {
			put(o, "kept_in_use", ids, &bad);
			ids = NULL;
		}
	}
	json_decref(ids);
	return emit(o, bad, out);
}
