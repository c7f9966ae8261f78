/*
 * zygote.c - fork a worker per call from a warm interpreter.
 *
 * A call arrives from the server as WIRE_RUN with six or seven fds: the
 * client's connection, the request and result memfds, the client's stdout
 * and stderr pipes, the file for the new session and, unless the session
 * is new, the session's file.  The worker tells the client WIRE_STARTED
 * just before the cell can run (before that, the client may safely fall
 * back to the cold path), and the zygote tells it WIRE_STATUS once the
 * worker and everything it started are gone.
 *
 * The worker is usually the spare: a process forked, and made ready, after
 * the previous call was handed over, waiting for its call on a socketpair.
 *
 * The zygote is a child subreaper: whatever a worker leaves behind when it
 * is killed is reparented here and killed too.  A worker that finishes
 * normally kills its own descendants (it is a subreaper as well).
 */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "holder.h"
#include "live.h"
#include "proc.h"
#include "proc_child.h"
#include "wire.h"
#include "worker.h"

#define MAX_CALLS 128
#define ZYGOTE_ENV_MAX 64
/* fds of a WIRE_RUN, in order; FD_LOAD only for a session that exists */
enum { FD_CLIENT, FD_REQUEST, FD_RESULT, FD_OUT, FD_ERR, FD_SAVE, FD_LOAD, RUN_FDS };
_Static_assert(RUN_FDS <= WIRE_MAX_FDS, "a WIRE_RUN's fds must fit in one message");
_Static_assert((int)LIVE_FD_SAVE == (int)FD_SAVE && (int)LIVE_FD_LOAD == (int)FD_LOAD &&
               (int)LIVE_RUN_FDS == (int)RUN_FDS,
               "live.h names a WIRE_RUN's fds as this file orders them");

/* With calls running, look for finished workers at least this often (ms):
 * a wait status is never lost, whatever happens to a signal. */
#define ZYGOTE_REAP_POLL_MS 100
/* How long a new spare has to name its holder (ms). */
#define SPARE_HOLDER_MS 2000

struct call {
	struct proc_deadline run;   /* the worker, a group leader, and its deadline */
	int client;                 /* -1 once the client is gone */
	pid_t holder;               /* the worker's memory's holder, or -1 */
	char live_note[LIVE_NOTE_MAX];   /* why a bound ended its session's live
	                                  * process before it (live_take); "" */
};

static struct call calls[MAX_CALLS];
static size_t n_calls;
/* Zygotes forked from this one (grow): the server's now, not orphans. */
#define MAX_GROWN 32
static pid_t grown[MAX_GROWN];
static size_t n_grown;
/* Orphans the last sweep killed that had not died yet (in uninterruptible
 * sleep, say): every SIGCHLD sweeps again until none is left. */
static size_t lingering;
/* Holders (holder.h) whose worker was reaped, not yet reaped themselves:
 * the orphan sweeps neither kill nor wait for them.  Each is killed
 * HOLDER_GRACE_MS after its call's verdict: freeing a pandas worker's
 * memory takes a CPU for 2.5 ms, and done at once it slowed the client's
 * own save (its commit) by as much as the exit had cost. */
#define HOLDER_GRACE_MS 50
#define HOLDERS_ENDING 16
static struct ending {
	pid_t pid;
	bool killed;
	struct timespec kill_at;
} ending[HOLDERS_ENDING];
static size_t n_ending;

/* refused: 1 + the index of the key's preload module to blame, or 0. */
static __attribute__((noreturn)) void zygote_refuse(int ctl, const char *why, size_t refused)
{
	wire_send(ctl, WIRE_FAILED, refused, 0, why, strlen(why), NULL, 0);
	_exit(1);
}

static __attribute__((noreturn)) void zygote_fail(int ctl, const char *why)
{
	zygote_refuse(ctl, why, 0);
}

/* Tell the server the zygote is ready: the module files to watch, then as
 * many of the modules imported as fit (one left out only means a call
 * that names it is prepared a zygote of its own). */
