/*
 * proc.c - a child under a deadline: start, pump, wait until, kill group;
 * and killing everything a call left behind.
 *
 * The parent of a call is a child subreaper, so anything the cell starts
 * and orphans (setsid plus a double fork included) is reparented to us and
 * can be killed and reaped; a call returns only when it has no children
 * left.
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "output.h"

/*
 * proc_list_children, proc_stat and what they call are async-signal-safe
 * (guard.c's handler kills a call's tree with them; a sandbox's init,
 * which touches no memory of the process it was forked from, walks its
 * tree with proc_stat): raw open, getdents64 and read, no stdio, no
 * allocation.
 */

/* pid's directory name under /proc, "self" for 0, written into digits
 * (room for 24) when it is a number. */
static const char *pid_name(char *digits, pid_t pid)
{
	size_t d = 0;

	for (long v = pid; v > 0; v /= 10)
		digits[d++] = (char)('0' + v % 10);
	for (size_t i = 0; i < d / 2; i++) {
		char c = digits[i];

		digits[i] = digits[d - 1 - i];
		digits[d - 1 - i] = c;
	}
	digits[d] = '\0';
	return pid ? digits : "self";
}

/* dst = parts[0..nparts) one after the other; dst has room for 128. */
static void join_path(char *dst, const char *const *parts, size_t nparts)
{
	size_t n = 0;

	for (size_t i = 0; i < nparts; i++)
		for (const char *c = parts[i]; *c && n < 127; c++)
			dst[n++] = *c;
	dst[n] = '\0';
}

/* dst = "/proc/<pid or self>/task" plus tail; dst has room for 128. */
static void task_path(char *dst, pid_t pid, const char *tid, const char *tail)
{
	char digits[24];
	const char *parts[] = { "/proc/", pid_name(digits, pid), "/task", tid ? "/" : "",
	                        tid ? tid : "", tail };

	join_path(dst, parts, sizeof(parts) / sizeof(*parts));
}

/* Append the pids in the children file at path to pids[n..max); returns
 * the new n. */
static size_t read_children(const char *path, pid_t *pids, size_t n, size_t max)
{
	char buf[512];
	long kid = -1;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return n;
	while (n < max && (got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got && n < max; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				kid = (kid < 0 ? 0 : kid * 10) + (buf[i] - '0');
			} else if (kid >= 0) {
				pids[n++] = (pid_t)kid;
				kid = -1;
			}
		}
	if (kid >= 0 && n < max)
		pids[n++] = (pid_t)kid;
	close(fd);
	return n;
}

/* The kernel's record of a directory entry, for getdents64. */
struct task_entry {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Call visit with each thread id of process pid (0: this one) until it
 * returns false.  Async-signal-safe. */
static void each_task(pid_t pid, bool (*visit)(const char *tid, void *ctx), void *ctx)
{
	char path[128], ents[2048];
	long got;
	int dir;

	task_path(path, pid, NULL, "");
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	while ((got = syscall(SYS_getdents64, dir, ents, sizeof(ents))) > 0)
		for (long at = 0; at < got;) {
			const struct task_entry *e = (const struct task_entry *)(ents + at);

			at += e->reclen;
			if (e->name[0] != '.' && !visit(e->name, ctx)) {
				close(dir);
				return;
			}
		}
	close(dir);
}

struct children_of {
	pid_t pid, *pids;
	size_t n, max;
};

static bool add_children(const char *tid, void *ctx)
{
	struct children_of *c = ctx;
	char path[128];

	task_path(path, c->pid, tid, "/children");
	c->n = read_children(path, c->pids, c->n, c->max);
	return c->n < c->max;
}

size_t proc_list_children(pid_t pid, pid_t *pids, size_t max)
{
	struct children_of c = { pid, pids, 0, max };

	/* Threads a library started may have forked too: read every task. */
	if (max)
		each_task(pid, add_children, &c);
	return c.n;
}

static bool count_task(const char *tid, void *ctx)
{
	(void)tid;
	++*(size_t *)ctx;
	return true;
}

size_t proc_thread_count(void)
{
	size_t n = 0;

	each_task(0, count_task, &n);
	return n;
}

size_t proc_resident_bytes(void)
{
	char text[128];
	unsigned long pages = 0, resident = 0;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);

	fd_close(&fd);
	if (got <= 0)
		return 0;
	text[got] = '\0';
	if (sscanf(text, "%lu %lu", &pages, &resident) != 2)
		return 0;
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

int proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char digits[24], path[128], buf[512];
	const char *parts[] = { "/proc/", pid_name(digits, pid), "/stat" };
	const char *p;
	long up = 0;
	ssize_t n;
	char st;
	int fd;

	if (pid <= 0)
		return -1;
	join_path(path, parts, sizeof(parts) / sizeof(*parts));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold ')' and spaces itself. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ' || p[4] < '0' || p[4] > '9')
		return -1;
	st = p[2];
	for (p += 4; *p >= '0' && *p <= '9'; p++)
		if ((up = up * 10 + (*p - '0')) > INT32_MAX)
			return -1;
	if (state)
		*state = st;
	if (ppid)
		*ppid = (pid_t)up;
	return 0;
}

/* A child of ours that belongs to no call: the warm server we started. */
static pid_t spared;

void proc_spare(pid_t pid)
{
	spared = pid;
}

/* Between looks for children that died after SIGKILL (ns). */
#define PROC_KILL_POLL_NS 1000000

