/*
 * store_ops.h - what a store backend implements: the ops table behind
 * store.h's door, and the types its operations trade in.
 *
 * A store keeps opaque bytes under a session id.  It never interprets them
 * (a session blob runs code when unpickled, so only the worker touches its
 * contents).  Backends: store_file.c (one file per session in a private
 * directory, the default), store_mem.c (a table in this process) and
 * mem_client.c (the warm server's table, over its socket).  Each exports
 * only its constructor, in its own header; everything else is static.
 *
 * Every operation returns 0 on success or -1 with a one-line reason (no
 * newline, lowercase, no full stop) written into err, a buffer of errlen
 * bytes (STORE_ERR_MAX holds any of them); lock returns an enum
 * store_lock_status instead.  errno is preserved where the cause was a
 * system call, for the message's sake only: it is never a status.
 * Session ids reach a backend validated (store.h's wrappers check them
 * once).
 *
 * The generic types below carry nothing of any backend: what a backend
 * needs for one lock or one save (a file, a connection, a temp name) is
 * its own, behind the priv pointer it sets and frees.
 */
#ifndef DOLSOT_STORE_OPS_H
#define DOLSOT_STORE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define STORE_ID_MAX 128
#define STORE_ERR_MAX 512       /* enough for any store's message */

struct session_info {
	char id[STORE_ID_MAX + 1];
	uint64_t size;          /* bytes */
	struct timespec mtime;  /* last written */
};

/*
 * What the client records beside a session's bytes at each commit, in the
 * store's own metadata; the session's signature holds the same (sign.h),
 * and store.c compares the two at every load.
 */
struct store_mark {
	bool sandboxed;         /* a sandboxed call wrote it (see origin) */
	uint64_t seq;           /* the save counter of the last commit; 0: none
	                         * recorded (or a store that keeps none) */
};

/* A session lock held from load to save; released by store_unlock(). */
struct store_lock {
	void *priv;             /* the backend's hold on it; NULL when none */
};

/* The usual reason a lock is busy. */
#define STORE_BUSY_WHY "another call is using it"

/* What asking for a session's lock came to.  The caller words the
 * message: err holds only the reason. */
enum store_lock_status {
	STORE_LOCKED,           /* held: release it with store_unlock() */
	STORE_LOCK_BUSY,        /* another call held it until the timeout; err says
	                         * who, completing "session 'ID' is busy: " */
	STORE_LOCK_FAILED,      /* the store failed; err says why */
	STORE_LOCK_GONE,        /* the server the store lives in (the memory
	                         * store's) ended before it answered: killed,
	                         * stopped or idled out; nothing is held, and a
	                         * server started anew may answer */
};

struct store;
struct history_prev;

/*
 * A save in progress (store_save_begin): the new session is written into fd
 * by someone else (the worker), then committed or aborted.  Either call
 * closes fd.
 */
struct store_save {
	int fd;                 /* where the new session goes; -1 when none */
	bool sandboxed;         /* record that a sandboxed call wrote it (see origin) */
	uint64_t seq;           /* the save counter it is signed with (store.c's) */
	uint64_t max;           /* the most bytes it may hold; 0: no bound */
	char id[STORE_ID_MAX + 1];
	/* The backend's state for this save: set (never NULL) by its
	 * save_begin, freed and NULLed by its save_commit and save_abort.
	 * NULL: no backend holds it (store.c's memfd, or nothing left). */
	void *priv;
};

/* A unit's name (session format v4, units.h): its SHA-256. */
#define STORE_HASH_LEN 32

/* The store-wide lock that keeps collecting units off commits (obj_lock). */
enum store_gc_lock {
	STORE_GC_SHARED,        /* a commit from its first put until its head is in
	                         * place; --fork around its read and write */
	STORE_GC_EXCLUSIVE,     /* collecting */
	STORE_GC_RELEASE,
};

/* Where obj_fetch hands each unit it read: hash's n bytes at p, lent for
 * the call.  0, or -1 with err to stop the fetch. */
typedef int (*store_unit_take)(void *ctx, const uint8_t *hash, const uint8_t *p, size_t n,
                               char *err, size_t errlen);