static void report_ready(int ctl, struct zygote_ready *ready)
{
	uint8_t payload[WIRE_MAX_PAYLOAD];
	size_t len = 0;

	for (char *line = strtok(ready->files, "\n"); line; line = strtok(NULL, "\n"))
		if (wire_put(payload, &len, "file", line) < 0)
			zygote_fail(ctl, "too many module files to watch");
	for (char *line = strtok(ready->loaded, "\n"); line; line = strtok(NULL, "\n"))
		if (wire_put(payload, &len, WARM_READY_MODULE, line) < 0)
			break;
	free(ready->files);
	free(ready->loaded);
	if (wire_send(ctl, WIRE_READY, (uint64_t)getpid(), 0, payload, len, NULL, 0) < 0)
		_exit(1);
}

static void prepare(int ctl, const struct warm_key *env)
{
	char err[1024];
	struct zygote_ready ready;

	if (chdir(env->cwd) < 0) {
		snprintf(err, sizeof(err), "cannot enter '%s': %s", env->cwd, strerror(errno));
		zygote_fail(ctl, err);
	}
	/* Exactly the environment of the call that asked for this zygote. */
	clearenv();
	for (size_t i = 0; i < env->n_env; i++) {
		const char *eq = strchr(env->env[i], '=');
		char name[4096];

		if (!eq || eq == env->env[i] || (size_t)(eq - env->env[i]) >= sizeof(name))
			continue;
		memcpy(name, env->env[i], (size_t)(eq - env->env[i]));
		name[eq - env->env[i]] = '\0';
		setenv(name, eq + 1, 1);
	}
	if (*env->pythonpath)
		setenv("PYTHONPATH", env->pythonpath, 1);
	else
		unsetenv("PYTHONPATH");
	if (*env->venv)
		setenv("VIRTUAL_ENV", env->venv, 1);
	else
		unsetenv("VIRTUAL_ENV");
	if (worker_zygote_init(env->modules, env->n_modules, env->preload, env->n_preload,
	                       &ready, err, sizeof(err)) < 0)
		zygote_refuse(ctl, err, ready.refused);
	report_ready(ctl, &ready);
}

/* In the forked worker, prepared: become the call's process, then run it. */
static void worker_run(const int *fds, size_t nfds)
{
	struct worker_fds w = { fds[FD_REQUEST], fds[FD_RESULT],
	                        nfds > FD_LOAD ? fds[FD_LOAD] : -1, fds[FD_SAVE], -1 };
	int keep[] = { fds[FD_CLIENT], w.request, w.result, w.save, w.load };
	struct wire_msg go;
	int got;

	if (proc_child_stdio(fds[FD_OUT], fds[FD_ERR]) < 0)
		_exit(127);
	proc_child_close_fds(keep, 5);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	prctl(PR_SET_NAME, "dolsot-worker");
	if (wire_send(fds[FD_CLIENT], WIRE_STARTED, (uint64_t)getpid(), 0, NULL, 0, NULL, 0) < 0)
		_exit(127);   /* the client is gone: do not run its cell */
	/* The client's word decides, so that a client giving up on a stuck
	 * server (and running the call cold) and this cell never both run. */
	do {
		struct pollfd p = { fds[FD_CLIENT], POLLIN, 0 };

		/* The connection may be non-blocking (the server's end is). */
		got = poll(&p, 1, -1) < 0 ? -1 : wire_recv(fds[FD_CLIENT], &go);
	} while (got < 0 && (errno == EINTR || errno == EAGAIN));
	if (got != 1 || go.type != WIRE_GO)
		_exit(127);
	if (go.nfds == 1) {
		w.tools = go.fds[0];   /* the host-call channel (hosttools.h) */
		go.fds[0] = -1;
	}
	wire_msg_release(&go);
	close(fds[FD_CLIENT]);
	worker_zygote_child(&w);
}

