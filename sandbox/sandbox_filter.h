/*
 * sandbox_filter.h - the sandbox's seccomp filter (libseccomp).
 *
 * Everything is allowed except what a Python cell has no business doing:
 * tracing other processes, mounting and namespaces, the kernel keyring,
 * BPF, perf events, userfaultfd, io_uring, kexec, kernel modules, reboot,
 * swap, clocks, accounting and a few other administrative calls.  Those fail
 * with EPERM, so Python raises a plain OSError.  clone3 fails with ENOSYS,
 * because its flags cannot be inspected: the C library then falls back to
 * clone, whose namespace flags are refused with EPERM.
 */
#ifndef DOLSOT_SANDBOX_FILTER_H
#define DOLSOT_SANDBOX_FILTER_H

#include <stddef.h>

/*
 * Set no_new_privs and load the filter into the calling thread (inherited by
 * every child).  Returns 0, or -1 with a reason in err.
 */
int sandbox_filter_load(char *err, size_t errlen);

#endif
