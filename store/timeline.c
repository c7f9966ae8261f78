/*
 * timeline.c - a session's kept states listed and gone back to
 * (timeline.h), over store.h's door and history.h's units.
 */
#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdio.h"
#include "history.h"
#include "store.h"
#include "unitstore.h"

/* id's current state, verified, as history_keep kept it (*prev), and
 * its call-id record (*callrec, malloc'd).  *prev NULL when absent. */
static int load_current(struct store *s, const char *id, const struct history_prev **prev,
                        uint8_t **callrec, size_t *callrec_len, char *err, size_t errlen)
{
	enum store_origin origin;
	size_t len;
	bool found;
	int fd = -1;

	*prev = NULL;
	*callrec = NULL;
	*callrec_len = 0;
	if (!unitstore_keeps(s)) {
		snprintf(err, errlen, "session history needs a store that keeps units (the "
		         "file store, the memory store, Redis, or a cmd: helper that speaks "
		         "units); this one keeps whole sessions");
		errno = ENOTSUP;
		return -1;
	}
	if (store_open_blob_rec(s, id, &fd, &len, &found, callrec, callrec_len, &origin,
	                        STORE_UNITS_UNREAD, err, errlen) < 0)
		return -1;
	fd_close(&fd);
	*prev = history_prev_of(s, id);
	if (*prev && (*prev)->absent)
		*prev = NULL;
	if (found && !*prev) {
		snprintf(err, errlen, "cannot read session '%s': out of memory", id);
		free(*callrec);
		*callrec = NULL;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* The current state's record (a copy: prev goes with the next load) into
 * *st; a state saved before records were kept gets an empty one. */
static int current_state(const struct history_prev *prev, struct timeline_state *st,
                         char *err, size_t errlen)
{
	uint8_t *bytes;

	memset(st, 0, sizeof(*st));
	st->current = true;
	st->number = 1;
	st->rec.kind = HISTREC_EARLIER;
	st->rec.number = 1;
	st->rec.sandboxed = prev->sandboxed;
	if (!prev->rec_len)
		return 0;
	bytes = malloc(prev->rec_len);
	if (!bytes) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(bytes, prev->bytes + prev->blob_len, prev->rec_len);
	if (histrec_parse(bytes, prev->rec_len, &st->rec, err, errlen) < 0) {
		free(bytes);
		return -1;
	}
	st->bytes = bytes;
	st->number = st->rec.number;
	return 0;
}

/* Kept state k read back into *st: gone when the store lost it or it
 * does not match its hash. */
static void kept_state(struct store *s, const struct histrec_state *k,
                       struct timeline_state *st)
{
	struct history_state got;
	char why[STORE_ERR_MAX];

	memset(st, 0, sizeof(*st));
	st->number = k->number;
	if (history_read_state(s, k, &got, why, sizeof(why)) != 0) {
		st->gone = true;
		return;
	}
	st->rec = got.rec;
	st->bytes = got.bytes;
}

void timeline_release(struct timeline_state *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		histrec_release(&v[i].rec);
		free(v[i].bytes);
	}
	free(v);
}

int timeline_list(struct store *s, const char *id, struct timeline_state **out, size_t *n,
                  bool *found, char *err, size_t errlen)
{
	const struct history_prev *prev;
	struct timeline_state cur, *v;
	uint8_t *callrec;
	size_t callrec_len;

	*out = NULL;
	*n = 0;
	*found = false;
	if (load_current(s, id, &prev, &callrec, &callrec_len, err, errlen) < 0)
		return -1;
	free(callrec);
	if (!prev)
		return 0;
	*found = true;
	if (current_state(prev, &cur, err, errlen) < 0)
		return -1;
	v = calloc(cur.rec.nstates + 1, sizeof(*v));
	if (!v) {
		histrec_release(&cur.rec);
		free(cur.bytes);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cur.rec.nstates; i++)
		kept_state(s, &cur.rec.states[i], &v[i]);
	v[cur.rec.nstates] = cur;
	*out = v;
	*n = cur.rec.nstates + 1;
	return 0;
}

/* The state a move goes back to. */
struct target {
	const uint8_t *blob;
	uint8_t *owned;         /* what blob points into, when malloc'd here */
	size_t len;
	bool sandboxed;
	uint64_t number;
};

static int no_state(const char *id, uint64_t want, const struct histrec *cur, char *err,
                    size_t errlen)
{
	if (!want)
		snprintf(err, errlen, "session '%s' has no earlier state to go back to (its "
		         "history holds only its current state%s)", id,
		         cur->number ? "" : ": it was saved before dolsot kept histories");
	else if (cur->nstates)
		snprintf(err, errlen, "session '%s' has no state %llu: it keeps states %llu to "
		         "%llu (see dolsot --history %s)", id, (unsigned long long)want,
		         (unsigned long long)cur->states[0].number,
		         (unsigned long long)(cur->number ? cur->number : 1), id);
	else
		snprintf(err, errlen, "session '%s' has no state %llu: it keeps only its "
		         "current state, %llu", id, (unsigned long long)want,
		         (unsigned long long)(cur->number ? cur->number : 1));
	errno = ENOENT;
	return -1;
}

/* State want (0: the one before the current) of src, whose current state
 * is prev with its record cur, into *t. */
static int find_target(struct store *s, const char *src, const struct history_prev *prev,
                       const struct histrec *cur, uint64_t want, struct target *t,
                       char *err, size_t errlen)
{
	const struct histrec_state *k;
	struct history_state got;
	uint64_t now = cur->number ? cur->number : 1;
	int r;

	memset(t, 0, sizeof(*t));
	if (want == now) {
		t->owned = malloc(prev->blob_len ? prev->blob_len : 1);
		if (!t->owned)
			goto oom;
		memcpy(t->owned, prev->bytes, prev->blob_len);
		t->blob = t->owned;
		t->len = prev->blob_len;
		t->sandboxed = prev->sandboxed;
		t->number = now;
		return 0;
	}
	if (!want && cur->nstates)
		want = cur->states[cur->nstates - 1].number;
	k = want ? histrec_state_of(cur, want) : NULL;
	if (!k)
		return no_state(src, want, cur, err, errlen);
	r = history_read_state(s, k, &got, err, errlen);
	if (r == 1) {
		snprintf(err, errlen, "state %llu of session '%s' is no longer in the store (its "
		         "unit was collected); nothing was changed", (unsigned long long)want, src);
		errno = ENOENT;
	}
	if (r != 0)
		return -1;
	t->blob = t->owned = got.bytes;   /* the blob is its first blob_len bytes */
	t->len = got.blob_len;
	t->sandboxed = got.rec.sandboxed;
	t->number = want;
	got.bytes = NULL;
	history_state_release(&got);
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	errno = ENOMEM;
	return -1;
}

/* Commit t as dst's new state, with the call-id record callrec. */
static int commit_target(struct store *s, const char *dst, const struct target *t,
                         const struct histrec_cell *cell, const uint8_t *callrec,
                         size_t callrec_len, char *err, size_t errlen)
{
	struct store_save sv;

	if (store_save_begin(s, dst, true, 0, &sv, err, errlen) < 0)
		return -1;
	sv.sandboxed = t->sandboxed;
	if (fd_write_all(sv.fd, t->blob, t->len) < 0)
		return store_save_fail(s, &sv, "write", errno, err, errlen);
	return store_save_commit_cell(s, &sv, t->len, callrec, callrec_len, cell, err, errlen);
}

/* For a fork: dst loaded (its state is the one the commit replaces), and
 * refused when it exists and replace is not given. */
static int load_dst(struct store *s, const char *src, const char *dst, bool replace,
                    const struct history_prev **prev, char *err, size_t errlen)
{
	uint8_t *callrec;
	size_t callrec_len;

	if (load_current(s, dst, prev, &callrec, &callrec_len, err, errlen) < 0)
		return -1;
	free(callrec);
	if (*prev && !replace) {
		snprintf(err, errlen, "cannot fork session '%s' into '%s': '%s' already exists "
		         "(add --replace to start it over from '%s', or pick another id)", src, dst,
		         dst, src);
		errno = EEXIST;
		return -1;
	}
	return 0;
}

/* The number the next commit after prev gets (0: none when no history is
 * kept). */
static uint64_t next_number(const struct store *s, const struct history_prev *prev)
{
	struct histrec h;
	char why[HISTREC_ERR_MAX];
	uint64_t n = 1;

	if (!s->history)
		return 0;
	if (!prev)
		return 1;
	if (prev->rec_len &&
	    histrec_parse(prev->bytes + prev->blob_len, prev->rec_len, &h, why, sizeof(why)) == 0) {
		n = h.number;
		histrec_release(&h);
	}
	return n + 1;
}

int timeline_move(struct store *s, const char *src, uint64_t target, const char *dst,
                  uint8_t kind, bool replace, struct timeline_move *mv, char *err,
                  size_t errlen)
{
	const struct history_prev *prev;
	struct histrec cur;
	struct target t = { NULL, NULL, 0, false, 0 };
	struct histrec_cell cell = { .kind = kind };
	uint8_t *callrec = NULL;
	size_t callrec_len = 0;
	int ret = -1;

	memset(&cur, 0, sizeof(cur));
	memset(mv, 0, sizeof(*mv));
	if (load_current(s, src, &prev, &callrec, &callrec_len, err, errlen) < 0)
		return -1;
	if (!prev) {
		snprintf(err, errlen, "session '%s' does not exist", src);
		errno = ENOENT;
		goto out;
	}
	if (prev->rec_len && histrec_parse(prev->bytes + prev->blob_len, prev->rec_len, &cur,
	                                   err, errlen) < 0)
		goto out;
	if (find_target(s, src, prev, &cur, target, &t, err, errlen) < 0)
		goto out;
	if (kind == HISTREC_FORK) {
		free(callrec);   /* a call id is the session's own, not a fork's */
		callrec = NULL;
		callrec_len = 0;
		cell.code = (const uint8_t *)src;
		cell.code_len = strlen(src);
		if (load_dst(s, src, dst, replace, &prev, err, errlen) < 0)
			goto out;
	}
	cell.from = t.number;
	mv->target = t.number;
	mv->number = next_number(s, prev);
	ret = commit_target(s, dst, &t, &cell, callrec, callrec_len, err, errlen);
out:
	histrec_release(&cur);
	free(t.owned);
	free(callrec);
	return ret;
}

int timeline_record_attempt(struct store *s, const char *id,
                            const struct histrec_attempt *a, const uint8_t *callrec,
                            size_t callrec_len, char *err, size_t errlen)
{
	const struct history_prev *prev = history_prev_of(s, id);
	struct histrec_cell cell = { .kind = HISTREC_AMEND };
	struct histrec cur;
	struct target t;
	uint8_t *rec;
	int ret;

	if (!s->history || !prev || prev->absent || !prev->rec_len)
		return 0;
	if (histrec_parse(prev->bytes + prev->blob_len, prev->rec_len, &cur, err, errlen) < 0)
		return -1;
	ret = histrec_encode_with_attempt(&cur, a, &rec, &cell.record_len);
	histrec_release(&cur);
	if (ret < 0) {
		snprintf(err, errlen, "cannot record the cell in session '%s': %s", id,
		         strerror(errno));
		return -1;
	}
	cell.record = rec;
	/* The blob goes back as it is, with the mark of whoever wrote it. */
	t.blob = prev->bytes;
	t.owned = NULL;
	t.len = prev->blob_len;
	t.sandboxed = prev->sandboxed;
	t.number = 0;
	ret = commit_target(s, id, &t, &cell, callrec, callrec_len, err, errlen);
	free(rec);
	return ret;
}
