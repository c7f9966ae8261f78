/*
 * sandbox_ids.c - the sandbox's uid and gid maps, and a root caller's
 * helper (see sandbox_ids.h).
 *
 * The helper and the caller talk over a SOCK_SEQPACKET pair: the caller
 * sends 'm' (write my maps) or 'i' with mount fds attached (idmap these),
 * the helper answers each with one struct reply; end of file ends it.  The
 * helper is a fork of the caller, which may be a warm server's child with
 * Python in memory: it only makes system calls and exits with _exit.
 */
#include "sandbox_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FDS 64

struct reply {
	int err;                 /* errno of the step that failed, or 0 */
	char what[120];          /* that step */
};

static int fail(char *err, size_t errlen, const char *what, int e)
{
	snprintf(err, errlen, "cannot create the sandbox: %s: %s", what, strerror(e));
	errno = e;
	return -1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), saved;
	ssize_t n = (ssize_t)strlen(text), w;

	if (fd < 0)
		return -1;
	w = write(fd, text, (size_t)n);
	saved = errno;
	close(fd);
	errno = saved;
	return w == n ? 0 : -1;
}

/* The maps of pid ("self" for our own): inside first, then host. */
static int write_maps(const char *pid, unsigned in_uid, unsigned host_uid,
                      unsigned in_gid, unsigned host_gid, struct reply *r)
{
	char path[64], map[64];

	/* An unprivileged gid_map needs setgroups refused first; a
	 * privileged one does not, but the sandbox has no use for it. */
	snprintf(path, sizeof(path), "/proc/%s/setgroups", pid);
	if (write_file(path, "deny") < 0)
		goto fail;
	snprintf(path, sizeof(path), "/proc/%s/uid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", in_uid, host_uid);
	if (write_file(path, map) < 0)
		goto fail;
	snprintf(path, sizeof(path), "/proc/%s/gid_map", pid);
	snprintf(map, sizeof(map), "%u %u 1\n", in_gid, host_gid);
	if (write_file(path, map) < 0)
		goto fail;
	return 0;
fail:
	r->err = errno;
	snprintf(r->what, sizeof(r->what), "cannot write %s", path);
	return -1;
}

static void idmap_one(int fd, int userns, struct reply *r)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (__u64)userns };

	if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) == 0)
		return;
	/* A submount on a file system without idmapping (or the bind
	 * itself): map what can be mapped. */
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0)
		return;
	if (errno == EINVAL || errno == EOPNOTSUPP || errno == EPERM)
		return;
	r->err = errno;
	snprintf(r->what, sizeof(r->what), "cannot idmap a bind (mount_setattr)");
}

/* One 'i' message: its fds, idmapped in turn. */
static void idmap_all(struct msghdr *m, int userns, struct reply *r)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t n;
		int fds[MAX_FDS];

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(fds, CMSG_DATA(c), n * sizeof(int));
		for (size_t i = 0; i < n; i++) {
			if (!r->err)
				idmap_one(fds[i], userns, r);
			close(fds[i]);
		}
	}
}

static void helper(int sock, pid_t caller) __attribute__((noreturn));

static void helper(int sock, pid_t caller)
{
	char pid[24], path[64];
	int userns = -1;

	snprintf(pid, sizeof(pid), "%d", (int)caller);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != caller)
		_exit(1);
	for (;;) {
		union { char buf[CMSG_SPACE(MAX_FDS * sizeof(int))]; struct cmsghdr align; } u;
		char op = 0;
		struct iovec io = { &op, 1 };
		struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1,
		                    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		struct reply r = { 0, "" };
		ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);

		if (n <= 0)
			_exit(n == 0 ? 0 : 1);
		if (op == 'm' && write_maps(pid, 0, SANDBOX_ROOT_ID, 0, SANDBOX_ROOT_ID, &r) == 0) {
			snprintf(path, sizeof(path), "/proc/%s/ns/user", pid);
			userns = open(path, O_RDONLY | O_CLOEXEC);
			if (userns < 0) {
				r.err = errno;
				snprintf(r.what, sizeof(r.what), "cannot open %s", path);
			}
		} else if (op == 'i') {
			idmap_all(&m, userns, &r);
		}
		if (write(sock, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(1);
	}
}

