/*
 * store.h - where sessions live between calls.
 *
 * A store keeps opaque bytes under a session id.  It never interprets them
 * (a session blob runs code when unpickled, so only the worker touches its
 * contents).  Backends: store_file.c (one file per session in a private
 * directory, the default) and store_mem.c (a table in this process).
 *
 * Every operation returns 0 on success or -1 with a one-line reason (no
 * newline, lowercase, no full stop) written into err; errno is preserved
 * where the cause was a system call.  The inline wrappers below check the
 * session id once, so backends can trust it.
 */
#ifndef DOLSOT_STORE_H
#define DOLSOT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define STORE_ID_MAX 128
#define STORE_ERR_MAX 512

struct session_info {
	char id[STORE_ID_MAX + 1];
	uint64_t size;          /* bytes */
	struct timespec mtime;  /* last written */
};

/* A session lock held from load to save; released by store_unlock(). */
struct store_lock {
	int fd;                 /* -1 for stores that lock in memory */
	void *priv;
};

struct store;

/*
 * A save in progress (store_save_begin): the new session is written into fd
 * by someone else (the worker), then committed or aborted.  Either call
 * closes fd.
 */
struct store_save {
	int fd;                 /* where the new session goes; -1 when none */
	bool memfd;             /* the generic fallback: committed via ops->save */
	bool sandboxed;         /* record that a sandboxed call wrote it (see origin) */
	uint64_t max;           /* the most bytes it may hold; 0: no bound */
	char id[STORE_ID_MAX + 1];
	char tmp[STORE_ID_MAX + 32];   /* the backend's temp file, "" if none */
};

struct store_ops {
	/* *blob is malloc'd (caller frees); *found=false and *blob=NULL when absent. */
	int (*load)(struct store *s, const char *id, uint8_t **blob, size_t *len,
	            bool *found, char *err);
	/* Atomic and durable: afterwards the session is the new bytes, or the old
	 * ones on failure.  sandboxed is its origin, as origin reports it. */
	int (*save)(struct store *s, const char *id, const uint8_t *blob, size_t len,
	            bool sandboxed, char *err);
	/*
	 * *sandboxed: the session was last written by a sandboxed call, so its
	 * bytes are the cell's and loading them outside the sandbox would run
	 * the cell's code there.  Only the client records it, in the store's own
	 * metadata, never in anything a worker is handed; a store that cannot
	 * tell says true.  False for a session that does not exist.
	 */
	int (*origin)(struct store *s, const char *id, bool *sandboxed, char *err);
	/* id "all" removes every session of this store; *removed counts them. */
	int (*del)(struct store *s, const char *id, unsigned *removed, char *err);
	/* *out is malloc'd, sorted by id; caller frees. */
	int (*list)(struct store *s, struct session_info **out, size_t *n, char *err);
	/*
	 * Take the session's exclusive lock, waiting at most timeout_ms (< 0 means
	 * forever).  Returns 0, or -1; on timeout errno is EWOULDBLOCK and err says
	 * the session is busy.  Saves must hold the lock: the FileStore removes a
	 * session's leftover temp files (of a killed save) when it is locked.
	 */
	int (*lock)(struct store *s, const char *id, long timeout_ms,
	            struct store_lock *lk, char *err);
	void (*unlock)(struct store *s, struct store_lock *lk);
	void (*close)(struct store *s);
	/*
	 * Optional (NULL: store_blob.c's generic fallback over load and save).
	 * open_blob: *fd is the session, read-only, CLOEXEC, *len bytes long
	 * (fstat'ed); *found=false and *fd=-1 when absent.
	 * save_begin: sv->fd is an empty file the session is written into.
	 * save_commit: sv->fd holds exactly len bytes: make it the session,
	 * atomically and durably, like save, with sv->sandboxed as its origin;
	 * where the origin is a separate record, a sandboxed one is in place
	 * before the bytes, and an unsandboxed one only after them, so a crash
	 * between errs towards refusing.  save_abort: leave no trace.
	 */
	int (*open_blob)(struct store *s, const char *id, int *fd, size_t *len,
	                 bool *found, char *err);
	int (*save_begin)(struct store *s, struct store_save *sv, char *err);
	int (*save_commit)(struct store *s, struct store_save *sv, size_t len,
	                   char *err);
	void (*save_abort)(struct store *s, struct store_save *sv);
	/* The directory holding the warm server's socket, or NULL: none. */
	int (*dirfd)(struct store *s);
};

struct store {
	const struct store_ops *ops;
	void *priv;
};

