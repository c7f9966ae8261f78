/*
 * store_cmd.c - DOLSOT_STORE=cmd:PROGRAM [ARGS]: sessions kept by a helper
 * program, in the spirit of git's credential helpers.
 *
 * dolsot runs PROGRAM ARGS VERB [ID] (execvp: PATH applies; no shell),
 * with dolsot's environment, stdin on /dev/null (or the blob, for save),
 * and each run under the call's timeout (its process group is killed when
 * it passes):
 *   load ID        the blob on stdout, exit 0; exit 1 with no output: none
 *   save ID        the blob on stdin; exit 0 once it is stored, atomically
 *   delete ID|all  prints how many it deleted (--reset all sends one
 *                  delete ID per session, under its lock)
 *   list           prints "ID SIZE LAST_USED" lines (store_cmd_parse.h)
 *   lock ID        optional: prints "locked" and exits 0 when it took the
 *                  lock, exits 1 with no output while another holds it;
 *                  exit 0 with no output says the helper has no locks
 *   unlock ID      releases what lock took
 *   capabilities   optional, asked once per store opened: words, "units"
 *                  among them when it keeps units (session format v4);
 *                  no output, or an exit status but 0: whole blobs
 * A helper that keeps units also answers, HEX a unit's SHA-256 in 64
 * lowercase hex digits:
 *   unit-load HEX  its bytes on stdout, exit 0; exit 1 and no output: none
 *   unit-save HEX  its bytes on stdin; exit 0 once stored, atomically and
 *                  durably (one already there may be kept as it is)
 *   unit-delete HEX  removes it (absent: still exit 0)
 *   unit-list      every stored unit's HEX, one a line (store_cmd_parse.h)
 * and, when "capabilities" says "units-lock", the store-wide units lock
 * (store_ops.h's obj_lock) across hosts, TOKEN naming the holder:
 *   unit-lock-shared TOKEN, unit-lock-exclusive TOKEN  as lock ID
 *   unit-unlock TOKEN  releases what TOKEN took
 * Anything else (another exit status, a signal, output where none or a
 * number belongs) is an error naming the helper.
 *
 * MUSTs:
 * - Every call also holds the FileStore's lock on this machine, so calls
 *   here never overlap whether or not the helper locks across machines.
 * - Each blob the helper stores begins with ORIGIN_LEN bytes saying
 *   whether a sandboxed call wrote it, and whether it is a v4 head whose
 *   units the helper keeps ("dolsot:2:"): a blob without them is refused,
 *   and so is a head without its units when the helper did not say
 *   "units" this time (its units would look lost to the worker).  The
 *   helper stores and returns the bytes as given.
 * - The units lock is always this host's (the FileStore's), and the
 *   helper's too when it has one: without, collecting units is safe only
 *   among the calls of one host.
 */
#include "store_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "proc.h"
#include "proc_child.h"
#include "store_cmd_parse.h"
#include "units.h"

/* What a helper's environment says of its stdin's length (save, unit-save). */
#define STDIN_BYTES_VAR "DOLSOT_STDIN_BYTES"
#define LOCK_POLL_MS 100              /* between tries of a busy helper lock */
#define OUT_MAX ((size_t)1 << 31)     /* the most stdout a helper may print */
#define ERR_KEEP 400                  /* stderr bytes kept for a message */
#define WRITE_CHUNK ((size_t)1 << 20)
#define ORIGIN_LEN 11
#define ORIGIN_KIND 7                 /* where '1' (whole) or '2' (a head) is */
#define ORIGIN_WHO 9                  /* where 's' (sandboxed) or 'u' is */
#define TOKEN_LEN 32

struct cmd_store {
	struct store s;
	struct store *dir;      /* the FileStore: this machine's locks, the server's socket */
	struct store_spec sp;
	double timeout;
	char name[160];         /* "store helper 'PROGRAM'" */
	int helper_locks;       /* -1 not known yet, 0 the helper has none, 1 it has */
	unsigned caps;          /* what "capabilities" said: STORE_CMD_CAP_ bits */
	char token[TOKEN_LEN + 1];      /* this store's name in the helper's units lock */
	bool remote_gc;         /* the helper's units lock is held */
	/* The helper's units, listed once under the units lock (obj_has). */
	uint8_t *units;
	size_t nunits;
	bool units_known;
	/* The last session loaded (origin, then load, read it once). */
	char cached_id[STORE_ID_MAX + 1];
	uint8_t *cached;
	size_t cached_len;
	bool cached_found;
};

