/*
 * call.c - one call on a call path: the request built once, the warm path
 * tried when the server may take it, the cold path otherwise, and the
 * worker's outcome turned into a struct result.
 *
 * The client keeps lock, fds and deadline on both paths (repl.c holds
 * them); it may fall back to the cold path only before the worker says it
 * started, so a cell never runs twice.
 */
#include "call.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkd.h"
#include "cold.h"
#include "deadline.h"
#include "frame.h"
#include "hosttools.h"
#include "modrec.h"
#include "pidcg.h"
#include "typegate.h"
#include "warm.h"
#include "worker.h"

_Static_assert(OPTS_MAX_TOOLBOXES <= FRAME_MAX_TOOLBOXES,
               "every --toolbox the CLI accepts must fit in a request");

static char *dup_span(struct span s)
{
	char *p;

	if (!s.present)
		return NULL;
	p = malloc(s.len + 1);
	if (!p)
		return NULL;
	memcpy(p, s.p, s.len);
	p[s.len] = '\0';
	return p;
}

static struct owned dup_owned(struct span s)
{
	struct owned o = { dup_span(s), s.len };

	if (!o.p)
		o.len = 0;
	return o;
}

/* The worker's "phase\tns" lines into res's timings; its "start" (a
 * CLOCK_MONOTONIC time) against the call's t0 gives the start-up. */
static void take_timings(struct span lines, double t0_ms, struct result *res)
{
	static const char *const phases[] = { "load", "gate", "cell", "dump" };
	char buf[512], *save = NULL;
	size_t n = lines.len < sizeof(buf) - 1 ? lines.len : sizeof(buf) - 1;

	if (!lines.present)
		return;
	memcpy(buf, lines.p, n);
	buf[n] = '\0';
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t'), *end;
		unsigned long long ns;

		if (!tab)
			continue;
		*tab = '\0';
		errno = 0;
		ns = strtoull(tab + 1, &end, 10);
		if (errno || *end)
			continue;
		if (strcmp(line, "start") == 0 && (double)ns / 1e6 >= t0_ms)
			res->timings_ms[TIMING_STARTUP] = (double)ns / 1e6 - t0_ms;
		for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
			if (strcmp(line, phases[i]) == 0)
				res->timings_ms[TIMING_LOAD + i] = (double)ns / 1e6;
	}
}

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *dup_printf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	return p;
}

extern char **environ;

/* The environment as NUL-separated entries, for a worker that does not
 * inherit it (malloc'd into *out). */
static int pack_environ(struct span *out, char **buf)
{
	size_t n = 0, off = 0;

	for (char **e = environ; *e; e++)
		n += strlen(*e) + 1;
	*buf = malloc(n ? n : 1);
	if (!*buf)
		return -1;
	for (char **e = environ; *e; e++) {
		size_t len = strlen(*e) + 1;

		memcpy(*buf + off, *e, len);
		off += len;
	}
	*out = (struct span){ (const uint8_t *)*buf, n, true };
	return 0;
}

/* The request both paths run, built once: everything but what only a
 * warm worker needs (see request_encode). */
static int request_build(const struct call_args *c, const struct gate_state *gate,
                         struct request *r)
{
	const struct run_args *a = c->run;

