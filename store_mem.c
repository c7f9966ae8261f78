/*
 * store_mem.c - MemoryStore: sessions in a table in this process.
 *
 * The table is an array sorted by id.  One mutex guards it and the list of
 * held session locks; a condition variable on CLOCK_MONOTONIC wakes lockers
 * when a lock is released.  There is no TTL: sessions live until deleted or
 * until the store is closed.
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
};

/* Index of id in the table, or where it would be inserted; *hit tells which. */
static size_t ms_find(const struct mstore *ms, const char *id, bool *hit)
{
	size_t lo = 0, hi = ms->n, mid;
	int c;

	*hit = false;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(ms->v[mid].id, id);
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
		copy = malloc(e->len ? e->len : 1);
		if (copy != NULL) {
			if (e->len)
				memcpy(copy, e->blob, e->len);
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

/* Make room for one more entry at index i. */
static int ms_insert(struct mstore *ms, size_t i)
{
	struct ment *nv;
	size_t cap;

	if (ms->n == ms->cap) {
		cap = ms->cap ? ms->cap * 2 : 16;
		nv = realloc(ms->v, cap * sizeof(*nv));
		if (nv == NULL)
			return -1;
		ms->v = nv;
		ms->cap = cap;
	}
	memmove(&ms->v[i + 1], &ms->v[i], (ms->n - i) * sizeof(*ms->v));
	ms->n++;
	memset(&ms->v[i], 0, sizeof(ms->v[i]));
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
	copy = malloc(len ? len : 1);
	if (copy == NULL)
		return nomem(err, errlen, "save", id);
	if (len)
		memcpy(copy, blob, len);
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
			memmove(&ms->v[i], &ms->v[i + 1],
			        (ms->n - i - 1) * sizeof(*ms->v));
			ms->n--;
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

static void ms_close(struct store *s)
{
	struct mstore *ms = s->priv;
	struct mlock *l;
	size_t i;

	for (i = 0; i < ms->n; i++)
		free(ms->v[i].blob);
	free(ms->v);
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
