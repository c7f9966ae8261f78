/*
 * main.c - the dolsot command: parse the call, hand it to the engine, print
 * the result, exit with its code.  The only file that prints or exits.
 *
 * Its rooms: call/ (options and settings, the --json rendering) and mcp/
 * (`dolsot mcp`); the call itself goes through the engine's door, repl.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "callrec.h"
#include "checkd.h"
#include "detach.h"
#include "display_files.h"
#include "hosttools.h"
#include "export.h"
#include "http.h"
#include "mcp.h"
#include "mcp_config.h"
#include "opts.h"
#include "output.h"
#include "output_json.h"
#include "repl.h"
#include "server.h"
#include "stopsig.h"
#include "stream.h"
#include "timeline_cmd.h"
#include "timeline_out.h"
#include "store.h"
#include "user_dir.h"
#include "warm_proto.h"
#include "zygote.h"
#include "utc.h"

#define MAX_CODE_BYTES ((size_t)256 << 20)
/* Seconds between --json-stream's rounds of chunks (the first goes at once). */
#define STREAM_EVERY 0.1

static const char usage_text[] =
	"usage: dolsot [--toolbox MODULE:ALIAS]... [--tool NAME=COMMAND]...\n"
	"              [--tool-schema NAME=FILE]... [--tools-fd N]\n"
	"              --session ID [--fork SRC [--replace]]\n"
	"              [--call-id ID] [--timeout SECONDS] [--sandbox] [--mount HOST:VIRTUAL[:MODE]]...\n"
	"              [--env NAME[=VALUE]]... [--memory SIZE] [--max-procs N]\n"
	"              [--max-file-size SIZE] [--cpu-seconds N] [--recursion-limit N]\n"
	"              [--live] [--json | --json-stream] [--detach-after SECONDS] [CODE]\n"
	"       dolsot [--toolbox MODULE:ALIAS]... [--session ID] [--sandbox]\n"
	"              [--mount HOST:VIRTUAL[:MODE]]... [--json] --describe\n"
	"       dolsot --list-sessions [--store STORE] [--namespace NAME] [--json]\n"
	"       dolsot --reset ID|all [--store STORE] [--namespace NAME] [--json]\n"
	"       dolsot --history ID [--store STORE] [--json]\n"
	"       dolsot --undo ID | --checkout ID@N [--store STORE] [--json]\n"
	"       dolsot --export ID [--format ipynb|py|md] [--store STORE]\n"
	"       dolsot --server-start [--toolbox MODULE:ALIAS]... [--timeout SECONDS] [--sandbox]\n"
	"       dolsot --wait HANDLE [--timeout SECONDS] [--json]\n"
	"       dolsot --peek HANDLE | --cancel HANDLE | --list-running [--json]\n"
	"       dolsot --server-status | --server-stop\n"
	"       dolsot mcp [--toolbox MODULE:ALIAS]... [--timeout SECONDS] [--live] [--sandbox]\n"
	"              [--mount HOST:VIRTUAL[:MODE]]... [--env NAME[=VALUE]]... [limits]\n"
	"              [--namespace NAME] [--tool NAME=COMMAND]...\n"
	"              [--proxy COMMAND]... [--proxy -- CMD ARGS...]...\n"
	"       dolsot mcp [the same flags] --print-config claude|codex|generic\n"
	"       dolsot --help | --version\n";

/* --help: the usage, this, the options' list (options.h), the exit codes. */
static const char help_intro[] =
	"\n"
	"Run one Python cell in a persistent session. State (variables, imports,\n"
	"functions) is kept per session id between calls. CODE is read from\n"
	"standard input when omitted.\n"
	"\n";

static const char help_outro[] =
	"\n"
	"Exit status: 0 ok, 1 failure, 2 usage error, 75 detached (the cell runs\n"
	"on; the handle is on stderr), 124 timeout, or the .exit_code of a toolbox\n"
	"exception. See dolsot(1).\n";

static void die(int code, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("dolsot: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

#define usage_error(...) die(DOLSOT_EXIT_USAGE, __VA_ARGS__)

/* A session file must never become our stdout: make sure 0-2 are open. */
static void check_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			exit(DOLSOT_EXIT_FAIL);
	}
}

struct cli {
	struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	const char *session;
	const char *fork;          /* --fork SRC */
	bool replace;              /* --replace */
	const char *call_id;       /* --call-id ID */
	const char *timeout;
	const char *store;
	const char *ns;            /* --namespace NAME */
	const char *reset;
	bool list;
	const char *history;       /* --history ID */
	const char *undo;          /* --undo ID */
	const char *checkout;      /* --checkout ID@N */
	const char *export_id;     /* --export ID */
	const char *format;        /* --format FORMAT */
	char fork_id[STORE_ID_MAX + 1];   /* --fork SRC[@N]'s SRC */
	uint64_t fork_state;       /* and its N, 0 when none */
	enum { SERVER_NONE, SERVER_START, SERVER_STATUS, SERVER_STOP } server;
	const char *code;
	bool sandbox;
	bool live;
	struct mount_arg *mounts;
	size_t n_mounts;
	const char **env;
	size_t n_env;
	struct limits limits;
	bool json;
	bool json_stream;          /* --json-stream: json too */
	bool describe;
	bool mcp;                  /* dolsot mcp */
	const char *print_config;
	const char *http;          /* dolsot mcp --http ADDR */
	const char *auth_tokens;   /* and --auth-tokens FILE */
	unsigned http_timeout;     /* and --http-timeout S; 0: the default */
	struct host_tools *tools;  /* --tool, --tool-schema; NULL: none */
	const char *tools_fd;      /* --tools-fd N */
	const char **proxies;      /* --proxy COMMAND */
	size_t n_proxies;
	char **mcp_argv;           /* argv with --proxy -- CMD ARGS... joined */
	char **joined;             /* those joined commands */
	size_t n_joined;
	const char *detach_after;  /* --detach-after SECONDS */
	const char *handle;        /* --wait, --peek or --cancel HANDLE */
	int handle_cmd;            /* which of them: its option id, 0 when none */
	bool list_running;         /* --list-running */
};

