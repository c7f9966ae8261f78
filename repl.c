/*
 * repl.c - one call: lock, open the session, fork a worker, supervise, save.
 *
 * The session is either the old state or the new one, never a mix: the
 * worker reads the session file and writes the new state into a temp file
 * the store made (neither passes through this process), and the store
 * renames it into place, under the session lock, after the worker has
 * finished and only if it answered that it saved.
 *
 * Its rooms: call/ runs the call (warm, else cold) and store/ keeps the
 * session; server/ is the warm server a call may reach.
 */
#include "repl.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "display_files.h"
#include "fdio.h"
#include "histrec.h"
#include "output_json.h"
#include "pidcg.h"
#include "recall.h"
#include "stopsig.h"
#include "timeline.h"
#include "warm.h"

/* How many times a lock whose server ended before it answered is asked
 * again of one started anew: a killed server's listener, as it closes,
 * may take the first retry's connection with it too. */
#define LOCK_GONE_RETRIES 2

/* The message for id's lock not had (got), the store's reason why. */
static void lock_refused(enum store_lock_status got, const char *id, const char *why,
                         char *err, size_t errlen)
{
	if (got == STORE_LOCK_BUSY)
		snprintf(err, errlen, "session '%s' is busy: %s", id, why);
	else
		snprintf(err, errlen, "cannot lock session '%s': %s", id, why);
}

static enum store_lock_status lock_one(const struct settings *s, struct store *st,
                                       const char *id, long ms, struct store_lock *lk,
                                       char *why, size_t len);

int repl_lock(const struct settings *s, struct store *st, const char *id,
              struct store_lock *lk, char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];
	enum store_lock_status got = lock_one(s, st, id, (long)(s->timeout * 1000), lk, why,
	                                      sizeof(why));

	if (got == STORE_LOCKED)
		return 0;
	lock_refused(got, id, why, err, errlen);
	return -1;
}

static bool store_holds(const struct session_info *info, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(info[i].id, id) == 0)
			return true;
	return false;
}

/* Keep, in place, the sessions of info[0..n) in namespace ns, each
 * named by its id within it when local; how many are left. */
static size_t keep_namespace(const char *ns, struct session_info *info, size_t n, bool local)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		if (!store_ns_holds(ns, info[i].id))
			continue;
		info[kept] = info[i];
		if (local)
			memmove(info[kept].id, store_ns_id(info[kept].id),
			        strlen(store_ns_id(info[kept].id)) + 1);
		kept++;
	}
	return kept;
}

/*
 * The file store reaps expired sessions on every operation; the images of
 * a session it no longer holds go as well, once their directory has not
 * changed for the TTL.  A call making that session anew holds its lock
 * (taken here without waiting, or the directory is skipped) from before
 * its load until its images are written.  Never fails the operation.
 */
static void reap_images(const struct settings *s, struct store *st)
{
	char root[PATH_MAX], err[REPL_ERR_MAX], serr[STORE_ERR_MAX];
	struct session_info *info = NULL;
	double ttl = s->ttl_days * 86400.0;
	size_t n = 0, held = 0;
	char **ids = NULL;

	if (s->store != STORE_KIND_FILE || !(ttl > 0) ||
	    display_root(s->cache_dir, root, sizeof(root)) < 0 ||
	    display_files_stale(root, ttl, &ids, &n, err, sizeof(err)) < 0 || n == 0)
		return;
	if (store_list(st, &info, &held, serr, sizeof(serr)) == 0) {
		for (size_t i = 0; i < n; i++) {
			struct store_lock lk;
			unsigned removed;

			if (!store_ns_holds(s->ns, ids[i]) || store_holds(info, held, ids[i]) ||
			    store_lock(st, ids[i], 0, &lk, serr, sizeof(serr)) != STORE_LOCKED)
				continue;
			(void)display_files_remove(root, ids[i], ttl, &removed, err, sizeof(err));
			store_unlock(st, &lk);
		}
	}
	free(info);
	display_files_stale_free(ids, n);
}