	memset(r, 0, sizeof(*r));
	r->code = (struct span){ (const uint8_t *)a->code, a->code_len, true };
	r->session = span_str(a->session);
	if (c->found) {
		r->flags |= REQ_SESSION;
		r->blob_len = c->blob_len;
	}
	if (a->n_toolboxes > FRAME_MAX_TOOLBOXES) {
		errno = E2BIG;
		return -1;
	}
	for (size_t i = 0; i < a->n_toolboxes; i++) {
		r->toolboxes[i].module = span_str(a->toolboxes[i].module);
		r->toolboxes[i].alias = span_str(a->toolboxes[i].alias);
	}
	r->n_toolboxes = a->n_toolboxes;
	r->max_output = a->settings->max_output;
	r->budget_ns = (uint64_t)(a->settings->timeout * 1e9);
	if (a->settings->carry)
		r->flags |= REQ_CARRY;
	if (gate->checker[0])
		r->flags |= REQ_TYPECHECK;   /* else the gate is off (gate->note says why) */
	if (a->json)
		r->flags |= REQ_JSON;
	if (a->settings->live && !a->describe)
		r->flags |= REQ_LIVE;   /* --describe reads the store: nothing runs */
	if (a->describe) {
		r->flags |= REQ_DESCRIBE;
		r->describe = (struct span){ (const uint8_t *)a->describe_mounts,
		                             a->describe_mounts_len, true };
	}
	r->ty_bin = span_str(gate->checker[0] ? gate->checker : a->settings->ty_bin);
	if (c->units && *c->units)
		r->units = span_str(c->units);
	sandbox_plan_fill(a->plan, a->settings, c->cgroup, r);
	return 0;
}

/*
 * With the gate on, a warm call's checker runs warm too (checkd.h): name
 * the environment's daemon, make sure one runs, and tell the worker where
 * (DIR/NAME into path).  Not for a sandboxed call: its checker runs in
 * its sandbox.  false when the worker should run the checker cold.
 */
static bool warm_checker(const struct call_args *c, const struct request *r,
                         const char *cwd, char *path, size_t len)
{
	const char *checker = (const char *)r->ty_bin.p;   /* typegate_choose's */
	const char *parts[4 + 2 * FRAME_MAX_TOOLBOXES] = { checker, cwd,
	                                                   getenv("PYTHONPATH"),
	                                                   getenv("VIRTUAL_ENV") };
	char proc[64], dir[PATH_MAX], name[CHECKD_NAME_MAX];
	size_t n = 4;
	ssize_t got;
	int w;

	enum typegate_checker k = typegate_checker_of(checker);

	if (!(r->flags & REQ_TYPECHECK) || (r->flags & REQ_SANDBOX) || c->dirfd < 0 ||
	    (k != TYPEGATE_PYRIGHT && k != TYPEGATE_MYPY))
		return false;   /* pyright and mypy are kept warm (checkd_drv.c) */
	for (size_t i = 0; i < c->run->n_toolboxes; i++) {
		parts[n++] = c->run->toolboxes[i].module;
		parts[n++] = c->run->toolboxes[i].alias;
	}
	checkd_name(parts, n, name, sizeof(name));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", c->dirfd);
	got = readlink(proc, dir, sizeof(dir) - 1);
	if (got <= 0 || checkd_ensure(c->dirfd, name) < 0)
		return false;
	dir[got] = '\0';
	w = snprintf(path, len, "%s/%s", dir, name);
	return w > 0 && (size_t)w < len;
}

/* r as a frame into buf for the warm path (warm) or the cold one.  A warm
 * worker is forked from a zygote, not from us: it is told where and with
 * what environment the caller runs (unless the plan gives one).  A cold
 * one inherits both. */
static int request_encode(const struct call_args *c, const struct request *r, bool warm,
                          struct frame_buf *buf)
{
	struct request w = *r;
	char cwd[PATH_MAX], checker[PATH_MAX], *env = NULL;
	int ret;

	frame_buf_release(buf);
	if (warm && getcwd(cwd, sizeof(cwd))) {
		w.cwd = span_str(cwd);
		if (warm_checker(c, r, cwd, checker, sizeof(checker)))
			w.checkd = span_str(checker);
		if (!(c->run->plan && c->run->plan->env) && pack_environ(&w.env, &env) < 0)
			return -1;
	}
	ret = frame_encode_request(buf, &w);
	free(env);
	return ret;
}

/* Why the worker ended without an answer, as words; the limits in force
 * are named, as one may be the cause (a C library aborting when malloc
 * fails, SIGKILL at the hard CPU limit). */
