/*
 * mcp.c - the MCP server: one loop polls stdin, stdout (to notice a client
 * that stopped reading), the signals and the calls in flight.
 *
 * Each tool call runs in a child of this process, which calls the engine
 * (repl.h) and writes the call's MCP result, one JSON object, into a pipe;
 * the loop splices it into the response.  A cancelled call's child gets
 * SIGTERM, which the engine turns into a kill of the cell and a rollback,
 * as on a timeout.  Calls on one session run one after another, in the
 * order they came; calls on different sessions run at once, up to
 * MCP_MAX_RUNNING.  Nothing but protocol messages reaches stdout: the
 * children's stdout is our stderr, and their stdin is /dev/null.
 */
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callrec.h"
#include "deadline.h"
#include "fdio.h"
#include "jsonrpc.h"
#include "output_json.h"
#include "proc_child.h"
#include "repl.h"
#include "result_schema.h"

/* The revisions this server speaks, newest first. */
static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
                                        "2024-11-05" };
/* structuredContent and outputSchema exist from this revision on. */
static const char structured_since[] = "2025-06-18";

#define PROGRESS_EVERY 1.0      /* seconds between progress notifications */
#define READ_CHUNK ((size_t)65536)

enum job_kind { JOB_PYTHON, JOB_LIST, JOB_RESET };

/* A batch (revision 2025-03-26): its answers, gathered into one array that
 * is written when the last of them is in; held by the line being read and
 * by each of its calls still waiting or running. */
struct batch {
	struct server *s;
	char *buf;                  /* the answers so far, comma-separated */
	size_t len, cap;
	unsigned holds;
};

struct job {
	struct job *next;
	enum job_kind kind;
	json_t *id;                 /* the request's id */
	json_t *progress;           /* its progress token, or NULL */
	char *session;              /* NULL: touches no session; "all": every one */
	char *code;
	char *fork;                 /* python: the session to start from, or NULL */
	char *call_id;              /* python: its call id (callrec.h), or NULL */
	bool replace;               /* with fork: over an existing session */
	double timeout;
	bool minted;
	pid_t pid;
	int pidfd, out;             /* the child's exit, and its answer */
	char *buf;
	size_t len, cap;
	double started, progressed;
	bool cancelled;
	struct batch *batch;        /* the batch it came in, or NULL */
};

struct server {
	const struct mcp_setup *m;
	struct jsonrpc_reader rd;
	const char *version;        /* negotiated; NULL before initialize */
	bool eof, gone, stop;
	int sigfd;
	sigset_t oldmask;
	pid_t self;
	json_t *tools;              /* the tools/list result, made once */
	struct job *waiting;        /* in arrival order */
	struct job *running;
	unsigned n_running, n_waiting;
	struct batch *collect;      /* where answers go now; NULL: stdout */
};

static double now(void)
{
	return deadline_now();
}

/* ---- writing to the client ---- */

static void batch_add(struct batch *b, const char *line, size_t len);

/* Every message out goes through here: line ends in '\n' and is freed. */
static void send_line(struct server *s, char *line, size_t len)
{
	if (!line) {
		fprintf(stderr, "dolsot mcp: cannot build a message: %s\n", strerror(errno));
		return;
	}
	if (s->collect) {
		batch_add(s->collect, line, len - 1);
		free(line);
		return;
	}
	if (!s->gone && fd_write_all(1, line, len) < 0) {
		if (errno != EPIPE)
			fprintf(stderr, "dolsot mcp: cannot write to stdout: %s\n",
			        strerror(errno));
		s->gone = true;
	}
	free(line);
}

static void send_error(struct server *s, const json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- batches ---- */

static struct batch *batch_new(struct server *s)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (b) {
		b->s = s;
		b->holds = 1;
	}
	return b;
}

static void batch_add(struct batch *b, const char *line, size_t len)
{
	if (b->cap - b->len < len + 3) {
		size_t cap = (b->len + len + 3) * 2;
		char *grown = realloc(b->buf, cap);

		if (!grown) {
			fprintf(stderr, "dolsot mcp: out of memory: an answer in a batch is lost\n");
			return;
		}
		b->buf = grown;
		b->cap = cap;
	}
	b->buf[b->len] = b->len ? ',' : '[';
	b->len++;
	memcpy(b->buf + b->len, line, len);
	b->len += len;
}

/* Let go of one hold; the last writes the answers (none when the batch
 * held only notifications and answers nobody waits for). */
static void batch_put(struct batch *b)
{
	struct server *s;

	if (!b || --b->holds)
		return;
	s = b->s;
	if (b->len) {
		struct batch *was = s->collect;

		b->buf[b->len++] = ']';
		b->buf[b->len++] = '\n';
		s->collect = NULL;
		send_line(s, b->buf, b->len);
		s->collect = was;
	} else {
		free(b->buf);
	}
	free(b);
}

static void send_error(struct server *s, const json_t *id, int code, const char *fmt, ...)
{
	char msg[1024];
	size_t len = 0;
	char *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	line = jsonrpc_error(id, code, msg, &len);
	send_line(s, line, len);
}

