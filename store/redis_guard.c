/*
 * redis_guard.c - release a dead holder's Redis lock once its cell is gone
 * (redis_guard.h).
 *
 * Before this, a client killed with a long cell in flight kept its
 * session locked for the whole lock lifetime (DOLSOT_REDIS_LOCK_MS, 30 s):
 * its renewer died with it, and the lock only expired.  The cell itself
 * is gone much sooner (the cold worker's guard and the warm zygote kill it
 * when its client dies), so the guard waits for exactly that.
 *
 * MUSTs:
 * - The guard is forked from a process that may run threads (the lock
 *   renewers): from the fork on it makes only async-signal-safe calls
 *   (no malloc, no stdio, no hiredis): everything it sends is formatted
 *   before the fork.
 * - It is no descendant of the caller (a double fork, with the caller's
 *   child-subreaper mark lifted meanwhile), so the cold path's sweep of
 *   its descendants leaves it alone, and it has a session of its own, so
 *   a kill of the caller's process group does not reach it.
 * - It keeps no fd of the caller's but its socket (fds 0-2 go to
 *   /dev/null): a pipe the caller's caller reads must see its end when
 *   the caller dies, not when the guard does.
 * - It ends: at the caller's word, at the caller's death once it released
 *   or gave up, and never waits longer than the lock would live.
 */
#include "redis_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"

#define GUARD_FD 3              /* the guard's socket, once it is alone */
#define GUARD_MAX_CELLS 8       /* cell processes one lock may see (a fallback runs two) */
#define GUARD_STOP_MS 1000      /* how long a stop waits for the guard to be gone */

/* What the caller says on the socket, one byte a message. */
enum { SAY_PENDING = 'p', SAY_CELL = 'c', SAY_DONE = 'd' };

/* Milliseconds left until t (CLOCK_MONOTONIC), at least 0. */
static int ms_left(const struct timespec *t)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > 86400000 ? 86400000 : (int)ms;
}

/* One message: its byte, and *fd the one it carried (-1: none); 0 at the
 * caller's end, -1 on error. */
static int hear(int sock, char *what, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { what, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return (int)n;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return 1;
}

/* Wait for every cell process in pidfds to end, until t; true when all did. */
static bool cells_gone(int *pidfds, int n, const struct timespec *t)
{
	while (n > 0) {
		struct pollfd p[GUARD_MAX_CELLS];
		int got;

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = pidfds[i], .events = POLLIN };
		got = poll(p, (nfds_t)n, ms_left(t));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		for (int i = n - 1; i >= 0; i--)
			if (p[i].revents)
				pidfds[i] = pidfds[--n];
	}
	return true;
}

/* Send the release on a new connection and wait for its replies, until t. */
static void release(const struct sockaddr *addr, socklen_t alen, const char *msg,
                    size_t len, int replies, const struct timespec *t)
{
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	size_t off = 0;
	char buf[256];

	if (fd < 0 || (connect(fd, addr, alen) < 0 && errno != EINPROGRESS))
		return;
	while (off < len) {
		ssize_t n;

		if (poll(&p, 1, ms_left(t)) <= 0)
			return;
		n = send(fd, msg + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return;
		if (n > 0)
			off += (size_t)n;
	}
	/* Each reply here is one line (+OK, :1, -ERR ...). */
	p.events = POLLIN;
	while (replies > 0 && poll(&p, 1, ms_left(t)) > 0) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return;
		for (ssize_t i = 0; i < n; i++)
			replies -= buf[i] == '\n';
	}
}

/* The caller's handlers and held signals are not the guard's: a stop
 * signal ends it. */
static void guard_signals(void)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (size_t i = 0; i < sizeof(stops) / sizeof(*stops); i++)
		(void)sigaction(stops[i], &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The guard's life (see the MUSTs above). */
static __attribute__((noreturn)) void guard_main(int sock, const struct sockaddr *addr,
                                                 socklen_t alen, const char *msg,
                                                 size_t len, int replies, long wait_ms)
{
	int cells[GUARD_MAX_CELLS], n = 0, fd, null, high;
	bool pending = false;
	struct timespec t;
	char what;

	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	high = fcntl(sock, F_DUPFD_CLOEXEC, GUARD_FD + 1);
	if (null < 0 || high < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(null, 2) < 0 || dup3(high, GUARD_FD, O_CLOEXEC) < 0 ||
	    syscall(SYS_close_range, GUARD_FD + 1, ~0U, 0) < 0)
		_exit(1);
	setsid();
	prctl(PR_SET_NAME, "dolsot-lockguard");
	guard_signals();
	for (;;) {
		int got = hear(GUARD_FD, &what, &fd);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;   /* the caller is gone */
		if (what == SAY_DONE)
			_exit(0);
		if (what == SAY_PENDING)
			pending = true;
		if (what == SAY_CELL && fd >= 0 && n < GUARD_MAX_CELLS) {
			cells[n++] = fd;
			pending = false;
		} else if (fd >= 0) {
			close(fd);
		}
	}
	/* A cell whose process we were never told of may still run. */
	if (pending)
		_exit(0);
	deadline_in_ms(&t, wait_ms);
	if (!cells_gone(cells, n, &t))
		_exit(0);   /* the lock expires by itself */
	deadline_in_ms(&t, wait_ms);
	release(addr, alen, msg, len, replies, &t);
	_exit(0);
}

int redis_guard_start(struct redis_guard *g, const struct sockaddr *addr, socklen_t alen,
                      const char *release_msg, size_t len, int replies, long wait_ms,
                      char *err, size_t errlen)
{
	int sv[2], was = 0, st = 0, saved;
	pid_t pid;

	g->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	/* Orphaned under us, the guard would be ours to sweep: lift the mark
	 * for the moment of the double fork. */
	if (prctl(PR_GET_CHILD_SUBREAPER, &was) == 0 && was)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 0);
	pid = fork();
	if (pid == 0) {
		pid_t inner = fork();

		if (inner == 0)
			guard_main(sv[1], addr, alen, release_msg, len, replies, wait_ms);
		_exit(inner < 0 ? 1 : 0);
	}
	saved = errno;
	close(sv[1]);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (was)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "cannot start the lock's guard: fork: %s",
		         strerror(pid < 0 ? saved : EAGAIN));
		close(sv[0]);
		return -1;
	}
	g->sock = sv[0];
	return 0;
}

/* One byte, and fd with it unless it is -1; a guard that is gone is
 * forgotten. */
static void say(struct redis_guard *g, char what, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &what, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (g->sock < 0)
		return;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		n = sendmsg(g->sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		close(g->sock);
		g->sock = -1;
	}
}

void redis_guard_cell(struct redis_guard *g, int pidfd)
{
	say(g, pidfd >= 0 ? SAY_CELL : SAY_PENDING, pidfd);
}

void redis_guard_stop(struct redis_guard *g)
{
	struct pollfd p = { .fd = g->sock, .events = POLLIN };
	char c;

	say(g, SAY_DONE, -1);
	if (g->sock < 0)
		return;
	/* Its end closes as it exits: then no process of this call is left
	 * (a caller that looks for them finds none). */
	while (poll(&p, 1, GUARD_STOP_MS) < 0 && errno == EINTR)
		;
	(void)recv(g->sock, &c, 1, MSG_DONTWAIT);
	close(g->sock);
	g->sock = -1;
}