static char *death_message(int status, const struct limits *l, bool oom)
{
	char set[256];

	if (oom && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		limit_format(LIMIT_MEMORY, l->v[LIMIT_MEMORY], set, sizeof(set));
		return dup_printf("dolsot: the cell hit the memory limit (--memory %s); "
		                  "session unchanged", set);
	}
	limits_describe(l, set, sizeof(set));
	if (WIFSIGNALED(status))
		return dup_printf("dolsot: the worker was killed by signal %d (%s) before "
		                  "it finished%s%s%s; session unchanged",
		                  WTERMSIG(status), strsignal(WTERMSIG(status)),
		                  set[0] ? " (limits in force: " : "", set, set[0] ? ")" : "");
	return dup_printf("dolsot: the worker exited with status %d before it finished "
	                  "(the cell ended the process); session unchanged",
	                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* What a timed-out cell can do next (see "Hints at run time" in README). */
#define TIMEOUT_HINT "hint: the call ran for its whole %gs and was killed; the session " \
	"was rolled back to before it, so every name it held is unaffected and nothing " \
	"this cell assigned was kept: do less per cell, or pass a larger --timeout"

/* Turn the worker's outcome into *res; returns true when there is a blob to
 * save.  oom: the call's memory cgroup killed a process. */
static bool take_outcome(const struct call_outcome *o, const struct settings *s,
                         bool oom, struct worker_result *wr, struct result *res)
{
	char ferr[256];
	bool exited_ok = WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;

	bool decoded = o->result && frame_decode_result(o->result, o->result_len, wr, ferr,
	                                                sizeof(ferr)) == 0;
	bool provisional = decoded && (wr->flags & RES_PROVISIONAL);

	if (o->timed_out) {
		res->status = STATUS_TIMEOUT;
		res->ran = true;
		res->exit_code = DOLSOT_EXIT_TIMEOUT;
		res->error = dup_printf("TimeoutError: cell killed after exceeding its %gs "
		                        "timeout; session unchanged\n" TIMEOUT_HINT,
		                        s->timeout, s->timeout);
		if (provisional)   /* rolled back: what it held when the cell began */
			res->held = dup_span(wr->held);
		return false;
	}
	if (!decoded || provisional) {
		res->exit_code = DOLSOT_EXIT_FAIL;
		res->status = STATUS_KILLED;
		res->ran = true;
		/* A worker that died may have left a partial (or pre-sized) answer,
		 * or only what the session held when the cell began. */
		res->error = o->result && exited_ok && !provisional
		             ? dup_printf("dolsot: the worker's answer is malformed (%s); "
		                          "session unchanged", ferr)
		             : death_message(o->status, &s->limits, oom);
		if (provisional)
			res->held = dup_span(wr->held);
		return false;
	}
	res->exit_code = wr->exit_code >= 0 && wr->exit_code <= 255 ? (int)wr->exit_code : 1;
	if (wr->value.present) {
		res->value = dup_span(wr->value);
		res->value_len = wr->value.len;
	}
	res->error = dup_span(wr->error);
	res->held = dup_span(wr->held);
	res->dropped = dup_span(wr->dropped);
	res->kept = dup_span(wr->kept);
	res->warnings = dup_span(wr->warnings);
	res->count = wr->count;
	res->limit = dup_span(wr->limit);
	res->ran = (wr->flags & RES_RAN) || wr->limit.present;
	res->status = wr->limit.present ? STATUS_KILLED
	              : wr->flags & RES_REJECTED ? STATUS_REJECTED
	              : res->exit_code == 0 ? STATUS_OK : STATUS_ERROR;
	res->error_info = dup_owned(wr->error_info);
	res->hints = dup_owned(wr->hints);
	res->diagnostics = dup_owned(wr->diagnostics);
	res->displays = dup_owned(wr->displays);
	res->truncated = dup_owned(wr->truncated);
	res->describe = dup_owned(wr->describe);
	res->describe_json = dup_owned(wr->describe_json);
	return (wr->flags & RES_SAVE) != 0;
}

/* What picks the zygote.  One for sandboxed calls is warmed with the
 * sandbox's environment, so that none of ours is in the memory (or the
 * imported modules) a sandboxed cell inherits. */
static struct warm_want warm_want_of(const struct run_args *a)
{
	struct warm_want key = { .toolboxes = a->toolboxes, .n_toolboxes = a->n_toolboxes };

	if (a->settings->sandbox && a->plan && a->plan->env) {
		key.env = a->plan->env;
		key.env_len = a->plan->env_len;
	}
	return key;
}

struct warm_want call_warm_want(const struct run_args *a)
{
	return warm_want_of(a);
}

/* One more line after res's warnings. */
/* The truth about processes of the cell that SIGKILL did not end (in
 * uninterruptible sleep: a hung network filesystem, a frozen cgroup), as
 * one more warning line. */
static void note_left_behind(struct result *res, size_t n)
{
	char *w = dup_printf("dolsot: %zu process%s the cell started did not die when "
	                     "killed (uninterruptible sleep?) and %s left behind", n,
	                     n == 1 ? "" : "es", n == 1 ? "was" : "were");

	if (w)
		result_warn(res, w);
	free(w);
}

/*
 * A live call the server did not take (none ran, or its zygote was still
 * warming up) waits, within half of what is left of its budget, for the
 * zygote to be ready, since only the server holds live sessions.  True
 * when the call should try the warm path again.
 */
static bool live_wait(const struct call_args *c)
{
	struct warm_want want = warm_want_of(c->run);
	char err[256];
	double left = deadline_left(c->deadline) / 2;

	return c->dirfd >= 0 && left > 0 &&
	       warm_wait_ready(c->dirfd, c->run->settings->server_idle, &want, left, err,
	                       sizeof(err)) == WARM_READY;
}

/*
 * The modules the session's blob says loading it imports (modrec.h), for
 * a zygote that holds them already.  Not for a live call (its process
 * holds them) nor a sandboxed one (a zygote imports outside the sandbox,
 * where a path the sandbox hides would be seen).  A blob without a
 * record, or a damaged one, wants none: the worker loads it as ever.
 */
static bool preloads(const struct request *r)
{
	return !(r->flags & (REQ_LIVE | REQ_SANDBOX));
}

static void want_preload(const struct call_args *c, const struct request *r,
                         struct modrec *rec, struct warm_want *want)
{
	if (!c->found || c->fds->load < 0 || !preloads(r) || modrec_read(c->fds->load, rec) != 1) {
		rec->n = 0;
		return;
	}
	want->preload = rec->names;
	want->n_preload = rec->n;
}

static bool same_record(const struct modrec *a, const struct modrec *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], b->names[i]) != 0)
			return false;
	return true;
}

