/*
 * objects.h - a FileStore's units (session format v4, units.h): each an
 * immutable file DIR/objects/HH/REST named by the 64 lowercase hex
 * digits of its SHA-256 (split 2 + 62), shared by every session of the
 * store.  Files 0600, directories 0700 owned by us (a directory that is
 * not is refused), never a symlink followed (every step openat'ed with
 * O_NOFOLLOW from the store's directory fd), every fd O_CLOEXEC.  A unit
 * is written to a temp file ".tmp-XXXXXXXXXXXX" beside its name, synced,
 * renamed into place without replacing one there, and its directory
 * synced: durable before objects_put returns, never rewritten.
 *
 * DIR/objects/.gc carries the store-wide lock that keeps collecting off
 * commits (store.c's garbage collection, store_ops.h's obj_lock).
 *
 * Every function takes the store's directory fd and answers 0 or -1 with
 * one line in err (errlen bytes), errno kept.
 */
#ifndef DOLSOT_OBJECTS_H
#define DOLSOT_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define OBJECTS_DIR "objects"
#define OBJECTS_LOCK ".gc"

/* How objects_put keeps a unit. */
enum objects_keep {
	OBJECTS_DURABLE,        /* a store's: as above, stamped when at least
	                         * STAMP_MIN bytes (stamp.h) */
	OBJECTS_CACHED,         /* a cache's (unitcache.h): synced, which its stamp
	                         * needs, but not its directory (a crash loses it
	                         * at worst); stamped at any size, as a cache's
	                         * user checks units it does not read */
};

/* A unit as objects_scan lists it. */
struct objects_unit {
	uint8_t hash[32];
	uint64_t size;
	struct timespec used;   /* last used: its stamp's modification time
	                         * (objects_check sets it), else its own */
};

/* The directory name below atfd when it is ours: a real directory (never
 * a symlink), owned by the effective uid, no group or other bits; made
 * 0700 when create and absent (*made then).  Its fd (O_CLOEXEC), or -1
 * with errno (EPERM: not ours, ENOENT: absent, ELOOP or ENOTDIR: a
 * symlink or no directory). */
int objects_own_dir(int atfd, const char *name, bool create, bool *made);

/* DIR/objects as an absolute path into buf (not made: the first put
 * makes it; one there must be ours). */
int objects_dir(int dirfd, char *buf, size_t len, char *err, size_t errlen);

/* *has: whether the unit hash is stored (a regular file). */
int objects_has(int dirfd, const uint8_t *hash, bool *has, char *err, size_t errlen);

/* The size of unit hash, or 0 when it is not stored (or cannot be looked at). */
uint64_t objects_size(int dirfd, const uint8_t *hash);

/* Store p[0..n) as hash (the caller checked they hash to it), as keep
 * says; a unit already there is kept as it is. */
int objects_put(int dirfd, const uint8_t *hash, const uint8_t *p, size_t n,
                enum objects_keep keep, char *err, size_t errlen);

/* *sound: the unit is there, a file of size bytes that its stamp says
 * was checked (its stamp's times are then set to now), or whose bytes hash
 * to it (then synced and stamped).  A file there that is not sound is
 * removed, its stamp first. */
int objects_check(int dirfd, const uint8_t *hash, uint64_t size, bool *sound, char *err,
                  size_t errlen);

/* Make the file name in dirfd (a session's, whose bytes hash to hash)
 * the unit hash too, by a hard link, durably; a unit already there is
 * kept as it is. */
int objects_adopt(int dirfd, const char *name, const uint8_t *hash, char *err,
                  size_t errlen);

/* The unit's bytes into *p (malloc'd), *n; *found false (and *p NULL)
 * when it is not stored. */
int objects_read(int dirfd, const uint8_t *hash, uint8_t **p, size_t *n, bool *found,
                 char *err, size_t errlen);

/* Remove the unit (0 when it was not there). */
int objects_del(int dirfd, const uint8_t *hash, char *err, size_t errlen);

/* Every stored unit's hash, *hashes malloc'd *n * 32 bytes (NULL when
 * none); temp files of puts older than an hour (a killed put's) go. */
int objects_list(int dirfd, uint8_t **hashes, size_t *n, char *err, size_t errlen);

/* objects_list with each unit's size and last use, *units malloc'd. */
int objects_scan(int dirfd, struct objects_unit **units, size_t *n, char *err,
                 size_t errlen);

/* The store-wide lock: *lockfd is -1 until the first call opens it (the
 * caller closes it); how is LOCK_SH, LOCK_EX or LOCK_UN (flock's), and
 * waits as long as it takes, or with LOCK_NB added returns 1 at once
 * (nothing taken) when another holds it. */
int objects_lock(int dirfd, int *lockfd, int how, char *err, size_t errlen);

#endif
