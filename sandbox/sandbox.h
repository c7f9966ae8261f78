/*
 * sandbox.h - run the rest of a process inside kernel isolation.
 *
 * sandbox_enter() turns the calling process into the supervisor of a new
 * sandbox and returns in a child of it that lives in new user, mount, PID,
 * network, IPC, UTS and cgroup namespaces, on a fresh read-only root, with
 * all capabilities dropped, no_new_privs set and a seccomp filter loaded;
 * for a root caller it is not root on the host (see sandbox_ids.h).  It
 * knows nothing of Python or of how the caller was started: it works the
 * same in a worker forked by the dolsot command and in one forked from a
 * long-lived server whose Python is already initialized, as long as the
 * caller is single-threaded (unshare(CLONE_NEWUSER) requires it; a freshly
 * forked child always is).
 */
#ifndef DOLSOT_SANDBOX_H
#define DOLSOT_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox_cfg.h"

#define SANDBOX_ERR_MAX 1024

/*
 * Enter the sandbox.  Returns 0 in the sandboxed process: PID 1 of the new
 * PID namespace and a child of the caller, which stays outside, waits for
 * it and ends with its exit status or signal, and never returns.  Killing
 * either process (or their process group) kills everything in the sandbox.
 *
 * With cfg->init_fd, PID 1 stays the sandbox's init (sandbox_init.h) and
 * 0 is returned in its child instead, so that this process may die and
 * the sandbox stay.
 *
 * Returns -1 with a one-line reason in err when the sandbox cannot be made;
 * then nothing must run: the caller fails the call (it may be the original
 * process or the half-built sandboxed one).
 *
 * The sandboxed process is a fork: a caller with an initialized Python should
 * run PyOS_AfterFork_Child() in it before running Python code.
 */
int sandbox_enter(const struct sandbox_cfg *cfg, char *err, size_t errlen);

#endif