/*
 * The cell left a session whose module record differs from the one the
 * call loaded: ask the server now to prepare a zygote holding the new one,
 * so that the session's next call finds it ready rather than being the
 * one that asks.  The blob is the worker's, in the save file (its record
 * is at its head, before any trailer the commit adds).
 */
static void prepare_next(const struct call_args *c, const struct request *r,
                         const struct modrec *loaded)
{
	struct modrec saved;
	struct warm_want want = warm_want_of(c->run);

	if (c->run->settings->server && c->dirfd >= 0 && preloads(r) && c->fds->save >= 0 &&
	    modrec_read(c->fds->save, &saved) == 1 && saved.n && !same_record(&saved, loaded)) {
		want.preload = saved.names;
		want.n_preload = saved.n;
		warm_prepare(c->dirfd, &want);
	}
}

/* The host tools a call serves, when it declares any (a --describe runs
 * no cell). */
static struct host_tools *host_tools_of(const struct run_args *a)
{
	return host_tools_any(a->tools) && !a->describe ? a->tools : NULL;
}

/* Try the warm path; CALL_NO_SERVER or CALL_FALLBACK when the cold one
 * must run. */
static enum call_status run_warm(const struct call_args *c, const struct request *r,
                                 struct modrec *rec, struct frame_buf *req,
                                 struct result *res, struct call_outcome *o, char *err,
                                 size_t errlen)
{
	const struct run_args *a = c->run;
	struct warm_want want = warm_want_of(a);
	enum call_status st;

	if (!a->settings->server || c->dirfd < 0)
		return CALL_FALLBACK;
	want_preload(c, r, rec, &want);
	if (request_encode(c, r, true, req) < 0) {
		snprintf(err, errlen, "cannot build the request: %s", strerror(errno));
		return CALL_FAILED;
	}
	st = warm_run(c->dirfd, req->data, req->len, c->fds, c->deadline,
	              a->settings->timeout, &want, c->watch, host_tools_of(a), &res->out,
	              &res->err, o, err, errlen);
	if (st == CALL_BROKEN) {
		res->exit_code = DOLSOT_EXIT_FAIL;
		res->error = strdup(err);
		st = CALL_DONE;
	}
	return st;
}

