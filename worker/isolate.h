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

/* What a live session's process (live.h) adds on its first call: fds it
 * keeps in the sandbox (the zygote's socket), and the socket the
 * sandbox's init reports on (sandbox_init.h), so that the sandbox outlives
 * the process: a rollback kills it, and its snapshot goes on inside. */
struct isolate_hold {
	const int *keep;
	size_t n_keep;
	int init_fd;
};

/*
 * Isolate the worker.  fds (request, result and save; load is closed by
 * now) are the only descriptors (besides 0-2) that stay usable in a
 * sandbox.  Under --max-file-size the result and save files are sized
 * first, as RLIMIT_FSIZE would then stop them from growing.  Returns 0 in the process
 * that goes on to run the cell (with a sandbox, a new child; the original
 * waits and never returns), or -1 with a one-line reason, "dolsot: ...", in
 * err: then the cell must not run.  hold: NULL but for a live process.
 */
int isolate_worker(const struct request *r, const struct worker_fds *fds,
                   const struct isolate_hold *hold, char *err, size_t errlen);

#endif