struct store_ops {
	/* *blob is malloc'd (caller frees); *found=false and *blob=NULL when absent. */
	int (*load)(struct store *s, const char *id, uint8_t **blob, size_t *len,
	            bool *found, char *err, size_t errlen);
	/* Atomic and durable: afterwards the session is the new bytes, or the old
	 * ones on failure.  mark is recorded with it, as origin reports it. */
	int (*save)(struct store *s, const char *id, const uint8_t *blob, size_t len,
	            const struct store_mark *mark, char *err, size_t errlen);
	/*
	 * The mark recorded at the session's last commit.  mark->sandboxed: the
	 * session was last written by a sandboxed call, so its bytes are the
	 * cell's and loading them outside the sandbox would run the cell's code
	 * there.  Only the client records it, in the store's own metadata, never
	 * in anything a worker is handed; a store that cannot tell says true.
	 * mark->seq: the save counter recorded with it, 0 when the store keeps
	 * none.  False and 0 for a session that does not exist.
	 */
	int (*origin)(struct store *s, const char *id, struct store_mark *mark, char *err,
	              size_t errlen);
	/* id "all" removes every session of this store that no call has
	 * locked (a locked one, and its save in progress, stay); *removed
	 * counts them. */
	int (*del)(struct store *s, const char *id, unsigned *removed, char *err,
	           size_t errlen);
	/*
	 * Optional (NULL: nothing is left behind).  Remove what sessions no
	 * call holds left behind (a killed save's temp file, a lock file, a
	 * mark, an id the memory server lost), never a session: --reset all
	 * removes each session under its own lock, so a session a call held
	 * when the reset reached it stays, with its save (issue 35).
	 */
	int (*sweep)(struct store *s, char *err, size_t errlen);
	/* *out is malloc'd, sorted by id; caller frees. */
	int (*list)(struct store *s, struct session_info **out, size_t *n, char *err,
	            size_t errlen);
	/*
	 * Take the session's exclusive lock, waiting at most timeout_ms (< 0 means
	 * forever): STORE_LOCKED, STORE_LOCK_BUSY once the timeout passes with
	 * another call holding it, STORE_LOCK_GONE (only a store that lives in
	 * a server) or STORE_LOCK_FAILED; err as the enum says.
	 * Saves must hold the lock: the FileStore removes a
	 * session's leftover temp files (of a killed save) when it is locked.
	 * lk->priv is the backend's (NULL after unlock, and unless locked).
	 */
	enum store_lock_status (*lock)(struct store *s, const char *id, long timeout_ms,
	            struct store_lock *lk, char *err, size_t errlen);
	void (*unlock)(struct store *s, struct store_lock *lk);
	void (*close)(struct store *s);
	/*
	 * Optional: lk is held for a call whose cell runs in the process
	 * pidfd names (-1: one is about to start, not known yet; the fd stays
	 * the caller's).  A backend whose lock outlives a holder that dies
	 * (Redis's, until it expires) releases it once this process is dead
	 * and every cell process it was told of has ended; a cell announced
	 * and never named leaves the lock to its expiry.
	 */
	void (*watch)(struct store *s, struct store_lock *lk, int pidfd);
	/*
	 * Optional (NULL: store.c's generic fallback over load and save).
	 * open_blob: *fd is the session, read-only, CLOEXEC, *len bytes long
	 * (fstat'ed); *found=false and *fd=-1 when absent.
	 * save_begin: sv->fd is an empty file the session is written into, and
	 * sv->priv the backend's state for it (never NULL); -1 leaves both unset.
	 * save_commit: sv->fd holds exactly len bytes: make it the session,
	 * atomically and durably, like save, with sv->sandboxed and sv->seq as
	 * its mark;
	 * where the origin is a separate record, a sandboxed one is in place
	 * before the bytes, and an unsandboxed one only after them, so a crash
	 * between errs towards refusing; where the counter is, it is recorded
	 * only after the bytes, so a crash between errs towards loading the new
	 * ones (never towards refusing them).  save_abort: leave no trace.
	 */
	int (*open_blob)(struct store *s, const char *id, int *fd, size_t *len,
	                 bool *found, char *err, size_t errlen);
	int (*save_begin)(struct store *s, struct store_save *sv, char *err,
	                  size_t errlen);
	int (*save_commit)(struct store *s, struct store_save *sv, size_t len,
	                   char *err, size_t errlen);
	void (*save_abort)(struct store *s, struct store_save *sv);
	/*
	 * Optional, all or none but obj_dir (NULL: the store keeps whole
	 * blobs): units,
	 * immutable byte strings named by their SHA-256 (STORE_HASH_LEN
	 * bytes, units.h), each kept once for every session of the store;
	 * the session's stored bytes are then its v4 head only (store.c).
	 * obj_dir (may be NULL: a worker is then handed every unit packed
	 * with the head): the absolute path a worker may read a unit from, as
	 * PATH/HH/REST (the hash's 64 lowercase hex digits split 2 + 62).
	 * obj_has: *has whether hash is stored.  obj_put: store n bytes
	 * (the caller checked they hash to it), durable before it returns;
	 * one already there is kept.  obj_read: its bytes into *p
	 * (malloc'd), *found false when absent.  obj_del: remove it (absent:
	 * 0).  obj_list: every stored hash, *hashes malloc'd n *
	 * STORE_HASH_LEN bytes.  obj_lock: the store-wide lock of
	 * enum store_gc_lock, waiting as long as it takes.
	 */
	int (*obj_dir)(struct store *s, char *buf, size_t len, char *err, size_t errlen);
	int (*obj_has)(struct store *s, const uint8_t *hash, bool *has, char *err,
	               size_t errlen);
	int (*obj_put)(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
	               char *err, size_t errlen);
	int (*obj_read)(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
	                bool *found, char *err, size_t errlen);
	int (*obj_del)(struct store *s, const uint8_t *hash, char *err, size_t errlen);
	int (*obj_list)(struct store *s, uint8_t **hashes, size_t *n, char *err,
	                size_t errlen);
	int (*obj_lock)(struct store *s, enum store_gc_lock how, char *err, size_t errlen);
	/*
	 * Optional (NULL: unitstore.c reads each unit with obj_read and
	 * writes it itself): unitstore_append_pack's work done where the
	 * units are, as its contract says, for session id (the memory store's
	 * server writes them straight into fd, never through this process).
	 */
	int (*obj_pack)(struct store *s, const char *id, int fd, size_t *len, char *err,
	                size_t errlen);
	/*
	 * Optional (NULL: a kept state is put as a unit of its own, history.c):
	 * make session id's stored bytes, as they are now, the unit hash,
	 * durably, without copying them (the file store links the file).  The
	 * caller holds id's lock and hashed those bytes when it loaded them;
	 * a unit already there is kept.
	 */
	int (*obj_adopt)(struct store *s, const char *id, const uint8_t *hash, char *err,
	                 size_t errlen);
	/*
	 * Optional (NULL: obj_read of each in turn): the units hashes[0..n)
	 * (STORE_HASH_LEN bytes each; sizes[i] the size a head gives unit i,
	 * which says how many to ask for at once) read in as few round trips
	 * as the store allows, each one found handed to take, in order (one
	 * absent is not).  take's -1 stops it and is returned, with its err.
	 */
	int (*obj_fetch)(struct store *s, const uint8_t *hashes, const uint64_t *sizes,
	                 size_t n, store_unit_take take, void *ctx, char *err, size_t errlen);
	/*
	 * Optional, all or none (NULL: a commit's dropped units are collected
	 * at once): obj_defer, with the units lock held shared, 1 when the
	 * units cands[0..n) a commit dropped were put off for a later
	 * collection, 0 when they are to be collected now; obj_pending, with
	 * it exclusive, the units put off (*hashes malloc'd); obj_collected,
	 * with it exclusive, after a collection that took them, read heads
	 * heads and lasted seconds.  A large store's commits then cost no read
	 * of every head each (the file store's store/pending.h).
	 */
	int (*obj_defer)(struct store *s, const uint8_t *cands, size_t n);
	int (*obj_pending)(struct store *s, uint8_t **hashes, size_t *n, char *err,
	                   size_t errlen);
	void (*obj_collected)(struct store *s, size_t heads, double seconds);
};