int call_run(const struct call_args *c, struct result *res, struct call_save *sv,
             int *sig, bool *no_server, char *err, size_t errlen)
{
	struct frame_buf req = { 0 };
	struct request r;
	struct call_outcome o;
	struct worker_result wr;
	struct modrec rec;   /* the session's as loaded (18 KB; the stack has room) */
	enum call_status st;
	bool oom;
	char *decl = NULL;   /* the host tools' declarations, for the request */

	memset(sv, 0, sizeof(*sv));
	typegate_choose(c->run->settings->typecheck, c->run->settings->ty_bin, &res->gate);
	if (request_build(c, &res->gate, &r) < 0 || (host_tools_any(c->run->tools) &&
	                                 !(decl = host_tools_declarations(c->run->tools)))) {
		snprintf(err, errlen, "cannot build the request: %s", strerror(errno));
		return -1;
	}
	if (decl)
		r.tools = span_str(decl);
	rec.n = 0;
	st = run_warm(c, &r, &rec, &req, res, &o, err, errlen);
	if ((st == CALL_NO_SERVER || st == CALL_FALLBACK) && (r.flags & REQ_LIVE) &&
	    live_wait(c))
		st = run_warm(c, &r, &rec, &req, res, &o, err, errlen);
	if (st == CALL_NO_SERVER)
		*no_server = true;
	if (st == CALL_NO_SERVER || st == CALL_FALLBACK) {
		st = CALL_FAILED;
		if (request_encode(c, &r, false, &req) < 0)
			snprintf(err, errlen, "cannot build the request: %s", strerror(errno));
		else
			st = cold_run(req.data, req.len, c->fds, c->deadline, c->watch,
			              host_tools_of(c->run), worker_child, NULL, &res->out, &res->err, &o, err, errlen);
	}
	frame_buf_release(&req);
	free(decl);
	if (capture_finish(&res->out) < 0 || capture_finish(&res->err) < 0)
		result_warn(res, "dolsot: out of memory while cutting the output; only its "
		            "head is shown");
	if (st != CALL_DONE)
		return -1;
	if (res->error)
		return 0;   /* the warm path broke after the cell may have run */
	*sig = o.signal;
	oom = c->cgroup->memory[0] && pidcg_oom_killed(c->cgroup->memory);
	memset(&wr, 0, sizeof(wr));
	res->found = c->found;
	if (take_outcome(&o, c->run->settings, oom, &wr, res) && !o.signal) {
		sv->wanted = true;
		sv->errnum = (int)wr.save_errno;
		sv->len = (size_t)wr.blob_len;
		if (!sv->errnum)
			prepare_next(c, &r, &rec);
	}
	if (o.left_behind)
		note_left_behind(res, o.left_behind);
	if (o.rolled_back)
		result_warn(res, "dolsot: session rolled back to its state before this call");
	if (o.live_ended[0]) {
		char line[sizeof(o.live_ended) + 128];

		snprintf(line, sizeof(line), "dolsot: the session's live process was ended "
		         "before this call: %s; the call started from the store", o.live_ended);
		result_warn(res, line);
	}
	take_timings(wr.timings, c->t0 * 1e3, res);
	call_outcome_release(&o);
	return 0;
}
