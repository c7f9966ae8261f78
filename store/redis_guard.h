/*
 * redis_guard.h - a Redis lock whose holder is killed is released once its
 * cell is gone, not when the lock expires (redis_guard.c, issue 35).
 *
 * A guard is a small process of its own (its own session, no descendant
 * of the caller) that holds one end of a socket pair whose other end the
 * caller keeps.  When that end closes without a word (the caller died:
 * SIGKILL included), the guard waits for every cell process it was given
 * to end, then sends the release it was handed (AUTH, SELECT and the
 * compare-and-DEL of the lock's token) on a connection of its own.  The
 * guard never renews the lock: a release that comes too late finds
 * another token and does nothing.
 */
#ifndef DOLSOT_REDIS_GUARD_H
#define DOLSOT_REDIS_GUARD_H

#include <stddef.h>
#include <sys/socket.h>

/* The caller's end of a running guard. */
struct redis_guard {
	int sock;               /* -1: no guard */
};

/*
 * Start a guard for one held lock: on the caller's death it connects to
 * addr (alen bytes) and writes release[0..len), replies counts the
 * replies to wait for, within wait_ms for the cells and the same again
 * for the server.  The guard's memory has the release in it (as the
 * caller's did).  Start it before any cell may have this lock: it forks.
 * 0, or -1 with err (g->sock stays -1).
 */
int redis_guard_start(struct redis_guard *g, const struct sockaddr *addr, socklen_t alen,
                      const char *release, size_t len, int replies, long wait_ms,
                      char *err, size_t errlen);

/* A cell of the lock's call: pidfd names its process, or -1 when it is
 * about to start and its process is not known yet (then a death leaves
 * the lock to expire, unless the process is named after).  pidfd stays
 * the caller's. */
void redis_guard_cell(struct redis_guard *g, int pidfd);

/* The caller releases the lock itself: the guard ends without a word. */
void redis_guard_stop(struct redis_guard *g);

#endif