struct store *repl_open_store(const struct settings *s, char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st = store_open(s->store, s->store_spec, s->cache_dir, s->ttl_days,
	                              s->timeout, serr, sizeof(serr));

	if (!st || store_sign_with(st, s->session_key, serr, sizeof(serr)) < 0) {
		snprintf(err, errlen, "%s", serr);
		store_close(st);
		return NULL;
	}
	/* Sessions that live in the server need one running. */
	if (s->store == STORE_KIND_MEMORY &&
	    warm_ensure_server(store_home(st), s->server_idle, serr, sizeof(serr)) < 0) {
		snprintf(err, errlen, "cannot start the warm server for DOLSOT_STORE=memory: %s",
		         serr);
		store_close(st);
		return NULL;
	}
	store_set_namespace(st, s->ns);
	reap_images(s, st);
	store_keep_history(st, (unsigned)s->history);
	return st;
}

/*
 * store_lock, and for the memory store a server started anew when the one
 * the lock asked ended before it answered.  repl_open_store saw it listen,
 * but a killed server's listener takes connections until its last fd is
 * closed, and the server may end at any moment since: its sessions are
 * gone with it, and the one started anew says so at the load.
 */
static enum store_lock_status lock_one(const struct settings *s, struct store *st,
                                       const char *id, long ms, struct store_lock *lk,
                                       char *why, size_t len)
{
	char serr[128];   /* a strerror */
	enum store_lock_status got = store_lock(st, id, ms, lk, why, len);

	for (int i = 0; got == STORE_LOCK_GONE && i < LOCK_GONE_RETRIES; i++) {
		if (warm_ensure_server(store_home(st), s->server_idle, serr, sizeof(serr)) < 0) {
			snprintf(why, len, "the warm server ended, and none could be started: %s",
			         serr);
			return STORE_LOCK_FAILED;
		}
		got = store_lock(st, id, ms, lk, why, len);
	}
	return got == STORE_LOCK_GONE ? STORE_LOCK_FAILED : got;
}

/* The text contract's images: files in the session's output directory,
 * written under the session's lock; when they cannot be, a warning says
 * why. */
static void write_images(const struct settings *s, const char *stored, struct result *res)
{
	char dir[PATH_MAX], err[REPL_ERR_MAX], line[REPL_ERR_MAX + 16];

	if (display_dir(s->cache_dir, stored, dir, sizeof(dir)) < 0)
		snprintf(err, sizeof(err), "the output directory's name is too long");
	else if (display_files_write(res, dir, err, sizeof(err)) == 0)
		return;
	snprintf(line, sizeof(line), "warning: %s", err);
	result_warn(res, line);
}

/* What the store found to say of itself (a Redis that restarted, say),
 * after the cell's warnings. */
static void take_notice(struct store *st, struct result *res)
{
	char *n = store_take_notice(st);

	if (!n)
		return;
	result_warn(res, n);
	free(n);
}

/* The session's call-id record as it was loaded (callrec.h), carried to
 * the next save. */
struct loaded_rec {
	uint8_t *p;
	size_t len;
};

/* The result as --json says it (saved: once the state is saved), into
 * *json (malloc'd, *len bytes); NULL when it cannot be had. */
static void result_json(struct result *res, bool saved, char **json, size_t *len)
{
	bool was = res->saved;
	FILE *f = open_memstream(json, len);

	res->saved = saved;
	if (!f || output_json_run(res, f) != 0) {
		if (f)
			fclose(f);
		free(*json);
		*json = NULL;
	} else if (fclose(f) != 0) {
		free(*json);
		*json = NULL;
	}
	if (!*json)
		*len = 0;
	res->saved = was;
}

/*
 * Commit with the cell's code and its result as the new state's history
 * record (histrec.h); a result over what a record keeps is left out (its
 * status stays, with the code).
 */
static int commit_cell(const struct run_args *a, struct store *st, struct store_save *sv,
                       size_t len, const uint8_t *rec, size_t rec_len, double t0,
                       struct result *res, char *serr, size_t serrlen)
{
	struct histrec_cell cell = { .kind = HISTREC_CELL, .exit_code = res->exit_code };
	char *json = NULL;
	size_t json_len = 0;
	int rc;

