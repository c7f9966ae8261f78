/*
 * checkd.c - the warm type checker's daemon, and the two doors to it.
 *
 * Invariants:
 * - The daemon MUST hold NAME.lock (flock'ed by its spawner before the
 *   fork) for as long as it lives, so a second one never starts; the
 *   socket is bound only under that lock, so a stale one may be unlinked.
 * - It lives in the store directory (ours, 0700 or 0755) with mode 0600,
 *   so whoever connects is us; the worker reads its answers as a
 *   checker's output, as hostile.
 * - It never outlives the warm server: once WARM_LOCK is free, it exits.
 * - One cell at a time: a second caller waits in the listen queue, under
 *   its own deadline.
 * - Its checker runs in its own process group that dies with it; its work
 *   directory is removed however the daemon exits but SIGKILL.
 */
#include "checkd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "proc_child.h"
#include "warm_proto.h"
#include "wire.h"

#define MAX_ARGS 256
#define MAX_ENV 64

void checkd_name(const char *const *parts, size_t n, char *buf, size_t len)
{
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		for (const char *p = parts[i] ? parts[i] : ""; *p; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ull;
		h = (h ^ 0xffu) * 1099511628211ull;     /* a separator no text has */
	}
	snprintf(buf, len, ".checkd-%016llx", (unsigned long long)h);
}