/*
 * The spare: a worker forked before its call arrives, so that neither the
 * fork nor the process's own preparation (signals, fds, Python's after-fork
 * work) is on the call's path.  It waits on sock for the call's WIRE_RUN.
 */
static struct {
	pid_t pid;              /* -1: none */
	int sock;               /* the zygote's end */
	pid_t holder;           /* the spare's memory's holder, or -1 */
} spare = { -1, -1, -1 };

static void spare_main(pid_t zygote, int sock, const sigset_t *mask)
{
	struct wire_msg m;
	pid_t holder;
	int got;

	prctl(PR_SET_NAME, "dolsot-spare");
	if (proc_child_detach(zygote, &sock, 1, mask) < 0)
		_exit(127);
	/* Made before any cell's code can run, so the zygote trusts its word. */
	holder = holder_start();
	if (wire_send(sock, WIRE_HOLDER, holder > 0 ? (uint64_t)holder : 0, 0, NULL, 0, NULL, 0) < 0 ||
	    worker_zygote_spare() < 0)
		_exit(127);
	do
		got = wire_recv(sock, &m);
	while (got < 0 && errno == EINTR);
	if (got != 1 || m.type != WIRE_RUN || m.nfds < RUN_FDS - 1 || m.nfds > RUN_FDS)
		_exit(0);   /* the zygote is done with us */
	close(sock);
	free(m.payload);   /* a WIRE_RUN says it all in its fds */
	worker_run(m.fds, m.nfds);
}

static void kill_ending(struct ending *e)
{
	if (!e->killed)
		kill(e->pid, SIGKILL);
	e->killed = true;
}

/* A holder whose worker is gone (or never ran) is to be killed in grace_ms:
 * from now on the orphan sweeps neither kill nor wait for it, and reap()
 * reaps it.  With too many waiting, the oldest goes now. */
static void holder_ending(pid_t holder, int grace_ms)
{
	struct ending *e;

	if (holder <= 0)
		return;
	if (n_ending == HOLDERS_ENDING) {
		kill_ending(&ending[0]);   /* reaped later, or by PDEATHSIG */
		memmove(ending, ending + 1, --n_ending * sizeof(*ending));
	}
	e = &ending[n_ending++];
	e->pid = holder;
	e->killed = false;
	deadline_in_ns(&e->kill_at, (uint64_t)grace_ms * 1000000);
	if (grace_ms == 0)
		kill_ending(e);
}

/* Kill the holders whose grace is over; the poll timeout in ms until the
 * next one's (-1: none waits). */
static int end_holders_due(void)
{
	int next = -1;

	for (size_t i = 0; i < n_ending; i++) {
		double left;

		if (ending[i].killed)
			continue;
		left = deadline_left(&ending[i].kill_at);
		if (left <= 0)
			kill_ending(&ending[i]);
		else
			next = deadline_poll_min(next, deadline_poll_ms(left));
	}
	return next;
}

/* Whether pid is a holder; if so it is forgotten, as it has been reaped. */
static bool holder_reaped(pid_t pid)
{
	for (size_t i = 0; i < n_ending; i++)
		if (ending[i].pid == pid) {
			ending[i] = ending[--n_ending];
			return true;
		}
	for (size_t i = 0; i < n_calls; i++)
		if (calls[i].holder == pid) {
			calls[i].holder = -1;   /* its worker ended it (holder_end) */
			return true;
		}
	if (pid == spare.holder) {
		spare.holder = -1;
		return true;
	}
	return false;
}

static void drop_spare(void)
{
	if (spare.pid > 0)
		kill(spare.pid, SIGKILL);   /* reaped by reap() */
	if (spare.sock >= 0)
		close(spare.sock);
	holder_ending(spare.holder, 0);
	spare.pid = -1;
	spare.sock = -1;
	spare.holder = -1;
}

/* fork() between Python's fork hooks. */
static pid_t fork_python(void)
{
	pid_t pid;

	worker_before_fork();
	pid = fork();
	if (pid != 0)
		worker_after_fork_parent();
	return pid;
}

