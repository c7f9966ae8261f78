/*
 * typegate.c - run a type checker under a deadline and leave nothing behind.
 *
 * The checker runs in its own process group with PR_SET_PDEATHSIG, so a
 * killed worker takes it along; the dolsot parent, a child subreaper, also
 * kills whatever escapes the group.  Its output is read with poll() against
 * the deadline and kept up to a cap, so a checker that floods its pipes or
 * never exits costs bounded memory and no more than the time it was given.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "typegate.h"

extern char **environ;

static int fail(char *err, size_t errlen, const char *what)
{
	int saved = errno;

	snprintf(err, errlen, "%s: %s", what, strerror(saved));
	errno = saved;
	return -1;
}

static bool is_executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *tg_which(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!name || !*name)
		return NULL;
	/* Absolute, since the checker runs in another directory. */
	if (name[0] == '/')
		return access(name, F_OK) == 0 ? strdup(name) : NULL;
	if (strchr(name, '/')) {
		char cwd[PATH_MAX];
		int w;

		if (!getcwd(cwd, sizeof(cwd)))
			return NULL;
		w = snprintf(buf, sizeof(buf), "%s/%s", cwd, name);
		return w > 0 && (size_t)w < sizeof(buf) && access(buf, F_OK) == 0 ? strdup(buf) : NULL;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		int w = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)n, path,
		                 n ? "/" : "", name);

		if (w > 0 && (size_t)w < sizeof(buf) && is_executable(buf))
			return strdup(buf);
		path += n + (colon != NULL);
	}
	return NULL;
}

/* The child: own group, dies with us, fds 0-2 set, then exec. */
static void child_exec(pid_t parent, const char *path, const char *const *argv,
                       const char *const *envp, const char *cwd, int out, int err,
                       int status)
{
	sigset_t none;
	int null, e;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* A parent that died before prctl would leave us running unwatched. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		goto fail;
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (cwd && chdir(cwd) < 0)
		goto fail;
	/* Whatever the worker holds open stays out of the checker. */
	syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
	execve(path, (char *const *)argv, (char *const *)(envp ? envp : (const char *const *)environ));
fail:
	e = errno;
	if (write(status, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Keep up to cap bytes in *buf; returns 0 at EOF, 1 while open. */
static int drain(int *fd, char **buf, size_t *len, size_t cap, bool *truncated)
{
	char chunk[16384];

	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t r = read(*fd, chunk, sizeof(chunk));
		size_t keep;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 1;
		if (r <= 0) {
			fd_close(fd);
			return 0;
		}
		keep = *len < cap ? cap - *len : 0;
		if ((size_t)r > keep)
			*truncated = true;
		else
			keep = (size_t)r;
		if (keep) {
			memcpy(*buf + *len, chunk, keep);
			*len += keep;
			(*buf)[*len] = '\0';
		}
	}
	return 1;
}

static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

/* Wait for pid without passing the deadline; true when it was reaped. */
static bool reap_by(pid_t pid, const struct timespec *deadline, int *status)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

	for (;;) {
		pid_t got = waitpid(pid, status, WNOHANG);
		double left = deadline_left(deadline);

		if (got == pid || (got < 0 && errno != EINTR)) {
			fd_close(&pfd);
			return true;    /* reaped, or not ours to wait for */
		}
		if (left <= 0) {
			fd_close(&pfd);
			return false;
		}
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			poll(&p, 1, deadline_poll_ms(left));
		} else {
			struct timespec pause = { 0, 2000000 };

			nanosleep(&pause, NULL);
		}
	}
}

static void pump_until(struct tg_run *r, int *out, int *errfd, size_t cap,
                       const struct timespec *deadline, bool *timed_out)
{
	while (*out >= 0 || *errfd >= 0) {
		struct pollfd p[2];
		nfds_t n = 0;
		double left = deadline_left(deadline);

		if (left <= 0) {
			*timed_out = true;
			return;
		}
		if (*out >= 0)
			p[n++] = (struct pollfd){ .fd = *out, .events = POLLIN };
		if (*errfd >= 0)
			p[n++] = (struct pollfd){ .fd = *errfd, .events = POLLIN };
		if (poll(p, n, left > 60 ? 60000 : (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return;
		if (*out >= 0)
			drain(out, &r->out, &r->out_len, cap, &r->out_truncated);
		if (*errfd >= 0)
			drain(errfd, &r->err, &r->err_len, cap, &r->err_truncated);
	}
}

/* Why exec failed, from the status pipe; 0 when exec succeeded. */
static int exec_errno(int fd)
{
	int e = 0;
	ssize_t n;

	do
		n = read(fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(e) ? (e ? e : EIO) : 0;
}

static void set_exec_failure(struct tg_run *r, int e)
{
	r->status = e == ENOENT || e == ENOTDIR ? TG_RUN_NOT_FOUND : TG_RUN_CANNOT_START;
	r->code = e;
}

static int run_child(const char *path, const char *const *argv, const char *const *envp,
                     const char *cwd, const struct timespec *deadline, size_t cap,
                     struct tg_run *r, char *err, size_t errlen)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, st[2] = { -1, -1 };
	int ret = -1, status = 0, e;
	bool timed_out = false;
	double t0 = deadline_now();
	pid_t pid, parent = getpid();

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(st, O_CLOEXEC) < 0) {
		fail(err, errlen, "pipe2");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		fail(err, errlen, "fork");
		goto out;
	}
	if (pid == 0)
		child_exec(parent, path, argv, envp, cwd, outp[1], errp[1], st[1]);
	setpgid(pid, pid);
	fd_close(&outp[1]);
	fd_close(&errp[1]);
	fd_close(&st[1]);
	if ((e = exec_errno(st[0])) != 0) {
		waitpid(pid, NULL, 0);
		set_exec_failure(r, e);
		ret = 0;
		goto out;
	}
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	pump_until(r, &outp[0], &errp[0], cap, deadline, &timed_out);
	if (timed_out || !reap_by(pid, deadline, &status)) {
		kill_group(pid);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		r->status = TG_RUN_TIMEOUT;
	} else if (WIFSIGNALED(status)) {
		r->status = TG_RUN_SIGNALED;
		r->code = WTERMSIG(status);
	} else {
		r->status = TG_RUN_EXITED;
		r->code = WEXITSTATUS(status);
	}
	/* The checker is gone; so must be anything it left in its group. */
	kill(-pid, SIGKILL);
	r->seconds = deadline_now() - t0;
	ret = 0;
out:
	fd_close(&outp[0]);
	fd_close(&outp[1]);
	fd_close(&errp[0]);
	fd_close(&errp[1]);
	fd_close(&st[0]);
	fd_close(&st[1]);
	return ret;
}

int tg_run(const char *const *argv, const char *const *envp, const char *cwd,
           const struct timespec *deadline, size_t cap, struct tg_run *r,
           char *err, size_t errlen)
{
	char *path;
	int ret;

	memset(r, 0, sizeof(r[0]));
	r->out = calloc(1, cap + 1);
	r->err = calloc(1, cap + 1);
	if (!r->out || !r->err) {
		tg_run_release(r);
		errno = ENOMEM;
		return fail(err, errlen, "cannot run the type checker");
	}
	path = argv[0] ? tg_which(argv[0]) : NULL;
	if (!path) {
		set_exec_failure(r, ENOENT);
		return 0;
	}
	ret = run_child(path, argv, envp, cwd, deadline, cap, r, err, errlen);
	free(path);
	if (ret < 0)
		tg_run_release(r);
	return ret;
}

void tg_run_release(struct tg_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}