	cell.duration_us = (uint64_t)((deadline_now() - t0) * 1e6);
	cell.code = (const uint8_t *)a->code;
	cell.code_len = a->code ? a->code_len : 0;
	if (st->history)
		result_json(res, true, &json, &json_len);
	cell.result = (const uint8_t *)json;
	cell.result_len = json_len;
	rc = store_save_commit_cell(st, sv, len, rec, rec_len, &cell, serr, serrlen);
	free(json);
	return rc;
}

/* A cell that ran and was rolled back is kept in the record of the state
 * it ran on (timeline.h); when it cannot be, a warning says why (unless
 * its own save failed: that was said). */
static void record_attempt(const struct run_args *a, struct store *st,
                           const uint8_t *rec, size_t rec_len, double t0,
                           struct result *res)
{
	struct histrec_attempt at = { .exit_code = res->exit_code };
	char serr[STORE_ERR_MAX], line[STORE_ERR_MAX + 96], *json = NULL;
	struct timespec now;
	size_t json_len = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	at.time_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	at.duration_us = (uint64_t)((deadline_now() - t0) * 1e6);
	at.code = (const uint8_t *)a->code;
	at.code_len = a->code_len;
	result_json(res, false, &json, &json_len);
	at.result = (const uint8_t *)json;
	at.result_len = json_len;
	/* After a failed save, what failed it has been said already. */
	if (timeline_record_attempt(st, a->session, &at, rec, rec_len, serr, sizeof(serr)) < 0 &&
	    !res->save_error) {
		snprintf(line, sizeof(line), "dolsot: warning: this rolled-back cell is not in "
		         "the session's history: %s", serr);
		result_warn(res, line);
	}
	free(json);
}

/*
 * Make what the worker wrote the session, with the call-id record: the
 * loaded one, and with --call-id this call's result in it too (then, once
 * committed, the call says what it recorded), or say why not.
 */
static void save_session(const struct run_args *a, struct store *st, struct store_save *sv,
                         const struct call_save *want, const struct loaded_rec *rec,
                         double t0, struct result *res)
{
	char serr[STORE_ERR_MAX];
	/* A bounded writer fails at the bound: say so, not how it failed. */
	bool too_big = sv->max && want->len > sv->max;
	uint8_t *mine = NULL;
	size_t mine_len = 0;
	int rc = 0;

	if (want->errnum && !too_big) {
		rc = store_save_fail(st, sv, "write", want->errnum, serr, sizeof(serr));
	} else {
		if (a->call_id) {
			res->timings_ms[TIMING_TOTAL] = (deadline_now() - t0) * 1e3;
			rc = recall_record(rec->p, rec->len, a->call_id, res, &mine, &mine_len,
			                   serr, sizeof(serr));
		}
		if (rc == 0)
			rc = commit_cell(a, st, sv, want->len, a->call_id ? mine : rec->p,
			                 a->call_id ? mine_len : rec->len, t0, res, serr,
			                 sizeof(serr));
	}
	free(mine);
	if (rc == 0) {
		res->saved = true;
		res->said = a->call_id && res->said_out.p;
		return;
	}
	res->save_error = strdup(serr);
	if (res->exit_code == 0)
		res->exit_code = DOLSOT_EXIT_FAIL;
}

/*
 * A session a sandboxed call wrote holds the cell's bytes: loading it
 * outside the sandbox would run the cell's code (an object's __reduce__,
 * the carried environment) on the host.  Refuse that, before a worker gets
 * any of it, unless the caller opted in.  Its signature says who wrote it
 * as well as the store's record: when they disagree, it was a sandboxed
 * call (the record was changed by someone without the key).
 */
static int check_origin(const struct run_args *a, enum store_origin origin, char *err,
                        size_t errlen)
{
	if (a->settings->sandbox || a->settings->trust_sandboxed ||
	    origin == STORE_ORIGIN_HOST)
		return 0;
	snprintf(err, errlen, "session '%s' was last written by a sandboxed call%s, and "
	         "loading it outside the sandbox could run that cell's code on the host: "
	         "run it with --sandbox, start it afresh with 'dolsot --reset %s', or set "
	         "DOLSOT_TRUST_SANDBOXED=1 to load it anyway", a->session,
	         origin == STORE_ORIGIN_DISPUTED ? " (so says its signature, though the "
	         "store's record of it says otherwise: someone without the session key "
	         "changed that record)" : "", a->session);
	return -1;
}

