/*
 * timeline_out.c - --history's text and JSON (timeline_out.h).  A state's
 * record holds the --json object its call printed: its status and held
 * names are read from there, so the two never disagree.
 */
#include "timeline_out.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "output_json.h"
#include "utc.h"

/* What --history says of one state beside its record. */
struct view {
	json_t *result;         /* its call's --json object, or NULL */
	json_t *held;           /* the names it holds (a borrowed array), or NULL */
};

static void view_of(const struct timeline_state *st, struct view *v)
{
	json_t *session;

	v->result = NULL;
	v->held = NULL;
	if (st->gone || !st->rec.result_len)
		return;
	v->result = json_loadb((const char *)st->rec.result, st->rec.result_len, 0, NULL);
	session = json_object_get(v->result, "session");
	v->held = json_object_get(session, "held");
	if (!json_is_array(v->held))
		v->held = NULL;
}

static bool holds(const json_t *held, const char *name)
{
	size_t i;
	json_t *x;

	json_array_foreach(held, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), name) == 0)
			return true;
	return false;
}

/* The names in a and not in b, as a new array (NULL when either is). */
static json_t *names_not_in(const json_t *a, const json_t *b)
{
	json_t *out, *x;
	size_t i;

	if (!a || !b)
		return NULL;
	out = json_array();
	json_array_foreach(a, i, x)
		if (out && json_is_string(x) && !holds(b, json_string_value(x)))
			json_array_append(out, x);
	return out;
}

static void when(const struct timeline_state *st, char *buf, size_t len)
{
	if (!st->rec.time_ns)
		snprintf(buf, len, "-");
	else
		timeline_out_time(st->rec.time_ns, buf, len);
}

/* The state's status word: its call's for a cell, else what made it. */
static void status(const struct timeline_state *st, const struct view *v, char *buf,
                   size_t len)
{
	const char *word = json_string_value(json_object_get(v->result, "status"));

	if (st->gone)
		snprintf(buf, len, "gone");
	else if (st->rec.kind == HISTREC_CELL)
		snprintf(buf, len, "%s", word ? word : st->rec.exit_code ? "error" : "ok");
	else if (st->rec.kind == HISTREC_FORK)
		snprintf(buf, len, "fork:%.*s@%" PRIu64, (int)st->rec.code_len,
		         (const char *)st->rec.code, st->rec.from);
	else if (st->rec.kind == HISTREC_UNDO || st->rec.kind == HISTREC_CHECKOUT)
		snprintf(buf, len, "%s:%" PRIu64, histrec_kind_name(st->rec.kind), st->rec.from);
	else
		snprintf(buf, len, "%s", histrec_kind_name(st->rec.kind));
}

/* "+a +b -c" into out. */
static void put_changes(FILE *out, const json_t *now, const json_t *before)
{
	json_t *plus = names_not_in(now, before), *minus = names_not_in(before, now), *x;
	bool any = false;
	size_t i;

	json_array_foreach(plus, i, x) {
		fprintf(out, "%s+%s", any ? " " : "", json_string_value(x));
		any = true;
	}
	json_array_foreach(minus, i, x) {
		fprintf(out, "%s-%s", any ? " " : "", json_string_value(x));
		any = true;
	}
	if (!any)
		fputc('-', out);
	json_decref(plus);
	json_decref(minus);
}

/* The code's first line, at most 72 bytes, "..." when there is more. */
static void put_first_line(FILE *out, const struct timeline_state *st)
{
	const char *code = (const char *)st->rec.code;
	size_t n = st->rec.code_len, line = 0;

	if (st->rec.kind != HISTREC_CELL) {
		fputc('-', out);
		return;
	}
	while (line < n && code[line] != '\n')
		line++;
	fprintf(out, "%.*s%s", (int)(line > 72 ? 72 : line), code,
	        line > 72 || line < n ? "..." : "");
}

void timeline_out_time(int64_t ns, char *buf, size_t len)
{
	utc_text((time_t)(ns / 1000000000), buf, len);
}

/* The rolled-back cells run on st, as lines "N.K ..." after its own. */
static void put_attempts(FILE *out, const struct timeline_state *st)
{
	for (size_t k = 0; k < st->rec.nattempts; k++) {
		const struct histrec_attempt *a = &st->rec.attempts[k];
		json_t *r = json_loadb((const char *)a->result, a->result_len, 0, NULL);
		const char *word = json_string_value(json_object_get(r, "status"));
		struct timeline_state one = { .rec = { .kind = HISTREC_CELL,
		                                       .code = a->code, .code_len = a->code_len } };
		char t[64];

		timeline_out_time(a->time_ns, t, sizeof(t));
		fprintf(out, "%" PRIu64 ".%zu\t%s\t%s\t0\t-\t", st->number, k + 1, t,
		        word ? word : "rolled_back");
		put_first_line(out, &one);
		fputc('\n', out);
		json_decref(r);
	}
}

int timeline_print(const char *id, const struct timeline_state *v, size_t n, FILE *out)
{
	struct view prev = { NULL, NULL }, cur;
	char t[64], st[STORE_ID_MAX + 64];

	(void)id;
	for (size_t i = 0; i < n; i++) {
		view_of(&v[i], &cur);
		when(&v[i], t, sizeof(t));
		status(&v[i], &cur, st, sizeof(st));
		fprintf(out, "%" PRIu64 "%s\t%s\t%s\t", v[i].number, v[i].current ? "*" : "", t, st);
		if (v[i].gone)
			fputs("-\t-\t-", out);
		else {
			fprintf(out, "%" PRIu64 "\t", v[i].rec.written);
			put_changes(out, cur.held, i ? prev.held : NULL);
			fputc('\t', out);
			put_first_line(out, &v[i]);
		}
		fputc('\n', out);
		put_attempts(out, &v[i]);
		json_decref(prev.result);
		prev = cur;
	}
	json_decref(prev.result);
	return ferror(out) ? -1 : 0;
}

