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
 * children's stdout is our stderr, and their stdin is /dev/null.  With
 * --proxy or a client that samples, each child's host-tool calls come to
 * the relay (relay.h), whose sockets and servers the loop polls too.
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
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "jsonrpc.h"
#include "mcp_tools.h"
#include "mcp_tasks.h"
#include "proc_child.h"
#include "relay.h"

/* The revisions this server speaks, newest first. */
static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
                                        "2024-11-05" };
/* structuredContent and outputSchema exist from this revision on. */
static const char structured_since[] = "2025-06-18";

#define PROGRESS_EVERY 1.0      /* seconds between progress notifications */
#define READ_CHUNK ((size_t)65536)
/* A call's chunk lines waiting for their newline, at most (bytes). */
#define CHUNK_LINE_MAX ((size_t)1 << 20)

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
	struct mcp_call call;       /* the tool and its arguments */
	json_t *id;                 /* the request's id */
	json_t *progress;           /* its progress token, or NULL */
	pid_t pid;
	int pidfd, out;             /* the child's exit, and its answer */
	int chunks;                 /* its output while it runs (with a
	                             * progress token), or -1 */
	char *buf;
	size_t len, cap;
	char *cbuf;                 /* chunk lines read, not yet sent */
	size_t clen, ccap;
	double started, progressed;
	double progress_sent;       /* the last progress value sent */
	bool cancelled;
	struct batch *batch;        /* the batch it came in, or NULL */
	int relay_slot;             /* its tools socket's (relay.h), or -1 */
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
	char *toolbox_problems;     /* a line per toolbox that does not import, or NULL */
	struct job *waiting;        /* in arrival order */
	struct job *running;
	unsigned n_running, n_waiting;
	struct batch *collect;      /* where answers go now; NULL: stdout */
	struct relay relay;         /* proxied servers and llm_query */
};

bool mcp_version_known(const char *v)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(v, versions[i]) == 0)
			return true;
	return false;
}

static double now(void)
{
	return deadline_now();
}

static bool structured(const struct server *s)
{
	return strcmp(s->version, structured_since) >= 0;
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

/* The relay's requests to the client (sampling) and its cancels. */
static void send_to_client(void *ctx, char *line, size_t len)
{
	send_line(ctx, line, len);
}

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

/*
 * A call's child, before it runs anything: the signals as the command has
 * them, stdin on /dev/null and stdout on our stderr (only this process
 * writes protocol lines), every fd closed but keep, and SIGTERM when we
 * end, however we end: the engine turns it into a kill and a rollback.
 */
static int child_setup(const struct server *s, int *keep, size_t n_keep)
{
	proc_child_reset_signals(&s->oldmask);
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != s->self)
		return -1;
	if (proc_child_stdio(2, 2) < 0)
		return -1;
	proc_child_close_fds(keep, n_keep);
	return 0;
}

/* The child: answer one call into fd, then end. */
static void __attribute__((noreturn)) job_child(struct server *s, struct job *j, int fd,
                                                int chunks, int host)
{
	int keep[3] = { fd, chunks, host };
	bool cancelled = false;
	json_t *r;
	char *text;

	if (chunks < 0)
		keep[1] = host;
	if (child_setup(s, keep, (chunks >= 0) + (host >= 0) + 1) < 0)
		_exit(1);
	if (host >= 0 && s->m->tools)
		host_tools_use_fd(s->m->tools, host);
	j->call.chunk_fd = chunks;
	r = mcp_tools_run(s->m, structured(s), &j->call, &cancelled);
	if (cancelled)
		_exit(0);           /* no answer: the session rolled back */
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
	mcp_call_release(&j->call);
	free(j->buf);
	free(j->cbuf);
	fd_close(&j->pidfd);
	fd_close(&j->out);
	fd_close(&j->chunks);
	batch_put(j->batch);
	free(j);
}

static bool conflicts(const struct job *a, const struct job *b)
{
	const char *x = a->call.session, *y = b->call.session;

	if (!x || !y)
		return false;
	return strcmp(x, "all") == 0 || strcmp(y, "all") == 0 || strcmp(x, y) == 0;
}

