/*
 * repl.c - one call: lock, open the session, fork a worker, supervise, save.
 *
 * The session is either the old state or the new one, never a mix: the
 * worker reads the session file and writes the new state into a temp file
 * the store made (neither passes through this process), and the store
 * renames it into place, under the session lock, after the worker has
 * finished and only if it answered that it saved.
 */
#include "repl.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <limits.h>
#include <unistd.h>

#include "frame.h"
#include "pidcg.h"
#include "proc.h"
#include "warm.h"
#include "worker.h"

_Static_assert(OPTS_MAX_TOOLBOXES <= FRAME_MAX_TOOLBOXES,
               "every --toolbox the CLI accepts must fit in a request");

struct store *repl_open_store(const struct settings *s, char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st = store_file_open(s->cache_dir, s->ttl_days, serr);

	if (st && s->memory_store) {
		/* The directory still hosts the server's socket; the sessions
		 * themselves live in the server. */
		if (warm_ensure_server(store_dirfd(st), s->server_idle) < 0) {
			snprintf(err, errlen, "cannot start the warm server for DOLSOT_STORE=memory: %s",
			         strerror(errno));
			store_close(st);
			return NULL;
		}
		st = store_remote_open(st, serr);
	}
	if (!st)
		snprintf(err, errlen, "%s", serr);
	return st;
}

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

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
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

static int encode_request(const struct run_args *a, size_t blob_len, bool found,
                          const struct plan_cgroups *cgroup, bool warm,
                          struct frame_buf *buf)
{
	struct request r;
	char cwd[PATH_MAX], *env = NULL;
	int ret;

