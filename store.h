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

struct store_ops {
	/* *blob is malloc'd (caller frees); *found=false and *blob=NULL when absent. */
	int (*load)(struct store *s, const char *id, uint8_t **blob, size_t *len,
	            bool *found, char *err);
	/* Atomic and durable: afterwards the session is the new bytes, or the old ones on failure. */
	int (*save)(struct store *s, const char *id, const uint8_t *blob, size_t len,
	            char *err);
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
                             const uint8_t *blob, size_t len, char *err)
{
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	return s->ops->save(s, id, blob, len, err);
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

static inline void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

#endif
