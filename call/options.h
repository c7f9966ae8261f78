/*
 * options.h - every option of dolsot, one row each: its flag (long, and
 * short if any), its DOLSOT_ variable, its MCP argument, how a value reads,
 * its bounds, its default and its help.  getopt's array (main.c), the
 * environment's reader (opts.c), the MCP tools' arguments and input
 * schemas (mcp_tools.c), --help, --print-config's environment and the
 * test of the man page's lists all read the table; adding an option is
 * one row here plus its use.  Also the settings the rows fill.
 */
#ifndef DOLSOT_OPTIONS_H
#define DOLSOT_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rlimits.h"
#include "store.h"

/* Settings after precedence: flag > environment > default. */
struct settings {
	double timeout;          /* seconds, > 0 */
	uint64_t max_output;     /* chars, 0 = no cap */
	double ttl_days;         /* >= 0, 0 = never reap */
	const char *cache_dir;   /* NULL = the default directory */
	bool server;             /* DOLSOT_SERVER=auto: use and start the warm server */
	double server_idle;      /* seconds an unused server lives */
	enum store_kind store;   /* DOLSOT_STORE: file, memory, redis://..., cmd:... */
	const char *store_spec;  /* --store or DOLSOT_STORE as given (NULL: file) */
	bool typecheck;          /* run the type gate before a cell */
	const char *ty_bin;      /* the type checker to run */
	bool carry;              /* carry interpreter and library state */
	bool sandbox;            /* --sandbox, DOLSOT_SANDBOX=1, or any --mount */
	bool live;               /* --live or DOLSOT_LIVE=1: the session's live process */
	uint64_t max_session;    /* DOLSOT_MAX_SESSION_SIZE: bytes a saved session may hold */
	bool trust_sandboxed;    /* DOLSOT_TRUST_SANDBOXED=1: load them without the sandbox */
	bool rw_code_mounts;     /* DOLSOT_ALLOW_RW_CODE_MOUNTS=1: rw --mount over code */
	const char *session_key; /* DOLSOT_SESSION_KEY: the key, or a key file's path
	                          * (begins with '/'); NULL: the store's key file */
	struct limits limits;    /* 0 = not set */
	uint64_t history;        /* DOLSOT_HISTORY: earlier states a session keeps */
	const char *ns;          /* --namespace, DOLSOT_NAMESPACE: the sessions' namespace
	                          * (NULL: store_name.h's default) */
};

#define DEFAULT_TIMEOUT 20.0
#define DEFAULT_MAX_OUTPUT 100000      /* the original dolsot's */
/* dolsot mcp's, unless DOLSOT_MAX_OUTPUT says: what a model's context
 * takes (README, "Output sized for a model") */
#define MCP_DEFAULT_MAX_OUTPUT 20000
#define DEFAULT_TTL_DAYS 7.0
#define DEFAULT_SERVER_IDLE 300.0
#define DEFAULT_TY_BIN "ty"
/* dolsot mcp's namespace when none is asked for. */
#define MCP_DEFAULT_NAMESPACE "mcp"
#define DEFAULT_MAX_SESSION_SIZE ((uint64_t)1 << 30)
#define DEFAULT_HISTORY 50
#define MAX_HISTORY 100000          /* histrec.h's HISTREC_STATES_MAX */