/* Takes result's reference. */
static void send_result(struct server *s, const json_t *id, json_t *result)
{
	size_t len = 0;
	char *line;

	if (!result) {
		send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	line = jsonrpc_result(id, result, &len);
	send_line(s, line, len);
	json_decref(result);
}

/* ---- what a tool call's child builds ---- */

/* text[0..n) as a JSON string, made valid UTF-8. */
static json_t *clean_string(const char *text, size_t n)
{
	char *clean = malloc(n * 3 + 1);
	json_t *s;

	if (!clean)
		return NULL;
	n = output_json_utf8_clean(text, n, clean);
	s = json_stringn(clean, n);
	free(clean);
	return s;
}

static json_t *text_block(const char *text, size_t n)
{
	return json_pack("{s:s, s:o}", "type", "text", "text", clean_string(text, n));
}

static bool structured(const struct server *s)
{
	return strcmp(s->version, structured_since) >= 0;
}

/* A tool result; takes the references of text and (may be NULL) obj. */
static json_t *tool_result(const struct server *s, json_t *content, json_t *obj, bool error)
{
	json_t *r = json_pack("{s:o, s:b}", "content", content, "isError", error);

	if (r && obj && structured(s))
		json_object_set(r, "structuredContent", obj);
	json_decref(obj);
	return r;
}

static json_t *error_result(const struct server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static json_t *error_result(const struct server *s, const char *fmt, ...)
{
	char msg[REPL_ERR_MAX + 256];
	va_list ap;

	msg[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tool_result(s, json_pack("[o]", text_block(msg, strlen(msg))), NULL, true);
}

/* What fn wrote to a memory stream, parsed. */
static json_t *json_of(int (*fn)(const struct result *, FILE *), const struct result *r)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	json_t *o = NULL;
	int wrote;

	if (!f)
		return NULL;
	wrote = fn(r, f);
	if (fclose(f) == 0 && wrote == 0)
		o = json_loadb(text, n, 0, NULL);
	free(text);
	return o;
}

static int render_text(const struct result *r, FILE *f)
{
	return output_render(r, f, f);
}

/* The image blocks of a result object's displays (its "displays" array, as
 * output_json.c writes it), and a line in the text for each.  Built from the
 * object, so that a replayed call id attaches what its first call did. */
static void add_images(const json_t *obj, json_t *content, FILE *text)
{
	const json_t *displays = json_object_get(obj, "displays"), *d;
	size_t i, shown = 0;

	json_array_foreach(displays, i, d) {
		const json_t *meta = json_object_get(d, "metadata");
		const char *mime;
		json_t *data;

		json_object_foreach(json_object_get(d, "data"), mime, data) {
			if (strcmp(mime, "image/png") != 0 && strcmp(mime, "image/jpeg") != 0)
				continue;
			if (!json_is_string(data))
				continue;
			json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image",
			                      "data", data, "mimeType", mime));
			fprintf(text, "dolsot: image %zu (%" JSON_INTEGER_FORMAT "x%"
			        JSON_INTEGER_FORMAT " %s) is attached\n", ++shown,
			        json_integer_value(json_object_get(meta, "width")),
			        json_integer_value(json_object_get(meta, "height")), mime);
			break;
		}
	}
}

/* The text and object of res: as recorded for its call id when the call
 * said a record (a replay, or the first call whose record holds it all),
 * otherwise rendered.  0, or -1 on a lack of memory. */
static int result_parts(const struct result *res, FILE *text, json_t **obj)
{
	if (!res->said) {
		*obj = json_of(output_json_run, res);
		return *obj && render_text(res, text) == 0 ? 0 : -1;
	}
	*obj = json_loadb(res->said_json.p, res->said_json.len, 0, NULL);
	if (!*obj)
		return -1;
	if ((res->said_out.len && fwrite(res->said_out.p, 1, res->said_out.len, text) !=
	     res->said_out.len) ||
	    (res->said_err.len && fwrite(res->said_err.p, 1, res->said_err.len, text) !=
	     res->said_err.len))
		return -1;
	return 0;
}

static json_t *python_result(const struct server *s, const struct job *j)
{
	struct settings set = *s->m->settings;
	struct run_args a = { .session = j->session, .code = j->code,
	                      .code_len = strlen(j->code), .toolboxes = s->m->toolboxes,
	                      .n_toolboxes = s->m->n_toolboxes, .settings = &set,
	                      .plan = s->m->plan, .json = true, .fork = j->fork,
	                      .fork_replace = j->replace, .call_id = j->call_id };
	struct result res;
	char err[REPL_ERR_MAX], *text = NULL;
	size_t n = 0;
	int sig = 0;
	json_t *obj = NULL, *content;
	FILE *f;

	set.timeout = j->timeout;
	result_init(&res, set.max_output);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0) {
		result_release(&res);
		return error_result(s, "dolsot: %s", err);
	}
	if (sig)
		_exit(0);           /* cancelled: no answer, the session rolled back */
	content = json_array();
	f = open_memstream(&text, &n);
	if (!content || !f || result_parts(&res, f, &obj) < 0) {
		if (f)
			fclose(f);
		free(text);
		json_decref(obj);
		json_decref(content);
		result_release(&res);
		return NULL;
	}
	add_images(obj, content, f);
	if (j->minted)
		fprintf(f, "dolsot: this call made session '%s'; pass \"session\": \"%s\" to "
		        "go on with its state\n", j->session, j->session);
	fclose(f);
	json_array_insert_new(content, 0, text_block(text, n));
	free(text);
	content = tool_result(s, content, obj, res.exit_code != 0);
	result_release(&res);
	return content;
}