/*
 * The session's files for the worker: its verified copy to read (none when
 * new) and an empty one to write the next state into.  Under
 * --max-file-size that one is a memfd: the worker's own save must not trip
 * the cell's limit.  A sandboxed worker gets memfds only, never a file of
 * the store: a memfd that cannot grow past the maximum session size, so
 * the cell cannot fill the host's disk or rewrite the store.  units: where
 * the worker reads the session's units (store.h).
 */
static int open_session(const struct run_args *a, struct store *st, enum store_units units,
                        struct worker_fds *fds, struct store_save *sv,
                        size_t *blob_len, bool *found, struct loaded_rec *rec,
                        char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	bool sandbox = a->settings->sandbox;
	bool memfd = a->settings->limits.v[LIMIT_MAX_FILE_SIZE] != 0 || sandbox;
	enum store_origin origin;

	if (store_open_blob_rec(st, a->session, &fds->load, blob_len, found, &rec->p,
	                        &rec->len, &origin, units, serr, sizeof(serr)) < 0) {
		snprintf(err, errlen, "%s", serr);
		return -1;
	}
	if (check_origin(a, origin, err, errlen) < 0) {
		fd_close(&fds->load);
		return -1;
	}
	if (store_save_begin(st, a->session, memfd, a->settings->max_session, sv, serr,
	                     sizeof(serr)) < 0) {
		snprintf(err, errlen, "%s", serr);
		fd_close(&fds->load);
		return -1;
	}
	fds->save = sv->fd;
	sv->sandboxed = sandbox;
	return 0;
}

/* The locks a call holds: its session's and, for a fork, the source's. */
struct call_locks {
	struct store *st;
	struct store_lock lk[2];
	int n;                  /* how many of lk are held */
};

/* The cell runs in pidfd's process (cell_watch): each lock of the call is
 * to be released as soon as it is gone, should this process die first
 * (issue 35). */
static void watch_cell(int pidfd, void *ctx)
{
	struct call_locks *l = ctx;

	for (int i = 0; i < l->n; i++)
		store_lock_watch(l->st, &l->lk[i], pidfd);
}

/* With --call-id, whether the session recorded it: then *res says that
 * call's result again (1); 0 when not, -1 with err. */
static int recalled(const struct run_args *a, const struct loaded_rec *rec,
                    struct result *res, char *err, size_t errlen)
{
	return a->call_id ? recall_find(rec->p, rec->len, a->call_id, res, err, errlen) : 0;
}

