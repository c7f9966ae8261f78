/*
 * http.c - MCP's Streamable HTTP transport (`dolsot mcp --http`).
 *
 * One loop, on this thread: libmicrohttpd in its external epoll mode (its
 * epoll fd is one of ours to poll), the signals, and one socket per MCP
 * session to that session's server: a child running mcp_serve on the
 * socket as its stdin and stdout, so every message goes through the same
 * core as on stdio.  A POST's messages are written to the session's
 * server as one line; what the server writes back is routed by its id (a
 * response goes to the request that is waiting for it), by its progress
 * token (a progress notification goes to its request's stream) or else to
 * the session's GET stream.  A POST with requests is answered as an SSE
 * stream (or, when the client does not accept one, as one JSON body once
 * every response is in); a connection waiting for more is suspended and
 * resumed when some comes.  A client that goes away while its call runs
 * does not cancel it (the specification says so): the call ends, commits,
 * and its answer is dropped.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "deadline.h"
#include "fdio.h"
#include "http_route.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "mhd.h"
#include "proc_child.h"
#include "sha256.h"
#include "sse_log.h"
#include "store_name.h"

#define ENDPOINT "/mcp"
#define READ_CHUNK ((size_t)65536)
/* Ids of sessions a DELETE ended that this server refuses to take again. */
#define ENDED_KEPT 1024

struct session;

/* What an HTTP request waits for: the responses to its requests' ids, and
 * the notifications of its progress tokens.  An SSE stream logs its events
 * and outlives its connection (detached, conn NULL) for a client that
 * resumes it with a GET naming its last event (Last-Event-ID); the
 * session keeps the MCP_HTTP_STREAMS_KEPT latest of those with nothing
 * more to come. */
struct stream {
	struct stream *next;
	struct session *sess;       /* NULL once the session is gone */
	struct MHD_Connection *conn;    /* NULL: detached */
	struct link *link;          /* an SSE stream's response on conn */
	json_t *ids, *tokens;       /* arrays */
	char *out;                  /* SSE bytes not yet sent, or the JSON body */
	size_t len, cap, off;
	struct sse_log log;         /* an SSE stream's events */
	unsigned no;                /* its number in the session, from 1 */
	bool sse, is_get, suspended, ended;
};

/* An SSE response's hold on its stream: st NULL once a resumption took
 * the stream to another connection (this one then ends). */
struct link {
	struct stream *st;
};

struct session {
	struct session *next;
	char id[HTTP_SESSION_ID_LEN + 1];
	pid_t pid;
	int fd;                     /* the session's server's stdin and stdout */
	struct jsonrpc_reader rd;
	char *wbuf;                 /* lines to the server, not yet written */
	size_t wlen, wcap;
	struct stream *streams, *get;
	char tag[HTTP_EVENT_TAG_LEN + 1];   /* its event ids' */
	unsigned n_streams;
	const struct auth_tenant *tenant;   /* NULL: no --auth-tokens */
	double used;                /* when a request last named it */
	json_t *calls;              /* ids of its tools/call requests not yet answered */
};

/* One HTTP request: its body as it comes. */
struct req {
	char *body;
	size_t len, cap;
	bool too_big;
	struct stream *st;
	const struct auth_tenant *tenant;
};

/* A connection until its request is in: dropped when that takes longer
 * than the header timeout (a client sending a byte a second). */
struct pending {
	struct pending *next, **prev;
	struct MHD_Connection *conn;
	double since;
};

struct front {
	const struct mcp_setup *m;
	struct MHD_Daemon *d;
	struct pending *pending;
	unsigned timeout;           /* seconds: --http-timeout */
	struct auth auth;           /* no tenants: no --auth-tokens */
	unsigned char key[HTTP_KEY_LEN];    /* the session ids' */
	char ended[ENDED_KEPT][HTTP_SESSION_ID_LEN + 1];    /* DELETEd here, newest */
	unsigned n_ended;                   /* and where the next goes */
	unsigned *running;          /* each tenant's tool calls in flight */
	struct session *sessions;
	unsigned n_sessions;
	int sigfd;
	sigset_t oldmask;
	char url[NI_MAXHOST + NI_MAXSERV + 128];
	bool stop;
};

struct front;
static void call_done(struct front *f, struct session *se, const json_t *id);

/* ---- bytes out ---- */

static int grow(char **buf, size_t *cap, size_t need)
{
	char *p;
	size_t c;

	if (need <= *cap)
		return 0;
	c = need < 4096 ? 4096 : need * 2;
	p = realloc(*buf, c);
	if (!p)
		return -1;
	*buf = p;
	*cap = c;
	return 0;
}

static void stream_wake(struct stream *st)
{
	if (st->suspended && st->conn) {
		st->suspended = false;
		mhd.resume_connection(st->conn);
	}
}

/* Event seq of st as SSE bytes to send: its id, then the message. */
static void sse_append(struct stream *st, uint64_t seq, const char *line, size_t n)
{
	static const char head[] = "event: message\ndata: ", tail[] = "\n\n";
	char id[HTTP_EVENT_ID_MAX + 8];
	int idn = seq ? snprintf(id, sizeof(id), "id: %s-%u-%llu\n", st->sess->tag, st->no,
	                         (unsigned long long)seq) : 0;

	if (idn < 0 || (size_t)idn >= sizeof(id) ||
	    grow(&st->out, &st->cap, st->len + (size_t)idn + n + sizeof(head) + sizeof(tail)) < 0) {
		fprintf(stderr, "dolsot mcp: out of memory: a message to a client is lost\n");
		return;
	}
	memcpy(st->out + st->len, id, (size_t)idn);
	st->len += (size_t)idn;
	memcpy(st->out + st->len, head, sizeof(head) - 1);
	st->len += sizeof(head) - 1;
	memcpy(st->out + st->len, line, n);
	st->len += n;
	memcpy(st->out + st->len, tail, sizeof(tail) - 1);
	st->len += sizeof(tail) - 1;
}