static json_t *list_result(const struct server *s)
{
	char err[REPL_ERR_MAX], serr[STORE_ERR_MAX], *text = NULL;
	struct store *st = repl_open_store(s->m->settings, err, sizeof(err));
	struct session_info *info = NULL;
	size_t n = 0, tn = 0;
	json_t *obj = NULL;
	FILE *f;

	if (!st)
		return error_result(s, "dolsot: %s", err);
	if (store_list(st, &info, &n, serr, sizeof(serr)) < 0) {
		store_close(st);
		return error_result(s, "dolsot: %s", serr);
	}
	f = open_memstream(&text, &tn);
	if (f && output_json_sessions(info, n, f) == 0 && fflush(f) == 0)
		obj = json_loadb(text, tn, 0, NULL);
	if (f)
		fclose(f);
	free(text);
	text = NULL;
	f = open_memstream(&text, &tn);
	for (size_t i = 0; f && i < n; i++) {
		struct tm tm;
		char when[64];
		time_t t = info[i].mtime.tv_sec;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S+00:00", &tm);
		fprintf(f, "%s\t%llu\t%s\n", info[i].id, (unsigned long long)info[i].size, when);
	}
	if (f && n == 0)
		fputs("(no sessions)\n", f);
	free(info);
	store_close(st);
	if (!f || fclose(f) != 0 || !obj) {
		free(text);
		json_decref(obj);
		return NULL;
	}
	obj = tool_result(s, json_pack("[o]", text_block(text, tn)), obj, false);
	free(text);
	return obj;
}

static json_t *reset_result(const struct server *s, const struct job *j)
{
	char err[REPL_ERR_MAX], line[STORE_ERR_MAX + 64];
	unsigned removed = 0, images = 0;
	json_t *obj;

	if (repl_reset(s->m->settings, j->session, &removed, &images, NULL, err,
	               sizeof(err)) < 0)
		return error_result(s, "dolsot: %s", err);
	obj = json_pack("{s:s, s:I, s:I}", "reset", j->session, "removed", (json_int_t)removed,
	                "removed_images", (json_int_t)images);
	if (images)
		snprintf(line, sizeof(line), "reset %s: removed %u session(s) and %u image(s)\n",
		         j->session, removed, images);
	else
		snprintf(line, sizeof(line), "reset %s: removed %u session(s)\n", j->session,
		         removed);
	return tool_result(s, json_pack("[o]", text_block(line, strlen(line))), obj, false);
}

/*
 * A call's child, before it runs anything: the signals as the command has
 * them, stdin on /dev/null and stdout on our stderr (only this process
 * writes protocol lines), every fd closed but keep, and SIGTERM when we
 * end, however we end: the engine turns it into a kill and a rollback.
 */
static int child_setup(const struct server *s, int keep)
{
	proc_child_reset_signals(&s->oldmask);
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != s->self)
		return -1;
	if (proc_child_stdio(2, 2) < 0)
		return -1;
	proc_child_close_fds(&keep, 1);
	return 0;
}

/* The child: answer one call into fd, then end. */
static void __attribute__((noreturn)) job_child(struct server *s, struct job *j, int fd)
{
	json_t *r = NULL;
	char *text;

	if (child_setup(s, fd) < 0)
		_exit(1);
	switch (j->kind) {
	case JOB_PYTHON:
		r = python_result(s, j);
		break;
	case JOB_LIST:
		r = list_result(s);
		break;
	case JOB_RESET:
		r = reset_result(s, j);
		break;
	default:
		break;
	}
	text = r ? json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	if (!text || fd_write_all(fd, text, strlen(text)) < 0)
		_exit(1);
	_exit(0);
}

/* ---- the calls ---- */

static void job_free(struct job *j)
{
	if (!j)
		return;
	json_decref(j->id);
	json_decref(j->progress);
	free(j->session);
	free(j->code);
	free(j->fork);
	free(j->call_id);
	free(j->buf);
	fd_close(&j->pidfd);
	fd_close(&j->out);
	batch_put(j->batch);
	free(j);
}

static bool conflicts(const struct job *a, const struct job *b)
{
	if (!a->session || !b->session)
		return false;
	return strcmp(a->session, "all") == 0 || strcmp(b->session, "all") == 0 ||
	       strcmp(a->session, b->session) == 0;
}

