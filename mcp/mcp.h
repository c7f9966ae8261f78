/*
 * mcp.h - `dolsot mcp`: a Model Context Protocol server on stdin and
 * stdout, whose tools (python, list_sessions, reset_session) are calls of
 * the engine (repl.h) with the run flags the server was started with
 * (struct mcp_setup, mcp_tools.h).
 * dolsot(1), MCP SERVER, documents the protocol side.
 */
#ifndef DOLSOT_MCP_H
#define DOLSOT_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp_tools.h"

/* Bytes one message (one line) may hold; a longer one is refused. */
#define MCP_MAX_MESSAGE ((size_t)16 << 20)
/* Calls that run at once (on different sessions), and that may wait. */
#define MCP_MAX_RUNNING 4
#define MCP_MAX_WAITING 64
/*
 * Serve until stdin ends (the calls in flight are answered first), the
 * client stops reading stdout, or SIGTERM, SIGINT or SIGHUP arrives (the
 * calls in flight are then cancelled).  Every process it started is gone
 * when it returns.  Returns 0, or -1 with a reason in err.
 */
int mcp_serve(const struct mcp_setup *m, char *err, size_t errlen);
/* Whether v is one of the protocol revisions the server speaks. */
bool mcp_version_known(const char *v);

#endif
