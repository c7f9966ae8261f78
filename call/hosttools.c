/*
 * hosttools.c - the host's side of host calls: the declared tools, and
 * one cell's channel served call by call (helpers run, the fd host asked).
 */
#include "hosttools.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "output.h"
#include "proc.h"
#include "proc_child.h"

/* What a helper's stderr may say in the cell's exception (bytes). */
#define HELPER_ERR_MAX 2000
/* How long a helper killed at its bound may take to die (seconds). */
#define HELPER_KILL_GRACE 1.0
/* One read from the channel (bytes). */
#define CHAN_READ 65536

void host_tools_init(struct host_tools *ht)
{
	memset(ht, 0, sizeof(*ht));
	ht->fd = -1;
	ht->next_id = 1;
	ht->call_seconds = HOST_CALL_SECONDS;
	ht->wait_max = HOST_WAIT_SECONDS;
	ht->lim = (struct toolchan_limits){ TOOLCHAN_MSG_MAX, TOOLCHAN_CALLS_MAX,
	                                    TOOLCHAN_BYTES_MAX };
	jsonrpc_reader_init(&ht->from_host, TOOLCHAN_MSG_MAX);
	toolchan_init(&ht->chan, &ht->lim);
}

void host_tools_release(struct host_tools *ht)
{
	for (size_t i = 0; i < ht->n; i++) {
		free(ht->tools[i].command);
		json_decref(ht->tools[i].decl);
	}
	ht->n = 0;
	fd_close(&ht->fd);
	jsonrpc_reader_release(&ht->from_host);
	toolchan_release(&ht->chan);
}

bool host_tools_any(const struct host_tools *ht)
{
	return ht && ht->n > 0;
}

static struct host_tool *find(const struct host_tools *ht, const char *name)
{
	for (size_t i = 0; i < ht->n; i++)
		if (strcmp(ht->tools[i].name, name) == 0)
			return (struct host_tool *)&ht->tools[i];
	return NULL;
}

/* A name a cell can call: a Python identifier that is not private nor a
 * keyword. */