static int job_start(struct server *s, struct job *j)
{
	int p[2];
	long pidfd;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fflush(stderr);
	j->pid = fork();
	if (j->pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (j->pid == 0) {
		close(p[0]);
		job_child(s, j, p[1]);
	}
	close(p[1]);
	j->out = p[0];
	pidfd = syscall(SYS_pidfd_open, j->pid, 0);
	if (pidfd < 0 || fcntl(j->out, F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;

		kill(j->pid, SIGKILL);
		waitpid(j->pid, NULL, 0);
		errno = e;
		return -1;
	}
	j->pidfd = (int)pidfd;
	fcntl(j->pidfd, F_SETFD, FD_CLOEXEC);
	j->started = j->progressed = now();
	return 0;
}

/* Start what may start: in order, each unless it conflicts with a call
 * running or one that came before it and still waits. */
static void dispatch(struct server *s)
{
	struct job **pp = &s->waiting;

	while (*pp && s->n_running < MCP_MAX_RUNNING) {
		struct job *j = *pp, *o;
		bool blocked = false;

		for (o = s->running; o && !blocked; o = o->next)
			blocked = conflicts(j, o);
		for (o = s->waiting; o != j && !blocked; o = o->next)
			blocked = conflicts(j, o);
		if (blocked) {
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		s->n_waiting--;
		if (job_start(s, j) < 0) {
			s->collect = j->batch;
			send_error(s, j->id, JSONRPC_INTERNAL_ERROR, "cannot start the call: %s",
			           strerror(errno));
			s->collect = NULL;
			job_free(j);
			continue;
		}
		j->next = s->running;
		s->running = j;
		s->n_running++;
	}
}

static void drain_output(struct job *j)
{
	for (;;) {
		ssize_t r;

		if (j->cap - j->len < READ_CHUNK) {
			size_t cap = j->cap ? j->cap * 2 : READ_CHUNK * 2;
			char *grown = realloc(j->buf, cap);

			if (!grown)
				return;
			j->buf = grown;
			j->cap = cap;
		}
		r = read(j->out, j->buf + j->len, j->cap - j->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		j->len += (size_t)r;
	}
}

static void job_answer(struct server *s, struct job *j);

/* The child of j ended: answer the call, in its batch if it came in one. */
static void job_finish(struct server *s, struct job *j)
{
	s->collect = j->batch;
	job_answer(s, j);
	s->collect = NULL;
}

static void job_answer(struct server *s, struct job *j)
{
	int status = 0;
	size_t len = 0;
	char *line;

	drain_output(j);
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (j->cancelled)
		return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && j->len) {
		line = jsonrpc_result_raw(j->id, j->buf, j->len, &len);
		send_line(s, line, len);
		return;
	}
	/* Not cancelled by the client, yet no result: say so, never leave the
	 * request unanswered (exit 0 without one: a signal from elsewhere). */
	send_result(s, j->id, error_result(s, "dolsot: the call's process ended without a "
	                                   "result (%s %d)",
	                                   WIFSIGNALED(status) ? "signal" : "exit status",
	                                   WIFSIGNALED(status) ? WTERMSIG(status)
	                                                       : WEXITSTATUS(status)));
}

static void send_progress(struct server *s, struct job *j, double t)
{
	json_t *p;
	char msg[96];
	size_t len = 0;
	char *line;
	double elapsed = t - j->started;

	snprintf(msg, sizeof(msg), "running for %.0f s of at most %g s", elapsed, j->timeout);
	p = json_pack("{s:O, s:f, s:f, s:s}", "progressToken", j->progress, "progress",
	              floor(elapsed * 10) / 10, "total", j->timeout, "message", msg);
	if (p) {
		line = jsonrpc_notification("notifications/progress", p, &len);
		send_line(s, line, len);
	}
	json_decref(p);
	j->progressed = t;
}

static bool same_id(const json_t *a, const json_t *b)
{
	return a && b && json_equal((json_t *)a, (json_t *)b);
}

static void cancel(struct server *s, const json_t *id)
{
	struct job **pp;

	for (struct job *j = s->running; j; j = j->next)
		if (same_id(j->id, id) && !j->cancelled) {
			j->cancelled = true;
			kill(j->pid, SIGTERM);
			return;
		}
	for (pp = &s->waiting; *pp; pp = &(*pp)->next)
		if (same_id((*pp)->id, id)) {
			struct job *j = *pp;

			*pp = j->next;
			s->n_waiting--;
			job_free(j);
			return;
		}
}

/* ---- the tools ---- */

static json_t *schema_def(json_t *schema, const char *name)
{
	json_t *defs = json_object_get(schema, "$defs");
	json_t *d = json_deep_copy(json_object_get(defs, name));

	if (d)
		json_object_set(d, "$defs", defs);
	return d;
}

/* --describe's text for the python tool, within MCP_DESCRIBE_MAX. */
static char *describe_text(struct server *s)
{
	struct run_args a = { .toolboxes = s->m->toolboxes, .n_toolboxes = s->m->n_toolboxes,
	                      .settings = s->m->settings, .code = "", .describe = true,
	                      .plan = s->m->plan, .describe_mounts = s->m->describe_mounts,
	                      .describe_mounts_len = s->m->describe_mounts_len };
	struct result res;
	char err[REPL_ERR_MAX], *text = NULL;
	size_t n = 0;
	int sig = 0;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		return NULL;
	result_init(&res, s->m->settings->max_output);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0)
		fprintf(f, "(the description failed: %s)\n", err);
	else if (res.describe.p)
		fprintf(f, "%.*s\n", (int)res.describe.len, res.describe.p);
	else if (res.error)
		fprintf(f, "(the description failed: %s)\n", res.error);
	output_describe_limits(&s->m->settings->limits, s->m->settings->timeout, f);
	result_release(&res);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	if (n > MCP_DESCRIBE_MAX) {
		size_t cut = MCP_DESCRIBE_MAX;
		static const char more[] = "... (cut here: `dolsot --describe` with the same "
		                           "flags shows the rest)\n";

		while (cut && text[cut - 1] != '\n')
			cut--;
		memcpy(text + cut, more, sizeof(more));
	}
	return text;
}

/* The describe text from a child, so the engine's signal handling and
 * state never touch this process. */
static char *describe_in_child(struct server *s)
{
	int p[2], status;
	pid_t pid;
	uint8_t *out = NULL;
	size_t len = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL;
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0) {
		char *text;

		close(p[0]);
		if (child_setup(s, p[1]) < 0)
			_exit(1);
		text = describe_text(s);
		_exit(text && fd_write_all(p[1], text, strlen(text)) == 0 ? 0 : 1);
	}
	close(p[1]);
	if (fd_read_all(p[0], 16384, &out, &len) < 0)
		out = NULL;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (out) {
		char *text = realloc(out, len + 1);

		if (!text) {
			free(out);
			return NULL;
		}
		text[len] = '\0';
		return text;
	}
	return NULL;
}

static json_t *python_tool(struct server *s, json_t *schema)
{
	const struct settings *set = s->m->settings;
	char *desc = describe_in_child(s), *full = NULL, life[320];
	json_t *tool;

	if (set->store == STORE_KIND_MEMORY)
		snprintf(life, sizeof(life), "Sessions live in the warm server's memory "
		         "(DOLSOT_STORE=memory) until reset_session, or until the server has "
		         "been idle %g s", set->server_idle);
	else if (set->ttl_days > 0)
		snprintf(life, sizeof(life), "Sessions are kept on disk until reset_session, "
		         "or until unused for %g days", set->ttl_days);
	else
		snprintf(life, sizeof(life), "Sessions are kept on disk until reset_session");
	if (asprintf(&full,
	             "Run Python 3.11 code in a persistent session (dolsot). Variables, "
	             "imports and functions persist per `session` across calls; the value of "
	             "the last expression is shown, as in a notebook. Omit `session` to start "
	             "a new one: its id is made for the call (mcp-...) and returned; pass it "
	             "on later calls. Pass `fork` with another session's id to start this "
	             "call's session as a copy of that one first (the source is left as it "
	             "is; `replace` lets the copy overwrite a session that exists). "
	             "%s. Each call runs at most `timeout` seconds (default "
	             "and maximum %g); a cell that raises or times out returns isError, and a "
	             "timeout or a cancel leaves the session as it was before the call. "
	             "matplotlib figures come back as images.\n\nWhat a cell gets:\n%s",
	             life, set->timeout, desc ? desc : "(unknown: the description failed)\n") < 0)
		full = NULL;
	free(desc);
	tool = json_pack(
		"{s:s, s:s, s:o, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:f, s:f, s:s}, "
		"s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}}",
		"name", "python", "title", "Python (dolsot)",
		"description", full ? json_string(full) : json_string("Run Python code."),
		"inputSchema", "type", "object", "properties",
		"code", "type", "string", "description", "the Python code of the cell",
		"session", "type", "string", "description",
		"the session to run in (letters, digits, '.', '_', '-'); omit it for a new one",
		"timeout", "type", "number", "exclusiveMinimum", 0.0, "maximum", set->timeout,
		"description", "seconds the call may run (capped by the server's --timeout)",
		"fork", "type", "string", "description",
		"start `session` as a copy of this session's state, then run the code in it",
		"replace", "type", "boolean", "description",
		"with fork: replace `session` if it exists (otherwise that is an error)",
		"call_id", "type", "string", "description",
		"names this call so that a retry is safe: a call repeating an id the session "
		"already committed returns that call's recorded result without running the "
		"code again (1-128 of A-Z a-z 0-9 . _ : -; needs session)",
		"required", "code", "additionalProperties", 0);
	free(full);
	if (tool)
		json_object_set_new(tool, "outputSchema", schema_def(schema, "result"));
	return tool;
}

static json_t *make_tools(struct server *s)
{
	json_t *schema = json_loads(result_schema_json, 0, NULL), *list, *t;

	list = json_array();
	if (!schema || !list) {
		json_decref(schema);
		json_decref(list);
		return NULL;
	}
	json_array_append_new(list, python_tool(s, schema));
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:{}, s:b}}", "name", "list_sessions",
	              "title", "List dolsot sessions",
	              "description", "List the sessions in the store: id, size in bytes, and "
	              "when each was last saved (UTC).",
	              "inputSchema", "type", "object", "properties", "additionalProperties", 0);
	if (t)
		json_object_set_new(t, "outputSchema", schema_def(schema, "sessions"));
	json_array_append_new(list, t);
	t = json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}}",
	              "name", "reset_session", "title", "Reset dolsot sessions",
	              "description", "Forget one session (its variables, imports and "
	              "functions), or every session with \"all\".",
	              "inputSchema", "type", "object", "properties", "session", "type", "string",
	              "description", "the session id, or \"all\"",
	              "required", "session", "additionalProperties", 0);
	if (t)
		json_object_set_new(t, "outputSchema", schema_def(schema, "reset"));
	json_array_append_new(list, t);
	json_decref(schema);
	if (json_array_size(list) != 3) {
		json_decref(list);
		return NULL;
	}
	return json_pack("{s:o}", "tools", list);
}