size_t proc_kill_descendants(void)
{
	pid_t pids[256];
	struct timespec until, pause = { 0, PROC_KILL_POLL_NS };

	deadline_in(&until, PROC_KILL_WAIT);
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
			return 0;   /* only the spared one is left */
		/* Never a blocking wait: a process in uninterruptible sleep (a
		 * hung NFS read, a frozen cgroup) dies only when it wakes, and
		 * the call must not wait for that (issue 21). */
		got = waitpid(-1, NULL, WNOHANG);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return 0;     /* ECHILD: nothing of ours is left */
		if (got > 0)
			continue;
		if (deadline_left(&until) <= 0)
			return killed ? killed : 1;
		nanosleep(&pause, NULL);
	}
}

int proc_start(struct proc_child *c, proc_start_fn fn, void *arg, const char **what)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };

	c->pid = -1;
	c->out.fd = c->err.fd = -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		*what = "pipe2";
		goto fail;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		*what = "fork";
		goto fail;
	}
	if (c->pid == 0) {
		setpgid(0, 0);
		fn(arg, outp[1], errp[1]);
		_exit(127);
	}
	setpgid(c->pid, c->pid);
	fd_close(&outp[1]);
	fd_close(&errp[1]);
	c->out.fd = outp[0];
	c->err.fd = errp[0];
	fcntl(c->out.fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err.fd, F_SETFL, O_NONBLOCK);
	return 0;
fail:
	fd_close(&outp[0]);
	fd_close(&outp[1]);
	fd_close(&errp[0]);
	fd_close(&errp[1]);
	return -1;
}

int proc_pump(struct proc_pipe *p)
{
	char buf[65536];

	/* Bounded, so a cell that floods a pipe cannot starve the deadline. */
	for (int rounds = 0; rounds < 32; rounds++) {
		ssize_t r = read(p->fd, buf, sizeof(buf));

		if (r > 0) {
			p->feed(p->ctx, buf, (size_t)r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 1;
		fd_close(&p->fd);
		return 0;
	}
	return 1;
}

int proc_poll(struct proc_pipe *pipes, int npipes, struct pollfd *extra, int nextra,
              int ms)
{
	struct pollfd p[8];
	int n = 0, got;

	for (int i = 0; i < nextra && n < 8; i++)
		p[n++] = extra[i];
	for (int i = 0; i < npipes && n < 8; i++)
		p[n++] = (struct pollfd){ .fd = pipes[i].fd, .events = POLLIN };
	got = poll(p, (nfds_t)n, ms);
	if (got < 0 && errno == EINTR)
		got = 0;
	for (int i = 0; i < nextra && i < 8; i++)
		extra[i].revents = got > 0 ? p[i].revents : 0;
	for (int i = 0; i < npipes; i++)
		if (pipes[i].fd >= 0)
			proc_pump(&pipes[i]);
	return got;
}

void proc_drain(struct proc_pipe *p, int ms)
{
	while (p->fd >= 0) {
		struct pollfd pf = { p->fd, POLLIN, 0 };

		if (poll(&pf, 1, ms) <= 0 && ms >= 0)
			break;
		proc_pump(p);
	}
	fd_close(&p->fd);
}

void proc_kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

void proc_kill_rest_of_group(pid_t pgid)
{
	kill(-pgid, SIGKILL);
}

int proc_deadline_check(struct proc_deadline *d)
{
	double left = deadline_left(&d->deadline);

	if (left > 0)
		return deadline_poll_ms(left);
	if (!d->timed_out) {
		d->timed_out = true;
		proc_kill_group(d->pid);
	}
	return PROC_REAP_POLL_MS;
}

/* At most this many children are looked at per round, and rounds are
 * bounded, so a fork bomb cannot hold the caller forever. */
#define ORPHANS_PER_ROUND 512
#define ORPHAN_ROUNDS 1000
/* How long one sweep waits for what it killed to die (ns). */
#define ORPHAN_WAIT_NS 20000000

size_t proc_kill_orphans(bool (*keep)(pid_t pid, void *ctx), void *ctx)
{
	pid_t kids[ORPHANS_PER_ROUND];
	struct timespec until, pause = { 0, PROC_KILL_POLL_NS };

	deadline_in_ns(&until, ORPHAN_WAIT_NS);
	for (int rounds = 0; rounds < ORPHAN_ROUNDS; rounds++) {
		size_t n = proc_list_children(0, kids, ORPHANS_PER_ROUND), left = 0;
		bool killed;

		for (size_t i = 0; i < n; i++) {
			if (keep(kids[i], ctx)) {
				kids[i] = 0;
				continue;
			}
			kill(kids[i], SIGKILL);
			left++;
		}
		killed = left != 0;
		/* A short wait, never a blocking one: a process in
		 * uninterruptible sleep dies only when it wakes (issue 21); a
		 * later call, on the next SIGCHLD, reaps it and what it left. */
		while (left) {
			left = 0;
			for (size_t i = 0; i < n; i++) {
				if (kids[i] && waitpid(kids[i], NULL, WNOHANG) != 0)
					kids[i] = 0;
				left += kids[i] != 0;
			}
			if (left && deadline_left(&until) <= 0)
				return left;
			if (left)
				nanosleep(&pause, NULL);
		}
		if (!killed)
			return 0;   /* else look again for what they left */
	}
	return 0;
}

bool proc_wait_until(pid_t pid, const struct timespec *deadline, int *status)
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

int proc_map(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	void *p;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0)
		return -1;
	if (st.st_size <= 0)
		return 0;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	*out = p;
	*len = (size_t)st.st_size;
	return 0;
}

void proc_feed_capture(void *ctx, const char *buf, size_t n)
{
	capture_feed(ctx, buf, n);
}
