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
 * bytes (STORE_ERR_MAX holds any of them); errno is preserved where the
 * cause was a system call.  Session ids reach a backend validated
 * (store.h's wrappers check them once).
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

/* A session lock held from load to save; released by store_unlock(). */
struct store_lock {
	void *priv;             /* the backend's hold on it; NULL when none */
};

struct store;

/*
 * A save in progress (store_save_begin): the new session is written into fd
 * by someone else (the worker), then committed or aborted.  Either call
 * closes fd.
 */
struct store_save {
	int fd;                 /* where the new session goes; -1 when none */
	bool sandboxed;         /* record that a sandboxed call wrote it (see origin) */
	uint64_t max;           /* the most bytes it may hold; 0: no bound */
	char id[STORE_ID_MAX + 1];
	/* The backend's state for this save: set (never NULL) by its
	 * save_begin, freed and NULLed by its save_commit and save_abort.
	 * NULL: no backend holds it (store.c's memfd, or nothing left). */
	void *priv;
};

struct store_ops {
	/* *blob is malloc'd (caller frees); *found=false and *blob=NULL when absent. */
	int (*load)(struct store *s, const char *id, uint8_t **blob, size_t *len,
	            bool *found, char *err, size_t errlen);
	/* Atomic and durable: afterwards the session is the new bytes, or the old
	 * ones on failure.  sandboxed is its origin, as origin reports it. */
	int (*save)(struct store *s, const char *id, const uint8_t *blob, size_t len,
	            bool sandboxed, char *err, size_t errlen);
	/*
	 * *sandboxed: the session was last written by a sandboxed call, so its
	 * bytes are the cell's and loading them outside the sandbox would run
	 * the cell's code there.  Only the client records it, in the store's own
	 * metadata, never in anything a worker is handed; a store that cannot
	 * tell says true.  False for a session that does not exist.
	 */
	int (*origin)(struct store *s, const char *id, bool *sandboxed, char *err,
	              size_t errlen);
	/* id "all" removes every session of this store that no call has
	 * locked (a locked one, and its save in progress, stay); *removed
	 * counts them. */
	int (*del)(struct store *s, const char *id, unsigned *removed, char *err,
	           size_t errlen);
	/* *out is malloc'd, sorted by id; caller frees. */
	int (*list)(struct store *s, struct session_info **out, size_t *n, char *err,
	            size_t errlen);
	/*
	 * Take the session's exclusive lock, waiting at most timeout_ms (< 0 means
	 * forever).  Returns 0, or -1; on timeout errno is EWOULDBLOCK and err says
	 * the session is busy.  Saves must hold the lock: the FileStore removes a
	 * session's leftover temp files (of a killed save) when it is locked.
	 * lk->priv is the backend's (NULL after unlock).
	 */
	int (*lock)(struct store *s, const char *id, long timeout_ms,
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
	 * atomically and durably, like save, with sv->sandboxed as its origin;
	 * where the origin is a separate record, a sandboxed one is in place
	 * before the bytes, and an unsandboxed one only after them, so a crash
	 * between errs towards refusing.  save_abort: leave no trace.
	 */
	int (*open_blob)(struct store *s, const char *id, int *fd, size_t *len,
	                 bool *found, char *err, size_t errlen);
	int (*save_begin)(struct store *s, struct store_save *sv, char *err,
	                  size_t errlen);
	int (*save_commit)(struct store *s, struct store_save *sv, size_t len,
	                   char *err, size_t errlen);
	void (*save_abort)(struct store *s, struct store_save *sv);
};

struct sign_key;

struct store {
	const struct store_ops *ops;
	void *priv;
	int home;               /* the directory the warm server's socket is in, or -1 */
	/* The session key (sign.h, malloc'd): set by store.h's store_sign_with,
	 * never by a backend; NULL until then. */
	struct sign_key *key;
	/* What the backend found the caller should hear (lines, malloc'd,
	 * taken with store.h's store_take_notice); NULL: nothing. */
	char *notice;
};

static inline void store_close(struct store *s)
{
	if (s) {
		free(s->key);
		s->key = NULL;
		free(s->notice);
		s->notice = NULL;
		s->ops->close(s);
	}
}

#endif