/* A worker: the child gets a process group of its own (it sets it too, so
 * kill(-pid) works whichever runs first). */
static pid_t fork_worker(void)
{
	pid_t pid = fork_python();

	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

/* The holder the spare says it made (its first word, sent at once), or -1.
 * Waited for here, as a spare whose holder the zygote did not know would
 * leave it behind. */
static pid_t spare_holder(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct wire_msg m;
	pid_t holder = -1;
	int got;

	do
		got = poll(&p, 1, SPARE_HOLDER_MS);
	while (got < 0 && errno == EINTR);
	if (got == 1 && wire_recv(sock, &m) == 1) {
		if (m.type == WIRE_HOLDER && m.a > 0 && m.a <= INT32_MAX)
			holder = (pid_t)m.a;
		wire_msg_release(&m);
	}
	return holder;
}

/* Fork a spare unless one waits already (failing quietly: calls then fork
 * as they come). */
static void make_spare(const sigset_t *mask)
{
	int sv[2];
	pid_t pid, self = getpid();

	if (spare.pid > 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	pid = fork_worker();
	if (pid == 0)
		spare_main(self, sv[1], mask);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	spare.pid = pid;
	spare.sock = sv[0];
	spare.holder = spare_holder(sv[0]);
}

/* The process that runs the call: the spare (with its holder in *holder),
 * or a worker forked now. */
static pid_t worker_for(struct wire_msg *m, const sigset_t *mask, pid_t *holder)
{
	pid_t pid, self = getpid();

	*holder = -1;
	if (spare.pid > 0 &&
	    wire_send(spare.sock, WIRE_RUN, m->a, 0, NULL, 0, m->fds, m->nfds) == 0) {
		pid = spare.pid;
		*holder = spare.holder;
		spare.pid = -1;   /* they are the call's now: not to be killed */
		spare.holder = -1;
		drop_spare();
		return pid;
	}
	drop_spare();
	pid = fork_worker();
	if (pid == 0) {
		if (proc_child_detach(self, m->fds, (int)m->nfds, mask) < 0)
			_exit(127);
		worker_run(m->fds, m->nfds);
	}
	return pid;
}

static void reap(void);

static void start_call(struct wire_msg *m, const sigset_t *mask)
{
	struct call *c;
	pid_t pid, holder = -1;
	enum live_take taken;
	char note[LIVE_NOTE_MAX] = "";
	int tries = 0;

	if (m->nfds < RUN_FDS - 1 || m->nfds > RUN_FDS || n_calls == MAX_CALLS) {
		wire_close_fds(m);   /* the client sees EOF before STARTED: it falls back */
		return;
	}
	while ((taken = live_take(m, mask, &pid, note, sizeof(note))) == LIVE_REAP_FIRST &&
	       tries++ < 2)
		reap();   /* the session's live process died: its snapshot takes over */
	if (taken == LIVE_NOT_TAKEN)
		pid = worker_for(m, mask, &holder);
	for (size_t i = FD_REQUEST; i < m->nfds; i++)
		close(m->fds[i]);
	m->nfds = 0;   /* every fd is closed or the call's now */
	if (pid < 0) {
		close(m->fds[FD_CLIENT]);
		return;
	}
	c = &calls[n_calls++];
	c->run.pid = pid;
	c->holder = holder;
	c->run.timed_out = false;
	deadline_in_ns(&c->run.deadline, m->a);
	c->client = m->fds[FD_CLIENT];
	memcpy(c->live_note, note, sizeof(note));
}

/* The items of a verdict's payload: rolled (WARM_ROLLED_BACK) and the
 * call's live note (WARM_LIVE_ENDED), into buf (WARM_STATUS_MAX); its
 * length. */
#define WARM_STATUS_MAX (64 + LIVE_NOTE_MAX)
static size_t status_items(const struct call *c, bool rolled, uint8_t *buf)
{
	size_t len = 0;

	if (rolled)
		(void)wire_put(buf, &len, WARM_ROLLED_BACK, "1");
	if (c->live_note[0])
		(void)wire_put(buf, &len, WARM_LIVE_ENDED, c->live_note);
	return len;
}

/* proc_kill_orphans' keep: a running worker, the spare, their holders. */
static bool is_ours(pid_t pid, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < n_calls; i++)
		if (calls[i].run.pid == pid || calls[i].holder == pid)
			return true;
	for (size_t i = 0; i < n_ending; i++)
		if (ending[i].pid == pid)
			return true;
	for (size_t i = 0; i < n_grown; i++)
		if (grown[i] == pid)
			return true;
	return pid == spare.pid || pid == spare.holder || live_is_ours(pid);
}

/* A grown zygote ended: true when pid was one. */
static bool grown_ended(pid_t pid)
{
	for (size_t i = 0; i < n_grown; i++)
		if (grown[i] == pid) {
			grown[i] = grown[--n_grown];
			return true;
		}
	return false;
}

static void finish_call(size_t i, int status)
{
	struct call c = calls[i];
	uint8_t items[WARM_STATUS_MAX];
	size_t items_len;

	calls[i] = calls[--n_calls];
	items_len = status_items(&c, live_ended(c.run.pid), items);
	holder_ending(c.holder, HOLDER_GRACE_MS);
	proc_kill_rest_of_group(c.run.pid);
	lingering = proc_kill_orphans(is_ours, NULL);
	if (c.client >= 0) {
		/* The verdict does not wait for a process that cannot die yet:
		 * it says how many there are instead (issue 21). */
		wire_send(c.client, WIRE_STATUS, (uint64_t)(unsigned)status,
		          (uint64_t)c.run.timed_out | (uint64_t)lingering << 1, items, items_len,
		          NULL, 0);
		close(c.client);
	}
}

static void reap(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (holder_reaped(pid))
			continue;
		if (pid == spare.pid) {
			spare.pid = -1;   /* it died waiting: the next call forks */
			drop_spare();
			continue;
		}
		size_t i = 0;

		while (i < n_calls && calls[i].run.pid != pid)
			i++;
		if (i < n_calls)
			finish_call(i, status);
		else if (!grown_ended(pid))
			live_reaped(pid);
	}
	/* Calls whose process ended in a sandbox, where the zygote cannot
	 * wait for it. */
	while (live_next_ended(&pid, &status))
		for (size_t i = 0; i < n_calls; i++)
			if (calls[i].run.pid == pid) {
				finish_call(i, status);
				break;
			}
	if (lingering)
		lingering = proc_kill_orphans(is_ours, NULL);
}