/* The rolled-back cells run on st: [{code, exit_code, time, duration_ms,
 * result}]. */
static json_t *attempts_json(const struct timeline_state *st)
{
	json_t *arr = json_array();
	char t[64];

	for (size_t k = 0; k < st->rec.nattempts; k++) {
		const struct histrec_attempt *a = &st->rec.attempts[k];
		json_t *r = json_loadb((const char *)a->result, a->result_len, 0, NULL);

		timeline_out_time(a->time_ns, t, sizeof(t));
		json_array_append_new(arr, json_pack("{s:o, s:i, s:s, s:f, s:o}",
		                      "code", output_json_string((const char *)a->code,
		                                                 a->code_len),
		                      "exit_code", a->exit_code, "time", t,
		                      "duration_ms", (double)a->duration_us / 1e3,
		                      "result", r ? r : json_null()));
	}
	return arr;
}

/* x, or null when x is NULL (a state's names not known). */
static json_t *or_null(json_t *x)
{
	return x ? x : json_null();
}

static json_t *state_json(const struct timeline_state *st, const struct view *v,
                          const struct view *before)
{
	json_t *o = json_object(), *names;
	char t[64], word[STORE_ID_MAX + 64];

	json_object_set_new(o, "state", json_integer((json_int_t)st->number));
	json_object_set_new(o, "current", json_boolean(st->current));
	json_object_set_new(o, "gone", json_boolean(st->gone));
	if (st->gone)
		return o;
	when(st, t, sizeof(t));
	status(st, v, word, sizeof(word));
	json_object_set_new(o, "kind", json_string(histrec_kind_name(st->rec.kind)));
	json_object_set_new(o, "time", st->rec.time_ns ? json_string(t) : json_null());
	json_object_set_new(o, "status", json_string(word));
	json_object_set_new(o, "exit_code", json_integer(st->rec.exit_code));
	json_object_set_new(o, "from", st->rec.from ? json_integer((json_int_t)st->rec.from)
	                                            : json_null());
	json_object_set_new(o, "code", output_json_string((const char *)st->rec.code,
	                                                  st->rec.code_len));
	json_object_set_new(o, "duration_ms", json_real((double)st->rec.duration_us / 1e3));
	json_object_set_new(o, "bytes_written", json_integer((json_int_t)st->rec.written));
	json_object_set_new(o, "sandboxed", json_boolean(st->rec.sandboxed));
	names = json_pack("{s:o, s:o, s:o}",
	                  "new", or_null(names_not_in(v->held, before ? before->held : NULL)),
	                  "gone", or_null(names_not_in(before ? before->held : NULL, v->held)),
	                  "held", or_null(json_incref(v->held)));
	json_object_set_new(o, "names", names);
	json_object_set_new(o, "result", v->result ? json_incref(v->result) : json_null());
	json_object_set_new(o, "rolled_back", attempts_json(st));
	return o;
}

json_t *timeline_json(const char *id, const struct timeline_state *v, size_t n)
{
	json_t *arr = json_array();
	struct view prev = { NULL, NULL }, cur;

	for (size_t i = 0; arr && i < n; i++) {
		view_of(&v[i], &cur);
		json_array_append_new(arr, state_json(&v[i], &cur, i ? &prev : NULL));
		json_decref(prev.result);
		prev = cur;
	}
	json_decref(prev.result);
	return json_pack("{s:s, s:o, s:o}", "session", id,
	                 "current", n ? json_integer((json_int_t)v[n - 1].number) : json_null(),
	                 "states", arr);
}

/* o as one compact line onto out, then o released; 0, or -1. */
static int put_json(json_t *o, FILE *out)
{
	int ret = o && json_dumpf(o, out, JSON_COMPACT) == 0 && fputc('\n', out) != EOF ? 0 : -1;

	json_decref(o);
	return ret;
}

int timeline_print_json(const char *id, const struct timeline_state *v, size_t n,
                        FILE *out)
{
	return put_json(timeline_json(id, v, n), out);
}

json_t *timeline_move_json(const char *id, const char *action, const struct timeline_move *mv)
{
	return json_pack("{s:s, s:s, s:I, s:o}", "session", id, "action", action,
	                 "to", (json_int_t)mv->target,
	                 "state", mv->number ? json_integer((json_int_t)mv->number) : json_null());
}

int timeline_print_move(const char *id, const char *action, const struct timeline_move *mv,
                        FILE *out)
{
	char now[24] = "null";

	if (mv->number)
		snprintf(now, sizeof(now), "%" PRIu64, mv->number);
	return fprintf(out, "%s %s: back to state %" PRIu64 ", now state %s%s\n", action, id,
	               mv->target, now, mv->number ? "" : " (DOLSOT_HISTORY=0: no history is "
	               "kept from here)") < 0 ? -1 : 0;
}

int timeline_print_move_json(const char *id, const char *action,
                             const struct timeline_move *mv, FILE *out)
{
	return put_json(timeline_move_json(id, action, mv), out);
}