static void add_toolbox(struct cli *c, const char *spec)
{
	char err[OPTS_ERR_MAX];
	struct toolbox_arg t;
	struct toolbox_arg *grown;

	if (c->n_toolboxes == OPTS_MAX_TOOLBOXES)
		usage_error("too many --toolbox options: at most %d", OPTS_MAX_TOOLBOXES);
	if (opts_parse_toolbox(spec, &t, err, sizeof(err)) < 0)
		usage_error("%s", err);
	for (size_t i = 0; i < c->n_toolboxes; i++)
		if (strcmp(c->toolboxes[i].alias, t.alias) == 0)
			usage_error("--toolbox alias '%s' is given twice", t.alias);
	grown = realloc(c->toolboxes, (c->n_toolboxes + 1) * sizeof(*grown));
	if (!grown)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	c->toolboxes = grown;
	c->toolboxes[c->n_toolboxes++] = t;
}

static void add_mount(struct cli *c, const char *spec)
{
	char err[OPTS_ERR_MAX];
	struct mount_arg m;
	struct mount_arg *grown;

	if (opts_parse_mount(spec, &m, err, sizeof(err)) < 0)
		usage_error("%s", err);
	grown = realloc(c->mounts, (c->n_mounts + 1) * sizeof(*grown));
	if (!grown)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	c->mounts = grown;
	c->mounts[c->n_mounts++] = m;
	c->sandbox = true;
}

static void add_env(struct cli *c, const char *spec)
{
	char err[OPTS_ERR_MAX];
	const char **grown;

	if (opts_check_env(spec, err, sizeof(err)) < 0)
		usage_error("%s", err);
	grown = realloc(c->env, (c->n_env + 1) * sizeof(*grown));
	if (!grown)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	c->env = grown;
	c->env[c->n_env++] = spec;
}

static struct host_tools *cli_tools(struct cli *c)
{
	if (!c->tools) {
		c->tools = malloc(sizeof(*c->tools));
		if (!c->tools)
			die(DOLSOT_EXIT_FAIL, "out of memory");
		host_tools_init(c->tools);
	}
	return c->tools;
}

static void add_proxy(struct cli *c, const char *command)
{
	const char **grown = realloc(c->proxies, (c->n_proxies + 1) * sizeof(*grown));

	if (!grown)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	c->proxies = grown;
	c->proxies[c->n_proxies++] = command;
}

/* argv[0..n), n >= 1, as one sh -c command line, each word single-quoted. */
static char *shell_words(char **argv, int n)
{
	size_t len = 1;
	char *out, *o;

	for (int i = 0; i < n; i++)
		len += strlen(argv[i]) * 4 + 3;
	out = o = calloc(1, len);
	if (!out)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	for (int i = 0; i < n; i++) {
		*o++ = '\'';
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
				continue;
			}
			*o++ = *p;
		}
		*o++ = '\'';
		*o++ = i + 1 < n ? ' ' : '\0';
	}
	return out;
}

/*
 * `dolsot mcp ... --proxy -- CMD ARGS... [--proxy -- CMD ARGS...]`: each
 * CMD ARGS, up to the next --proxy or the end, becomes one --proxy
 * COMMAND (the words quoted for sh -c).  A new argv (c->mcp_argv, its
 * new strings in c->joined) when there is any; else argv itself.
 */
static char **proxy_words(struct cli *c, int *argc, char **argv)
{
	char **out = NULL;
	int n = 0;

	for (int i = 0; i < *argc; i++) {
		int end = i + 2;

		if (strcmp(argv[i], "--proxy") != 0 || i + 1 >= *argc ||
		    strcmp(argv[i + 1], "--") != 0) {
			if (out)
				out[n++] = argv[i];
			continue;
		}
		if (!out) {
			out = c->mcp_argv = calloc((size_t)*argc + 1, sizeof(*out));
			c->joined = calloc((size_t)*argc, sizeof(*c->joined));
			if (!out || !c->joined)
				die(DOLSOT_EXIT_FAIL, "out of memory");
			memcpy(out, argv, (size_t)i * sizeof(*out));
			n = i;
		}
		while (end < *argc && strcmp(argv[end], "--proxy") != 0)
			end++;
		if (end == i + 2)
			usage_error("--proxy --: expected a command after '--'");
		out[n++] = argv[i];
		out[n++] = c->joined[c->n_joined++] = shell_words(argv + i + 2, end - i - 2);
		i = end - 1;
	}
	if (!out)
		return argv;
	*argc = n;
	return out;
}

static void add_tool(struct cli *c, const char *spec, bool schema)
{
	char err[512];
	int rc = schema ? host_tools_add_schema(cli_tools(c), spec, err, sizeof(err))
	                : host_tools_add_command(cli_tools(c), spec, err, sizeof(err));

	if (rc < 0)
		usage_error("%s", err);
}

/*
 * The host tools of a call that runs code: --tools-fd's host asked for
 * its tools, DOLSOT_TOOL_TIMEOUT read, every --tool-schema matched.
 * NULL when none is declared.
 */
static struct host_tools *open_tools(struct cli *c, const struct settings *s)
{
	const char *bound = getenv("DOLSOT_TOOL_TIMEOUT");
	const char *calls = getenv("DOLSOT_TOOL_MAX_CALLS");
	const char *wait = getenv("DOLSOT_TOOL_WAIT");
	char err[512];
	uint64_t n = 0;
	int fd = -1;