	memset(&r, 0, sizeof(r));
	r.code = (struct span){ (const uint8_t *)a->code, a->code_len, true };
	r.session = span_str(a->session);
	if (found) {
		r.flags |= REQ_SESSION;
		r.blob_len = blob_len;
	}
	if (a->n_toolboxes > FRAME_MAX_TOOLBOXES) {
		errno = E2BIG;
		return -1;
	}
	for (size_t i = 0; i < a->n_toolboxes; i++) {
		r.toolboxes[i].module = span_str(a->toolboxes[i].module);
		r.toolboxes[i].alias = span_str(a->toolboxes[i].alias);
	}
	r.n_toolboxes = a->n_toolboxes;
	r.max_output = a->settings->max_output;
	r.budget_ns = (uint64_t)(a->settings->timeout * 1e9);
	if (a->settings->carry)
		r.flags |= REQ_CARRY;
	/* A warm worker is forked from a zygote, not from us: tell it where and
	 * with what environment the caller runs (unless the plan gives one).
	 * A cold one inherits both. */
	if (warm && getcwd(cwd, sizeof(cwd))) {
		r.cwd = span_str(cwd);
		if (!(a->plan && a->plan->env) && pack_environ(&r.env, &env) < 0)
			return -1;
	}
	if (a->settings->typecheck)
		r.flags |= REQ_TYPECHECK;
	if (a->json)
		r.flags |= REQ_JSON;
	if (a->describe) {
		r.flags |= REQ_DESCRIBE;
		r.describe = (struct span){ (const uint8_t *)a->describe_mounts,
		                            a->describe_mounts_len, true };
	}
	r.ty_bin = span_str(a->settings->ty_bin);
	sandbox_plan_fill(a->plan, a->settings, cgroup, &r);
	ret = frame_encode_request(buf, &r);
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

/* Turn the worker's outcome into *res; returns true when there is a blob to save. */
static bool take_outcome(const struct proc_outcome *o, const struct settings *s,
                         bool oom, struct worker_result *wr, struct result *res)
{
	char ferr[256];
	bool exited_ok = WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;

	if (o->timed_out) {
		res->status = STATUS_TIMEOUT;
		res->ran = true;
		res->exit_code = DOLSOT_EXIT_TIMEOUT;
		res->error = dup_printf("TimeoutError: cell killed after exceeding its %gs "
		                        "timeout; session unchanged\n" TIMEOUT_HINT,
		                        s->timeout, s->timeout);
		return false;
	}
	if (!o->result || frame_decode_result(o->result, o->result_len, wr, ferr,
	                                      sizeof(ferr)) < 0) {
		res->exit_code = DOLSOT_EXIT_FAIL;
		res->status = STATUS_KILLED;
		res->ran = true;
		/* A worker that died may have left a partial (or pre-sized) answer. */
		res->error = o->result && exited_ok
		             ? dup_printf("dolsot: the worker's answer is malformed (%s); "
		                          "session unchanged", ferr)
		             : death_message(o->status, &s->limits, oom);
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
static struct warm_key warm_key_of(const struct run_args *a)
{
	struct warm_key key = { a->toolboxes, a->n_toolboxes, NULL, 0 };

	if (a->settings->sandbox && a->plan && a->plan->env) {
		key.env = a->plan->env;
		key.env_len = a->plan->env_len;
	}
	return key;
}

/* Try the warm server; returns true when *o holds the call's outcome or
 * *res already says why the call failed. */
static bool run_warm(const struct run_args *a, struct store *st,
                     const struct frame_buf *req, const struct worker_fds *fds,
                     const struct timespec *deadline, struct result *res,
                     struct proc_outcome *o, bool *no_server)
{
	struct warm_key key = warm_key_of(a);
	int dirfd = store_dirfd(st);
	char err[REPL_ERR_MAX];

	if (!a->settings->server || dirfd < 0)
		return false;
	switch (warm_run(dirfd, req->data, req->len, fds, deadline, a->settings->timeout, &key,
	                 &res->out, &res->err, o, err, sizeof(err))) {
	case WARM_DONE:
		return true;
	case WARM_BROKEN:
		res->exit_code = DOLSOT_EXIT_FAIL;
		res->error = strdup(err);
		return true;
	case WARM_NO_SERVER:
		*no_server = true;
		return false;
	case WARM_FALLBACK:
	default:
		return false;
	}
}

/* Make what the worker wrote the session, or say why not. */
static void save_session(struct store *st, struct store_save *sv,
                         const struct worker_result *wr, struct result *res)
{
	char serr[STORE_ERR_MAX];
	/* A bounded writer fails at the bound: say so, not how it failed. */
	bool too_big = sv->max && wr->blob_len > sv->max;
	int rc = wr->save_errno && !too_big
	         ? store_save_fail(st, sv, "write", (int)wr->save_errno, serr)
	         : store_save_commit(st, sv, (size_t)wr->blob_len, serr);

	if (rc == 0) {
		res->saved = true;
		return;
	}
	res->save_error = strdup(serr);
	if (res->exit_code == 0)
		res->exit_code = DOLSOT_EXIT_FAIL;
}

/*
 * A session a sandboxed call wrote holds the cell's bytes: loading it
 * outside the sandbox would run the cell's code (an object's __reduce__,
 * the carried environment) on the host.  Refuse that, before anything of
 * it is read, unless the caller opted in.
 */
static int check_origin(const struct run_args *a, struct store *st, char *err,
                        size_t errlen)
{
	char serr[STORE_ERR_MAX];
	bool sandboxed;

	if (a->settings->sandbox || a->settings->trust_sandboxed)
		return 0;
	if (store_origin(st, a->session, &sandboxed, serr) < 0) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	if (!sandboxed)
		return 0;
	snprintf(err, errlen, "session '%s' was last written by a sandboxed call, and "
	         "loading it outside the sandbox could run that cell's code on the host: "
	         "run it with --sandbox, start it afresh with 'dolsot --reset %s', or set "
	         "DOLSOT_TRUST_SANDBOXED=1 to load it anyway", a->session, a->session);
	errno = EPERM;
	return -1;
}

/*
 * The session's files for the worker: its file to read (none when new) and
 * an empty one to write the next state into.  Under --max-file-size that
 * one is a memfd: the worker's own save must not trip the cell's limit.
 * A sandboxed worker gets memfds only, never a file of the store: a copy
 * of the session, and a memfd that cannot grow past the maximum session
 * size, so the cell cannot fill the host's disk or rewrite the store.
 */
static int open_session(const struct run_args *a, struct store *st,
                        struct worker_fds *fds, struct store_save *sv,
                        size_t *blob_len, bool *found, char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	bool sandbox = a->settings->sandbox;
	bool memfd = a->settings->limits.v[LIMIT_MAX_FILE_SIZE] != 0 || sandbox;

	if (check_origin(a, st, err, errlen) < 0)
		return -1;
	if (store_open_blob(st, a->session, sandbox, &fds->load, blob_len, found, serr) < 0 ||
	    store_save_begin(st, a->session, memfd, a->settings->max_session, sv, serr) < 0) {
		snprintf(err, errlen, "%s", serr);
		if (fds->load >= 0)
			close(fds->load);
		fds->load = -1;
		return -1;
	}
	fds->save = sv->fd;
	sv->sandboxed = sandbox;
	return 0;
}

/* The request for the warm path (when the server may take it) or the cold
 * one, in *req (replacing what it held). */
static int build_request(const struct run_args *a, size_t blob_len, bool found,
                         const struct plan_cgroups *cgroup, bool warm,
                         struct frame_buf *req,
                         char *err, size_t errlen)
{
	frame_buf_release(req);
	if (warm && !a->settings->server)
		return 0;
	if (encode_request(a, blob_len, found, cgroup, warm, req) < 0) {
		snprintf(err, errlen, "cannot build the request: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int run_locked(const struct run_args *a, struct store *st, double t0_ms,
                      struct result *res, int *sig, bool *no_server,
                      char *err, size_t errlen)
{
	struct worker_fds fds = { -1, -1, -1, -1 };
	struct store_save sv = { .fd = -1 };
	size_t blob_len = 0;
	bool found = false;
	struct frame_buf req = { 0 };
	struct timespec deadline;
	struct proc_outcome o;
	struct worker_result wr;
	struct plan_cgroups cgroup = { "", "" };
	bool oom;
	int ret = -1;

	if (open_session(a, st, &fds, &sv, &blob_len, &found, err, errlen) < 0)
		return -1;
	if (sandbox_plan_begin(a->settings, &cgroup, err, errlen) < 0)
		goto out;
	proc_deadline_in(&deadline, a->settings->timeout);
	if (build_request(a, blob_len, found, &cgroup, true, &req, err, errlen) < 0)
		goto out;
	if (!run_warm(a, st, &req, &fds, &deadline, res, &o, no_server) &&
	    (build_request(a, blob_len, found, &cgroup, false, &req, err, errlen) < 0 ||
	     proc_run(req.data, req.len, &fds, &deadline, worker_child, NULL, &res->out,
	              &res->err, &o, err, errlen) < 0))
		goto out;
	/* Every process of the call is gone by now, on either path. */
	oom = cgroup.memory[0] && pidcg_oom_killed(cgroup.memory);
	sandbox_plan_end(&cgroup);
	ret = 0;
	if (res->error)
		goto out;   /* the warm path broke after the cell may have run */
	*sig = o.signal;
	memset(&wr, 0, sizeof(wr));
	res->found = found;
	if (take_outcome(&o, a->settings, oom, &wr, res) && !o.signal) {
		double t = now_ms();

		save_session(st, &sv, &wr, res);
		res->timings_ms[TIMING_SAVE] = now_ms() - t;
	}
	take_timings(wr.timings, t0_ms, res);
	proc_outcome_release(&o);
out:
	sandbox_plan_end(&cgroup);
	store_save_abort(st, &sv);   /* unless committed: the old session stays */
	if (fds.load >= 0)
		close(fds.load);
	frame_buf_release(&req);
	return ret;
}

/* --describe without a session: no store, no lock, a cold worker. */
static int describe_alone(const struct run_args *a, struct result *res, int *sig,
                          char *err, size_t errlen)
{
	struct worker_fds fds = { -1, -1, -1, -1 };
	struct run_args one = *a;
	struct frame_buf req = { 0 };
	struct worker_result wr;
	struct proc_outcome o;
	struct timespec deadline;
	struct plan_cgroups cgroup = { "", "" };
	bool oom;
	int ret = -1;

	one.session = "";
	if (sandbox_plan_begin(a->settings, &cgroup, err, errlen) < 0)
		return -1;
	proc_deadline_in(&deadline, a->settings->timeout);
	if (build_request(&one, 0, false, &cgroup, false, &req, err, errlen) < 0 ||
	    proc_run(req.data, req.len, &fds, &deadline, worker_child, NULL, &res->out,
	             &res->err, &o, err, errlen) < 0)
		goto out;
	ret = 0;
	*sig = o.signal;
	oom = cgroup.memory[0] && pidcg_oom_killed(cgroup.memory);
	memset(&wr, 0, sizeof(wr));
	take_outcome(&o, a->settings, oom, &wr, res);
	proc_outcome_release(&o);
out:
	sandbox_plan_end(&cgroup);
	frame_buf_release(&req);
	return ret;
}

int repl_run(const struct run_args *a, struct result *res, int *sig,
             char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st;
	struct store_lock lk;
	bool no_server = false;
	double t0_ms = now_ms();
	int ret;

	*sig = 0;
	res->session = a->session;
	if (!a->session)
		return describe_alone(a, res, sig, err, errlen);
	st = repl_open_store(a->settings, err, errlen);
	if (!st)
		return -1;
	if (store_lock(st, a->session, (long)(a->settings->timeout * 1000), &lk, serr) < 0) {
		snprintf(err, errlen, "%s", serr);
		store_close(st);
		return -1;
	}
	ret = run_locked(a, st, t0_ms, res, sig, &no_server, err, errlen);
	if (ret == 0)
		res->timings_ms[TIMING_TOTAL] = now_ms() - t0_ms;
	store_unlock(st, &lk);
	if (no_server && !*sig) {
		struct warm_key key = warm_key_of(a);

		/* Cold this time; warm for the calls that follow. */
		warm_spawn_server(store_dirfd(st), a->settings->server_idle, &key);
	}
	store_close(st);
	return ret;
}

int repl_reset(const struct settings *s, const char *target, unsigned *removed,
               char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st = repl_open_store(s, err, errlen);
	struct store_lock lk;
	bool one = strcmp(target, "all") != 0;
	int ret = -1;

	if (!st)
		return -1;
	if (one && store_lock(st, target, (long)(s->timeout * 1000), &lk, serr) < 0)
		goto out;
	ret = store_del(st, target, removed, serr);
	if (one)
		store_unlock(st, &lk);
out:
	if (ret < 0)
		snprintf(err, errlen, "%s", serr);
	store_close(st);
	return ret;
}

int repl_server_start(const struct settings *s, const struct toolbox_arg *toolboxes,
                      size_t n, const struct sandbox_plan *plan, char *err,
                      size_t errlen)
{
	struct store *st = repl_open_store(s, err, errlen);
	struct run_args a = { .toolboxes = toolboxes, .n_toolboxes = n, .settings = s,
	                      .plan = plan };
	struct warm_key key = warm_key_of(&a);
	int ret = 0;

	if (!st)
		return -1;
	char why[512] = "";

	if (warm_wait_ready(store_dirfd(st), s->server_idle, &key, s->timeout, why,
	                    sizeof(why)) < 0) {
		if (errno == ENOEXEC)
			snprintf(err, errlen, "the server cannot warm this environment: %s", why);
		else if (errno == ETIMEDOUT)
			snprintf(err, errlen, "the server did not get ready within %gs (a "
			         "toolbox that fails to import keeps calls on the cold path)",
			         s->timeout);
		else
			snprintf(err, errlen, "cannot start the server: %s", strerror(errno));
		ret = -1;
	}
	store_close(st);
	return ret;
}

int repl_server_info(const struct settings *s, char *buf, size_t len, char *err,
                     size_t errlen)
{
	struct store *st = repl_open_store(s, err, errlen);
	int ret;

	if (!st)
		return -1;
	ret = warm_info(store_dirfd(st), buf, len) == 0;
	store_close(st);
	return ret;
}

int repl_server_stop(const struct settings *s, long *pid, char *err, size_t errlen)
{
	struct store *st = repl_open_store(s, err, errlen);
	int ret;

	if (!st)
		return -1;
	ret = warm_stop(store_dirfd(st), pid);
	if (ret < 0)
		snprintf(err, errlen, "cannot stop the server: %s", strerror(errno));
	store_close(st);
	return ret;
}
