/*
 * stopsig.h - the stop signals (SIGINT, SIGTERM, SIGHUP) around a call's
 * commit: held while the session may still be saved, so that a call they
 * stop has either left its session unchanged or saved it, and says which.
 *
 * While held, a stop signal waits: the call paths read it (their
 * signalfd) and kill the cell; one that arrives after the cell ended is
 * taken before the commit and the save is dropped.  Once the session is
 * saved, a stop signal says so on stderr and ends the process as it would
 * have (see README, "Signals").
 */
#ifndef DOLSOT_STOPSIG_H
#define DOLSOT_STOPSIG_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* Block the stop signals, the mask before into *old.  0, or -1 with
 * errno. */
int stopsig_hold(sigset_t *old);

/* Take one pending stop signal: its number, or 0 when none is pending. */
int stopsig_take(void);

/* The session was saved: from now on a stop signal (one pending already
 * included, once the mask is released) writes the line "dolsot: stopped
 * by SIG... after the session was saved; the cell's effects are kept"
 * and ends the process with that signal.  A signal ignored when held
 * stays ignored. */
void stopsig_after_save(void);

/* The signal mask the caller gave this process: while the stop signals
 * are held, the mask stopsig_hold found; else the mask now.  What a
 * worker restores before its cell runs, so that the hold stays the
 * client's and never reaches the cell (issue 35). */
void stopsig_caller_mask(sigset_t *mask);

/* Put the mask back as stopsig_hold found it. */
void stopsig_release(const sigset_t *old);

/* "dolsot: stopped by SIGNAME before the session was saved; session
 * unchanged" on stderr, for a caller about to end with sig. */
void stopsig_say_unsaved(int sig);

#endif
