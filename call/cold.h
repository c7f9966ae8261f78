/*
 * cold.h - the cold call path: fork the worker from this process.
 *
 * The worker is forked into its own process group with fd 0 on /dev/null,
 * fds 1 and 2 on pipes read by the parent, and two memfds: the request
 * (already written) and the result (empty, written by the worker).  When
 * the worker ends, or the deadline passes, the parent SIGKILLs the group
 * and, being a child subreaper, every descendant that escaped it, then
 * drains the pipes.  No process of the call outlives cold_run().
 */
#ifndef DOLSOT_COLD_H
#define DOLSOT_COLD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "call_path.h"
#include "output.h"

/* Runs in the child; must not return (it _exits). */
typedef void (*cold_child_fn)(const struct worker_fds *fds, void *arg);

/*
 * Fork child(fds, arg) and supervise it until it exits or deadline
 * (CLOCK_MONOTONIC) passes.  Its stdout and stderr are fed into out and
 * err.  request/request_len are written to the request memfd first; the
 * session's load and save fds come from session (they stay open here).
 * watch (may be NULL) hears -1 before the fork and the worker's pidfd
 * after it.  Returns CALL_DONE with *o filled (release with call_outcome_release), or
 * CALL_FAILED with a reason in err (a failed syscall; nothing is left
 * running).
 */
enum call_status cold_run(const uint8_t *request, size_t request_len,
                          const struct worker_fds *session,
                          const struct timespec *deadline,
                          const struct cell_watch *watch, struct host_tools *tools,
                          cold_child_fn child,
                          void *arg, struct capture *out, struct capture *errc,
                          struct call_outcome *o, char *err, size_t errlen);

/* Unmap o's result. */
void call_outcome_release(struct call_outcome *o);

#endif