static json_t *tools_for_version(struct server *s)
{
	json_t *r, *list;

	if (!s->tools)
		s->tools = make_tools(s);
	if (!s->tools)
		return NULL;
	r = json_deep_copy(s->tools);
	list = json_object_get(r, "tools");
	for (size_t i = 0; !structured(s) && i < json_array_size(list); i++) {
		json_object_del(json_array_get(list, i), "outputSchema");
		json_object_del(json_array_get(list, i), "title");
	}
	return r;
}

/* ---- requests ---- */

static int mint_session(char *out, size_t len)
{
	unsigned char b[8];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	snprintf(out, len, "mcp-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
	         b[4], b[5], b[6], b[7]);
	return 0;
}

/* A session argument: 0, or -1 after answering why not. */
static int check_session(struct server *s, const json_t *id, const char *sid, bool all)
{
	char err[STORE_ERR_MAX];

	if (all && strcmp(sid, "all") == 0)
		return 0;
	if (strcmp(sid, "all") == 0) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "session id 'all' is reserved (it means "
		           "every session to reset_session); choose another id");
		return -1;
	}
	if (!store_id_valid(sid, err, sizeof(err))) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	return 0;
}

static bool only_keys(const json_t *args, const char *const *keys, const char **bad)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)args, k, v) {
		bool known = false;

		(void)v;
		for (const char *const *p = keys; *p && !known; p++)
			known = strcmp(*p, k) == 0;
		if (!known) {
			*bad = k;
			return false;
		}
	}
	return true;
}

static bool is_blank(const char *c)
{
	return c[strspn(c, " \t\r\n\f\v")] == '\0';
}