/* Kill the calls past their deadlines; the poll timeout in ms until the
 * next one needs looking at (-1: no call runs). */
static int check_deadlines(void)
{
	int next = -1;

	for (size_t i = 0; i < n_calls; i++)
		next = deadline_poll_min(next, proc_deadline_check(&calls[i].run));
	if (n_calls)
		next = deadline_poll_min(next, ZYGOTE_REAP_POLL_MS);
	return next;
}

/* A live session's process answered its call and holds the session on
 * (live.h): the call is over, though the process is not. */
static void live_done(pid_t pid)
{
	for (size_t i = 0; i < n_calls; i++) {
		struct call c = calls[i];

		if (c.run.pid != pid)
			continue;
		if (c.run.timed_out || c.client < 0)
			return;   /* killed already: it ends, and is reaped */
		uint8_t items[WARM_STATUS_MAX];
		size_t items_len = status_items(&c, false, items);

		calls[i] = calls[--n_calls];
		wire_send(c.client, WIRE_STATUS, 0, 0, items, items_len, NULL, 0);
		close(c.client);
		return;
	}
}

/* A client that hung up gave up on its call: kill the cell. */
static void client_gone(struct call *c)
{
	close(c->client);
	c->client = -1;
	proc_kill_group(c->run.pid);
}

