/*
 * proc.c - fork, supervise and clean up after one worker.
 *
 * The parent is a child subreaper, so anything the cell starts and orphans
 * (setsid plus a double fork included) is reparented to us and can be
 * killed and reaped; a call returns only when it has no children left.
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"

static int fail(char *err, size_t errlen, const char *what)
{
	int saved = errno;

	snprintf(err, errlen, "%s: %s", what, strerror(saved));
	errno = saved;
	return -1;
}

size_t proc_list_children(pid_t pid, pid_t *pids, size_t max)
{
	char proc[32] = "self", path[sizeof(proc) + 256 + sizeof("/proc//task//children")];
	DIR *tasks;
	struct dirent *t;
	size_t n = 0;

	if (pid)
		snprintf(proc, sizeof(proc), "%d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%s/task", proc);
	tasks = opendir(path);
	if (!tasks)
		return 0;
	/* Threads a library started may have forked too: read every task. */
	while ((t = readdir(tasks)) && n < max) {
		FILE *f;
		long kid;

		if (t->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/children", proc, t->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (n < max && fscanf(f, "%ld", &kid) == 1)
			pids[n++] = (pid_t)kid;
		fclose(f);
	}
	closedir(tasks);
	return n;
}

/* A child of ours that belongs to no call: the warm server we started. */
static pid_t spared;

void proc_spare(pid_t pid)
{
	spared = pid;
}

void proc_kill_descendants(void)
{
	pid_t pids[256];

	for (;;) {
		size_t n = proc_list_children(0, pids, sizeof(pids) / sizeof(*pids)), killed = 0;
		pid_t got;

		for (size_t i = 0; i < n; i++) {
			if (pids[i] == spared)
				continue;
			kill(pids[i], SIGKILL);
			killed++;
		}
		if (!killed && spared)
			return;   /* only the spared one is left */
		got = waitpid(-1, NULL, killed ? 0 : WNOHANG);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return;       /* ECHILD: nothing of ours is left */
		if (got == 0) {
			/* A child we could not list (no /proc?): kill all we may. */
			struct timespec pause = { 0, 1000000 };

			nanosleep(&pause, NULL);
		}
	}
}

void proc_close_fds_except(const int *keep, int nkeep)
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

void proc_reset_signals(const sigset_t *oldmask)
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
	proc_reset_signals(mask);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return -1;
	setpgid(0, 0);
	proc_close_fds_except(keep, nkeep);
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

int proc_child_prepare(pid_t parent, int out, int err, const int *keep, int nkeep,
                       const sigset_t *mask)
{
	if (proc_child_stdio(out, err) < 0)
		return -1;
	return proc_child_detach(parent, keep, nkeep, mask);
}

/* The child side of the fork: set up fds and the group, then run. */
static void child_start(pid_t parent, const int outp[2], const int errp[2],
                        const struct worker_fds *fds, const sigset_t *oldmask,
                        proc_child_fn fn, void *arg)
{
	int keep[4] = { fds->request, fds->result, fds->save, fds->load };

	if (proc_child_prepare(parent, outp[1], errp[1], keep, 4, oldmask) < 0)
		_exit(127);
	fn(fds, arg);
	_exit(127);
}

