/*
 * warm.c - hand one call to the store's server instead of forking cold.
 *
 * The client keeps everything that makes a call safe: it holds the session
 * lock, opens and commits the session's files, owns the pipes the cell
 * writes to and enforces its own deadline.  The server only supplies a process forked
 * from a warm interpreter.  Until the worker says WIRE_STARTED nothing has
 * run, so any failure before it falls back to the cold path; after it, a
 * failure is reported rather than the cell run twice.
 */
#include "warm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "hosttools.h"
#include "proc.h"
#include "proc_child.h"
#include "warm_proto.h"
#include "wire.h"

extern char **environ;

/* Seconds the client waits past its deadline for the server's verdict
 * (the README's grace, with PROC_KILL_WAIT and WARM_DRAIN_MS). */
#define GRACE 2.0
/* Once the verdict is in, each read of the cell's pipes waits this long
 * (ms), or the shorter time when a process of the cell was left behind or
 * we ended the worker ourselves (what still holds a pipe may never close
 * it). */
#define WARM_DRAIN_MS 1000
#define WARM_DRAIN_SHORT_MS 250
/* How long a call waits for its worker to say it can start: this share of
 * its budget, at most WARM_START_MAX seconds.  A server or zygote that
 * has not answered by then is stuck (stopped, frozen, overloaded): the
 * call gives up on it and runs cold, which it may, since nothing ran. */
#define WARM_START_SHARE 0.25
#define WARM_START_MAX 2.0
/* How long a request that is not a call (status, stop, a readiness
 * probe) waits for the server's answer, in seconds. */
#define WARM_ASK_SECONDS 5.0
/* A server that holds its lock but does not listen yet is starting: try
 * to connect this often, this many times. */
#define WARM_CONNECT_RETRY_US 10000
#define WARM_CONNECT_RETRIES 300
/* warm_ensure_server: how long a server just started gets to listen. */
#define WARM_LISTEN_RETRIES 500
/* warm_wait_ready: the pause between asking whether the zygote is ready. */
#define WARM_READY_POLL_US 20000
/* warm_stop: how long to wait for the server's answer to end, and for its
 * process to be gone (it closes its connection as its exit begins). */
#define WARM_LINGER_MS 10000
#define WARM_STOP_WAIT 5.0
#define WARM_EXIT_POLL_NS 2000000

