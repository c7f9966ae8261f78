/*
 * store_mem.c - MemoryStore: sessions in a table in this process.
 *
 * The table is an array sorted by id.  One mutex guards it, the list of
 * held session locks, the units and the units lock; a condition variable
 * on CLOCK_MONOTONIC wakes lockers when a lock is released.  There is no
 * TTL: sessions live until deleted or until the store is closed.
 *
 * Units (store_ops.h's obj_*): an array sorted by hash, each unit's bytes
 * kept once for every session of the table; a session's bytes are then its
 * v4 head (store.c, unitstore.c).  The units lock is this handle's: shared
 * holds counted, one exclusive; the warm server, whose clients hold it
 * over its socket, keeps their holds itself (mem_server.c).
 *
 * The warm server keeps DOLSOT_STORE=memory sessions in one
 * (server/mem_server.c); the store's door is in store/.
 */
#include "store_mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"

struct ment {
	char id[STORE_ID_MAX + 1];
	uint8_t *blob;
	size_t len;
	struct timespec mtime;
	bool sandboxed;         /* last written by a sandboxed call */
};

struct munit {
	uint8_t hash[STORE_HASH_LEN];
	uint8_t *bytes;
	size_t len;
};

struct mlock {
	struct mlock *next;
	char id[STORE_ID_MAX + 1];
};

struct mstore {
	struct store s;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* signalled when a lock is released */
	struct ment *v;         /* sorted by id */
	size_t n, cap;
	struct mlock *locks;    /* held locks */
	struct munit *units;    /* sorted by hash */
	size_t nunits, units_cap;
	unsigned shared;        /* shared holds of the units lock */
	bool exclusive;         /* its exclusive hold */
};

/* Index of key among the n sorted elements (size bytes each) at base,
 * compared by cmp, or where it would be inserted; *hit tells which. */
