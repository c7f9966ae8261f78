/*
 * mem_server.c - the memory store behind DOLSOT_STORE=memory.
 *
 * Invariants:
 * - Every lock request ends in exactly one of: a slot in the table (held
 *   or awaited, released by mem_server_closed), or an answer and no slot.
 *   A full table answers busy; nothing is ever left behind for a
 *   connection the server no longer watches.
 * - A request naming a lock (a call's origin, load, save, delete) is
 *   served only when that lock is held now, in this incarnation; a save
 *   must name one.  So a call that locked in an earlier incarnation, or
 *   lost its lock, never changes a session.
 * - The ids file only ever holds ids and times, rewritten whole (a temp
 *   file renamed over it) when the set of ids changes; failing to write it
 *   never fails a request.
 * - Units (the MemoryStore's, each kept once for every session) are put,
 *   read and listed as the clients ask; one is removed only on a request
 *   that names the exclusive units lock, held now, in this incarnation.
 *   The units lock is a slot of the same table, held by its connection:
 *   shared holds together, an exclusive one alone, each waiter granted in
 *   the order it came (a collector is not starved by commits, nor commits
 *   by it).  What to remove, and when to lock, is the client's door's
 *   (unitstore.c), as for every store with units: the server collects
 *   nothing itself.
 */
#include "mem_server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "mem_list.h"
#include "store_mem.h"
#include "store.h"
#include "unitstore.h"
#include "units.h"
#include "utc.h"

#define IDS_TEMP ".memory-sessions.new"
#define IDS_MAX_BYTES (8u << 20)   /* an ids file longer than this is ignored */
#define FDS_BESIDE_LOCKS 512       /* the server's other clients, zygotes, spares */

/* What a slot locks: a session, or the units (shared or exclusive). */
enum slot_kind { SLOT_SESSION, SLOT_UNITS_SHARED, SLOT_UNITS_EXCLUSIVE };

struct lock_slot {
	enum slot_kind kind;
	char id[STORE_ID_MAX + 1];   /* a session's; "" for the units */
	int fd;                 /* the connection holding or awaiting it */
	bool held;
	uint64_t token;         /* unique in this incarnation */
};

struct mem_server {
	struct store *store;
	int dirfd;              /* where the ids file is kept, or -1 */
	uint64_t incarnation;
	time_t started;         /* CLOCK_REALTIME seconds */
	uint64_t next_token;
	struct lock_slot locks[MEM_SERVER_MAX_LOCKS];   /* holders and waiters, FIFO by index */
	size_t n_locks;
	struct session_info *lost;   /* id, and in mtime when it was lost */
	size_t n_lost;
	uint64_t units_stored;  /* units put that were new */
};

/* The sessions held, with the sizes of their stored bytes (a client's
 * store.c adds their units'); store.h's store_list would read every head
 * for that. */
static int list_ids(struct mem_server *sm, struct session_info **v, size_t *n, char *err,
                    size_t errlen)
{
	return sm->store->ops->list(sm->store, v, n, err, errlen);
}

/* Delete session id; its units are the client's to collect (its
 * store.h's store_del, under the units lock), never the server's. */
static int del_id(struct mem_server *sm, const char *id, unsigned *removed, char *err,
                  size_t errlen)
{
	if (!store_id_valid(id, err, errlen))
		return -1;
	return sm->store->ops->del(sm->store, id, removed, err, errlen);
}

/* ---- the ids file ---- */