static int run_locked(const struct run_args *a, struct store *st, struct call_locks *lk,
                      double t0, struct result *res, int *sig, bool *no_server,
                      char *err, size_t errlen)
{
	struct worker_fds fds = { -1, -1, -1, -1, -1 };
	struct store_save sv = { .fd = -1, .priv = NULL };
	struct cell_watch watch = { watch_cell, lk };
	struct call_args c = { .run = a, .fds = &fds, .dirfd = store_home(st), .t0 = t0,
	                       .watch = &watch };
	struct call_save want;
	struct timespec deadline;
	struct plan_cgroups cgroup = { "", "" };
	struct loaded_rec rec = { NULL, 0 };
	char units[PATH_MAX];
	int ret = -1, again, keeps;

	/* Where the worker finds the session's units: a sandboxed one only in
	 * what it is handed (open_session packs them), never in the store. */
	keeps = store_units_dir(st, units, sizeof(units), err, errlen);
	if (keeps < 0)
		return -1;
	c.units = keeps == 0 ? NULL : a->settings->sandbox || !units[0] ? "-" : units;
	if (open_session(a, st, !c.units ? STORE_UNITS_UNREAD : !strcmp(c.units, "-") ?
	                 STORE_UNITS_PACKED : STORE_UNITS_IN_DIR, &fds, &sv, &c.blob_len,
	                 &c.found, &rec, err, errlen) < 0)
		return -1;
	again = recalled(a, &rec, res, err, errlen);
	if (again != 0) {
		ret = again > 0 ? 0 : -1;
		goto out;
	}
	if (sandbox_plan_begin(a->settings, &cgroup, err, errlen) < 0)
		goto out;
	deadline_in(&deadline, a->settings->timeout);
	c.deadline = &deadline;
	c.cgroup = &cgroup;
	ret = call_run(&c, res, &want, sig, no_server, err, errlen);
	/* Every process of the call is gone by now, on either path. */
	sandbox_plan_end(&cgroup);
	/* A stop signal after the cell ended and before the commit: the
	 * session stays as it was (the signals are held, see repl_run). */
	if (ret == 0 && !*sig)
		*sig = stopsig_take();
	/* The images first: a --call-id's record holds the lines naming them. */
	if (ret == 0 && !*sig && !a->json && res->displays.p)
		write_images(a->settings, a->session, res);
	if (ret == 0 && want.wanted && !*sig) {
		double t = deadline_now();

		save_session(a, st, &sv, &want, &rec, t0, res);
		res->timings_ms[TIMING_SAVE] = (deadline_now() - t) * 1e3;
	}
	if (ret == 0 && !*sig && res->ran && !res->saved && st->history) {
		store_save_abort(st, &sv);
		record_attempt(a, st, rec.p, rec.len, t0, res);
	}
out:
	sandbox_plan_end(&cgroup);
	store_save_abort(st, &sv);   /* unless committed: the old session stays */
	fd_close(&fds.load);
	free(rec.p);
	return ret;
}

/* A --fork call repeating a recorded --call-id is said again before the
 * fork, which would otherwise refuse (or, with --replace, start over)
 * the session the first call made: 1 when it is (*res filled). */
static int recalled_fork(const struct run_args *a, struct store *st, struct result *res,
                         char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct loaded_rec rec = { NULL, 0 };
	enum store_origin origin;   /* only its record is read: nothing is unpickled */
	size_t len;
	bool found;
	int fd = -1, ret;

	if (!a->call_id || !a->code)
		return 0;
	if (store_open_blob_rec(st, a->session, &fd, &len, &found, &rec.p, &rec.len, &origin,
	                        STORE_UNITS_UNREAD, serr, sizeof(serr)) < 0) {
		/* A session that does not load is the fork's to refuse or replace. */
		return 0;
	}
	fd_close(&fd);
	ret = recalled(a, &rec, res, err, errlen);
	free(rec.p);
	return ret;
}

/* --describe without a session: no store, no lock, a cold worker. */
static int describe_alone(const struct run_args *a, double t0, struct result *res, int *sig,
                          char *err, size_t errlen)
{
	struct worker_fds fds = { -1, -1, -1, -1, -1 };
	struct run_args one = *a;
	struct call_args c = { .run = &one, .fds = &fds, .dirfd = -1, .t0 = t0 };
	struct call_save want;
	struct timespec deadline;
	struct plan_cgroups cgroup = { "", "" };
	bool no_server = false;
	int ret;

	one.session = "";
	if (sandbox_plan_begin(a->settings, &cgroup, err, errlen) < 0)
		return -1;
	deadline_in(&deadline, a->settings->timeout);
	c.deadline = &deadline;
	c.cgroup = &cgroup;
	ret = call_run(&c, res, &want, sig, &no_server, err, errlen);
	sandbox_plan_end(&cgroup);
	return ret;
}

/*
 * Lock the call's session and, for a fork, its source too: both in the
 * order of their ids, so two forks between the same sessions in opposite
 * directions cannot each hold one lock and wait for the other.
 */
