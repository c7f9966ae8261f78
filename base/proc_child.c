/*
 * proc_child.c - a freshly forked child's own set-up: signals, the
 * parent's death, its process group, the standard fds, closing the rest.
 */
#include "proc_child.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void proc_child_close_fds(const int *keep, int nkeep)
{
	int lo = 3;

	for (;;) {
		int next = -1;

		for (int i = 0; i < nkeep; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			close_range((unsigned)lo, ~0U, 0);
			return;
		}
		if (next > lo)
			close_range((unsigned)lo, (unsigned)next - 1, 0);
		lo = next + 1;
	}
}

void proc_child_reset_signals(const sigset_t *oldmask)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);   /* EINVAL for KILL/STOP is fine */
	sigprocmask(SIG_SETMASK, oldmask, NULL);
}

int proc_child_detach(pid_t parent, const int *keep, int nkeep, const sigset_t *mask)
{
	proc_child_reset_signals(mask);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return -1;
	setpgid(0, 0);
	proc_child_close_fds(keep, nkeep);
	return 0;
}

int proc_child_stdio(int out, int err)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		ret = -1;
	if (null == 0 && fcntl(0, F_SETFD, 0) < 0)   /* dup2 onto itself kept O_CLOEXEC */
		ret = -1;
	if (null > 2)
		close(null);
	return ret;
}

int proc_child_null_stdio(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		return -1;
	if (null > 2)
		close(null);
	return 0;
}

int proc_child_prepare(pid_t parent, int out, int err, const int *keep, int nkeep,
                       const sigset_t *mask)
{
	if (proc_child_stdio(out, err) < 0)
		return -1;
	return proc_child_detach(parent, keep, nkeep, mask);
}