static ssize_t lost_find(const struct mem_server *sm, const char *id)
{
	for (size_t i = 0; i < sm->n_lost; i++)
		if (strcmp(sm->lost[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

/* Forget that id was lost; true when it was. */
static bool lost_drop(struct mem_server *sm, const char *id)
{
	ssize_t i = lost_find(sm, id);

	if (i < 0)
		return false;
	sm->lost[i] = sm->lost[--sm->n_lost];
	return true;
}

/* Write what this incarnation holds (time 0) and what was lost.  Best
 * effort: a store directory that cannot be written (full, read-only)
 * only costs the next incarnation its memory of these ids. */
static void ids_write(struct mem_server *sm)
{
	struct session_info *held = NULL;
	size_t n = 0, len = 0;
	char err[STORE_ERR_MAX], *text = NULL;
	FILE *f;
	bool ok;
	int fd;

	if (sm->dirfd < 0 || list_ids(sm, &held, &n, err, sizeof(err)) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		held[i].size = 0, held[i].mtime.tv_sec = 0, held[i].mtime.tv_nsec = 0;
	f = open_memstream(&text, &len);
	ok = f && mem_list_format(f, held, n) == 0 &&
	     mem_list_format(f, sm->lost, sm->n_lost) == 0;
	if (f && fclose(f) != 0)
		ok = false;
	free(held);
	if (!ok)
		goto out;
	fd = openat(sm->dirfd, IDS_TEMP, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	            0600);
	if (fd < 0)
		goto out;
	ok = fd_write_all(fd, text, len) == 0;
	if (close(fd) < 0)
		ok = false;
	if (!ok || renameat(sm->dirfd, IDS_TEMP, sm->dirfd, MEM_SERVER_IDS_FILE) < 0)
		(void)unlinkat(sm->dirfd, IDS_TEMP, 0);
out:
	free(text);
}

static int by_lost_time_desc(const void *a, const void *b)
{
	const struct session_info *x = a, *y = b;

	return (x->mtime.tv_sec < y->mtime.tv_sec) - (x->mtime.tv_sec > y->mtime.tv_sec);
}

/* The last incarnation's ids: what it held is lost as of now, what it had
 * lost stays lost; the most recent MEM_SERVER_LOST_MAX are kept. */
static void ids_read(struct mem_server *sm)
{
	struct session_info *v = NULL;
	uint8_t *text = NULL;
	struct stat st;
	size_t len = 0, n = 0;
	int fd;

	fd = openat(sm->dirfd, MEM_SERVER_IDS_FILE,
	            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= IDS_MAX_BYTES &&
	    fd_read_all(fd, (size_t)st.st_size, &text, &len) == 0 &&
	    mem_list_parse((const char *)text, len, &v, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			if (v[i].mtime.tv_sec <= 0)
				v[i].mtime.tv_sec = sm->started;
		qsort(v, n, sizeof(*v), by_lost_time_desc);
		/* An id listed twice keeps its first (latest) entry. */
		sm->lost = v;
		for (size_t i = 0; i < n && sm->n_lost < MEM_SERVER_LOST_MAX; i++)
			if (lost_find(sm, v[i].id) < 0)
				v[sm->n_lost++] = v[i];
		v = NULL;
	}
	free(v);
	free(text);
	fd_close(&fd);
}

struct mem_server *mem_server_new(int dirfd)
{
	struct mem_server *sm = calloc(1, sizeof(*sm));
	uint64_t inc = 0;

	if (!sm)
		return NULL;
	sm->store = store_mem_open();
	if (!sm->store) {
		free(sm);
		return NULL;
	}
	/* One fd per lock held or awaited: make room under the hard limit. */
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < MEM_SERVER_MAX_LOCKS + FDS_BESIDE_LOCKS) {
		rl.rlim_cur = rl.rlim_max < MEM_SERVER_MAX_LOCKS + FDS_BESIDE_LOCKS
		              ? rl.rlim_max : MEM_SERVER_MAX_LOCKS + FDS_BESIDE_LOCKS;
		(void)setrlimit(RLIMIT_NOFILE, &rl);   /* else the bound is the fds */
	}
	sm->dirfd = dirfd;
	sm->started = time(NULL);
	/* Only distinctness matters; mix the time and pid in if getrandom
	 * cannot answer at once. */
	if (getrandom(&inc, sizeof(inc), GRND_NONBLOCK) != (ssize_t)sizeof(inc))
		inc = ((uint64_t)sm->started << 20) ^ (uint64_t)getpid() ^
		      (uint64_t)(uintptr_t)sm;
	sm->incarnation = inc ? inc : 1;
	sm->next_token = 1;
	if (dirfd >= 0) {
		ids_read(sm);
		ids_write(sm);
	}
	return sm;
}

void mem_server_free(struct mem_server *sm)
{
	if (!sm)
		return;
	store_close(sm->store);
	free(sm->lost);
	free(sm);
}

/* ---- requests ---- */

static void reply_err(int fd, const char *why)
{
	wire_send(fd, WIRE_MEM_ERR, 0, 0, why, strlen(why), NULL, 0);
}

/* A lock refused because it is busy: ERR with a = 1. */
static void reply_busy(int fd, const char *why)
{
	wire_send(fd, WIRE_MEM_ERR, 1, 0, why, strlen(why), NULL, 0);
}

/* bytes into a sealed-off memfd the client can read. */
static int to_memfd(const uint8_t *p, size_t n)
{
	int fd = memfd_create("dolsot-session", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fd_write_all(fd, p, n) < 0)
		fd_close(&fd);
	return fd;
}

/* BLOB with a = 1 and a memfd of p[0..n), or ERR saying what failed. */
static void reply_blob(int fd, const uint8_t *p, size_t n, const char *what)
{
	char why[128];
	int mfd = to_memfd(p, n);

	if (mfd < 0) {
		snprintf(why, sizeof(why), "cannot pass %s: memfd_create: %s", what,
		         strerror(errno));
		reply_err(fd, why);
		return;
	}
	wire_send(fd, WIRE_MEM_BLOB, 1, 0, NULL, 0, &mfd, 1);
	close(mfd);
}

/* The memfd m carries, mapped into *p (len bytes; "" when empty): 0, or
 * -1 when there is none or it cannot be read.  unmap_sent undoes it. */
static int map_sent(const struct wire_msg *m, const uint8_t **p, size_t *len)
{
	struct stat st;
	void *at;

	if (m->nfds != 1 || fstat(m->fds[0], &st) < 0)
		return -1;
	*len = (size_t)st.st_size;
	*p = (const uint8_t *)"";
	if (!*len)
		return 0;
	at = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, m->fds[0], 0);
	if (at == MAP_FAILED)
		return -1;
	*p = at;
	return 0;
}

static void unmap_sent(const uint8_t *p, size_t len)
{
	if (len)
		munmap((void *)p, len);
}

static const struct lock_slot *holder(const struct mem_server *sm, const char *id)
{
	for (size_t i = 0; i < sm->n_locks; i++)
		if (sm->locks[i].held && sm->locks[i].kind == SLOT_SESSION &&
		    strcmp(sm->locks[i].id, id) == 0)
			return &sm->locks[i];
	return NULL;
}

/* The gone message for a lost id into why; false when id is not lost. */
static bool gone(const struct mem_server *sm, const char *id, char *why, size_t len)
{
	char when[UTC_TEXT_LEN];
	ssize_t i = lost_find(sm, id);

	if (i < 0)
		return false;
	utc_text(sm->lost[i].mtime.tv_sec, when, sizeof(when));
	snprintf(why, len, "session '%s' is gone: the memory store was restarted at %s and "
	         "its sessions lived only in the old server's memory; 'dolsot --reset %s' "
	         "starts it anew", id, when, id);
	return true;
}

/*
 * The fence: a request that names a lock ("lock=INCARNATION:TOKEN") is
 * served only while that lock is held, in this incarnation; a save must
 * name one.  Returns true to serve it, else false with the reason in why.
 */
static bool fenced_ok(const struct mem_server *sm, const struct wire_msg *m, const char *id,
                      char *why, size_t len)
{
	size_t pos = 0;
	const char *lock = wire_next(m->payload, m->len, "lock", &pos);
	const struct lock_slot *h = holder(sm, id);
	bool save = m->type == WIRE_MEM_SAVE;
	unsigned long long inc, token;
	char when[UTC_TEXT_LEN], tail;

	if (!lock) {
		if (!save)
			return true;
		snprintf(why, len, "cannot save session '%s': the call does not hold its lock", id);
		return false;
	}
	if (sscanf(lock, "%16llx:%llu%c", &inc, &token, &tail) != 2) {
		snprintf(why, len, "malformed lock for session '%s'", id);
		return false;
	}
	if (inc == sm->incarnation && h && h->token == token)
		return true;
	if (inc == sm->incarnation) {
		snprintf(why, len, "session '%s' is not locked by this call", id);
		return false;
	}
	utc_text(sm->started, when, sizeof(when));
	if (save && lost_find(sm, id) >= 0)
		snprintf(why, len, "the memory store was restarted at %s while this call held "
		         "session '%s', so the cell's result is not saved, and the session "
		         "is gone with the old server; 'dolsot --reset %s' starts it anew",
		         when, id, id);
	else if (save)
		snprintf(why, len, "the memory store was restarted at %s while this call held "
		         "session '%s', so the cell's result is not saved; run the call again",
		         when, id);
	else if (!gone(sm, id, why, len))
		snprintf(why, len, "the memory store was restarted at %s while this call "
		         "waited for session '%s'; the cell did not run: run the call again",
		         when, id);
	return false;
}

static void on_load(struct mem_server *sm, int fd, const char *id)
{
	char err[STORE_ERR_MAX];
	uint8_t *blob = NULL;
	size_t len = 0;
	bool found = false;

	if (store_load(sm->store, id, &blob, &len, &found, err, sizeof(err)) < 0) {
		reply_err(fd, err);
		return;
	}
	if (!found) {
		if (gone(sm, id, err, sizeof(err)))
			reply_err(fd, err);
		else
			wire_send(fd, WIRE_MEM_BLOB, 0, 0, NULL, 0, NULL, 0);
		return;
	}
	reply_blob(fd, blob, len, "the session");
	free(blob);
}

static void on_save(struct mem_server *sm, int fd, const char *id, struct wire_msg *m)
{
	char err[STORE_ERR_MAX];
	const uint8_t *p;
	size_t len;
	unsigned before = mem_server_count(sm);

	if (map_sent(m, &p, &len) < 0) {
		reply_err(fd, "cannot read the session to save");
		return;
	}
	if (store_save(sm->store, id, p, len, m->a != 0, err, sizeof(err)) < 0) {
		reply_err(fd, err);
	} else {
		bool was_lost = lost_drop(sm, id);

		/* A new id is on disk before the save is acknowledged. */
		if (was_lost || mem_server_count(sm) != before)
			ids_write(sm);
		wire_send(fd, WIRE_MEM_OK, 0, 0, NULL, 0, NULL, 0);
	}
	unmap_sent(p, len);
}

/* Delete id, or with "all" every session no call holds (and every lost
 * id), or with "all" and sweep only the lost ids; a = removed. */
static void on_del(struct mem_server *sm, int fd, const char *id, bool sweep)
{
	char err[STORE_ERR_MAX];
	struct session_info *v = NULL;
	unsigned removed = 0, one;
	size_t n = 0;
	bool changed;

	if (strcmp(id, "all") != 0) {
		if (del_id(sm, id, &removed, err, sizeof(err)) < 0) {
			reply_err(fd, err);
			return;
		}
		changed = lost_drop(sm, id) || removed;
	} else {
		if (!sweep && list_ids(sm, &v, &n, err, sizeof(err)) < 0) {
			reply_err(fd, err);
			return;
		}
		for (size_t i = 0; i < n; i++)
			if (!holder(sm, v[i].id) &&
			    del_id(sm, v[i].id, &one, err, sizeof(err)) == 0)
				removed += one;
		free(v);
		changed = sm->n_lost || removed;
		sm->n_lost = 0;
	}
	if (changed)
		ids_write(sm);
	wire_send(fd, WIRE_MEM_OK, removed, 0, NULL, 0, NULL, 0);
}

static void on_list(struct mem_server *sm, int fd)
{
	char err[STORE_ERR_MAX];
	struct session_info *info = NULL;
	size_t n = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	bool ok;

	if (list_ids(sm, &info, &n, err, sizeof(err)) < 0) {
		reply_err(fd, err);
		return;
	}
	f = open_memstream(&text, &len);
	ok = f && mem_list_format(f, info, n) == 0;
	if (f && fclose(f) != 0)
		ok = false;
	free(info);
	if (!ok) {
		free(text);
		reply_err(fd, "cannot list sessions: out of memory");
		return;
	}
	reply_blob(fd, (const uint8_t *)text, len, "the list");
	free(text);
}

/* The grant: a = this incarnation, b = the lock's token. */
static void grant(const struct mem_server *sm, struct lock_slot *l)
{
	l->held = true;
	wire_send(l->fd, WIRE_MEM_LOCKED, sm->incarnation, l->token, NULL, 0, NULL, 0);
}

/* Whether waiter i of the units lock may have it: no hold it conflicts
 * with (an exclusive one conflicts with any), and no waiter before it. */
static bool units_free_for(const struct mem_server *sm, size_t i)
{
	const struct lock_slot *l = &sm->locks[i];

	for (size_t j = 0; j < sm->n_locks; j++) {
		const struct lock_slot *o = &sm->locks[j];

		if (j == i || o->kind == SLOT_SESSION)
			continue;
		if (o->held ? o->kind == SLOT_UNITS_EXCLUSIVE || l->kind == SLOT_UNITS_EXCLUSIVE
		            : j < i)
			return false;
	}
	return true;
}

/* Grant each waiter whose session (or the units) is free, oldest first. */
static void grant_waiters(struct mem_server *sm)
{
	for (size_t i = 0; i < sm->n_locks; i++) {
		struct lock_slot *l = &sm->locks[i];

		if (!l->held && (l->kind == SLOT_SESSION ? !holder(sm, l->id)
		                                         : units_free_for(sm, i)))
			grant(sm, l);
	}
}

/* A lock request of kind (id "" for the units); with try (a = 1), one
 * that is not free at once is answered busy instead of waiting.  True
 * when fd now has a slot. */
static bool on_lock(struct mem_server *sm, int fd, enum slot_kind kind, const char *id,
                    bool try)
{
	char why[STORE_ERR_MAX];
	struct lock_slot *l;

	if (try && holder(sm, id)) {
		reply_busy(fd, STORE_BUSY_WHY);
		return false;
	}
	if (sm->n_locks == MEM_SERVER_MAX_LOCKS) {
		snprintf(why, sizeof(why), "the memory store already has %d calls holding or "
		         "waiting for session locks; try again later", MEM_SERVER_MAX_LOCKS);
		reply_busy(fd, why);
		return false;
	}
	l = &sm->locks[sm->n_locks++];
	l->kind = kind;
	snprintf(l->id, sizeof(l->id), "%s", id);
	l->fd = fd;
	l->held = false;
	l->token = sm->next_token++;
	grant_waiters(sm);
	return true;
}

/* ---- units ---- */

/* The grant "INC:TOKEN" m names under key: whether it is a slot of kind
 * held now, in this incarnation. */
static bool grant_held(const struct mem_server *sm, const struct wire_msg *m,
                       const char *key, enum slot_kind kind)
{
	size_t pos = 0;
	const char *v = wire_next(m->payload, m->len, key, &pos);
	unsigned long long inc, token;
	char tail;

	if (!v || sscanf(v, "%16llx:%llu%c", &inc, &token, &tail) != 2 ||
	    inc != sm->incarnation)
		return false;
	for (size_t i = 0; i < sm->n_locks; i++)
		if (sm->locks[i].held && sm->locks[i].kind == kind && sm->locks[i].token == token)
			return true;
	return false;
}

static bool unit_hash(const struct wire_msg *m, uint8_t hash[STORE_HASH_LEN])
{
	size_t pos = 0;
	const char *hex = wire_next(m->payload, m->len, "hash", &pos);

	return hex && units_unhex(hex, strlen(hex), hash) == 0;
}

/* PUT: its bytes as the client sent them, checked against the hash where
 * they are used (the worker checks each unit it reads). */
static int unit_put(struct mem_server *sm, const struct wire_msg *m, const uint8_t *hash,
                    char *err, size_t errlen)
{
	const uint8_t *p;
	size_t len;
	bool had;
	int ret;

	if (map_sent(m, &p, &len) < 0) {
		snprintf(err, errlen, "cannot read the unit to keep");
		return -1;
	}
	ret = sm->store->ops->obj_has(sm->store, hash, &had, err, errlen);
	if (ret == 0 && !had)
		ret = sm->store->ops->obj_put(sm->store, hash, p, len, err, errlen);
	if (ret == 0 && !had)
		sm->units_stored++;
	unmap_sent(p, len);
	return ret;
}

/* Every unit's hash, 32 bytes each, as a BLOB. */
static void unit_list(struct mem_server *sm, int fd)
{
	char err[STORE_ERR_MAX];
	uint8_t *v = NULL;
	size_t n = 0;

	if (sm->store->ops->obj_list(sm->store, &v, &n, err, sizeof(err)) < 0)
		reply_err(fd, err);
	else
		reply_blob(fd, v, n * STORE_HASH_LEN, "the units");
	free(v);
}

static void unit_read(struct mem_server *sm, int fd, const uint8_t *hash)
{
	char err[STORE_ERR_MAX];
	uint8_t *p = NULL;
	size_t n = 0;
	bool found;

	if (sm->store->ops->obj_read(sm->store, hash, &p, &n, &found, err, sizeof(err)) < 0)
		reply_err(fd, err);
	else if (!found)
		wire_send(fd, WIRE_MEM_BLOB, 0, 0, NULL, 0, NULL, 0);
	else
		reply_blob(fd, p, n, "the unit");
	free(p);
}

/* A unit request but PACK (which names a session: on_pack). */
static void on_unit(struct mem_server *sm, int fd, const struct wire_msg *m)
{
	char err[STORE_ERR_MAX] = "";
	uint8_t hash[STORE_HASH_LEN];
	struct store *st = sm->store;
	bool has = false;
	int ret = -1;

	if (m->a == WIRE_UNIT_LIST) {
		unit_list(sm, fd);
		return;
	}
	if (!unit_hash(m, hash)) {
		reply_err(fd, "malformed unit request");
		return;
	}
	if (m->a == WIRE_UNIT_READ) {
		unit_read(sm, fd, hash);
		return;
	}
	if (m->a == WIRE_UNIT_HAS)
		ret = st->ops->obj_has(st, hash, &has, err, sizeof(err));
	else if (m->a == WIRE_UNIT_PUT)
		ret = unit_put(sm, m, hash, err, sizeof(err));
	else if (m->a == WIRE_UNIT_DEL && !grant_held(sm, m, "units", SLOT_UNITS_EXCLUSIVE))
		snprintf(err, sizeof(err), "a unit is removed only under the exclusive units "
		         "lock, and this call does not hold it");
	else if (m->a == WIRE_UNIT_DEL)
		ret = st->ops->obj_del(st, hash, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "unknown unit request");
	if (ret < 0)
		reply_err(fd, err);
	else
		wire_send(fd, WIRE_MEM_OK, has, 0, NULL, 0, NULL, 0);
}

/*
 * PACK: after the verified head in the client's memfd, a pack entry for
 * each of its refs, written by us straight into the memfd the worker will
 * read (unitstore.c's, as for any store with units); a = its new length.
 */
static void on_pack(struct mem_server *sm, int fd, const char *id, const struct wire_msg *m)
{
	char err[STORE_ERR_MAX];
	struct stat st;
	size_t len;

	if (m->nfds != 1 || fstat(m->fds[0], &st) < 0) {
		reply_err(fd, "malformed pack request");
		return;
	}
	len = (size_t)st.st_size;
	if (unitstore_append_pack(sm->store, id, m->fds[0], &len, err, sizeof(err)) < 0)
		reply_err(fd, err);
	else
		wire_send(fd, WIRE_MEM_OK, len, 0, NULL, 0, NULL, 0);
}

/* The units lock (a = STORE_GC_SHARED or STORE_GC_EXCLUSIVE), as a slot
 * of its own; true when fd now has it or waits for it. */
static bool on_units_lock(struct mem_server *sm, int fd, uint64_t how)
{
	if (how != STORE_GC_SHARED && how != STORE_GC_EXCLUSIVE) {
		reply_err(fd, "malformed units lock request");
		return false;
	}
	return on_lock(sm, fd, how == STORE_GC_SHARED ? SLOT_UNITS_SHARED : SLOT_UNITS_EXCLUSIVE,
	               "", false);
}

void mem_server_closed(struct mem_server *sm, int fd)
{
	for (size_t i = 0; i < sm->n_locks; i++) {
		if (sm->locks[i].fd != fd)
			continue;
		memmove(&sm->locks[i], &sm->locks[i + 1],
		        (sm->n_locks - i - 1) * sizeof(sm->locks[0]));
		sm->n_locks--;
		break;
	}
	grant_waiters(sm);
}

bool mem_server_handle(struct mem_server *sm, int fd, struct wire_msg *m)
{
	char err[STORE_ERR_MAX];
	size_t pos = 0;
	const char *id;

	if (m->type == WIRE_MEM_UNITS_LOCK)
		return on_units_lock(sm, fd, m->a);
	if (m->type == WIRE_MEM_UNIT && m->a != WIRE_UNIT_PACK) {
		on_unit(sm, fd, m);
		return false;
	}
	id = m->type == WIRE_MEM_LIST ? "" : wire_next(m->payload, m->len, "id", &pos);
	if (!id) {
		reply_err(fd, "missing session id");
		return false;
	}
	if ((m->type == WIRE_MEM_LOAD || m->type == WIRE_MEM_SAVE ||
	     m->type == WIRE_MEM_ORIGIN || m->type == WIRE_MEM_DEL ||
	     m->type == WIRE_MEM_UNIT) &&
	    !fenced_ok(sm, m, id, err, sizeof(err))) {
		reply_err(fd, err);
		return false;
	}
	switch (m->type) {
	case WIRE_MEM_LOAD:
		on_load(sm, fd, id);
		return false;
	case WIRE_MEM_SAVE:
		on_save(sm, fd, id, m);
		return false;
	case WIRE_MEM_DEL:
		on_del(sm, fd, id, m->a != 0);
		return false;
	case WIRE_MEM_LIST:
		on_list(sm, fd);
		return false;
	case WIRE_MEM_UNIT:
		on_pack(sm, fd, id, m);
		return false;
	case WIRE_MEM_ORIGIN: {
		bool sandboxed;

		if (store_origin(sm->store, id, &sandboxed, err, sizeof(err)) < 0)
			reply_err(fd, err);
		else
			wire_send(fd, WIRE_MEM_OK, sandboxed, 0, NULL, 0, NULL, 0);
		return false;
	}
	case WIRE_MEM_LOCK:
		if (!store_id_valid(id, err, sizeof(err))) {
			reply_err(fd, err);
			return false;
		}
		return on_lock(sm, fd, SLOT_SESSION, id, m->a == 1);
	default:
		reply_err(fd, "unknown request");
		return false;
	}
}

unsigned mem_server_count(struct mem_server *sm)
{
	char err[STORE_ERR_MAX];
	struct session_info *info = NULL;
	size_t n = 0;

	if (list_ids(sm, &info, &n, err, sizeof(err)) < 0)
		return 0;
	free(info);
	return (unsigned)n;
}

void mem_server_units(struct mem_server *sm, unsigned *held, uint64_t *stored)
{
	char err[STORE_ERR_MAX];
	uint8_t *v = NULL;
	size_t n = 0;

	*held = sm->store->ops->obj_list(sm->store, &v, &n, err, sizeof(err)) == 0 ? (unsigned)n
	                                                                           : 0;
	free(v);
	*stored = sm->units_stored;
}