/* A python call's fork and replace into j (its session already set); 0,
 * or -1 after answering.  The same rules as --fork and --replace. */
static int fork_args(struct server *s, const json_t *id, const json_t *args, struct job *j)
{
	json_t *src = json_object_get(args, "fork"), *rep = json_object_get(args, "replace");

	if (rep && !json_is_boolean(rep)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"replace\" must be true or "
		           "false");
		return -1;
	}
	if (!src) {
		if (json_is_true(rep)) {
			send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"replace\" goes with "
			           "\"fork\"");
			return -1;
		}
		return 0;
	}
	if (!json_is_string(src)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"fork\" must be a string: "
		           "the session to copy");
		return -1;
	}
	if (strcmp(json_string_value(src), "all") == 0) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"fork\": 'all' is not a "
		           "session; name the session to copy");
		return -1;
	}
	if (check_session(s, id, json_string_value(src), false) < 0)
		return -1;
	if (strcmp(json_string_value(src), j->session) == 0) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"fork\": a session cannot be "
		           "forked into itself");
		return -1;
	}
	j->replace = json_is_true(rep);
	j->fork = strdup(json_string_value(src));
	if (!j->fork) {
		send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	return 0;
}

/* A python call's call_id into j (its session already set); 0, or -1
 * after answering.  The rule of --call-id, and a session to name: a
 * retry of a call that minted one would mint another. */
static int call_id_arg(struct server *s, const json_t *id, const json_t *args, struct job *j)
{
	const json_t *cid = json_object_get(args, "call_id");
	char why[256] = "a call id is made of " CALLREC_ID_CHARS " only (it holds a NUL)";

	if (!cid)
		return 0;
	if (!json_is_string(cid)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"call_id\" must be a string");
		return -1;
	}
	if (strlen(json_string_value(cid)) != json_string_length(cid) ||
	    !callrec_id_valid(json_string_value(cid), why, sizeof(why))) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"call_id\" '%.130s': %s",
		           json_string_value(cid), why);
		return -1;
	}
	if (j->minted) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"call_id\" needs \"session\": "
		           "a retry without one would start another new session");
		return -1;
	}
	j->call_id = strdup(json_string_value(cid));
	if (!j->call_id) {
		send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	return 0;
}

/* A python call's arguments into j; 0, or -1 after answering. */
static int python_args(struct server *s, const json_t *id, const json_t *args, struct job *j)
{
	static const char *const keys[] = { "code", "session", "timeout", "fork", "replace",
	                                    "call_id", NULL };
	json_t *code = json_object_get(args, "code"), *sid = json_object_get(args, "session");
	json_t *t = json_object_get(args, "timeout");
	const char *bad = NULL;
	char minted[32];

	if (!only_keys(args, keys, &bad)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: unknown argument '%.100s' "
		           "(it takes code, session, timeout, fork, replace and call_id)", bad);
		return -1;
	}
	if (!json_is_string(code) || is_blank(json_string_value(code)) ||
	    strlen(json_string_value(code)) != json_string_length(code)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"code\" must be a string of "
		           "Python code, not empty and without NUL characters");
		return -1;
	}
	if (sid && !json_is_string(sid)) {
		send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"session\" must be a string");
		return -1;
	}
	if (sid && check_session(s, id, json_string_value(sid), false) < 0)
		return -1;
	j->timeout = s->m->settings->timeout;
	if (t) {
		double v = json_number_value(t);

		if (!json_is_number(t) || !(v > 0) || !isfinite(v)) {
			send_error(s, id, JSONRPC_INVALID_PARAMS, "python: \"timeout\" must be a "
			           "positive number of seconds");
			return -1;
		}
		if (v < j->timeout)
			j->timeout = v;
	}
	if (!sid && mint_session(minted, sizeof(minted)) < 0) {
		send_error(s, id, JSONRPC_INTERNAL_ERROR, "cannot make a session id: %s",
		           strerror(errno));
		return -1;
	}
	j->minted = !sid;
	j->session = strdup(sid ? json_string_value(sid) : minted);
	j->code = strdup(json_string_value(code));
	if (!j->session || !j->code) {
		send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	if (call_id_arg(s, id, args, j) < 0)
		return -1;
	return fork_args(s, id, args, j);
}