struct cmd_lock {
	struct store_lock local;
	char id[STORE_ID_MAX + 1];
	bool remote;            /* the helper holds it too */
};

/* A helper's output. */
struct buf {
	char *p;
	size_t len, alloc, max;
	bool over;              /* it printed more than max */
};

struct run {
	struct buf out, err;
	int status;
	bool timed_out;
};

static void buf_feed(void *ctx, const char *data, size_t n)
{
	struct buf *b = ctx;

	if (b->over || b->len + n > b->max) {
		size_t room = b->max > b->len ? b->max - b->len : 0;

		b->over = b->over || n > room;
		n = n < room ? n : room;
	}
	if (!n)
		return;
	if (b->len + n + 1 > b->alloc) {
		size_t want = b->alloc ? b->alloc : 4096;
		char *grown;

		while (want < b->len + n + 1)
			want *= 2;
		grown = realloc(b->p, want);
		if (!grown) {
			b->over = true;
			return;
		}
		b->p = grown;
		b->alloc = want;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

struct child_args {
	pid_t parent;
	char *const *argv;
	char *const *envp;      /* NULL: dolsot's own environment */
	int in;                 /* the blob's pipe, or -1: /dev/null */
};

static void child_exec(void *arg, int out, int err)
{
	const struct child_args *a = arg;
	int keep[1] = { a->in };
	sigset_t none;

	sigemptyset(&none);
	if (proc_child_prepare(a->parent, out, err, keep, a->in >= 0, &none) < 0 ||
	    (a->in >= 0 && dup2(a->in, 0) < 0))
		_exit(127);
	if (a->envp)
		execvpe(a->argv[0], a->argv, a->envp);
	else
		execvp(a->argv[0], a->argv);
	dprintf(2, "cannot run %s: %s\n", a->argv[0], strerror(errno));
	_exit(127);
}

/* Feed in[0..len) to fd (non-blocking) as far as it takes now; close it
 * when the helper stopped reading. */
static void feed_stdin(int *fd, const uint8_t *in, size_t len, size_t *off)
{
	while (*fd >= 0 && *off < len) {
		size_t n = len - *off < WRITE_CHUNK ? len - *off : WRITE_CHUNK;
		ssize_t w = write(*fd, in + *off, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			fd_close(fd);   /* EPIPE: its exit status will say why */
			return;
		}
		*off += (size_t)w;
	}
}

/* dolsot's environment and STDIN_BYTES_VAR=n (malloc'd, one block: free
 * it whole), so that a helper can tell a whole stdin from one cut short by
 * a killed dolsot before it commits what it read; NULL out of memory. */
static char **environ_with_size(size_t n)
{
	size_t count = 0, text;
	char **envp, *var;

	while (environ[count])
		count++;
	text = strlen(STDIN_BYTES_VAR) + 2 + 20;
	envp = malloc((count + 2) * sizeof(*envp) + text);
	if (!envp)
		return NULL;
	var = (char *)(envp + count + 2);
	snprintf(var, text, "%s=%zu", STDIN_BYTES_VAR, n);
	for (size_t i = 0; i < count; i++)
		envp[i] = environ[i];
	envp[count] = var;
	envp[count + 1] = NULL;
	return envp;
}

/*
 * Run the helper with verb and id (NULL: none), writing hdr then in to its
 * stdin when hdr is set (and telling it how many bytes: environ_with_size).  *r gets what it printed and its status.
 * Returns 0 once it ended (or was killed at the timeout: r->timed_out),
 * -1 with err when it could not be started.
 */
static int run_helper(struct cmd_store *cs, const char *verb, const char *id,
                      const char *hdr, const uint8_t *in, size_t inlen, struct run *r,
                      char *err, size_t errlen)
{
	char *argv[STORE_SPEC_ARGS + 3];
	int n = 0, inp[2] = { -1, -1 };
	struct child_args ca = { getpid(), argv, NULL, -1 };
	char **envp = NULL;
	struct proc_child c = { .out = { -1, buf_feed, &r->out },
	                        .err = { -1, buf_feed, &r->err } };
	struct timespec dl;
	const char *what = "";
	size_t hoff = 0, off = 0, hlen = hdr ? strlen(hdr) : 0;

	memset(r, 0, sizeof(*r));
	r->out.max = OUT_MAX;
	r->err.max = ERR_KEEP;
	for (int i = 0; i < cs->sp.argc; i++)
		argv[n++] = cs->sp.argv[i];
	argv[n++] = (char *)verb;
	if (id)
		argv[n++] = (char *)id;
	argv[n] = NULL;
	if (hdr) {
		envp = environ_with_size(hlen + inlen);
		if (!envp || pipe2(inp, O_CLOEXEC) < 0) {
			snprintf(err, errlen, "cannot run %s: %s: %s", cs->name,
			         envp ? "pipe2" : "malloc", strerror(errno));
			free(envp);
			return -1;
		}
		ca.in = inp[0];
		ca.envp = envp;
	}
	deadline_in(&dl, cs->timeout);
	if (proc_start(&c, child_exec, &ca, &what) < 0) {
		int errsv = errno;

		fd_close(&inp[0]);
		fd_close(&inp[1]);
		free(envp);
		snprintf(err, errlen, "cannot run %s: %s: %s", cs->name, what, strerror(errsv));
		return -1;
	}
	free(envp);
	fd_close(&inp[0]);
	if (inp[1] >= 0 && fcntl(inp[1], F_SETFL, O_NONBLOCK) < 0)
		fd_close(&inp[1]);
	while (c.out.fd >= 0 || c.err.fd >= 0 || inp[1] >= 0) {
		struct proc_pipe pipes[2] = { c.out, c.err };
		struct pollfd x = { .fd = inp[1], .events = POLLOUT };
		double left = deadline_left(&dl);

		if (left <= 0) {
			r->timed_out = true;
			break;
		}
		feed_stdin(&inp[1], (const uint8_t *)hdr, hlen, &hoff);
		if (hoff == hlen)
			feed_stdin(&inp[1], in, inlen, &off);
		if (hoff == hlen && off == inlen)
			fd_close(&inp[1]);   /* all written: its EOF */
		x.fd = inp[1];
		proc_poll(pipes, 2, &x, inp[1] >= 0, deadline_poll_ms(left));
		c.out.fd = pipes[0].fd;
		c.err.fd = pipes[1].fd;
	}
	fd_close(&inp[1]);
	if (r->timed_out || !proc_wait_until(c.pid, &dl, &r->status)) {
		r->timed_out = true;
		proc_kill_group(c.pid);
		while (waitpid(c.pid, &r->status, 0) < 0 && errno == EINTR)
			;
	}
	/* The helper is gone; so must be anything it left in its group. */
	kill(-c.pid, SIGKILL);
	fd_close(&c.out.fd);
	fd_close(&c.err.fd);
	return 0;
}

static void run_release(struct run *r)
{
	free(r->out.p);
	free(r->err.p);
	memset(r, 0, sizeof(*r));
}

static bool exited(const struct run *r, int code)
{
	return !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
}

/* What went wrong with run r of "verb [id]", into err; returns -1. */
static int helper_failed(const struct cmd_store *cs, const char *verb, const char *id,
                         const struct run *r, const char *why, char *err, size_t errlen)
{
	char status[160], line[ERR_KEEP + 1] = "";

	if (r->err.len) {
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(r->err.p, "\n"), r->err.p);
		for (char *p = line; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	}
	if (why)
		snprintf(status, sizeof(status), "%s", why);
	else if (r->timed_out)
		snprintf(status, sizeof(status), "killed after %g s (the call's timeout)",
		         cs->timeout);
	else if (WIFSIGNALED(r->status))
		snprintf(status, sizeof(status), "killed by signal %d", WTERMSIG(r->status));
	else
		snprintf(status, sizeof(status), "exit status %d", WEXITSTATUS(r->status));
	snprintf(err, errlen, "%s failed (%s%s%s): %s%s%s", cs->name, verb, id ? " " : "",
	         id ? id : "", status, line[0] ? ": " : "", line);
	errno = EIO;
	return -1;
}

/* Whether p[0..len) begins with an origin line "dolsot:K:W\n". */
static bool origin_valid(const char *p, size_t len)
{
	return len >= ORIGIN_LEN && memcmp(p, "dolsot:", ORIGIN_KIND) == 0 &&
	       (p[ORIGIN_KIND] == '1' || p[ORIGIN_KIND] == '2') && p[ORIGIN_KIND + 1] == ':' &&
	       (p[ORIGIN_WHO] == 's' || p[ORIGIN_WHO] == 'u') && p[ORIGIN_WHO + 1] == '\n';
}

static bool keeps_units(const struct cmd_store *cs)
{
	return cs->caps & STORE_CMD_CAP_UNITS;
}

static void drop_cache(struct cmd_store *cs)
{
	free(cs->cached);
	cs->cached = NULL;
	cs->cached_len = 0;
	cs->cached_id[0] = '\0';
}

/* Load id through the helper into the cache (unless it holds id). */
static int fetch(struct cmd_store *cs, const char *id, char *err, size_t errlen)
{
	struct run r;

	if (cs->cached_id[0] && strcmp(cs->cached_id, id) == 0)
		return 0;
	drop_cache(cs);
	if (run_helper(cs, "load", id, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (exited(&r, 1) && r.out.len == 0) {
		cs->cached_found = false;
	} else if (!exited(&r, 0) || r.out.over) {
		helper_failed(cs, "load", id, &r,
		              exited(&r, 1) ? "exit status 1 with output (1 means no session, "
		                              "and prints nothing)"
		              : r.out.over ? "more output than a session may hold" : NULL,
		              err, errlen);
		run_release(&r);
		return -1;
	} else if (!origin_valid(r.out.p, r.out.len)) {
		helper_failed(cs, "load", id, &r, "what it printed is not a session dolsot "
		              "saved (it lacks the dolsot:1 line)", err, errlen);
		run_release(&r);
		return -1;
	} else if (r.out.p[ORIGIN_KIND] == '2' && !keeps_units(cs)) {
		helper_failed(cs, "load", id, &r, "the session's units are kept by the helper, "
		              "but it did not answer \"units\" to \"capabilities\"", err,
		              errlen);
		run_release(&r);
		return -1;
	} else {
		cs->cached_found = true;
		cs->cached = (uint8_t *)r.out.p;
		cs->cached_len = r.out.len;
		r.out.p = NULL;
	}
	snprintf(cs->cached_id, sizeof(cs->cached_id), "%s", id);
	run_release(&r);
	return 0;
}

static int cmd_load(struct store *s, const char *id, uint8_t **blob, size_t *len,
                    bool *found, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;

	*blob = NULL;
	*len = 0;
	*found = false;
	if (fetch(cs, id, err, errlen) < 0)
		return -1;
	if (cs->cached_found) {
		*len = cs->cached_len - ORIGIN_LEN;
		*blob = malloc(*len ? *len : 1);
		if (!*blob) {
			snprintf(err, errlen, "cannot load session '%s': out of memory", id);
			errno = ENOMEM;
			return -1;
		}
		memcpy(*blob, cs->cached + ORIGIN_LEN, *len);
		*found = true;
	}
	/* Handed on: a later load asks the helper again. */
	drop_cache(cs);
	return 0;
}

/* The helper keeps the origin line with the bytes, and no counter: a file
 * of an earlier save put back brings its own line along. */
static int cmd_origin(struct store *s, const char *id, struct store_mark *mark, char *err,
                      size_t errlen)
{
	struct cmd_store *cs = s->priv;

	mark->sandboxed = true;
	mark->seq = 0;
	if (fetch(cs, id, err, errlen) < 0)
		return -1;
	mark->sandboxed = cs->cached_found && cs->cached[ORIGIN_WHO] == 's';
	return 0;
}

static int cmd_save(struct store *s, const char *id, const uint8_t *blob, size_t len,
                    const struct store_mark *mark, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;
	char line[ORIGIN_LEN + 1];
	struct run r;
	int ret = 0;

	/* A v4 blob saved here is a head whose units are the helper's. */
	snprintf(line, sizeof(line), "dolsot:%c:%c\n",
	         keeps_units(cs) && units_is_v4(blob, len) ? '2' : '1',
	         mark->sandboxed ? 's' : 'u');
	drop_cache(cs);
	if (run_helper(cs, "save", id, line, blob, len, &r, err, errlen) < 0)
		return -1;
	if (!exited(&r, 0)) {
		char why[STORE_ERR_MAX];

		helper_failed(cs, "save", id, &r, NULL, why, sizeof(why));
		snprintf(err, errlen, "cannot save session '%s': %s", id, why);
		ret = -1;
	}
	run_release(&r);
	return ret;
}

/* Run verb [id] expecting a count on stdout. */
static int run_count(struct cmd_store *cs, const char *verb, const char *id,
                     unsigned *count, char *err, size_t errlen)
{
	struct run r;
	int ret = 0;

	if (run_helper(cs, verb, id, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (!exited(&r, 0))
		ret = helper_failed(cs, verb, id, &r, NULL, err, errlen);
	else if (store_cmd_parse_count(r.out.p ? r.out.p : "", r.out.len, count) < 0)
		ret = helper_failed(cs, verb, id, &r, "its output is not a count", err,
		                    errlen);
	run_release(&r);
	return ret;
}

static int cmd_del(struct store *s, const char *id, unsigned *removed, char *err,
                   size_t errlen)
{
	struct cmd_store *cs = s->priv;

	*removed = 0;
	drop_cache(cs);
	return run_count(cs, "delete", id, removed, err, errlen);
}

/* What a listing is parsed by (store_cmd_parse.h's): 0, or -1 with why. */
typedef int parse_fn(const char *out, size_t len, void *into, char *why, size_t whylen);

/* Run verb (no id) wanting exit 0 and output parse takes into into. */
static int run_listing(struct cmd_store *cs, const char *verb, parse_fn *parse, void *into,
                       char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];
	struct run r;
	int ret = 0;

	if (run_helper(cs, verb, NULL, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (!exited(&r, 0) || r.out.over)
		ret = helper_failed(cs, verb, NULL, &r, r.out.over ? "too much output" : NULL,
		                    err, errlen);
	else if (parse(r.out.p ? r.out.p : "", r.out.len, into, why, sizeof(why)) < 0)
		ret = helper_failed(cs, verb, NULL, &r, why, err, errlen);
	run_release(&r);
	return ret;
}

struct sessions {
	struct session_info **infos;
	size_t *n;
};

static int parse_sessions(const char *out, size_t len, void *into, char *why,
                          size_t whylen)
{
	struct sessions *ss = into;

	return store_cmd_parse_list(out, len, ss->infos, ss->n, why, whylen);
}

static int cmd_list(struct store *s, struct session_info **out, size_t *n, char *err,
                    size_t errlen)
{
	struct sessions into = { out, n };

	*out = NULL;
	*n = 0;
	return run_listing(s->priv, "list", parse_sessions, &into, err, errlen);
}

/* One "lock ID" (or verb ID of its kind): 1 taken, 0 busy, 2 the helper
 * has no locks, -1 error. */
static int try_lock(struct cmd_store *cs, const char *verb, const char *id, char *err,
                    size_t errlen)
{
	struct run r;
	int ret;

	if (run_helper(cs, verb, id, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (exited(&r, 0) && r.out.len == 0)
		ret = 2;
	else if (exited(&r, 0) && (r.out.len == 7 || r.out.len == 6) &&
	         memcmp(r.out.p, "locked\n", r.out.len) == 0)
		ret = 1;
	else if (exited(&r, 1) && r.out.len == 0)
		ret = 0;
	else
		ret = helper_failed(cs, verb, id, &r,
		                    exited(&r, 0) || exited(&r, 1)
		                    ? "expected \"locked\" or no output" : NULL, err, errlen);
	run_release(&r);
	return ret;
}

static enum store_lock_status cmd_lock(struct store *s, const char *id, long timeout_ms,
                                       struct store_lock *lk, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;
	struct cmd_lock *l = calloc(1, sizeof(*l));
	enum store_lock_status ret;
	struct timespec dl;
	int got = 2;

	lk->priv = NULL;
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return STORE_LOCK_FAILED;
	}
	deadline_in_ms(&dl, timeout_ms >= 0 ? timeout_ms : 0);
	ret = cs->dir->ops->lock(cs->dir, id, timeout_ms, &l->local, err, errlen);
	if (ret != STORE_LOCKED) {
		free(l);
		return ret;
	}
	while (cs->helper_locks != 0 && (got = try_lock(cs, "lock", id, err, errlen)) == 0) {
		if (timeout_ms >= 0 && deadline_left(&dl) <= 0) {
			snprintf(err, errlen, STORE_BUSY_WHY " (its lock in %s)", cs->name);
			break;
		}
		poll(NULL, 0, LOCK_POLL_MS);
	}
	if (got == 2)
		cs->helper_locks = 0;
	if (got <= 0) {
		int errsv = errno;

		cs->dir->ops->unlock(cs->dir, &l->local);
		free(l);
		errno = errsv;
		return got == 0 ? STORE_LOCK_BUSY : STORE_LOCK_FAILED;
	}
	if (got == 1)
		cs->helper_locks = 1;
	l->remote = got == 1;
	snprintf(l->id, sizeof(l->id), "%s", id);
	lk->priv = l;
	return STORE_LOCKED;
}

static void cmd_unlock(struct store *s, struct store_lock *lk)
{
	struct cmd_store *cs = s->priv;
	struct cmd_lock *l = lk->priv;
	char err[STORE_ERR_MAX];

	if (!l)
		return;
	drop_cache(cs);
	if (l->remote) {
		/* One that fails leaves the helper's lock to the helper (a
		 * lock it cannot release is its own to expire). */
		struct run r;

		if (run_helper(cs, "unlock", l->id, NULL, NULL, 0, &r, err, sizeof(err)) == 0)
			run_release(&r);
	}
	cs->dir->ops->unlock(cs->dir, &l->local);
	free(l);
	lk->priv = NULL;
}

static void cmd_close(struct store *s)
{
	struct cmd_store *cs = s->priv;

	drop_cache(cs);
	free(cs->units);
	store_close(cs->dir);
	free(cs);
}

static void forget_units(struct cmd_store *cs)
{
	free(cs->units);
	cs->units = NULL;
	cs->nunits = 0;
	cs->units_known = false;
}

struct hashes {
	uint8_t **hashes;
	size_t *n;
};

static int parse_hashes(const char *out, size_t len, void *into, char *why, size_t whylen)
{
	struct hashes *hs = into;

	return store_cmd_parse_hashes(out, len, hs->hashes, hs->n, why, whylen);
}

/* Run "unit-list" into *hashes, *n. */
static int list_units(struct cmd_store *cs, uint8_t **hashes, size_t *n, char *err,
                      size_t errlen)
{
	struct hashes into = { hashes, n };

	*hashes = NULL;
	*n = 0;
	return run_listing(cs, "unit-list", parse_hashes, &into, err, errlen);
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, STORE_HASH_LEN);
}

static uint8_t *unit_find(const struct cmd_store *cs, const uint8_t *hash)
{
	return cs->nunits ? bsearch(hash, cs->units, cs->nunits, STORE_HASH_LEN, hash_cmp)
	                  : NULL;
}

/* Record in the list (when listed) that hash is stored now. */
static void note_put(struct cmd_store *cs, const uint8_t *hash)
{
	uint8_t *grown;

	if (!cs->units_known || unit_find(cs, hash))
		return;
	grown = realloc(cs->units, (cs->nunits + 1) * STORE_HASH_LEN);
	if (!grown) {
		forget_units(cs);
		return;
	}
	cs->units = grown;
	memcpy(grown + cs->nunits++ * STORE_HASH_LEN, hash, STORE_HASH_LEN);
	qsort(cs->units, cs->nunits, STORE_HASH_LEN, hash_cmp);
}

static void note_del(struct cmd_store *cs, const uint8_t *hash)
{
	uint8_t *at = cs->units_known ? unit_find(cs, hash) : NULL;

	if (at) {
		memmove(at, at + STORE_HASH_LEN,
		        (size_t)(cs->units + cs->nunits * STORE_HASH_LEN - at - STORE_HASH_LEN));
		cs->nunits--;
	}
}

/* One run per commit, not one per ref: the helper's units listed once
 * under the units lock, which keeps them from going until it is released. */
static int cmd_obj_has(struct store *s, const uint8_t *hash, bool *has, char *err,
                       size_t errlen)
{
	struct cmd_store *cs = s->priv;

	*has = false;
	if (!cs->units_known) {
		if (list_units(cs, &cs->units, &cs->nunits, err, errlen) < 0)
			return -1;
		cs->units_known = true;
	}
	*has = unit_find(cs, hash) != NULL;
	return 0;
}

/* Run verb arg with in[0..n) on stdin (in NULL: none), wanting exit 0. */
static int run_plain(struct cmd_store *cs, const char *verb, const char *arg,
                     const uint8_t *in, size_t n, char *err, size_t errlen)
{
	struct run r;
	int ret = 0;

	if (run_helper(cs, verb, arg, in ? "" : NULL, in, n, &r, err, errlen) < 0)
		return -1;
	if (!exited(&r, 0))
		ret = helper_failed(cs, verb, arg, &r, NULL, err, errlen);
	run_release(&r);
	return ret;
}

/* run_plain for unit hash. */
static int run_unit(struct cmd_store *cs, const char *verb, const uint8_t *hash,
                    const uint8_t *in, size_t n, char *err, size_t errlen)
{
	char hex[UNITS_HEX_LEN + 1];

	units_hex(hash, hex);
	return run_plain(cs, verb, hex, in, n, err, errlen);
}

static int cmd_obj_put(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
                       char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;

	if (run_unit(cs, "unit-save", hash, p ? p : (const uint8_t *)"", n, err, errlen) < 0)
		return -1;
	note_put(cs, hash);
	return 0;
}

static int cmd_obj_del(struct store *s, const uint8_t *hash, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;

	if (run_unit(cs, "unit-delete", hash, NULL, 0, err, errlen) < 0)
		return -1;
	note_del(cs, hash);
	return 0;
}

static int cmd_obj_read(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
                        bool *found, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;
	char hex[UNITS_HEX_LEN + 1];
	struct run r;
	int ret = 0;

	*p = NULL;
	*n = 0;
	*found = false;
	units_hex(hash, hex);
	if (run_helper(cs, "unit-load", hex, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (exited(&r, 0) && !r.out.over) {
		*found = true;
		*n = r.out.len;
		*p = r.out.p ? (uint8_t *)r.out.p : malloc(1);
		r.out.p = NULL;
		if (!*p) {
			snprintf(err, errlen, "unit %s: out of memory", hex);
			ret = -1;
		}
	} else if (!exited(&r, 1) || r.out.len) {
		ret = helper_failed(cs, "unit-load", hex, &r,
		                    exited(&r, 1) ? "exit status 1 with output (1 means no "
		                                    "such unit, and prints nothing)"
		                    : r.out.over ? "more output than a unit may hold" : NULL,
		                    err, errlen);
	}
	run_release(&r);
	return ret;
}

static int cmd_obj_list(struct store *s, uint8_t **hashes, size_t *n, char *err,
                        size_t errlen)
{
	return list_units(s->priv, hashes, n, err, errlen);
}

/* The helper's units lock: verb TOKEN until taken, or the timeout. */
static int remote_gc_lock(struct cmd_store *cs, const char *verb, char *err, size_t errlen)
{
	struct timespec dl;
	int got;

	deadline_in(&dl, cs->timeout);
	while ((got = try_lock(cs, verb, cs->token, err, errlen)) == 0) {
		if (deadline_left(&dl) <= 0) {
			snprintf(err, errlen, "the units lock of %s is busy (%s %s)", cs->name,
			         verb, cs->token);
			errno = EBUSY;
			return -1;
		}
		poll(NULL, 0, LOCK_POLL_MS);
	}
	if (got == 2) {
		struct run none = { 0 };

		return helper_failed(cs, verb, cs->token, &none, "no output (it said "
		                     "\"units-lock\" to \"capabilities\")", err, errlen);
	}
	return got < 0 ? -1 : 0;
}

/* This host's lock first, then the helper's (released the other way). */
static int cmd_obj_lock(struct store *s, enum store_gc_lock how, char *err, size_t errlen)
{
	struct cmd_store *cs = s->priv;
	struct store *dir = cs->dir;
	char why[STORE_ERR_MAX];
	int ret = 0;

	forget_units(cs);
	if (how == STORE_GC_RELEASE) {
		/* The helper's first, its failure the one told. */
		if (cs->remote_gc)
			ret = run_plain(cs, "unit-unlock", cs->token, NULL, 0, err, errlen);
		cs->remote_gc = false;
		if (dir->ops->obj_lock(dir, how, why, sizeof(why)) < 0 && ret == 0) {
			snprintf(err, errlen, "%s", why);
			ret = -1;
		}
		return ret;
	}
	if (dir->ops->obj_lock(dir, how, err, errlen) < 0)
		return -1;
	if (!(cs->caps & STORE_CMD_CAP_UNITS_LOCK))
		return 0;
	if (remote_gc_lock(cs, how == STORE_GC_SHARED ? "unit-lock-shared"
	                                              : "unit-lock-exclusive", err, errlen) < 0) {
		int errsv = errno;

		(void)dir->ops->obj_lock(dir, STORE_GC_RELEASE, why, sizeof(why));
		errno = errsv;
		return -1;
	}
	cs->remote_gc = true;
	return 0;
}

/* Every helper's sessions. */
#define CMD_SESSION_OPS \
	.load = cmd_load, .save = cmd_save, .origin = cmd_origin, .del = cmd_del, \
	.list = cmd_list, .lock = cmd_lock, .unlock = cmd_unlock, .close = cmd_close

static const struct store_ops cmd_ops = { CMD_SESSION_OPS };

/* A helper that keeps units: obj_dir NULL, so a worker gets them packed. */
static const struct store_ops cmd_units_ops = {
	CMD_SESSION_OPS,
	.obj_has = cmd_obj_has,
	.obj_put = cmd_obj_put,
	.obj_read = cmd_obj_read,
	.obj_del = cmd_obj_del,
	.obj_list = cmd_obj_list,
	.obj_lock = cmd_obj_lock,
};

/*
 * Ask "capabilities" into cs->caps.  Killed (a signal, the timeout) or
 * output that is not words: an error; another exit status is an older
 * helper's answer to a verb it does not know: none (a head saved with
 * units is then refused, never loaded without them: fetch).
 */
static int ask_caps(struct cmd_store *cs, char *err, size_t errlen)
{
	uint8_t raw[TOKEN_LEN / 2];
	struct run r;
	int ret = 0;

	if (run_helper(cs, "capabilities", NULL, NULL, NULL, 0, &r, err, errlen) < 0)
		return -1;
	if (r.timed_out || WIFSIGNALED(r.status) || r.out.over)
		ret = helper_failed(cs, "capabilities", NULL, &r, NULL, err, errlen);
	else if (exited(&r, 0) &&
	         store_cmd_parse_caps(r.out.p ? r.out.p : "", r.out.len, &cs->caps) < 0)
		ret = helper_failed(cs, "capabilities", NULL, &r,
		                    "its output is not words of printable ASCII", err, errlen);
	run_release(&r);
	if (ret == 0 && (cs->caps & STORE_CMD_CAP_UNITS_LOCK)) {
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
			snprintf(err, errlen, "cannot name this store's units lock: getrandom: %s",
			         strerror(errno));
			return -1;
		}
		for (size_t i = 0; i < sizeof(raw); i++)
			snprintf(cs->token + 2 * i, 3, "%02x", raw[i]);
	}
	return ret;
}

struct store *store_cmd_open(struct store *dir, const struct store_spec *sp,
                             double timeout, char *err, size_t errlen)
{
	struct cmd_store *cs = calloc(1, sizeof(*cs));

	if (!cs) {
		snprintf(err, errlen, "out of memory");
		store_close(dir);
		return NULL;
	}
	cs->dir = dir;
	cs->sp = *sp;
	/* argv points into sp->buf: point it into our copy. */
	for (int i = 0; i < sp->argc; i++)
		cs->sp.argv[i] = cs->sp.buf + (sp->argv[i] - sp->buf);
	cs->timeout = timeout > 0 ? timeout : 20;
	cs->helper_locks = -1;
	snprintf(cs->name, sizeof(cs->name), "store helper '%.120s'", sp->argv[0]);
	cs->s.priv = cs;
	cs->s.home = dir->home;
	if (ask_caps(cs, err, errlen) < 0) {
		store_close(dir);
		free(cs);
		return NULL;
	}
	if (keeps_units(cs) && !dir->ops->obj_lock) {
		snprintf(err, errlen, "%s keeps units, but this host's store has no units "
		         "lock", cs->name);
		store_close(dir);
		free(cs);
		return NULL;
	}
	cs->s.ops = keeps_units(cs) ? &cmd_units_ops : &cmd_ops;
	return &cs->s;
}