static bool good_name(const char *name, size_t len)
{
	static const char *const keywords[] = {
		"False", "None", "True", "and", "as", "assert", "async", "await", "break",
		"class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
		"from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
		"pass", "raise", "return", "try", "while", "with", "yield",
	};

	if (len == 0 || len > TOOLCHAN_NAME_MAX || name[0] == '_' || isdigit((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < sizeof(keywords) / sizeof(*keywords); i++)
		if (strlen(keywords[i]) == len && memcmp(keywords[i], name, len) == 0)
			return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return false;
	return true;
}

static struct host_tool *add(struct host_tools *ht, const char *name, size_t len, char *err,
                             size_t errlen)
{
	struct host_tool *t;

	if (!good_name(name, len)) {
		snprintf(err, errlen, "tool name '%.*s': want a Python identifier of at most %d "
		         "characters, not a keyword nor starting with '_'", (int)len, name,
		         TOOLCHAN_NAME_MAX);
		return NULL;
	}
	if (ht->n == HOST_TOOLS_MAX) {
		snprintf(err, errlen, "too many tools: at most %d", HOST_TOOLS_MAX);
		return NULL;
	}
	t = &ht->tools[ht->n];
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name, len);
	t->decl = json_pack("{s:s}", "name", t->name);
	if (!t->decl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ht->n++;
	return t;
}

/* NAME=REST of spec: the tool named (added when new) and *rest. */
static struct host_tool *named(struct host_tools *ht, const char *spec, const char *opt,
                               const char **rest, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	char name[TOOLCHAN_NAME_MAX + 1];

	if (!eq || !eq[1]) {
		snprintf(err, errlen, "%s '%s': want NAME=VALUE", opt, spec);
		return NULL;
	}
	*rest = eq + 1;
	if ((size_t)(eq - spec) <= TOOLCHAN_NAME_MAX) {
		memcpy(name, spec, (size_t)(eq - spec));
		name[eq - spec] = '\0';
		if (find(ht, name))
			return find(ht, name);
	}
	return add(ht, spec, (size_t)(eq - spec), err, errlen);
}

int host_tools_add_command(struct host_tools *ht, const char *spec, char *err, size_t errlen)
{
	const char *cmd;
	struct host_tool *t = named(ht, spec, "--tool", &cmd, err, errlen);

	if (!t)
		return -1;
	if (t->command) {
		snprintf(err, errlen, "--tool '%s' is given twice", t->name);
		return -1;
	}
	t->command = strdup(cmd);
	if (!t->command) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* Copy a declaration's parts from src (a tool's entry) into t. */
static int take_decl(struct host_tool *t, json_t *src, const char *where, char *err,
                     size_t errlen)
{
	static const char *const keys[] = { "description", "inputSchema", "outputSchema" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		json_t *v = json_object_get(src, keys[i]);

		if (!v)
			continue;
		if (i == 0 ? !json_is_string(v) : !json_is_object(v)) {
			snprintf(err, errlen, "%s: \"%s\" must be %s", where, keys[i],
			         i == 0 ? "a string" : "an object");
			return -1;
		}
		if (json_object_set(t->decl, keys[i], v) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

int host_tools_add_schema(struct host_tools *ht, const char *spec, char *err, size_t errlen)
{
	const char *file;
	struct host_tool *t = named(ht, spec, "--tool-schema", &file, err, errlen);
	json_error_t je;
	json_t *doc, *wrap = NULL;
	char where[4200];
	int ret;

	if (!t)
		return -1;
	snprintf(where, sizeof(where), "--tool-schema %s", spec);
	doc = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(doc)) {
		snprintf(err, errlen, "%s: %s", where, doc ? "not a JSON object" : je.text);
		json_decref(doc);
		return -1;
	}
	/* A whole declaration, or only the input schema. */
	if (!json_object_get(doc, "inputSchema") && !json_object_get(doc, "outputSchema") &&
	    !json_object_get(doc, "description"))
		wrap = json_pack("{s:O}", "inputSchema", doc);
	ret = take_decl(t, wrap ? wrap : doc, where, err, errlen);
	json_decref(wrap);
	json_decref(doc);
	return ret;
}

int host_tools_add_hosted(struct host_tools *ht, const json_t *decl, char *err, size_t errlen)
{
	json_t *name = json_object_get(decl, "name");
	struct host_tool *t;

	if (!json_is_string(name)) {
		snprintf(err, errlen, "a hosted tool's declaration has no name");
		return -1;
	}
	if (find(ht, json_string_value(name))) {
		snprintf(err, errlen, "tool '%s' is declared twice", json_string_value(name));
		return -1;
	}
	t = add(ht, json_string_value(name), json_string_length(name), err, errlen);
	if (!t)
		return -1;
	return take_decl(t, (json_t *)decl, json_string_value(name), err, errlen);
}

bool host_tools_has(const struct host_tools *ht, const char *name)
{
	return ht && find(ht, name) != NULL;
}

void host_tools_use_fd(struct host_tools *ht, int fd)
{
	fd_close(&ht->fd);
	ht->fd = fd;
	ht->held_len = ht->held_off = 0;
	jsonrpc_reader_release(&ht->from_host);
	jsonrpc_reader_init(&ht->from_host, TOOLCHAN_MSG_MAX);
}

int host_tools_check(const struct host_tools *ht, char *err, size_t errlen)
{
	for (size_t i = 0; i < ht->n; i++)
		if (!ht->tools[i].command && ht->fd < 0) {
			snprintf(err, errlen, "--tool-schema %s: no --tool %s=COMMAND declares it",
			         ht->tools[i].name, ht->tools[i].name);
			return -1;
		}
	return 0;
}

int host_tools_write(int fd, const char *p, size_t n, const struct timespec *until)
{
	while (n) {
		struct pollfd pf = { fd, POLLOUT, 0 };
		ssize_t w;
		int got = poll(&pf, 1, deadline_poll_ms(deadline_left(until)));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		w = write(fd, p, n);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The next message from the fd host within until: 1 with *m, 0 at its
 * end, -1 on a timeout (errno ETIMEDOUT) or failure. */
static int host_message(struct host_tools *ht, const struct timespec *until,
                        struct jsonrpc_msg *m)
{
	for (;;) {
		const char *line;
		size_t n;
		struct jsonrpc_fault f;
		enum jsonrpc_line got = jsonrpc_next(&ht->from_host, &line, &n);
		struct pollfd pf = { ht->fd, POLLIN, 0 };
		ssize_t r;

		if (got == JSONRPC_LINE) {
			if (jsonrpc_parse(line, n, m, &f) == 0)
				return 1;
			json_decref(f.id);   /* not a message: skipped */
			continue;
		}
		if (got == JSONRPC_LINE_OVERSIZE)
			continue;
		if (ht->held_off < ht->held_len) {
			long took = jsonrpc_feed(&ht->from_host, ht->held + ht->held_off,
			                         ht->held_len - ht->held_off);

			if (took < 0)
				return -1;
			ht->held_off += (size_t)took;
			continue;
		}
		if (poll(&pf, 1, deadline_poll_ms(deadline_left(until))) == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = read(ht->fd, ht->held, sizeof(ht->held));
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			return r == 0 ? 0 : -1;
		ht->held_len = (size_t)r;
		ht->held_off = 0;
	}
}

/* Send a request to the fd host; its id into *id. */
static int host_request(struct host_tools *ht, const char *method, json_t *params,
                        long long *id, const struct timespec *until)
{
	json_t *o = json_pack("{s:s,s:I,s:s,s:O}", "jsonrpc", "2.0", "id", ht->next_id,
	                      "method", method, "params", params);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int ret = -1;

	json_decref(o);
	*id = ht->next_id++;
	if (text) {
		size_t n = strlen(text);

		text[n] = '\n';   /* json_dumps left room for its NUL: reuse it */
		ret = host_tools_write(ht->fd, text, n + 1, until);
		text[n] = '\0';
	}
	free(text);
	return ret;
}

/* The fd host's answer to request id: 1 with *result (a new reference),
 * 0 with the host's error in msg, -1 on a timeout (errno ETIMEDOUT) or
 * when the host is gone (msg says so). */
static int host_answer(struct host_tools *ht, long long id, const struct timespec *until,
                       json_t **result, char *msg, size_t msglen)
{
	struct jsonrpc_msg m;
	int got;

	while ((got = host_message(ht, until, &m)) == 1) {
		json_t *err = json_object_get(m.root, "error");
		json_t *text = json_object_get(err, "message");

		if (m.kind != JSONRPC_RESPONSE || !json_is_integer(m.id) ||
		    json_integer_value(m.id) != id) {
			jsonrpc_msg_release(&m);   /* a late answer, or not ours */
			continue;
		}
		*result = json_incref(json_object_get(m.root, "result"));
		if (!err && *result) {
			jsonrpc_msg_release(&m);
			return 1;
		}
		json_decref(*result);
		*result = NULL;
		snprintf(msg, msglen, "%s", json_is_string(text) ? json_string_value(text)
		         : "the host answered with an error");
		jsonrpc_msg_release(&m);
		return 0;
	}
	if (got == 0 || errno != ETIMEDOUT)
		snprintf(msg, msglen, "the host closed its tools fd");
	return -1;
}

int host_tools_open_fd(struct host_tools *ht, int fd, double seconds, char *err,
                       size_t errlen)
{
	struct timespec until;
	json_t *result = NULL, *list, *params = json_object();
	long long id;
	char msg[256];
	size_t i;
	int got;

	deadline_in(&until, seconds);
	ht->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (ht->fd < 0 || fcntl(ht->fd, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "--tools-fd %d: %s", fd, strerror(errno));
		json_decref(params);
		return -1;
	}
	close(fd);
	got = host_request(ht, "tools/list", params, &id, &until);
	json_decref(params);
	if (got < 0) {
		snprintf(err, errlen, "--tools-fd %d: cannot ask the host for its tools: %s", fd,
		         strerror(errno));
		return -1;
	}
	got = host_answer(ht, id, &until, &result, msg, sizeof(msg));
	if (got != 1) {
		snprintf(err, errlen, "--tools-fd %d: tools/list: %s", fd,
		         got == 0 ? msg : errno == ETIMEDOUT ? "no answer in time" : msg);
		return -1;
	}
	list = json_object_get(result, "tools");
	if (!json_is_array(list)) {
		snprintf(err, errlen, "--tools-fd %d: tools/list answered without a \"tools\" list",
		         fd);
		json_decref(result);
		return -1;
	}
	for (i = 0; i < json_array_size(list); i++) {
		json_t *e = json_array_get(list, i), *name = json_object_get(e, "name");
		struct host_tool *t;

		if (!json_is_string(name)) {
			snprintf(err, errlen, "--tools-fd %d: tools/list: entry %zu has no name", fd, i);
			break;
		}
		if (find(ht, json_string_value(name))) {
			snprintf(err, errlen, "--tools-fd %d: tool '%s' is declared twice", fd,
			         json_string_value(name));
			break;
		}
		t = add(ht, json_string_value(name), json_string_length(name), err, errlen);
		if (!t || take_decl(t, e, "--tools-fd's tools/list", err, errlen) < 0)
			break;
	}
	got = i == json_array_size(list) ? 0 : -1;
	json_decref(result);   /* list was result's */
	return got;
}

char *host_tools_declarations(const struct host_tools *ht)
{
	json_t *all = json_array();
	char *text;

	for (size_t i = 0; all && i < ht->n; i++)
		json_array_append(all, ht->tools[i].decl);
	text = all ? json_dumps(all, JSON_COMPACT) : NULL;
	json_decref(all);
	return text;
}

void host_tools_begin(struct host_tools *ht)
{
	ht->waited = 0;
	toolchan_release(&ht->chan);
	toolchan_init(&ht->chan, &ht->lim);
}

void host_tools_deadline(const struct host_tools *ht, const struct timespec *deadline,
                         struct timespec *out)
{
	if (!ht || ht->waited <= 0) {
		*out = *deadline;
		return;
	}
	deadline_in(out, deadline_left(deadline) +
	                 (ht->waited < ht->wait_max ? ht->waited : ht->wait_max));
}

int host_tools_channel(struct host_tools *ht, int chan[2], char *err, size_t errlen)
{
	host_tools_begin(ht);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0 ||
	    fcntl(chan[0], F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot make the host-call channel: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct helper {
	const char *command;
	int input;
};

static void helper_start(void *arg, int out, int err)
{
	const struct helper *h = arg;
	sigset_t none;

	sigemptyset(&none);
	if (proc_child_prepare(getppid(), out, err, &h->input, 1, &none) < 0 ||
	    dup2(h->input, 0) < 0)
		_exit(127);
	execl("/bin/sh", "sh", "-c", h->command, (char *)NULL);
	_exit(127);
}

/* The helper's stderr, trimmed, as the error's message. */
static void helper_message(const struct capture *e, int status, const char *name, char *msg,
                           size_t msglen)
{
	size_t n = e->len;

	while (n && isspace((unsigned char)e->data[n - 1]))
		n--;
	if (n)
		snprintf(msg, msglen, "%.*s", (int)n, e->data);
	else if (WIFEXITED(status))
		snprintf(msg, msglen, "tool '%s' exited with status %d", name, WEXITSTATUS(status));
	else
		snprintf(msg, msglen, "tool '%s' was killed by signal %d", name,
		         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Run t's helper on args: 1 with *result, 0 with an error in msg, -1 on
 * a timeout. */
static int run_helper(const struct host_tool *t, json_t *args, const struct timespec *until,
                      json_t **result, char *msg, size_t msglen)
{
	struct capture out, errc;
	struct helper h = { t->command, -1 };
	struct proc_child c;
	char *text = json_dumps(args, JSON_COMPACT);
	const char *what = "";
	int status = 0, ret = 0;
	bool reaped;

	capture_init(&out, TOOLCHAN_MSG_MAX);
	capture_init(&errc, HELPER_ERR_MAX);
	c.out = (struct proc_pipe){ -1, proc_feed_capture, &out };
	c.err = (struct proc_pipe){ -1, proc_feed_capture, &errc };
	h.input = memfd_create("dolsot-tool-args", MFD_CLOEXEC);
	if (!text || h.input < 0 || fd_write_all(h.input, text, strlen(text)) < 0 ||
	    lseek(h.input, 0, SEEK_SET) < 0 || proc_start(&c, helper_start, &h, &what) < 0) {
		snprintf(msg, msglen, "cannot run tool '%s': %s%s%s", t->name, what,
		         *what ? ": " : "", strerror(errno));
		goto out;
	}
	while ((c.out.fd >= 0 || c.err.fd >= 0) && deadline_left(until) > 0)
		if (proc_poll(&c.out, 2, NULL, 0, deadline_poll_ms(deadline_left(until))) < 0)
			break;
	reaped = proc_wait_until(c.pid, until, &status);
	if (!reaped) {
		struct timespec grace;

		proc_kill_group(c.pid);
		deadline_in(&grace, HELPER_KILL_GRACE);
		proc_wait_until(c.pid, &grace, &status);
		ret = -1;
		snprintf(msg, msglen, "tool '%s' did not answer in time", t->name);
		goto out;
	}
	proc_kill_rest_of_group(c.pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		helper_message(&errc, status, t->name, msg, msglen);
	} else if (out.cut_chars) {
		snprintf(msg, msglen, "tool '%s' answered more than %zu bytes", t->name,
		         TOOLCHAN_MSG_MAX);
	} else {
		json_error_t je;

		*result = out.len ? json_loadb(out.data, out.len, JSON_DECODE_ANY, &je) : json_null();
		ret = *result ? 1 : 0;
		if (!*result)
			snprintf(msg, msglen, "tool '%s' answered text that is not JSON: %s", t->name,
			         je.text);
	}
out:
	fd_close(&c.out.fd);
	fd_close(&c.err.fd);
	fd_close(&h.input);
	capture_release(&out);
	capture_release(&errc);
	free(text);
	return ret;
}

/* Ask the fd host to run the call: as run_helper. */
static int ask_host(struct host_tools *ht, const struct toolchan_call *call,
                    const struct timespec *until, json_t **result, char *msg, size_t msglen)
{
	json_t *params = json_pack("{s:s,s:O}", "name", call->name, "arguments", call->arguments);
	long long id;
	int got;

	if (!params || host_request(ht, "tools/call", params, &id, until) < 0) {
		json_decref(params);
		snprintf(msg, msglen, "cannot reach the host on its tools fd");
		return 0;
	}
	json_decref(params);
	got = host_answer(ht, id, until, result, msg, msglen);
	if (got < 0 && errno == ETIMEDOUT) {
		/* Tell the host to stop; its late answer is skipped by its id. */
		json_t *p = json_pack("{s:I}", "requestId", id);
		size_t n;
		char *note = p ? jsonrpc_notification("notifications/cancelled", p, &n) : NULL;
		struct timespec now_only;

		deadline_in(&now_only, 0.1);
		if (note)
			(void)host_tools_write(ht->fd, note, n, &now_only);
		free(note);
		json_decref(p);
		snprintf(msg, msglen, "tool '%s' did not answer in time", call->name);
		return -1;
	}
	return got < 0 ? 0 : got;
}

/* The answer line to one call, run within its bound; NULL when the call's
 * deadline came first (or memory ran out). */
static char *answer_call(struct host_tools *ht, const struct toolchan_call *call,
                         const struct timespec *deadline, size_t *len)
{
	const struct host_tool *t = find(ht, call->name);
	struct timespec until, cell;
	json_t *result = NULL;
	char msg[HELPER_ERR_MAX + 64], *line;
	double free_wait = ht->wait_max > ht->waited ? ht->wait_max - ht->waited : 0, t0;
	int got;

	/* The wait is the cell's own time only past what is left of
	 * wait_max. */
	host_tools_deadline(ht, deadline, &cell);
	deadline_in(&until, ht->call_seconds);
	if (deadline_left(&cell) + free_wait < ht->call_seconds)
		deadline_in(&until, deadline_left(&cell) + free_wait);
	t0 = deadline_now();
	got = t->command ? run_helper(t, call->arguments, &until, &result, msg, sizeof(msg))
	                 : ask_host(ht, call, &until, &result, msg, sizeof(msg));
	t0 = deadline_now() - t0;
	ht->waited += t0 < free_wait ? t0 : free_wait;
	/* At the cell's own deadline it gets no answer: it is being ended as
	 * any cell that runs out of time (an answer now would race that). */
	host_tools_deadline(ht, deadline, &cell);
	if (got < 0 && deadline_left(&cell) <= 0)
		return NULL;
	if (got != 1)
		return jsonrpc_error(call->id, got < 0 ? TOOLCHAN_TIMEOUT : TOOLCHAN_TOOL_ERROR,
		                     msg, len);
	line = jsonrpc_result(call->id, result, len);
	json_decref(result);
	if (line && *len > ht->chan.lim.msg_max) {
		free(line);
		snprintf(msg, sizeof(msg), "tool '%s' answered more than %zu bytes", call->name,
		         ht->chan.lim.msg_max);
		return jsonrpc_error(call->id, TOOLCHAN_TOOL_ERROR, msg, len);
	}
	return line;
}

/* An answer to the worker, which waits for it: one it does not take in
 * HOST_ANSWER_SECONDS is a cell writing without reading. */
static int write_answer(const struct host_tools *ht, int chan, const char *answer,
                        size_t len, const struct timespec *deadline)
{
	struct timespec until, cell;

	host_tools_deadline(ht, deadline, &cell);
	deadline_in(&until, HOST_ANSWER_SECONDS);
	if (deadline_left(&cell) < deadline_left(&until))
		until = cell;
	return host_tools_write(chan, answer, len, &until);
}

static bool declared(const char *name, void *ctx)
{
	return find(ctx, name) != NULL;
}

/* Handle every event the intake holds: 1 to go on, 0 when done. */
static int drain(struct host_tools *ht, int chan, const struct timespec *deadline)
{
	for (;;) {
		struct toolchan_call call;
		char *answer;
		size_t len;
		enum toolchan_event ev = toolchan_next(&ht->chan, declared, ht, &call, &answer, &len);
		int ok = 1;

		if (ev == TOOLCHAN_NONE)
			return 1;
		if (ev == TOOLCHAN_CALL) {
			answer = answer_call(ht, &call, deadline, &len);
			toolchan_call_release(&call);
			if (answer && !toolchan_count_answer(&ht->chan, len)) {
				free(answer);
				answer = jsonrpc_error(NULL, TOOLCHAN_BOUND, ht->chan.why, &len);
				ev = TOOLCHAN_CLOSED;
			}
		}
		if (answer && write_answer(ht, chan, answer, len, deadline) < 0)
			ok = 0;
		free(answer);
		if (ev == TOOLCHAN_CLOSED || !ok)
			return 0;
	}
}

int host_tools_serve(struct host_tools *ht, int chan, const struct timespec *deadline)
{
	char buf[CHAN_READ];
	ssize_t n = read(chan, buf, sizeof(buf));
	size_t off = 0;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : 0;
	if (n == 0)
		return 0;
	/* Once closed, what the cell sends is read and dropped: its writes
	 * neither block nor fail (no SIGPIPE), and it is told why once. */
	while (off < (size_t)n && !ht->chan.told) {
		long took = toolchan_feed(&ht->chan, buf + off, (size_t)n - off);

		if (took < 0)
			return 0;
		off += (size_t)took;
		if (!drain(ht, chan, deadline) && !ht->chan.told)
			return 0;
	}
	return 1;
}
