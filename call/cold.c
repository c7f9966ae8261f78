/*
 * cold.c - the cold call path: fork, supervise and clean up after one
 * worker, on proc.c's child-under-a-deadline layer.
 */
#include "cold.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "hosttools.h"
#include "proc.h"
#include "proc_child.h"
#include "stopsig.h"

/* While the worker ends, the signalfd is polled this often (ms). */
#define COLD_REAP_POLL_MS 50
/* How long past the deadline a killed worker may take to die (seconds). */
#define COLD_KILL_GRACE 1.0
/* With a process of the cell left behind, draining its pipes stops after
 * this long without output (ms). */
#define COLD_DRAIN_MS 250

struct supervisor {
	struct proc_child c;
	int sig;
	bool reaped;
	struct call_outcome *o;
	struct host_tools *tools;
	int chan;                /* our end of the host-call channel; -1: none */
};

struct start {
	pid_t parent;
	const struct worker_fds *fds;
	const sigset_t *mask;   /* the caller's (stopsig_caller_mask) */
	cold_child_fn fn;
	void *arg;
};

static int fail(char *err, size_t errlen, const char *what)
{
	int saved = errno;

	snprintf(err, errlen, "%s: %s", what, strerror(saved));
	errno = saved;
	return -1;
}

/* The child side of the fork: set up fds and the group, then run. */
static void child_start(void *arg, int out, int err)
{
	const struct start *st = arg;
	int keep[5] = { st->fds->request, st->fds->result, st->fds->save, st->fds->load,
	                st->fds->tools };

	if (proc_child_prepare(st->parent, out, err, keep, 5, st->mask) < 0)
		_exit(127);
	st->fn(st->fds, st->arg);
	_exit(127);
}

/* Handle the signals that arrived. */
static void on_signals(struct supervisor *s)
{
	struct signalfd_siginfo si;

	while (read(s->sig, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			s->o->signal = (int)si.ssi_signo;
			proc_kill_group(s->c.pid);
		}
	}
	if (!s->reaped) {
		int st;
		pid_t got = waitpid(s->c.pid, &st, WNOHANG);

		if (got == s->c.pid) {
			s->reaped = true;
			s->o->status = st;
		}
	}
}

static void supervise(struct supervisor *s, const struct timespec *deadline)
{
	struct proc_pipe *pipes = &s->c.out;   /* out, err */

	while (!s->reaped) {
		struct pollfd extra[2] = { { .fd = s->sig, .events = POLLIN },
		                           { .fd = s->chan, .events = POLLIN } };
		struct timespec cell;   /* the deadline, past the host's waits */
		double left;

		host_tools_deadline(s->tools, deadline, &cell);
		left = deadline_left(&cell);
		int ms;

		if (left <= 0 && !s->o->timed_out) {
			s->o->timed_out = true;
			proc_kill_group(s->c.pid);
		}
		/* A worker that SIGKILL does not end (in uninterruptible sleep)
		 * is left behind rather than waited for (issue 21). */
		if (s->o->timed_out && left < -COLD_KILL_GRACE)
			break;
		ms = s->o->timed_out || s->o->signal ? COLD_REAP_POLL_MS : deadline_poll_ms(left);
		if (proc_poll(pipes, 2, extra, s->chan >= 0 ? 2 : 1,
		              capture_tap_wait(pipes[0].ctx, ms)) < 0)
			break;
		capture_tap_tick(pipes[0].ctx);
		if (s->chan >= 0 && extra[1].revents &&
		    host_tools_serve(s->tools, s->chan, deadline) == 0)
			fd_close(&s->chan);
		on_signals(s);
	}
}

enum call_status cold_run(const uint8_t *request, size_t request_len,
                          const struct worker_fds *session,
                          const struct timespec *deadline,
                          const struct cell_watch *watch, struct host_tools *tools,
                          cold_child_fn child,
                          void *arg, struct capture *out, struct capture *errc,
                          struct call_outcome *o, char *err, size_t errlen)
{
	int req = -1, res = -1, pidfd = -1;
	enum call_status ret = CALL_FAILED;
	sigset_t mask, oldmask, caller;
	struct supervisor s = { .sig = -1, .o = o, .tools = tools, .chan = -1 };
	int chan[2] = { -1, -1 };
	struct worker_fds fds;
	struct start st = { getpid(), &fds, &caller, child, arg };
	const char *what = "";
	double t0;

	memset(o, 0, sizeof(*o));
	/* Before the signals are held and the fork: what the watcher starts
	 * is not the cell's. */
	cell_watch_tell(watch, -1);
	s.c.pid = -1;
	s.c.out = (struct proc_pipe){ -1, proc_feed_capture, out };
	s.c.err = (struct proc_pipe){ -1, proc_feed_capture, errc };
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/* The worker gets the caller's mask, not the one that holds the stop
	 * signals until the commit: that hold is ours, not the cell's. */
	stopsig_caller_mask(&caller);
	if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0) {
		fail(err, errlen, "sigprocmask");
		return CALL_FAILED;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		fail(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER)");
		goto out;
	}
	if ((s.sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fail(err, errlen, "signalfd");
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
	if (tools && host_tools_channel(tools, chan, err, errlen) < 0)
		goto out;
	fds = (struct worker_fds){ req, res, session->load, session->save, chan[1] };
	t0 = deadline_now();
	if (proc_start(&s.c, child_start, &st, &what) < 0) {
		fail(err, errlen, what);
		goto out;
	}
	fd_close(&chan[1]);
	s.chan = chan[0];
	chan[0] = -1;
	/* Not reaped yet, so the pid is the worker's. */
	pidfd = (int)syscall(SYS_pidfd_open, s.c.pid, 0);
	if (pidfd >= 0)
		cell_watch_tell(watch, pidfd);
	supervise(&s, deadline);
	o->elapsed = deadline_now() - t0;
	/* The worker is gone; so must be everything it started. */
	kill(-s.c.pid, SIGKILL);
	o->left_behind = proc_kill_descendants();
	/* One left behind may hold the pipes: then stop at a pause. */
	proc_drain(&s.c.out, o->left_behind ? COLD_DRAIN_MS : -1);
	proc_drain(&s.c.err, o->left_behind ? COLD_DRAIN_MS : -1);
	if (proc_map(res, &o->result, &o->result_len) < 0) {
		fail(err, errlen, "cannot read the worker's result");
		goto out;
	}
	ret = CALL_DONE;
out:
	fd_close(&s.c.out.fd);
	fd_close(&s.c.err.fd);
	fd_close(&s.sig);
	fd_close(&s.chan);
	fd_close(&chan[0]);
	fd_close(&chan[1]);
	fd_close(&req);
	fd_close(&res);
	fd_close(&pidfd);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return ret;
}

void call_outcome_release(struct call_outcome *o)
{
	if (o->result)
		munmap(o->result, o->result_len);
	o->result = NULL;
	o->result_len = 0;
}