static int lock_call(const struct run_args *a, struct store *st, struct call_locks *l,
                     char *err, size_t errlen)
{
	long ms = (long)(a->settings->timeout * 1000);
	const char *ids[2] = { a->session, a->fork };
	char serr[STORE_ERR_MAX];

	l->n = 0;
	l->st = st;
	if (ids[1] && strcmp(ids[1], ids[0]) < 0) {
		ids[0] = a->fork;
		ids[1] = a->session;
	}
	for (int i = 0; i < 2 && ids[i]; i++) {
		enum store_lock_status got = lock_one(a->settings, st, ids[i], ms, &l->lk[i],
		                                      serr, sizeof(serr));

		if (got != STORE_LOCKED) {
			lock_refused(got, ids[i], serr, err, errlen);
			while (l->n > 0)
				store_unlock(st, &l->lk[--l->n]);
			return -1;
		}
		l->n++;
	}
	return 0;
}

static void unlock_call(struct store *st, struct call_locks *l)
{
	while (l->n > 0)
		store_unlock(st, &l->lk[--l->n]);
}

/* --fork SRC, or SRC@N: a kept state of SRC (timeline.h). */
static int fork_session(const struct run_args *a, struct store *st, size_t *forked,
                        char *err, size_t errlen)
{
	struct timeline_move mv;

	if (!a->fork_state)
		return store_fork(st, a->fork, a->session, a->fork_replace, forked, err, errlen);
	*forked = 0;
	return timeline_move(st, a->fork, a->fork_state, a->session, HISTREC_FORK,
	                     a->fork_replace, &mv, err, errlen);
}

/* repl_run of a call whose ids are the store's names (store_ns_name). */
static int run_stored(const struct run_args *a, struct result *res, int *sig, double t0,
                      char *err, size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st;
	struct call_locks lk;
	bool no_server = false;
	sigset_t held;
	size_t forked;
	int ret;

	st = repl_open_store(a->settings, err, errlen);
	if (!st)
		return -1;
	if (lock_call(a, st, &lk, err, errlen) < 0) {
		store_close(st);
		return -1;
	}
	ret = a->fork ? recalled_fork(a, st, res, err, errlen) : 0;
	if (ret != 0) {
		unlock_call(st, &lk);
		store_close(st);
		return ret > 0 ? 0 : -1;
	}
	if (a->fork && fork_session(a, st, &forked, serr, sizeof(serr)) < 0) {
		snprintf(err, errlen, "%s", serr);
		unlock_call(st, &lk);
		store_close(st);
		return -1;
	}
	if (!a->code) {   /* the fork was the whole call */
		unlock_call(st, &lk);
		store_close(st);
		return 0;
	}
	/* From here to the commit a stop signal waits (stopsig.h): the call
	 * ends either before the save, session unchanged, or after it. */
	if (stopsig_hold(&held) < 0) {
		snprintf(err, errlen, "sigprocmask: %s", strerror(errno));
		unlock_call(st, &lk);
		store_close(st);
		return -1;
	}
	ret = run_locked(a, st, &lk, t0, res, sig, &no_server, err, errlen);
	if (ret == 0)
		take_notice(st, res);
	if (ret == 0)
		res->timings_ms[TIMING_TOTAL] = (deadline_now() - t0) * 1e3;
	if (res->saved)
		stopsig_after_save();
	else if (!*sig)
		*sig = stopsig_take();
	stopsig_release(&held);
	unlock_call(st, &lk);
	if (no_server && !*sig) {
		struct warm_want key = call_warm_want(a);

		/* Cold this time; warm for the calls that follow. */
		warm_spawn_server(store_home(st), a->settings->server_idle, &key);
	}
	store_close(st);
	return ret;
}

/* The lines of a result that name the session by its stored name (the
 * worker's "session 'NS+ID' not saved", the store's) as the caller knows it. */
static void unname_result(struct result *res, const char *ns)
{
	char *texts[] = { res->error, res->warnings, res->save_error };

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
		if (texts[i])
			store_ns_unname(texts[i], strlen(texts[i]) + 1, ns);
}