int sandbox_ids_start(struct sandbox_ids *ids, char *err, size_t errlen)
{
	int sv[2];
	pid_t caller = getpid();

	ids->uid = geteuid();
	ids->gid = getegid();
	ids->helper = ids->uid == 0;
	ids->pid = 0;
	ids->sock = -1;
	if (!ids->helper)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return fail(err, errlen, "socketpair", errno);
	fflush(NULL);
	ids->pid = fork();
	if (ids->pid < 0) {
		int saved = errno;

		close(sv[0]);
		close(sv[1]);
		return fail(err, errlen, "fork of the id helper", saved);
	}
	if (ids->pid == 0) {
		close(sv[0]);
		helper(sv[1], caller);
	}
	close(sv[1]);
	ids->sock = sv[0];
	return 0;
}

/* Send op (with fds) and read the helper's reply. */
static int ask(struct sandbox_ids *ids, char op, const int *fds, size_t n,
               char *err, size_t errlen)
{
	union { char buf[CMSG_SPACE(MAX_FDS * sizeof(int))]; struct cmsghdr align; } u;
	struct iovec io = { &op, 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1 };
	struct reply r;
	ssize_t got;

	if (n) {
		struct cmsghdr *c;

		memset(u.buf, 0, sizeof(u.buf));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	if (sendmsg(ids->sock, &m, MSG_NOSIGNAL) != 1)
		return fail(err, errlen, "cannot reach the id helper", errno);
	do
		got = read(ids->sock, &r, sizeof(r));
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(r))
		return fail(err, errlen, "the id helper did not answer", got < 0 ? errno : EPIPE);
	if (r.err) {
		r.what[sizeof(r.what) - 1] = '\0';
		return fail(err, errlen, r.what, r.err);
	}
	return 0;
}

int sandbox_ids_map(struct sandbox_ids *ids, char *err, size_t errlen)
{
	struct reply r = { 0, "" };

	if (ids->helper)
		return ask(ids, 'm', NULL, 0, err, errlen);
	if (write_maps("self", (unsigned)ids->uid, (unsigned)ids->uid,
	               (unsigned)ids->gid, (unsigned)ids->gid, &r) < 0)
		return fail(err, errlen, r.what, r.err);
	return 0;
}

int sandbox_ids_idmap(struct sandbox_ids *ids, const int *fds, size_t n,
                      char *err, size_t errlen)
{
	if (!ids->helper)
		return 0;
	for (size_t i = 0; i < n; i += MAX_FDS)
		if (ask(ids, 'i', fds + i, n - i < MAX_FDS ? n - i : MAX_FDS, err, errlen) < 0)
			return -1;
	return 0;
}

int sandbox_ids_become(const struct sandbox_ids *ids, char *err, size_t errlen)
{
	if (!ids->helper)
		return 0;
	if (setresgid(0, 0, 0) < 0)
		return fail(err, errlen, "setresgid", errno);
	if (setresuid(0, 0, 0) < 0)
		return fail(err, errlen, "setresuid", errno);
	/* Changing ids made the process undumpable: its /proc files would
	 * belong to host root, out of the sandbox's reach. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_DUMPABLE)", errno);
	return 0;
}

void sandbox_ids_end(struct sandbox_ids *ids)
{
	if (ids->sock >= 0) {
		close(ids->sock);
		ids->sock = -1;
	}
	if (ids->pid > 0) {
		while (waitpid(ids->pid, NULL, 0) < 0 && errno == EINTR)
			;
		ids->pid = 0;
	}
}