static bool volatile_var(const char *entry)
{
	static const char *const names[] = { "_=", "OLDPWD=", "SHLVL=", "PWD=" };

	if (strncmp(entry, "DOLSOT_", 7) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (strncmp(entry, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The environment's entries (entries, a NUL-separated block, or ours when
 * NULL) into k, sorted. */
static int key_environment(struct warm_key *k, const char *entries, size_t entries_len)
{
	size_t n = 0, kept = 0;
	const char **sorted;

	if (entries)
		for (size_t off = 0; off < entries_len; off += strlen(entries + off) + 1)
			n++;
	else
		while (environ[n])
			n++;
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return -1;
	for (size_t i = 0, off = 0; i < n; i++) {
		const char *e = entries ? entries + off : environ[i];

		if (entries)
			off += strlen(e) + 1;
		if (!volatile_var(e))
			sorted[kept++] = e;
	}
	qsort(sorted, kept, sizeof(*sorted), compare_entries);
	k->n_env = kept < WARM_KEY_ENV ? kept : WARM_KEY_ENV;
	memcpy(k->env, sorted, k->n_env * sizeof(*sorted));
	free(sorted);
	return 0;
}

/* The WIRE_CALL payload for w, the key that selects the zygote: malloc'd
 * (the caller frees it), *len bytes; NULL with errno set. */
static uint8_t *key_payload(const struct warm_want *w, size_t *len)
{
	/* On the heap: the key is 34 KB of pointers, and cwd outlives it here. */
	struct key_parts {
		struct warm_key k;
		char cwd[PATH_MAX];
	} *t = calloc(1, sizeof(*t));
	uint8_t *buf = malloc(WIRE_MAX_PAYLOAD);
	const char *pp = getenv("PYTHONPATH"), *venv = getenv("VIRTUAL_ENV");
	int rc = -1;

	*len = 0;
	if (!t || !buf) {
		errno = ENOMEM;
		goto out;
	}
	if (!getcwd(t->cwd, sizeof(t->cwd)))
		goto out;
	if (w->n_toolboxes > WARM_KEY_MODULES || w->n_preload > WARM_KEY_PRELOAD) {
		errno = E2BIG;
		goto out;
	}
	t->k.cwd = t->cwd;
	t->k.pythonpath = pp ? pp : "";
	t->k.venv = venv ? venv : "";
	for (size_t i = 0; i < w->n_toolboxes; i++)
		t->k.modules[t->k.n_modules++] = w->toolboxes[i].module;
	for (size_t i = 0; i < w->n_preload; i++)
		t->k.preload[t->k.n_preload++] = w->preload[i];
	/* Modules read the environment when imported (TZ, settings, keys), so a
	 * zygote is warmed with the caller's own: all of it but dolsot's
	 * variables and what shells change from one command to the next,
	 * sorted, since wrappers reorder the same variables.  (A sandboxed
	 * call's zygote gets the sandbox's environment instead.) */
	if (key_environment(&t->k, w->env, w->env_len) < 0) {
		errno = ENOMEM;
		goto out;
	}
	rc = warm_key_encode(&t->k, buf, len);
	if (rc < 0)
		errno = E2BIG;
out:
	free(t);
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct call {
	int sock, res, sig, pidfd;
	pid_t worker;               /* from WIRE_STARTED; 0 before */
	struct proc_pipe out, err;
	bool started, done, killed;
	struct call_outcome *o;
	const struct cell_watch *watch;
	struct host_tools *tools;
	int chan[2];                /* the host-call channel: ours, the worker's */
};

static int send_call(struct call *c, const uint8_t *request, size_t len,
                     const struct worker_fds *session, const struct timespec *deadline,
                     const struct warm_want *key)
{
	size_t plen;
	uint8_t *payload = key_payload(key, &plen);
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, req = -1, fds[6];
	int ret = -1;

	if (!payload)
		return -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    (req = memfd_create("dolsot-request", MFD_CLOEXEC)) < 0 ||
	    (c->res = memfd_create("dolsot-result", MFD_CLOEXEC)) < 0)
		goto out;
	if (fd_write_all(req, request, len) < 0)
		goto out;
	fds[0] = req;
	fds[1] = c->res;
	fds[2] = outp[1];
	fds[3] = errp[1];
	fds[4] = session->save;
	fds[5] = session->load;
	/* The budget is what is left of ours, so the zygote's deadline and
	 * ours are the same moment; with host tools, ours moves on while the
	 * cell waits on the host (hosttools.h), which the zygote never sees:
	 * we enforce it, and its deadline is only a backstop.  The socket
	 * does not block: a server whose queue is full is a stuck one. */
	if (wire_send(c->sock, WIRE_CALL, (uint64_t)deadline_ns_left(deadline) +
	              (c->tools ? (uint64_t)(c->tools->wait_max * 1e9) : 0),
	              warm_proto_exe_id(), payload, plen, fds, session->load >= 0 ? 6 : 5) < 0)
		goto out;
	c->out.fd = outp[0];
	c->err.fd = errp[0];
	outp[0] = errp[0] = -1;
	fcntl(c->out.fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err.fd, F_SETFL, O_NONBLOCK);
	ret = 0;
out:
	fd_close(&outp[0]);
	fd_close(&outp[1]);
	fd_close(&errp[0]);
	fd_close(&errp[1]);
	fd_close(&req);
	free(payload);
	return ret;
}

/* The worker is ready: hold it by a pidfd (it waits for us, so it is
 * alive and its pid is its own), then let it run the cell. */
static bool on_started(struct call *c, uint64_t pid)
{
	if (pid > 0 && pid < (uint64_t)INT_MAX) {
		c->worker = (pid_t)pid;
		c->pidfd = (int)syscall(SYS_pidfd_open, c->worker, 0);
	}
	/* Before the go: a watcher that hears nothing more knows no cell ran. */
	cell_watch_tell(c->watch, c->pidfd);
	if (wire_send(c->sock, WIRE_GO, 0, 0, NULL, 0, &c->chan[1], c->chan[1] >= 0) < 0)
		return false;   /* it is gone, and ran nothing */
	fd_close(&c->chan[1]);
	c->started = true;
	return true;
}

/* One message from the server or worker or zygote; returns false at end of
 * stream or when the call cannot go on this way. */
static bool on_message(struct call *c)
{
	struct wire_msg m;
	int got = wire_recv(c->sock, &m);

	if (got < 0 && errno == EAGAIN)
		return true;
	if (got <= 0)
		return false;
	if (m.type == WIRE_STATUS && m.len) {
		size_t pos = 0, at = 0;
		const char *ended = wire_next(m.payload, m.len, WARM_LIVE_ENDED, &at);

		c->o->rolled_back = wire_next(m.payload, m.len, WARM_ROLLED_BACK, &pos) != NULL;
		if (ended)
			snprintf(c->o->live_ended, sizeof(c->o->live_ended), "%s", ended);
	}
	wire_msg_release(&m);   /* what matters is in the header */
	switch (m.type) {
	case WIRE_STARTED:
		return !c->started && on_started(c, m.a);
	case WIRE_STATUS:
		c->o->status = (int)m.a;
		c->o->timed_out = (m.b & 1) != 0;
		c->o->left_behind = (size_t)(m.b >> 1);
		c->done = true;
		break;
	default:
		return false;   /* WIRE_FALLBACK, or garbage from a broken server */
	}
	return true;
}

static void on_signals(struct call *c)
{
	struct signalfd_siginfo si;

	while (read(c->sig, &si, sizeof(si)) == (ssize_t)sizeof(si))
		c->o->signal = (int)si.ssi_signo;
}

/* The zygote did not end the cell in time (it is stuck): end it here. */
static void kill_worker(struct call *c)
{
	if (c->pidfd >= 0 && syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0) == 0)
		kill(-c->worker, SIGKILL);   /* its group, named after it while it lives */
}

/* Wait for the verdict while reading the cell's output: until the worker
 * says it can start for at most start_by, then until the deadline plus
 * GRACE. */
static enum call_status supervise(struct call *c, const struct timespec *deadline,
                                  const struct timespec *start_by)
{
	struct proc_pipe *pipes = &c->out;   /* out, err */

	while (!c->done && !c->o->signal) {
		struct pollfd p[3] = { { c->sock, POLLIN, 0 }, { c->sig, POLLIN, 0 },
		                       { c->chan[0], POLLIN, 0 } };
		struct timespec cell;   /* the deadline, past the host's waits */
		double left;

		host_tools_deadline(c->tools, deadline, &cell);
		/* With host tools the deadline is ours to enforce (send_call). */
		left = deadline_left(&cell) + (c->tools ? 0 : GRACE);
		if (!c->started && deadline_left(start_by) < left)
			left = deadline_left(start_by);
		if (left <= 0 && !c->started)
			return CALL_FALLBACK;   /* closing the socket stops the worker */
		if (left <= 0) {
			/* The server did not enforce the deadline (or, with host
			 * tools, it was ours): end the cell here. */
			kill_worker(c);
			c->killed = true;
			c->o->timed_out = true;
			return CALL_DONE;
		}
		if (proc_poll(pipes, 2, p, c->chan[0] >= 0 ? 3 : 2,
		              capture_tap_wait(pipes[0].ctx, deadline_poll_ms(left))) < 0)
			return CALL_BROKEN;
		capture_tap_tick(pipes[0].ctx);
		if (c->chan[0] >= 0 && p[2].revents &&
		    host_tools_serve(c->tools, c->chan[0], deadline) == 0)
			fd_close(&c->chan[0]);
		if (p[1].revents)
			on_signals(c);
		if (p[0].revents && !on_message(c))
			return c->started ? CALL_BROKEN : CALL_FALLBACK;
	}
	return CALL_DONE;
}

enum call_status warm_run(int dirfd, const uint8_t *request, size_t request_len,
                          const struct worker_fds *session,
                          const struct timespec *deadline, double budget,
                          const struct warm_want *key, const struct cell_watch *watch,
                          struct host_tools *tools, struct capture *out,
                          struct capture *errc,
                          struct call_outcome *o, char *err, size_t errlen)
{
	struct call c = { .sock = -1, .res = -1, .sig = -1, .pidfd = -1, .o = o, .watch = watch,
	                  .out = { -1, proc_feed_capture, out },
	                  .err = { -1, proc_feed_capture, errc }, .tools = tools,
	                  .chan = { -1, -1 } };
	enum call_status st = CALL_FALLBACK;
	struct timespec start_by;
	sigset_t mask, oldmask;

	memset(o, 0, sizeof(*o));
	c.sock = warm_proto_connect_nonblock(dirfd);
	if (c.sock < 0)
		/* A full queue is a server that does not accept: stuck. */
		return errno == EAGAIN ? CALL_FALLBACK : CALL_NO_SERVER;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	c.sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c.sig < 0 || send_call(&c, request, request_len, session, deadline, key) < 0)
		goto out;
	if (tools && host_tools_channel(tools, c.chan, err, errlen) < 0)
		goto out;   /* nothing ran: the cold path tries */
	/* Counted from the send: our own slowness (valgrind, say) is not the
	 * server's. */
	deadline_in(&start_by, budget * WARM_START_SHARE < WARM_START_MAX
	                       ? budget * WARM_START_SHARE : WARM_START_MAX);
	st = supervise(&c, deadline, &start_by);
	if (st == CALL_BROKEN)
		snprintf(err, errlen, "dolsot: the warm server failed during the call, after "
		         "the cell may have started; session unchanged (DOLSOT_SERVER=off "
		         "avoids the server)");
	if (st != CALL_DONE)
		goto out;
	fd_close(&c.sock);   /* if the cell still runs, this makes the zygote kill it */
	/* After the verdict every writer is gone: read the pipes to the end. */
	proc_drain(&c.out, c.killed || o->left_behind ? WARM_DRAIN_SHORT_MS : WARM_DRAIN_MS);
	proc_drain(&c.err, c.killed || o->left_behind ? WARM_DRAIN_SHORT_MS : WARM_DRAIN_MS);
	/* A timed-out cell's file holds what the session held (RES_PROVISIONAL). */
	if (!o->signal && proc_map(c.res, &o->result, &o->result_len) < 0) {
		snprintf(err, errlen, "dolsot: cannot read the worker's result: %s",
		         strerror(errno));
		st = CALL_BROKEN;
	}
out:
	fd_close(&c.sock);
	fd_close(&c.out.fd);
	fd_close(&c.err.fd);
	fd_close(&c.res);
	fd_close(&c.sig);
	fd_close(&c.pidfd);
	fd_close(&c.chan[0]);
	fd_close(&c.chan[1]);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return st;
}

/* In the child: become the server, with fds 0-2 on /dev/null (the
 * caller's pipes must see their end when we exit, not when it does). */
static __attribute__((noreturn)) void exec_server(int dir_copy, int key_copy,
                                                  int lock_copy, char *const argv[])
{
	sigset_t none;

	sigemptyset(&none);
	proc_child_reset_signals(&none);
	if (proc_child_null_stdio() < 0 || setsid() < 0 || dup2(dir_copy, WARM_DIR_FD) < 0 ||
	    dup2(key_copy, WARM_KEY_FD) < 0 || dup2(lock_copy, WARM_LOCK_FD) < 0)
		_exit(127);
	execve("/proc/self/exe", argv, environ);
	_exit(127);
}

/*
 * The server is a fresh exec of ourselves as "dolsot-server", in a new
 * session, not waited for: it gets a clean address space and command line
 * (ps would otherwise show the code of the call that started it for as
 * long as it lives), and the call that starts it does not pay for it: a
 * plain fork, not posix_spawn, whose vfork would hold us until the exec is
 * done (about 1 ms of a first call).  The store directory goes on fd 3, a
 * memfd with the environment to warm first on fd 4, and the server lock,
 * already taken, on fd 5, so a second caller never starts a second server
 * and --server-stop never misses one that is still starting.
 */
int warm_spawn_server(int dirfd, double idle_seconds, const struct warm_want *key)
{
	char idle[64];
	char *argv[] = { WARM_ARGV0, idle, NULL };
	int lock = -1, memfd = -1, ret = -1;
	int dir_copy = -1, key_copy = -1, lock_copy = -1;
	size_t plen;
	uint8_t *prewarm;
	pid_t pid;

	/* Read-only: the server keeps it for its life (see server.c). */
	lock = openat(dirfd, WARM_LOCK, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0)
		return -1;
	if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		close(lock);
		return errno == EWOULDBLOCK ? 0 : -1;   /* one runs, or is starting */
	}
	prewarm = key_payload(key, &plen);
	if (!prewarm)
		goto out;
	memfd = memfd_create("dolsot-prewarm", MFD_CLOEXEC);
	if (memfd < 0 || fd_write_all(memfd, prewarm, plen) < 0)
		goto out;
	snprintf(idle, sizeof(idle), "%.17g", idle_seconds);
	/* We must not become the server's reaper, nor kill it as a descendant. */
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	/* Copies above the fixed numbers, so that placing one on its number
	 * cannot overwrite another; dup2 also clears close-on-exec. */
	dir_copy = fcntl(dirfd, F_DUPFD_CLOEXEC, WARM_LOCK_FD + 1);
	key_copy = fcntl(memfd, F_DUPFD_CLOEXEC, WARM_LOCK_FD + 1);
	lock_copy = fcntl(lock, F_DUPFD_CLOEXEC, WARM_LOCK_FD + 1);
	if (dir_copy < 0 || key_copy < 0 || lock_copy < 0)
		goto out;
	pid = fork();
	if (pid == 0)
		exec_server(dir_copy, key_copy, lock_copy, argv);
	if (pid > 0) {
		proc_spare(pid);
		ret = 0;
	}
out:
	fd_close(&dir_copy);
	fd_close(&key_copy);
	fd_close(&lock_copy);
	fd_close(&memfd);
	free(prewarm);
	close(lock);   /* the server holds the lock through its own copy */
	return ret;
}