int repl_run(const struct run_args *a, struct result *res, int *sig,
             char *err, size_t errlen)
{
	char stored[STORE_ID_MAX + 1], stored_fork[STORE_ID_MAX + 1];
	struct run_args b = *a;
	double t0 = deadline_now();

	*sig = 0;
	res->session = a->session;   /* the caller's id, as the caller said it */
	if (!a->session)
		return describe_alone(a, t0, res, sig, err, errlen);
	if (store_ns_name(a->settings->ns, a->session, stored, err, errlen) < 0 ||
	    (a->fork && store_ns_name(a->settings->ns, a->fork, stored_fork, err, errlen) < 0))
		return -1;
	b.session = stored;
	b.fork = a->fork ? stored_fork : NULL;
	if (run_stored(&b, res, sig, t0, err, errlen) == 0) {
		unname_result(res, a->settings->ns);
		return 0;
	}
	store_ns_unname(err, errlen, a->settings->ns);
	return -1;
}

/* Append id to the comma-separated list *text (malloc'd); false when out
 * of memory. */
static bool list_add(char **text, const char *id)
{
	char *grown = NULL;

	if (asprintf(&grown, "%s%s%s", *text ? *text : "", *text ? ", " : "", id) < 0)
		return false;
	free(*text);
	*text = grown;
	return true;
}

/* Delete id and its images under its lock, unless a call holds it (*busy);
 * a store that cannot lock it is -1 with serr. */
static int reset_free_one(const struct settings *s, struct store *st, const char *id,
                          const char *root, unsigned *removed, unsigned *images,
                          bool *busy, char *serr, size_t len)
{
	char lerr[STORE_ERR_MAX], derr[REPL_ERR_MAX];
	enum store_lock_status got;
	struct store_lock lk;
	unsigned n = 0, m = 0;
	int ret = 0;

	got = lock_one(s, st, id, 0, &lk, lerr, sizeof(lerr));
	*busy = got == STORE_LOCK_BUSY;
	if (*busy)
		return 0;
	if (got != STORE_LOCKED) {
		lock_refused(got, id, lerr, serr, len);
		return -1;
	}
	if (removed)
		ret = store_del(st, id, &n, serr, len);
	/* Like the reaper's, a directory that is not ours is left alone. */
	if (ret == 0 && root && display_files_remove(root, id, 0, &m, derr, sizeof(derr)) == 0)
		*images += m;
	if (removed)
		*removed += n;
	store_unlock(st, &lk);
	return ret;
}

/*
 * --reset all: each session whose lock can be had at once is deleted
 * under it, with its images; one a call holds is kept, with its save in
 * progress, and named in *kept if it is still there at the end.  Each
 * session is decided once, when the reset reaches it: the store's sweep
 * then removes only what sessions no call holds left behind, never a
 * session, so one whose call ends meanwhile keeps that call's save (issue
 * 35), and the images of sessions now gone go.
 */
