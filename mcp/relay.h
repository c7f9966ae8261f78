/*
 * relay.h - the host of `dolsot mcp`'s cells (issue 37): their calls of
 * proxied servers' tools (proxy.h) and of llm_query (sampling.h), which
 * the server's loop answers.
 *
 * Each call's child gets a socket of its own (relay_open) as its tools
 * fd host (hosttools.h's "tools/call" requests and "notifications/
 * cancelled", one JSON-RPC line each).  The loop polls those sockets and
 * the proxied servers (relay_pollfds, relay_handle): a call is forwarded
 * as "tools/call" to its server, llm_query as "sampling/createMessage" to
 * the client (send_client), each under an id the relay allocates, and the
 * answer routed back to the call's socket by it (relay_on_response for
 * the client's).  The child keeps each call's bound (DOLSOT_TOOL_TIMEOUT)
 * and cancels what outlives it; the relay passes the cancel on.
 */
#ifndef DOLSOT_RELAY_H
#define DOLSOT_RELAY_H

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "jsonrpc.h"
#include "proxy.h"

/* Call children served at once. */
#define RELAY_CHANS 16
/* fds relay_pollfds may add. */
#define RELAY_MAX_FDS (RELAY_CHANS + PROXY_MAX)

struct relay_chan {
	int fd;                  /* -1: free */
	bool ended;              /* the child closed it: no more polls */
	struct jsonrpc_reader rd;
};

struct relay_wait;

struct relay {
	struct proxy proxy;
	struct host_tools *ht;
	bool sampling;           /* the client offered it: llm_query is declared */
	struct relay_chan chans[RELAY_CHANS];
	struct relay_wait *waits;
	size_t n_waits;
	long long next_id;
	void (*send_client)(void *ctx, char *line, size_t len);   /* takes line */
	void *ctx;
};

void relay_init(struct relay *r, struct host_tools *ht,
                void (*send_client)(void *ctx, char *line, size_t len), void *ctx);
void relay_release(struct relay *r);

/* --proxy's servers started, their tools declared in ht.  0, or -1 with
 * err. */
int relay_start(struct relay *r, const char *const *commands, size_t n, char *err,
                size_t errlen);

/* At initialize: llm_query is declared when capabilities offer sampling. */
int relay_client(struct relay *r, const json_t *capabilities, char *err, size_t errlen);

/* Append to *text (malloc'd, or NULL) what a cell lacks: llm_query when
 * servers are proxied and the client did not offer sampling. */
void relay_describe(const struct relay *r, char **text);

/* Whether calls need a socket: any server proxied, or sampling. */
bool relay_active(const struct relay *r);

/* A socket pair for one call: returns the relay's end's slot and puts
 * the child's end (CLOEXEC, non-blocking) in *child; -1 with errno. */
int relay_open(struct relay *r, int *child);
/* The call of slot ended: its waits dropped, what it waited for cancelled. */
void relay_close(struct relay *r, int slot);

/* The fds to poll (at most RELAY_MAX_FDS) into pf; how many. */
size_t relay_pollfds(const struct relay *r, struct pollfd *pf);
/* After poll: serve those of pf[0..n) with events. */
void relay_handle(struct relay *r, const struct pollfd *pf, size_t n);

/* A response from the client: true when it answered one of ours. */
bool relay_on_response(struct relay *r, const struct jsonrpc_msg *m);

#endif
