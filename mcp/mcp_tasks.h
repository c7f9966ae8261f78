/*
 * mcp_tasks.h - the 2025-11-25 tasks utility over detached cells: a
 * python call with a "task" runs detached at once and its handle is the
 * task's id; tasks/get, tasks/cancel and tasks/list read the handles'
 * records (call/detach.h), tasks/result is the wait tool without a limit.
 */
#ifndef DOLSOT_MCP_TASKS_H
#define DOLSOT_MCP_TASKS_H

#include <jansson.h>
#include <stddef.h>

#include "detach.h"
#include "options.h"

/* The revision that has tasks. */
#define MCP_TASKS_SINCE "2025-11-25"
/* Milliseconds a client is asked to wait between two tasks/get. */
#define MCP_TASKS_POLL_MS 500

/* The server's tasks capability (a new reference). */
json_t *mcp_tasks_caps(void);

/* r's Task object (taskId, status, ttl, createdAt, lastUpdatedAt,
 * pollInterval); a new reference, or NULL. */
json_t *mcp_tasks_task(const struct detach_rec *r, const struct settings *s);

/* tasks/get, tasks/cancel or tasks/list with params: its result, or NULL
 * with a JSON-RPC error's *code and message in err. */
json_t *mcp_tasks_answer(const struct settings *s, const char *method, const json_t *params,
                         int *code, char *err, size_t errlen);

#endif
