/*
 * proxy.h - `dolsot mcp --proxy COMMAND`: dolsot as an MCP client of other
 * MCP servers over stdio (issue 37), whose tools cells call as functions.
 *
 * Each COMMAND runs under /bin/sh -c as a child of the `dolsot mcp`
 * process, at its start: initialize, notifications/initialized and
 * tools/list (every page) are done once, within a bound, and each tool is
 * declared to the cells (hosttools.h, answered by the fd host) under a
 * Python name: the tool's name with every character that is not a letter,
 * digit or '_' made '_' (and "t_" before one that starts with a digit or
 * '_', "_" after a keyword).  When that name is taken (by a --tool,
 * llm_query, or a tool of a server started before), it is the server's
 * name (its serverInfo.name made a name the same way) + "_" + the tool's;
 * when that is taken too, the server does not start.  A server that ends
 * later is reported on stderr, and each call of its tools is an error in
 * the cell saying so; it is not restarted.
 */
#ifndef DOLSOT_PROXY_H
#define DOLSOT_PROXY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "hosttools.h"
#include "jsonrpc.h"

/* How long a proxied server may take to start: initialize and tools/list
 * (seconds). */
#define PROXY_START_SECONDS 30.0
#define PROXY_MAX 16

struct proxy_server {
	char name[TOOLCHAN_NAME_MAX + 1];   /* from serverInfo.name */
	const char *command;
	pid_t pid;
	int to, from;            /* its stdin (ours to write), its stdout */
	struct jsonrpc_reader rd;
	bool gone;
	char why[200];           /* how it ended, once gone */
};

struct proxy_tool {
	char name[TOOLCHAN_NAME_MAX + 1];   /* the cell's */
	char *remote;            /* the server's */
	size_t server;
};

struct proxy {
	struct proxy_server srv[PROXY_MAX];
	size_t n_srv;
	struct proxy_tool *tools;
	size_t n_tools;
};

void proxy_init(struct proxy *p);
/* Stop every server (SIGTERM, then SIGKILL) and free what p holds. */
void proxy_release(struct proxy *p);

/*
 * Start the server of command, its handshake and tools/list within
 * seconds, and declare its tools in ht.  0, or -1 with the reason in err
 * (the server is stopped then).
 */
int proxy_start(struct proxy *p, const char *command, double seconds, struct host_tools *ht,
                char *err, size_t errlen);

/* The tool a cell calls by name, or NULL. */
const struct proxy_tool *proxy_find(const struct proxy *p, const char *name);

/* Send one line (ending in '\n') to server i within a short bound.  0, or
 * -1 with the reason in err. */
int proxy_send(struct proxy *p, size_t i, const char *line, size_t len, char *err,
               size_t errlen);

/*
 * Read what server i wrote (its stdout is non-blocking) and hand each
 * response to on_response; a request it sends is answered "method not
 * found".  At its end the server is reaped and marked gone (why says
 * how): returns 0 then, else 1.
 */
int proxy_read(struct proxy *p, size_t i,
               void (*on_response)(void *ctx, size_t server, const struct jsonrpc_msg *m),
               void *ctx);

/* The texts of content (an array of MCP content blocks), joined by
 * newlines, as a string; NULL when a block is not text, or content no
 * array.  A new reference. */
json_t *proxy_texts(const json_t *content);

/*
 * A CallToolResult as the cell's value: its structuredContent if any;
 * else its content, when every block is text, the texts joined as one
 * string; else the content list itself.  With isError: NULL, and the
 * texts (or a generic line) in msg.  A new reference.
 */
json_t *proxy_value(const json_t *result, char *msg, size_t msglen);

#endif
