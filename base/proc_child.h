/*
 * proc_child.h - what a freshly forked child does to itself before it
 * runs anything: signals back to their defaults, die with the parent, its
 * own process group, the standard fds, every other fd closed.
 */
#ifndef DOLSOT_PROC_CHILD_H
#define DOLSOT_PROC_CHILD_H

#include <signal.h>
#include <sys/types.h>

/* Every signal's handler back to the default, and mask as the mask. */
void proc_child_reset_signals(const sigset_t *mask);

/* Close every fd >= 3 except keep[0..nkeep). */
void proc_child_close_fds(const int *keep, int nkeep);

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

/* fds 0, 1 and 2 all on /dev/null, for a process that must hold none of
 * a call's pipes once its part in the call is over.  Returns 0 or -1. */
int proc_child_null_stdio(void);

#endif
