/*
 * toolchan.h - the host-call channel's intake: what a cell's worker writes
 * on its channel (issue 37), checked and bounded before anything runs.
 *
 * The channel carries JSON-RPC 2.0 messages, one per line (mcp/jsonrpc.h's
 * framing).  The worker sends requests
 *
 *   {"jsonrpc":"2.0","id":N,"method":"tools/call",
 *    "params":{"name":NAME,"arguments":{...}}}
 *
 * and gets one response per id, a "result" (the tool's JSON value) or an
 * "error" ({"code","message"}).  Every byte comes from the cell, which can
 * write anything on the fd: a message that is not such a call is answered
 * with an error (the cell sees it as an exception) and costs nothing else;
 * a line over the message bound, or more calls or bytes than a cell may
 * use, closes the channel for the rest of the call.  No I/O here: the
 * caller feeds bytes and takes events.  fuzz/fuzz_toolchan.c is its
 * harness.
 */
#ifndef DOLSOT_TOOLCHAN_H
#define DOLSOT_TOOLCHAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "jsonrpc.h"

/* The bounds of one cell's channel. */
#define TOOLCHAN_MSG_MAX ((size_t)1 << 20)      /* bytes of one message */
#define TOOLCHAN_CALLS_MAX 10000                /* calls per cell */
#define TOOLCHAN_BYTES_MAX ((size_t)64 << 20)   /* bytes both ways per cell */
#define TOOLCHAN_NAME_MAX 64                    /* bytes of a tool's name */

struct toolchan_limits {
	size_t msg_max, calls_max, bytes_max;
};

struct toolchan {
	struct jsonrpc_reader reader;
	struct toolchan_limits lim;
	size_t calls, bytes;
	bool closed;
	bool told;               /* the cell was sent why */
	char why[200];           /* why it closed */
};

enum toolchan_event {
	TOOLCHAN_NONE,           /* feed more */
	TOOLCHAN_CALL,           /* a well-formed call: run it, answer its id */
	TOOLCHAN_REPLY,          /* answer the line in *answer (malloc'd), no call */
	TOOLCHAN_CLOSED,         /* a bound was broken: why says which; after
	                          * *answer (may be NULL), send nothing more */
};

struct toolchan_call {
	json_t *id;              /* a new reference */
	char name[TOOLCHAN_NAME_MAX + 1];
	json_t *arguments;       /* a new reference: an object */
};

/* lim NULL: the defaults above. */
void toolchan_init(struct toolchan *ch, const struct toolchan_limits *lim);
void toolchan_release(struct toolchan *ch);

/* Bytes of p[0..n) taken (0 while an event is pending, or once closed),
 * or -1 with errno ENOMEM; counted against the byte bound. */
long toolchan_feed(struct toolchan *ch, const void *p, size_t n);

/*
 * The next event.  CALL fills *call (release with toolchan_call_release);
 * REPLY and CLOSED may set *answer, a line ending in '\n' of *len bytes
 * to write back (free it).  is_declared(name, ctx) says whether the host
 * declared a tool: an undeclared one is answered with an error here.
 */
enum toolchan_event toolchan_next(struct toolchan *ch,
                                  bool (*is_declared)(const char *name, void *ctx),
                                  void *ctx, struct toolchan_call *call, char **answer,
                                  size_t *len);

/* An answer's bytes count too: false (and the channel closed) when the
 * answer of len bytes would pass the byte bound. */
bool toolchan_count_answer(struct toolchan *ch, size_t len);

void toolchan_call_release(struct toolchan_call *call);

/* The error code of a host call that failed or timed out (sent to the
 * worker, which raises TimeoutError for TOOLCHAN_TIMEOUT). */
#define TOOLCHAN_TOOL_ERROR (-32000)
#define TOOLCHAN_TIMEOUT (-32001)
#define TOOLCHAN_BOUND (-32002)

#endif
