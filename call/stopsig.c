/*
 * stopsig.c - the stop signals around a call's commit (stopsig.h).
 *
 * The lines are written with one write(2), and only when poll says the
 * stream takes them at once: a host that stopped reading stderr must not
 * keep a process it told to stop alive.  A line is under PIPE_BUF, so a
 * pipe with room for it takes it whole.
 */
#include "stopsig.h"

#include <poll.h>
#include <string.h>
#include <unistd.h>

static const int stops[] = { SIGINT, SIGTERM, SIGHUP };

/* The mask before the hold, while held (one hold at a time: a call). */
static sigset_t before;
static bool holding;

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaddset(set, stops[i]);
}

static const char *stop_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
	       : sig == SIGHUP ? "SIGHUP" : "a signal";
}

/* Async-signal-safe: the parts of one line, written once if there is
 * room for them. */
static void say(const char *a, const char *b, const char *c)
{
	char line[256];
	size_t n = 0;
	const char *parts[3] = { a, b, c };
	struct pollfd p = { .fd = 2, .events = POLLOUT };

	for (int i = 0; i < 3; i++) {
		size_t len = strlen(parts[i]);

		if (len > sizeof(line) - n)
			len = sizeof(line) - n;
		memcpy(line + n, parts[i], len);
		n += len;
	}
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
		(void)!write(2, line, n);
}

static void on_stop_after_save(int sig)
{
	say("dolsot: stopped by ", stop_name(sig),
	    " after the session was saved; the cell's effects are kept\n");
	signal(sig, SIG_DFL);
	raise(sig);   /* delivered when this handler returns */
}

int stopsig_hold(sigset_t *old)
{
	sigset_t set;

	stop_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, old) < 0)
		return -1;
	before = *old;
	holding = true;
	return 0;
}

void stopsig_caller_mask(sigset_t *mask)
{
	if (holding)
		*mask = before;
	else
		(void)sigprocmask(SIG_SETMASK, NULL, mask);
}

int stopsig_take(void)
{
	const struct timespec now = { 0, 0 };
	sigset_t set;
	int sig;

	stop_set(&set);
	sig = sigtimedwait(&set, NULL, &now);
	return sig > 0 ? sig : 0;
}

void stopsig_after_save(void)
{
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		struct sigaction now, sa;

		if (sigaction(stops[i], NULL, &now) < 0 || now.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_after_save;
		sigfillset(&sa.sa_mask);
		(void)sigaction(stops[i], &sa, NULL);
	}
}

void stopsig_release(const sigset_t *old)
{
	holding = false;
	(void)sigprocmask(SIG_SETMASK, old, NULL);
}

void stopsig_say_unsaved(int sig)
{
	say("dolsot: stopped by ", stop_name(sig),
	    " before the session was saved; session unchanged\n");
}
