/*
 * holder.h - keep a process's memory alive past its exit, so that the exit
 * is quick.
 *
 * A process that exits frees its whole address space before its parent
 * can reap it: for a worker forked from a zygote that imported pandas,
 * 2.5 ms of unmapping between the cell's answer and the call's verdict.
 * A holder is a process made with CLONE_VM | CLONE_PARENT: it shares the
 * caller's memory and is its parent's child, so while it lives the
 * caller's exit only drops a reference to that memory.  The parent kills
 * the holder a little after it has reaped the caller (the zygote waits
 * 50 ms, so that freeing the memory does not take a CPU from the call's
 * commit), without waiting for it; the holder frees the memory as it dies,
 * at the lowest priority (SCHED_IDLE).
 *
 * The holder sleeps with every signal blocked and never returns to user
 * code: only SIGKILL ends it (from the parent, or when the parent dies).
 * A process that shares its memory with another cannot unshare its user
 * namespace: end the holder (holder_end) before entering a sandbox.
 */
#ifndef DOLSOT_HOLDER_H
#define DOLSOT_HOLDER_H

#include <stddef.h>
#include <sys/types.h>

/* Start this process's holder: its pid; 0 when the process holds too
 * little memory for one to be worth it (32 MiB); -1 with errno set. */
pid_t holder_start(void);

/* End this process's holder, if it has one, and return once it no longer
 * shares this process's memory: 0, or -1 with a one-line reason in err. */
int holder_end(char *err, size_t errlen);

#endif
