/*
 * store.h - where sessions live between calls: the door repl.c uses.
 *
 * store_open() makes a store of a kind; the inline wrappers below check
 * the session id once and call the backend's ops (store_ops.h); store.c
 * adds sessions as fds for the worker, over any backend.
 */
#ifndef DOLSOT_STORE_H
#define DOLSOT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store_name.h"
#include "store_ops.h"
#include "store_spec.h"

/*
 * Open the store of kind in dir (NULL: the default directory, see
 * store_file.h), reaping sessions older than ttl_days (0: never).  A memory
 * store keeps its directory for the server's socket; opening one never
 * starts a server (the caller does: its operations fail until one runs).
 * A Redis or helper store (kind STORE_KIND_REDIS or STORE_KIND_CMD) is
 * where spec (DOLSOT_STORE's value, store_spec.h) says, keeps dir for the
 * server's socket too, and gives each command or helper run timeout
 * seconds.  Returns NULL with a reason in err (errlen bytes) on refusal.
 */
struct store *store_open(enum store_kind kind, const char *spec, const char *dir,
                         double ttl_days, double timeout, char *err, size_t errlen);

/* The directory a store opened with dir keeps its files in (sessions, or
 * the warm server's socket), as a path into buf; nothing is checked or
 * made.  --mount refuses host paths that contain it. */
void store_dir_path(const char *dir, char *buf, size_t len);

/* The directory fd (owned by the store) where the warm server keeps its
 * socket, or -1 for a store without one. */
static inline int store_home(const struct store *s)
{
	return s->home;
}

/* The operations below check the session id once (store_name.h's rule),
 * then call the backend's ops. */
int store_load(struct store *s, const char *id, uint8_t **blob,
               size_t *len, bool *found, char *err, size_t errlen);

/* The stored bytes as they are (trailer included), recorded with the
 * origin sandboxed and no save counter. */
int store_save(struct store *s, const char *id,
               const uint8_t *blob, size_t len, bool sandboxed,
               char *err, size_t errlen);

/* The store's own record of who last wrote id (store_ops.origin), without
 * its signature's say: see store_open_blob_rec for both. */
int store_origin(struct store *s, const char *id, bool *sandboxed,
                 char *err, size_t errlen);

/* Delete id ("all": every session no call holds); on a store that keeps
 * units, those no head names any more are removed after. */
int store_del(struct store *s, const char *id,
              unsigned *removed, char *err, size_t errlen);

/* See store_ops.sweep; 0 for a store without one.  Then, on a store that
 * keeps units, every unit no session's head names is removed. */
int store_sweep(struct store *s, char *err, size_t errlen);

/*
 * 1 and the absolute path of the directory a worker may read the store's
 * units from (as PATH/HH/REST, store_ops.h's obj_dir, or the store's unit
 * cache, unitcache.h, made now) into buf, when the store keeps units
 * (session format v4's, units.h: the request's units field), "" when it
 * keeps units but has no such directory (a worker then gets them packed:
 * store_open_blob_rec's STORE_UNITS_PACKED; a unit cache that cannot be
 * used is dropped for good, and store_take_notice says why); 0 when it
 * keeps whole sessions; -1 with err.
 */
int store_units_dir(struct store *s, char *buf, size_t len, char *err, size_t errlen);

int store_list(struct store *s, struct session_info **out,
               size_t *n, char *err, size_t errlen);

/* See store_ops.lock; an invalid id is STORE_LOCK_FAILED. */
enum store_lock_status store_lock(struct store *s, const char *id, long timeout_ms,
                                  struct store_lock *lk, char *err, size_t errlen);

void store_unlock(struct store *s, struct store_lock *lk);

/*
 * The lock lk is held for a call whose cell runs in the process pidfd
 * names (-1: a cell is about to start whose process is not known yet).
 * See store_ops.watch; nothing for a store whose locks end with their
 * holder.  pidfd stays the caller's.
 */
void store_lock_watch(struct store *s, struct store_lock *lk, int pidfd);

/* What the store found the caller should hear (one or more lines,
 * malloc'd: the caller frees it), once; NULL when nothing. */
char *store_take_notice(struct store *s);

/*
 * Signed sessions (sign.h): key the store with DOLSOT_SESSION_KEY's value
 * spec (NULL: the key file in its directory, made on first use).  Until
 * then the fd operations below and store_fork refuse.  0, or -1 with err.
 */
int store_sign_with(struct store *s, const char *spec, char *err, size_t errlen);

/*
 * Sessions as fds, for a worker that reads and writes them
 * itself.  Every store has these; one without its own ops goes through a
 * memfd and its load/save.  The store's load and save (above) trade in the
 * stored bytes, trailer included; these trade in the worker's blob.
 *
 * store_open_blob: *fd (caller closes) holds id's blob, checked against
 * its signature, and *len its size; *fd is -1 when the session is absent.
 * *fd is always a memfd of its own holding the verified copy, never a
 * file of the store (which someone could change after the check, and a
 * sandboxed worker could reopen for writing through /proc/self/fd).  A
 * refused signature is -1 with err naming the reset.
 */
int store_open_blob(struct store *s, const char *id, int *fd, size_t *len, bool *found,
                    char *err, size_t errlen);

/* Who last wrote a session, as its signature and the store's record of it
 * (store_ops.origin) say together. */