static void tools_call(struct server *s, const struct jsonrpc_msg *m)
{
	json_t *name = json_object_get(m->params, "name");
	json_t *args = json_object_get(m->params, "arguments");
	json_t *meta = json_object_get(m->params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	const char *tool;
	struct job *j, **tail;

	if (!json_is_string(name)) {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS, "tools/call needs \"name\", a string");
		return;
	}
	if (args && !json_is_object(args)) {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS, "\"arguments\" must be an object");
		return;
	}
	if (token && !json_is_string(token) && !json_is_integer(token)) {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS,
		           "\"progressToken\" must be a string or an integer");
		return;
	}
	tool = json_string_value(name);
	if (s->n_waiting >= MCP_MAX_WAITING) {
		send_error(s, m->id, -32000, "too many calls waiting (at most %d); try again "
		           "when some have ended", MCP_MAX_WAITING);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		send_error(s, m->id, JSONRPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	j->pidfd = j->out = -1;
	j->id = json_incref(m->id);
	j->progress = token ? json_incref(token) : NULL;
	if (strcmp(tool, "python") == 0) {
		json_t *none = args ? NULL : json_object();
		int rc;

		j->kind = JOB_PYTHON;
		rc = none || args ? python_args(s, m->id, args ? args : none, j) : -1;
		json_decref(none);
		if (rc < 0) {
			if (!args && !none)
				send_error(s, m->id, JSONRPC_INTERNAL_ERROR, "out of memory");
			job_free(j);
			return;
		}
	} else if (strcmp(tool, "list_sessions") == 0) {
		static const char *const none[] = { NULL };
		const char *bad = NULL;

		j->kind = JOB_LIST;
		if (args && !only_keys(args, none, &bad)) {
			send_error(s, m->id, JSONRPC_INVALID_PARAMS, "list_sessions takes no "
			           "arguments (got '%.100s')", bad);
			job_free(j);
			return;
		}
	} else if (strcmp(tool, "reset_session") == 0) {
		static const char *const keys[] = { "session", NULL };
		json_t *sid = json_object_get(args, "session");
		const char *bad = NULL;

		j->kind = JOB_RESET;
		if (args && !only_keys(args, keys, &bad)) {
			send_error(s, m->id, JSONRPC_INVALID_PARAMS, "reset_session: unknown "
			           "argument '%.100s' (it takes session)", bad);
			job_free(j);
			return;
		}
		if (!json_is_string(sid)) {
			send_error(s, m->id, JSONRPC_INVALID_PARAMS, "reset_session needs "
			           "\"session\": an id, or \"all\"");
			job_free(j);
			return;
		}
		if (check_session(s, m->id, json_string_value(sid), true) < 0) {
			job_free(j);
			return;
		}
		j->session = strdup(json_string_value(sid));
		j->timeout = s->m->settings->timeout;
	} else {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS, "unknown tool '%.100s' (the tools "
		           "are python, list_sessions and reset_session)", tool);
		job_free(j);
		return;
	}
	for (tail = &s->waiting; *tail; tail = &(*tail)->next)
		;
	*tail = j;
	s->n_waiting++;
	if ((j->batch = s->collect))
		j->batch->holds++;
}

static void initialize(struct server *s, const struct jsonrpc_msg *m)
{
	json_t *want = json_object_get(m->params, "protocolVersion");
	const char *v = versions[0];
	json_t *r;

	if (s->version) {
		send_error(s, m->id, JSONRPC_INVALID_REQUEST, "already initialized");
		return;
	}
	if (!json_is_string(want)) {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS,
		           "initialize needs \"protocolVersion\", a string");
		return;
	}
	/* One we speak is answered in kind; any other gets our newest. */
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(json_string_value(want), versions[i]) == 0)
			v = versions[i];
	s->version = v;
	r = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
	              "capabilities", "tools", "listChanged", 0,
	              "serverInfo", "name", "dolsot", "title", "dolsot Python REPL",
	              "version", s->m->version,
	              "instructions", "Use the python tool to run Python code in a persistent "
	              "session: keep passing the same session id to build on earlier "
	              "cells. list_sessions and reset_session manage sessions.");
	if (r && !structured(s))
		json_object_del(json_object_get(r, "serverInfo"), "title");
	send_result(s, m->id, r);
}

static void on_request(struct server *s, const struct jsonrpc_msg *m)
{
	if (m->params && !json_is_object(m->params)) {
		send_error(s, m->id, JSONRPC_INVALID_PARAMS, "\"params\" must be an object");
		return;
	}
	if (strcmp(m->method, "initialize") == 0) {
		initialize(s, m);
		return;
	}
	if (strcmp(m->method, "ping") == 0) {
		send_result(s, m->id, json_object());
		return;
	}
	if (!s->version) {
		send_error(s, m->id, -32002, "not initialized: send \"initialize\" first");
		return;
	}
	if (strcmp(m->method, "tools/list") == 0) {
		send_result(s, m->id, tools_for_version(s));
	} else if (strcmp(m->method, "tools/call") == 0) {
		if (!m->params)
			send_error(s, m->id, JSONRPC_INVALID_PARAMS, "tools/call needs params");
		else
			tools_call(s, m);
	} else {
		send_error(s, m->id, JSONRPC_METHOD_NOT_FOUND, "method not found: '%.100s'",
		           m->method);
	}
}

static void on_notification(struct server *s, const struct jsonrpc_msg *m)
{
	if (strcmp(m->method, "notifications/cancelled") == 0 && json_is_object(m->params))
		cancel(s, json_object_get(m->params, "requestId"));
	/* notifications/initialized and any other notification need nothing. */
}

static void on_message(struct server *s, const struct jsonrpc_msg *m)
{
	if (m->kind == JSONRPC_REQUEST)
		on_request(s, m);
	else if (m->kind == JSONRPC_NOTIFICATION)
		on_notification(s, m);
	/* We send no requests, so a response answers nothing: ignored. */
}

/* Only revision 2025-03-26 has batches, and there initialize may not be
 * in one; each element is a message, answered in one array. */
static void on_batch(struct server *s, json_t *batch)
{
	struct batch *b;
	size_t i;
	json_t *v;

	if (!s->version || strcmp(s->version, "2025-03-26") != 0) {
		send_error(s, NULL, JSONRPC_INVALID_REQUEST, "invalid request: batches (arrays) "
		           "are part of MCP revision 2025-03-26 only, not of %s",
		           s->version ? s->version : "a session not yet initialized");
		return;
	}
	b = batch_new(s);
	if (!b) {
		send_error(s, NULL, JSONRPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	s->collect = b;
	json_array_foreach(batch, i, v) {
		struct jsonrpc_msg m;
		struct jsonrpc_fault f;

		if (jsonrpc_parse_value(json_incref(v), &m, &f) < 0) {
			send_error(s, f.id, f.code, "%s", f.message);
			json_decref(f.id);
			continue;
		}
		if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0)
			send_error(s, m.id, JSONRPC_INVALID_REQUEST,
			           "invalid request: initialize may not be part of a batch");
		else
			on_message(s, &m);
		jsonrpc_msg_release(&m);
	}
	s->collect = NULL;
	batch_put(b);
}

static void on_line(struct server *s, const char *line, size_t len)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;

	if (strspn(line, " \t\r") >= len)
		return;     /* a blank line is no message */
	if (jsonrpc_parse(line, len, &m, &f) < 0) {
		send_error(s, f.id, f.code, "%s", f.message);
		json_decref(f.id);
		return;
	}
	if (m.kind == JSONRPC_BATCH)
		on_batch(s, m.root);
	else
		on_message(s, &m);
	jsonrpc_msg_release(&m);
}

