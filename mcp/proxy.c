/*
 * proxy.c - the MCP client of dolsot mcp's proxied servers: start, the
 * handshake, tools/list, the tools' Python names, reading their answers.
 */
#include "proxy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "proc.h"
#include "proc_child.h"

/* The revision dolsot asks its proxied servers for. */
#define PROXY_VERSION "2025-06-18"
/* A proxied server's message, at most (bytes). */
#define PROXY_MSG_MAX ((size_t)16 << 20)
/* How long a server may take to read a request, and to die when told. */
#define PROXY_SEND_SECONDS 5.0
#define PROXY_STOP_GRACE 2.0
#define READ_SIZE 65536

void proxy_init(struct proxy *p)
{
	memset(p, 0, sizeof(*p));
}

/* End s's process group (SIGTERM, then SIGKILL past the grace) and reap
 * it; its exit status into *status. */
static void end_server(struct proxy_server *s, int *status)
{
	struct timespec grace;

	fd_close(&s->to);
	fd_close(&s->from);
	*status = 0;
	if (s->pid <= 0)
		return;
	kill(-s->pid, SIGTERM);
	deadline_in(&grace, PROXY_STOP_GRACE);
	if (!proc_wait_until(s->pid, &grace, status)) {
		kill(-s->pid, SIGKILL);
		while (waitpid(s->pid, status, 0) < 0 && errno == EINTR)
			;
	}
	s->pid = 0;
}

static void stop_server(struct proxy_server *s)
{
	int status;

	end_server(s, &status);
	jsonrpc_reader_release(&s->rd);
	s->gone = true;
}

void proxy_release(struct proxy *p)
{
	for (size_t i = 0; i < p->n_srv; i++)
		stop_server(&p->srv[i]);
	for (size_t i = 0; i < p->n_tools; i++)
		free(p->tools[i].remote);
	free(p->tools);
	proxy_init(p);
}

const struct proxy_tool *proxy_find(const struct proxy *p, const char *name)
{
	for (size_t i = 0; i < p->n_tools; i++)
		if (strcmp(p->tools[i].name, name) == 0)
			return &p->tools[i];
	return NULL;
}