static size_t find_sorted(const void *base, size_t n, size_t size, const void *key,
                          int (*cmp)(const void *elem, const void *key), bool *hit)
{
	size_t lo = 0, hi = n, mid;
	int c;

	*hit = false;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = cmp((const char *)base + mid * size, key);
		if (c == 0) {
			*hit = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int by_id(const void *elem, const void *id)
{
	return strcmp(((const struct ment *)elem)->id, id);
}

/* Index of id in the table, or where it would be inserted; *hit tells which. */
static size_t ms_find(const struct mstore *ms, const char *id, bool *hit)
{
	return find_sorted(ms->v, ms->n, sizeof(*ms->v), id, by_id, hit);
}

/* A malloc'd copy of p[0..n) (never NULL for n 0), or NULL. */
static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	if (copy != NULL && n)
		memcpy(copy, p, n);
	return copy;
}

static int nomem(char *err, size_t errlen, const char *what, const char *id)
{
	snprintf(err, errlen, "cannot %s session '%s': %s", what, id,
	         strerror(ENOMEM));
	errno = ENOMEM;
	return -1;
}

static int ms_load(struct store *s, const char *id, uint8_t **blob,
                   size_t *len, bool *found, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	const struct ment *e;
	uint8_t *copy = NULL;
	bool hit;
	size_t i;

	*blob = NULL;
	*len = 0;
	*found = false;
	pthread_mutex_lock(&ms->mu);
	i = ms_find(ms, id, &hit);
	if (hit) {
		e = &ms->v[i];
		/* malloc(1) for an empty session, so a found blob is never NULL */
		copy = dup_bytes(e->blob, e->len);
		if (copy != NULL) {
			*blob = copy;
			*len = e->len;
			*found = true;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	if (hit && copy == NULL)
		return nomem(err, errlen, "load", id);
	return 0;
}

static int ms_origin(struct store *s, const char *id, struct store_mark *mark, char *err,
                     size_t errlen)
{
	struct mstore *ms = s->priv;
	bool hit;
	size_t i;

	(void)err;
	(void)errlen;
	pthread_mutex_lock(&ms->mu);
	i = ms_find(ms, id, &hit);
	mark->sandboxed = hit && ms->v[i].sandboxed;
	mark->seq = 0;   /* kept in a process only its user reaches: no counter */
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

/* The array v (*n elements of size bytes, room for *cap) with a zeroed
 * element made at index i, grown as needed: the array, or NULL out of
 * memory (v unchanged). */
static void *insert_at(void *v, size_t *n, size_t *cap, size_t size, size_t i)
{
	if (*n == *cap) {
		size_t grown = *cap ? *cap * 2 : 16;
		void *nv = realloc(v, grown * size);

		if (nv == NULL)
			return NULL;
		v = nv;
		*cap = grown;
	}
	memmove((char *)v + (i + 1) * size, (char *)v + i * size, (*n - i) * size);
	memset((char *)v + i * size, 0, size);
	(*n)++;
	return v;
}

/* Element i of the array v (*n elements of size bytes) removed. */
static void remove_at(void *v, size_t *n, size_t size, size_t i)
{
	memmove((char *)v + i * size, (char *)v + (i + 1) * size, (*n - i - 1) * size);
	(*n)--;
}

/* Make room for one more entry at index i. */
static int ms_insert(struct mstore *ms, size_t i)
{
	struct ment *nv = insert_at(ms->v, &ms->n, &ms->cap, sizeof(*ms->v), i);

	if (nv == NULL)
		return -1;
	ms->v = nv;
	return 0;
}

static int ms_save(struct store *s, const char *id, const uint8_t *blob,
                   size_t len, const struct store_mark *mark, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	struct ment *e;
	uint8_t *copy;
	bool hit;
	size_t i;
	int ret = -1;

	/* Copy first: on failure the old session stays untouched. */
	copy = dup_bytes(blob, len);
	if (copy == NULL)
		return nomem(err, errlen, "save", id);
	pthread_mutex_lock(&ms->mu);
	i = ms_find(ms, id, &hit);
	if (!hit && ms_insert(ms, i) < 0)
		goto out;
	e = &ms->v[i];
	if (!hit)
		snprintf(e->id, sizeof(e->id), "%s", id);
	free(e->blob);
	e->blob = copy;
	e->len = len;
	e->sandboxed = mark->sandboxed;
	clock_gettime(CLOCK_REALTIME, &e->mtime);
	copy = NULL;
	ret = 0;
out:
	pthread_mutex_unlock(&ms->mu);
	if (ret < 0) {
		free(copy);
		return nomem(err, errlen, "save", id);
	}
	return 0;
}

static int ms_del(struct store *s, const char *id, unsigned *removed,
                  char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	bool hit;
	size_t i;

	(void)err;
	(void)errlen;
	*removed = 0;
	pthread_mutex_lock(&ms->mu);
	if (strcmp(id, "all") == 0) {
		for (i = 0; i < ms->n; i++)
			free(ms->v[i].blob);
		*removed = (unsigned)ms->n;
		ms->n = 0;
	} else {
		i = ms_find(ms, id, &hit);
		if (hit) {
			free(ms->v[i].blob);
			remove_at(ms->v, &ms->n, sizeof(*ms->v), i);
			*removed = 1;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

static int ms_list(struct store *s, struct session_info **out, size_t *n,
                   char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	struct session_info *v = NULL;
	size_t i;
	int ret = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&ms->mu);
	if (ms->n > 0) {
		v = calloc(ms->n, sizeof(*v));
		if (v == NULL) {
			ret = -1;
			goto out;
		}
	}
	for (i = 0; i < ms->n; i++) {
		memcpy(v[i].id, ms->v[i].id, sizeof(v[i].id));
		v[i].size = ms->v[i].len;
		v[i].mtime = ms->v[i].mtime;
	}
	*out = v;
	*n = ms->n;
out:
	pthread_mutex_unlock(&ms->mu);
	if (ret < 0) {
		snprintf(err, errlen, "cannot list sessions: %s",
		         strerror(ENOMEM));
		errno = ENOMEM;
	}
	return ret;
}

static bool ms_held(const struct mstore *ms, const char *id)
{
	const struct mlock *l;

	for (l = ms->locks; l != NULL; l = l->next)
		if (strcmp(l->id, id) == 0)
			return true;
	return false;
}

/* Wait (mutex held) until id is free: false once the deadline passes. */
static bool ms_wait_free(struct mstore *ms, const char *id, long timeout_ms)
{
	struct timespec deadline;
	int r = 0;

	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms);
	while (ms_held(ms, id)) {
		if (r == ETIMEDOUT)
			return false;
		if (timeout_ms < 0)
			pthread_cond_wait(&ms->cv, &ms->mu);
		else
			r = pthread_cond_timedwait(&ms->cv, &ms->mu, &deadline);
	}
	return true;
}

static enum store_lock_status ms_lock(struct store *s, const char *id, long timeout_ms,
                                      struct store_lock *lk, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	enum store_lock_status ret;
	struct mlock *l;

	lk->priv = NULL;
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return STORE_LOCK_FAILED;
	}
	snprintf(l->id, sizeof(l->id), "%s", id);
	pthread_mutex_lock(&ms->mu);
	ret = ms_wait_free(ms, id, timeout_ms) ? STORE_LOCKED : STORE_LOCK_BUSY;
	if (ret == STORE_LOCKED) {
		l->next = ms->locks;
		ms->locks = l;   /* owned by the list until ms_unlock */
		lk->priv = l;    /* NOLINT(clang-analyzer-unix.Malloc) */
	}
	pthread_mutex_unlock(&ms->mu);
	if (ret != STORE_LOCKED) {
		free(l);
		snprintf(err, errlen, STORE_BUSY_WHY);
	}
	return ret;
}

static void ms_unlock(struct store *s, struct store_lock *lk)
{
	struct mstore *ms = s->priv;
	struct mlock **pp;

	if (lk->priv == NULL)
		return;
	pthread_mutex_lock(&ms->mu);
	for (pp = &ms->locks; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == lk->priv) {
			*pp = (*pp)->next;
			break;
		}
	}
	pthread_cond_broadcast(&ms->cv);
	pthread_mutex_unlock(&ms->mu);
	free(lk->priv);
	lk->priv = NULL;
}

/* ---- units ---- */

static int by_hash(const void *elem, const void *hash)
{
	return memcmp(((const struct munit *)elem)->hash, hash, STORE_HASH_LEN);
}

/* Index of hash among the units, or where it would go; *hit tells which. */
static size_t mu_find(const struct mstore *ms, const uint8_t *hash, bool *hit)
{
	return find_sorted(ms->units, ms->nunits, sizeof(*ms->units), hash, by_hash, hit);
}

static int mu_nomem(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "cannot %s a unit: %s", what, strerror(ENOMEM));
	errno = ENOMEM;
	return -1;
}

static int mu_has(struct store *s, const uint8_t *hash, bool *has, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;

	(void)err;
	(void)errlen;
	pthread_mutex_lock(&ms->mu);
	(void)mu_find(ms, hash, has);
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

/* A unit already kept stays as it is: its bytes are the same by its hash. */
static int mu_put(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
                  char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	uint8_t *copy = dup_bytes(p, n);
	struct munit *grown;
	bool hit;
	size_t i;
	int ret = 0;

	if (copy == NULL)
		return mu_nomem(err, errlen, "keep");
	pthread_mutex_lock(&ms->mu);
	i = mu_find(ms, hash, &hit);
	grown = hit ? NULL : insert_at(ms->units, &ms->nunits, &ms->units_cap,
	                               sizeof(*ms->units), i);
	if (grown) {
		ms->units = grown;
		memcpy(ms->units[i].hash, hash, STORE_HASH_LEN);
		ms->units[i].bytes = copy;
		ms->units[i].len = n;
		copy = NULL;
	} else if (!hit) {
		ret = -1;
	}
	pthread_mutex_unlock(&ms->mu);
	free(copy);
	return ret < 0 ? mu_nomem(err, errlen, "keep") : 0;
}

static int mu_read(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
                   bool *found, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	size_t i;

	*p = NULL;
	*n = 0;
	pthread_mutex_lock(&ms->mu);
	i = mu_find(ms, hash, found);
	if (*found) {
		*p = dup_bytes(ms->units[i].bytes, ms->units[i].len);
		if (*p)
			*n = ms->units[i].len;
	}
	pthread_mutex_unlock(&ms->mu);
	if (*found && *p == NULL) {
		*found = false;
		return mu_nomem(err, errlen, "read");
	}
	return 0;
}

static int mu_del(struct store *s, const uint8_t *hash, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	bool hit;
	size_t i;

	(void)err;
	(void)errlen;
	pthread_mutex_lock(&ms->mu);
	i = mu_find(ms, hash, &hit);
	if (hit) {
		free(ms->units[i].bytes);
		remove_at(ms->units, &ms->nunits, sizeof(*ms->units), i);
	}
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

static int mu_list(struct store *s, uint8_t **hashes, size_t *n, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;
	int ret = 0;

	pthread_mutex_lock(&ms->mu);
	*n = ms->nunits;
	*hashes = malloc(*n ? *n * STORE_HASH_LEN : 1);
	if (*hashes == NULL)
		ret = -1;
	for (size_t i = 0; *hashes && i < *n; i++)
		memcpy(*hashes + i * STORE_HASH_LEN, ms->units[i].hash, STORE_HASH_LEN);
	pthread_mutex_unlock(&ms->mu);
	if (ret < 0)
		*n = 0;
	return ret < 0 ? mu_nomem(err, errlen, "list") : 0;
}

/* The units lock: shared holds wait for no exclusive one, an exclusive
 * hold for none at all; a release ends the caller's (the exclusive one
 * when it is held: no shared hold is then). */
static int mu_lock(struct store *s, enum store_gc_lock how, char *err, size_t errlen)
{
	struct mstore *ms = s->priv;

	(void)err;
	(void)errlen;
	pthread_mutex_lock(&ms->mu);
	if (how == STORE_GC_RELEASE) {
		if (ms->exclusive)
			ms->exclusive = false;
		else if (ms->shared)
			ms->shared--;
		pthread_cond_broadcast(&ms->cv);
	} else {
		while (ms->exclusive || (how == STORE_GC_EXCLUSIVE && ms->shared))
			pthread_cond_wait(&ms->cv, &ms->mu);
		if (how == STORE_GC_EXCLUSIVE)
			ms->exclusive = true;
		else
			ms->shared++;
	}
	pthread_mutex_unlock(&ms->mu);
	return 0;
}

static void ms_close(struct store *s)
{
	struct mstore *ms = s->priv;
	struct mlock *l;
	size_t i;

	for (i = 0; i < ms->n; i++)
		free(ms->v[i].blob);
	free(ms->v);
	for (i = 0; i < ms->nunits; i++)
		free(ms->units[i].bytes);
	free(ms->units);
	/* Locks still held are the caller's bug; free them all the same. */
	while (ms->locks != NULL) {
		l = ms->locks;
		ms->locks = l->next;
		free(l);
	}
	pthread_cond_destroy(&ms->cv);
	pthread_mutex_destroy(&ms->mu);
	free(ms);
}

static const struct store_ops mstore_ops = {
	.load = ms_load,
	.save = ms_save,
	.origin = ms_origin,
	.del = ms_del,
	.list = ms_list,
	.lock = ms_lock,
	.unlock = ms_unlock,
	.close = ms_close,
	.obj_has = mu_has,
	.obj_put = mu_put,
	.obj_read = mu_read,
	.obj_del = mu_del,
	.obj_list = mu_list,
	.obj_lock = mu_lock,
};

/*
 * See store.h.  Returns NULL with errno on failure (out of memory).  The
 * store is safe to use from several threads; store_close() frees it all.
 */
struct store *store_mem_open(void)
{
	pthread_condattr_t ca;
	struct mstore *ms;
	int r;

	ms = calloc(1, sizeof(*ms));
	if (ms == NULL)
		return NULL;
	r = pthread_condattr_init(&ca);
	if (r != 0)
		goto out;
	r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (r == 0)
		r = pthread_cond_init(&ms->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (r != 0)
		goto out;
	r = pthread_mutex_init(&ms->mu, NULL);
	if (r != 0) {
		pthread_cond_destroy(&ms->cv);
		goto out;
	}
	ms->s.ops = &mstore_ops;
	ms->s.priv = ms;
	ms->s.home = -1;
	return &ms->s;
out:
	free(ms);
	errno = r;
	return NULL;
}
