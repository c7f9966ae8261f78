/*
 * notebook.c - a session's kept states as an nbformat 4.5 notebook
 * (notebook.h).  A state's record holds the code of the cell that made it
 * and that call's --json object: a cell's outputs are read from there, as
 * --history reads its status (timeline_out.c), so the two never disagree.
 */
#include "notebook.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "output_json.h"
#include "timeline_out.h"

#define NB_PYTHON "3.11"        /* the embedded interpreter's version */
#define NB_ID_MAX 64            /* nbformat 4.5: the longest cell id */
#define NB_TEXT_MAX 512         /* a markdown cell of ours, or a note */

/* jansson's append steals v; a NULL v (no memory) marks the build bad. */
static void add(json_t *arr, json_t *v, bool *bad)
{
	if (!v || json_array_append_new(arr, v) < 0)
		*bad = true;
}

/* text[0..n) as nbformat's multi-line string: its lines, each with its
 * '\n'.  NULL when memory ran out. */
static json_t *lines_of(const char *text, size_t n)
{
	json_t *arr = json_array();
	size_t i = 0;

	while (arr && i < n) {
		const char *nl = memchr(text + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - text) + 1 : n;

		if (json_array_append_new(arr, output_json_string(text + i, end - i)) < 0) {
			json_decref(arr);
			return NULL;
		}
		i = end;
	}
	return arr;
}

static json_t *lines_of_string(const json_t *s)
{
	return lines_of(json_is_string(s) ? json_string_value(s) : "", json_string_length(s));
}

static const char *string_or(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : dflt;
}

static json_t *stream(const char *name, json_t *text)
{
	return json_pack("{s:s, s:s, s:o}", "output_type", "stream", "name", name, "text", text);
}

/* One of the result's displays: each MIME form kept (text as lines), the
 * image's size as Jupyter keeps it, under its MIME type. */
static json_t *display_data(const json_t *d)
{
	const json_t *meta = json_object_get(d, "metadata");
	json_t *data = json_object(), *v, *m;
	const char *mime;

	json_object_foreach((json_t *)json_object_get(d, "data"), mime, v) {
		json_t *x = strncmp(mime, "text/", 5) == 0 ? lines_of_string(v) : json_incref(v);

		if (!data || !x || json_object_set_new(data, mime, x) < 0) {
			json_decref(data);
			return NULL;
		}
	}
	if (json_object_get(data, "image/png") && json_is_integer(json_object_get(meta, "width")))
		m = json_pack("{s:{s:O, s:O}}", "image/png", "width", json_object_get(meta, "width"),
		              "height", json_object_get(meta, "height"));
	else
		m = json_object();
	return json_pack("{s:s, s:o, s:o}", "output_type", "display_data", "data", data,
	                 "metadata", m);
}

/* The error, its hint lines after its traceback. */
static json_t *error_output(const json_t *e)
{
	json_t *tb = json_array(), *x;
	const char *ename = string_or(e, "ename", "Error"), *evalue = string_or(e, "evalue", "");
	bool bad = false;
	size_t i;

	json_array_foreach(json_object_get(e, "traceback"), i, x)
		if (tb && json_is_string(x))
			add(tb, json_incref(x), &bad);
	if (tb && !json_array_size(tb))
		add(tb, json_sprintf("%s: %s", ename, evalue), &bad);
	json_array_foreach(json_object_get(e, "hints"), i, x)
		if (tb && json_is_string(x))
			add(tb, json_incref(x), &bad);
	if (bad) {
		json_decref(tb);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:o}", "output_type", "error", "ename", ename,
	                 "evalue", evalue, "traceback", tb);
}

/* A cell's outputs from its --json object r (NULL: not kept): note first,
 * on stderr, then its streams, displays, value and error. */
