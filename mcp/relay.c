/*
 * relay.c - dolsot mcp's cells' host: each call child's tools socket
 * served, its calls forwarded to a proxied server or sent to the client
 * as sampling, and the answers routed back by the ids the relay chose.
 */
#include "relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "sampling.h"

/* An answer the call child does not take within this long is dropped
 * (seconds): the child waits for it, so only a child that is ending does. */
#define RELAY_ANSWER_SECONDS 2.0
/* The ids the relay gives its requests start here, past the handshake's. */
#define RELAY_FIRST_ID 1000
#define READ_SIZE 65536

struct relay_wait {
	long long id;            /* ours, on the request forwarded */
	int slot;
	json_t *child_id;        /* the call child's */
	int server;              /* the proxied server's index; -1: the client */
};

void relay_init(struct relay *r, struct host_tools *ht,
                void (*send_client)(void *ctx, char *line, size_t len), void *ctx)
{
	memset(r, 0, sizeof(*r));
	proxy_init(&r->proxy);
	r->ht = ht;
	r->send_client = send_client;
	r->ctx = ctx;
	r->next_id = RELAY_FIRST_ID;
	for (size_t i = 0; i < RELAY_CHANS; i++)
		r->chans[i].fd = -1;
}

void relay_release(struct relay *r)
{
	for (int i = 0; i < RELAY_CHANS; i++)
		relay_close(r, i);
	free(r->waits);
	r->waits = NULL;
	r->n_waits = 0;
	proxy_release(&r->proxy);
}

