/*
 * call_path.h - what one call hands a worker and gets back, on either path.
 *
 * A call path (cold.c forks the worker from this process, warm.c has the
 * warm server fork it from a zygote) starts a worker with these files and
 * fills a struct call_outcome.  call.c tries the warm path, then the cold.
 */
#ifndef DOLSOT_CALL_PATH_H
#define DOLSOT_CALL_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The files a worker starts with; the parent's copies are CLOEXEC. */
struct worker_fds {
	int request;             /* the request frame, written */
	int result;              /* the answer frame, empty */
	int load;                /* the session to load; -1: a new session */
	int save;                /* an empty file for the new session */
	int tools;               /* the worker's end of the host-call channel
	                          * (hosttools.h); -1: no host tools */
};

/* The declared host tools and their serving (hosttools.h). */
struct host_tools;

struct call_outcome {
	int status;              /* wait status of the worker */
	bool timed_out;
	int signal;              /* non-zero: the caller got this signal and must re-raise it */
	uint8_t *result;         /* mmap'd result frame, or NULL when empty */
	size_t result_len;
	double elapsed;          /* seconds from fork to reap */
	size_t left_behind;      /* processes of the cell that did not die when killed */
	bool rolled_back;        /* --live: the session's process is the one before the call */
	char live_ended[256];    /* why a bound ended the session's live process
	                          * since its last call; "": none did */
};

/*
 * Who wants to know where the cell runs (repl.c, for the session's
 * locks): told -1 just before a cell may start whose process is not known
 * yet, then a pidfd of the process whose end is the cell's end (cold: the
 * worker, which kills what it started when its parent dies; warm: the
 * worker that said it is ready, before it is told to go).  The pidfd stays
 * the path's: dup it to keep it.  fn NULL: nobody asks.
 */
struct cell_watch {
	void (*fn)(int pidfd, void *ctx);
	void *ctx;
};

static inline void cell_watch_tell(const struct cell_watch *w, int pidfd)
{
	if (w && w->fn)
		w->fn(pidfd, w->ctx);
}

/* How a call path ended. */
enum call_status {
	CALL_DONE,        /* the outcome is filled */
	CALL_NO_SERVER,   /* warm: nobody listens; run cold, then start a server */
	CALL_FALLBACK,    /* warm: declined before the cell ran; run cold */
	CALL_BROKEN,      /* warm: failed after the cell may have run (err says how) */
	CALL_FAILED,      /* cold: a syscall failed, nothing ran (err says which) */
};

#endif
