/*
 * mcp.h - `dolsot mcp`: a Model Context Protocol server on stdin and
 * stdout, whose tools (python, list_sessions, reset_session) are calls of
 * the engine (repl.h) with the run flags the server was started with.
 * dolsot(1), MCP SERVER, documents the protocol side.
 */
#ifndef DOLSOT_MCP_H
#define DOLSOT_MCP_H

#include <stddef.h>

#include "opts.h"
#include "sandbox_plan.h"

/* Bytes one message (one line) may hold; a longer one is refused. */
#define MCP_MAX_MESSAGE ((size_t)16 << 20)
/* Calls that run at once (on different sessions), and that may wait. */
#define MCP_MAX_RUNNING 4
#define MCP_MAX_WAITING 64
/* Bytes of --describe's text the python tool's description carries. */
#define MCP_DESCRIBE_MAX 8192

struct mcp_setup {
	const struct settings *settings;     /* timeout: each call's cap */
	const struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	const struct sandbox_plan *plan;
	const char *describe_mounts;         /* as run_args has them */
	size_t describe_mounts_len;
	const char *version;                 /* dolsot's, for serverInfo */
};

/*
 * Serve until stdin ends (the calls in flight are answered first), the
 * client stops reading stdout, or SIGTERM, SIGINT or SIGHUP arrives (the
 * calls in flight are then cancelled).  Every process it started is gone
 * when it returns.  Returns 0, or -1 with a reason in err.
 */
int mcp_serve(const struct mcp_setup *m, char *err, size_t errlen);

#endif