/* One message for st: an SSE event (logged; sent when st has its
 * connection), or (a JSON answer) the body itself. */
static void stream_put(struct stream *st, const char *line, size_t n)
{
	uint64_t seq;

	if (!st->sse) {
		if (grow(&st->out, &st->cap, n + 1) == 0) {
			memcpy(st->out, line, n);
			st->len = n;
		}
		return;
	}
	seq = sse_log_add(&st->log, line, n);
	if (!seq)
		fprintf(stderr, "dolsot mcp: out of memory: an event is not kept for a resumption\n");
	if (!st->conn)
		return;
	sse_append(st, seq, line, n);
	stream_wake(st);
}

static void stream_end(struct stream *st)
{
	st->ended = true;
	stream_wake(st);
}

static bool take_id(json_t *ids, const json_t *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(ids, i, v) {
		if (json_equal(v, (json_t *)id)) {
			json_array_remove(ids, i);
			return true;
		}
	}
	return false;
}

static bool holds(const json_t *arr, const json_t *v)
{
	size_t i;
	json_t *x;

	if (!v)
		return false;
	json_array_foreach(arr, i, x) {
		if (json_equal(x, (json_t *)v))
			return true;
	}
	return false;
}

/* The stream a message from the session's server goes to, or NULL. */
static struct stream *route(struct session *se, json_t *msg)
{
	json_t *first = json_is_array(msg) ? json_array_get(msg, 0) : msg;
	json_t *id = json_object_get(first, "id");
	const char *method = json_string_value(json_object_get(first, "method"));

	if (!method && id && !json_is_null(id)) {
		for (struct stream *st = se->streams; st; st = st->next)
			if (holds(st->ids, id)) {
				size_t i;
				json_t *v;

				if (json_is_array(msg)) {
					json_array_foreach(msg, i, v) {
						take_id(st->ids, json_object_get(v, "id"));
					}
				} else {
					take_id(st->ids, id);
				}
				return st;
			}
		return NULL;    /* an answer nobody waits for any more */
	}
	if (method && strcmp(method, "notifications/progress") == 0) {
		json_t *token = json_object_get(json_object_get(first, "params"), "progressToken");

		for (struct stream *st = se->streams; st; st = st->next)
			if (holds(st->tokens, token))
				return st->sse ? st : se->get;
	}
	return se->get;
}

static void from_server(struct front *f, struct session *se, const char *line, size_t n)
{
	json_t *msg = json_loadb(line, n, 0, NULL);
	struct stream *st = msg ? route(se, msg) : NULL;
	size_t i;
	json_t *v;

	if (json_is_array(msg)) {
		json_array_foreach(msg, i, v) {
			call_done(f, se, json_object_get(v, "id"));
		}
	} else if (msg && !json_object_get(msg, "method")) {
		call_done(f, se, json_object_get(msg, "id"));
	}
	json_decref(msg);
	if (!st)
		return;
	if (st->sse || !json_array_size(st->ids))
		stream_put(st, line, n);
	if (!st->is_get && json_array_size(st->ids) == 0)
		stream_end(st);
}

/* ---- tenants ---- */

static unsigned *tenant_calls(struct front *f, const struct auth_tenant *t)
{
	return t ? &f->running[t - f->auth.tenants] : NULL;
}

/* A tools/call request's answer came, or it was cancelled: one less. */
static void call_done(struct front *f, struct session *se, const json_t *id)
{
	unsigned *n = tenant_calls(f, se->tenant);

	if (take_id(se->calls, id) && n && *n)
		(*n)--;
}

/* ---- the sessions' servers ---- */

static void stream_free(struct stream *st);

