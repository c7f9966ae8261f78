/*
 * history.c - a session's earlier states kept as units (history.h).
 */
#include "history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "callrec.h"
#include "fdio.h"
#include "sha256.h"
#include "sign.h"

int history_keep(struct store *s, const char *id, int fd, size_t len, bool sandboxed,
                 uint8_t *rec, size_t rec_len, char *err, size_t errlen)
{
	struct history_prev *p;

	free(s->hist_prev);
	s->hist_prev = NULL;
	if (fd < 0)
		len = rec_len = 0;
	p = len <= SIZE_MAX - rec_len - sizeof(*p) ? malloc(sizeof(*p) + len + rec_len) : NULL;
	if (!p || (len && fd_pread_exact(fd, p->bytes, len, 0) < 0)) {
		snprintf(err, errlen, "cannot load session '%s': %s: %s", id,
		         p ? "read" : "malloc", strerror(p ? errno : ENOMEM));
		free(p);
		free(rec);
		return -1;
	}
	snprintf(p->id, sizeof(p->id), "%s", id);
	p->hashed = false;
	p->absent = fd < 0;
	p->sandboxed = sandboxed;
	p->blob_len = len;
	p->rec_len = rec_len;
	if (rec_len)
		memcpy(p->bytes + len, rec, rec_len);
	s->hist_prev = p;
	free(rec);
	return 0;
}

void history_stored_as(struct store *s, const uint8_t *hash, uint64_t len)
{
	if (!s->hist_prev)
		return;
	memcpy(s->hist_prev->stored_hash, hash, HISTREC_HASH_LEN);
	s->hist_prev->stored_len = len;
	s->hist_prev->hashed = true;
}

const struct history_prev *history_prev_of(const struct store *s, const char *id)
{
	return s->hist_prev && strcmp(s->hist_prev->id, id) == 0 ? s->hist_prev : NULL;
}

static int grow(uint8_t **v, size_t *count, size_t more)
{
	uint8_t *g;

	if (!more)
		return 0;
	g = realloc(*v, (*count + more) * HISTREC_HASH_LEN);
	if (!g)
		return -1;
	*v = g;
	return 0;
}

static void add_hash(uint8_t *v, size_t *count, const uint8_t *hash)
{
	memcpy(v + (*count)++ * HISTREC_HASH_LEN, hash, HISTREC_HASH_LEN);
}

/* The record at the end of p[0..n) (a blob, maybe a call-id record, maybe
 * this record) into *h: 1 when there is one, 0 when not, -1 damaged. */
static int record_at_end(const uint8_t *p, size_t n, struct histrec *h, char *err,
                         size_t errlen)
{
	size_t len;

	memset(h, 0, sizeof(*h));
	if (histrec_footer(p, n, &len) < 0) {
		snprintf(err, errlen, "the history record is damaged: its footer names more "
		         "bytes than there are");
		return -1;
	}
	if (!len)
		return 0;
	return histrec_parse(p + n - len, len, h, err, errlen) < 0 ? -1 : 1;
}

int history_named(const uint8_t *stored, size_t n, uint8_t **v, size_t *count, char *err,
                  size_t errlen)
{
	struct histrec h;
	int got = record_at_end(stored, n - sign_trailer_size(stored, n), &h, err, errlen);

	if (got <= 0)
		return got;
	if (grow(v, count, h.nstates + h.nextras) < 0) {
		snprintf(err, errlen, "out of memory");
		histrec_release(&h);
		return -1;
	}
	for (size_t i = 0; i < h.nstates; i++)
		add_hash(*v, count, h.states[i].hash);
	for (size_t i = 0; i < h.nextras; i++)
		add_hash(*v, count, h.extras[i].hash);
	histrec_release(&h);
	return 0;
}

/* The unit that keeps prev (rec its parsed record, number its number):
 * its blob and its own record without states or extras, into *out. */
static int archive_bytes(const struct history_prev *prev, const struct histrec *rec,
                         uint64_t number, uint8_t **out, size_t *len)
{
	struct histrec own = *rec;
	uint8_t *r;
	size_t rlen;

	own.states = NULL;
	own.nstates = 0;
	own.extras = NULL;
	own.nextras = 0;
	own.number = number;
	own.sandboxed = prev->sandboxed;
	if (!prev->rec_len)
		own.kind = HISTREC_EARLIER;
	if (histrec_encode(&own, &r, &rlen) < 0)
		return -1;
	*out = malloc(prev->blob_len + rlen);
	if (!*out) {
		free(r);
		return -1;
	}
	memcpy(*out, prev->bytes, prev->blob_len);
	memcpy(*out + prev->blob_len, r, rlen);
	*len = prev->blob_len + rlen;
	free(r);
	return 0;
}

