/*
 * proc.h - a child under a deadline, as git's run-command: start it in its
 * own process group with its stdout and stderr on pipes, pump the pipes,
 * wait for it until a deadline, kill its group; and, as a child
 * subreaper, kill whatever it left behind.
 *
 * The cold worker (cold.c), the type checker (typegate.c) and the warm
 * client's supervision (warm.c) are built on these; the zygote, which
 * supervises many calls in one poll loop, on the deadline and orphan
 * helpers.  What a freshly
 * forked child does to itself is proc_child.h's.
 */
#ifndef DOLSOT_PROC_H
#define DOLSOT_PROC_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Where the bytes read from a pipe go. */
typedef void (*proc_feed_fn)(void *ctx, const char *buf, size_t n);

/* A pipe the parent reads: fd is non-blocking, and -1 once at EOF. */
struct proc_pipe {
	int fd;
	proc_feed_fn feed;
	void *ctx;
};

/* A child started by proc_start(). */
struct proc_child {
	pid_t pid;
	struct proc_pipe out, err;   /* its stdout and stderr */
};

/* Runs in the child, in its own process group, with out and err the write
 * ends of its stdout and stderr pipes; must not return (it _exits). */
typedef void (*proc_start_fn)(void *arg, int out, int err);

/*
 * Fork fn(arg, ...) into its own process group (both sides call setpgid,
 * so kill(-pid) works whichever runs first), after fflush(NULL).  c->out
 * and c->err get the read ends, non-blocking, with the feeds already set
 * in *c.  Returns 0, or -1 with errno set and *what naming the failed call
 * ("pipe2", "fork"); nothing is left open or running then.
 */
int proc_start(struct proc_child *c, proc_start_fn fn, void *arg, const char **what);

/*
 * Read what is available on p into its feed (a bounded number of reads,
 * so a child that floods a pipe cannot starve a deadline).  Returns 0 at
 * EOF or error (p->fd is closed and set to -1), 1 when more may come.
 */
int proc_pump(struct proc_pipe *p);

/*
 * Wait up to ms (-1: no limit) for extra[0..nextra) or one of the open
 * pipes[0..npipes), then pump the pipes.  extra's revents are set.
 * Returns poll()'s value (-1 with errno on failure; EINTR counts as 0).
 */
int proc_poll(struct proc_pipe *pipes, int npipes, struct pollfd *extra, int nextra,
              int ms);

/* Read p to EOF, waiting at most ms (-1: no limit) for each read; p->fd
 * is closed afterwards. */
void proc_drain(struct proc_pipe *p, int ms);

/* SIGKILL to pid's process group and to pid itself. */
void proc_kill_group(pid_t pid);

/* After its leader is reaped: SIGKILL what is left of process group pgid
 * (not the pid itself, which may belong to another process by now). */
void proc_kill_rest_of_group(pid_t pgid);

/*
 * One of many children at once, each under its own deadline, which a
 * single poll loop supervises (the zygote's calls): the caller reaps them,
 * proc_deadline_check kills their groups on time.
 */
struct proc_deadline {
	pid_t pid;                  /* a process group leader */
	struct timespec deadline;
	bool timed_out;             /* its group was killed at the deadline */
};

/* Once d's deadline has passed, kill its group (the first time only) and
 * set timed_out.  Returns the ms a poll() may wait before d needs looking
 * at again: until the deadline, or PROC_REAP_POLL_MS while a killed child
 * is not reaped yet.  Combine several with deadline_poll_min(). */
#define PROC_REAP_POLL_MS 50
int proc_deadline_check(struct proc_deadline *d);

/*
 * Kill and reap every child of this process that keep(pid, ctx) does not
 * claim, round after round until a round reaps none: what killed
 * children left behind, reparented to this child subreaper.  Never
 * waits: returns how many were killed but not dead yet (a later call, on
 * the next SIGCHLD, reaps them and kills what they left).
 */
size_t proc_kill_orphans(bool (*keep)(pid_t pid, void *ctx), void *ctx);

/* Wait for pid without passing deadline; true when it was reaped (or is
 * not ours to wait for), with *status set. */
bool proc_wait_until(pid_t pid, const struct timespec *deadline, int *status);

/* Map the file fd read-only: *p (NULL when empty; munmap it), *len.
 * Returns 0, or -1 with errno set. */
int proc_map(int fd, uint8_t **p, size_t *len);

/* A proc_feed_fn into a struct capture (output.h) as ctx. */
void proc_feed_capture(void *ctx, const char *buf, size_t n);

/*
 * Kill every child of this process (and, transitively, anything that gets
 * reparented to us meanwhile) and reap them all, waiting at most
 * PROC_KILL_WAIT seconds for them to die.  Returns 0 when none is left,
 * else about how many were left behind (a process in uninterruptible
 * sleep dies only when it wakes).  Used after the worker ends, and by a
 * worker whose supervisor died (guard.h); async-signal-safe.
 */
#define PROC_KILL_WAIT 1.0
size_t proc_kill_descendants(void);

/* Leave pid (the warm server this call started) out of
 * proc_kill_descendants: it is our child but belongs to no call. */
void proc_spare(pid_t pid);

/* pids of the children of process pid (0: this one), every thread's, at
 * most max.  Async-signal-safe. */
size_t proc_list_children(pid_t pid, pid_t *pids, size_t max);

/* How many threads this process runs (0 when /proc cannot say). */
size_t proc_thread_count(void);

/* This process's resident memory in bytes, from the kernel's counters
 * (/proc/self/statm: cheap at any size, unlike smaps_rollup); 0 when it
 * cannot be read. */
size_t proc_resident_bytes(void);

/* From /proc/PID/stat (pid > 0), the fields after comm: its state
 * letter into *state and its parent into *ppid (0 when the parent is
 * outside this PID namespace); either may be NULL.  Returns 0, or -1 when
 * pid is gone or its stat cannot be read.  Async-signal-safe, allocates
 * nothing. */
int proc_stat(pid_t pid, char *state, pid_t *ppid);

#endif
