/*
 * mcp_tools.h - the tools `dolsot mcp` serves (python, list_sessions,
 * reset_session, history, undo, checkout,
 * export_notebook, wait, peek, cancel): one row each in a table that
 * tools/list and tools/call both read.  A row gives the tool's name,
 * title, description, the arguments it takes (its input schema), its
 * output schema (a $defs entry of schema/result.schema.json), how its
 * arguments are read and what runs it.  Each call goes through the
 * engine's door (repl.h, and call/timeline_cmd.h for a session's states),
 * in a child that mcp.c started; nothing here starts or waits for a
 * process.
 */
#ifndef DOLSOT_MCP_TOOLS_H
#define DOLSOT_MCP_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opts.h"
#include "sandbox_plan.h"

/* Bytes of --describe's text the python tool's description carries. */
#define MCP_DESCRIBE_MAX 8192

/* What the server was started with: each call runs with these. */
struct mcp_setup {
	const struct settings *settings;     /* timeout: each call's cap */
	const struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	const struct sandbox_plan *plan;
	const char *describe_mounts;         /* as run_args has them */
	size_t describe_mounts_len;
	const char *version;                 /* dolsot's, for serverInfo */
	struct host_tools *tools;            /* --tool's host tools (each call
	                                      * a process of its own); NULL: none */
	const char *const *proxies;          /* --proxy's commands (relay.h) */
	size_t n_proxies;
};

struct mcp_tool;
struct host_tools;

/* One tool call's arguments, read and checked; strings malloc'd. */
struct mcp_call {
	const struct mcp_tool *tool;
	char *session;              /* NULL: touches no session; "all": every one */
	char *code;
	char *fork;                 /* python: the session to start from, or NULL */
	char *call_id;              /* python: its call id (callrec.h), or NULL */
	bool replace;               /* with fork: over an existing session */
	bool minted;                /* session was made for this call */
	uint64_t state;             /* checkout: the state to go back to (undo: 0) */
	int format;                 /* export_notebook: its enum export_format */
	double timeout;             /* seconds it may run (0: list_sessions) */
	double timeout_asked;       /* python: a timeout argument above the server's
	                             * --timeout, which capped it; 0: none */
	int chunk_fd;               /* python: where its output goes while it
	                             * runs, a --json-stream line a chunk; -1 */
	bool detach;                /* python: detach_after was given */
	double detach_after;        /* its seconds */
	char *handle;               /* wait, peek, cancel: the handle */
	int task;                   /* enum mcp_task_mode */
};

/* A call of the tasks utility (mcp_tasks.h): python made a task (its
 * answer the task), or tasks/result (the wait tool, without a limit). */
enum mcp_task_mode { MCP_TASK_NONE, MCP_TASK_CREATE, MCP_TASK_RESULT };

/* Why a call is refused before it runs: a JSON-RPC error. */
struct mcp_refusal {
	int code;
	char msg[1024];
};

/*
 * Read the call of tool name with args (an object, or NULL for none) into
 * *c.  Returns 0 (release c with mcp_call_release), or -1 with r filled
 * and nothing held in c.
 */
int mcp_tools_read(const struct mcp_setup *m, const char *name, const json_t *args,
                   struct mcp_call *c, struct mcp_refusal *r);
void mcp_call_release(struct mcp_call *c);

/* Make the call c (read) one of the tasks utility's: mode an enum
 * mcp_task_mode.  0, or -1 with r (a tool that takes no task). */
int mcp_tools_task(struct mcp_call *c, int mode, struct mcp_refusal *r);

/*
 * Run the call c (in the child made for it) and return its MCP tool
 * result; structuredContent only when structured (revision 2025-06-18 on).
 * *cancelled is set when a signal stopped the call: there is no answer
 * then (NULL) and the session rolled back.  NULL without it: no memory.
 */
json_t *mcp_tools_run(const struct mcp_setup *m, bool structured, const struct mcp_call *c,
                      bool *cancelled);

/* A tool result with isError and one text block, the message. */
json_t *mcp_tools_error(bool structured, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * --describe's text for the python tool's description, cut at
 * MCP_DESCRIBE_MAX; malloc'd, or NULL.  It runs the engine: call it in a
 * child.
 */
char *mcp_tools_describe(const struct mcp_setup *m);

/*
 * Each toolbox imported alone, as a call would: one line for each that
 * does not, saying which and why ("toolbox 'M' (alias A) cannot be
 * imported: ..."); "" when every one does.  malloc'd, or NULL.  It runs
 * the engine: call it in a child.
 */
char *mcp_tools_check_toolboxes(const struct mcp_setup *m);

/*
 * The tools/list result for every row, with described (mcp_tools_describe's
 * text, or NULL when that failed) in the python tool's description; a new
 * reference, or NULL.
 */
json_t *mcp_tools_make(const struct mcp_setup *m, const char *described);

/* A copy of made (mcp_tools_make's) for a client: without titles and
 * output schemas unless structured.  A new reference, or NULL. */
json_t *mcp_tools_list(const json_t *made, bool structured);

#endif