static void session_free(struct front *f, struct session *se)
{
	struct session **pp;
	struct stream *st = se->streams;

	for (pp = &f->sessions; *pp && *pp != se; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = se->next;
	f->n_sessions--;
	while (st) {
		struct stream *later = st->next;

		st->sess = NULL;
		if (st->conn)
			stream_end(st);     /* its response ends, and frees it */
		else
			stream_free(st);
		st = later;
	}
	if (se->tenant)
		*tenant_calls(f, se->tenant) -= (unsigned)json_array_size(se->calls);
	json_decref(se->calls);
	if (se->pid > 0) {
		kill(se->pid, SIGTERM);
		while (waitpid(se->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	fd_close(&se->fd);
	jsonrpc_reader_release(&se->rd);
	free(se->wbuf);
	free(se);
}

/* A tenant's sessions' namespace: NS.TENANT (the server's namespace), or
 * TENANT when the server's is the default one. */
static int tenant_ns(const char *base, const char *tenant, char *out, size_t size)
{
	int n = store_ns_is_default(base) ? snprintf(out, size, "%s", tenant)
	        : snprintf(out, size, "%s.%s", base, tenant);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static void __attribute__((noreturn)) session_child(struct front *f, struct session *se,
                                                    int fd)
{
	char err[256], ns[STORE_NS_MAX + 1];
	pid_t parent = getppid();
	struct settings tenant_settings = *f->m->settings;
	struct mcp_setup tenant_setup = *f->m;

	proc_child_reset_signals(&f->oldmask);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(1);
	if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0)
		_exit(1);
	proc_child_close_fds(NULL, 0);
	if (se->tenant) {
		tenant_ns(f->m->settings->ns, se->tenant->name, ns, sizeof(ns));
		tenant_settings.ns = ns;
		tenant_setup.settings = &tenant_settings;
	}
	if (mcp_serve(&tenant_setup, err, sizeof(err)) < 0) {
		fprintf(stderr, "dolsot mcp: a session's server: %s\n", err);
		_exit(1);
	}
	_exit(0);
}

static const char *tenant_name(const struct auth_tenant *t)
{
	return t ? t->name : NULL;
}

/* A session's server; id NULL: a new id. */
static struct session *session_new(struct front *f, const struct auth_tenant *tenant,
                                   const char *id, char *err, size_t errlen)
{
	struct session *se;
	int sv[2];

	if (f->n_sessions >= MCP_HTTP_MAX_SESSIONS) {
		snprintf(err, errlen, "too many sessions (at most %d): end one (DELETE) first",
		         MCP_HTTP_MAX_SESSIONS);
		return NULL;
	}
	se = calloc(1, sizeof(*se));
	if (se)
		se->tenant = tenant;
	if (se && id)
		snprintf(se->id, sizeof(se->id), "%s", id);
	if (!se || !(se->calls = json_array()) || http_event_tag(se->tag) < 0 ||
	    (!id && http_session_id(se->id, sizeof(se->id), f->key, tenant_name(tenant)) < 0) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "cannot make a session: %s", strerror(errno));
		if (se)
			json_decref(se->calls);
		free(se);
		return NULL;
	}
	fflush(stderr);
	se->pid = fork();
	if (se->pid == 0) {
		close(sv[0]);
		session_child(f, se, sv[1]);
	}
	close(sv[1]);
	se->fd = sv[0];
	if (se->pid < 0 || fcntl(se->fd, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot start a session's server: %s", strerror(errno));
		fd_close(&se->fd);
		if (se->pid > 0)
			kill(se->pid, SIGKILL), waitpid(se->pid, NULL, 0);
		json_decref(se->calls);
		free(se);
		return NULL;
	}
	jsonrpc_reader_init(&se->rd, MCP_MAX_MESSAGE);
	se->used = deadline_now();
	se->next = f->sessions;
	f->sessions = se;
	f->n_sessions++;
	return se;
}

/* The session id names, if it is the tenant's: another tenant's is as
 * unknown as one never made. */
static struct session *session_find(struct front *f, const char *id,
                                    const struct auth_tenant *tenant)
{
	for (struct session *se = f->sessions; se; se = se->next)
		if (se->tenant == tenant && strcmp(se->id, id) == 0) {
			se->used = deadline_now();
			return se;
		}
	return NULL;
}

static int session_send(struct session *se, const char *text, size_t n);

/*
 * The session sid names for the tenant: this server's, or one another
 * server with the same key made (several behind one balancer, on one
 * store): its server is started here, initialized with the revision the
 * request's header names (2025-03-26 without one, as the specification
 * says), and its answer dropped.  NULL when the id is not the tenant's.
 */
static struct session *session_get(struct front *f, struct MHD_Connection *c,
                                   const char *sid, const struct auth_tenant *tenant)
{
	struct session *se = session_find(f, sid, tenant);
	const char *version = mhd.lookup_connection_value(c, MHD_HEADER_KIND,
	                                                  HTTP_VERSION_HEADER);
	char err[256], *init = NULL;

	if (se || !http_session_id_valid(sid, f->key, tenant_name(tenant)))
		return se;
	for (unsigned i = 0; i < ENDED_KEPT; i++)
		if (strcmp(f->ended[i], sid) == 0)
			return NULL;
	se = session_new(f, tenant, sid, err, sizeof(err));
	if (!se) {
		fprintf(stderr, "dolsot mcp: cannot take session %s here: %s\n", sid, err);
		return NULL;
	}
	if (asprintf(&init, "{\"jsonrpc\":\"2.0\",\"id\":\"dolsot-adopt\",\"method\":"
	             "\"initialize\",\"params\":{\"protocolVersion\":\"%s\",\"capabilities\""
	             ":{},\"clientInfo\":{\"name\":\"dolsot\",\"version\":\"0\"}}}\n"
	             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	             version ? version : "2025-03-26") < 0 ||
	    session_send(se, init, strlen(init)) < 0) {
		free(init);
		session_free(f, se);
		return NULL;
	}
	free(init);
	return se;
}

static int session_send(struct session *se, const char *text, size_t n)
{
	if (grow(&se->wbuf, &se->wcap, se->wlen + n + 1) < 0)
		return -1;
	memcpy(se->wbuf + se->wlen, text, n);
	se->wlen += n;
	se->wbuf[se->wlen++] = '\n';
	return 0;
}

static void session_flush(struct session *se)
{
	while (se->wlen) {
		ssize_t w = write(se->fd, se->wbuf, se->wlen);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		memmove(se->wbuf, se->wbuf + w, se->wlen - (size_t)w);
		se->wlen -= (size_t)w;
	}
}

/* Read what the session's server wrote; false when it ended. */
static bool session_read(struct front *f, struct session *se)
{
	char buf[READ_CHUNK];
	ssize_t n = read(se->fd, buf, sizeof(buf));
	size_t off = 0;
	const char *line;
	size_t len;
	enum jsonrpc_line got;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	while (off < (size_t)n) {
		long took = jsonrpc_feed(&se->rd, buf + off, (size_t)n - off);

		if (took < 0)
			return false;
		off += (size_t)took;
		while ((got = jsonrpc_next(&se->rd, &line, &len)) != JSONRPC_LINE_NONE)
			if (got == JSONRPC_LINE)
				from_server(f, se, line, len);
	}
	return true;
}

/* ---- HTTP ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             const char *body, const char *session)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(strlen(body), (void *)body,
	                                                          MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	if (*body)
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (session)
		mhd.add_response_header(r, HTTP_SESSION_HEADER, session);
	ok = mhd.queue_response(c, status, r);
	mhd.destroy_response(r);
	return ok;
}

/* An HTTP error with a JSON-RPC error as its body (id null). */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, int code,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, int code,
                              const char *fmt, ...)
{
	char msg[512];
	size_t len;
	char *body;
	enum MHD_Result ok;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	body = jsonrpc_error(NULL, code, msg, &len);
	if (!body)
		return MHD_NO;
	ok = reply(c, status, "application/json", body, NULL);
	free(body);
	return ok;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = ((struct link *)cls)->st;
	size_t n;

	(void)pos;
	if (!st)
		return MHD_CONTENT_READER_END_OF_STREAM;    /* resumed elsewhere */
	n = st->len - st->off;
	if (n) {
		if (n > max)
			n = max;
		memcpy(buf, st->out + st->off, n);
		st->off += n;
		if (st->off == st->len)
			st->off = st->len = 0;
		return (ssize_t)n;
	}
	if (st->ended || !st->sess)
		return MHD_CONTENT_READER_END_OF_STREAM;
	st->suspended = true;
	mhd.suspend_connection(st->conn);
	return 0;
}

static void stream_free(struct stream *st)
{
	if (st->sess) {
		struct stream **pp;

		for (pp = &st->sess->streams; *pp && *pp != st; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = st->next;
		if (st->sess->get == st)
			st->sess->get = NULL;
	}
	json_decref(st->ids);
	json_decref(st->tokens);
	sse_log_release(&st->log);
	free(st->out);
	free(st);
}

/* Keep the MCP_HTTP_STREAMS_KEPT latest detached streams that wait for
 * nothing more (not the session's GET stream): older ones are freed. */
static void streams_trim(struct session *se)
{
	unsigned kept = 0;
	struct stream *st = se->streams;

	while (st) {
		struct stream *later = st->next;

		if (st->sse && !st->conn && !json_array_size(st->ids) && st != se->get &&
		    ++kept > MCP_HTTP_STREAMS_KEPT)
			stream_free(st);
		st = later;
	}
}

/* st without a connection: its events are logged, for a resumption. */
static void stream_detach(struct stream *st)
{
	st->link = NULL;
	st->conn = NULL;
	st->suspended = false;
	st->len = st->off = 0;
}

/* An SSE response is done (sent, or its connection gone). */
static void link_free(void *cls)
{
	struct link *k = cls;
	struct stream *st = k->st;

	free(k);
	if (!st)
		return;
	stream_detach(st);
	if (st->sess)
		streams_trim(st->sess);
	else
		stream_free(st);
}

static struct stream *stream_new(struct session *se, struct MHD_Connection *c, bool sse)
{
	struct stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->ids = json_array();
	st->tokens = json_array();
	if (!st->ids || !st->tokens) {
		stream_free(st);
		return NULL;
	}
	sse_log_init(&st->log);
	st->sess = se;
	st->conn = c;
	st->sse = sse;
	st->no = ++se->n_streams;
	st->next = se->streams;
	se->streams = st;
	return st;
}

/* st's SSE response on its connection c: what st->out holds, then its
 * events as they come.  When that fails st is left detached. */
static enum MHD_Result queue_sse(struct MHD_Connection *c, struct stream *st)
{
	struct link *k = malloc(sizeof(*k));
	struct MHD_Response *r = k ? mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
	                                                                sse_read, k, link_free)
	                         : NULL;
	enum MHD_Result ok;

	if (!r) {
		free(k);
		stream_detach(st);
		return MHD_NO;
	}
	k->st = st;
	st->link = k;
	st->conn = c;
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	mhd.add_response_header(r, HTTP_SESSION_HEADER, st->sess->id);
	ok = mhd.queue_response(c, MHD_HTTP_OK, r);
	mhd.destroy_response(r);
	return ok;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return mhd.lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* What a POST's messages hold: the ids of its requests, their progress
 * tokens, the ids of its tools/call requests, the requests it cancels. */
struct held {
	json_t *ids, *tokens, *calls, *cancels;
};

/* Gather v's into h; whether it holds an initialize request. */
static bool gather(json_t *v, struct held *h)
{
	const char *method = json_string_value(json_object_get(v, "method"));
	bool init = false;

	if (json_is_array(v)) {
		size_t i;
		json_t *e;

		json_array_foreach(v, i, e) {
			init |= gather(e, h);
		}
		return init;
	}
	if (method && !json_object_get(v, "id") &&
	    strcmp(method, "notifications/cancelled") == 0)
		json_array_append(h->cancels, json_object_get(json_object_get(v, "params"),
		                                              "requestId"));
	if (method && json_object_get(v, "id") && strcmp(method, "tools/call") == 0)
		json_array_append(h->calls, json_object_get(v, "id"));
	if (method && json_object_get(v, "id")) {
		json_t *token = json_object_get(json_object_get(json_object_get(v, "params"),
		                                                "_meta"), "progressToken");

		json_array_append(h->ids, json_object_get(v, "id"));
		if (token)
			json_array_append(h->tokens, token);
		init = strcmp(method, "initialize") == 0;
	}
	return init;
}

static void held_release(struct held *h)
{
	json_decref(h->ids);
	json_decref(h->tokens);
	json_decref(h->calls);
	json_decref(h->cancels);
}

/* The session a POST goes to: a new one for initialize, else its
 * header's; NULL with the refusal queued in *ok. */
static struct session *post_session(struct front *f, struct MHD_Connection *c,
                                    const struct req *rq, bool init, enum MHD_Result *ok)
{
	const char *sid = header(c, HTTP_SESSION_HEADER);
	struct session *se;
	char err[256];

	if (init && sid) {
		*ok = refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
		             "initialize starts a session: send it without " HTTP_SESSION_HEADER);
		return NULL;
	}
	if (init) {
		se = session_new(f, rq->tenant, NULL, err, sizeof(err));
		if (!se)
			*ok = refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000, "%s", err);
		return se;
	}
	se = sid ? session_get(f, c, sid, rq->tenant) : NULL;
	if (!se && !sid)
		*ok = refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
		             "no " HTTP_SESSION_HEADER " header: send initialize first, then "
		             "its session id with every request");
	else if (!se)
		*ok = refuse(c, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
		             "no such session (it ended, or was never made here): initialize "
		             "a new one");
	return se;
}

/* Count the POST's tool calls against its tenant's cap: false (and the
 * refusal queued in *ok) when they would pass it. */
static bool within_cells(struct front *f, struct MHD_Connection *c, struct session *se,
                         const struct held *h, enum MHD_Result *ok)
{
	unsigned *n = tenant_calls(f, se->tenant);
	size_t i;
	json_t *v;

	json_array_foreach(h->cancels, i, v) {
		call_done(f, se, v);
		/* A cancelled request gets no answer: its stream waits no more. */
		for (struct stream *st = se->streams; st; st = st->next)
			if (!st->is_get && take_id(st->ids, v) && json_array_size(st->ids) == 0)
				stream_end(st);
	}
	if (!n)
		return true;
	if (*n + json_array_size(h->calls) > se->tenant->max_cells) {
		*ok = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000, "too many tool calls at once "
		             "for tenant %s (at most %u): try again when some have ended",
		             se->tenant->name, se->tenant->max_cells);
		return false;
	}
	*n += (unsigned)json_array_size(h->calls);
	json_array_extend(se->calls, h->calls);
	return true;
}

