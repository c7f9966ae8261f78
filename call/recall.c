/*
 * recall.c - a --call-id's result recorded and said again (recall.h).
 *
 * A retry must see what the first call printed, so the entry is the
 * rendering itself (output.c's text contract and output_json.c's object),
 * made just before the commit: the call that records prints those same
 * bytes once the commit succeeds, and its --json timings stop there
 * (total up to the record; the save's own time is not known yet: null).
 */
#include "recall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callrec.h"
#include "output_json.h"

static int own(struct owned *o, const struct callrec_bytes *b)
{
	o->p = malloc(b->len + 1);
	if (!o->p)
		return -1;
	if (b->len)
		memcpy(o->p, b->p, b->len);
	o->p[b->len] = '\0';
	o->len = b->len;
	return 0;
}

int recall_find(const uint8_t *rec, size_t len, const char *id, struct result *res,
                char *err, size_t errlen)
{
	struct callrec r;
	const struct callrec_entry *e;
	char why[RECALL_ERR_MAX];
	int ret = 0;

	if (callrec_parse(rec, len, &r, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "session '%s' cannot be loaded: %s; run 'dolsot --reset "
		         "%s' to start it afresh", res->session, why, res->session);
		return -1;
	}
	e = callrec_find(&r, id);
	if (e) {
		if (own(&res->said_out, &e->out) < 0 || own(&res->said_err, &e->err) < 0 ||
		    own(&res->said_json, &e->json) < 0) {
			snprintf(err, errlen, "cannot recall call '%s': %s", id, strerror(errno));
			ret = -1;
		} else {
			res->exit_code = e->exit_code;
			res->said = res->replayed = true;
			ret = 1;
		}
	}
	callrec_release(&r);
	return ret;
}

/* r rendered both ways into the three byte strings (malloc'd). */
static int render(const struct result *r, struct callrec_bytes b[3])
{
	FILE *f[3];
	size_t len[3] = { 0, 0, 0 };
	char *p[3] = { NULL, NULL, NULL };
	int ok = 1;

	for (int i = 0; i < 3; i++) {
		f[i] = open_memstream(&p[i], &len[i]);
		ok = ok && f[i];
	}
	if (ok)
		ok = output_render(r, f[0], f[1]) == 0 && output_json_run(r, f[2]) == 0;
	for (int i = 0; i < 3; i++) {
		if (f[i] && fclose(f[i]) != 0)
			ok = 0;
		b[i] = (struct callrec_bytes){ (uint8_t *)p[i], p[i] ? len[i] : 0 };
	}
	if (ok)
		return 0;
	for (int i = 0; i < 3; i++)
		free(b[i].p);
	errno = ENOMEM;
	return -1;
}

static size_t total(const struct callrec_bytes b[3])
{
	return b[0].len + b[1].len + b[2].len;
}

/*
 * res cut down to what a retry can still be told when all of it is over
 * the cap: a shallow copy (nothing of it is freed) without the cell's
 * output, value, error detail, displays and names, saying why; with
 * terse, without the worker's warnings and the dropped names either.
 */
static struct result short_form(const struct result *res, char *note, bool terse)
{
	struct result s = *res;

	s.out.len = s.err.len = 0;
	s.out.truncated = s.err.truncated = false;
	s.value = NULL;
	s.error = NULL;
	s.held = s.kept = NULL;
	s.error_info = s.hints = s.diagnostics = s.displays = s.truncated =
		(struct owned){ NULL, 0 };
	s.files = NULL;
	s.n_files = 0;
	s.warnings = note;
	if (terse)
		s.dropped = NULL;
	return s;
}

static int entry(const char *id, struct result *res, struct callrec_bytes b[3],
                 bool *whole)
{
	char note[512];
	size_t full;
	struct result s;

	*whole = true;
	if (render(res, b) < 0)
		return -1;
	if (total(b) <= CALLREC_RESULT_MAX)
		return 0;
	*whole = false;
	full = total(b);
	for (int i = 0; i < 3; i++)
		free(b[i].p);
	snprintf(note, sizeof(note), "dolsot: call '%s' ran and its session was saved; "
	         "its result (%zu bytes) is over the %u bytes a call id keeps, so only "
	         "this is said again", id, full, CALLREC_RESULT_MAX);
	for (int terse = 0; terse < 2; terse++) {
		s = short_form(res, note, terse);
		if (render(&s, b) < 0)
			return -1;
		if (total(b) <= CALLREC_RESULT_MAX)
			return 0;
		for (int i = 0; i < 3; i++)
			free(b[i].p);
	}
	errno = EFBIG;
	return -1;
}

int recall_record(const uint8_t *rec, size_t len, const char *id, struct result *res,
                  uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
	struct callrec r;
	struct callrec_bytes b[3];
	char why[RECALL_ERR_MAX];
	bool whole, saved = res->saved;
	int ret = -1;

	*out = NULL;
	*out_len = 0;
	if (callrec_parse(rec, len, &r, why, sizeof(why)) < 0) {
		/* The load already refused a damaged record; never reached. */
		snprintf(err, errlen, "cannot record call '%s': %s", id, why);
		return -1;
	}
	res->saved = true;
	if (entry(id, res, b, &whole) < 0) {
		res->saved = saved;
		snprintf(err, errlen, "cannot record call '%s': %s", id, strerror(errno));
		callrec_release(&r);
		return -1;
	}
	res->saved = saved;
	if (callrec_add(&r, id, res->exit_code, &b[0], &b[1], &b[2]) < 0 ||
	    callrec_encode(&r, out, out_len) < 0) {
		snprintf(err, errlen, "cannot record call '%s': %s", id, strerror(errno));
		goto out;
	}
	if (whole) {
		free(res->said_out.p);
		free(res->said_err.p);
		free(res->said_json.p);
		res->said_out = (struct owned){ (char *)b[0].p, b[0].len };
		res->said_err = (struct owned){ (char *)b[1].p, b[1].len };
		res->said_json = (struct owned){ (char *)b[2].p, b[2].len };
		b[0].p = b[1].p = b[2].p = NULL;
	}
	ret = 0;
out:
	for (int i = 0; i < 3; i++)
		free(b[i].p);
	callrec_release(&r);
	return ret;
}
