/*
 * server.h - the warm path's per-store server.
 *
 * One server per store directory listens on DIR/.server.sock, keeps up to
 * SERVER_MAX_ZYGOTES zygotes (one per environment and toolbox set) and hands
 * each call to the matching one.  It runs as the user, refuses any other
 * uid, and exits when idle, when its directory disappears, or when asked.
 */
#ifndef DOLSOT_SERVER_H
#define DOLSOT_SERVER_H

#include <stdint.h>

#include "wire.h"

#define SERVER_SOCKET ".server.sock"
#define SERVER_LOCK ".server.lock"
#define SERVER_MAX_ZYGOTES 8
#define SERVER_ZYGOTE_IDLE 600      /* seconds a zygote may sit unused */

/*
 * Serve the store directory dirfd until idle_seconds pass without a call.
 * lock_fd holds the flock of .server.lock (-1: take it here, or leave).
 * prewarm, when not NULL, is a WIRE_CALL whose environment gets a zygote
 * right away.  exe_id identifies this binary (see server_exe_id).
 * Never returns.
 */
void server_main(int dirfd, int lock_fd, double idle_seconds,
                 const struct wire_msg *prewarm) __attribute__((noreturn));

/*
 * How warm_spawn_server hands over to a fresh exec of dolsot: argv[0] is
 * SERVER_ARGV0 and argv[1] the idle seconds; the store directory is open
 * on SERVER_DIR_FD and a memfd on SERVER_KEY_FD holds the environment to
 * warm first.  server_exec_main() takes it from there (never returns).
 */
#define SERVER_ARGV0 "dolsot-server"
#define SERVER_DIR_FD 3
#define SERVER_KEY_FD 4
#define SERVER_LOCK_FD 5   /* .server.lock, flock'ed by the spawner for us */
int server_exec_main(int argc, char **argv) __attribute__((noreturn));

/* An identity of the running binary: a server only serves its own build. */
uint64_t server_exe_id(void);

/* "/proc/self/fd/N/.server.sock" for dirfd, into buf (at least 108 bytes). */
void server_socket_path(int dirfd, char *buf, size_t len);

#endif
