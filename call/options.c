/*
 * options.c - the table of every option (options.h), and the two readers
 * that are only the table: getopt's array and --help's list.
 */
#include "options.h"

#include <string.h>

#define FIELD(f) offsetof(struct settings, f)
#define LIMIT(k) offsetof(struct settings, limits.v[k])
/* A row with no settings field, no limit and no default. */
#define NO_FIELD .field = OPTION_NO_FIELD

/* The column --help's texts begin at, after two spaces of indent. */
#define HELP_INDENT 26

const struct option_row options_table[] = {
	{ .id = OPTION_TOOLBOX, .flag = "toolbox", .arg = "MODULE:ALIAS", NO_FIELD,
	  .help = "import MODULE in the worker as ALIAS (repeatable)" },
	{ .id = OPTION_TOOL, .flag = "tool", .arg = "NAME=COMMAND", NO_FIELD,
	  .help = "a host tool the cell calls as NAME(...): COMMAND runs per\n"
	          "call, JSON arguments on stdin, JSON result on stdout\n"
	          "(repeatable; see Host tools in dolsot(1))" },
	{ .id = OPTION_TOOL_SCHEMA, .flag = "tool-schema", .arg = "NAME=FILE", NO_FIELD,
	  .help = "the JSON Schema of tool NAME's arguments, or its whole\n"
	          "declaration (description, inputSchema, outputSchema)" },
	{ .id = OPTION_TOOLS_FD, .flag = "tools-fd", .arg = "N", NO_FIELD,
	  .help = "host tools from the process that started dolsot,\n"
	          "JSON-RPC 2.0 lines on inherited fd N" },
	{ .id = OPTION_PROXY, .flag = "proxy", .arg = "COMMAND", NO_FIELD,
	  .help = "dolsot mcp: run COMMAND (sh -c), an MCP server on stdio,\n"
	          "and offer its tools to cells as functions (repeatable;\n"
	          "last, --proxy -- CMD ARGS... up to the next --proxy)" },
	{ .id = OPTION_TOOL_TIMEOUT, .env = "DOLSOT_TOOL_TIMEOUT", .type = OPTION_T_ELSEWHERE,
	  NO_FIELD },
	{ .id = OPTION_TOOL_MAX_CALLS, .env = "DOLSOT_TOOL_MAX_CALLS",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_TOOL_WAIT, .env = "DOLSOT_TOOL_WAIT", .type = OPTION_T_ELSEWHERE,
	  NO_FIELD },
	{ .id = OPTION_SESSION, .flag = "session", .arg = "ID", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "the session to run in (required to run code)",
	  .mcp_help = "the session to run in (letters, digits, '.', '_', '-'); omit it for a "
	              "new one",
	  .mcp_want = "a string" },
	{ .id = OPTION_FORK, .flag = "fork", .arg = "SRC", .mcp = "fork",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "start the session as a copy of session SRC (it must\n"
	          "not exist yet); then run CODE, if given",
	  .mcp_help = "start `session` as a copy of this session's state, then run the code "
	              "in it",
	  .mcp_want = "a string: the session to copy" },
	{ .id = OPTION_REPLACE, .flag = "replace", .mcp = "replace", NO_FIELD,
	  .help = "with --fork: replace the session if it exists",
	  .mcp_help = "with fork: replace `session` if it exists (otherwise that is an error)",
	  .mcp_want = "true or false" },
	{ .id = OPTION_CALL_ID, .flag = "call-id", .arg = "ID", .mcp = "call_id",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "name this call: a call repeating an ID the session\n"
	          "saved says that call's result again, running nothing",
	  .mcp_help = "names this call so that a retry is safe: a call repeating an id the "
	              "session already committed returns that call's recorded result without "
	              "running the code again (1-128 of A-Z a-z 0-9 . _ : -; needs session)",
	  .mcp_want = "a string" },
	{ .id = OPTION_TIMEOUT, .flag = "timeout", .arg = "SECONDS", .env = "DOLSOT_TIMEOUT",
	  .mcp = "timeout", .type = OPTION_T_SECONDS, .field = FIELD(timeout),
	  .dflt = DEFAULT_TIMEOUT, .want = "a positive number of seconds",
	  .help = "wall-clock limit for the call (default $DOLSOT_TIMEOUT or 20)",
	  .mcp_help = "seconds the call may run (capped by the server's --timeout; the "
	              "result's warnings say when it was)",
	  .mcp_want = "a positive number of seconds" },
	{ .id = OPTION_STORE, .flag = "store", .arg = "STORE", .env = "DOLSOT_STORE",
	  .type = OPTION_T_STORE, .field = FIELD(store_spec),
	  .help = "where sessions live, with any form: file (default), memory,\n"
	          "redis://[user:password@]host[:port][/db] or\n"
	          "cmd:PROGRAM [ARGS] ($DOLSOT_STORE)" },
	{ .id = OPTION_NAMESPACE, .flag = "namespace", .arg = "NAME", .env = "DOLSOT_NAMESPACE",
	  .type = OPTION_T_TEXT, .field = FIELD(ns),
	  .help = "the sessions' namespace: ids, --list-sessions, --reset all\n"
	          "and the TTL stay within it (default: default; for\n"
	          "dolsot mcp: mcp; $DOLSOT_NAMESPACE)" },
	{ .id = OPTION_SANDBOX, .flag = "sandbox", .env = "DOLSOT_SANDBOX",
	  .type = OPTION_T_SWITCH, .field = FIELD(sandbox), .want = "1 (on) or 0 (off)",
	  .help = "run the cell isolated: no host files, network or\n"
	          "environment beyond what is granted ($DOLSOT_SANDBOX=1)" },
	{ .id = OPTION_MOUNT, .flag = "mount", .arg = "HOST:VIRTUAL[:MODE]", NO_FIELD,
	  .help = "show HOST at VIRTUAL in the sandbox; MODE is ro (default),\n"
	          "rw or overlay (repeatable; implies --sandbox)" },
	{ .id = OPTION_ENV, .flag = "env", .arg = "NAME[=VALUE]", NO_FIELD,
	  .help = "pass NAME through, or set it, for the cell (repeatable)" },
	{ .id = OPTION_MEMORY, .flag = "memory", .arg = "SIZE", .env = "DOLSOT_MEMORY",
	  .type = OPTION_T_LIMIT, .field = LIMIT(LIMIT_MEMORY), .limit = LIMIT_MEMORY,
	  .help = "memory limit, like 512M (K, M, G; $DOLSOT_MEMORY)" },
	{ .id = OPTION_MAX_PROCS, .flag = "max-procs", .arg = "N", .env = "DOLSOT_MAX_PROCS",
	  .type = OPTION_T_LIMIT, .field = LIMIT(LIMIT_MAX_PROCS), .limit = LIMIT_MAX_PROCS,
	  .help = "processes and threads at once ($DOLSOT_MAX_PROCS)" },
	{ .id = OPTION_MAX_FILE_SIZE, .flag = "max-file-size", .arg = "SIZE",
	  .env = "DOLSOT_MAX_FILE_SIZE", .type = OPTION_T_LIMIT,
	  .field = LIMIT(LIMIT_MAX_FILE_SIZE), .limit = LIMIT_MAX_FILE_SIZE,
	  .help = "largest file the cell may write ($DOLSOT_MAX_FILE_SIZE)" },
	{ .id = OPTION_CPU_SECONDS, .flag = "cpu-seconds", .arg = "N",
	  .env = "DOLSOT_CPU_SECONDS", .type = OPTION_T_LIMIT,
	  .field = LIMIT(LIMIT_CPU_SECONDS), .limit = LIMIT_CPU_SECONDS,
	  .help = "CPU time limit ($DOLSOT_CPU_SECONDS)" },
	{ .id = OPTION_RECURSION_LIMIT, .flag = "recursion-limit", .arg = "N",
	  .env = "DOLSOT_RECURSION_LIMIT", .type = OPTION_T_LIMIT,
	  .field = LIMIT(LIMIT_RECURSION), .limit = LIMIT_RECURSION,
	  .help = "Python frames the cell may nest ($DOLSOT_RECURSION_LIMIT)" },
	{ .id = OPTION_LIVE, .flag = "live", .env = "DOLSOT_LIVE", .type = OPTION_T_SWITCH,
	  .field = FIELD(live), .want = "1 (on) or 0 (off)",
	  .help = "keep the session in a live process of the warm server:\n"
	          "objects that cannot be saved survive ($DOLSOT_LIVE=1)" },
	{ .id = OPTION_JSON, .flag = "json", NO_FIELD,
	  .help = "print one JSON object instead of the text contract" },
	{ .id = OPTION_JSON_STREAM, .flag = "json-stream", NO_FIELD,
	  .help = "as --json, after one JSON line per chunk of output\n"
	          "while the cell runs: stream, seq, text, dropped" },
	{ .id = OPTION_DETACH_AFTER, .flag = "detach-after", .arg = "SECONDS",
	  .mcp = "detach_after", .type = OPTION_T_DAYS, NO_FIELD,
	  .help = "if the cell still runs after SECONDS, return a handle\n"
	          "(exit 75) and let it run on under its --timeout",
	  .mcp_help = "seconds to wait for the cell: if it still runs then, the call returns "
	              "a handle at once and the cell runs on under its timeout (its session "
	              "locked, committed when it completes); pass the handle to wait, peek "
	              "or cancel",
	  .mcp_want = "a number of seconds from 0" },
	{ .id = OPTION_DESCRIBE, .flag = "describe", NO_FIELD,
	  .help = "describe the toolboxes, held names, mounts and limits\n"
	          "a cell gets; runs no cell, changes nothing" },
	{ .id = OPTION_LIST, .flag = "list-sessions", NO_FIELD,
	  .help = "list sessions: id, size in bytes, last used (UTC)" },
	{ .id = OPTION_RESET, .flag = "reset", .arg = "ID|all", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "forget one session, or every session",
	  .mcp_help = "the session id, or \"all\"",
	  .mcp_want = "an id, or \"all\"" },
	{ .id = OPTION_HISTORY_LIST, .flag = "history", .arg = "ID", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "list the session's kept states: number, time, status,\n"
	          "bytes written, names changed, the cell's first line",
	  .mcp_help = "the session whose kept states to list",
	  .mcp_want = "a session id" },
	{ .id = OPTION_UNDO, .flag = "undo", .arg = "ID", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "move the session back to the state before its last\n"
	          "commit (itself a commit: an undo can be undone)",
	  .mcp_help = "the session to move back one state",
	  .mcp_want = "a session id" },
	{ .id = OPTION_CHECKOUT, .flag = "checkout", .arg = "ID@N", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "move the session to its kept state N (a commit too)",
	  .mcp_help = "the session to move to one of its kept states",
	  .mcp_want = "a session id" },
	{ .id = OPTION_EXPORT, .flag = "export", .arg = "ID", .mcp = "session",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "write the session's kept states to stdout as a notebook:\n"
	          "each cell, its outputs, the cells rolled back, the moves",
	  .mcp_help = "the session whose history to export",
	  .mcp_want = "a session id" },
	{ .id = OPTION_FORMAT, .flag = "format", .arg = "FORMAT", .mcp = "format",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .help = "with --export: ipynb (default, nbformat 4.5), py (a script\n"
	          "of # %% cells) or md (a report)",
	  .mcp_help = "ipynb (a Jupyter notebook, the default), py (a script of # %% cells) "
	              "or md (a markdown report)",
	  .mcp_want = "\"ipynb\", \"py\" or \"md\"" },
	{ .id = OPTION_WAIT, .flag = "wait", .arg = "HANDLE", .mcp = "handle",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .mcp_help = "the handle a python call with detach_after returned",
	  .mcp_want = "a handle: 32 hexadecimal digits",
	  .help = "wait for a detached cell (up to --timeout, if given)\n"
	          "and print its result as the call would have" },
	{ .id = OPTION_PEEK, .flag = "peek", .arg = "HANDLE", .mcp = "handle",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .mcp_help = "the handle a python call with detach_after returned",
	  .mcp_want = "a handle: 32 hexadecimal digits",
	  .help = "a detached cell's output so far" },
	{ .id = OPTION_CANCEL, .flag = "cancel", .arg = "HANDLE", .mcp = "handle",
	  .type = OPTION_T_TEXT, NO_FIELD,
	  .mcp_help = "the handle a python call with detach_after returned",
	  .mcp_want = "a handle: 32 hexadecimal digits",
	  .help = "stop a detached cell; its session is left unchanged" },
	{ .id = OPTION_LIST_RUNNING, .flag = "list-running", NO_FIELD,
	  .help = "list detached cells still running: handle, session,\n"
	          "started (UTC)" },
	{ .id = OPTION_SERVER_START, .flag = "server-start", NO_FIELD,
	  .help = "start the warm server now and wait until it is ready" },
	{ .id = OPTION_SERVER_STATUS, .flag = "server-status", NO_FIELD,
	  .help = "describe the warm server of this store" },
	{ .id = OPTION_SERVER_STOP, .flag = "server-stop", NO_FIELD,
	  .help = "stop the warm server of this store" },
	{ .id = OPTION_MCP, .command = "mcp", NO_FIELD,
	  .help = "serve the Model Context Protocol on stdin and stdout,\n"
	          "each tool call run with the flags given (see dolsot(1))" },
	{ .id = OPTION_PRINT_CONFIG, .flag = "print-config", .arg = "HOST", NO_FIELD,
	  .help = "with mcp: print the configuration snippet HOST (claude,\n"
	          "codex or generic) needs to start this server" },
	{ .id = OPTION_HTTP, .flag = "http", .arg = "ADDR", NO_FIELD,
	  .help = "with mcp: serve MCP's Streamable HTTP at ADDR's /mcp\n"
	          "(HOST:PORT on loopback, port 0 for any free one, or a unix\n"
	          "socket's path) instead of stdin and stdout" },
	{ .id = OPTION_AUTH_TOKENS, .flag = "auth-tokens", .arg = "FILE", NO_FIELD,
	  .help = "with mcp --http: the tenants' bearer tokens, a line\n"
	          "'NAME TOKEN' each (mode 0600); any address may then be bound" },
	{ .id = OPTION_HTTP_TIMEOUT, .flag = "http-timeout", .arg = "S", NO_FIELD,
	  .help = "with mcp --http: seconds a connection may take to send\n"
	          "its request, or stay idle (1 to 3600; default 10)" },
	{ .id = OPTION_HELP, .flag = "help", .short_flag = 'h', NO_FIELD,
	  .help = "show this help" },
	{ .id = OPTION_VERSION, .flag = "version", .short_flag = 'V', NO_FIELD,
	  .help = "show the version" },
	/* The cell: an argument of the command, an MCP tool's too. */
	{ .id = OPTION_CODE, .mcp = "code", .type = OPTION_T_TEXT, NO_FIELD,
	  .mcp_help = "the Python code of the cell",
	  .mcp_want = "a string of Python code, not empty and without NUL characters" },
	/* A kept state's number: --checkout ID@N's N, an MCP tool's argument. */
	{ .id = OPTION_STATE, .mcp = "state", .type = OPTION_T_POSITIVE, NO_FIELD,
	  .mcp_help = "the number of the kept state to go back to, as history lists it",
	  .mcp_want = "a whole number from 1 (a state history lists)" },
	/* Variables only. */
	{ .id = OPTION_MAX_OUTPUT, .env = "DOLSOT_MAX_OUTPUT", .type = OPTION_T_COUNT,
	  .field = FIELD(max_output), .dflt = DEFAULT_MAX_OUTPUT,
	  .want = "a whole number of characters (0 = no cap)" },
	{ .id = OPTION_CACHE_DIR, .env = "DOLSOT_CACHE_DIR", .type = OPTION_T_TEXT,
	  .field = FIELD(cache_dir) },
	{ .id = OPTION_TTL_DAYS, .env = "DOLSOT_SESSION_TTL_DAYS", .type = OPTION_T_DAYS,
	  .field = FIELD(ttl_days), .dflt = DEFAULT_TTL_DAYS,
	  .want = "a number of days, 0 or more (0 = never reap)" },
	{ .id = OPTION_CARRY, .env = "DOLSOT_CARRY", .type = OPTION_T_SWITCH,
	  .field = FIELD(carry), .dflt = 1, .want = "0 (off) or 1 (on)" },
	{ .id = OPTION_SERVER, .env = "DOLSOT_SERVER", .type = OPTION_T_AUTO_OFF,
	  .field = FIELD(server), .dflt = 1, .want = "auto or off" },
	{ .id = OPTION_REDIS_PREFIX, .env = "DOLSOT_REDIS_PREFIX",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_REDIS_LOCK_MS, .env = "DOLSOT_REDIS_LOCK_MS",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_REDIS_RENEW_MS, .env = "DOLSOT_REDIS_RENEW_MS",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_UNIT_CACHE_SIZE, .env = "DOLSOT_UNIT_CACHE_SIZE",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_SERVER_IDLE, .env = "DOLSOT_SERVER_IDLE", .type = OPTION_T_SECONDS,
	  .field = FIELD(server_idle), .dflt = DEFAULT_SERVER_IDLE,
	  .want = "a positive number of seconds" },
	{ .id = OPTION_LIVE_MAX, .env = "DOLSOT_LIVE_MAX", .type = OPTION_T_ELSEWHERE,
	  NO_FIELD },
	{ .id = OPTION_LIVE_MEMORY_MB, .env = "DOLSOT_LIVE_MEMORY_MB",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_LIVE_IDLE, .env = "DOLSOT_LIVE_IDLE", .type = OPTION_T_ELSEWHERE,
	  NO_FIELD },
	{ .id = OPTION_MAX_SESSION_SIZE, .env = "DOLSOT_MAX_SESSION_SIZE",
	  .type = OPTION_T_LIMIT, .field = FIELD(max_session), .limit = LIMIT_MAX_FILE_SIZE,
	  .dflt = (double)DEFAULT_MAX_SESSION_SIZE },
	{ .id = OPTION_SESSION_KEY, .env = "DOLSOT_SESSION_KEY", .type = OPTION_T_KEY,
	  .field = FIELD(session_key) },
	{ .id = OPTION_TRUST_SANDBOXED, .env = "DOLSOT_TRUST_SANDBOXED",
	  .type = OPTION_T_SWITCH, .field = FIELD(trust_sandboxed),
	  .want = "0 (refuse) or 1 (load them)" },
	{ .id = OPTION_RW_CODE_MOUNTS, .env = "DOLSOT_ALLOW_RW_CODE_MOUNTS",
	  .type = OPTION_T_SWITCH, .field = FIELD(rw_code_mounts),
	  .want = "0 (refuse) or 1 (allow)" },
	{ .id = OPTION_TYPECHECK, .env = "DOLSOT_TYPECHECK", .type = OPTION_T_SWITCH,
	  .field = FIELD(typecheck), .dflt = 1,
	  .want = "0 (skip the type gate) or 1 (run it)" },
	{ .id = OPTION_CHECKER_MAX_MB, .env = "DOLSOT_CHECKER_MAX_MB",
	  .type = OPTION_T_ELSEWHERE, NO_FIELD },
	{ .id = OPTION_TY_BIN, .env = "DOLSOT_TY_BIN", .type = OPTION_T_TEXT,
	  .field = FIELD(ty_bin), .dflt_text = DEFAULT_TY_BIN },
	{ .id = OPTION_HISTORY, .env = "DOLSOT_HISTORY", .type = OPTION_T_COUNT,
	  .field = FIELD(history), .dflt = DEFAULT_HISTORY, .max = MAX_HISTORY,
	  .want = "a whole number of earlier states, 0 (keep none) to 100000" },
};