/* "/proc/self/fd/DIRFD/NAME.sock" into a. */
static int sock_addr(int dirfd, const char *name, struct sockaddr_un *a)
{
	int w;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	w = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s.sock", dirfd, name);
	if (w < 0 || (size_t)w >= sizeof(a->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int connect_to(int dirfd, const char *name)
{
	struct sockaddr_un a;
	int fd;

	if (sock_addr(dirfd, name, &a) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The store directory's warm server runs (or is starting): it holds WARM_LOCK. */
static bool server_alive(int dirfd)
{
	int fd = openat(dirfd, WARM_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool alive;

	if (fd < 0)
		return false;
	alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

/* ---- the client: start a daemon, evict one ---- */

/* Tell the least recently used daemon to go when CHECKD_MAX run. */
static void evict(int dirfd)
{
	char oldest[NAME_MAX + 1] = "";
	struct timespec when = { 0, 0 };
	size_t n = 0;
	DIR *d = fd_opendir_at(dirfd, ".", 0);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;

		if (strncmp(e->d_name, ".checkd-", 8) != 0 || len < 5 ||
		    strcmp(e->d_name + len - 5, ".sock") != 0 ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		n++;
		if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
		    (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec)) {
			when = st.st_mtim;
			snprintf(oldest, sizeof(oldest), "%.*s", (int)(len - 5), e->d_name);
		}
	}
	closedir(d);
	if (n >= CHECKD_MAX && oldest[0]) {
		int s = connect_to(dirfd, oldest);

		if (s >= 0) {
			wire_send(s, WIRE_CHECKD_QUIT, 0, 0, NULL, 0, NULL, 0);
			close(s);
		} else if (errno == ECONNREFUSED) {
			unlinkat(dirfd, oldest, 0);   /* a dead one's socket */
		}
	}
}

static __attribute__((noreturn)) void exec_daemon(int dir_copy, int lock_copy,
                                                  const char *name)
{
	char *argv[] = { CHECKD_ARGV0, (char *)name, NULL };
	sigset_t none;

	sigemptyset(&none);
	proc_child_reset_signals(&none);
	if (proc_child_null_stdio() < 0 || setsid() < 0 || dup2(dir_copy, CHECKD_DIR_FD) < 0 ||
	    dup2(lock_copy, CHECKD_LOCK_FD) < 0)
		_exit(127);
	proc_child_close_fds((int[]){ CHECKD_DIR_FD, CHECKD_LOCK_FD }, 2);
	execve("/proc/self/exe", argv, environ);
	_exit(127);
}

int checkd_ensure(int dirfd, const char *name)
{
	char lockname[CHECKD_NAME_MAX + 8];
	int fd, lock, dir_copy = -1, lock_copy = -1, ret = -1, reaper = 0, e;
	pid_t pid;

	fd = connect_to(dirfd, name);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (!server_alive(dirfd))
		return 0;       /* the daemon would exit at once: next call */
	snprintf(lockname, sizeof(lockname), "%s.lock", name);
	lock = openat(dirfd, lockname, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0)
		return -1;
	if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		e = errno;
		close(lock);
		errno = e;
		return e == EWOULDBLOCK ? 0 : -1;   /* one runs, or is starting */
	}
	evict(dirfd);
	/* Copies above the fixed numbers, so placing one cannot overwrite the
	 * other; dup2 also clears close-on-exec. */
	dir_copy = fcntl(dirfd, F_DUPFD_CLOEXEC, CHECKD_LOCK_FD + 1);
	lock_copy = fcntl(lock, F_DUPFD_CLOEXEC, CHECKD_LOCK_FD + 1);
	if (dir_copy < 0 || lock_copy < 0)
		goto out;
	/* Not ours to reap, nor to kill as a descendant: orphaned at once, it
	 * goes to init (or whoever reaps orphans above us), not to us. */
	prctl(PR_GET_CHILD_SUBREAPER, &reaper);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (fork() == 0)
			exec_daemon(dir_copy, lock_copy, name);
		_exit(0);
	}
	if (pid > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		ret = 0;
	}
	e = errno;
	prctl(PR_SET_CHILD_SUBREAPER, reaper);
	errno = e;
out:
	e = errno;
	if (dir_copy >= 0)
		close(dir_copy);
	if (lock_copy >= 0)
		close(lock_copy);
	close(lock);
	errno = e;
	return ret;
}

/* ---- the worker: ask ---- */

static int put_list(uint8_t *buf, size_t *len, const char *key, const char *const *v)
{
	for (; v && *v; v++)
		if (wire_put(buf, len, key, *v) < 0)
			return -1;
	return 0;
}

/* The whole of a memfd, NUL-terminated, at most cap bytes. */
static char *read_memfd(int fd, size_t cap, size_t *len)
{
	uint8_t *p = NULL;
	char *s;

	if (lseek(fd, 0, SEEK_SET) < 0 || fd_read_all(fd, 4096, &p, len) < 0)
		return NULL;
	if (*len > cap)
		*len = cap;
	s = realloc(p, *len + 1);
	if (!s) {
		free(p);
		return NULL;
	}
	s[*len] = '\0';
	return s;
}

int checkd_ask(const char *path, const struct checkd_drv_spec *spec, const char *text,
               size_t len, const struct timespec *deadline, struct typegate_run *r)
{
	uint8_t *payload = NULL;
	struct wire_msg m = { 0 };
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	size_t plen = 0;
	int dirfd = -1, sock = -1, mfd = -1, ret = 0, got;
	double t0 = deadline_now(), left = deadline_left(deadline);

	memset(r, 0, sizeof(*r));
	if (!slash || (size_t)(slash - path) >= sizeof(dir) || left <= 0)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	payload = malloc(WIRE_MAX_PAYLOAD);
	if (!payload)
		return 0;
	if (wire_put(payload, &plen, "kind", spec->kind) < 0 ||
	    wire_put(payload, &plen, "bin", spec->bin) < 0 ||
	    wire_put(payload, &plen, "python", spec->python) < 0 ||
	    wire_put(payload, &plen, "config", spec->config ? spec->config : "") < 0 ||
	    put_list(payload, &plen, "arg", spec->args) < 0 ||
	    put_list(payload, &plen, "env", spec->env) < 0)
		goto out;
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 || (sock = connect_to(dirfd, slash + 1)) < 0)
		goto out;
	mfd = memfd_create("dolsot-cell", MFD_CLOEXEC);
	if (mfd < 0 || fd_write_all(mfd, text, len) < 0 ||
	    wire_send(sock, WIRE_CHECK, (uint64_t)(left * 1e9), 0, payload, plen, &mfd, 1) < 0)
		goto out;
	fd_close(&mfd);
	/* The daemon keeps the deadline; we keep it too, should it hang. */
	for (;;) {
		struct pollfd p = { sock, POLLIN, 0 };

		left = deadline_left(deadline);
		if (left <= 0) {
			r->status = TYPEGATE_RUN_TIMEOUT;
			ret = 1;
			goto out;
		}
		got = poll(&p, 1, deadline_poll_ms(left));
		if (got < 0 && errno != EINTR)
			goto out;
		if (got > 0)
			break;
	}
	if (wire_recv(sock, &m) != 1 || m.type != WIRE_CHECKED)
		goto out;
	if (m.a == CHECKD_LATE) {
		r->status = TYPEGATE_RUN_TIMEOUT;
		ret = 1;
	} else if (m.a == CHECKD_ANSWERED && m.nfds == 1 && m.b <= 255) {
		r->out = read_memfd(m.fds[0], 64u << 20, &r->out_len);
		r->err = calloc(1, 1);
		if (r->out && r->err) {
			r->status = TYPEGATE_RUN_EXITED;
			r->code = (int)m.b;
			ret = 1;
		} else {
			typegate_run_release(r);
		}
	}
out:
	wire_msg_release(&m);
	free(payload);
	r->seconds = deadline_now() - t0;
	if (mfd >= 0)
		close(mfd);
	if (sock >= 0)
		close(sock);
	if (dirfd >= 0)
		close(dirfd);
	return ret;
}

/* ---- the daemon ---- */

static struct {
	int dirfd, listen, sig;
	char name[CHECKD_NAME_MAX];
	char work[PATH_MAX];
	struct checkd_drv *drv;
	uint8_t spec[WIRE_MAX_PAYLOAD];     /* the payload drv was started for */
	size_t spec_len;
	long max_kib;
	ino_t sock_ino;
} D = { .dirfd = CHECKD_DIR_FD, .listen = -1, .sig = -1 };

/* Remove the work directory: the files we and the checker put there, and
 * whatever the checker made one level down. */
static void remove_tree(int parent, const char *path, int depth)
{
	DIR *d = fd_opendir_at(parent, path, O_NOFOLLOW);
	struct dirent *e;
	int fd;

	if (!d)
		return;
	fd = dirfd(d);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(fd, e->d_name, 0) < 0 && errno == EISDIR && depth > 0)
			remove_tree(fd, e->d_name, depth - 1);
	}
	closedir(d);
	unlinkat(parent, path, AT_REMOVEDIR);
}

static __attribute__((noreturn)) void quit(int code)
{
	struct sockaddr_un a;
	struct stat st;

	checkd_drv_stop(D.drv);
	D.drv = NULL;
	/* Only our own socket: a successor may have bound the name since. */
	if (sock_addr(D.dirfd, D.name, &a) == 0 && D.sock_ino &&
	    stat(a.sun_path, &st) == 0 && st.st_ino == D.sock_ino)
		unlink(a.sun_path);
	if (D.work[0])
		remove_tree(AT_FDCWD, D.work, 2);
	_exit(code);
}

static void setup(void)
{
	struct sockaddr_un a;
	struct stat st;
	sigset_t mask;
	const char *tmp = getenv("TMPDIR"), *mb = getenv("DOLSOT_CHECKER_MAX_MB");
	char *end;
	long v;

	prctl(PR_SET_NAME, "dolsot-checkd");
	/* The store directory may be 0755: the socket bound in it must still
	 * take no connection from another user. */
	umask(077);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	D.sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	v = mb ? strtol(mb, &end, 10) : CHECKD_MAX_MB;
	if (!mb || *end || v < 1 || v > 1L << 30)
		v = CHECKD_MAX_MB;
	D.max_kib = v * 1024;
	snprintf(D.work, sizeof(D.work), "%s/dolsot-checkd-XXXXXX",
	         tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(D.work)) {
		D.work[0] = '\0';
		quit(1);
	}
	D.listen = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (D.sig < 0 || D.listen < 0 || sock_addr(D.dirfd, D.name, &a) < 0)
		quit(1);
	unlink(a.sun_path);     /* a dead daemon's: we hold the lock */
	if (bind(D.listen, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(D.listen, 16) < 0 ||
	    stat(a.sun_path, &st) < 0)
		quit(1);
	D.sock_ino = st.st_ino;
}

/* The strings of a WIRE_CHECK payload as a spec; arrays are static. */
static int spec_of(const struct wire_msg *m, struct checkd_drv_spec *s)
{
	static const char *args[MAX_ARGS + 1], *env[MAX_ENV + 1];
	size_t pos = 0, n = 0;
	const char *v;

	memset(s, 0, sizeof(*s));
	s->kind = wire_next(m->payload, m->len, "kind", &pos);
	pos = 0;
	s->bin = wire_next(m->payload, m->len, "bin", &pos);
	pos = 0;
	s->python = wire_next(m->payload, m->len, "python", &pos);
	pos = 0;
	s->config = wire_next(m->payload, m->len, "config", &pos);
	for (pos = 0; (v = wire_next(m->payload, m->len, "arg", &pos)) && n < MAX_ARGS;)
		args[n++] = v;
	args[n] = NULL;
	for (pos = 0, n = 0; (v = wire_next(m->payload, m->len, "env", &pos)) && n < MAX_ENV;)
		env[n++] = v;
	env[n] = NULL;
	s->args = args;
	s->env = env;
	return s->kind && s->bin && s->python ? 0 : -1;
}

static void answer(int client, enum checkd_status st, int code, const char *out,
                   size_t len)
{
	int mfd = -1;

	if (st == CHECKD_ANSWERED) {
		mfd = memfd_create("dolsot-checked", MFD_CLOEXEC);
		if (mfd < 0 || fd_write_all(mfd, out, len) < 0)
			st = CHECKD_UNAVAILABLE;
	}
	wire_send(client, WIRE_CHECKED, st, (uint64_t)code, NULL, 0, &mfd,
	          st == CHECKD_ANSWERED ? 1 : 0);
	if (mfd >= 0)
		close(mfd);
}

static void stop_drv(void)
{
	checkd_drv_stop(D.drv);
	D.drv = NULL;
}

/* Start the checker for the spec in m, unless the one running is it. */
static int start_drv(const struct wire_msg *m)
{
	struct checkd_drv_spec s;
	char err[512];

	if (D.drv && D.spec_len == m->len &&
	    (m->len == 0 || memcmp(D.spec, m->payload, m->len) == 0))
		return 0;
	stop_drv();
	if (spec_of(m, &s) < 0)
		return -1;
	D.drv = checkd_drv_start(&s, D.work, err, sizeof(err));
	if (!D.drv)
		return -1;
	if (m->len)
		memcpy(D.spec, m->payload, m->len);
	D.spec_len = m->len;
	return 0;
}

static void check(int client, const struct wire_msg *m)
{
	struct timespec deadline;
	uint8_t *text = NULL;
	size_t len = 0, out_len;
	char *out;
	int code;
	enum checkd_drv_result r;

	deadline_in_ns(&deadline, m->a);
	if (m->nfds != 1 || lseek(m->fds[0], 0, SEEK_SET) < 0 ||
	    fd_read_all(m->fds[0], 4096, &text, &len) < 0 || start_drv(m) < 0) {
		free(text);
		answer(client, CHECKD_UNAVAILABLE, 0, NULL, 0);
		return;
	}
	r = checkd_drv_check(D.drv, text ? (const char *)text : "", len, &deadline, &code, &out,
	                     &out_len);
	free(text);
	answer(client, r == CHECKD_DRV_OK ? CHECKD_ANSWERED
	               : r == CHECKD_DRV_TIMEOUT ? CHECKD_LATE : CHECKD_UNAVAILABLE,
	       code, out, out_len);
	free(out);
	/* A checker that misbehaved, or grew too big, is replaced now, so the
	 * next cell finds a fresh one warming up. */
	if (r != CHECKD_DRV_OK || checkd_drv_rss_kib(D.drv) > D.max_kib) {
		/* The spec read from a copy: m's payload is the caller's. */
		struct wire_msg copy = { .len = m->len };

		stop_drv();
		copy.payload = m->len ? malloc(m->len) : NULL;
		if (!m->len || copy.payload) {
			if (m->len)
				memcpy(copy.payload, m->payload, m->len);
			start_drv(&copy);
		}
		free(copy.payload);
	}
}

/* Serve one connection: a check or a quit. */
static void serve_one(void)
{
	struct wire_msg m = { 0 };
	struct pollfd p;
	int client = accept4(D.listen, NULL, NULL, SOCK_CLOEXEC);

	if (client < 0)
		return;
	p = (struct pollfd){ client, POLLIN, 0 };
	/* A message arrives whole right after connect; one that does not is
	 * not worth waiting for. */
	if (poll(&p, 1, 1000) == 1 && wire_recv(client, &m) == 1) {
		if (m.type == WIRE_CHECKD_QUIT) {
			close(client);
			quit(0);
		}
		if (m.type == WIRE_CHECK) {
			struct sockaddr_un a;

			/* The socket's mtime says when it was last used (eviction). */
			if (sock_addr(D.dirfd, D.name, &a) == 0)
				utimensat(AT_FDCWD, a.sun_path, NULL, AT_SYMLINK_NOFOLLOW);
			check(client, &m);
		}
	}
	wire_msg_release(&m);
	close(client);
}

void checkd_main(int argc, char **argv)
{
	double last = deadline_now(), checked = 0;

	if (argc < 2 || strlen(argv[1]) >= sizeof(D.name) || strncmp(argv[1], ".checkd-", 8) != 0)
		_exit(2);
	snprintf(D.name, sizeof(D.name), "%s", argv[1]);
	setup();
	for (;;) {
		struct pollfd p[4];
		int n = 2, got;
		double now;

		p[0] = (struct pollfd){ D.listen, POLLIN, 0 };
		p[1] = (struct pollfd){ D.sig, POLLIN, 0 };
		if (D.drv)
			n += checkd_drv_fds(D.drv, p + 2);
		got = poll(p, (nfds_t)n, 1000);
		if (got < 0 && errno != EINTR)
			quit(1);
		if (got > 0 && p[1].revents)
			quit(0);
		if (got > 0 && n > 2 && (p[2].revents || (n > 3 && p[3].revents)) &&
		    !checkd_drv_idle(D.drv))
			stop_drv();     /* it died between cells: the next one restarts it */
		if (got > 0 && p[0].revents) {
			serve_one();
			last = deadline_now();
		}
		now = deadline_now();
		if (now - last > CHECKD_IDLE)
			quit(0);
		if (now - checked >= 1) {
			checked = now;
			if (!server_alive(D.dirfd))
				quit(0);
		}
	}
}