/* Answer a POST whose messages went to se: 202, an SSE stream, or (the
 * client takes no stream) a JSON body once its responses are in. */
static enum MHD_Result post_answer(struct MHD_Connection *c, struct req *rq,
                                   struct session *se, const struct held *h)
{
	bool sse = http_accepts(header(c, MHD_HTTP_HEADER_ACCEPT), "text/event-stream");
	struct stream *st;

	if (json_array_size(h->ids) == 0)
		return reply(c, MHD_HTTP_ACCEPTED, "", "", se->id);
	st = stream_new(se, c, sse);
	if (!st)
		return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
		              "out of memory");
	json_array_extend(st->ids, h->ids);
	json_array_extend(st->tokens, h->tokens);
	if (sse)
		return queue_sse(c, st);
	rq->st = st;
	st->suspended = true;
	mhd.suspend_connection(c);
	return MHD_YES;
}

static enum MHD_Result on_post(struct front *f, struct MHD_Connection *c, struct req *rq)
{
	struct jsonrpc_msg msg;
	struct jsonrpc_fault fault;
	struct held h = { json_array(), json_array(), json_array(), json_array() };
	struct session *se;
	enum MHD_Result ok = MHD_NO;
	char *line;
	bool init;

	if (rq->too_big)
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST,
		              "message larger than %zu bytes: refused",
		              rq->tenant ? rq->tenant->max_bytes : MCP_MAX_MESSAGE);
	if (!http_is_json(header(c, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
		              "a POST's Content-Type must be application/json");
	if (jsonrpc_parse(rq->body ? rq->body : "", rq->len, &msg, &fault) < 0) {
		ok = refuse(c, MHD_HTTP_BAD_REQUEST, fault.code, "%s", fault.message);
		json_decref(fault.id);
		return ok;
	}
	init = gather(msg.root, &h);
	line = json_dumps(msg.root, JSON_COMPACT);
	jsonrpc_msg_release(&msg);
	se = post_session(f, c, rq, init, &ok);
	if (se && within_cells(f, c, se, &h, &ok)) {
		if (!line || session_send(se, line, strlen(line)) < 0) {
			ok = refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
			            "out of memory");
		} else {
			session_flush(se);
			ok = post_answer(c, rq, se, &h);
		}
	}
	free(line);
	held_release(&h);
	return ok;
}

