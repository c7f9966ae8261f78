/*
 * live.h - live sessions (--live): a process of the zygote that holds a
 * session's namespace between calls, and the rollback of a cell that does
 * not complete.
 *
 * A live call (REQ_LIVE) runs in the session's live process itself, so
 * that what it holds (sockets, generators, threads, object identity)
 * stays as it is.  Just before the cell runs, that process forks a
 * snapshot: a copy-on-write copy of the state before the call, which
 * waits.  When the cell completes (an exception counts), the process kills
 * its snapshot and answers; when it does not (a timeout, a crash, a limit,
 * the client gone), the zygote kills the process with its whole tree and
 * wakes the snapshot, which is the session's process from then on.
 *
 * The worker still saves the session after every completed cell (with
 * what pickles), so the store always has the state the live process
 * holds.  The zygote remembers a fingerprint of that save (its length and
 * the hash of its first bytes, which hold a random token of the save); a
 * live call whose stored session does not have it (a call without --live,
 * --reset or a cold call wrote it since) ends the live process and starts
 * a new one from the store.  So does a call with other limits or another
 * sandbox (or none where it has one), and a call without --live ends it
 * at once.
 *
 * A sandboxed live process runs inside the sandbox its first call made,
 * below the sandbox's init (sandbox_init.h), so that a rollback kills the
 * process and its snapshot goes on in the same sandbox.  The zygote knows
 * it by its pid in the zygote's namespace (each message on its socket
 * carries it) and hears of its end from the init, whose reports count only
 * when the kernel names the init as their sender.  The init and every
 * snapshot are not dumpable: the cell, under the same uid, can neither
 * open their memory nor take their sockets (issue 35).
 *
 * The zygote keeps at most LIVE_MAX_HELD live processes (DOLSOT_LIVE_MAX),
 * holding at most LIVE_MEMORY_KB of private memory together
 * (DOLSOT_LIVE_MEMORY_MB), and ends one idle for LIVE_IDLE_SECONDS
 * (DOLSOT_LIVE_IDLE): past the count the least recently used go first,
 * past the memory the one holding most.  The server measures the memory
 * about once a second whether calls come or not, so a live process that
 * grows while idle (a thread of a cell) is ended too.  An ended live
 * process loses nothing the store does not have but its live-only values,
 * which the next call names, with why it was ended (live_take's note).
 */
#ifndef DOLSOT_LIVE_H
#define DOLSOT_LIVE_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "wire.h"

#define LIVE_MAX_HELD 8
#define LIVE_MEMORY_KB (2L * 1024 * 1024)
#define LIVE_IDLE_SECONDS 600

/* The fds of a WIRE_RUN, in zygote.c's order; LIVE_FD_LOAD only for a
 * session that exists. */
enum { LIVE_FD_CLIENT, LIVE_FD_REQUEST, LIVE_FD_RESULT, LIVE_FD_OUT, LIVE_FD_ERR,
       LIVE_FD_SAVE, LIVE_FD_LOAD, LIVE_RUN_FDS };

/* Read the bounds' settings, before the zygote takes its call's
 * environment. */
void live_init(void);

/*
 * The zygote's side.  live_take looks at the call m (a WIRE_RUN) first:
 * LIVE_NOT_TAKEN when it is not a live call (then any live process of its
 * session has been ended) or live cannot run it; LIVE_TAKEN when it went
 * to the session's live process (a new one, forked now from this zygote,
 * with mask as the signal mask to restore), whose pid is in *pid (-1:
 * none could start); LIVE_REAP_FIRST when the session's process is still
 * busy with a call whose client left and has just died: the caller reaps
 * it (live_ended) and asks again.  m's fds stay the caller's to close.
 * Unless LIVE_REAP_FIRST, note gets why a bound ended the session's live
 * process since its last call, once (empty: none did), for the client.
 */
enum live_take {
	LIVE_NOT_TAKEN,     /* not a live call, or live cannot run it */
	LIVE_TAKEN,         /* *pid runs it */
	LIVE_REAP_FIRST,    /* the session's process ended: reap it, then ask again */
};
#define LIVE_NOTE_MAX 256
enum live_take live_take(struct wire_msg *m, const sigset_t *mask, pid_t *pid,
                         char *note, size_t notelen);

/* The live processes and snapshots are the zygote's: not orphans. */
bool live_is_ours(pid_t pid);

/* Add the live processes' sockets to p (room for LIVE_POLL_MAX): each
 * one's, and its sandbox's init's. */
#define LIVE_POLL_MAX (2 * LIVE_MAX_HELD)
size_t live_poll_fds(struct pollfd *p);

/* After poll: done(pid) for each live process whose call completed (it
 * lives on and must not be waited for). */
void live_events(const struct pollfd *p, size_t n, void (*done)(pid_t pid));

/* The process pid of a call ended: true when it was a live one, whose
 * snapshot (if any) now holds the session: the call was rolled back. */
bool live_ended(pid_t pid);

/* A process that was no call's was reaped. */
void live_reaped(pid_t pid);

/*
 * A live process in a sandbox is not the zygote's child: the sandbox's
 * init (sandbox_init.h) reports its end, and live_events (or live_take)
 * queues it.  live_next_ended gives the next such end, a call's pid and
 * its wait status, to be handled as a reaped one (live_ended included);
 * false when none is left.
 */
bool live_next_ended(pid_t *pid, int *status);

/* End the idle live processes past LIVE_IDLE_SECONDS; the poll timeout
 * in ms until the next one may be (-1: none is held). */
int live_expire(void);

/* End every live process (the zygote is done). */
void live_end_all(void);

/* In a zygote forked from this one: forget every live process without
 * touching it (they are the parent zygote's; their fds are closed). */
void live_forget(void);

/*
 * What the zygote tells the server: after a change, live_report sends on
 * ctl a WIRE_INFO whose payload holds one LIVE_ENTRY per live session
 * ("SESSION<TAB>PID<TAB>BUSY<TAB>LAST_USED", CLOCK_MONOTONIC seconds).
 * The server keeps each zygote's last report, and when all of them
 * together hold more than DOLSOT_LIVE_MAX sessions or
 * DOLSOT_LIVE_MEMORY_MB of private memory, asks the zygote of the least
 * recently used idle one (past the memory: the one holding most) to end
 * it: WIRE_STOP with a LIVE_ENTRY naming it and a LIVE_WHY saying why,
 * which live_on_stop does.  The server asks live_pick_evict after every
 * report and on its own about once a second (the memory is read at most
 * once a second).
 */
#define LIVE_ENTRY "live"
#define LIVE_WHY "why"
void live_report(int ctl);
void live_on_stop(const struct wire_msg *m);

/* A zygote's last report, as the server keeps it. */
struct live_reports {
	const uint8_t *payload;
	size_t len;
};

/* The report (index into r) holding the session to end, its name into
 * session and why into why (LIVE_NOTE_MAX); -1 when the bounds hold (or
 * only busy sessions pass them). */
int live_pick_evict(const struct live_reports *r, size_t n, char *session, size_t len,
                    char *why, size_t whylen);

/* One "  live SESSION pid PID: N kB private, idle S s" line per entry of
 * report, appended to text (*n used of cap), for --server-status. */
void live_status(char *text, size_t *n, size_t cap, const uint8_t *report, size_t len);

#endif