const size_t options_count = sizeof(options_table) / sizeof(options_table[0]);
_Static_assert(sizeof(options_table) / sizeof(options_table[0]) <= OPTIONS_MAX,
               "OPTIONS_MAX holds every row");

const struct option_row *options_row(enum option_id id)
{
	for (size_t i = 0; i < options_count; i++)
		if (options_table[i].id == id)
			return &options_table[i];
	return NULL;
}

const struct option_row *options_by_env(const char *name)
{
	for (size_t i = 0; i < options_count; i++)
		if (options_table[i].env && strcmp(options_table[i].env, name) == 0)
			return &options_table[i];
	return NULL;
}

void options_getopt(struct option *out, char *shorts)
{
	size_t n = 0, s = 0;

	shorts[s++] = '+';      /* stop at CODE: a cell may begin with '-' */
	shorts[s++] = ':';      /* a missing value is ':', told apart from '?' */
	for (size_t i = 0; i < options_count; i++) {
		const struct option_row *o = &options_table[i];

		if (!o->flag)
			continue;
		out[n++] = (struct option){ o->flag, o->arg ? required_argument : no_argument,
		                            NULL, o->short_flag ? o->short_flag : (int)o->id };
		if (o->short_flag)
			shorts[s++] = o->short_flag;
	}
	out[n] = (struct option){ NULL, 0, NULL, 0 };
	shorts[s] = '\0';
}