static int job_start(struct server *s, struct job *j)
{
	int p[2], c[2] = { -1, -1 }, host = -1;
	long pidfd;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	/* Only a call with a progress token has its output sent as it comes. */
	if (j->progress && j->call.code &&   /* python's, the one tool with code */
	    pipe2(c, O_CLOEXEC) < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (relay_active(&s->relay))
		j->relay_slot = relay_open(&s->relay, &host);
	fflush(stderr);
	j->pid = relay_active(&s->relay) && j->relay_slot < 0 ? -1 : fork();
	if (j->pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		fd_close(&c[0]);
		fd_close(&c[1]);
		fd_close(&host);
		errno = e;
		return -1;
	}
	if (j->pid == 0) {
		close(p[0]);
		fd_close(&c[0]);
		job_child(s, j, p[1], c[1], host);
	}
	close(p[1]);
	fd_close(&c[1]);
	fd_close(&host);
	j->out = p[0];
	j->chunks = c[0];
	pidfd = syscall(SYS_pidfd_open, j->pid, 0);
	if (pidfd < 0 || fcntl(j->out, F_SETFL, O_NONBLOCK) < 0 ||
	    (j->chunks >= 0 && fcntl(j->chunks, F_SETFL, O_NONBLOCK) < 0)) {
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
			relay_close(&s->relay, j->relay_slot);
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
static void read_chunks(struct server *s, struct job *j);

/* The child of j ended: answer the call, in its batch if it came in one. */
static void job_finish(struct server *s, struct job *j)
{
	read_chunks(s, j);   /* its output's notifications before its answer */
	relay_close(&s->relay, j->relay_slot);
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
	send_result(s, j->id, mcp_tools_error(structured(s), "dolsot: the call's process ended without a "
	                                   "result (%s %d)",
	                                   WIFSIGNALED(status) ? "signal" : "exit status",
	                                   WIFSIGNALED(status) ? WTERMSIG(status)
	                                                       : WEXITSTATUS(status)));
}

/* A progress notification for j: message, and meta (taken; NULL: none)
 * as its _meta.  Each one's progress is more than the one before. */
static void send_progress_note(struct server *s, struct job *j, double t, const char *message,
                               json_t *meta)
{
	double p = floor((t - j->started) * 1000) / 1000;
	size_t len = 0;
	json_t *params;

	if (p <= j->progress_sent)
		p = j->progress_sent + 0.001;
	j->progress_sent = p;
	params = json_pack("{s:O, s:f, s:f, s:s}", "progressToken", j->progress, "progress", p,
	                   "total", j->call.timeout, "message", message);
	if (params && meta)
		json_object_set(params, "_meta", meta);
	if (params) {
		char *line = jsonrpc_notification("notifications/progress", params, &len);

		send_line(s, line, len);
	}
	json_decref(params);
	json_decref(meta);
}

static void send_progress(struct server *s, struct job *j, double t)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "running for %.0f s of at most %g s", t - j->started,
	         j->call.timeout);
	send_progress_note(s, j, t, msg, NULL);
	j->progressed = t;
}

/* One --json-stream line of the call's output: a progress notification
 * whose message is the new output, its stream, seq and dropped bytes in
 * _meta's "dolsot/output". */
static void send_chunk(struct server *s, struct job *j, const char *line, size_t n)
{
	json_t *c = json_loadb(line, n, 0, NULL);
	const char *text = json_string_value(json_object_get(c, "text"));

	if (text && !j->cancelled)
		send_progress_note(s, j, now(), text,
		                   json_pack("{s:{s:O, s:O, s:O}}", "dolsot/output",
		                             "stream", json_object_get(c, "stream"),
		                             "seq", json_object_get(c, "seq"),
		                             "dropped", json_object_get(c, "dropped")));
	json_decref(c);
}

/* Read what the call's child wrote of its output; send each whole line. */
static void read_chunks(struct server *s, struct job *j)
{
	char *nl;
	size_t at;

	while (j->chunks >= 0) {
		ssize_t r;

		if (j->ccap - j->clen < READ_CHUNK) {
			char *grown = j->clen + READ_CHUNK > CHUNK_LINE_MAX ? NULL
			              : realloc(j->cbuf, j->clen + READ_CHUNK);

			if (!grown) {
				j->clen = 0;   /* a line past any chunk's size: not ours */
				continue;
			}
			j->cbuf = grown;
			j->ccap = j->clen + READ_CHUNK;
		}
		r = read(j->chunks, j->cbuf + j->clen, j->ccap - j->clen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == 0)
			fd_close(&j->chunks);
		j->clen += (size_t)(r > 0 ? r : 0);
	}
	for (at = 0; at < j->clen && (nl = memchr(j->cbuf + at, '\n', j->clen - at));
	     at = (size_t)(nl - j->cbuf) + 1)
		send_chunk(s, j, j->cbuf + at, (size_t)(nl - j->cbuf) - at);
	if (at) {
		memmove(j->cbuf, j->cbuf + at, j->clen - at);
		j->clen -= at;
	}
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

/* ---- tools/list ---- */

/* The text make writes (the describe text, the toolboxes' check) from a
 * child, so the engine's signal handling and state never touch this
 * process. */
static char *text_in_child(struct server *s, char *(*make)(const struct mcp_setup *m))
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
		if (child_setup(s, &p[1], 1) < 0)
			_exit(1);
		text = make(s->m);
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

/* At start: each toolbox that does not import, said on stderr (and, from
 * tools/list on, in the python tool's description). */
static void check_toolboxes(struct server *s)
{
	const char *line;

	if (s->m->n_toolboxes == 0)
		return;
	s->toolbox_problems = text_in_child(s, mcp_tools_check_toolboxes);
	for (line = s->toolbox_problems; line && *line; line += strcspn(line, "\n") + 1)
		fprintf(stderr, "dolsot mcp: %.*s; every python call fails until it imports (the "
		        "worker looks in this directory, PYTHONPATH and VIRTUAL_ENV)\n",
		        (int)strcspn(line, "\n"), line);
}

/* The tools, made once (the python tool's description runs --describe). */
static json_t *tools_for_version(struct server *s)
{
	if (!s->tools) {
		char *described = text_in_child(s, mcp_tools_describe), *full = NULL;

		relay_describe(&s->relay, &described);
		if (s->toolbox_problems && *s->toolbox_problems &&
		    asprintf(&full, "Toolboxes that do not import here, so every call fails until "
		             "they do (fix the server's PYTHONPATH, VIRTUAL_ENV or directory):\n%s\n%s",
		             s->toolbox_problems, described ? described : "") < 0)
			full = NULL;
		s->tools = mcp_tools_make(s->m, full ? full : described);
		free(full);
		free(described);
	}
	return s->tools ? mcp_tools_list(s->tools, structured(s)) : NULL;
}

/* ---- requests ---- */

/* A tools/call, or (task) one of the tasks utility's (mcp_tasks.h). */
static void tools_call_as(struct server *s, const struct jsonrpc_msg *m, int task)
{
	json_t *name = json_object_get(m->params, "name");
	json_t *args = json_object_get(m->params, "arguments");
	json_t *meta = json_object_get(m->params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	struct mcp_refusal no;
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
	j->pidfd = j->out = j->chunks = j->relay_slot = -1;
	j->id = json_incref(m->id);
	j->progress = token ? json_incref(token) : NULL;
	if (mcp_tools_read(s->m, json_string_value(name), args, &j->call, &no) < 0 ||
	    (task && mcp_tools_task(&j->call, task, &no) < 0)) {
		send_error(s, m->id, no.code, "%s", no.msg);
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

static void tools_call(struct server *s, const struct jsonrpc_msg *m)
{
	bool task = json_is_object(json_object_get(m->params, "task")) &&
	            strcmp(s->version, MCP_TASKS_SINCE) == 0;

	tools_call_as(s, m, task ? MCP_TASK_CREATE : MCP_TASK_NONE);
}

/* tasks/result is the wait tool on the task's handle, without a limit;
 * tasks/get, tasks/cancel and tasks/list are answered at once. */
static void tasks_request(struct server *s, const struct jsonrpc_msg *m)
{
	json_t *id = json_object_get(m->params, "taskId"), *r;
	struct jsonrpc_msg as = *m;
	char err[1024];
	int code;

	if (strcmp(m->method, "tasks/result") != 0) {
		r = mcp_tasks_answer(s->m->settings, m->method, m->params, &code, err, sizeof(err));
		if (r)
			send_result(s, m->id, r);
		else
			send_error(s, m->id, code, "%s", err);
		return;
	}
	as.params = json_pack("{s:s, s:{s:O}}", "name", "wait", "arguments", "handle",
	                      id ? id : json_null());
	if (!json_is_string(id) || !as.params)
		send_error(s, m->id, JSONRPC_INVALID_PARAMS, "tasks/result needs \"taskId\", a string");
	else
		tools_call_as(s, &as, MCP_TASK_RESULT);
	json_decref(as.params);
}

static void initialize(struct server *s, const struct jsonrpc_msg *m)
{
	json_t *want = json_object_get(m->params, "protocolVersion");
	const char *v = versions[0];
	char why[512];
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
	if (relay_client(&s->relay, json_object_get(m->params, "capabilities"), why,
	                 sizeof(why)) < 0)
		fprintf(stderr, "dolsot mcp: %s\n", why);
	r = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
	              "capabilities", "tools", "listChanged", 0,
	              "serverInfo", "name", "dolsot", "title", "dolsot Python REPL",
	              "version", s->m->version,
	              "instructions", "Use the python tool to run Python code in a persistent "
	              "session: keep passing the same session id to build on earlier "
	              "cells. list_sessions and reset_session manage sessions; history, undo "
	              "and checkout take a session back to an earlier state at no cost; "
	              "export_notebook gives its history as a notebook.");
	if (r && !structured(s))
		json_object_del(json_object_get(r, "serverInfo"), "title");
	if (r && strcmp(v, MCP_TASKS_SINCE) == 0)
		json_object_set_new(json_object_get(r, "capabilities"), "tasks", mcp_tasks_caps());
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
	} else if (strncmp(m->method, "tasks/", 6) == 0) {
		tasks_request(s, m);
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
	else if (m->kind == JSONRPC_RESPONSE)
		relay_on_response(&s->relay, m);   /* else it answers nothing: ignored */
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
		if (pf[i + 2].revents & (POLLIN | POLLHUP | POLLERR))
			read_chunks(s, j);
		if (pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
			*pp = j->next;
			s->n_running--;
			job_finish(s, j);
			job_free(j);
		} else {
			pp = &j->next;
		}
		i += 3;
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
	/* stdin, stdout, the signals, three per call running, the relay's */
	struct pollfd pf[3 + 3 * MCP_MAX_RUNNING + RELAY_MAX_FDS];

	while (!s->stop && !s->gone && (!s->eof || s->running || s->waiting)) {
		nfds_t n = 0, relayed;
		double t;
		int rc;

		pf[n++] = (struct pollfd){ .fd = s->eof ? -1 : 0, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = 1, .events = 0 };
		pf[n++] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		for (struct job *j = s->running; j; j = j->next) {
			pf[n++] = (struct pollfd){ .fd = j->out, .events = POLLIN };
			pf[n++] = (struct pollfd){ .fd = j->pidfd, .events = POLLIN };
			pf[n++] = (struct pollfd){ .fd = j->chunks, .events = POLLIN };
		}
		relayed = n;
		n += relay_pollfds(&s->relay, pf + n);
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
		relay_handle(&s->relay, pf + relayed, n - relayed);
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
	check_toolboxes(&s);
	relay_init(&s.relay, m->tools, send_to_client, &s);
	rc = relay_start(&s.relay, m->proxies, m->n_proxies, err, errlen);
	if (rc == 0)
		rc = serve(&s, err, errlen);
	stop_all(&s);
	relay_release(&s.relay);
	jsonrpc_reader_release(&s.rd);
	json_decref(s.tools);
	free(s.toolbox_problems);
	fd_close(&s.sigfd);
	sigprocmask(SIG_SETMASK, &s.oldmask, NULL);
	return rc;
}
