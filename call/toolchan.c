/*
 * toolchan.c - the host-call channel's intake: lines from the cell's
 * worker, checked against the protocol and the cell's bounds.
 */
#include "toolchan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void toolchan_init(struct toolchan *ch, const struct toolchan_limits *lim)
{
	memset(ch, 0, sizeof(*ch));
	ch->lim = lim ? *lim : (struct toolchan_limits){ TOOLCHAN_MSG_MAX, TOOLCHAN_CALLS_MAX,
	                                                 TOOLCHAN_BYTES_MAX };
	jsonrpc_reader_init(&ch->reader, ch->lim.msg_max);
}

void toolchan_release(struct toolchan *ch)
{
	jsonrpc_reader_release(&ch->reader);
}

static void close_for(struct toolchan *ch, const char *why)
{
	if (!ch->closed)
		snprintf(ch->why, sizeof(ch->why), "%s", why);
	ch->closed = true;
}

long toolchan_feed(struct toolchan *ch, const void *p, size_t n)
{
	long took;

	if (ch->closed)
		return 0;
	took = jsonrpc_feed(&ch->reader, p, n);
	if (took > 0) {
		ch->bytes += (size_t)took;
		if (ch->bytes > ch->lim.bytes_max)
			close_for(ch, "the cell sent more bytes on the host-call channel than "
			          "a cell may");
	}
	return took;
}

bool toolchan_count_answer(struct toolchan *ch, size_t len)
{
	ch->bytes += len;
	if (ch->bytes > ch->lim.bytes_max)
		close_for(ch, "the host calls' answers passed the bytes a cell may move "
		          "on the channel");
	return !ch->closed;
}

void toolchan_call_release(struct toolchan_call *call)
{
	json_decref(call->id);
	json_decref(call->arguments);
	call->id = call->arguments = NULL;
}

static enum toolchan_event reply(const json_t *id, int code, const char *message,
                                 char **answer, size_t *len)
{
	*answer = jsonrpc_error(id, code, message, len);
	return TOOLCHAN_REPLY;
}

/* A parsed request as a call, or an error answer. */
static enum toolchan_event take_call(struct toolchan *ch, const struct jsonrpc_msg *m,
                                     bool (*is_declared)(const char *, void *), void *ctx,
                                     struct toolchan_call *call, char **answer, size_t *len)
{
	json_t *name = json_object_get(m->params, "name");
	json_t *args = json_object_get(m->params, "arguments");
	char msg[TOOLCHAN_NAME_MAX + 64];

	if (strcmp(m->method, "tools/call") != 0)
		return reply(m->id, JSONRPC_METHOD_NOT_FOUND, "unknown method", answer, len);
	if (!json_is_object(m->params) || !json_is_string(name) ||
	    json_string_length(name) == 0 || json_string_length(name) > TOOLCHAN_NAME_MAX ||
	    strlen(json_string_value(name)) != json_string_length(name) ||
	    (args && !json_is_object(args)))
		return reply(m->id, JSONRPC_INVALID_PARAMS,
		             "tools/call wants params {\"name\": str, \"arguments\": object}",
		             answer, len);
	if (!is_declared(json_string_value(name), ctx)) {
		snprintf(msg, sizeof(msg), "no host tool named '%s'", json_string_value(name));
		return reply(m->id, JSONRPC_METHOD_NOT_FOUND, msg, answer, len);
	}
	if (++ch->calls > ch->lim.calls_max) {
		close_for(ch, "the cell made more host calls than a cell may");
		ch->told = true;
		*answer = jsonrpc_error(m->id, TOOLCHAN_BOUND, ch->why, len);
		return TOOLCHAN_CLOSED;
	}
	snprintf(call->name, sizeof(call->name), "%s", json_string_value(name));
	call->id = json_incref(m->id);
	call->arguments = args ? json_incref(args) : json_object();
	return TOOLCHAN_CALL;
}

enum toolchan_event toolchan_next(struct toolchan *ch,
                                  bool (*is_declared)(const char *name, void *ctx),
                                  void *ctx, struct toolchan_call *call, char **answer,
                                  size_t *len)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;
	enum toolchan_event ev;
	const char *line;
	size_t n;

	*answer = NULL;
	*len = 0;
	memset(call, 0, sizeof(*call));
	if (ch->closed) {
		if (!ch->told)
			*answer = jsonrpc_error(NULL, TOOLCHAN_BOUND, ch->why, len);
		ch->told = true;
		return TOOLCHAN_CLOSED;
	}
	switch (jsonrpc_next(&ch->reader, &line, &n)) {
	case JSONRPC_LINE_NONE:
		return TOOLCHAN_NONE;
	case JSONRPC_LINE_OVERSIZE:
		close_for(ch, "the cell sent a host-call message over the size bound");
		return toolchan_next(ch, is_declared, ctx, call, answer, len);
	case JSONRPC_LINE:
	default:
		break;
	}
	if (n == 0)
		return TOOLCHAN_NONE;   /* a blank line: nothing to answer */
	if (jsonrpc_parse(line, n, &m, &f) < 0) {
		ev = reply(f.id, f.code, f.message, answer, len);
		json_decref(f.id);
		return ev;
	}
	if (m.kind != JSONRPC_REQUEST)
		ev = m.kind == JSONRPC_NOTIFICATION ? TOOLCHAN_NONE
		     : reply(NULL, JSONRPC_INVALID_REQUEST, "the channel takes single requests",
		             answer, len);
	else
		ev = take_call(ch, &m, is_declared, ctx, call, answer, len);
	jsonrpc_msg_release(&m);
	if (ev == TOOLCHAN_REPLY && !*answer)
		errno = ENOMEM;
	return ev;
}