static int spawn(struct proxy_server *s, char *err, size_t errlen)
{
	int in[2], out[2];
	pid_t parent = getpid();

	if (pipe2(in, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(in[0]);
		close(in[1]);
		return -1;
	}
	fflush(stderr);
	s->pid = fork();
	if (s->pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		proc_child_reset_signals(&none);
		/* A group of its own: ending it ends what it started. */
		if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
		    getppid() != parent || dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", s->command, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->to = in[1];
	s->from = out[0];
	if (s->pid < 0 || fcntl(s->to, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(s->from, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot start it: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int proxy_send(struct proxy *p, size_t i, const char *line, size_t len, char *err,
               size_t errlen)
{
	struct proxy_server *s = &p->srv[i];
	struct timespec until;

	if (s->gone) {
		snprintf(err, errlen, "proxied server '%s' %s", s->name, s->why);
		return -1;
	}
	deadline_in(&until, PROXY_SEND_SECONDS);
	if (host_tools_write(s->to, line, len, &until) < 0) {
		snprintf(err, errlen, "proxied server '%s' does not read its requests%s%s", s->name,
		         errno ? ": " : "", errno ? strerror(errno) : "");
		return -1;
	}
	return 0;
}

/* Refuse a request the server sent us (we offer no client features). */
static void refuse_request(struct proxy *p, size_t i, const struct jsonrpc_msg *m)
{
	size_t len;
	char err[64], *line = jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND,
	                                    "dolsot offers its proxied servers no requests", &len);

	if (line)
		(void)proxy_send(p, i, line, len, err, sizeof(err));
	free(line);
}

/* The lines the reader holds, each handed on; 0 when it holds no more. */
static void take_lines(struct proxy *p, size_t i,
                       void (*on_response)(void *, size_t, const struct jsonrpc_msg *),
                       void *ctx)
{
	const char *line;
	size_t n;
	enum jsonrpc_line got;

	while ((got = jsonrpc_next(&p->srv[i].rd, &line, &n)) != JSONRPC_LINE_NONE) {
		struct jsonrpc_msg m;
		struct jsonrpc_fault f;

		if (got != JSONRPC_LINE || strspn(line, " \t\r") == n)
			continue;
		if (jsonrpc_parse(line, n, &m, &f) < 0) {
			json_decref(f.id);
			continue;
		}
		if (m.kind == JSONRPC_RESPONSE)
			on_response(ctx, i, &m);
		else if (m.kind == JSONRPC_REQUEST)
			refuse_request(p, i, &m);
		jsonrpc_msg_release(&m);
	}
}

static void mark_gone(struct proxy_server *s)
{
	int status;

	end_server(s, &status);
	s->gone = true;
	if (WIFSIGNALED(status))
		snprintf(s->why, sizeof(s->why), "ended (signal %d)", WTERMSIG(status));
	else
		snprintf(s->why, sizeof(s->why), "ended (exit status %d)", WEXITSTATUS(status));
	fprintf(stderr, "dolsot mcp: proxied server '%s' %s; its tools fail from now on\n",
	        s->name, s->why);
}

int proxy_read(struct proxy *p, size_t i,
               void (*on_response)(void *ctx, size_t server, const struct jsonrpc_msg *m),
               void *ctx)
{
	struct proxy_server *s = &p->srv[i];
	char buf[READ_SIZE];

	while (!s->gone) {
		ssize_t n = read(s->from, buf, sizeof(buf));
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n <= 0) {
			const char *line;
			size_t len;

			if (jsonrpc_rest(&s->rd, &line, &len) == JSONRPC_LINE)
				take_lines(p, i, on_response, ctx);
			mark_gone(s);
			return 0;
		}
		while (off < (size_t)n) {
			long took = jsonrpc_feed(&s->rd, buf + off, (size_t)n - off);

			if (took < 0) {
				mark_gone(s);
				return 0;
			}
			off += (size_t)took;
			take_lines(p, i, on_response, ctx);
		}
	}
	return 0;
}

/* ---- the handshake, at start ---- */

struct wait_for {
	long long id;
	json_t *result;          /* the response's result, or NULL */
	char msg[200];           /* its error's message */
	bool got;
};

static void took_response(void *ctx, size_t server, const struct jsonrpc_msg *m)
{
	struct wait_for *w = ctx;
	json_t *e = json_object_get(m->root, "error");

	(void)server;
	if (!json_is_integer(m->id) || json_integer_value(m->id) != w->id || w->got)
		return;
	w->got = true;
	w->result = json_incref(json_object_get(m->root, "result"));
	snprintf(w->msg, sizeof(w->msg), "%s",
	         json_is_string(json_object_get(e, "message"))
	         ? json_string_value(json_object_get(e, "message")) : "an error");
}

/* Request method of server i and wait for its result by until: a new
 * reference, or NULL with err. */
static json_t *ask(struct proxy *p, size_t i, long long id, const char *method,
                   json_t *params, const struct timespec *until, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:s,s:I,s:s,s:O}", "jsonrpc", "2.0", "id", id, "method",
	                        method, "params", params);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	struct wait_for w = { .id = id };
	char why[512] = "out of memory";
	int sent = -1;

	json_decref(req);
	if (text) {
		char *line = NULL;

		if (asprintf(&line, "%s\n", text) >= 0) {
			sent = proxy_send(p, i, line, strlen(line), why, sizeof(why));
			free(line);
		}
	}
	free(text);
	if (sent < 0) {
		snprintf(err, errlen, "%s: %s", method, why);
		return NULL;
	}
	while (!w.got && !p->srv[i].gone) {
		struct pollfd pf = { p->srv[i].from, POLLIN, 0 };
		int got = poll(&pf, 1, deadline_poll_ms(deadline_left(until)));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			snprintf(err, errlen, "%s: no answer in time", method);
			return NULL;
		}
		proxy_read(p, i, took_response, &w);
	}
	if (!w.got)
		snprintf(err, errlen, "%s: it %s", method, p->srv[i].why);
	else if (!w.result)
		snprintf(err, errlen, "%s: %s", method, w.msg);
	return w.result;
}

/* text as a Python name into out: see proxy.h. */
static void python_name(const char *text, char *out, size_t size)
{
	static const char *const keywords[] = {
		"False", "None", "True", "and", "as", "assert", "async", "await", "break",
		"class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
		"from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
		"pass", "raise", "return", "try", "while", "with", "yield",
	};
	size_t n = 0;

	if (!*text || isdigit((unsigned char)*text) || *text == '_')
		n = (size_t)snprintf(out, size, "t_");
	for (; *text && n + 1 < size; text++)
		out[n++] = isalnum((unsigned char)*text) ? *text : '_';
	out[n] = '\0';
	for (size_t i = 0; i < sizeof(keywords) / sizeof(*keywords); i++)
		if (strcmp(out, keywords[i]) == 0 && n + 1 < size) {
			out[n++] = '_';
			out[n] = '\0';
		}
}

/* One entry of tools/list declared under its cell name. */
static int declare(struct proxy *p, size_t i, const json_t *entry, struct host_tools *ht,
                   char *err, size_t errlen)
{
	const char *remote = json_string_value(json_object_get(entry, "name"));
	char name[TOOLCHAN_NAME_MAX + 1], full[2 * TOOLCHAN_NAME_MAX + 2];
	struct proxy_tool *grown;
	json_t *decl;
	int rc;

	if (!remote) {
		snprintf(err, errlen, "tools/list: an entry has no name");
		return -1;
	}
	python_name(remote, name, sizeof(name));
	if (host_tools_has(ht, name)) {
		snprintf(full, sizeof(full), "%s_%s", p->srv[i].name, name);
		if (strlen(full) > TOOLCHAN_NAME_MAX || host_tools_has(ht, full)) {
			snprintf(err, errlen, "tool '%s' is named '%s' and '%.*s' in cells, both taken",
			         remote, name, TOOLCHAN_NAME_MAX, full);
			return -1;
		}
		memcpy(name, full, strlen(full) + 1);   /* checked: TOOLCHAN_NAME_MAX at most */
	}
	grown = realloc(p->tools, (p->n_tools + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->tools = grown;
	decl = json_deep_copy(entry);
	if (!decl || json_object_set_new(decl, "name", json_string(name)) < 0) {
		json_decref(decl);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = host_tools_add_hosted(ht, decl, err, errlen);
	json_decref(decl);
	if (rc < 0)
		return -1;
	grown = &p->tools[p->n_tools];
	snprintf(grown->name, sizeof(grown->name), "%s", name);
	grown->remote = strdup(remote);
	grown->server = i;
	if (!grown->remote) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->n_tools++;
	return 0;
}

/* initialize, notifications/initialized, then every page of tools/list. */
static int handshake(struct proxy *p, size_t i, const struct timespec *until,
                     struct host_tools *ht, char *err, size_t errlen)
{
	json_t *params = json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", PROXY_VERSION,
	                           "capabilities", "clientInfo", "name", "dolsot", "version",
	                           "1");
	json_t *r = params ? ask(p, i, 1, "initialize", params, until, err, errlen) : NULL;
	json_t *cursor = NULL;
	const char *sname;
	char *note;
	size_t len;
	long long id = 2;

	json_decref(params);
	if (!r)
		return -1;
	sname = json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name"));
	python_name(sname ? sname : "server", p->srv[i].name, sizeof(p->srv[i].name));
	json_decref(r);
	note = jsonrpc_notification("notifications/initialized", NULL, &len);
	if (!note || proxy_send(p, i, note, len, err, errlen) < 0) {
		free(note);
		return -1;
	}
	free(note);
	do {
		json_t *list;
		size_t k;
		int rc = 0;

		params = cursor ? json_pack("{s:O}", "cursor", cursor) : json_object();
		json_decref(cursor);
		cursor = NULL;
		r = params ? ask(p, i, id++, "tools/list", params, until, err, errlen) : NULL;
		json_decref(params);
		list = json_object_get(r, "tools");
		if (r && !json_is_array(list)) {
			snprintf(err, errlen, "tools/list answered no \"tools\" list");
			rc = -1;
		}
		for (k = 0; rc == 0 && k < json_array_size(list); k++)
			rc = declare(p, i, json_array_get(list, k), ht, err, errlen);
		if (json_is_string(json_object_get(r, "nextCursor")))
			cursor = json_incref(json_object_get(r, "nextCursor"));
		json_decref(r);
		if (!r || rc < 0) {
			json_decref(cursor);
			return -1;
		}
	} while (cursor);
	return 0;
}

int proxy_start(struct proxy *p, const char *command, double seconds, struct host_tools *ht,
                char *err, size_t errlen)
{
	struct proxy_server *s;
	struct timespec until;
	char why[1024];

	if (p->n_srv == PROXY_MAX) {
		snprintf(err, errlen, "--proxy: at most %d servers", PROXY_MAX);
		return -1;
	}
	s = &p->srv[p->n_srv];
	memset(s, 0, sizeof(*s));
	s->command = command;
	s->to = s->from = -1;
	snprintf(s->why, sizeof(s->why), "ended");
	jsonrpc_reader_init(&s->rd, PROXY_MSG_MAX);
	p->n_srv++;
	deadline_in(&until, seconds);
	if (spawn(s, why, sizeof(why)) < 0 || handshake(p, p->n_srv - 1, &until, ht, why,
	                                                sizeof(why)) < 0) {
		snprintf(err, errlen, "--proxy '%s': %s", command, why);
		stop_server(s);
		return -1;
	}
	return 0;
}

/* ---- results ---- */

json_t *proxy_texts(const json_t *content)
{
	size_t n = json_array_size(content), used = 0;
	char *joined = calloc(1, 1);
	json_t *out = NULL;

	if (!joined || !json_is_array(content))
		goto out;
	for (size_t i = 0; i < n; i++) {
		json_t *block = json_array_get(content, i);
		const char *type = json_string_value(json_object_get(block, "type"));
		json_t *text = json_object_get(block, "text");
		size_t len = json_string_length(text);
		char *more;

		if (!type || strcmp(type, "text") != 0 || !json_is_string(text))
			goto out;
		more = realloc(joined, used + len + 2);
		if (!more)
			goto out;
		joined = more;
		if (i)
			joined[used++] = '\n';
		memcpy(joined + used, json_string_value(text), len);
		used += len;
	}
	out = json_stringn(joined, used);
out:
	free(joined);
	return out;
}

json_t *proxy_value(const json_t *result, char *msg, size_t msglen)
{
	json_t *content = json_object_get(result, "content");
	json_t *structured = json_object_get(result, "structuredContent");
	json_t *texts = proxy_texts(content);

	if (json_is_true(json_object_get(result, "isError"))) {
		snprintf(msg, msglen, "%s", json_string_length(texts) ? json_string_value(texts)
		         : "the proxied tool failed");
		json_decref(texts);
		return NULL;
	}
	if (structured) {
		json_decref(texts);
		return json_incref(structured);
	}
	if (texts)
		return texts;
	return content ? json_incref(content) : json_null();
}
