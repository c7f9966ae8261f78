/*
 * mcp_tasks.c - the tasks utility (MCP 2025-11-25) on detached cells: a
 * task is a handle (see mcp_tasks.h).
 */
#include "mcp_tasks.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jsonrpc.h"

json_t *mcp_tasks_caps(void)
{
	return json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools",
	                 "call");
}

static const char *task_status(const struct detach_rec *r)
{
	switch (r->state) {
	case DETACH_RUNNING:
		return "working";
	case DETACH_DONE:
		return "completed";
	case DETACH_CANCELLED:
		return "cancelled";
	case DETACH_LOST:
	default:
		return "failed";
	}
}

static void iso(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *mcp_tasks_task(const struct detach_rec *r, const struct settings *s)
{
	char created[32], updated[32], path[PATH_MAX + 340];
	struct stat st;
	time_t last = (time_t)r->started;
	json_t *ttl = s->ttl_days > 0 ? json_real(s->ttl_days * 86400000.0) : json_null();

	snprintf(path, sizeof(path), "%s/result", r->dir);
	if (r->state != DETACH_RUNNING && stat(path, &st) == 0)
		last = st.st_mtime;
	iso((time_t)r->started, created, sizeof(created));
	iso(last, updated, sizeof(updated));
	return json_pack("{s:s, s:s, s:o, s:s, s:s, s:i}", "taskId", r->handle, "status",
	                 task_status(r), "ttl", ttl, "createdAt", created, "lastUpdatedAt",
	                 updated, "pollInterval", MCP_TASKS_POLL_MS);
}

static json_t *task_list(const struct settings *s, int *code, char *err, size_t errlen)
{
	struct detach_rec *v;
	size_t n;
	json_t *list;

	if (detach_running(s, &v, &n, err, errlen) < 0) {
		*code = JSONRPC_INTERNAL_ERROR;
		return NULL;
	}
	list = json_array();
	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, mcp_tasks_task(&v[i], s));
	free(v);
	return json_pack("{s:o}", "tasks", list);
}

json_t *mcp_tasks_answer(const struct settings *s, const char *method, const json_t *params,
                         int *code, char *err, size_t errlen)
{
	const char *id = json_string_value(json_object_get(params, "taskId"));
	struct detach_rec r;
	bool cancel = strcmp(method, "tasks/cancel") == 0;

	*code = JSONRPC_INVALID_PARAMS;
	if (strcmp(method, "tasks/list") == 0)
		return task_list(s, code, err, errlen);
	if (!cancel && strcmp(method, "tasks/get") != 0) {
		*code = JSONRPC_METHOD_NOT_FOUND;
		snprintf(err, errlen, "method not found: '%.100s'", method);
		return NULL;
	}
	if (!id) {
		snprintf(err, errlen, "%s needs \"taskId\", a string", method);
		return NULL;
	}
	if (detach_open(s, id, &r, err, errlen) < 0)
		return NULL;
	if (cancel && r.state != DETACH_RUNNING) {
		snprintf(err, errlen, "task %s has already ended (%s): it cannot be cancelled",
		         id, task_status(&r));
		return NULL;
	}
	if (cancel && detach_cancel(&r, err, errlen) < 0) {
		*code = JSONRPC_INTERNAL_ERROR;
		return NULL;
	}
	return mcp_tasks_task(&r, s);
}