/* A JSON answer that waited (its connection was suspended): now in. */
static enum MHD_Result answer_json(struct MHD_Connection *c, struct req *rq)
{
	struct stream *st = rq->st;
	enum MHD_Result ok;

	rq->st = NULL;
	if (!st->len) {
		stream_free(st);
		return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
		              "the session ended before it answered");
	}
	st->out[st->len] = '\0';
	ok = reply(c, MHD_HTTP_OK, "application/json", st->out,
	           st->sess ? st->sess->id : NULL);
	stream_free(st);
	return ok;
}

static void replay_one(void *ctx, const struct sse_event *e)
{
	sse_append(ctx, e->seq, e->data, e->len);
}

/* The stream of se whose events follow Last-Event-ID `last`, on c: those
 * the log holds, then the rest as they come (or the end, when its
 * requests are all answered).  An id that is not one of se's streams'
 * (malformed, another session's, never given) is a 400, as a request the
 * server cannot take; one whose following events are no longer kept is
 * a 410, its stream gone; neither is a 404, which would tell the client
 * its session ended.  After a finished stream's last event: 204, nothing
 * more (an empty 200 would have the SDK's client, which takes an error
 * answer for no answer, resume again and again). */
static enum MHD_Result resume(struct MHD_Connection *c, struct session *se, const char *last)
{
	struct http_event_id e;
	struct stream *st = NULL;
	enum sse_log_from from = SSE_LOG_UNKNOWN;
	bool ours = http_event_id_parse(last, &e) && strcmp(e.tag, se->tag) == 0;

