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

#endif