	if (!c->tools && !c->tools_fd)
		return NULL;
	if (c->tools_fd && opts_parse_count(c->tools_fd, &n) == 0 && n >= 3 && n <= INT_MAX)
		fd = (int)n;
	if (c->tools_fd && (fd < 0 || fcntl(fd, F_GETFD) < 0))
		usage_error("--tools-fd '%s': expected an open file descriptor number from 3",
		            c->tools_fd);
	if (c->tools_fd &&
	    host_tools_open_fd(cli_tools(c), fd, s->timeout, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (host_tools_check(c->tools, err, sizeof(err)) < 0)
		usage_error("%s", err);
	if (bound && opts_parse_seconds(bound, &c->tools->call_seconds) < 0)
		usage_error("DOLSOT_TOOL_TIMEOUT='%s': expected a positive number of seconds",
		            bound);
	if (calls && (opts_parse_count(calls, &n) < 0 || n == 0))
		usage_error("DOLSOT_TOOL_MAX_CALLS='%s': expected a whole number from 1", calls);
	if (calls)
		c->tools->lim.calls_max = (size_t)n;
	if (wait && opts_parse_nonneg(wait, &c->tools->wait_max) < 0)
		usage_error("DOLSOT_TOOL_WAIT='%s': expected a number of seconds from 0", wait);
	return c->tools;
}

static void set_limit(struct cli *c, enum limit_kind k, const char *value)
{
	char err[OPTS_ERR_MAX], flag[32];

	snprintf(flag, sizeof(flag), "--%s", limit_name(k));
	if (opts_parse_limit(k, value, flag, &c->limits.v[k], err, sizeof(err)) < 0)
		usage_error("%s", err);
}

/* --http-timeout's seconds: a whole number, 1 to MCP_HTTP_TIMEOUT_MAX. */
static unsigned http_timeout_arg(const char *arg)
{
	uint64_t s;

	if (opts_parse_count(arg, &s) < 0 || s < 1 || s > MCP_HTTP_TIMEOUT_MAX)
		usage_error("--http-timeout takes whole seconds from 1 to %d, not '%s'",
		            MCP_HTTP_TIMEOUT_MAX, arg);
	return (unsigned)s;
}

static void parse_args(int argc, char **argv, struct cli *c)
{
	struct option long_options[OPTIONS_MAX + 1];
	char shorts[OPTIONS_MAX + 3];
	int ch;

	options_getopt(long_options, shorts);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, long_options, NULL)) != -1) {
		switch (ch) {
		case OPTION_TOOLBOX:
			add_toolbox(c, optarg);
			break;
		case OPTION_TOOL:
		case OPTION_TOOL_SCHEMA:
			add_tool(c, optarg, ch == OPTION_TOOL_SCHEMA);
			break;
		case OPTION_TOOLS_FD:
			c->tools_fd = optarg;
			break;
		case OPTION_PROXY:
			add_proxy(c, optarg);
			break;
		case OPTION_SESSION:
			c->session = optarg;
			break;
		case OPTION_FORK:
			c->fork = optarg;
			break;
		case OPTION_REPLACE:
			c->replace = true;
			break;
		case OPTION_CALL_ID:
			c->call_id = optarg;
			break;
		case OPTION_TIMEOUT:
			c->timeout = optarg;
			break;
		case OPTION_SANDBOX:
			c->sandbox = true;
			break;
		case OPTION_LIVE:
			c->live = true;
			break;
		case OPTION_MOUNT:
			add_mount(c, optarg);
			break;
		case OPTION_ENV:
			add_env(c, optarg);
			break;
		case OPTION_MEMORY:
			set_limit(c, LIMIT_MEMORY, optarg);
			break;
		case OPTION_MAX_PROCS:
			set_limit(c, LIMIT_MAX_PROCS, optarg);
			break;
		case OPTION_MAX_FILE_SIZE:
			set_limit(c, LIMIT_MAX_FILE_SIZE, optarg);
			break;
		case OPTION_CPU_SECONDS:
			set_limit(c, LIMIT_CPU_SECONDS, optarg);
			break;
		case OPTION_RECURSION_LIMIT:
			set_limit(c, LIMIT_RECURSION, optarg);
			break;
		case OPTION_JSON:
			c->json = true;
			break;
		case OPTION_JSON_STREAM:
			c->json = c->json_stream = true;
			break;
		case OPTION_DESCRIBE:
			c->describe = true;
			break;
		case OPTION_LIST:
			c->list = true;
			break;
		case OPTION_RESET:
			c->reset = optarg;
			break;
		case OPTION_HISTORY_LIST:
			c->history = optarg;
			break;
		case OPTION_UNDO:
			c->undo = optarg;
			break;
		case OPTION_CHECKOUT:
			c->checkout = optarg;
			break;
		case OPTION_EXPORT:
			c->export_id = optarg;
			break;
		case OPTION_FORMAT:
			c->format = optarg;
			break;
		case OPTION_SERVER_START:
		case OPTION_SERVER_STATUS:
		case OPTION_SERVER_STOP:
			if (c->server)
				usage_error("give only one of --server-start, --server-status "
				            "and --server-stop");
			c->server = ch == OPTION_SERVER_START ? SERVER_START :
			            ch == OPTION_SERVER_STATUS ? SERVER_STATUS : SERVER_STOP;
			break;
		case OPTION_PRINT_CONFIG:
			c->print_config = optarg;
			break;
		case OPTION_HTTP:
			c->http = optarg;
			break;
		case OPTION_AUTH_TOKENS:
			c->auth_tokens = optarg;
			break;
		case OPTION_HTTP_TIMEOUT:
			c->http_timeout = http_timeout_arg(optarg);
			break;
		case OPTION_STORE:
			c->store = optarg;
			break;
		case OPTION_NAMESPACE:
			c->ns = optarg;
			break;
		case OPTION_DETACH_AFTER:
			c->detach_after = optarg;
			break;
		case OPTION_WAIT:
		case OPTION_PEEK:
		case OPTION_CANCEL:
			if (c->handle_cmd)
				usage_error("give only one of --wait, --peek and --cancel");
			c->handle_cmd = ch;
			c->handle = optarg;
			break;
		case OPTION_LIST_RUNNING:
			c->list_running = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(help_intro, stdout);
			options_help(stdout);   /* as fputs: a closed stdout is no error */
			fputs(help_outro, stdout);
			exit(0);
		case 'V':
			printf("dolsot %s\n", DOLSOT_VERSION);
			exit(0);
		case ':':
			usage_error("option '%s' needs a value", argv[optind - 1]);
		case '?':
		default:
			if (optopt > ' ' && optopt < 127)
				usage_error("unknown option '-%c' (see dolsot --help)", optopt);
			usage_error("unknown option '%s' (see dolsot --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		c->code = argv[optind++];
	if (optind < argc)
		usage_error("unexpected argument '%s': pass the code as one argument "
		            "(quote it) or on stdin", argv[optind]);
}

/* All of stdin; a terminal counts as empty.  *len excludes the added NUL. */
static char *read_stdin(size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf;

	*len = 0;
	if (isatty(0))
		return NULL;
	buf = malloc(cap);
	if (!buf)
		die(DOLSOT_EXIT_FAIL, "out of memory reading the code from stdin");
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *grown;

			if (cap >= MAX_CODE_BYTES)
				usage_error("the code on stdin is larger than %zu MiB",
				            MAX_CODE_BYTES >> 20);
			cap *= 2;
			grown = realloc(buf, cap);
			if (!grown)
				die(DOLSOT_EXIT_FAIL, "out of memory reading the code from stdin");
			buf = grown;
			continue;
		}
		r = read(0, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die(DOLSOT_EXIT_FAIL, "cannot read the code from stdin: %s", strerror(errno));
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n\f\v", s[i]) || s[i] == '\0')
			return false;
	return true;
}

static struct settings resolve_settings(const struct cli *c)
{
	struct settings s = { 0 };
	char err[OPTS_ERR_MAX];

	if (c->timeout && opts_parse_seconds(c->timeout, &s.timeout) < 0) {
		char q[300];

		opts_quote(q, sizeof(q), c->timeout);
		usage_error("--timeout '%s' is not valid: expected a positive number of "
		            "seconds (at most a year)", q);
	}
	s.sandbox = c->sandbox;
	s.live = c->live;
	s.limits = c->limits;
	s.store_spec = c->store;
	if (opts_settings_from_env(&s, err, sizeof(err)) < 0)
		usage_error("%s", err);
	if (c->ns)
		s.ns = c->ns;
	if (s.ns && !*s.ns)
		s.ns = NULL;   /* DOLSOT_NAMESPACE= is no namespace asked for */
	if (!s.ns && c->mcp)
		s.ns = MCP_DEFAULT_NAMESPACE;
	if (c->mcp && !getenv("DOLSOT_MAX_OUTPUT"))
		s.max_output = MCP_DEFAULT_MAX_OUTPUT;
	if (s.ns && !store_part_valid(s.ns, "namespace", STORE_NS_MAX, err, sizeof(err)))
		usage_error("%s%s", c->ns ? "--namespace: " : "DOLSOT_NAMESPACE: ", err);
	return s;
}

static void check_session_id(const char *id)
{
	char err[STORE_ERR_MAX];

	if (!store_part_valid(id, "session id", STORE_ID_MAX, err, sizeof(err)))
		usage_error("%s", err);
}

static int cmd_list(const struct settings *s, bool json)
{
	char err[REPL_ERR_MAX], when[UTC_TEXT_LEN];
	struct session_info *info = NULL;
	size_t n = 0;

	if (repl_list(s, &info, &n, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (json) {
		if (output_json_sessions(info, n, stdout) < 0 && errno != EPIPE)
			die(DOLSOT_EXIT_FAIL, "cannot write the output: %s", strerror(errno));
		n = SIZE_MAX;
	}
	for (size_t i = 0; n != SIZE_MAX && i < n; i++) {
		utc_text(info[i].mtime.tv_sec, when, sizeof(when));
		printf("%s\t%llu\t%s\n", info[i].id, (unsigned long long)info[i].size, when);
	}
	if (n == 0)
		fputs("(no sessions)\n", stderr);
	free(info);
	return 0;
}

static int cmd_reset(const struct settings *s, const char *target, bool json)
{
	char err[REPL_ERR_MAX];
	unsigned removed = 0, images = 0;
	char *kept = NULL;

	if (strcmp(target, "all") != 0)
		check_session_id(target);
	if (repl_reset(s, target, &removed, &images, &kept, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (json) {
		if (output_json_reset(target, removed, images, kept, stdout) < 0 && errno != EPIPE)
			die(DOLSOT_EXIT_FAIL, "cannot write the output: %s", strerror(errno));
		free(kept);
		return 0;
	}
	printf("reset %s: removed %u session(s)", target, removed);
	if (images)
		printf(" and %u image(s)", images);
	if (kept)
		printf("; kept, in use by a call: %s", kept);
	putchar('\n');
	free(kept);
	return 0;
}

/* What the sandbox will show and the worker's environment; dies on a bad
 * --mount or --env (exit 2). */
static void build_plan(const struct cli *c, const struct settings *s,
                       struct sandbox_plan *plan)
{
	char err[REPL_ERR_MAX], store_dir[PATH_MAX];
	struct plan_input in = { .sandbox = s->sandbox, .toolboxes = c->toolboxes,
	                         .n_toolboxes = c->n_toolboxes, .mounts = c->mounts,
	                         .n_mounts = c->n_mounts, .env_args = c->env,
	                         .n_env = c->n_env, .store_dir = store_dir,
	                         .rw_code_mounts = s->rw_code_mounts };

	/* A key file named by DOLSOT_SESSION_KEY (the default one is in the
	 * store's directory, guarded with it). */
	if (s->session_key && s->session_key[0] == '/')
		in.key_file = s->session_key;

	store_dir_path(s->cache_dir, store_dir, sizeof(store_dir));

	switch (sandbox_plan_build(&in, plan, err, sizeof(err))) {
	case PLAN_OK:
		return;
	case PLAN_USAGE:
		usage_error("%s", err);
	case PLAN_FAIL:
	default:
		die(DOLSOT_EXIT_FAIL, "%s", err);
	}
}

/* With --sandbox, the zygote that sandboxed calls use is the one warmed. */
static int server_start(const struct cli *c, const struct settings *s)
{
	char err[REPL_ERR_MAX];
	struct sandbox_plan plan;

	build_plan(c, s, &plan);
	if (repl_server_start(s, c->toolboxes, c->n_toolboxes, s->sandbox ? &plan : NULL,
	                      err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	sandbox_plan_release(&plan);
	return 0;
}

static int cmd_server(const struct cli *c, const struct settings *s)
{
	char err[REPL_ERR_MAX], info[65536];
	long pid = 0;
	int got;

	switch (c->server) {
	case SERVER_START:
		if (!s->server)
			usage_error("DOLSOT_SERVER=off: the warm server is disabled");
		return server_start(c, s);
	case SERVER_STATUS:
		got = repl_server_info(s, info, sizeof(info), err, sizeof(err));
		if (got < 0)
			die(DOLSOT_EXIT_FAIL, "%s", err);
		if (got == 0) {
			fputs("no server is running for this store\n", stderr);
			return 1;
		}
		fputs(info, stdout);
		return 0;
	case SERVER_STOP:
		got = repl_server_stop(s, &pid, err, sizeof(err));
		if (got < 0)
			die(DOLSOT_EXIT_FAIL, "%s", err);
		if (got == 0)
			fputs("no server is running for this store\n", stderr);
		else
			printf("stopped server %ld\n", pid);
		return 0;
	case SERVER_NONE:
	default:
		return 0;
	}
}

/* The --mount paths as path NUL mode NUL, for --describe to list. */
static char *describe_mounts(const struct cli *c, size_t *len)
{
	size_t n = 0, off = 0;
	char *buf;

	for (size_t i = 0; i < c->n_mounts; i++)
		n += strlen(c->mounts[i].virt) + strlen(mount_mode_name(c->mounts[i].mode)) + 2;
	buf = malloc(n + 1);
	if (!buf)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	for (size_t i = 0; i < c->n_mounts; i++) {
		const char *mode = mount_mode_name(c->mounts[i].mode);

		memcpy(buf + off, c->mounts[i].virt, strlen(c->mounts[i].virt) + 1);
		off += strlen(c->mounts[i].virt) + 1;
		memcpy(buf + off, mode, strlen(mode) + 1);
		off += strlen(mode) + 1;
	}
	*len = off;
	return buf;
}

static int cmd_describe(struct cli *c, const struct settings *s)
{
	struct run_args a = { .session = c->session, .toolboxes = c->toolboxes,
	                      .n_toolboxes = c->n_toolboxes, .settings = s, .code = "",
	                      .json = c->json, .describe = true };
	struct sandbox_plan plan;
	struct result res;
	char err[REPL_ERR_MAX], *mounts;
	int sig = 0, code, rc;

	if (c->session) {
		check_session_id(c->session);
		if (strcmp(c->session, "all") == 0)
			usage_error("session id 'all' is reserved (it means every session to "
			            "--reset); choose another id");
	}
	mounts = describe_mounts(c, &a.describe_mounts_len);
	a.describe_mounts = mounts;
	a.tools = open_tools(c, s);
	build_plan(c, s, &plan);
	a.plan = &plan;
	result_init(&res, s->max_output);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (c->json) {
		rc = output_json_describe(&res, &s->limits, s->timeout, stdout);
	} else {
		if (res.describe.p) {
			fwrite(res.describe.p, 1, res.describe.len, stdout);
			fputc('\n', stdout);
			output_describe_limits(&s->limits, s->timeout, stdout);
			output_describe_gate(&res.gate, stdout);
		}
		res.saved = false;
		res.out.len = 0;
		rc = output_render(&res, stdout, stderr);
	}
	if (rc < 0 && errno != EPIPE)
		die(DOLSOT_EXIT_FAIL, "cannot write the output: %s", strerror(errno));
	code = res.exit_code;
	result_release(&res);
	sandbox_plan_release(&plan);
	free(mounts);
	return code;
}

/* --fork SRC or SRC@N (a kept state of SRC's): a session id other than
 * the call's own, into c->fork_id and c->fork_state. */
static void check_fork(struct cli *c)
{
	char err[STORE_ERR_MAX];

	if (strchr(c->fork, '@')) {
		if (timeline_parse_ref(c->fork, c->fork_id, &c->fork_state, err, sizeof(err)) < 0)
			usage_error("--fork %s", err);
	} else {
		check_session_id(c->fork);
		snprintf(c->fork_id, sizeof(c->fork_id), "%s", c->fork);
	}
	if (strcmp(c->fork_id, "all") == 0)
		usage_error("--fork all: 'all' is not a session; name the session to copy");
	if (strcmp(c->fork_id, c->session) == 0 && !c->fork_state)
		usage_error("--fork %s: a session cannot be forked into itself", c->fork);
	if (strcmp(c->fork_id, c->session) == 0)
		usage_error("--fork %s: a session cannot be forked into itself (to go back "
		            "to one of its states, use --checkout %s)", c->fork, c->fork);
}

static void write_failed(void)
{
	if (errno != EPIPE)
		die(DOLSOT_EXIT_FAIL, "cannot write the output: %s", strerror(errno));
}

/* --history ID: its kept states, oldest first. */
static int cmd_history(const struct settings *s, const char *id, bool json)
{
	char err[REPL_ERR_MAX];
	struct timeline_state *v = NULL;
	size_t n = 0;

	check_session_id(id);
	if (timeline_cmd_list(s, id, &v, &n, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if ((json ? timeline_print_json(id, v, n, stdout) : timeline_print(id, v, n, stdout)) < 0)
		write_failed();
	timeline_release(v, n);
	return 0;
}

/* --undo ID, --checkout ID@N: the move, said in one line (or JSON). */
static int cmd_move(const struct settings *s, const char *undo, const char *ref, bool json)
{
	char err[REPL_ERR_MAX], id[STORE_ID_MAX + 1];
	const char *what = undo ? "undo" : "checkout";
	struct timeline_move mv;
	uint64_t target = 0;

	if (undo) {
		check_session_id(undo);
		snprintf(id, sizeof(id), "%s", undo);
	} else if (timeline_parse_ref(ref, id, &target, err, sizeof(err)) < 0) {
		usage_error("--checkout %s", err);
	}
	if (timeline_cmd_move(s, id, target, &mv, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if ((json ? timeline_print_move_json(id, what, &mv, stdout)
	          : timeline_print_move(id, what, &mv, stdout)) < 0)
		write_failed();
	return 0;
}

/* --export ID [--format FORMAT]: its kept states, rendered, on stdout. */
static int cmd_export(const struct settings *s, const char *id, const char *format)
{
	struct notebook_about about = { .session = id, .version = DOLSOT_VERSION,
	                                .depth = s->history };
	char err[REPL_ERR_MAX];
	struct timeline_state *v = NULL;
	enum export_format f = EXPORT_IPYNB;
	size_t n = 0;

	check_session_id(id);
	if (format && export_format_parse(format, &f) < 0)
		usage_error("--format '%s': expected " EXPORT_FORMATS, format);
	if (timeline_cmd_list(s, id, &v, &n, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (export_write(&about, v, n, f, stdout) < 0)
		write_failed();
	timeline_release(v, n);
	return 0;
}

/* What --live (or DOLSOT_LIVE=1) needs. */
static void check_live(const struct settings *s)
{
	if (s->live && !s->server)
		usage_error("--live keeps the session in a process of the warm server, so it "
		            "cannot work with DOLSOT_SERVER=off (run without --live, or with "
		            "DOLSOT_SERVER=auto)");
}

/* A --call-id's result as recorded (recall.h): its bytes as they are. */
static int say_recorded(const struct result *r, bool json)
{
	const struct owned *out = json ? &r->said_json : &r->said_out;

	if ((out->len && fwrite(out->p, 1, out->len, stdout) != out->len) ||
	    (!json && r->said_err.len &&
	     fwrite(r->said_err.p, 1, r->said_err.len, stderr) != r->said_err.len) ||
	    fflush(stdout) == EOF || fflush(stderr) == EOF)
		return -1;
	return 0;
}

/* The call's result, as text or --json's object. */
static int say_result(const struct result *res, bool json, FILE *out)
{
	if (res->said)
		return say_recorded(res, json);
	return json ? output_json_run(res, out) : output_render(res, out, stderr);
}

/* A detached call's client, or --wait: the cell's result once it ended
 * (within seconds; < 0: no limit), else the handle's status (exit 75). */
static int say_handle(struct detach_rec *rec, double seconds, bool json)
{
	char err[REPL_ERR_MAX];

	if (detach_wait(rec, seconds, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if ((rec->state == DETACH_RUNNING ? detach_print_status(rec, json, stdout, stderr)
	                                  : detach_print_result(rec, json, stdout, stderr)) < 0)
		write_failed();
	return rec->code;
}

/* --wait, --peek, --cancel HANDLE. */
static int cmd_handle(const struct cli *c, const struct settings *s)
{
	char err[REPL_ERR_MAX];
	struct detach_rec rec;
	int got;

	if (detach_open(s, c->handle, &rec, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (c->handle_cmd == OPTION_WAIT)
		return say_handle(&rec, c->timeout ? s->timeout : -1, c->json);
	if (c->handle_cmd == OPTION_PEEK) {
		if (detach_print_peek(&rec, s->max_output, c->json, stdout, stderr) < 0)
			write_failed();
		return 0;
	}
	got = detach_cancel(&rec, err, sizeof(err));
	if (got < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (detach_print_cancel(&rec, got == 1, c->json, stdout, stderr) < 0)
		write_failed();
	return got == 1 ? 0 : DOLSOT_EXIT_FAIL;
}

static int cmd_list_running(const struct settings *s, bool json)
{
	char err[REPL_ERR_MAX];

	if (detach_print_running(s, json, stdout, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	return 0;
}

/* --detach-after: fork the keeper.  The client's answer in *code (and
 * true), or false in the keeper, which runs the call on. */
static bool detach_client(const struct cli *c, const struct settings *s,
                          struct detach_keeper *keeper, int *code)
{
	char err[REPL_ERR_MAX];
	struct detach_rec rec;
	double after;

	if (opts_parse_nonneg(c->detach_after, &after) < 0)
		usage_error("--detach-after '%s': expected a number of seconds from 0",
		            c->detach_after);
	switch (detach_start(s, c->session, &rec, keeper, -1, err, sizeof(err))) {
	case DETACH_KEEPER:
		return false;
	case DETACH_CLIENT:
		*code = say_handle(&rec, after, c->json);
		return true;
	case DETACH_FAILED:
	default:
		die(DOLSOT_EXIT_FAIL, "%s", err);
	}
}

/* --json-stream's sink: a line per chunk, as it comes. */
static void print_chunk(void *out, const struct stream_chunk *chunk)
{
	output_json_chunk(chunk, out);
}

static int cmd_run(struct cli *c, const struct settings *s)
{
	struct detach_keeper keeper;
	bool kept = false;
	struct stream chunks;
	struct run_args a = { .session = c->session, .toolboxes = c->toolboxes,
	                      .n_toolboxes = c->n_toolboxes, .settings = s };
	struct sandbox_plan plan;
	struct result res;
	char err[REPL_ERR_MAX];
	char *stdin_code = NULL;
	int sig = 0, code;

	if (!c->session)
		usage_error("--session ID is required to run code: variables, imports and "
		            "data persist per session id, so pass the same stable id for "
		            "every call of one task");
	check_session_id(c->session);
	if (strcmp(c->session, "all") == 0)
		usage_error("session id 'all' is reserved (it means every session to --reset); "
		            "choose another id");
	if (c->fork)
		check_fork(c);
	check_live(s);
	if (c->code) {
		a.code = c->code;
		a.code_len = strlen(c->code);
	} else {
		a.code = stdin_code = read_stdin(&a.code_len);
	}
	if (c->fork && (!a.code || is_blank(a.code, a.code_len))) {
		if (c->json)
			usage_error("--json needs code to run: --fork alone prints one line");
		a.code = NULL;   /* the fork alone */
	} else if (!a.code || is_blank(a.code, a.code_len)) {
		usage_error("empty code: pass the cell as an argument or on stdin");
	}
	if (c->call_id && !a.code)
		usage_error("--call-id names a call that runs code: --fork alone takes none");
	a.fork = c->fork ? c->fork_id : NULL;
	a.fork_state = c->fork_state;
	a.fork_replace = c->replace;
	a.call_id = c->call_id;
	build_plan(c, s, &plan);
	a.plan = &plan;
	a.json = c->json;
	a.tools = open_tools(c, s);
	if (c->detach_after) {
		if (detach_client(c, s, &keeper, &code)) {
			sandbox_plan_release(&plan);
			free(stdin_code);
			return code;
		}
		kept = true;
	}
	result_init(&res, s->max_output);
	if (c->json_stream)
		stream_attach(&chunks, &res.out, &res.err, STREAM_EVERY, print_chunk, stdout);
	if (kept)
		detach_keeper_tap(&keeper, &res.out, &res.err);
	if (repl_run(&a, &res, &sig, err, sizeof(err)) < 0)
		die(DOLSOT_EXIT_FAIL, "%s", err);
	if (c->json_stream)
		stream_flush(&chunks);
	if (sig) {
		if (kept)
			detach_keeper_cancelled(&keeper, sig);
		stopsig_say_unsaved(sig);
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (!a.code) {
		printf("forked %s into %s\n", c->fork, c->session);
		result_release(&res);
		sandbox_plan_release(&plan);
		free(stdin_code);
		return 0;
	}
	if (kept)
		detach_keeper_finish(&keeper, &res);
	if (say_result(&res, c->json, stdout) < 0 && errno != EPIPE)
		die(DOLSOT_EXIT_FAIL, "cannot write the output: %s", strerror(errno));
	code = res.exit_code;
	result_release(&res);
	sandbox_plan_release(&plan);
	free(stdin_code);
	return code;
}

/* The flags after "mcp" but --print-config, for the host to pass back. */
static const char **run_flags(int argc, char **argv, size_t *n)
{
	const char **out = calloc((size_t)argc + 1, sizeof(*out));
	char flag[64];
	size_t len;

	if (!out)
		die(DOLSOT_EXIT_FAIL, "out of memory");
	len = (size_t)snprintf(flag, sizeof(flag), "--%s",
	                       options_row(OPTION_PRINT_CONFIG)->flag);
	*n = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], flag) == 0) {
			i++;
			continue;
		}
		if (strncmp(argv[i], flag, len) == 0 && argv[i][len] == '=')
			continue;
		out[(*n)++] = argv[i];
	}
	return out;
}

static int cmd_mcp(struct cli *c, const struct settings *s, int argc, char **argv)
{
	char err[REPL_ERR_MAX], *mounts;
	struct sandbox_plan plan;
	struct mcp_setup m = { .settings = s, .toolboxes = c->toolboxes,
	                       .n_toolboxes = c->n_toolboxes, .version = DOLSOT_VERSION };

	if (c->code)
		usage_error("unexpected argument '%s': dolsot mcp reads its calls from stdin",
		            c->code);
	if (c->session || c->json || c->describe || c->list || c->reset || c->server)
		usage_error("dolsot mcp takes the run flags (--toolbox, --timeout, --sandbox, --live, "
		            "--mount, --env, the limits), --namespace and --print-config; each "
		            "tool call names its own session");
	check_live(s);
	if (c->print_config) {
		size_t n;
		const char **flags = run_flags(argc, argv, &n);
		struct mcp_config_in in = { .host = c->print_config, .args = flags, .n = n,
		                            .ns = s->ns, .toolboxes = c->n_toolboxes > 0 };
		int rc = mcp_print_config(&in, stdout, err, sizeof(err));

		free(flags);
		if (rc == 1)
			usage_error("--print-config: unknown host '%s': expected " MCP_CONFIG_HOSTS,
			            c->print_config);
		if (rc < 0)
			die(DOLSOT_EXIT_FAIL, "%s", err);
		return 0;
	}
	mounts = describe_mounts(c, &m.describe_mounts_len);
	m.describe_mounts = mounts;
	build_plan(c, s, &plan);
	m.plan = &plan;
	m.proxies = c->proxies;
	m.n_proxies = c->n_proxies;
	/* Proxied tools and llm_query are declared once the server starts. */
	cli_tools(c);
	m.tools = open_tools(c, s);
	/* A long-lived server: each log line goes out when it is written. */
	setvbuf(stderr, NULL, _IOLBF, 0);
	if ((c->http ? mcp_http_serve(&m, c->http, c->auth_tokens, c->http_timeout, err,
	                             sizeof(err))
	             : mcp_serve(&m, err, sizeof(err))) < 0)
		die(DOLSOT_EXIT_FAIL, "mcp: %s", err);
	sandbox_plan_release(&plan);
	free(mounts);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	struct settings s;
	char why[160];
	bool timeline;
	int code;

	/* A fresh exec of ourselves as the warm server (see warm.c). */
	if (argc > 0 && strcmp(argv[0], WARM_ARGV0) == 0)
		server_exec_main(argc, argv);
	if (argc > 0 && strcmp(argv[0], ZYGOTE_ARGV0) == 0)
		zygote_exec_main();
	if (argc > 0 && strcmp(argv[0], CHECKD_ARGV0) == 0)
		checkd_main(argc, argv);
	check_fds();
	/* Our stderr lines are written once, at the end: buffer them rather
	 * than make a write per character (exit and output_render flush). */
	setvbuf(stderr, NULL, _IOFBF, BUFSIZ);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && strcmp(argv[1], "mcp") == 0) {
		int n = argc - 1;

		c.mcp = true;
		parse_args(n, proxy_words(&c, &n, argv + 1), &c);
	} else {
		parse_args(argc, argv, &c);
	}
	if (c.print_config && !c.mcp)
		usage_error("--print-config belongs to 'dolsot mcp'");
	if (c.http && !c.mcp)
		usage_error("--http belongs to 'dolsot mcp'");
	if (c.auth_tokens && !c.http)
		usage_error("--auth-tokens belongs to 'dolsot mcp --http'");
	if (c.http_timeout && !c.http)
		usage_error("--http-timeout belongs to 'dolsot mcp --http'");
	timeline = c.history || c.undo || c.checkout || c.export_id;
	if ((c.list || c.reset || c.server || c.describe || timeline) && c.code)
		usage_error("--list-sessions, --reset, --history, --undo, --checkout, --export, "
		            "--describe and --server-* take no code");
	if ((c.list != 0) + (c.reset != NULL) + (c.server != SERVER_NONE) + c.describe +
	    (c.history != NULL) + (c.undo != NULL) + (c.checkout != NULL) +
	    (c.export_id != NULL) > 1)
		usage_error("--list-sessions, --reset, --history, --undo, --checkout, --export, "
		            "--describe and --server-* cannot be combined");
	if (timeline && (c.mcp || c.session))
		usage_error("--history, --undo, --checkout and --export name their session "
		            "themselves (no --session)");
	if ((c.tools || c.tools_fd) && (c.list || c.reset || c.server || timeline))
		usage_error("--tool, --tool-schema and --tools-fd belong to running code "
		            "(and --describe, and dolsot mcp)");
	/* The server's calls run side by side, and one host speaks to one. */
	if (c.tools_fd && c.mcp)
		usage_error("--tools-fd does not go with dolsot mcp (--tool does)");
	if (c.proxies && !c.mcp)
		usage_error("--proxy belongs to dolsot mcp");
	if (c.format && !c.export_id)
		usage_error("--format goes with --export ID");
	if (c.export_id && c.json)
		usage_error("--json does not apply to --export: choose its output with --format");
	if ((c.fork || c.replace) &&
	    (c.mcp || c.list || c.reset || c.server || c.describe || timeline))
		usage_error("--fork and --replace belong to running code in a session");
	if (c.replace && !c.fork)
		usage_error("--replace goes with --fork SRC");
	if (c.call_id && (c.mcp || c.list || c.reset || c.server || c.describe || timeline))
		usage_error("--call-id belongs to running code in a session");
	if (c.call_id && !callrec_id_valid(c.call_id, why, sizeof(why)))
		usage_error("--call-id '%s': %s", c.call_id, why);
	if (c.json_stream && (c.mcp || c.list || c.reset || c.server || c.describe || timeline))
		usage_error("--json-stream belongs to running code in a session");
	if ((c.handle_cmd || c.list_running) &&
	    (c.mcp || c.code || c.session || c.list || c.reset || c.server || c.describe ||
	     timeline || (c.handle_cmd && c.list_running)))
		usage_error("--wait, --peek, --cancel and --list-running go alone (with --json, "
		            "and --timeout for --wait): a handle names its session");
	if (c.detach_after && (c.mcp || c.list || c.reset || c.server || c.describe || timeline ||
	                       c.handle_cmd || c.list_running))
		usage_error("--detach-after belongs to running code in a session");
	if (c.detach_after && (c.json_stream || c.tools_fd))
		usage_error("--detach-after does not go with --json-stream or --tools-fd: a "
		            "detached cell outlives the caller that would read them (see --peek)");
	if (c.json && c.server)
		usage_error("--json applies to running code, --describe, --list-sessions, "
		            "--reset, --history, --undo and --checkout, not to --server-*");
	s = resolve_settings(&c);
	/* The key is ours: no worker, server or zygote gets it in its
	 * environment (s.session_key still points at the string). */
	unsetenv("DOLSOT_SESSION_KEY");
	if ((!s.cache_dir || !*s.cache_dir) && !c.print_config && user_dir_note())
		fprintf(stderr, "dolsot: %s\n", user_dir_note());
	if (c.mcp)
		code = cmd_mcp(&c, &s, argc, argv);
	else if (c.server)
		code = cmd_server(&c, &s);
	else if (c.list)
		code = cmd_list(&s, c.json);
	else if (c.reset)
		code = cmd_reset(&s, c.reset, c.json);
	else if (c.history)
		code = cmd_history(&s, c.history, c.json);
	else if (c.undo || c.checkout)
		code = cmd_move(&s, c.undo, c.checkout, c.json);
	else if (c.export_id)
		code = cmd_export(&s, c.export_id, c.format);
	else if (c.describe)
		code = cmd_describe(&c, &s);
	else if (c.handle_cmd)
		code = cmd_handle(&c, &s);
	else if (c.list_running)
		code = cmd_list_running(&s, c.json);
	else
		code = cmd_run(&c, &s);
	for (size_t i = 0; i < c.n_toolboxes; i++)
		toolbox_arg_release(&c.toolboxes[i]);
	free(c.toolboxes);
	for (size_t i = 0; i < c.n_mounts; i++)
		mount_arg_release(&c.mounts[i]);
	free(c.mounts);
	free(c.env);
	free(c.proxies);
	for (size_t i = 0; i < c.n_joined; i++)
		free(c.joined[i]);
	free(c.joined);
	free(c.mcp_argv);
	if (c.tools)
		host_tools_release(c.tools);
	free(c.tools);
	return code;
}