int relay_start(struct relay *r, const char *const *commands, size_t n, char *err,
                size_t errlen)
{
	if (n > 0 && !r->ht) {
		snprintf(err, errlen, "--proxy: no host tools to declare its tools in");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (proxy_start(&r->proxy, commands[i], PROXY_START_SECONDS, r->ht, err, errlen) < 0)
			return -1;
	return 0;
}

int relay_client(struct relay *r, const json_t *capabilities, char *err, size_t errlen)
{
	json_t *decl;
	int rc;

	if (!sampling_offered(capabilities) || !r->ht)
		return 0;
	if (host_tools_has(r->ht, SAMPLING_TOOL)) {
		snprintf(err, errlen, "the client offers sampling, but a tool is named "
		         SAMPLING_TOOL " already: cells get no " SAMPLING_TOOL "()");
		return -1;
	}
	decl = sampling_declaration();
	rc = decl ? host_tools_add_hosted(r->ht, decl, err, errlen) : -1;
	json_decref(decl);
	if (rc == 0)
		r->sampling = true;
	return rc;
}

void relay_describe(const struct relay *r, char **text)
{
	char *more = NULL;

	/* Only beside proxied tools: a plain server's description keeps to
	 * MCP_DESCRIBE_MAX's bound. */
	if (r->sampling || r->proxy.n_srv == 0 || !*text)
		return;
	if (asprintf(&more, "%s" SAMPLING_TOOL "(): not defined (the MCP client did not declare "
	             "the sampling capability)\n", *text) < 0)
		return;
	free(*text);
	*text = more;
}

bool relay_active(const struct relay *r)
{
	return r->proxy.n_srv > 0 || r->sampling;
}

int relay_open(struct relay *r, int *child)
{
	int sv[2];

	for (int i = 0; i < RELAY_CHANS; i++) {
		if (r->chans[i].fd >= 0)
			continue;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
			return -1;
		r->chans[i].fd = sv[0];
		r->chans[i].ended = false;
		jsonrpc_reader_init(&r->chans[i].rd, TOOLCHAN_MSG_MAX);
		*child = sv[1];
		return i;
	}
	errno = EMFILE;
	return -1;
}

static char *request_line(long long id, const char *method, json_t *params, size_t *len)
{
	json_t *o = json_pack("{s:s,s:I,s:s,s:O}", "jsonrpc", "2.0", "id", id, "method",
	                      method, "params", params);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL, *line = NULL;

	json_decref(o);
	if (text && asprintf(&line, "%s\n", text) < 0)
		line = NULL;
	free(text);
	if (line)
		*len = strlen(line);
	return line;
}

/* Tell whoever serves w that its answer is no longer wanted. */
static void cancel_upstream(struct relay *r, const struct relay_wait *w)
{
	json_t *p = json_pack("{s:I,s:s}", "requestId", w->id, "reason",
	                      "the cell's call ended or timed out");
	size_t len = 0;
	char *note = p ? jsonrpc_notification("notifications/cancelled", p, &len) : NULL;
	char err[256];

	json_decref(p);
	if (!note)
		return;
	if (w->server < 0) {
		r->send_client(r->ctx, note, len);
		return;
	}
	(void)proxy_send(&r->proxy, (size_t)w->server, note, len, err, sizeof(err));
	free(note);
}

static void drop_wait(struct relay *r, size_t k)
{
	json_decref(r->waits[k].child_id);
	r->waits[k] = r->waits[--r->n_waits];
}

void relay_close(struct relay *r, int slot)
{
	if (slot < 0 || r->chans[slot].fd < 0)
		return;
	for (size_t k = r->n_waits; k-- > 0;)
		if (r->waits[k].slot == slot) {
			cancel_upstream(r, &r->waits[k]);
			drop_wait(r, k);
		}
	fd_close(&r->chans[slot].fd);
	jsonrpc_reader_release(&r->chans[slot].rd);
}

/* Answer the call child: value (taken) when not NULL, else msg as the
 * tool's error. */
static void answer(struct relay *r, int slot, const json_t *child_id, json_t *value,
                   const char *msg)
{
	struct timespec until;
	size_t len = 0;
	char *line = value ? jsonrpc_result(child_id, value, &len)
	                   : jsonrpc_error(child_id, TOOLCHAN_TOOL_ERROR, msg, &len);

	json_decref(value);
	deadline_in(&until, RELAY_ANSWER_SECONDS);
	if (line && r->chans[slot].fd >= 0 &&
	    host_tools_write(r->chans[slot].fd, line, len, &until) < 0)
		fprintf(stderr, "dolsot mcp: a call's child did not take its tool's answer\n");
	free(line);
}

static int add_wait(struct relay *r, int slot, const json_t *child_id, int server)
{
	struct relay_wait *grown = realloc(r->waits, (r->n_waits + 1) * sizeof(*grown));

	if (!grown)
		return -1;
	r->waits = grown;
	grown[r->n_waits++] = (struct relay_wait){ r->next_id++, slot, json_incref((json_t *)child_id),
	                                           server };
	return 0;
}

/* llm_query: a sampling/createMessage request to the client. */
static void ask_client(struct relay *r, int slot, const json_t *child_id, const json_t *args)
{
	char msg[256], *line;
	size_t len = 0;
	json_t *params = sampling_params(args, msg, sizeof(msg));

	if (!params) {
		answer(r, slot, child_id, NULL, msg);
		return;
	}
	line = add_wait(r, slot, child_id, -1) == 0
	       ? request_line(r->next_id - 1, "sampling/createMessage", params, &len) : NULL;
	json_decref(params);
	if (!line) {
		answer(r, slot, child_id, NULL, "out of memory");
		return;
	}
	r->send_client(r->ctx, line, len);
}

/* A proxied tool: tools/call to its server. */
static void ask_server(struct relay *r, int slot, const json_t *child_id,
                       const struct proxy_tool *t, json_t *args)
{
	char msg[512], *line;
	size_t len = 0;
	json_t *params = json_pack("{s:s,s:O}", "name", t->remote, "arguments",
	                           args ? args : json_object());

	line = params && add_wait(r, slot, child_id, (int)t->server) == 0
	       ? request_line(r->next_id - 1, "tools/call", params, &len) : NULL;
	json_decref(params);
	if (!line) {
		answer(r, slot, child_id, NULL, "out of memory");
		return;
	}
	if (proxy_send(&r->proxy, t->server, line, len, msg, sizeof(msg)) < 0) {
		drop_wait(r, r->n_waits - 1);
		answer(r, slot, child_id, NULL, msg);
	}
	free(line);
}

static void on_call(struct relay *r, int slot, const struct jsonrpc_msg *m)
{
	const char *name = json_string_value(json_object_get(m->params, "name"));
	json_t *args = json_object_get(m->params, "arguments");
	const struct proxy_tool *t = name ? proxy_find(&r->proxy, name) : NULL;
	char msg[200];

	if (r->sampling && name && strcmp(name, SAMPLING_TOOL) == 0) {
		ask_client(r, slot, m->id, args);
	} else if (t) {
		ask_server(r, slot, m->id, t, args);
	} else {
		snprintf(msg, sizeof(msg), "no tool named '%.64s' is served here", name ? name : "");
		answer(r, slot, m->id, NULL, msg);
	}
}

static void on_cancelled(struct relay *r, int slot, const json_t *params)
{
	json_t *id = json_object_get(params, "requestId");

	for (size_t k = 0; k < r->n_waits; k++)
		if (r->waits[k].slot == slot && id && json_equal(r->waits[k].child_id, id)) {
			cancel_upstream(r, &r->waits[k]);
			drop_wait(r, k);
			return;
		}
}

static void on_chan_line(struct relay *r, int slot, const char *line, size_t n)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;

	if (jsonrpc_parse(line, n, &m, &f) < 0) {
		json_decref(f.id);
		return;
	}
	if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "tools/call") == 0)
		on_call(r, slot, &m);
	else if (m.kind == JSONRPC_NOTIFICATION &&
	         strcmp(m.method, "notifications/cancelled") == 0)
		on_cancelled(r, slot, m.params);
	else if (m.kind == JSONRPC_REQUEST)
		answer(r, slot, m.id, NULL, "only tools/call is served here");
	jsonrpc_msg_release(&m);
}

