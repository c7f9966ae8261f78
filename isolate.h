/*
 * isolate.h - the worker's one step into isolation: apply what a request
 * asks for (pids cgroup, sandbox, environment, resource limits) to the
 * calling process, before Python runs the cell.
 *
 * It is independent of how the worker was started, so the cold path (a fork
 * of the dolsot command) and a warm one (a fork of a server with Python
 * already up) call the same function, right after decoding the request.
 */
#ifndef DOLSOT_ISOLATE_H
#define DOLSOT_ISOLATE_H

#include <stddef.h>

#include "frame.h"
#include "call_path.h"

/*
 * Isolate the worker.  fds (request, result and save; load is closed by
 * now) are the only descriptors (besides 0-2) that stay usable in a
 * sandbox.  Under --max-file-size the result and save files are sized
 * first, as RLIMIT_FSIZE would then stop them from growing.  Returns 0 in the process
 * that goes on to run the cell (with a sandbox, a new child; the original
 * waits and never returns), or -1 with a one-line reason, "dolsot: ...", in
 * err: then the cell must not run.
 */
int isolate_worker(const struct request *r, const struct worker_fds *fds,
                   char *err, size_t errlen);

#endif