/*
 * FileStore.  dir NULL means the default: $DOLSOT_CACHE_DIR is resolved by the
 * caller; NULL here is {TMPDIR or /tmp}/dolsot-{uid}/sessions.  ttl_days 0
 * disables reaping; reaping runs on every operation.  Returns NULL and fills
 * err on refusal (symlink, wrong owner, group/other access, not a directory).
 */
struct store *store_file_open(const char *dir, double ttl_days, char *err);

/* The directory store_file_open(dir, ...) uses, as a path, into buf
 * (nothing is checked or made). */
void store_file_path(const char *dir, char *buf, size_t len);

/*
 * The warm server's memory as a store (DOLSOT_STORE=memory), reached through
 * the socket in dir's directory.  Takes ownership of dir (a FileStore).
 * Returns NULL with a reason in err when no server answers.
 */
struct store *store_remote_open(struct store *dir, char *err);

/* MemoryStore: a table in this process, no TTL. */
struct store *store_mem_open(void);

/*
 * Session ids: 1..128 bytes of [A-Za-z0-9._-], not starting with '.'.
 * Returns true when id is valid; else false and a reason in err.
 */
bool store_id_valid(const char *id, char *err, size_t errlen);

static inline int store_load(struct store *s, const char *id, uint8_t **blob,
                             size_t *len, bool *found, char *err)
{
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->load(s, id, blob, len, found, err);
}

static inline int store_save(struct store *s, const char *id,
                             const uint8_t *blob, size_t len, bool sandboxed,
                             char *err)
{
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->save(s, id, blob, len, sandboxed, err);
}

/* See store_ops.origin. */
static inline int store_origin(struct store *s, const char *id, bool *sandboxed,
                               char *err)
{
	*sandboxed = true;
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->origin(s, id, sandboxed, err);
}

static inline int store_del(struct store *s, const char *id,
                            unsigned *removed, char *err)
{
	if (strcmp(id, "all") != 0 && !store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->del(s, id, removed, err);
}

static inline int store_list(struct store *s, struct session_info **out,
                             size_t *n, char *err)
{
	return s->ops->list(s, out, n, err);
}

static inline int store_lock(struct store *s, const char *id, long timeout_ms,
                             struct store_lock *lk, char *err)
{
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->lock(s, id, timeout_ms, lk, err);
}

static inline void store_unlock(struct store *s, struct store_lock *lk)
{
	s->ops->unlock(s, lk);
}

/* The directory fd (owned by the store) where the warm server keeps its
 * socket, or -1 for a store without one. */
static inline int store_dirfd(struct store *s)
{
	return s->ops->dirfd ? s->ops->dirfd(s) : -1;
}

/*
 * store_blob.c: sessions as fds, for a worker that reads and writes them
 * itself.  Every store has these; one without its own ops goes through a
 * memfd and its load/save.
 *
 * store_open_blob: like store_load, but *fd (caller closes) holds the
 * session; *fd is -1 when it is absent.  With copy, *fd is a memfd of its
 * own holding a copy, never a file of the store (a sandboxed worker could
 * reopen that one for writing through /proc/self/fd).
 */
int store_open_blob(struct store *s, const char *id, bool copy, int *fd, size_t *len,
                    bool *found, char *err);

/*
 * Begin a save of id: sv->fd is an empty file to write the session into.
 * With memfd (RLIMIT_FSIZE in the writer, or a sandboxed writer), it is a
 * memfd whatever the store.  max (0: none) bounds the session: the memfd
 * is then sealed against growing past max bytes, so its writer cannot take
 * more, and commit refuses a longer session whatever the fd.
 * Returns 0, or -1 with err.  Then exactly one of commit or abort follows.
 */
int store_save_begin(struct store *s, const char *id, bool memfd, uint64_t max,
                     struct store_save *sv, char *err);

/* The message for a session of len bytes over sv's bound, into err
 * ("cannot save session ..."); returns -1 with errno EFBIG. */
int store_save_too_big(const struct store_save *sv, uint64_t len, char *err);

/* Make sv->fd's len bytes the session (fstat must agree; len at most
 * sv->max); -1 with err, the old session kept, and no temp file left. */
int store_save_commit(struct store *s, struct store_save *sv, size_t len, char *err);

/* Drop the save; the old session stays. */
void store_save_abort(struct store *s, struct store_save *sv);

/* Drop the save because writing failed with errnum while doing op:
 * "cannot save session 'ID': OP: strerror" in err; returns -1. */
int store_save_fail(struct store *s, struct store_save *sv, const char *op,
                    int errnum, char *err);

static inline void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

#endif
