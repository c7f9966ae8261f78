/*
 * sandbox_init.c - PID 1 of a sandbox that stays (see sandbox_init.h).
 *
 * It runs no Python and touches no memory of the process it was forked
 * from but its stack: it blocks SIGCHLD, reads it from a signalfd, and
 * reaps.  Signals sent from inside the sandbox cannot reach it (a PID 1
 * ignores those it has no handler for); SIGKILL from outside ends it, and
 * so does its parent's death (sandbox.c sets PR_SET_PDEATHSIG).  It is not
 * dumpable, so nothing in the sandbox can read or write its memory or take
 * its report socket.
 */
#include "sandbox_init.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "proc_child.h"
#include "wire.h"

/* Reap every child that has ended and report it: 0, or -1 when the report
 * cannot be sent (the owner is gone). */
static int reap_all(int report)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (wire_send(report, WIRE_STATUS, (uint64_t)(unsigned)status, (uint64_t)pid,
		              NULL, 0, NULL, 0) < 0)
			return -1;
	return 0;
}

/* The parent of pid, from this sandbox's /proc; 0 when it is gone. */
static pid_t parent_of(pid_t pid)
{
	pid_t ppid;

	return proc_stat(pid, NULL, &ppid) < 0 ? 0 : ppid;
}

/* Kill every process of the sandbox but this one, keep and keep's
 * descendants: what a process that was killed had started, and escaped
 * its process group, ends too. */
static void keep_only(pid_t keep)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t pid, up;
		int hops = 0;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = (pid_t)atoi(e->d_name);
		for (up = pid; up > 1 && up != keep && hops < 4096; hops++)
			up = parent_of(up);
		if (pid > 1 && up != keep)
			kill(pid, SIGKILL);
	}
	closedir(d);
}

void sandbox_init_main(int report)
{
	struct signalfd_siginfo si;
	sigset_t chld;
	int sig;

	prctl(PR_SET_NAME, SANDBOX_INIT_NAME);
	/* Not dumpable: a process of the sandbox runs as our uid, and could
	 * otherwise open our /proc/1/mem or /proc/1/fd and speak for us on
	 * report (issue 35).  Its /proc files belong to root from now on, and
	 * only CAP_SYS_PTRACE in the host's user namespace opens them. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		_exit(127);
	proc_child_close_fds(&report, 1);
	if (proc_child_null_stdio() < 0)   /* it must not hold a call's pipes open */
		_exit(127);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0 ||
	    (sig = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		_exit(127);
	for (;;) {
		struct pollfd p[2] = { { report, POLLIN, 0 }, { sig, POLLIN, 0 } };

		/* A child that ended before SIGCHLD was blocked left no signal. */
		if (reap_all(report) < 0)
			_exit(0);
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			_exit(127);
		if (p[0].revents) {
			struct wire_msg m;
			int got = wire_recv(report, &m);

			if (got == 1 && m.type == WIRE_GO && m.a > 1 && m.a < (uint64_t)INT32_MAX)
				keep_only((pid_t)m.a);
			if (got == 1)
				wire_msg_release(&m);
			else if (got == 0 || errno != EAGAIN)
				_exit(0);
		}
		while (read(sig, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	}
}
