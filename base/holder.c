/*
 * holder.c - a process that holds another's memory past its exit; see
 * holder.h.
 */
#include "holder.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdio.h"
#include "proc.h"

/* The holder runs a few system calls on this stack, in the shared memory. */
#define HOLDER_STACK ((size_t)64 * 1024)
/* A process holding less than this exits in well under a millisecond,
 * less than a holder costs its call (measured: +0.27 ms to a call on a
 * zygote of 20 MiB, -2.5 ms on one of 66 MiB that imported pandas). */
#define HOLDER_MIN_RESIDENT ((size_t)32 << 20)
/* How long holder_end waits for the holder to be gone (ms). */
#define HOLDER_END_MS 5000

static pid_t holder = -1;

/* The holder: shares the memory (and TLS) of the process that made it, so
 * it only makes system calls, whose success writes nothing there. */
static int hold(void *unused)
{
	sigset_t all;

	(void)unused;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "dolsot-holder");
	syscall(SYS_close_range, 0U, ~0U, 0U);
	/* Out of the worker's group, whose kill would wake it too early; and
	 * freeing the memory waits for an idle CPU rather than take a busy one. */
	setpgid(0, 0);
	sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ 0 });
	/* Not pause(), a cancellation point that would write to the thread
	 * state of the process whose memory this is. */
	for (;;)
		syscall(SYS_rt_sigsuspend, &all, (size_t)(_NSIG / 8));
	return 0;
}

pid_t holder_start(void)
{
	char *stack;
	pid_t pid;

	if (proc_resident_bytes() < HOLDER_MIN_RESIDENT)
		return 0;
	stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	pid = clone(hold, stack + HOLDER_STACK, CLONE_VM | CLONE_PARENT | SIGCHLD, NULL);
	if (pid < 0) {
		int saved = errno;

		munmap(stack, HOLDER_STACK);
		errno = saved;
		return -1;
	}
	holder = pid;
	return pid;
}

int holder_end(char *err, size_t errlen)
{
	struct pollfd p = { .events = POLLIN };
	int got;

	if (holder < 0)
		return 0;
	p.fd = (int)syscall(SYS_pidfd_open, holder, 0);
	if (p.fd < 0) {
		if (errno == ESRCH) {   /* gone already */
			holder = -1;
			return 0;
		}
		snprintf(err, errlen, "cannot watch the memory's holder: %s", strerror(errno));
		return -1;
	}
	if (syscall(SYS_pidfd_send_signal, p.fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) {
		snprintf(err, errlen, "cannot end the memory's holder: %s", strerror(errno));
		fd_close(&p.fd);
		return -1;
	}
	do
		got = poll(&p, 1, HOLDER_END_MS);
	while (got < 0 && errno == EINTR);
	fd_close(&p.fd);
	if (got <= 0) {
		snprintf(err, errlen, "the memory's holder did not end: %s",
		         got < 0 ? strerror(errno) : "timed out");
		return -1;
	}
	holder = -1;
	return 0;
}
