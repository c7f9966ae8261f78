/*
 * mcp_detach.h - detached cells over MCP (issue 38 item 1): what the
 * python tool with detach_after, and the wait, peek and cancel tools,
 * answer, read from a handle's record (call/detach.h).  Each gives a
 * tool result's parts: its text, its structured object (NULL: none) and
 * whether it is an error; mcp_tools.c makes the result of them.
 */
#ifndef DOLSOT_MCP_DETACH_H
#define DOLSOT_MCP_DETACH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "detach.h"
#include "options.h"

struct mcp_detach_parts {
	char *text;          /* malloc'd */
	size_t len;
	json_t *obj;         /* a new reference, or NULL */
	bool error;
};

enum mcp_detach_verb { MCP_DETACH_WAIT, MCP_DETACH_PEEK, MCP_DETACH_CANCEL };

/* r's answer after waiting up to seconds for its cell: its result when it
 * ended, else its handle's status.  0, or -1 with err. */
int mcp_detach_answer(struct detach_rec *r, double seconds, struct mcp_detach_parts *p,
                      char *err, size_t errlen);

/* The wait (up to seconds), peek or cancel tool on handle.  0, or -1
 * with err (an unknown handle, a failed syscall). */
int mcp_detach_verb(const struct settings *s, enum mcp_detach_verb verb, const char *handle,
                    double seconds, struct mcp_detach_parts *p, char *err, size_t errlen);

void mcp_detach_parts_release(struct mcp_detach_parts *p);

#endif