static json_t *outputs_of(const json_t *r, const char *note)
{
	json_t *out = json_array(), *x;
	bool bad = !out;
	size_t i;

	if (note)
		add(out, stream("stderr", lines_of(note, strlen(note))), &bad);
	if (json_string_length(json_object_get(r, "stdout")))
		add(out, stream("stdout", lines_of_string(json_object_get(r, "stdout"))), &bad);
	if (json_string_length(json_object_get(r, "stderr")))
		add(out, stream("stderr", lines_of_string(json_object_get(r, "stderr"))), &bad);
	json_array_foreach(json_object_get(r, "displays"), i, x) {
		add(out, display_data(x), &bad);
	}
	if (json_is_string(json_object_get(r, "value")))
		add(out, json_pack("{s:s, s:O, s:{s:o}, s:{}}", "output_type", "execute_result",
		                   "execution_count", json_is_integer(json_object_get(r,
		                   "execution_count")) ? json_object_get(r, "execution_count")
		                                       : json_null(),
		                   "data", "text/plain", lines_of_string(json_object_get(r, "value")),
		                   "metadata"), &bad);
	if (json_is_object(json_object_get(r, "error")))
		add(out, error_output(json_object_get(r, "error")), &bad);
	if (bad) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *code_cell(const char *id, const uint8_t *code, size_t len, const json_t *r,
                         json_t *meta, json_t *outputs)
{
	const json_t *count = json_object_get(r, "execution_count");

	return json_pack("{s:s, s:s, s:O, s:o, s:o, s:o}", "id", id, "cell_type", "code",
	                 "execution_count", json_is_integer(count) ? count : json_null(),
	                 "metadata", meta, "source", lines_of((const char *)code, len),
	                 "outputs", outputs);
}

static json_t *markdown_cell(const char *id, const char *text, json_t *meta)
{
	return json_pack("{s:s, s:s, s:o, s:o}", "id", id, "cell_type", "markdown",
	                 "metadata", meta, "source", lines_of(text, strlen(text)));
}

/* What a state's cell says of it in its metadata's "dolsot" object. */
static json_t *state_meta(const struct timeline_state *st, const char *status,
                          const json_t *r)
{
	char t[64];
	json_t *m;

	timeline_out_time(st->rec.time_ns, t, sizeof(t));
	m = json_pack("{s:I, s:s, s:s, s:i, s:s?, s:f, s:b}", "state", (json_int_t)st->number,
	              "kind", histrec_kind_name(st->rec.kind), "status", status, "exit_code",
	              st->rec.exit_code, "time", st->rec.time_ns ? t : NULL, "duration_ms",
	              (double)st->rec.duration_us / 1e3, "current", st->current);
	if (m && st->rec.from)
		json_object_set_new(m, "from", json_integer((json_int_t)st->rec.from));
	if (m && json_array_size(json_object_get(r, "warnings")))
		json_object_set(m, "warnings", json_object_get(r, "warnings"));
	return json_pack("{s:o}", "dolsot", m);
}

static json_t *ran_cell(const char *id, const struct timeline_state *st)
{
	json_t *r = json_loadb((const char *)st->rec.result, st->rec.result_len, 0, NULL), *c;
	const char *word = string_or(r, "status", st->rec.exit_code ? "error" : "ok");

	c = code_cell(id, st->rec.code, st->rec.code_len, r, state_meta(st, word, r),
	              outputs_of(r, r ? NULL : "dolsot: this cell's result was not kept "
	                                       "(it was over 1 MiB)\n"));
	json_decref(r);
	return c;
}

/* The k-th cell rolled back on st: marked in its metadata (a tag, and
 * "rolled_back") and by a first output that says so. */
static json_t *rolled_back_cell(const struct timeline_state *st, size_t k)
{
	const struct histrec_attempt *a = &st->rec.attempts[k];
	json_t *r = json_loadb((const char *)a->result, a->result_len, 0, NULL), *c, *m;
	const char *word = string_or(r, "status", "rolled_back");
	char id[NB_ID_MAX], note[NB_TEXT_MAX], t[64];

	snprintf(id, sizeof(id), "state-%" PRIu64 "-rolled-back-%zu", st->number, k + 1);
	snprintf(note, sizeof(note), "dolsot: rolled back (%.40s): this cell ran on state %"
	         PRIu64 " and the session kept nothing it did\n", word, st->number);
	timeline_out_time(a->time_ns, t, sizeof(t));
	m = json_pack("{s:[s], s:{s:I, s:I, s:b, s:s, s:i, s:s, s:f}}", "tags", "rolled-back",
	              "dolsot", "state", (json_int_t)st->number, "attempt", (json_int_t)k + 1,
	              "rolled_back", 1, "status", word, "exit_code", a->exit_code, "time", t,
	              "duration_ms", (double)a->duration_us / 1e3);
	c = code_cell(id, a->code, a->code_len, r, m, outputs_of(r, note));
	json_decref(r);
	return c;
}

/* The markdown of a state no cell made (a move, a fork, an earlier one). */
static void move_text(const struct timeline_state *st, char *buf, size_t len)
{
	uint64_t n = st->number, from = st->rec.from;

	switch (st->rec.kind) {
	case HISTREC_UNDO:
	case HISTREC_CHECKOUT:
		snprintf(buf, len, "**State %" PRIu64 ": %s**, back to state %" PRIu64 ". The "
		         "session's values are state %" PRIu64 "'s again; the cells below run on "
		         "them.", n, histrec_kind_name(st->rec.kind), from, from);
		break;
	case HISTREC_FORK:
		snprintf(buf, len, "**State %" PRIu64 ": fork** of session `%.*s` at its state %"
		         PRIu64 ": this session started as a copy of it. The cells that made "
		         "that state are in that session's export.", n, (int)st->rec.code_len,
		         (const char *)st->rec.code, from);
		break;
	case HISTREC_EARLIER:
		snprintf(buf, len, "**State %" PRIu64 "** has no record (it was saved before "
		         "histories were kept, or the store keeps none): the cells that made it "
		         "are not known.", n);
		break;
	default:
		snprintf(buf, len, "**State %" PRIu64 "** (%s).", n,
		         histrec_kind_name(st->rec.kind));
	}
}

static json_t *state_cell(const struct timeline_state *st)
{
	char id[NB_ID_MAX], text[NB_TEXT_MAX + 2 * STORE_ID_MAX];

	snprintf(id, sizeof(id), "state-%" PRIu64, st->number);
	if (st->gone) {
		snprintf(text, sizeof(text), "**State %" PRIu64 "** is lost: its record is no "
		         "longer in the store, so the cell that made it is not known.", st->number);
		return markdown_cell(id, text, json_pack("{s:{s:I, s:b}}", "dolsot", "state",
		                     (json_int_t)st->number, "gone", 1));
	}
	if (st->rec.kind == HISTREC_CELL)
		return ran_cell(id, st);
	move_text(st, text, sizeof(text));
	return markdown_cell(id, text, state_meta(st, histrec_kind_name(st->rec.kind), NULL));
}

static json_t *title_cell(const char *session, const struct timeline_state *v, size_t n)
{
	char text[NB_TEXT_MAX + 2 * STORE_ID_MAX];
	int o;

	o = snprintf(text, sizeof(text), "# Session `%s`\n\nThe states dolsot kept of session "
	             "`%s`, oldest first: the cell that made each, with its outputs as they "
	             "were recorded, the cells rolled back on it (marked *rolled back*), and "
	             "the moves back (undo, checkout).", session, session);
	if (n && o > 0 && (size_t)o < sizeof(text))
		o += snprintf(text + o, sizeof(text) - (size_t)o, " The current state is %" PRIu64
		              ".", v[n - 1].number);
	if (n && v[0].number > 1 && o > 0 && (size_t)o < sizeof(text))
		snprintf(text + o, sizeof(text) - (size_t)o, "\n\nStates before %" PRIu64 " are no "
		         "longer kept (see `DOLSOT_HISTORY`).", v[0].number);
	return markdown_cell("title", text, json_object());
}

static json_t *metadata(const struct notebook_about *a, const struct timeline_state *v,
                        size_t n)
{
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:i}, s:s},"
	                 " s:{s:s, s:s?, s:o, s:I, s:I}}",
	                 "kernelspec", "name", "python3", "display_name", "Python 3 (ipykernel)",
	                 "language", "python",
	                 "language_info", "name", "python", "version", NB_PYTHON, "mimetype",
	                 "text/x-python", "file_extension", ".py", "pygments_lexer", "ipython3",
	                 "codemirror_mode", "name", "ipython", "version", 3,
	                 "nbconvert_exporter", "python",
	                 "dolsot", "session", a->session, "version", a->version,
	                 "current", n ? json_integer((json_int_t)v[n - 1].number) : json_null(),
	                 "states", (json_int_t)n, "history_depth", (json_int_t)a->depth);
}

json_t *notebook_of(const struct notebook_about *a, const struct timeline_state *v,
                    size_t n)
{
	json_t *cells = json_array();
	bool bad = !cells;

	if (cells)
		add(cells, title_cell(a->session, v, n), &bad);
	for (size_t i = 0; !bad && i < n; i++) {
		add(cells, state_cell(&v[i]), &bad);
		for (size_t k = 0; !v[i].gone && k < v[i].rec.nattempts; k++)
			add(cells, rolled_back_cell(&v[i], k), &bad);
	}
	if (bad) {
		json_decref(cells);
		return NULL;
	}
	return json_pack("{s:i, s:i, s:o, s:o}", "nbformat", 4, "nbformat_minor", 5,
	                 "metadata", metadata(a, v, n), "cells", cells);
}