enum store_origin {
	STORE_ORIGIN_HOST,      /* an unsandboxed call, by both */
	STORE_ORIGIN_SANDBOXED, /* a sandboxed call, by either (or the record of a
	                         * session signed before the origin was) */
	STORE_ORIGIN_DISPUTED,  /* a sandboxed call by its signature, an unsandboxed
	                         * one by the record: someone without the key
	                         * changed the record */
};

/* What a load does with the units of a version 4 session, on a store
 * that keeps units (store_units_dir). */
enum store_units {
	STORE_UNITS_UNREAD,     /* nothing: no worker reads them */
	STORE_UNITS_PACKED,     /* a pack entry for each of the head's refs is
	                         * appended to the blob, read from the store's
	                         * units (one missing is left out: the worker
	                         * says so), for a worker that cannot read the
	                         * units' directory (a sandboxed one) */
	STORE_UNITS_IN_DIR,     /* the worker reads them from store_units_dir's
	                         * directory; on a store with a unit cache, the
	                         * cache gets every unit it lacks first, and one
	                         * it cannot take is packed as above
	                         * (unitstore_fill_cache) */
};

/*
 * store_open_blob, and the session's call-id record (callrec.h), which
 * the blob in *fd no longer holds, into *rec (malloc'd; NULL and 0 when
 * it has none), and who wrote it into *origin (a session that does not
 * exist: its record's say).  A session whose save counter is below the
 * one the store recorded at its last commit (an earlier save put back) is
 * refused like a bad signature.  units: what is done with its units
 * (*len is then the blob's whole, pack included).  A unit cache filled
 * for the call keeps its units until the call's lock goes (store_unlock).
 */
int store_open_blob_rec(struct store *s, const char *id, int *fd, size_t *len,
                        bool *found, uint8_t **rec, size_t *rec_len,
                        enum store_origin *origin, enum store_units units, char *err,
                        size_t errlen);

/*
 * Begin a save of id: sv->fd is an empty file to write the session into.
 * With memfd (RLIMIT_FSIZE in the writer, or a sandboxed writer), it is a
 * memfd whatever the store.  max (0: none) bounds the session: the memfd
 * is then sealed against growing past max bytes, so its writer cannot take
 * more, and commit refuses a longer session whatever the fd.
 * Returns 0, or -1 with err.  Then exactly one of commit or abort follows.
 */
int store_save_begin(struct store *s, const char *id, bool memfd, uint64_t max,
                     struct store_save *sv, char *err, size_t errlen);

/* The message for a session of len bytes over sv's bound, into err
 * ("cannot save session ..."); returns -1 with errno EFBIG. */
int store_save_too_big(const struct store_save *sv, uint64_t len, char *err,
                       size_t errlen);

/* Make sv->fd's len bytes the session, signed for sv->id (fstat must
 * agree; len at most sv->max); -1 with err, the old session kept, and no
 * temp file left.  A version 4 blob (units.h): its size is its head's and
 * its refs'; a store that keeps units checks each pack entry against its
 * hash, keeps those it lacks (durably, before the head), refuses a head
 * naming a unit it does not have ("unit HASH missing"), and stores the
 * head alone, then collects the units only the previous head named; a
 * store of whole blobs refuses one whose pack lacks a ref. */
int store_save_commit(struct store *s, struct store_save *sv, size_t len, char *err,
                      size_t errlen);

/* store_save_commit with the call-id record rec (rec_len bytes, from
 * callrec_encode) stored after the blob, under the same signature; the
 * bound sv->max is the blob's. */
int store_save_commit_rec(struct store *s, struct store_save *sv, size_t len,
                          const uint8_t *rec, size_t rec_len, char *err, size_t errlen);

struct histrec_cell;

/* store_save_commit_rec, with what made the new state (history.h: its
 * record of the state; NULL: a cell, nothing more known) on a store that
 * keeps a history (store_keep_history). */
int store_save_commit_cell(struct store *s, struct store_save *sv, size_t len,
                           const uint8_t *rec, size_t rec_len,
                           const struct histrec_cell *cell, char *err, size_t errlen);

/* Reap by the TTL only the sessions of namespace ns (store_name.h; NULL:
 * the default one); ns is the caller's and must outlive the store. */
static inline void store_set_namespace(struct store *s, const char *ns)
{
	s->ns = ns;
}

/* Keep depth earlier states of each session saved from now on (0: none,
 * the default), on a store that keeps units (others keep none). */
static inline void store_keep_history(struct store *s, unsigned depth)
{
	s->history = depth;
}

/* Drop the save; the old session stays. */
void store_save_abort(struct store *s, struct store_save *sv);

/* Drop the save because writing failed with errnum while doing op:
 * "cannot save session 'ID': OP: strerror" in err; returns -1. */
int store_save_fail(struct store *s, struct store_save *sv, const char *op,
                    int errnum, char *err, size_t errlen);

/*
 * --fork: make dst a copy of src's stored session (src's signature checked,
 * the copy signed for dst, src's origin kept), through the store's load
 * and save, nothing unpickled.  The caller holds both locks.  An existing
 * dst is refused unless replace.  Returns 0 with *len the blob's bytes,
 * or -1 with err.
 */
int store_fork(struct store *s, const char *src, const char *dst, bool replace,
               size_t *len, char *err, size_t errlen);

#endif
