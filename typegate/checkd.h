/*
 * checkd.h - the warm type checker: a small daemon per environment,
 * beside the warm server, that keeps one checker (checkd_drv.h) running so
 * a gated cell does not start pyright or mypy from nothing.
 *
 * Three parties.  The client (call.c, on the warm path with the gate on)
 * names the environment's daemon and makes sure one runs: checkd_ensure()
 * starts it when none does, never waiting for it, after evicting the
 * least recently used beyond CHECKD_MAX.  The worker (the gate, through
 * _dolsot) asks it to check a cell with checkd_ask(); when no daemon can
 * answer, the gate runs the checker cold, as it always did.  The daemon,
 * checkd_main(), is a fresh exec of dolsot: it listens on
 * DIR/NAME.sock in the store directory, checks one cell at a time within
 * the deadline it is given, replaces a checker that crashed, spoke
 * nonsense, did not answer in time or grew past its memory bound, and
 * exits when idle for CHECKD_IDLE seconds, when evicted, or when the
 * store directory's warm server is gone.
 */
#ifndef DOLSOT_CHECKD_H
#define DOLSOT_CHECKD_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "checkd_drv.h"
#include "typegate.h"

#define CHECKD_ARGV0 "dolsot-checkd"
#define CHECKD_MAX 4            /* daemons per store directory */
#define CHECKD_IDLE 600         /* seconds a daemon may sit unused */
#define CHECKD_MAX_MB 2048      /* a checker bigger than this is replaced */
#define CHECKD_NAME_MAX 40
/* How the client hands over to the daemon: the store directory on
 * CHECKD_DIR_FD, the daemon's lock, flock'ed, on CHECKD_LOCK_FD. */
#define CHECKD_DIR_FD 3
#define CHECKD_LOCK_FD 4

/* How the daemon answered (WIRE_CHECKED's a). */
enum checkd_status {
	CHECKD_ANSWERED,        /* b and the output are the checker's */
	CHECKD_LATE,            /* no answer within the deadline */
	CHECKD_UNAVAILABLE,     /* it could not check: run the checker cold */
};

/* The daemon's name for an environment, from its parts (the checker, the
 * working directory, PYTHONPATH, VIRTUAL_ENV, the toolboxes):
 * ".checkd-" and 16 hex digits, into buf (CHECKD_NAME_MAX bytes). */
void checkd_name(const char *const *parts, size_t n, char *buf, size_t len);

/*
 * Make sure the daemon name runs for the store directory dirfd, if that
 * directory's warm server does: start one when none runs or is starting.
 * Returns 0 (also when it did not start one), or -1 with errno set.
 */
int checkd_ensure(int dirfd, const char *name);

/*
 * In the worker: ask the daemon at path (DIR/NAME) to check text[0..len)
 * as spec says, by deadline.  Returns 1 with *r filled as typegate_run()
 * would have (TYPEGATE_RUN_EXITED with the output, or TYPEGATE_RUN_TIMEOUT;
 * release it with typegate_run_release), or 0 when no daemon could check
 * it (run the checker cold).
 */
int checkd_ask(const char *path, const struct checkd_drv_spec *spec, const char *text,
               size_t len, const struct timespec *deadline, struct typegate_run *r);

/* main() for CHECKD_ARGV0: argv[1] is the name. */
void checkd_main(int argc, char **argv) __attribute__((noreturn));

#endif