static bool server_starting(int dirfd)
{
	int fd = openat(dirfd, WARM_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool held;

	if (fd < 0)
		return false;
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}


/* One message from fd within seconds into *m: 1, 0 at end of stream, -1
 * with errno set (ETIMEDOUT when none came in time). */
static int recv_within(int fd, struct wire_msg *m, double seconds)
{
	struct timespec until;

	deadline_in(&until, seconds);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		double left = deadline_left(&until);
		int got;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&p, 1, deadline_poll_ms(left)) < 0 && errno != EINTR)
			return -1;
		got = wire_recv(fd, m);
		if (got >= 0 || (errno != EAGAIN && errno != EINTR))
			return got;
	}
}

/* Send one request and wait for one answer of the given type, into *m
 * (the caller releases it; it is empty unless an answer came).  With
 * linger, wait after it until the server closes the connection.  No wait
 * is unbounded: a server that does not answer within seconds
 * (stopped, frozen) gives -1 with errno ETIMEDOUT. */
static int ask(int dirfd, uint16_t type, const void *payload, size_t len,
               uint16_t want, struct wire_msg *m, bool linger, double seconds)
{
	int fd = warm_proto_connect_nonblock(dirfd), got;

	memset(m, 0, sizeof(*m));

	/* A server that holds its lock but does not listen yet is starting. */
	for (int i = 0; fd < 0 && errno != EAGAIN && i < WARM_CONNECT_RETRIES &&
	                server_starting(dirfd); i++) {
		usleep(WARM_CONNECT_RETRY_US);
		fd = warm_proto_connect_nonblock(dirfd);
	}
	if (fd < 0 && errno == EAGAIN) {
		errno = ETIMEDOUT;   /* it listens but accepts nobody */
		return -1;
	}
	if (fd < 0)
		return 0;
	if (wire_send(fd, type, 0, warm_proto_exe_id(), payload, len, NULL, 0) < 0) {
		if (errno == EAGAIN)
			errno = ETIMEDOUT;
		close(fd);
		return -1;
	}
	got = recv_within(fd, m, seconds);
	if (got == 1)
		wire_close_fds(m);
	if (got == 1 && linger) {
		struct pollfd p = { fd, POLLIN, 0 };
		struct wire_msg rest;

		while (poll(&p, 1, WARM_LINGER_MS) > 0 && wire_recv(fd, &rest) > 0)
			wire_msg_release(&rest);
	}
	fd_close(&fd);
	if (got < 0)
		return -1;
	return got == 1 && m->type == want ? 1 : -1;
}