int proc_pump(int *fd, struct capture *c)
{
	char buf[65536];

	/* Bounded, so a cell that floods a pipe cannot starve the deadline. */
	for (int rounds = 0; rounds < 32; rounds++) {
		ssize_t r = read(*fd, buf, sizeof(buf));

		if (r > 0) {
			capture_feed(c, buf, (size_t)r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 1;
		fd_close(fd);
		return 0;
	}
	return 1;
}

struct supervisor {
	pid_t pid;
	int out, err, sig;
	bool reaped;
	struct proc_outcome *o;
	struct capture *cout, *cerr;
};

/* Handle the signals that arrived; returns -1 on a read error. */
static int on_signals(struct supervisor *s)
{
	struct signalfd_siginfo si;

	while (read(s->sig, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			s->o->signal = (int)si.ssi_signo;
			kill(-s->pid, SIGKILL);
			kill(s->pid, SIGKILL);
		}
	}
	if (!s->reaped) {
		int st;
		pid_t got = waitpid(s->pid, &st, WNOHANG);

		if (got == s->pid) {
			s->reaped = true;
			s->o->status = st;
		}
	}
	return 0;
}

static void supervise(struct supervisor *s, const struct timespec *deadline)
{
	while (!s->reaped) {
		struct pollfd p[3];
		int n = 0, ms;
		double left = deadline_left(deadline);

		if (left <= 0 && !s->o->timed_out) {
			s->o->timed_out = true;
			kill(-s->pid, SIGKILL);
			kill(s->pid, SIGKILL);
		}
		ms = s->o->timed_out || s->o->signal ? 50 :
		     deadline_poll_ms(left);
		p[n++] = (struct pollfd){ .fd = s->sig, .events = POLLIN };
		if (s->out >= 0)
			p[n++] = (struct pollfd){ .fd = s->out, .events = POLLIN };
		if (s->err >= 0)
			p[n++] = (struct pollfd){ .fd = s->err, .events = POLLIN };
		if (poll(p, (nfds_t)n, ms) < 0 && errno != EINTR)
			break;
		if (s->out >= 0)
			proc_pump(&s->out, s->cout);
		if (s->err >= 0)
			proc_pump(&s->err, s->cerr);
		on_signals(s);
	}
}

static int map_result(int fd, struct proc_outcome *o)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -1;
	if (st.st_size <= 0)
		return 0;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	o->result = p;
	o->result_len = (size_t)st.st_size;
	return 0;
}

int proc_run(const uint8_t *request, size_t request_len,
             const struct worker_fds *session, const struct timespec *deadline,
             proc_child_fn child, void *arg,
             struct capture *out, struct capture *errc, struct proc_outcome *o,
             char *err, size_t errlen)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, req = -1, res = -1;
	int ret = -1;
	sigset_t mask, oldmask;
	struct supervisor s = { .pid = -1, .out = -1, .err = -1, .sig = -1, .o = o,
	                        .cout = out, .cerr = errc };
	double t0;

	memset(o, 0, sizeof(*o));
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0)
		return fail(err, errlen, "sigprocmask");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		fail(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER)");
		goto out;
	}
	if ((s.sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fail(err, errlen, "signalfd");
		goto out;
	}
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		fail(err, errlen, "pipe2");
		goto out;
	}
	if ((req = memfd_create("dolsot-request", MFD_CLOEXEC)) < 0 ||
	    (res = memfd_create("dolsot-result", MFD_CLOEXEC)) < 0) {
		fail(err, errlen, "memfd_create");
		goto out;
	}
	if (fd_write_all(req, request, request_len) < 0) {
		fail(err, errlen, "cannot write the request");
		goto out;
	}
	fflush(NULL);
	t0 = deadline_now();
	{
		pid_t parent = getpid();

		s.pid = fork();
		if (s.pid < 0) {
			fail(err, errlen, "fork");
			goto out;
		}
		if (s.pid == 0) {
			struct worker_fds fds = { req, res, session->load, session->save };

			child_start(parent, outp, errp, &fds, &oldmask, child, arg);
		}
	}
	/* Both sides call setpgid, so kill(-pid) works whichever runs first. */
	setpgid(s.pid, s.pid);
	fd_close(&outp[1]);
	fd_close(&errp[1]);
	s.out = outp[0];
	s.err = errp[0];
	fcntl(s.out, F_SETFL, O_NONBLOCK);
	fcntl(s.err, F_SETFL, O_NONBLOCK);
	supervise(&s, deadline);
	o->elapsed = deadline_now() - t0;
	/* The worker is gone; so must be everything it started. */
	kill(-s.pid, SIGKILL);
	proc_kill_descendants();
	if (s.out >= 0) {
		fcntl(s.out, F_SETFL, 0);
		while (proc_pump(&s.out, out))
			;
	}
	if (s.err >= 0) {
		fcntl(s.err, F_SETFL, 0);
		while (proc_pump(&s.err, errc))
			;
	}
	if (map_result(res, o) < 0) {
		fail(err, errlen, "cannot read the worker's result");
		goto out;
	}
	ret = 0;
out:
	fd_close(&outp[0]);
	fd_close(&outp[1]);
	fd_close(&errp[0]);
	fd_close(&errp[1]);
	fd_close(&s.out);
	fd_close(&s.err);
	fd_close(&s.sig);
	fd_close(&req);
	fd_close(&res);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return ret;
}

void proc_outcome_release(struct proc_outcome *o)
{
	if (o->result)
		munmap(o->result, o->result_len);
	o->result = NULL;
	o->result_len = 0;
}