struct sign_key;

struct store {
	const struct store_ops *ops;
	void *priv;
	int home;               /* the directory the warm server's socket is in, or -1 */
	/* The session key (sign.h, malloc'd): set by store.h's store_sign_with,
	 * never by a backend; NULL until then. */
	struct sign_key *key;
	/* store.c's: the counter the next save of next_id is signed with, from
	 * its last load there ("" when none). */
	char next_id[STORE_ID_MAX + 1];
	uint64_t next_seq;
	/* What the backend found the caller should hear (lines, malloc'd,
	 * taken with store.h's store_take_notice); NULL: nothing. */
	char *notice;
	/* Set by a backend that removed expired sessions (its TTL), so that
	 * store.c collects the units no head names any more; store.c clears it. */
	bool reaped;
	/* The namespace (store_name.h) whose sessions a backend's TTL reaps,
	 * set by store.h's store_set_namespace; NULL: the default one. */
	const char *ns;
	/* store.c's: how many earlier states a session keeps (DOLSOT_HISTORY;
	 * 0: none), and what the last verified load kept for the next
	 * commit's history (history.h; malloc'd, one block). */
	unsigned history;
	struct history_prev *hist_prev;
	/* store.c's, never a backend's: this machine's copy of the units of a
	 * store that keeps them where no worker can read them (unitcache.h),
	 * NULL when none, and what closes it (this header is below that one). */
	struct unitcache *cache;
	void (*close_cache)(struct unitcache *cache);
};

static inline void store_close(struct store *s)
{
	if (s) {
		free(s->key);
		s->key = NULL;
		if (s->cache)
			s->close_cache(s->cache);
		s->cache = NULL;
		free(s->notice);
		s->notice = NULL;
		free(s->hist_prev);
		s->hist_prev = NULL;
		s->ops->close(s);
	}
}

#endif