/* Put the unit that keeps prev into s's units; its entry into *st.  A
 * store that can adopt prev's stored bytes as they are (the file store
 * links its file) writes nothing; any other gets its blob and record. */
static int keep_prev(struct store *s, const struct history_prev *prev,
                     const struct histrec *rec, uint64_t number, struct histrec_state *st,
                     char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];
	uint8_t *bytes;
	size_t len;
	int ret = 0;

	st->number = number;
	if (prev->hashed && s->ops->obj_adopt &&
	    s->ops->obj_adopt(s, prev->id, prev->stored_hash, why, sizeof(why)) == 0) {
		memcpy(st->hash, prev->stored_hash, HISTREC_HASH_LEN);
		st->size = prev->stored_len;
		return 0;
	}

	if (archive_bytes(prev, rec, number, &bytes, &len) < 0) {
		snprintf(err, errlen, "cannot keep state %llu: %s", (unsigned long long)number,
		         strerror(errno));
		return -1;
	}
	sha256_bytes(bytes, len, st->hash);
	st->number = number;
	st->size = len;
	/* A put keeps a unit already there: no look first (a helper's look
	 * lists every unit). */
	if (s->ops->obj_put(s, st->hash, bytes, len, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "cannot keep state %llu: %s", (unsigned long long)number,
		         why);
		ret = -1;
	}
	free(bytes);
	return ret;
}

static int extra_cmp(const void *a, const void *b)
{
	return memcmp(((const struct histrec_extra *)a)->hash,
	              ((const struct histrec_extra *)b)->hash, HISTREC_HASH_LEN);
}

/* The extras of the new record: prev's (old) but those next names, and
 * each unit prev's head names and next does not (last: prev's number),
 * sorted by hash, into *out (malloc'd). */
static int merge_extras(const struct histrec *old, const struct units_head *prev_head,
                        uint64_t prev_number, const struct units_head *next,
                        struct histrec_extra **out, size_t *n)
{
	size_t cap = old->nextras + (prev_head ? prev_head->nrefs : 0), k = 0, kept;
	struct histrec_extra *v = cap ? calloc(cap, sizeof(*v)) : NULL, key, *at;
	struct units_entry e;

	*out = NULL;
	*n = 0;
	if (cap && !v)
		return -1;
	for (size_t i = 0; i < old->nextras; i++)
		if (units_find(next, old->extras[i].hash) < 0)
			v[k++] = old->extras[i];
	kept = k;   /* v[0..kept) is sorted, as old's */
	for (uint32_t i = 0; prev_head && i < prev_head->nrefs; i++) {
		units_ref(prev_head, i, &e);
		if (units_inline(e.size) || units_find(next, e.hash) >= 0)
			continue;
		memcpy(key.hash, e.hash, HISTREC_HASH_LEN);
		at = kept ? bsearch(&key, v, kept, sizeof(*v), extra_cmp) : NULL;
		if (!at) {
			at = &v[k++];
			memcpy(at->hash, e.hash, HISTREC_HASH_LEN);
			at->size = e.size;
		}
		at->last = prev_number;
	}
	if (k > 1)
		qsort(v, k, sizeof(*v), extra_cmp);
	*out = v;
	*n = k;
	return 0;
}

/* Let go of the states past the depth and the extras no kept state
 * names. */
static void trim(const struct store *s, struct histrec *h)
{
	size_t drop = h->nstates > s->history ? h->nstates - s->history : 0, k = 0;
	uint64_t oldest;

	memmove(h->states, h->states + drop, (h->nstates - drop) * sizeof(*h->states));
	h->nstates -= drop;
	oldest = h->nstates ? h->states[0].number : UINT64_MAX;
	for (size_t i = 0; i < h->nextras; i++)
		if (h->extras[i].last >= oldest)
			h->extras[k++] = h->extras[i];
	h->nextras = k;
}

/* prev's record parsed into *rec (an empty one when it has none), and its
 * head into *head; *has_head false for a blob that is not v4. */
static int parse_prev(const struct history_prev *prev, struct histrec *rec,
                      struct units_head *head, bool *has_head, char *err, size_t errlen)
{
	char why[UNITS_ERR_MAX];

