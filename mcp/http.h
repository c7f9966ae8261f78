/*
 * http.h - `dolsot mcp --http ADDR:PORT|PATH`: MCP's Streamable HTTP
 * transport at the endpoint /mcp (libmicrohttpd does the HTTP).  Each MCP
 * session is a stdio server of its own (mcp_serve in a child, on a socket
 * pair): this front only carries messages between the HTTP requests and
 * the session's server, so the protocol core is the same on both
 * transports.
 */
#ifndef DOLSOT_HTTP_H
#define DOLSOT_HTTP_H

#include <stddef.h>

#include "mcp_tools.h"

/* Sessions one server keeps, connections it accepts, and the seconds a
 * connection may take to send its request's headers and body, or stay
 * idle, unless --http-timeout says otherwise (at most the _MAX). */
#define MCP_HTTP_MAX_SESSIONS 256
#define MCP_HTTP_MAX_CONNECTIONS 512
#define MCP_HTTP_HEADER_TIMEOUT 10
#define MCP_HTTP_TIMEOUT_MAX 3600
/* SSE streams a session keeps, once their connection is gone and nothing
 * more is to come on them, for a client to resume (Last-Event-ID). */
#define MCP_HTTP_STREAMS_KEPT 8
/* Seconds a session no request names, with nothing open or running, is
 * kept before it is ended (any server takes its id again). */
#define MCP_HTTP_SESSION_IDLE 1800

/*
 * Serve on listen (HOST:PORT, a numeric IPv4 or [IPv6] address, port 0 for
 * any free one; or a unix socket's path, starting with '/') until SIGTERM,
 * SIGINT or SIGHUP.  Without tokens (the --auth-tokens file, auth.h; NULL:
 * none) only a loopback address or a unix socket is taken; with it every
 * request needs a tenant's bearer token, and a tenant's sessions live in
 * namespace NS.TENANT (NS the server's; TENANT alone when NS is the
 * default).  timeout: the header timeout in seconds (0: the default).
 * Says "dolsot mcp: listening on URL" on stderr once bound.  Returns 0, or
 * -1 with a reason in err.
 */
int mcp_http_serve(const struct mcp_setup *m, const char *listen, const char *tokens,
                   unsigned timeout, char *err, size_t errlen);

#endif
