/*
 * guard.c - a worker's tree dies with its supervisor (see guard.h).
 *
 * Why a signal and not a PID namespace: outside the sandbox a cell must
 * see the host as the user's other programs do (its pid, the uids of
 * files), and a PID namespace as an unprivileged user needs a user
 * namespace too.  The cost is two prctl calls and a sigaction per call.
 */
#include "guard.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc.h"

/* The supervisor is gone: nothing below us may outlive it. */
static void supervisor_gone(int sig)
{
	(void)sig;
	proc_spare(0);
	(void)proc_kill_descendants();
	_exit(128 + SIGKILL);
}

static int fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "dolsot: cannot tie the cell's processes to the call: %s: %s",
	         what, strerror(errno));
	return -1;
}

int guard_arm(char *err, size_t errlen)
{
	struct sigaction sa;
	sigset_t one;
	pid_t parent = getppid();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = supervisor_gone;
	sigfillset(&sa.sa_mask);
	sigemptyset(&one);
	sigaddset(&one, GUARD_SIGNAL);
	if (sigaction(GUARD_SIGNAL, &sa, NULL) < 0)
		return fail(err, errlen, "sigaction");
	if (sigprocmask(SIG_UNBLOCK, &one, NULL) < 0)
		return fail(err, errlen, "sigprocmask");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return fail(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER)");
	if (prctl(PR_SET_PDEATHSIG, GUARD_SIGNAL) < 0)
		return fail(err, errlen, "prctl(PR_SET_PDEATHSIG)");
	/* A parent that died before the prctl sent no signal. */
	if (getppid() != parent)
		supervisor_gone(GUARD_SIGNAL);
	return 0;
}
