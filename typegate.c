/*
 * typegate.c - run a type checker under a deadline and leave nothing behind.
 *
 * The checker runs in its own process group with PR_SET_PDEATHSIG, so a
 * killed worker takes it along; the dolsot parent, a child subreaper, also
 * kills whatever escapes the group.  Its output is read with poll() against
 * the deadline and kept up to a cap, so a checker that floods its pipes or
 * never exits costs bounded memory and no more than the time it was given.
 *
 * Its rooms are in typegate/: the parser of checkers' output, the warm
 * checker's daemon and its drivers.
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
#include "output.h"
#include "proc.h"
#include "typegate.h"

#include "output.h"

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

char *typegate_which(const char *name)
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

void typegate_choose(bool asked, const char *configured, struct gate_state *g)
{
	static const char *const fallbacks[] = { "ty", "pyright", "mypy" };
	char *found;

	memset(g, 0, sizeof(*g));
	g->asked = asked;
	if (!asked) {
		snprintf(g->note, sizeof(g->note), "DOLSOT_TYPECHECK=0");
		return;
	}
	found = typegate_which(configured);
	if (found) {
		free(found);
		snprintf(g->checker, sizeof(g->checker), "%s", configured);
		return;
	}
	for (size_t i = 0; i < sizeof(fallbacks) / sizeof(*fallbacks); i++) {
		bool there;

		found = typegate_which(fallbacks[i]);
		there = found != NULL;
		free(found);
		if (there) {
			snprintf(g->checker, sizeof(g->checker), "%s", fallbacks[i]);
			snprintf(g->note, sizeof(g->note), "%s is not installed", configured);
			return;
		}
	}
	snprintf(g->note, sizeof(g->note), "no type checker is installed (%s%s"
	         TYPEGATE_FALLBACKS " were looked for on PATH); cells run unchecked",
	         strcmp(configured, "ty") ? configured : "", strcmp(configured, "ty") ? ", " : "");
}

struct exec_args {
	pid_t parent;
	const char *path, *cwd;
	const char *const *argv, *const *envp;
	int status;          /* write end of the status pipe: why exec failed */
};

/* The child (in its own group already): dies with us, fds 0-2 set, then exec. */
static void child_exec(void *arg, int out, int err)
{
	const struct exec_args *x = arg;
	sigset_t none;
	int null, e;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* A parent that died before prctl would leave us running unwatched. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != x->parent)
		goto fail;
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (x->cwd && chdir(x->cwd) < 0)
		goto fail;
	/* Whatever the worker holds open stays out of the checker. */
	syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
	execve(x->path, (char *const *)x->argv,
	       (char *const *)(x->envp ? x->envp : (const char *const *)environ));
fail:
	e = errno;
	if (write(x->status, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Where one of the checker's streams goes: at most cap bytes are kept. */
struct keep {
	char *buf;
	size_t *len, cap;
	bool *truncated;
};

static void keep_feed(void *ctx, const char *chunk, size_t r)
{
	struct keep *k = ctx;
	size_t room = *k->len < k->cap ? k->cap - *k->len : 0;

	if (r > room)
		*k->truncated = true;
	else
		room = r;
	if (room) {
		memcpy(k->buf + *k->len, chunk, room);
		*k->len += room;
		k->buf[*k->len] = '\0';
	}
}

/* Read both streams until they end; false when the deadline came first. */
static bool pump_until(struct proc_child *c, const struct timespec *deadline)
{
	while (c->out.fd >= 0 || c->err.fd >= 0) {
		double left = deadline_left(deadline);

		if (left <= 0)
			return false;
		if (proc_poll(&c->out, 2, NULL, 0, deadline_poll_ms(left)) < 0)
			break;
	}
	return true;
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

static void set_exec_failure(struct typegate_run *r, int e)
{
	r->status = e == ENOENT || e == ENOTDIR ? TYPEGATE_RUN_NOT_FOUND : TYPEGATE_RUN_CANNOT_START;
	r->code = e;
}

static int run_child(const char *path, const char *const *argv, const char *const *envp,
                     const char *cwd, const struct timespec *deadline, size_t cap,
                     struct typegate_run *r, char *err, size_t errlen)
{
	int st[2] = { -1, -1 };
	int ret = -1, status = 0, e;
	double t0 = deadline_now();
	struct exec_args x = { getpid(), path, cwd, argv, envp, -1 };
	struct keep kout = { r->out, &r->out_len, cap, &r->out_truncated };
	struct keep kerr = { r->err, &r->err_len, cap, &r->err_truncated };
	struct proc_child c = { .out = { -1, keep_feed, &kout }, .err = { -1, keep_feed, &kerr } };
	const char *what = "";

	if (pipe2(st, O_CLOEXEC) < 0) {
		fail(err, errlen, "pipe2");
		goto out;
	}
	x.status = st[1];
	if (proc_start(&c, child_exec, &x, &what) < 0) {
		fail(err, errlen, what);
		goto out;
	}
	fd_close(&st[1]);
	if ((e = exec_errno(st[0])) != 0) {
		waitpid(c.pid, NULL, 0);
		set_exec_failure(r, e);
		ret = 0;
		goto out;
	}
	if (!pump_until(&c, deadline) || !proc_wait_until(c.pid, deadline, &status)) {
		proc_kill_group(c.pid);
		while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR)
			;
		r->status = TYPEGATE_RUN_TIMEOUT;
	} else if (WIFSIGNALED(status)) {
		r->status = TYPEGATE_RUN_SIGNALED;
		r->code = WTERMSIG(status);
	} else {
		r->status = TYPEGATE_RUN_EXITED;
		r->code = WEXITSTATUS(status);
	}
	/* The checker is gone; so must be anything it left in its group. */
	kill(-c.pid, SIGKILL);
	r->seconds = deadline_now() - t0;
	ret = 0;
out:
	fd_close(&c.out.fd);
	fd_close(&c.err.fd);
	fd_close(&st[0]);
	fd_close(&st[1]);
	return ret;
}

int typegate_run(const char *const *argv, const char *const *envp, const char *cwd,
           const struct timespec *deadline, size_t cap, struct typegate_run *r,
           char *err, size_t errlen)
{
	char *path;
	int ret;

	memset(r, 0, sizeof(r[0]));
	r->out = calloc(1, cap + 1);
	r->err = calloc(1, cap + 1);
	if (!r->out || !r->err) {
		typegate_run_release(r);
		errno = ENOMEM;
		return fail(err, errlen, "cannot run the type checker");
	}
	path = argv[0] ? typegate_which(argv[0]) : NULL;
	if (!path) {
		set_exec_failure(r, ENOENT);
		return 0;
	}
	ret = run_child(path, argv, envp, cwd, deadline, cap, r, err, errlen);
	free(path);
	if (ret < 0)
		typegate_run_release(r);
	return ret;
}

void typegate_run_release(struct typegate_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}
