/*
 * guard.h - what a cell starts dies with the call, however the call's
 * supervisor (the dolsot command on the cold path, the zygote on the warm
 * one) dies, SIGKILL included.
 *
 * The worker becomes a child subreaper, so whatever the cell orphans
 * (setsid and a double fork included) stays below it, and asks the kernel
 * for GUARD_SIGNAL when its parent dies; the handler kills and reaps
 * everything below the worker (proc_kill_descendants) and ends it.  A
 * sandboxed cell needs none of this: its PID namespace ends with its
 * supervisor.
 */
#ifndef DOLSOT_GUARD_H
#define DOLSOT_GUARD_H

#include <signal.h>
#include <stddef.h>

/* A real-time signal no library of note uses (glibc keeps the first two). */
#define GUARD_SIGNAL (SIGRTMIN + 7)

/*
 * Arm the calling process: child subreaper, GUARD_SIGNAL handled and
 * unblocked, and sent by the kernel when the parent dies.  If the parent
 * is already gone, the handler runs at once.  Returns 0, or -1 with a
 * one-line reason in err.
 */
int guard_arm(char *err, size_t errlen);

#endif
