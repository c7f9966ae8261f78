/*
 * zygote.h - a process with Python started and the toolboxes imported,
 * which forks one fresh worker per call (the warm path).
 *
 * The server forks a zygote per distinct environment: working directory,
 * PYTHONPATH, VIRTUAL_ENV and toolbox modules.  The zygote never runs a
 * cell itself, so every call starts from a freshly imported state, exactly
 * as on the cold path.
 */
#ifndef DOLSOT_ZYGOTE_H
#define DOLSOT_ZYGOTE_H

#include "warm_proto.h"

/*
 * Become a zygote for env, talking to the server over ctl: report
 * WIRE_READY (or WIRE_FAILED and exit), then run each WIRE_RUN in a forked
 * worker, supervising it against its deadline and its client's connection.
 * Exits once ctl is closed and no call is in flight.
 */
void zygote_main(int ctl, const struct warm_key *env) __attribute__((noreturn));

/*
 * A zygote is a fresh exec of dolsot, never a fork of the server: the
 * server's memory holds what earlier calls sent it (their environments,
 * DOLSOT_STORE=memory sessions), and every worker is a fork of its zygote,
 * a sandboxed one too.  zygote_exec, in a child of the server whose other
 * fds are closed, execs /proc/self/exe as ZYGOTE_ARGV0 with only dolsot's
 * own DOLSOT_* variables in its environment, ctl on ZYGOTE_CTL_FD and key (a WIRE_CALL key) in a memfd
 * on ZYGOTE_KEY_FD; it reports WIRE_FAILED on ctl if that fails.
 * zygote_exec_main, called by main() for ZYGOTE_ARGV0, becomes the zygote.
 */
#define ZYGOTE_ARGV0 "dolsot-zygote"
#define ZYGOTE_CTL_FD 3
#define ZYGOTE_KEY_FD 4
void zygote_exec(int ctl, const uint8_t *key, size_t len) __attribute__((noreturn));
void zygote_exec_main(void) __attribute__((noreturn));

#endif