int warm_info(int dirfd, char *buf, size_t len, char *err, size_t errlen)
{
	struct wire_msg m;
	int got = ask(dirfd, WIRE_INFO_REQ, NULL, 0, WIRE_INFO, &m, false, WARM_ASK_SECONDS);

	if (got > 0)
		snprintf(buf, len, "%.*s", (int)m.len, m.len ? (const char *)m.payload : "");
	else if (got < 0)
		snprintf(err, errlen, "%s", strerror(errno));
	wire_msg_release(&m);
	return got;
}

/*
 * Wait up to seconds until pid has exited (gone, or a zombie nobody reaped
 * yet).  The server's connection closes as its exit begins, a moment
 * before the process is gone.
 */
static void wait_exited(pid_t pid, double seconds)
{
	struct timespec deadline, pause = { 0, WARM_EXIT_POLL_NS };

	deadline_in(&deadline, seconds);
	while (deadline_left(&deadline) > 0) {
		char state;

		if (proc_stat(pid, &state, NULL) < 0 || state == 'Z' || state == 'X')
			return;
		nanosleep(&pause, NULL);
	}
}

int warm_stop(int dirfd, long *pid, char *err, size_t errlen)
{
	struct wire_msg m;
	int got = ask(dirfd, WIRE_STOP, NULL, 0, WIRE_STOPPING, &m, true, WARM_ASK_SECONDS);

	if (got < 0)
		snprintf(err, errlen, "%s", strerror(errno));
	wire_msg_release(&m);
	if (got > 0) {
		*pid = (long)m.a;
		wait_exited((pid_t)m.a, WARM_STOP_WAIT);
	}
	return got;
}

