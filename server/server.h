/*
 * server.h - the warm path's per-store server.
 *
 * One server per store directory listens on DIR/.server.sock, keeps
 * zygotes (one per environment, toolbox set and set of modules a session
 * imports as it loads) and hands each call to the matching one.  It runs as the user, refuses any other
 * uid, and exits when idle, when its directory disappears, or when asked.
 */
#ifndef DOLSOT_SERVER_H
#define DOLSOT_SERVER_H

#include <stdint.h>

#include "wire.h"

/* Zygotes are kept while together they hold at most
 * SERVER_ZYGOTE_MEMORY_KB of private memory, and at most
 * SERVER_MAX_ZYGOTES of them, SERVER_ENV_ZYGOTES of one environment (its
 * toolboxes with different sessions' modules). */
#define SERVER_MAX_ZYGOTES 32
#define SERVER_ENV_ZYGOTES 6
#define SERVER_ZYGOTE_MEMORY_KB (1024L * 1024)
#define SERVER_ZYGOTE_IDLE 600      /* seconds a zygote may sit unused */

/*
 * Serve the store directory dirfd until idle_seconds pass without a call.
 * lock_fd holds the flock of .server.lock (-1: take it here, or leave).
 * prewarm, when not NULL, is a WIRE_CALL whose environment gets a zygote
 * right away.
 * Never returns.
 */
void server_main(int dirfd, int lock_fd, double idle_seconds,
                 const struct wire_msg *prewarm) __attribute__((noreturn));

/*
 * The server as a fresh exec of dolsot, handed over as warm_proto.h says
 * (argv[0] WARM_ARGV0, the store on WARM_DIR_FD, ...).  Never returns.
 */
int server_exec_main(int argc, char **argv) __attribute__((noreturn));

#endif