static void serve(int ctl, const sigset_t *old) __attribute__((noreturn));
static void grown_main(int ctl, const uint8_t *payload, size_t len, const sigset_t *old)
	__attribute__((noreturn));

/*
 * A zygote forked from this one for the key in m's payload, on the
 * control socket m carries: it imports what the key adds, reports to the
 * server, and serves.  The server waits for the child's word, not for
 * ours: a fork that fails only means it hears nothing and makes the
 * zygote afresh.
 */
static void grow(const struct wire_msg *m, const sigset_t *old)
{
	pid_t pid;

	if (m->nfds != 1 || n_grown == MAX_GROWN)
		return;
	pid = fork_python();
	if (pid == 0)
		grown_main(m->fds[0], m->payload, m->len, old);
	if (pid > 0)
		grown[n_grown++] = pid;
}

/* In the child of grow: drop what is the parent zygote's (its socket, its
 * calls, its spare, its live sessions), then become the key's zygote. */
static void grown_main(int ctl, const uint8_t *payload, size_t len, const sigset_t *old)
{
	int keep[] = { ctl };
	uint8_t *key = malloc(len + 1);
	struct warm_key *env = malloc(sizeof(*env));
	char err[1024];
	struct zygote_ready ready;

	proc_child_close_fds(keep, 1);
	n_calls = 0;
	n_grown = 0;
	lingering = 0;
	spare.pid = -1;
	spare.sock = -1;
	spare.holder = -1;
	n_ending = 0;
	live_forget();
	if (!key || !env)
		zygote_fail(ctl, "cannot grow a zygote: out of memory");
	memcpy(key, payload, len);
	key[len] = '\0';
	warm_key_decode(key, len, env);
	if (worker_zygote_grow(env->preload, env->n_preload, &ready, err, sizeof(err)) < 0)
		zygote_refuse(ctl, err, ready.refused);
	report_ready(ctl, &ready);
	serve(ctl, old);
}