	for (st = ours ? se->streams : NULL; st && st->no != e.stream; st = st->next)
		;
	if (st && st->sse)
		from = sse_log_after(&st->log, e.seq, NULL, NULL);
	if (from == SSE_LOG_GONE || (ours && !st && e.stream <= se->n_streams))
		return refuse(c, MHD_HTTP_GONE, JSONRPC_INVALID_REQUEST, "Last-Event-ID: the "
		              "events after it are no longer kept (a stream keeps its last %d "
		              "events and %zu KiB; a session its last %d finished streams)",
		              SSE_LOG_EVENTS, SSE_LOG_BYTES >> 10, MCP_HTTP_STREAMS_KEPT);
	if (from != SSE_LOG_OK)
		return refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
		              "Last-Event-ID: not an event id of this session's streams");
	if (st->ended && e.seq + 1 == st->log.next)
		return reply(c, MHD_HTTP_NO_CONTENT, "", "", se->id);   /* nothing more */
	if (st->is_get && se->get && se->get != st && se->get->conn)
		return refuse(c, MHD_HTTP_CONFLICT, JSONRPC_INVALID_REQUEST,
		              "this session already has another GET stream open");
	if (st->conn) {     /* its old connection, not yet seen gone, ends */
		st->link->st = NULL;
		stream_wake(st);
	}
	stream_detach(st);
	st->conn = c;
	sse_log_after(&st->log, e.seq, replay_one, st);
	if (st->is_get)
		se->get = st;
	return queue_sse(c, st);
}

static enum MHD_Result on_get(struct front *f, struct MHD_Connection *c, struct req *rq)
{
	const char *sid = header(c, HTTP_SESSION_HEADER);
	struct session *se = sid ? session_get(f, c, sid, rq->tenant) : NULL;
	struct stream *st;
	const char *last;

