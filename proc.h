/*
 * proc.h - run one worker process under a deadline and leave nothing behind.
 *
 * The worker is forked into its own process group with fd 0 on /dev/null,
 * fds 1 and 2 on pipes read by the parent, and two memfds: the request
 * (already written) and the result (empty, written by the worker).  When the
 * worker ends, or the deadline passes, the parent SIGKILLs the group and,
 * being a child subreaper, every descendant that escaped it, then drains the
 * pipes.  No process of the call outlives proc_run().
 */
#ifndef DOLSOT_PROC_H
#define DOLSOT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include "output.h"

/* The files a worker starts with; the parent's copies are CLOEXEC. */
struct worker_fds {
	int request;             /* the request frame, written */
	int result;              /* the answer frame, empty */
	int load;                /* the session to load; -1: a new session */
	int save;                /* an empty file for the new session */
};

/* Runs in the child; must not return (it _exits). */
typedef void (*proc_child_fn)(const struct worker_fds *fds, void *arg);

struct proc_outcome {
	int status;              /* wait status of the worker */
	bool timed_out;
	int signal;              /* non-zero: the caller got this signal and must re-raise it */
	uint8_t *result;         /* mmap'd result frame, or NULL when empty */
	size_t result_len;
	double elapsed;          /* seconds from fork to reap */
};

/*
 * Fork child(fds, arg) and supervise it until it exits or deadline
 * (CLOCK_MONOTONIC) passes.  Its stdout and stderr are fed into out and
 * err.  request/request_len are written to the request memfd first; the
 * session's load and save fds come from session (they stay open here).
 * Returns 0 with *o filled (release with proc_outcome_release), or -1 with a
 * reason in err (a failed syscall; nothing is left running).
 */
int proc_run(const uint8_t *request, size_t request_len,
             const struct worker_fds *session, const struct timespec *deadline, proc_child_fn child, void *arg,
             struct capture *out, struct capture *errc, struct proc_outcome *o,
             char *err, size_t errlen);

void proc_outcome_release(struct proc_outcome *o);

/*
 * Kill every child of this process (and, transitively, anything that gets
 * reparented to us meanwhile) and reap them all.  Used after the worker ends.
 */
void proc_kill_descendants(void);

/* Leave pid (the warm server this call started) out of
 * proc_kill_descendants: it is our child but belongs to no call. */
void proc_spare(pid_t pid);

/* pids of the children of process pid (0: this one), every thread's, at
 * most max. */
size_t proc_list_children(pid_t pid, pid_t *pids, size_t max);

/* Every signal's handler back to the default, and mask as the mask. */
void proc_reset_signals(const sigset_t *mask);

/* Close every fd >= 3 except keep[0..nkeep). */
void proc_close_fds_except(const int *keep, int nkeep);

/*
 * In a freshly forked worker: default signal handlers and the given mask,
 * die with the parent, own process group, fd 0 on /dev/null, fds 1 and 2 on
 * out and err, every other fd closed but keep.  Returns 0 or -1.
 */
int proc_child_prepare(pid_t parent, int out, int err, const int *keep, int nkeep,
                       const sigset_t *mask);

/* proc_child_prepare() in two steps, for a worker forked ahead of its
 * call: everything but the standard fds, then fd 0 on /dev/null and fds 1
 * and 2 on out and err (the caller closes out and err). */
int proc_child_detach(pid_t parent, const int *keep, int nkeep, const sigset_t *mask);
int proc_child_stdio(int out, int err);

/*
 * Read what is available on the non-blocking *fd into c (a bounded number of
 * reads).  Returns 0 at EOF or error (and closes *fd, setting it to -1), 1
 * when more may come.
 */
int proc_pump(int *fd, struct capture *c);

#endif