static void on_event(struct server *s, enum jsonrpc_line got, const char *line, size_t len)
{
	if (got == JSONRPC_LINE)
		on_line(s, line, len);
	else if (got == JSONRPC_LINE_OVERSIZE)
		send_error(s, NULL, JSONRPC_INVALID_REQUEST, "message larger than %zu bytes: "
		           "refused", MCP_MAX_MESSAGE);
}

static void read_stdin(struct server *s)
{
	char buf[READ_CHUNK];
	ssize_t n = read(0, buf, sizeof(buf));
	const char *line;
	size_t len, off = 0;
	enum jsonrpc_line got;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		if (n < 0)
			fprintf(stderr, "dolsot mcp: cannot read stdin: %s\n", strerror(errno));
		s->eof = true;
		got = jsonrpc_rest(&s->rd, &line, &len);
		on_event(s, got, line, len);
		return;
	}
	while (off < (size_t)n) {
		long took = jsonrpc_feed(&s->rd, buf + off, (size_t)n - off);

		if (took < 0) {
			fprintf(stderr, "dolsot mcp: out of memory reading a message\n");
			s->stop = true;
			return;
		}
		off += (size_t)took;
		while ((got = jsonrpc_next(&s->rd, &line, &len)) != JSONRPC_LINE_NONE)
			on_event(s, got, line, len);
	}
}

/* ---- the loop ---- */

static void reap_ended(struct server *s, const struct pollfd *pf, size_t base)
{
	struct job **pp = &s->running;
	size_t i = base;

	while (*pp) {
		struct job *j = *pp;

		if (pf[i].revents & POLLIN)
			drain_output(j);
		if (pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
			*pp = j->next;
			s->n_running--;
			job_finish(s, j);
			job_free(j);
		} else {
			pp = &j->next;
		}
		i += 2;
	}
}

static int poll_ms(const struct server *s, double t)
{
	double next = -1;

	for (const struct job *j = s->running; j; j = j->next)
		if (j->progress && !j->cancelled) {
			double due = j->progressed + PROGRESS_EVERY - t;

			if (next < 0 || due < next)
				next = due;
		}
	if (next < 0)
		return -1;
	return next <= 0 ? 0 : (int)(next * 1000) + 1;
}

static void stop_all(struct server *s)
{
	struct job *j;

	while ((j = s->waiting)) {
		s->waiting = j->next;
		job_free(j);
	}
	for (j = s->running; j; j = j->next)
		kill(j->pid, SIGTERM);
	while ((j = s->running)) {
		s->running = j->next;
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
		job_free(j);
	}
	s->n_running = s->n_waiting = 0;
}

static int serve(struct server *s, char *err, size_t errlen)
{
	/* stdin, stdout, the signals, and two per call running */
	struct pollfd pf[3 + 2 * MCP_MAX_RUNNING];

	while (!s->stop && !s->gone && (!s->eof || s->running || s->waiting)) {
		nfds_t n = 0;
		double t;
		int rc;

		pf[n++] = (struct pollfd){ .fd = s->eof ? -1 : 0, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = 1, .events = 0 };
		pf[n++] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		for (struct job *j = s->running; j; j = j->next) {
			pf[n++] = (struct pollfd){ .fd = j->out, .events = POLLIN };
			pf[n++] = (struct pollfd){ .fd = j->pidfd, .events = POLLIN };
		}
		rc = poll(pf, n, poll_ms(s, now()));
		if (rc < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		if (rc < 0)
			continue;
		if (pf[2].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				fprintf(stderr, "dolsot mcp: %s: stopping\n", strsignal((int)si.ssi_signo));
			s->stop = true;
			break;
		}
		if (pf[1].revents & (POLLERR | POLLHUP)) {
			s->gone = true;
			break;
		}
		reap_ended(s, pf, 3);
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_stdin(s);
		t = now();
		for (struct job *j = s->running; j; j = j->next)
			if (j->progress && !j->cancelled && t - j->progressed >= PROGRESS_EVERY)
				send_progress(s, j, t);
		dispatch(s);
	}
	return 0;
}

int mcp_serve(const struct mcp_setup *m, char *err, size_t errlen)
{
	struct server s = { .m = m, .sigfd = -1, .self = getpid() };
	sigset_t mask;
	int rc;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &s.oldmask) < 0 ||
	    (s.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "signalfd: %s", strerror(errno));
		return -1;
	}
	jsonrpc_reader_init(&s.rd, MCP_MAX_MESSAGE);
	rc = serve(&s, err, errlen);
	stop_all(&s);
	jsonrpc_reader_release(&s.rd);
	json_decref(s.tools);
	fd_close(&s.sigfd);
	sigprocmask(SIG_SETMASK, &s.oldmask, NULL);
	return rc;
}