/* The rows; a flag's getopt value is its id (or its short flag). */
enum option_id {
	OPTION_TOOLBOX = 256, OPTION_SESSION, OPTION_FORK, OPTION_REPLACE, OPTION_CALL_ID,
	OPTION_TIMEOUT, OPTION_STORE, OPTION_SANDBOX, OPTION_MOUNT, OPTION_ENV,
	OPTION_MEMORY, OPTION_MAX_PROCS, OPTION_MAX_FILE_SIZE, OPTION_CPU_SECONDS,
	OPTION_RECURSION_LIMIT, OPTION_LIVE, OPTION_JSON, OPTION_JSON_STREAM, OPTION_DESCRIBE, OPTION_LIST,
	OPTION_RESET, OPTION_SERVER_START, OPTION_SERVER_STATUS, OPTION_SERVER_STOP,
	OPTION_MCP, OPTION_PRINT_CONFIG, OPTION_HELP, OPTION_VERSION, OPTION_CODE,
	OPTION_MAX_OUTPUT, OPTION_CACHE_DIR, OPTION_TTL_DAYS, OPTION_CARRY, OPTION_SERVER,
	OPTION_REDIS_PREFIX, OPTION_REDIS_LOCK_MS, OPTION_REDIS_RENEW_MS, OPTION_UNIT_CACHE_SIZE,
	OPTION_SERVER_IDLE,
	OPTION_LIVE_MAX, OPTION_LIVE_MEMORY_MB, OPTION_LIVE_IDLE, OPTION_MAX_SESSION_SIZE,
	OPTION_SESSION_KEY, OPTION_TRUST_SANDBOXED, OPTION_RW_CODE_MOUNTS, OPTION_TYPECHECK,
	OPTION_CHECKER_MAX_MB, OPTION_TY_BIN, OPTION_HISTORY_LIST, OPTION_UNDO,
	OPTION_CHECKOUT, OPTION_HISTORY, OPTION_STATE, OPTION_EXPORT, OPTION_FORMAT,
	OPTION_TOOL, OPTION_TOOL_SCHEMA, OPTION_TOOLS_FD, OPTION_TOOL_TIMEOUT,
	OPTION_TOOL_MAX_CALLS, OPTION_TOOL_WAIT, OPTION_NAMESPACE, OPTION_PROXY,
	OPTION_DETACH_AFTER, OPTION_WAIT, OPTION_PEEK, OPTION_CANCEL, OPTION_LIST_RUNNING,
	OPTION_HTTP, OPTION_AUTH_TOKENS, OPTION_HTTP_TIMEOUT,
};

/* How a row's variable (and MCP argument) reads, into its settings field. */
enum option_type {
	OPTION_T_NONE,       /* no value: a flag that is given or not (MCP: a boolean) */
	OPTION_T_TEXT,       /* a string, kept as given (MCP: a string) */
	OPTION_T_SECONDS,    /* opts_parse_seconds; MCP: a number above 0, at most the
	                      * field's value (the server's own) */
	OPTION_T_COUNT,      /* opts_parse_count */
	OPTION_T_DAYS,       /* opts_parse_nonneg */
	OPTION_T_SWITCH,     /* 0 or 1 */
	OPTION_T_AUTO_OFF,   /* auto (true) or off */
	OPTION_T_LIMIT,      /* opts_parse_limit of the row's limit kind */
	OPTION_T_STORE,      /* store_spec_parse, after the rest (memory needs the server) */
	OPTION_T_KEY,        /* a session key, or a key file's absolute path */
	OPTION_T_ELSEWHERE,  /* read by the module that uses it, when it does */
	OPTION_T_POSITIVE,   /* a whole number from 1 (MCP: an integer, at least 1) */
};

#define OPTION_NO_FIELD ((size_t)-1)

struct option_row {
	enum option_id id;
	const char *flag;        /* --FLAG without the dashes, or NULL */
	char short_flag;         /* -X, or 0 */
	const char *command;     /* a word in --help's list that is no flag ("mcp") */
	const char *arg;         /* the flag's value in --help ("SECONDS"); NULL: none */
	const char *env;         /* its DOLSOT_ variable, or NULL */
	const char *mcp;         /* its MCP argument, or NULL */
	enum option_type type;
	size_t field;            /* offsetof(struct settings, ...), or OPTION_NO_FIELD */
	enum limit_kind limit;   /* OPTION_T_LIMIT: which */
	double dflt;             /* a number's or a switch's default (a limit's: 0, unset) */
	uint64_t max;            /* OPTION_T_COUNT: the largest value (0: no bound) */
	const char *dflt_text;   /* a text's default, or NULL */
	const char *want;        /* a bad variable's message: "expected WANT" */
	const char *help;        /* --help's text; '\n' starts an indented line */
	const char *mcp_help;    /* the MCP argument's description */
	const char *mcp_want;    /* a bad MCP argument's message: "must be WANT" */
};

/* Rows the table may hold (a flag's getopt array is sized by it). */
#define OPTIONS_MAX 80

/* The table, in --help's order (the man page's), then the variables that
 * have no flag, in the man page's ENVIRONMENT order. */
extern const struct option_row options_table[];
extern const size_t options_count;

/* The row of id; never NULL for an id of the enum. */
const struct option_row *options_row(enum option_id id);

/* The row whose variable is name, or NULL. */
const struct option_row *options_by_env(const char *name);

/*
 * getopt_long's array for every row with a flag, ended by a zero row, into
 * out (room for OPTIONS_MAX + 1), and its short options ("+:hV") into
 * shorts (room for OPTIONS_MAX + 3).
 */
void options_getopt(struct option *out, char *shorts);

/* --help's list of flags, one or more lines each, onto out; 0 or -1. */
int options_help(FILE *out);

#endif
