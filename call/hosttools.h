/*
 * hosttools.h - the host's side of host calls (issue 37): the tools a
 * caller declares, and the serving of one cell's channel.
 *
 * A tool is declared by `--tool NAME=COMMAND` (a helper run per call:
 * the arguments as JSON on its stdin, its result as JSON on its stdout,
 * a non-zero exit an error whose message is its stderr) with its schema
 * from `--tool-schema NAME=FILE`, or by a host on `--tools-fd N`, which
 * answers "tools/list" once and then "tools/call" requests, one JSON-RPC
 * 2.0 message per line (toolchan.h's framing) on that fd.  The worker
 * gets the declarations in its request (host_tools_declarations) and a
 * socket of its own for the calls; the call path polls the other end and
 * hands it to host_tools_serve whenever it is readable.
 */
#ifndef DOLSOT_HOSTTOOLS_H
#define DOLSOT_HOSTTOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "toolchan.h"

#define HOST_TOOLS_MAX 64
/* One host call may take this long (seconds) before the cell is told
 * TimeoutError; never past the cell's own deadline. */
#define HOST_CALL_SECONDS 30.0
/* Time a cell waits on its host, not counted against its --timeout
 * (seconds per cell, DOLSOT_TOOL_WAIT); past it, waiting counts. */
#define HOST_WAIT_SECONDS 300.0
/* An answer the worker does not take within this long (seconds) closes
 * the channel: the cell writes without reading. */
#define HOST_ANSWER_SECONDS 2.0

struct host_tool {
	char name[TOOLCHAN_NAME_MAX + 1];
	char *command;           /* --tool's helper; NULL for the fd host's */
	json_t *decl;            /* {"name", "description", "inputSchema", ...} */
};

struct host_tools {
	struct host_tool tools[HOST_TOOLS_MAX];
	size_t n;
	int fd;                  /* --tools-fd's host; -1: none */
	struct jsonrpc_reader from_host;
	char held[65536];        /* read from the fd host, not fed yet */
	size_t held_len, held_off;
	long long next_id;       /* of the requests sent to the fd host */
	double call_seconds;     /* HOST_CALL_SECONDS, or DOLSOT_TOOL_TIMEOUT */
	struct toolchan_limits lim;   /* each cell's bounds */
	double wait_max;         /* HOST_WAIT_SECONDS, or DOLSOT_TOOL_WAIT */
	double waited;           /* this cell's host waiting, counted up to wait_max */
	struct toolchan chan;    /* this cell's intake */
};

void host_tools_init(struct host_tools *ht);
void host_tools_release(struct host_tools *ht);

/* --tool NAME=COMMAND and --tool-schema NAME=FILE (either order; a
 * schema names a tool some --tool declares, checked by
 * host_tools_check).  0, or -1 with the reason in err. */
int host_tools_add_command(struct host_tools *ht, const char *spec, char *err, size_t errlen);
int host_tools_add_schema(struct host_tools *ht, const char *spec, char *err, size_t errlen);
int host_tools_check(const struct host_tools *ht, char *err, size_t errlen);

/* --tools-fd N: ask the host on fd (kept open here, CLOEXEC) for its
 * tools within seconds.  0, or -1 with the reason in err. */
int host_tools_open_fd(struct host_tools *ht, int fd, double seconds, char *err,
                       size_t errlen);

/*
 * A tool answered by the fd host, declared by whoever serves that fd
 * (dolsot mcp's proxied servers and llm_query, mcp/relay.h): decl is
 * {"name", "description"?, "inputSchema"?, "outputSchema"?}, its name a
 * Python identifier not declared yet.  0, or -1 with the reason in err.
 */
int host_tools_add_hosted(struct host_tools *ht, const json_t *decl, char *err, size_t errlen);

/* Whether a tool of that name is declared. */
bool host_tools_has(const struct host_tools *ht, const char *name);

/* The fd host is fd from now on (a non-blocking, CLOEXEC socket this
 * process owns from now on): dolsot mcp's call child gets one each. */
void host_tools_use_fd(struct host_tools *ht, int fd);

/* Write all of p to the non-blocking fd by until.  0, or -1 (errno). */
int host_tools_write(int fd, const char *p, size_t n, const struct timespec *until);

/* Whether any tool is declared. */
bool host_tools_any(const struct host_tools *ht);

/* The declarations as one JSON array (malloc'd text), for the request. */
char *host_tools_declarations(const struct host_tools *ht);

/* Before a cell: a fresh channel intake (its bounds count per cell). */
void host_tools_begin(struct host_tools *ht);

/*
 * The call's deadline as the cell's clock has it: deadline moved on by the
 * time the cell waited on its host, up to wait_max (ht NULL: deadline).
 * A call path enforces this one while a channel is served.
 */
void host_tools_deadline(const struct host_tools *ht, const struct timespec *deadline,
                         struct timespec *out);

/* A new channel for a cell: chan[0] ours (non-blocking), chan[1] the
 * worker's, both CLOEXEC; the intake begins afresh.  0, or -1 with err. */
int host_tools_channel(struct host_tools *ht, int chan[2], char *err, size_t errlen);

/*
 * Read what the worker sent on chan (non-blocking) and answer every call
 * in it, each within HOST_CALL_SECONDS and never past the cell's deadline
 * (host_tools_deadline of the call's deadline).  Returns
 * 1 while the channel stays open, 0 when it is done (the worker closed
 * it, or an answer could not be written in time): the caller closes chan.
 * A cell that broke a bound is told why once; from then on what it sends
 * is read and dropped, and its next call fails with that reason.
 */
int host_tools_serve(struct host_tools *ht, int chan, const struct timespec *deadline);

#endif