void warm_prepare(int dirfd, const struct warm_want *key)
{
	size_t plen;
	uint8_t *payload = key_payload(key, &plen);
	int fd = payload ? warm_proto_connect_nonblock(dirfd) : -1;

	/* The server reads a message that is queued when we close; its answer
	 * goes nowhere (its sends do not raise SIGPIPE). */
	if (fd >= 0)
		(void)wire_send(fd, WIRE_CALL, 0, warm_proto_exe_id(), payload, plen, NULL, 0);
	fd_close(&fd);
	free(payload);
}

enum warm_ready warm_wait_ready(int dirfd, double idle_seconds, const struct warm_want *key,
                                double seconds, char *err, size_t errlen)
{
	size_t plen;
	uint8_t *payload = key_payload(key, &plen);
	struct timespec deadline;
	enum warm_ready ret = WARM_READY_TIMEOUT;

	if (!payload)
		goto error;
	deadline_in(&deadline, seconds);
	while (ret == WARM_READY_TIMEOUT && deadline_left(&deadline) > 0) {
		struct wire_msg m;
		double left = deadline_left(&deadline);
		int got = ask(dirfd, WIRE_CALL, payload, plen, WIRE_READY, &m, false,
		              left < WARM_ASK_SECONDS ? left : WARM_ASK_SECONDS);

		if (got == 1) {
			ret = WARM_READY;
		} else if (got < 0 && m.type == WIRE_FAILED) {
			snprintf(err, errlen, "%.*s", (int)m.len,
			         m.len ? (const char *)m.payload : "");
			ret = WARM_READY_FAILED;
		}
		wire_msg_release(&m);
		if (ret != WARM_READY_TIMEOUT)
			break;
		/* None runs (or one of another build just stopped): start ours. */
		if (got == 0 && warm_spawn_server(dirfd, idle_seconds, key) < 0)
			goto error;
		usleep(WARM_READY_POLL_US);
	}
	free(payload);
	return ret;
error:
	snprintf(err, errlen, "%s", strerror(errno));
	free(payload);
	return WARM_READY_ERROR;
}

int warm_ensure_server(int dirfd, double idle_seconds, char *err, size_t errlen)
{
	struct warm_want none = { 0 };

	for (int i = 0; i < WARM_LISTEN_RETRIES; i++) {
		int fd = warm_proto_connect(dirfd);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		/* None listens: start one.  While its lock is held (one is
		 * starting, or a killed one's last fds are not closed yet)
		 * that starts none, so try again until one listens. */
		if (warm_spawn_server(dirfd, idle_seconds, &none) < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			return -1;
		}
		usleep(WARM_CONNECT_RETRY_US);
	}
	snprintf(err, errlen, "%s", strerror(ETIMEDOUT));   /* none listens in time */
	return -1;
}