static int reset_all(const struct settings *s, struct store *st, unsigned *removed,
                     unsigned *images, char **kept, char *serr, size_t len)
{
	char rootbuf[PATH_MAX], derr[REPL_ERR_MAX];
	const char *root = display_root(s->cache_dir, rootbuf, sizeof(rootbuf)) == 0
	                   ? rootbuf : NULL;
	struct session_info *info = NULL, *after = NULL;
	size_t n = 0, n_after = 0, n_img = 0;
	bool *busy = NULL, b;
	char **img = NULL;
	int ret = -1;

	*removed = *images = 0;
	if (store_list(st, &info, &n, serr, len) < 0)
		return -1;
	n = keep_namespace(s->ns, info, n, false);
	busy = calloc(n ? n : 1, sizeof(*busy));
	if (!busy) {
		snprintf(serr, len, "cannot reset all sessions: %s", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (reset_free_one(s, st, info[i].id, root, removed, images, &busy[i], serr,
		                   len) < 0)
			goto out;
	if (store_sweep(st, serr, len) < 0 || store_list(st, &after, &n_after, serr, len) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (busy[i] && store_holds(after, n_after, info[i].id) &&
		    kept && !list_add(kept, store_ns_id(info[i].id))) {
			snprintf(serr, len, "cannot reset all sessions: %s", strerror(ENOMEM));
			goto out;
		}
	/* Images whose session is gone; a session still held keeps its own. */
	if (root && n_after == 0) {
		unsigned m = 0;

		ret = display_files_remove(root, "all", 0, &m, serr, len);
		*images += m;
		goto out;
	}
	if (root && display_files_stale(root, 0, &img, &n_img, derr, sizeof(derr)) == 0) {
		for (size_t i = 0; i < n_img; i++)
			if (store_ns_holds(s->ns, img[i]) && !store_holds(after, n_after, img[i]))
				(void)reset_free_one(s, st, img[i], root, NULL, images, &b, derr,
				                     sizeof(derr));
		display_files_stale_free(img, n_img);
	}
	ret = 0;
out:
	free(busy);
	free(after);
	free(info);
	return ret;
}

int repl_list(const struct settings *s, struct session_info **out, size_t *n, char *err,
              size_t errlen)
{
	char serr[STORE_ERR_MAX];
	struct store *st = repl_open_store(s, err, errlen);
	int ret;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ret = store_list(st, out, n, serr, sizeof(serr));
	if (ret < 0)
		snprintf(err, errlen, "%s", serr);
	else
		*n = keep_namespace(s->ns, *out, *n, true);
	store_close(st);
	return ret;
}

int repl_reset(const struct settings *s, const char *target, unsigned *removed,
               unsigned *images, char **kept, char *err, size_t errlen)
{
	char serr[REPL_ERR_MAX], lerr[STORE_ERR_MAX], root[PATH_MAX];
	char stored[STORE_ID_MAX + 1];
	struct store *st = repl_open_store(s, err, errlen);
	enum store_lock_status got;
	struct store_lock lk;
	int ret = -1;

	if (kept)
		*kept = NULL;
	if (!st)
		return -1;
	*images = 0;
	if (strcmp(target, "all") == 0) {
		ret = reset_all(s, st, removed, images, kept, serr, sizeof(serr));
		goto out;
	}
	if (store_ns_name(s->ns, target, stored, serr, sizeof(serr)) < 0)
		goto out;
	got = lock_one(s, st, stored, (long)(s->timeout * 1000), &lk, lerr, sizeof(lerr));
	if (got != STORE_LOCKED) {
		lock_refused(got, target, lerr, serr, sizeof(serr));
		goto out;
	}
	ret = store_del(st, stored, removed, serr, sizeof(serr));
	if (ret == 0 && display_root(s->cache_dir, root, sizeof(root)) == 0 &&
	    display_files_remove(root, stored, 0, images, serr, sizeof(serr)) < 0)
		ret = -1;
	store_unlock(st, &lk);
out:
	if (ret < 0) {
		snprintf(err, errlen, "%s", serr);
		store_ns_unname(err, errlen, s->ns);
	}
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
	struct warm_want key = call_warm_want(&a);
	int ret = 0;

	if (!st)
		return -1;
	char why[512] = "";

	switch (warm_wait_ready(store_home(st), s->server_idle, &key, s->timeout, why,
	                        sizeof(why))) {
	case WARM_READY:
		break;
	case WARM_READY_FAILED:
		snprintf(err, errlen, "the server cannot warm this environment: %s", why);
		ret = -1;
		break;
	case WARM_READY_TIMEOUT:
		snprintf(err, errlen, "the server did not get ready within %gs (a "
		         "toolbox that fails to import keeps calls on the cold path)",
		         s->timeout);
		ret = -1;
		break;
	case WARM_READY_ERROR:
	default:
		snprintf(err, errlen, "cannot start the server: %s", why);
		ret = -1;
		break;
	}
	store_close(st);
	return ret;
}

int repl_server_info(const struct settings *s, char *buf, size_t len, char *err,
                     size_t errlen)
{
	struct store *st = repl_open_store(s, err, errlen);
	char why[STORE_ERR_MAX];
	int ret;

	if (!st)
		return -1;
	ret = warm_info(store_home(st), buf, len, why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "the server does not answer: %s", why);
	store_close(st);
	return ret;
}

int repl_server_stop(const struct settings *s, long *pid, char *err, size_t errlen)
{
	struct store *st = repl_open_store(s, err, errlen);
	char why[STORE_ERR_MAX];
	int ret;

	if (!st)
		return -1;
	ret = warm_stop(store_home(st), pid, why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "cannot stop the server: %s", why);
	store_close(st);
	return ret;
}