	memset(rec, 0, sizeof(*rec));
	if (prev->rec_len &&
	    histrec_parse(prev->bytes + prev->blob_len, prev->rec_len, rec, err, errlen) < 0)
		return -1;
	*has_head = units_is_v4(prev->bytes, prev->blob_len) &&
	            units_parse_head(prev->bytes, prev->blob_len, head, why, sizeof(why)) == 0;
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The new record's own fields (the cell's), its number after prev's. */
static void fill_cell(struct histrec *h, const struct histrec_cell *cell,
                      uint64_t number, bool sandboxed)
{
	h->number = number;
	h->kind = cell->kind;
	h->sandboxed = sandboxed;
	h->exit_code = cell->exit_code;
	h->time_ns = now_ns();
	h->duration_us = cell->duration_us;
	h->from = cell->from;
	h->written = cell->written;
	h->code = cell->code;
	h->code_len = cell->code_len > HISTREC_CODE_MAX ? HISTREC_CODE_MAX : cell->code_len;
	h->result = cell->result;
	h->result_len = cell->result_len > HISTREC_RESULT_MAX ? 0 : cell->result_len;
}

int history_next(struct store *s, const struct history_prev *prev,
                 const struct units_head *next, bool sandboxed,
                 const struct histrec_cell *cell, uint8_t **rec, size_t *rec_len,
                 char *err, size_t errlen)
{
	struct histrec old, h;
	struct units_head prev_head;
	struct histrec_state kept;
	bool has_head = false;
	uint64_t prev_number;
	int ret = -1;

	memset(&old, 0, sizeof(old));
	memset(&h, 0, sizeof(h));
	*rec = NULL;
	*rec_len = 0;
	if (prev && prev->absent)
		prev = NULL;
	if (prev && parse_prev(prev, &old, &prev_head, &has_head, err, errlen) < 0)
		return -1;
	prev_number = old.number ? old.number : 1;
	fill_cell(&h, cell, prev ? prev_number + 1 : 1, sandboxed);
	if (prev && keep_prev(s, prev, &old, prev_number, &kept, err, errlen) < 0)
		goto out;
	h.states = malloc((old.nstates + 1) * sizeof(*h.states));
	if (!h.states)
		goto oom;
	if (old.nstates)
		memcpy(h.states, old.states, old.nstates * sizeof(*h.states));
	h.nstates = old.nstates;
	if (prev)
		h.states[h.nstates++] = kept;
	if (merge_extras(&old, has_head ? &prev_head : NULL, prev_number, next, &h.extras,
	                 &h.nextras) < 0)
		goto oom;
	trim(s, &h);
	if (histrec_encode(&h, rec, rec_len) < 0)
		goto oom;
	ret = 0;
	goto out;
oom:
	snprintf(err, errlen, "cannot keep the session's history: %s", strerror(errno));
out:
	histrec_release(&old);
	histrec_release(&h);
	return ret;
}

int history_read_state(struct store *s, const struct histrec_state *st,
                       struct history_state *out, char *err, size_t errlen)
{
	char why[STORE_ERR_MAX], hex[UNITS_HEX_LEN + 1];
	uint8_t sum[HISTREC_HASH_LEN];
	size_t n = 0, rl = 0;
	bool found = false;

	memset(out, 0, sizeof(*out));
	units_hex(st->hash, hex);
	if (s->ops->obj_read(s, st->hash, &out->bytes, &n, &found, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "cannot read state %llu: %s",
		         (unsigned long long)st->number, why);
		return -1;
	}
	if (!found)
		return 1;
	sha256_bytes(out->bytes, n, sum);
	if (n != st->size || memcmp(sum, st->hash, HISTREC_HASH_LEN) != 0) {
		snprintf(err, errlen, "state %llu is damaged: its unit %s does not match its "
		         "hash", (unsigned long long)st->number, hex);
		goto bad;
	}
	/* An adopted state is its stored bytes: signature, record, call ids. */
	n -= sign_trailer_size(out->bytes, n);
	if (histrec_footer(out->bytes, n, &rl) < 0 || !rl ||
	    histrec_parse(out->bytes + n - rl, rl, &out->rec, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "state %llu is damaged: %s", (unsigned long long)st->number,
		         rl ? why : "it has no record");
		goto bad;
	}
	out->blob_len = n - rl;
	if (out->blob_len >= CALLREC_FOOTER &&
	    callrec_footer(out->bytes + out->blob_len - CALLREC_FOOTER, out->blob_len, &rl) == 0)
		out->blob_len -= rl;
	return 0;
bad:
	history_state_release(out);
	errno = EBADMSG;
	return -1;
}

void history_state_release(struct history_state *st)
{
	histrec_release(&st->rec);
	free(st->bytes);
	memset(st, 0, sizeof(*st));
}