/* One row of --help: its flags and value, then its text, each line after
 * the first at HELP_INDENT; the text starts on a line of its own when the
 * flags leave no room. */
static int help_row(const struct option_row *o, FILE *out)
{
	char left[64];
	const char *t = o->help;
	int n;

	if (o->command)
		n = snprintf(left, sizeof(left), "%s", o->command);
	else if (o->short_flag)
		n = snprintf(left, sizeof(left), "-%c, --%s", o->short_flag, o->flag);
	else
		n = snprintf(left, sizeof(left), "--%s%s%s", o->flag, o->arg ? " " : "",
		             o->arg ? o->arg : "");
	if (fprintf(out, "  %s", left) < 0)
		return -1;
	if (n + 2 + 2 > HELP_INDENT) {
		if (fprintf(out, "\n%*s", HELP_INDENT, "") < 0)
			return -1;
	} else if (fprintf(out, "%*s", HELP_INDENT - 2 - n, "") < 0) {
		return -1;
	}
	for (;;) {
		size_t len = strcspn(t, "\n");

		if (fprintf(out, "%.*s\n", (int)len, t) < 0)
			return -1;
		if (!t[len])
			return 0;
		t += len + 1;
		if (fprintf(out, "%*s", HELP_INDENT, "") < 0)
			return -1;
	}
}

int options_help(FILE *out)
{
	for (size_t i = 0; i < options_count; i++)
		if (options_table[i].help && help_row(&options_table[i], out) < 0)
			return -1;
	return 0;
}