	if (!http_accepts(header(c, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
		return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_INVALID_REQUEST,
		              "a GET must accept text/event-stream");
	if (!se)
		return refuse(c, sid ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST,
		              JSONRPC_INVALID_REQUEST, "%s", sid ? "no such session"
		              : "no " HTTP_SESSION_HEADER " header");
	last = header(c, "Last-Event-ID");
	if (last)
		return resume(c, se, last);
	if (se->get && se->get->conn)
		return refuse(c, MHD_HTTP_CONFLICT, JSONRPC_INVALID_REQUEST,
		              "this session already has its GET stream open");
	st = stream_new(se, c, true);
	if (!st)
		return MHD_NO;
	st->is_get = true;
	se->get = st;
	streams_trim(se);
	return queue_sse(c, st);
}

static enum MHD_Result on_delete(struct front *f, struct MHD_Connection *c, struct req *rq)
{
	const char *sid = header(c, HTTP_SESSION_HEADER);
	struct session *se = sid ? session_find(f, sid, rq->tenant) : NULL;

	if (!se && sid && http_session_id_valid(sid, f->key, tenant_name(rq->tenant))) {
		/* Another server's: none here, and none to be taken again. */
		snprintf(f->ended[f->n_ended++ % ENDED_KEPT], HTTP_SESSION_ID_LEN + 1, "%s", sid);
		return reply(c, MHD_HTTP_OK, "", "", NULL);
	}

	if (!se)
		return refuse(c, sid ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST,
		              JSONRPC_INVALID_REQUEST, "%s", sid ? "no such session"
		              : "no " HTTP_SESSION_HEADER " header");
	snprintf(f->ended[f->n_ended++ % ENDED_KEPT], HTTP_SESSION_ID_LEN + 1, "%s", se->id);
	session_free(f, se);
	return reply(c, MHD_HTTP_OK, "", "", NULL);
}

/* 401, with no word of what was wrong with the token. */
static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
		"-32001,\"message\":\"unauthorized: send Authorization: Bearer TOKEN with a "
		"token of --auth-tokens\"}}";
	struct MHD_Response *r = mhd.create_response_from_buffer(sizeof(body) - 1, (void *)body,
	                                                          MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	ok = mhd.queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	mhd.destroy_response(r);
	return ok;
}

/* Checks every request passes before its method is looked at. */
static enum MHD_Result screen(struct front *f, struct MHD_Connection *c, const char *url,
                              bool *refused)
{
	const char *v;

	(void)f;
	*refused = true;
	if (strcmp(url, ENDPOINT) != 0)
		return refuse(c, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
		              "not found: the MCP endpoint is " ENDPOINT);
	v = header(c, "Origin");
	if (v && !http_origin_allowed(v))
		return refuse(c, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
		              "Origin not allowed: only a loopback origin may call this server");
	v = header(c, HTTP_VERSION_HEADER);
	if (v && !mcp_version_known(v))
		return refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
		              "unsupported " HTTP_VERSION_HEADER ": %.40s", v);
	*refused = false;
	return MHD_YES;
}

/* The connection's request is in: no more header deadline. */
static void request_in(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct pending *p = ci ? ci->socket_context : NULL;

	if (p && p->prev) {
		*p->prev = p->next;
		if (p->next)
			p->next->prev = p->prev;
		p->prev = NULL;
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
                          enum MHD_ConnectionNotificationCode what)
{
	struct front *f = cls;
	struct pending *p = *ctx;

	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->conn = c;
		p->since = deadline_now();
		p->next = f->pending;
		p->prev = &f->pending;
		if (f->pending)
			f->pending->prev = &p->next;
		f->pending = p;
		*ctx = p;
		return;
	}
	if (p) {
		request_in(c);
		free(p);
		*ctx = NULL;
	}
}

/* Drop the connections whose request is late; the ms until the next one
 * is due, or -1. */
static int drop_late(struct front *f)
{
	double t = deadline_now(), next = -1;

	for (struct pending *p = f->pending; p; p = p->next) {
		double due = p->since + f->timeout - t;

		if (due <= 0) {
			const union MHD_ConnectionInfo *ci =
				mhd.get_connection_info(p->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

			if (ci)
				shutdown(ci->connect_fd, SHUT_RDWR);
			p->since = t + 3600;    /* once; libmicrohttpd then closes it */
			continue;
		}
		if (next < 0 || due < next)
			next = due;
	}
	return next < 0 ? -1 : (int)(next * 1000) + 1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
	struct front *f = cls;
	struct req *rq = *con_cls;
	bool refused;
	enum MHD_Result ok;

	(void)version;
	if (!rq) {
		ok = screen(f, c, url, &refused);
		if (refused)
			return ok;
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		if (f->auth.n && !(rq->tenant = auth_check(&f->auth, header(c, "Authorization"))))
			return unauthorized(c);
		return MHD_YES;
	}
	if (*upload_size) {
		size_t max = rq->tenant ? rq->tenant->max_bytes : MCP_MAX_MESSAGE;

		if (!rq->too_big && rq->len + *upload_size <= max &&
		    grow(&rq->body, &rq->cap, rq->len + *upload_size + 1) == 0) {
			memcpy(rq->body + rq->len, upload, *upload_size);
			rq->len += *upload_size;
		} else {
			rq->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->st)
		return answer_json(c, rq);
	request_in(c);
	if (strcmp(method, MHD_HTTP_METHOD_POST) == 0)
		return on_post(f, c, rq);
	if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
		return on_get(f, c, rq);
	if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0)
		return on_delete(f, c, rq);
	return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_INVALID_REQUEST,
	              "method not allowed: POST, GET or DELETE");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
	struct req *rq = *con_cls;

	(void)cls, (void)c, (void)why;
	if (!rq)
		return;
	if (rq->st)
		stream_free(rq->st);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* ---- the listening socket ---- */

static int listen_on(const char *where, struct front *f, char *err, size_t errlen)
{
	struct http_addr a;
	int fd;

	if (http_parse_listen(where, &a, err, errlen) < 0)
		return -1;
	if (!a.loopback && !f->auth.n) {
		snprintf(err, errlen, "--http %s: not a loopback address; without --auth-tokens "
		         "the server binds only to 127.0.0.1, [::1] or a unix socket", where);
		return -1;
	}
	fd = socket(a.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (a.sa.ss_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(fd, (struct sockaddr *)&a.sa, a.len) < 0 || listen(fd, 128) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", where, strerror(errno));
		close(fd);
		return -1;
	}
	if (a.sa.ss_family == AF_UNIX) {
		snprintf(f->url, sizeof(f->url), "unix:%s " ENDPOINT, where);
	} else {
		char host[NI_MAXHOST], port[NI_MAXSERV];
		struct sockaddr_storage got;
		socklen_t len = sizeof(got);

		memset(&got, 0, sizeof(got));
		if (getsockname(fd, (struct sockaddr *)&got, &len) < 0 ||
		    getnameinfo((struct sockaddr *)&got, len, host, sizeof(host), port,
		                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
			snprintf(err, errlen, "cannot name the address listened on: %s",
			         strerror(errno));
			close(fd);
			return -1;
		}
		snprintf(f->url, sizeof(f->url), "http://%s%s%s:%s" ENDPOINT,
		         got.ss_family == AF_INET6 ? "[" : "", host,
		         got.ss_family == AF_INET6 ? "]" : "", port);
	}
	return fd;
}

/* ---- the loop ---- */

static bool session_connected(const struct session *se)
{
	for (const struct stream *st = se->streams; st; st = st->next)
		if (st->conn)
			return true;
	return false;
}

/* End the sessions no request named for MCP_HTTP_SESSION_IDLE seconds
 * that have no stream open and no call in flight (a client that never
 * sent DELETE, or one another server serves now): any server takes the
 * id again.  The ms until the next may be due, or -1. */
static int end_idle(struct front *f)
{
	double t = deadline_now(), next = -1;
	struct session *se = f->sessions;

	while (se) {
		struct session *later = se->next;
		double due = se->used + MCP_HTTP_SESSION_IDLE - t;

		if (session_connected(se) || json_array_size(se->calls))
			due = MCP_HTTP_SESSION_IDLE;
		else if (due <= 0)
			session_free(f, se);
		if (due > 0 && (next < 0 || due < next))
			next = due;
		se = later;
	}
	return next < 0 ? -1 : (int)(next * 1000) + 1;
}

static void stop_sessions(struct front *f)
{
	while (f->sessions)
		session_free(f, f->sessions);
}

static unsigned connections(struct front *f)
{
	const union MHD_DaemonInfo *i = mhd.get_daemon_info(f->d,
	                                                    MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return i ? i->num_connections : 0;
}

/*
 * libmicrohttpd's turn.  At its connection limit it takes the listening
 * socket out of its epoll set, and puts it back only at the start of a
 * later turn once it is below: when a turn closed connections, another
 * turn follows at once, else a client that closed every connection at
 * once leaves the loop asleep with nothing of MHD's to wake it and the
 * new connections never accepted.
 */
static void mhd_turn(struct front *f)
{
	unsigned before, after = connections(f);

	do {
		before = after;
		mhd.run(f->d);
		after = connections(f);
	} while (after < before);
}

static int serve(struct front *f, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info = mhd.get_daemon_info(f->d, MHD_DAEMON_INFO_EPOLL_FD);
	struct pollfd pf[2 + MCP_HTTP_MAX_SESSIONS];
	struct session *at[MCP_HTTP_MAX_SESSIONS];

	if (!info) {
		snprintf(err, errlen, "libmicrohttpd gave no epoll fd");
		return -1;
	}
	while (!f->stop) {
		nfds_t n = 0;
		MHD_UNSIGNED_LONG_LONG wait_ms = 0;
		int timeout = -1, late, rc;

		pf[n++] = (struct pollfd){ .fd = info->epoll_fd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = f->sigfd, .events = POLLIN };
		for (struct session *se = f->sessions; se; se = se->next) {
			at[n - 2] = se;
			pf[n++] = (struct pollfd){ .fd = se->fd,
			                           .events = POLLIN | (se->wlen ? POLLOUT : 0) };
		}
		if (mhd.get_timeout(f->d, &wait_ms) == MHD_YES)
			timeout = wait_ms > 60000 ? 60000 : (int)wait_ms;
		late = drop_late(f);
		if (late >= 0 && (timeout < 0 || late < timeout))
			timeout = late;
		late = end_idle(f);
		if (late >= 0 && (timeout < 0 || late < timeout))
			timeout = late;
		rc = poll(pf, n, timeout);
		if (rc < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		if (rc > 0 && (pf[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(f->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				fprintf(stderr, "dolsot mcp: %s: stopping\n",
				        strsignal((int)si.ssi_signo));
			f->stop = true;
			break;
		}
		for (nfds_t i = 2; rc > 0 && i < n; i++) {
			struct session *se = at[i - 2];

			if (pf[i].revents & POLLOUT)
				session_flush(se);
			if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && !session_read(f, se))
				session_free(f, se);
		}
		mhd_turn(f);
	}
	return 0;
}

/* The tenants, if any, and their counters; each tenant's namespace must
 * be a valid one. */
static int load_tenants(struct front *f, const char *tokens, char *err, size_t errlen)
{
	char ns[STORE_NS_MAX + 1];

	if (!tokens)
		return 0;
	if (auth_load(tokens, MCP_MAX_MESSAGE, &f->auth, err, errlen) < 0 || f->auth.n == 0)
		return -1;
	for (size_t i = 0; i < f->auth.n; i++)
		if (tenant_ns(f->m->settings->ns, f->auth.tenants[i].name, ns, sizeof(ns)) < 0) {
			snprintf(err, errlen, "--auth-tokens: tenant %s: its namespace (the "
			         "server's, a dot, its name) is longer than %d bytes",
			         f->auth.tenants[i].name, STORE_NS_MAX);
			return -1;
		}
	f->running = calloc(f->auth.n, sizeof(*f->running));
	if (!f->running) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int mcp_http_serve(const struct mcp_setup *m, const char *where, const char *tokens,
                   unsigned timeout, char *err, size_t errlen)
{
	struct front f = { .m = m, .sigfd = -1,
	                   .timeout = timeout ? timeout : MCP_HTTP_HEADER_TIMEOUT };
	sigset_t mask;
	int fd, rc;

	if (mhd_load(err, errlen) < 0)
		return -1;
	if (load_tenants(&f, tokens, err, errlen) < 0) {
		auth_release(&f.auth);
		return -1;
	}
	/* With tokens, the key is the token file's: unknown to clients. */
	sha256_bytes(f.auth.file_digest, sizeof(f.auth.file_digest), f.key);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &f.oldmask) < 0 ||
	    (f.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "signalfd: %s", strerror(errno));
		return -1;
	}
	fd = listen_on(where, &f, err, errlen);
	if (fd < 0) {
		fd_close(&f.sigfd);
		auth_release(&f.auth);
		free(f.running);
		return -1;
	}
	f.d = mhd.start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
	                       0, NULL, NULL, on_request, &f,
	                       MHD_OPTION_LISTEN_SOCKET, fd,
	                       MHD_OPTION_NOTIFY_COMPLETED, on_completed, &f,
	                       MHD_OPTION_NOTIFY_CONNECTION, on_connection, &f,
	                       MHD_OPTION_CONNECTION_LIMIT, (unsigned)MCP_HTTP_MAX_CONNECTIONS,
	                       MHD_OPTION_CONNECTION_TIMEOUT, f.timeout,
	                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
	                       MHD_OPTION_END);
	if (!f.d) {
		snprintf(err, errlen, "cannot start the HTTP server on %s", where);
		close(fd);
		fd_close(&f.sigfd);
		auth_release(&f.auth);
		free(f.running);
		return -1;
	}
	fprintf(stderr, "dolsot mcp: listening on %s\n", f.url);
	rc = serve(&f, err, errlen);
	stop_sessions(&f);
	mhd.run(f.d);    /* the resumed connections end before the daemon */
	mhd.stop_daemon(f.d);
	close(fd);
	fd_close(&f.sigfd);
	auth_release(&f.auth);
	free(f.running);
	sigprocmask(SIG_SETMASK, &f.oldmask, NULL);
	return rc;
}
