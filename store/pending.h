/*
 * pending.h - a FileStore's units dropped by commits, collected at once in
 * a small store and in batches in a large one.
 *
 * Collecting reads every session's head (a unit is removed only when no
 * head names it), so in a store of thousands of sessions a collection
 * after every commit would cost each call thousands of reads.  Once the
 * last collection read PENDING_HEADS_MIN heads or more, a commit's
 * dropped units are written to DIR/objects/.pending instead, and the next
 * collection (due PENDING_PAUSE_MAX seconds after the last at the most,
 * sooner when that one was quick, or once too many units or bytes wait)
 * takes them too.  DIR/objects/.collected says when the last collection
 * ran (its mtime), how many heads it read and how long it took.
 *
 * A unit that waits is garbage that stays a while, never a unit lost: the
 * collection still removes only what no head names.  Every failure here
 * means collecting now, or garbage left for the next collection of every
 * unit (--reset all, TTL reaping).
 */
#ifndef DOLSOT_PENDING_H
#define DOLSOT_PENDING_H

#include <stddef.h>
#include <stdint.h>

#define PENDING_HEADS_MIN 256
#define PENDING_PAUSE_MAX 60.0              /* seconds */
#define PENDING_MAX_UNITS 1024
#define PENDING_MAX_BYTES ((uint64_t)256 << 20)

/* With the units lock held shared (as a commit holds it): 1 when cands
 * (n hashes of 32 bytes) were put off, 0 when they are to be collected
 * now. */
int pending_defer(int dirfd, const uint8_t *cands, size_t n);

/* With the units lock held exclusive: the units put off, *hashes
 * malloc'd (*n of them, NULL when none); -1 with err when they cannot be
 * read. */
int pending_take(int dirfd, uint8_t **hashes, size_t *n, char *err, size_t errlen);

/* With the units lock held exclusive, after a collection that took every
 * unit put off, read heads heads and lasted seconds: forget those units,
 * note the collection. */
void pending_done(int dirfd, size_t heads, double seconds);

#endif
