/*
 * unitcache.h - this machine's copy of the units (session format v4,
 * units.h) of the stores that keep them where no worker can read them (a
 * Redis server, a cmd: helper), so that a call fetches only the units it
 * has no copy of, and its worker reads (and maps) them lazily from a
 * directory, as it does a FileStore's (issue 36: a call costs what it
 * changes).
 *
 * DIR/unit-cache (DIR: the store's home, store_dir_path) is private to us
 * (objects.h's rules: 0700, ours, never a symlink followed) and holds
 *   objects/HH/REST  the units, laid out as a FileStore's (objects.h), each
 *                    with its stamp whatever its size (stamp.h): a unit is
 *                    checked by its stamp before a call, or by its hash
 *                    where the stamp does not hold, and fetched again when
 *                    neither does; written to a temp file, synced before
 *                    its stamp, and renamed (not durable: a cache)
 *   objects/.gc      the cache's lock: shared while a call checks and
 *                    fills the cache or a save adds to it, exclusive while
 *                    units are evicted
 *   calls/NAME       the hashes a running call needs, flock'ed by it for
 *                    the call: eviction never removes one of those
 *   trim             an eviction is due that could not take the lock
 * A unit's last use is its stamp's modification time (objects_check sets
 * it): eviction removes the least recently used first.
 *
 * One cache serves every store of the user's on this machine, whatever
 * server or helper it is: a unit is named by its SHA-256 and checked
 * against it (or a stamp written after such a check) before any use, so
 * two stores' units with one name are the same bytes.
 */
#ifndef DOLSOT_UNITCACHE_H
#define DOLSOT_UNITCACHE_H

#include <stddef.h>
#include <stdint.h>

#define UNITCACHE_DIR "unit-cache"

struct unitcache;

/* A cache in homefd's directory (borrowed: the store's home, which must
 * outlive it), cut to bound bytes of units after a call that added to it
 * (beyond those running calls need).  Nothing is made or opened until a
 * call needs it.  NULL out of memory. */
struct unitcache *unitcache_new(int homefd, uint64_t bound);

/* Close it (a call in flight ends first, as unitcache_end). */
void unitcache_free(struct unitcache *c);

/* The absolute path a worker reads the units from, as PATH/HH/REST (the
 * cache's objects directory), into buf; the cache's directory is made when
 * absent.  0, or -1 with err (one that is not private to us is refused). */
int unitcache_dir(struct unitcache *c, char *buf, size_t len, char *err, size_t errlen);

/*
 * A call needs the units hashes[0..n) (32 bytes each) of sizes[0..n): they
 * are kept from eviction until unitcache_end.  Those the cache has and that
 * are sound (objects_check) are marked used; the positions of the others
 * go into *missing (malloc'd, *nmissing of them): the caller fetches
 * them and puts each with unitcache_put, then calls unitcache_filled.
 * 0, or -1 with err (nothing held then, *missing NULL).
 */
int unitcache_want(struct unitcache *c, const uint8_t *hashes, const uint64_t *sizes,
                   size_t n, size_t **missing, size_t *nmissing, char *err,
                   size_t errlen);

/* Keep unit hash, n bytes at p that the caller checked against it, as one
 * this call needs.  0, or -1 with err when it could not be written (it is
 * not in the cache then). */
int unitcache_put(struct unitcache *c, const uint8_t *hash, const uint8_t *p, size_t n,
                  char *err, size_t errlen);

/* The filling unitcache_want began is over (its lock is released). */
void unitcache_filled(struct unitcache *c);

/*
 * The call is over: the units it needed may go.  When it added units to
 * the cache, or an earlier call could not cut it, the cache is cut to its
 * bound now, least recently used first, never a unit a running call
 * needs (or one this call needed or put: the session's next call needs
 * them).  0, or -1 with err when that failed (nothing else is lost).
 */
int unitcache_end(struct unitcache *c, char *err, size_t errlen);

#endif