/* Read what the call child sent.  Its channel is the child's own code's
 * (hosttools.c), not the cell's: the cell's calls reached it checked. */
static void read_chan(struct relay *r, int slot)
{
	struct relay_chan *c = &r->chans[slot];
	char buf[READ_SIZE];

	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			c->ended = true;   /* the slot is freed by relay_close only */
			return;
		}
		while (off < (size_t)n && c->fd >= 0) {
			long took = jsonrpc_feed(&c->rd, buf + off, (size_t)n - off);
			const char *line;
			size_t len;
			enum jsonrpc_line got;

			if (took < 0)
				return;
			off += (size_t)took;
			while (c->fd >= 0 && (got = jsonrpc_next(&c->rd, &line, &len)) != JSONRPC_LINE_NONE)
				if (got == JSONRPC_LINE)
					on_chan_line(r, slot, line, len);
		}
	}
}

/* The wait for our id from server (-1: the client), removed from the
 * list into *w; false when none. */
static bool take_wait(struct relay *r, const json_t *id, int server, struct relay_wait *w)
{
	for (size_t k = 0; k < r->n_waits; k++)
		if (r->waits[k].server == server && json_is_integer(id) &&
		    json_integer_value(id) == r->waits[k].id) {
			*w = r->waits[k];
			r->waits[k] = r->waits[--r->n_waits];
			return true;
		}
	return false;
}

/* An error response's message, or NULL. */
static const char *error_of(const struct jsonrpc_msg *m)
{
	json_t *e = json_object_get(m->root, "error");

	if (!e)
		return NULL;
	return json_is_string(json_object_get(e, "message"))
	       ? json_string_value(json_object_get(e, "message")) : "the request failed";
}

/* The response m to our request of server (-1: the client's sampling),
 * routed to the call that waits for it: false when none does (a late
 * answer, after a cancel). */
static bool route(struct relay *r, const struct jsonrpc_msg *m, int server)
{
	struct relay_wait w;
	char msg[4096];
	json_t *value = NULL, *result = json_object_get(m->root, "result");

	if (!take_wait(r, m->id, server, &w))
		return false;
	if (error_of(m))
		snprintf(msg, sizeof(msg), "%s%s", server < 0 ? "llm_query: the client refused: "
		         : "", error_of(m));
	else if (server < 0)
		value = sampling_value(result, msg, sizeof(msg));
	else
		value = proxy_value(result, msg, sizeof(msg));
	answer(r, w.slot, w.child_id, value, msg);
	json_decref(w.child_id);
	return true;
}

static void on_server_response(void *ctx, size_t server, const struct jsonrpc_msg *m)
{
	(void)route(ctx, m, (int)server);
}

bool relay_on_response(struct relay *r, const struct jsonrpc_msg *m)
{
	return route(r, m, -1);
}

/* Server i ended: every call waiting on it fails saying so. */
static void server_gone(struct relay *r, size_t i)
{
	char msg[300];

	snprintf(msg, sizeof(msg), "proxied server '%s' %s", r->proxy.srv[i].name,
	         r->proxy.srv[i].why);
	for (size_t k = r->n_waits; k-- > 0;)
		if (r->waits[k].server == (int)i) {
			answer(r, r->waits[k].slot, r->waits[k].child_id, NULL, msg);
			drop_wait(r, k);
		}
}

size_t relay_pollfds(const struct relay *r, struct pollfd *pf)
{
	size_t n = 0;

	for (size_t i = 0; i < RELAY_CHANS; i++)
		if (r->chans[i].fd >= 0 && !r->chans[i].ended)
			pf[n++] = (struct pollfd){ .fd = r->chans[i].fd, .events = POLLIN };
	for (size_t i = 0; i < r->proxy.n_srv; i++)
		if (!r->proxy.srv[i].gone)
			pf[n++] = (struct pollfd){ .fd = r->proxy.srv[i].from, .events = POLLIN };
	return n;
}

void relay_handle(struct relay *r, const struct pollfd *pf, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!pf[k].revents)
			continue;
		for (int i = 0; i < RELAY_CHANS; i++)
			if (r->chans[i].fd == pf[k].fd)
				read_chan(r, i);
		for (size_t i = 0; i < r->proxy.n_srv; i++)
			if (!r->proxy.srv[i].gone && r->proxy.srv[i].from == pf[k].fd &&
			    proxy_read(&r->proxy, i, on_server_response, r) == 0)
				server_gone(r, i);
	}
}