void zygote_main(int ctl, const struct warm_key *env)
{
	sigset_t mask, old;

	prctl(PR_SET_NAME, "dolsot-zygote");
	/* Block SIGCHLD before the toolboxes load: threads they start (OpenBLAS)
	 * inherit the mask, or one of them would take the signal and the
	 * signalfd would never hear of a finished worker. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	live_init();
	prepare(ctl, env);
	serve(ctl, &old);
}

/* Run each call of ctl in a worker until ctl closes and no call is left;
 * old is the signal mask a worker gets. */
static void serve(int ctl, const sigset_t *old)
{
	sigset_t mask;
	int sig;
	struct pollfd p[MAX_CALLS + 2 + LIVE_POLL_MAX];

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig < 0)
		_exit(1);
	make_spare(old);
	while (ctl >= 0 || n_calls) {
		nfds_t n = 0;
		int timeout = deadline_poll_min(deadline_poll_min(check_deadlines(), live_expire()),
		                                end_holders_due());
		size_t live_at;

		p[n++] = (struct pollfd){ .fd = sig, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		for (size_t i = 0; i < n_calls; i++)
			/* Hang-ups only: the client's WIRE_GO is the worker's to read. */
			p[n++] = (struct pollfd){ .fd = calls[i].client, .events = POLLRDHUP };
		live_at = n;
		n += live_poll_fds(p + n);
		if (poll(p, n, timeout) < 0 && errno != EINTR)
			_exit(1);
		for (size_t i = 0; i < n_calls; i++)
			if (calls[i].client >= 0 &&
			    (p[2 + i].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)))
				client_gone(&calls[i]);
		if (ctl >= 0 && p[1].revents) {
			struct wire_msg m;
			int got = wire_recv(ctl, &m);

			if (got == 1 && m.type == WIRE_RUN) {
				start_call(&m, old);   /* takes the fds */
				make_spare(old);   /* for the next call */
			} else if (got == 1 && m.type == WIRE_STOP) {
				live_on_stop(&m);   /* the server's bounds */
			} else if (got == 1 && m.type == WIRE_GROW) {
				grow(&m, old);
			}
			if (got == 1)
				wire_msg_release(&m);
			else if (got == 0 || errno != EAGAIN) {
				close(ctl);   /* the server is gone or done with us */
				ctl = -1;
				drop_spare();
				live_end_all();
			}
		}
		if (p[0].revents) {
			struct signalfd_siginfo si;

			while (read(sig, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
		live_events(p + live_at, n - live_at, live_done);
		reap();
		if (ctl >= 0)
			live_report(ctl);
	}
	_exit(0);
}

extern char **environ;

/* Large blocks of glibc's malloc asked for as transparent huge pages
 * (MADV_HUGEPAGE, where the system leaves that to each process): a 50 MB
 * value a call unpickles then costs 25 page faults instead of 12,800,
 * 5-7 ms instead of 20-35 on our machines.  A GLIBC_TUNABLES in the
 * server's own environment is passed instead.  The zygote's environment
 * is the call's from its start on (prepare), so no cell sees either. */
#define ZYGOTE_TUNABLES "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

void zygote_exec(int ctl, const uint8_t *key, size_t len)
{
	char *argv[] = { ZYGOTE_ARGV0, NULL }, *envp[ZYGOTE_ENV_MAX + 2], why[256];
	char *tunables = getenv("GLIBC_TUNABLES") ? NULL : ZYGOTE_TUNABLES;
	int mfd = memfd_create("dolsot-zygote-key", MFD_CLOEXEC), c, k;
	size_t n = 0;

	/* dolsot's own settings only, none of the caller's variables (the
	 * zygote sets the key's environment itself, before Python starts). */
	for (char **e = environ; *e && n < ZYGOTE_ENV_MAX; e++)
		if (strncmp(*e, "DOLSOT_", 7) == 0 || strncmp(*e, "GLIBC_TUNABLES=", 15) == 0)
			envp[n++] = *e;
	if (tunables)
		envp[n++] = tunables;
	envp[n] = NULL;

	if (mfd < 0 || fd_write_all(mfd, key, len) < 0) {
		snprintf(why, sizeof(why), "cannot pass the zygote its key: %s", strerror(errno));
		zygote_fail(ctl, why);
	}
	/* Out of the way of fds 3 and 4 first, then into place (dup2 also
	 * clears close-on-exec). */
	c = fcntl(ctl, F_DUPFD_CLOEXEC, ZYGOTE_KEY_FD + 1);
	k = fcntl(mfd, F_DUPFD_CLOEXEC, ZYGOTE_KEY_FD + 1);
	if (c < 0 || k < 0 || dup2(c, ZYGOTE_CTL_FD) < 0 || dup2(k, ZYGOTE_KEY_FD) < 0) {
		snprintf(why, sizeof(why), "cannot hand the zygote its fds: %s", strerror(errno));
		zygote_fail(ctl, why);
	}
	execve("/proc/self/exe", argv, envp);
	snprintf(why, sizeof(why), "cannot exec a fresh dolsot as a zygote: %s", strerror(errno));
	zygote_fail(c, why);
}

void zygote_exec_main(void)
{
	/* On the heap, for as long as the zygote lives: env points into it. */
	uint8_t *key = malloc(WIRE_MAX_PAYLOAD + 1);
	struct warm_key env;
	ssize_t got = key ? pread(ZYGOTE_KEY_FD, key, WIRE_MAX_PAYLOAD, 0) : -1;

	close(ZYGOTE_KEY_FD);
	(void)fcntl(ZYGOTE_CTL_FD, F_SETFD, FD_CLOEXEC);
	if (got < 0)
		zygote_fail(ZYGOTE_CTL_FD, "cannot read the zygote's key");
	/* warm_key_decode reads NUL-terminated entries; a key ends with one,
	 * and the extra NUL guards one that does not. */
	key[got] = '\0';
	warm_key_decode(key, (size_t)got, &env);
	zygote_main(ZYGOTE_CTL_FD, &env);
}
