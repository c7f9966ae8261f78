/*
 * check_mcp.c - `dolsot mcp` end to end: the official TypeScript SDK as the
 * client (tests/lib/mcp_client.mjs), the MCP Inspector's CLI as a second one,
 * then raw bytes on the real binary's stdin
 * (version negotiation, malformed and oversized messages, wrong params,
 * stdout holding nothing but protocol lines, a client that goes away or
 * closes stdin mid-call, SIGTERM), --print-config, the run flags applying
 * to every call, namespaces (two servers and the CLI on one store of each
 * kind), and the examples of docs/SKILL.md run for real.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "redis_helper.h"

static struct cli_test fx;

static void setup(void)
{
	char err[4096];

	cli_test_begin(&fx, cli_usual_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

#define INIT(version) "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":" \
	"{\"protocolVersion\":\"" version "\",\"capabilities\":{},\"clientInfo\":" \
	"{\"name\":\"raw\",\"version\":\"1\"}}}\n" \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

#define TOOL(id, name, args) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":" \
	"\"tools/call\",\"params\":{\"name\":\"" name "\",\"arguments\":" args "}}\n"
#define CALL(id, args) TOOL(id, "python", args)

/* Run `dolsot mcp [flags]` with input on stdin to its end. */
static void run_mcp(struct cli_run *r, const char *input, size_t len, const char *const *flags)
{
	const char *argv[16] = { "dolsot", "mcp" };
	size_t n = 2;

	for (size_t i = 0; flags && flags[i] && n < 15; i++)
		argv[n++] = flags[i];
	argv[n] = NULL;
	cli_run(r, &(struct cli_opts){ .env = fx.env, .stdin_data = input, .stdin_len = len },
	        argv);
	ck_assert_msg(r->code == 0, "exit %d\nstdout: %.2000s\nstderr: %.2000s", r->code, r->out,
	              r->err);
}

/* Every stdout line is a JSON-RPC 2.0 object; returns them as an array. */
static json_t *lines(const struct cli_run *r)
{
	json_t *all = json_array();
	const char *p = r->out;

	ck_assert_msg(r->out_len == 0 || r->out[r->out_len - 1] == '\n', "stdout ends mid-line: %s",
	              r->out);
	while (*p) {
		const char *nl = strchr(p, '\n');
		json_error_t e;
		json_t *o = json_loadb(p, (size_t)(nl - p), 0, &e);

		ck_assert_msg(json_is_object(o), "not a JSON object (%s): %.*s", e.text,
		              (int)(nl - p), p);
		ck_assert_str_eq(json_string_value(json_object_get(o, "jsonrpc")), "2.0");
		json_array_append_new(all, o);
		p = nl + 1;
	}
	return all;
}

/* The message answering id (an integer), or NULL. */
static json_t *answer(json_t *all, json_int_t id)
{
	size_t i;
	json_t *o;

	json_array_foreach(all, i, o) {
		json_t *v = json_object_get(o, "id");

		if (json_is_integer(v) && json_integer_value(v) == id)
			return o;
	}
	return NULL;
}

static int error_code(json_t *all, json_int_t id)
{
	json_t *o = answer(all, id);

	ck_assert_msg(o, "no answer to id %lld", (long long)id);
	return (int)json_integer_value(json_object_get(json_object_get(o, "error"), "code"));
}

static bool sdk_present(void)
{
	struct stat st;

	return access("/usr/bin/node", X_OK) == 0 &&
	       stat("tools/node/node_modules/@modelcontextprotocol/sdk/package.json", &st) == 0;
}

START_TEST(sdk_client_drives_the_server)
{
	struct cli_run r;
	char *scratch = cli_tempdir();

	if (!sdk_present()) {
		printf("SKIP %s: node or tools/node's @modelcontextprotocol/sdk is missing "
		       "(tools/npm-deps.sh installs it)\n", __func__);
		cli_rmtree(scratch);
		return;
	}
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = "/usr/bin/node", .timeout = 400 },
	        (const char *const[]){ "node", "tests/lib/mcp_client.mjs", cli_bin(), scratch, NULL });
	ck_assert_msg(r.code == 0 && cli_has(r.out, "ok close\n"),
	              "exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
	cli_run_release(&r);
	cli_rmtree(scratch);
}
END_TEST

/* tests/lib/mcp_namespaces.mjs on the store store_entry names
 * ("DOLSOT_STORE=..."), with more (an entry, or NULL): two servers and the
 * CLI keep to their own. */
static void namespaces_on(const char *store_entry, const char *more)
{
	const char *env[CLI_TEST_ENV_MAX + 3];
	struct cli_run r;
	size_t n = 0;

	while (fx.env[n] && n < CLI_TEST_ENV_MAX) {
		env[n] = fx.env[n];
		n++;
	}
	env[n++] = store_entry;
	env[n++] = more;
	env[n] = NULL;
	cli_run(&r, &(struct cli_opts){ .env = env, .prog = "/usr/bin/node", .timeout = 400 },
	        (const char *const[]){ "node", "tests/lib/mcp_namespaces.mjs", cli_bin(), NULL });
	ck_assert_msg(r.code == 0 && cli_has(r.out, "ok close\n"),
	              "%s: exit %d\nstdout: %s\nstderr: %s", store_entry, r.code, r.out, r.err);
	cli_run_release(&r);
}

START_TEST(namespaces_keep_each_host_to_its_own)
{
	struct redis_test rd = { .pid = -1 };
	char entry[5000], cwd[512];

	if (!sdk_present()) {
		printf("SKIP %s: node or tools/node's @modelcontextprotocol/sdk is missing "
		       "(tools/npm-deps.sh installs it)\n", __func__);
		return;
	}
	namespaces_on("DOLSOT_STORE=file", NULL);
	namespaces_on("DOLSOT_STORE=memory", "DOLSOT_SERVER=auto");
	ck_assert(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(entry, sizeof(entry), "DOLSOT_STORE=cmd:%s/examples/dolsot-store-dir %s/cmd",
	         cwd, fx.tmp);
	namespaces_on(entry, NULL);
	redis_test_start_in(&rd, fx.tmp, NULL, NULL);
	snprintf(entry, sizeof(entry), "DOLSOT_STORE=%s", rd.url);
	namespaces_on(entry, NULL);
	redis_test_stop(&rd);
}
END_TEST

#define INSPECTOR "tools/node/node_modules/.bin/mcp-inspector"

/*
 * The MCP Inspector's CLI (@modelcontextprotocol/inspector), a client
 * written apart from ours, runs one method against `dolsot mcp` and prints
 * its answer as JSON: *out is that answer, the return its exit status
 * (5: the tool answered isError).
 */
static int inspector(json_t **out, const char *scratch, const char *const *args)
{
	static char catalog[4200];
	const char *env[CLI_TEST_ENV_MAX + 2];
	const char *argv[2 * CLI_TEST_ENV_MAX + 24] = { "mcp-inspector", "--cli" };
	size_t n = 0, a = 2;
	struct cli_run r;
	json_error_t e;
	int code;

	/* Its catalog file goes into the test's directory, not $HOME. */
	snprintf(catalog, sizeof(catalog), "MCP_CATALOG_PATH=%s/catalog.json", scratch);
	for (; fx.env[n]; n++)
		env[n] = fx.env[n];
	env[n++] = catalog;
	env[n] = NULL;
	/* The server it starts gets a few variables of its own (PATH, HOME...)
	 * and those given with -e: the test's settings, its store first. */
	for (size_t i = 0; fx.env[i]; i++) {
		if (strchr(fx.env[i], '=')) {
			argv[a++] = "-e";
			argv[a++] = fx.env[i];
		}
	}
	for (size_t i = 0; args[i] && a < sizeof(argv) / sizeof(*argv) - 1; i++)
		argv[a++] = args[i];
	argv[a] = NULL;
	cli_run(&r, &(struct cli_opts){ .env = env, .prog = INSPECTOR, .timeout = 120 }, argv);
	*out = json_loadb(r.out, r.out_len, 0, &e);
	ck_assert_msg(json_is_object(*out), "inspector: exit %d, stdout not JSON (%s): %.2000s\n"
	              "stderr: %.2000s", r.code, e.text, r.out, r.err);
	code = r.code;
	cli_run_release(&r);
	return code;
}

static const char *structured_str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_object_get(o, "structuredContent"), key));
}

START_TEST(inspector_cli_lists_and_calls_the_tools)
{
	char *scratch = cli_tempdir();
	const char *bin = cli_bin();
	json_t *o, *tool;
	struct cli_run r;
	size_t i;
	int seen = 0;

	if (access("/usr/bin/node", X_OK) != 0 || access(INSPECTOR, X_OK) != 0) {
		printf("SKIP %s: node or tools/node's @modelcontextprotocol/inspector is missing "
		       "(tools/npm-deps.sh installs it)\n", __func__);
		cli_rmtree(scratch);
		return;
	}
	/* --strict: no tool schema has a portability error. */
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		"--strict", bin, "mcp", "--method", "tools/list", NULL }), 0);
	json_array_foreach(json_object_get(o, "tools"), i, tool) {
		const char *name = json_string_value(json_object_get(tool, "name"));

		static const char *const known[] = { "python", "list_sessions", "reset_session",
		                                     "history", "undo", "checkout",
		                                     "export_notebook", "wait", "peek", "cancel" };
		size_t k = 0;

		while (k < 10 && strcmp(name, known[k]) != 0)
			k++;
		seen |= 1 << k;
		ck_assert_msg(json_is_object(json_object_get(tool, "outputSchema")), "%s", name);
	}
	ck_assert_int_eq(seen, 1023);
	json_decref(o);

	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "python",
		"--tool-arg", "code=x = 41", "--tool-arg", "session=insp", NULL }), 0);
	ck_assert(json_is_false(json_object_get(o, "isError")));
	json_decref(o);
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "python",
		"--tool-arg", "code=x + 1", "--tool-arg", "session=insp", NULL }), 0);
	ck_assert_str_eq(structured_str(o, "value"), "42");
	json_decref(o);
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "python",
		"--tool-arg", "code=x / 0", "--tool-arg", "session=insp", NULL }), 5);
	ck_assert(json_is_true(json_object_get(o, "isError")));
	ck_assert_str_eq(structured_str(o, "status"), "error");
	json_decref(o);

	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "history",
		"--tool-arg", "session=insp", NULL }), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(o, "structuredContent"), "current")), 3);
	json_decref(o);
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "export_notebook",
		"--tool-arg", "session=insp", NULL }), 0);
	ck_assert_str_eq(structured_str(o, "mimeType"), "application/x-ipynb+json");
	json_decref(o);
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "list_sessions", NULL }), 0);
	tool = json_array_get(json_object_get(json_object_get(o, "structuredContent"), "sessions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(tool, "id")), "insp");
	json_decref(o);
	ck_assert_int_eq(inspector(&o, scratch, (const char *const[]){
		bin, "mcp", "--method", "tools/call", "--tool-name", "reset_session",
		"--tool-arg", "session=insp", NULL }), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(o, "structuredContent"), "removed")), 1);
	json_decref(o);
	/* Everything happened in the test's own store. */
	CLI(&r, "--list-sessions");
	ck_assert_int_eq(r.code, 0);
	ck_assert_str_eq(r.out, "");
	cli_run_release(&r);
	cli_rmtree(scratch);
}
END_TEST

START_TEST(version_negotiation)
{
	static const char in[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2099-01-01\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}\n";
	struct cli_run r;
	json_t *all, *res;

	run_mcp(&r, in, 0, NULL);
	all = lines(&r);
	res = json_object_get(answer(all, 1), "result");
	/* A revision we do not speak is answered with our newest. */
	ck_assert_str_eq(json_string_value(json_object_get(res, "protocolVersion")), "2025-11-25");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "serverInfo"),
	                                                   "name")), "dolsot");
	ck_assert(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
	json_decref(all);
	cli_run_release(&r);

	/* An older one is answered in kind, without what it lacks. */
	run_mcp(&r, INIT("2024-11-05")
	        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
	        CALL(3, "{\"code\":\"6 * 7\",\"session\":\"old\"}"), 0, NULL);
	all = lines(&r);
	res = json_object_get(answer(all, 0), "result");
	ck_assert_str_eq(json_string_value(json_object_get(res, "protocolVersion")), "2024-11-05");
	res = json_array_get(json_object_get(json_object_get(answer(all, 2), "result"), "tools"), 0);
	ck_assert(json_is_object(json_object_get(res, "inputSchema")));
	ck_assert(!json_object_get(res, "outputSchema"));
	res = json_object_get(answer(all, 3), "result");
	ck_assert(!json_object_get(res, "structuredContent"));
	ck_assert(json_is_false(json_object_get(res, "isError")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(res, "content"), 0), "text")), "42\nsession now holds: (nothing)\n");
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* Each stdout line parsed, objects and arrays alike. */
static json_t *values(const struct cli_run *r)
{
	json_t *all = json_array();
	const char *p = r->out;

	while (*p) {
		const char *nl = strchr(p, '\n');
		json_error_t e;
		json_t *v;

		ck_assert_msg(nl, "stdout ends mid-line: %s", r->out);
		v = json_loadb(p, (size_t)(nl - p), 0, &e);
		ck_assert_msg(v, "not JSON (%s): %.*s", e.text, (int)(nl - p), p);
		json_array_append_new(all, v);
		p = nl + 1;
	}
	return all;
}

START_TEST(batches_under_2025_03_26)
{
	static const char in[] =
		INIT("2025-03-26")
		/* two calls on two sessions, a ping, a non-message, a notification,
		 * an initialize (never in a batch), a call on a bad session id */
		"[" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"python\",\"arguments\":{\"code\":\"import time; time.sleep(0.3); 6 * 7\","
		"\"session\":\"b1\"}}},"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"python\",\"arguments\":{\"code\":\"1 / 0\",\"session\":\"b2\"}}},"
		"5,"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"},"
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{}},"
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"python\",\"arguments\":{\"code\":\"1\",\"session\":\"../x\"}}}"
		"]\n"
		"[]\n"
		"[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}]\n"
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n";
	struct cli_run r;
	json_t *all, *batch, *o;
	size_t i;
	unsigned seen = 0;

	run_mcp(&r, in, 0, NULL);
	all = values(&r);
	/* initialize's answer, the empty batch's error and the last ping come
	 * at once; the batch's one array when its last call is done; nothing
	 * for the batch of a notification. */
	ck_assert_msg(json_array_size(all) == 4, "%.3000s", r.out);
	ck_assert(json_is_object(json_object_get(json_array_get(all, 0), "result")));
	o = json_array_get(all, 1);
	ck_assert(json_is_null(json_object_get(o, "id")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "error"), "code")),
	                 -32600);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(all, 2), "id")), 6);
	batch = json_array_get(all, 3);
	ck_assert_msg(json_is_array(batch) && json_array_size(batch) == 6, "%.3000s", r.out);
	json_array_foreach(batch, i, o) {
		json_t *id = json_object_get(o, "id");
		json_t *res = json_object_get(o, "result");
		int code = (int)json_integer_value(json_object_get(json_object_get(o, "error"),
		                                                   "code"));

		if (json_is_null(id)) {
			ck_assert_int_eq(code, -32600);
			seen |= 1u << 0;
			continue;
		}
		switch (json_integer_value(id)) {
		case 1:     /* 2025-03-26 has no structuredContent */
			ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
				json_object_get(res, "content"), 0), "text")),
			                 "42\nsession now holds: time\n");
			break;
		case 2:
			ck_assert(json_is_object(res) && json_object_size(res) == 0);
			break;
		case 3:
			ck_assert(json_is_true(json_object_get(res, "isError")));
			break;
		case 4:
			ck_assert_int_eq(code, -32600);
			break;
		case 5:
			ck_assert_int_eq(code, -32602);
			break;
		default:
			ck_abort_msg("an answer to id %lld in the batch", (long long)json_integer_value(id));
		}
		seen |= 1u << json_integer_value(id);
	}
	ck_assert_uint_eq(seen, 0x3f);
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

START_TEST(malformed_messages_get_errors_and_the_server_goes_on)
{
	static const char in[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"   /* before initialize */
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"
		INIT("2025-06-18")
		"this is not json\n"
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\n"
		"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n"
		"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":6}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/list\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{}}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"perl\",\"arguments\":{}}}\n"
		CALL(10, "{\"code\":42}")
		CALL(11, "{\"code\":\"1\",\"timeout\":-1}")
		CALL(12, "{\"code\":\"1\",\"session\":\"../etc\"}")
		CALL(13, "{\"code\":\"1\",\"session\":\"all\"}")
		CALL(14, "{\"code\":\"1\",\"colour\":\"red\"}")
		CALL(15, "{\"code\":\"   \"}")
		"{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-06-18\"}}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":17,\"result\":{}}\n"                  /* a response */
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n"
		"\n"
		"{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"ping\"}";           /* no newline */
	struct cli_run r;
	json_t *all, *o;
	size_t i, nulls = 0;

	run_mcp(&r, in, 0, NULL);
	all = lines(&r);
	ck_assert_int_eq(error_code(all, 1), -32002);
	ck_assert(json_is_object(json_object_get(answer(all, 2), "result")));
	ck_assert_int_eq(error_code(all, 5), -32600);
	ck_assert_int_eq(error_code(all, 6), -32600);
	ck_assert_int_eq(error_code(all, 7), -32601);
	for (json_int_t id = 8; id <= 15; id++)
		ck_assert_msg(error_code(all, id) == -32602, "id %lld: %.3000s", (long long)id, r.out);
	ck_assert_int_eq(error_code(all, 16), -32600);
	ck_assert(!answer(all, 17));
	ck_assert(json_is_object(json_object_get(answer(all, 18), "result")));
	json_array_foreach(all, i, o)
		if (json_is_null(json_object_get(o, "id"))) {
			int code = (int)json_integer_value(json_object_get(json_object_get(o, "error"),
			                                                   "code"));

			ck_assert(code == -32700 || code == -32600);
			nulls++;
		}
	/* not json, cut short, a batch, a fractional id */
	ck_assert_msg(nulls == 4, "%zu errors without an id:\n%.3000s", nulls, r.out);
	ck_assert(cli_has(r.out, "batches"));
	/* Nothing answers a notification or a response: 16 ids, 4 nulls. */
	ck_assert_int_eq(json_array_size(all), 16 + 4);
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

START_TEST(oversized_message_is_refused_and_the_stream_recovers)
{
	size_t big = ((size_t)16 << 20) + 100, off;
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	                           "{\"pad\":\"";
	static const char tail[] = "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n";
	char *in = malloc(big + sizeof(head) + sizeof(tail));
	struct cli_run r;
	json_t *all, *first;

	ck_assert(in);
	memcpy(in, head, sizeof(head) - 1);
	off = sizeof(head) - 1;
	memset(in + off, 'x', big);
	off += big;
	memcpy(in + off, tail, sizeof(tail) - 1);
	off += sizeof(tail) - 1;
	run_mcp(&r, in, off, NULL);
	all = lines(&r);
	ck_assert_int_eq(json_array_size(all), 2);
	first = json_array_get(all, 0);
	ck_assert(json_is_null(json_object_get(first, "id")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(first, "error"),
	                                                    "code")), -32600);
	ck_assert(cli_has(r.out, "larger than 16777216 bytes"));
	ck_assert(json_is_object(json_object_get(answer(all, 2), "result")));
	json_decref(all);
	cli_run_release(&r);
	free(in);
}
END_TEST

START_TEST(stdout_holds_only_protocol_messages)
{
	struct cli_run r;
	json_t *all, *res;

	run_mcp(&r, INIT("2025-06-18")
	        CALL(1, "{\"code\":\"import os, sys\\nos.write(1, b'raw fd 1\\\\n')\\n"
	                "os.write(2, b'raw fd 2\\\\n')\\nprint('printed')\\n"
	                "sys.__stdout__.write('dunder\\\\n')\\n'value'\",\"session\":\"io\"}"),
	        0, NULL);
	all = lines(&r);
	ck_assert_int_eq(json_array_size(all), 2);
	res = json_object_get(json_object_get(answer(all, 1), "result"), "structuredContent");
	ck_assert_msg(cli_has(json_string_value(json_object_get(res, "stdout")), "printed"),
	              "%.3000s", r.out);
	ck_assert_str_eq(json_string_value(json_object_get(res, "value")), "'value'");
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

START_TEST(failing_cells_are_tool_errors)
{
	struct cli_run r;
	json_t *all, *res;
	const char *text;

	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"raise ValueError('no')\",\"session\":\"e\"}")
	        CALL(2, "{\"code\":\"def f(:\",\"session\":\"e\"}")
	        CALL(3, "{\"code\":\"import time\\ntime.sleep(30)\",\"session\":\"e\","
	                "\"timeout\":0.5}"), 0, NULL);
	all = lines(&r);
	for (json_int_t id = 1; id <= 3; id++) {
		res = json_object_get(answer(all, id), "result");
		ck_assert_msg(json_is_true(json_object_get(res, "isError")), "%.3000s", r.out);
	}
	res = json_object_get(answer(all, 1), "result");
	text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"),
	                                                        0), "text"));
	ck_assert_msg(cli_has(text, "ValueError: no"), "%s", text);
	res = json_object_get(json_object_get(answer(all, 3), "result"), "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "timeout");
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* The text block of a tools/call answer. */
static const char *result_text(json_t *all, json_int_t id)
{
	json_t *res = json_object_get(answer(all, id), "result");

	return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"),
	                                                        0), "text"));
}

static bool is_tool_error(json_t *all, json_int_t id)
{
	return json_is_true(json_object_get(json_object_get(answer(all, id), "result"),
	                                    "isError"));
}

#define EXPORT(id, args) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\"," \
	"\"params\":{\"name\":\"export_notebook\",\"arguments\":" args "}}\n"

/* export_notebook: --export's text as an embedded resource, what it holds
 * as structured content; a missing session is a tool error, a bad
 * argument a protocol error. */
START_TEST(export_notebook_tool_answers_and_refuses)
{
	struct cli_run r;
	json_t *all, *res, *resource;
	const char *text;
	/* The CLI's calls here are in the servers' namespace. */
	cli_test_add_env(&fx, "DOLSOT_NAMESPACE=mcp");

	CLI(&r, "--session", "nb", "x = 6 * 7\nx");
	ck_code(&r, 0);
	cli_run_release(&r);
	run_mcp(&r, INIT("2025-11-25")
	        EXPORT(1, "{\"session\":\"nb\",\"format\":\"md\"}")
	        EXPORT(2, "{\"session\":\"missing\"}")
	        EXPORT(3, "{\"format\":\"md\"}")
	        EXPORT(4, "{\"session\":\"nb\",\"format\":\"pdf\"}")
	        EXPORT(5, "{\"session\":\"all\"}")
	        EXPORT(6, "{\"session\":\"nb\",\"code\":\"1\"}"), 0, NULL);
	all = lines(&r);
	res = json_object_get(answer(all, 1), "result");
	resource = json_object_get(json_array_get(json_object_get(res, "content"), 1), "resource");
	ck_assert_str_eq(json_string_value(json_object_get(resource, "mimeType")), "text/markdown");
	ck_assert_str_eq(json_string_value(json_object_get(resource, "uri")),
	                 "dolsot://sessions/nb/history.md");
	text = json_string_value(json_object_get(resource, "text"));
	ck_assert_msg(cli_has(text, "```python\nx = 6 * 7\nx\n```\n\n*Out [1]:*\n\n```text\n"
	                            "42\n```\n"), "%s", text);
	res = json_object_get(res, "structuredContent");
	ck_assert_int_eq(json_integer_value(json_object_get(res, "states")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(res, "current")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(res, "format")), "md");
	ck_assert(is_tool_error(all, 2));
	ck_assert_msg(cli_has(result_text(all, 2), "session 'missing' does not exist"), "%s",
	              r.out);
	for (json_int_t id = 3; id <= 6; id++)
		ck_assert_msg(error_code(all, id) == -32602, "%lld: %.3000s", (long long)id, r.out);
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* The python tool's fork and replace: --fork SRC and --replace.  Each step
 * is a server of its own, so no two calls of a step depend on each other's
 * order (calls on different sessions run at once). */
START_TEST(python_tool_forks_a_session)
{
	struct cli_run r;
	json_t *all, *res;
	const char *text;
	/* The CLI's calls here are in the servers' namespace. */
	cli_test_add_env(&fx, "DOLSOT_NAMESPACE=mcp");

	run_mcp(&r, INIT("2025-11-25") CALL(1, "{\"code\":\"x = [1]\",\"session\":\"src\"}"),
	        0, NULL);
	cli_run_release(&r);
	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"x.append(2)\\nx\",\"session\":\"dst\",\"fork\":\"src\"}")
	        CALL(2, "{\"code\":\"x\",\"fork\":\"src\"}")
	        CALL(3, "{\"code\":\"1\",\"session\":\"new\",\"fork\":\"nosuch\"}"), 0, NULL);
	all = lines(&r);
	res = json_object_get(answer(all, 1), "result");
	ck_assert_msg(!is_tool_error(all, 1), "%.3000s", r.out);
	ck_assert_str_eq(structured_str(res, "value"), "[1, 2]");
	/* No session: a new one, made as the copy. */
	res = json_object_get(answer(all, 2), "result");
	ck_assert_str_eq(structured_str(res, "value"), "[1]");
	ck_assert_msg(cli_has(result_text(all, 2), "this call made session 'mcp-"), "%s",
	              result_text(all, 2));
	ck_assert(is_tool_error(all, 3));
	text = result_text(all, 3);
	ck_assert_msg(cli_has(text, "cannot fork session 'nosuch': there is no such session"),
	              "%s", text);
	json_decref(all);
	cli_run_release(&r);
	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"x\",\"session\":\"src\"}")
	        CALL(2, "{\"code\":\"x\",\"session\":\"dst\",\"fork\":\"src\"}"), 0, NULL);
	all = lines(&r);
	ck_assert_str_eq(structured_str(json_object_get(answer(all, 1), "result"), "value"),
	                 "[1]");
	ck_assert(is_tool_error(all, 2));
	ck_assert_msg(cli_has(result_text(all, 2), "'dst' already exists (add --replace"), "%s",
	              result_text(all, 2));
	json_decref(all);
	cli_run_release(&r);
	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"x\",\"session\":\"dst\"}"), 0, NULL);
	all = lines(&r);
	ck_assert_str_eq(structured_str(json_object_get(answer(all, 1), "result"), "value"),
	                 "[1, 2]");
	json_decref(all);
	cli_run_release(&r);
	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"x.append(3)\\nx\",\"session\":\"dst\",\"fork\":\"src\","
	                "\"replace\":true}"), 0, NULL);
	all = lines(&r);
	ck_assert_str_eq(structured_str(json_object_get(answer(all, 1), "result"), "value"),
	                 "[1, 3]");
	json_decref(all);
	cli_run_release(&r);
	/* Wrong arguments are invalid params, before any call. */
	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"1\",\"session\":\"a\",\"fork\":\"a\"}")
	        CALL(2, "{\"code\":\"1\",\"session\":\"a\",\"fork\":\"all\"}")
	        CALL(3, "{\"code\":\"1\",\"session\":\"a\",\"fork\":7}")
	        CALL(4, "{\"code\":\"1\",\"session\":\"a\",\"fork\":\"../x\"}")
	        CALL(5, "{\"code\":\"1\",\"session\":\"a\",\"replace\":true}")
	        CALL(6, "{\"code\":\"1\",\"session\":\"a\",\"fork\":\"src\",\"replace\":1}"),
	        0, NULL);
	all = lines(&r);
	for (json_int_t id = 1; id <= 6; id++)
		ck_assert_msg(error_code(all, id) == -32602, "id %lld: %.3000s", (long long)id, r.out);
	ck_assert(cli_has(r.out, "a session cannot be forked into itself"));
	ck_assert(cli_has(r.out, "\\\"replace\\\" goes with \\\"fork\\\""));
	json_decref(all);
	cli_run_release(&r);
	cli_ck_state(&fx, "src", "x", "[1]\n");
}
END_TEST

/* The revisions the server speaks, the newest first; the first two have
 * structuredContent. */
static const char *const revisions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
                                         "2024-11-05" };

static json_t *run_mcp_fmt(struct cli_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* `dolsot mcp` on the lines fmt makes; its answers. */
static json_t *run_mcp_fmt(struct cli_run *r, const char *fmt, ...)
{
	char *in = NULL;
	va_list ap;

	va_start(ap, fmt);
	ck_assert(vasprintf(&in, fmt, ap) > 0);
	va_end(ap);
	run_mcp(r, in, 0, NULL);
	free(in);
	return lines(r);
}

/* The structuredContent of the answer to id: present when structured,
 * absent otherwise. */
static json_t *structured_of(json_t *all, json_int_t id, bool structured)
{
	json_t *sc = json_object_get(json_object_get(answer(all, id), "result"),
	                             "structuredContent");

	ck_assert_msg(structured ? sc != NULL : sc == NULL, "id %lld", (long long)id);
	return sc;
}

/* The history tool's text and structuredContent are --history's and
 * --history --json's, byte for byte and member for member. */
static void ck_history_is_the_clis(json_t *all, json_int_t id, const char *sid,
                                   bool structured)
{
	json_t *sc = structured_of(all, id, structured), *cli;
	struct cli_run r;

	CLI(&r, "--history", sid);
	ck_code(&r, 0);
	ck_assert_str_eq(result_text(all, id), r.out);
	cli_run_release(&r);
	CLI(&r, "--history", sid, "--json");
	ck_code(&r, 0);
	cli = json_loads(r.out, 0, NULL);
	ck_assert_msg(!structured || json_equal(sc, cli), "structuredContent:\n%s\n--json:\n%s",
	              json_dumps(sc, JSON_COMPACT), r.out);
	json_decref(cli);
	cli_run_release(&r);
}

/* A move's answer: --undo's (or --checkout's) line, and its object. */
static void ck_move(json_t *all, json_int_t id, bool structured, const char *action,
                    const char *sid, int to, int now)
{
	char line[256], obj[256];
	json_t *sc = structured_of(all, id, structured);
	char *got = sc ? json_dumps(sc, JSON_COMPACT) : NULL;

	snprintf(line, sizeof(line), "%s %s: back to state %d, now state %d\n", action, sid, to,
	         now);
	snprintf(obj, sizeof(obj), "{\"session\":\"%s\",\"action\":\"%s\",\"to\":%d,"
	         "\"state\":%d}", sid, action, to, now);
	ck_assert(!is_tool_error(all, id));
	ck_assert_str_eq(result_text(all, id), line);
	if (structured)
		ck_assert_str_eq(got, obj);
	free(got);
}

/* Every unit file of the store removed: the kept states become gone. */
static void lose_every_unit(void)
{
	char dir[4400], name[63];
	struct cli_run r;

	snprintf(dir, sizeof(dir), "%s/objects", fx.store);
	memset(name, '?', 62);
	name[62] = '\0';
	cli_run(&r, &(struct cli_opts){ .prog = "/usr/bin/find" },
	        (const char *const[]){ "find", dir, "-mindepth", "2", "-maxdepth", "2", "-type",
	                               "f", "-name", name, "-delete", NULL });
	ck_assert_msg(r.code == 0, "find: %s", r.err);
	cli_run_release(&r);
}

#define H "\"session\":\"h%2$zu\""
#define G "\"session\":\"g%2$zu\""
#define O "\"session\":\"o%2$zu\""

/* history, undo and checkout under every revision: the CLI's text and
 * objects, the engine's refusals as tool errors (a missing session, no
 * earlier state, a state not kept, a state gone), wrong arguments as
 * invalid params. */
START_TEST(history_undo_and_checkout_tools)
{
	for (size_t i = 0; i < sizeof(revisions) / sizeof(*revisions); i++) {
		bool st = i < 2;
		char sid[16], gid[16];
		struct cli_run r;
		json_t *all;
	/* The CLI's calls here are in the servers' namespace. */
	cli_test_add_env(&fx, "DOLSOT_NAMESPACE=mcp");

		snprintf(sid, sizeof(sid), "h%zu", i);
		snprintf(gid, sizeof(gid), "g%zu", i);
		all = run_mcp_fmt(&r, INIT("%1$s")
		                  CALL(1, "{\"code\":\"x = [1, 2, 3]\"," H "}")
		                  CALL(2, "{\"code\":\"x = x[:1]\"," H "}")
		                  TOOL(3, "history", "{" H "}")
		                  CALL(4, "{\"code\":\"x = 1\"," G "}")
		                  CALL(5, "{\"code\":\"x = 2\"," G "}")
		                  CALL(6, "{\"code\":\"y = 1\"," O "}"), revisions[i], i);
		ck_history_is_the_clis(all, 3, sid, st);
		ck_assert_msg(strncmp(result_text(all, 3), "1\t", 2) == 0 &&
		              cli_has(result_text(all, 3), "\n2*\t"), "%s", result_text(all, 3));
		json_decref(all);
		cli_run_release(&r);

		all = run_mcp_fmt(&r, INIT("%1$s")
		                  TOOL(1, "undo", "{" H "}")
		                  CALL(2, "{\"code\":\"x\"," H "}")
		                  TOOL(3, "checkout", "{" H ",\"state\":2}")
		                  CALL(4, "{\"code\":\"x\"," H "}")
		                  TOOL(5, "undo", "{\"session\":\"nosuch\"}")
		                  TOOL(6, "undo", "{" O "}")
		                  TOOL(7, "checkout", "{" H ",\"state\":99}")
		                  TOOL(8, "checkout", "{" H "}")
		                  TOOL(9, "checkout", "{" H ",\"state\":0}")
		                  TOOL(10, "checkout", "{" H ",\"state\":\"2\"}")
		                  TOOL(11, "checkout", "{" H ",\"state\":1.5}")
		                  TOOL(12, "undo", "{" H ",\"state\":1}")
		                  TOOL(13, "history", "{\"session\":\"all\"}"), revisions[i], i);
		ck_move(all, 1, st, "undo", sid, 1, 3);
		ck_assert_str_eq(result_text(all, 2), "[1, 2, 3]\nsession now holds: x\n");
		ck_move(all, 3, st, "checkout", sid, 2, 5);
		ck_assert_str_eq(result_text(all, 4), "[1]\nsession now holds: x\n");
		ck_assert(is_tool_error(all, 5) && is_tool_error(all, 6) && is_tool_error(all, 7));
		ck_assert_str_eq(result_text(all, 5), "dolsot: session 'nosuch' does not exist");
		ck_assert_msg(cli_has(result_text(all, 6), "has no earlier state to go back to"), "%s",
		              result_text(all, 6));
		ck_assert_msg(cli_has(result_text(all, 7), "has no state 99: it keeps states 1 to 6"),
		              "%s", result_text(all, 7));
		for (json_int_t id = 8; id <= 13; id++)
			ck_assert_msg(error_code(all, id) == -32602, "id %lld: %.3000s", (long long)id,
			              r.out);
		ck_assert(cli_has(r.out, "checkout needs \\\"state\\\""));
		json_decref(all);
		cli_run_release(&r);

		lose_every_unit();
		all = run_mcp_fmt(&r, INIT("%1$s")
		                  TOOL(1, "undo", "{" G "}")
		                  TOOL(2, "history", "{" G "}"), revisions[i], i);
		ck_assert(is_tool_error(all, 1));
		ck_assert_msg(cli_has(result_text(all, 1), "dolsot: state 1 of session 'g"),
		              "%s", result_text(all, 1));
		ck_assert_msg(cli_has(result_text(all, 1), "is no longer in the store"), "%s",
		              result_text(all, 1));
		ck_assert_msg(strncmp(result_text(all, 2), "1\t-\tgone\t", 9) == 0, "%s",
		              result_text(all, 2));
		ck_history_is_the_clis(all, 2, gid, st);
		json_decref(all);
		cli_run_release(&r);
	}
	cli_ck_state(&fx, "h0", "x", "[1]\n");
}
END_TEST

#undef H
#undef G
#undef O

#define COUNTER "n = globals().get('n', 0) + 1\\nprint('n is', n)\\nn"
#define FIGURE "import matplotlib.pyplot as plt\\nplt.figure(figsize=(1, 1), dpi=20)\\n" \
	"plt.plot([1, 2])\\n" COUNTER

/* The answer to id, its "id" member left out, as compact text. */
static char *answer_text(json_t *all, json_int_t id)
{
	json_t *o = json_deep_copy(answer(all, id));
	char *text;

	ck_assert_msg(o, "no answer to id %lld", (long long)id);
	json_object_del(o, "id");
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return text;
}

/* The python tool's call_id (--call-id): a call repeating an id the session
 * committed is answered, by another server, with its first answer (text,
 * images, structuredContent and isError alike), and its cell does not run
 * again; an error is recorded too. */
START_TEST(python_tool_call_id_replays_the_recorded_answer)
{
	const char *calls = INIT("2025-11-25")
		CALL(1, "{\"code\":\"" COUNTER "\",\"session\":\"c\",\"call_id\":\"k-1\"}")
		CALL(2, "{\"code\":\"" FIGURE "\",\"session\":\"f\",\"call_id\":\"k-2\"}")
		CALL(3, "{\"code\":\"raise ValueError('no')\",\"session\":\"e\","
		        "\"call_id\":\"k-3\"}");
	struct cli_run first, again;
	json_t *a1, *a2, *img;
	char *t1, *t2;
	/* The CLI's calls here are in the servers' namespace. */
	cli_test_add_env(&fx, "DOLSOT_NAMESPACE=mcp");

	run_mcp(&first, calls, 0, NULL);
	run_mcp(&again, calls, 0, NULL);
	a1 = lines(&first);
	a2 = lines(&again);
	for (json_int_t id = 1; id <= 3; id++) {
		t1 = answer_text(a1, id);
		t2 = answer_text(a2, id);
		ck_assert_str_eq(t2, t1);
		free(t1);
		free(t2);
	}
	ck_assert_str_eq(structured_str(json_object_get(answer(a2, 1), "result"), "value"), "1");
	ck_assert_msg(cli_has(result_text(a2, 1), "n is 1\n1\n"), "%s", result_text(a2, 1));
	img = json_array_get(json_object_get(json_object_get(answer(a2, 2), "result"),
	                                     "content"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(img, "type")), "image");
	ck_assert_str_eq(json_string_value(json_object_get(img, "mimeType")), "image/png");
	ck_assert_msg(cli_has(result_text(a2, 2), "dolsot: image 1 (20x20 image/png) is attached"),
	              "%s", result_text(a2, 2));
	ck_assert(is_tool_error(a2, 3));
	ck_assert_msg(cli_has(result_text(a2, 3), "ValueError: no"), "%s", result_text(a2, 3));
	json_decref(a1);
	json_decref(a2);
	cli_run_release(&first);
	cli_run_release(&again);
	cli_ck_state(&fx, "c", "n", "1\n");
	cli_ck_state(&fx, "f", "n", "1\n");
}
END_TEST

/* A wrong call_id is invalid params before any call, and so is one
 * without a session (its retry would make another); the schema names it. */
START_TEST(python_tool_call_id_is_checked)
{
	struct cli_run r;
	json_t *all, *props;
	char long_id[160];

	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	{
		char input[2048];

		snprintf(input, sizeof(input), "%s%s%s%s%s%s%s\"}}}\n"
		         "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}\n",
		         INIT("2025-11-25"),
		         CALL(1, "{\"code\":\"1\",\"session\":\"a\",\"call_id\":7}"),
		         CALL(2, "{\"code\":\"1\",\"session\":\"a\",\"call_id\":\"no spaces\"}"),
		         CALL(3, "{\"code\":\"1\",\"session\":\"a\",\"call_id\":\"\"}"),
		         CALL(4, "{\"code\":\"1\",\"call_id\":\"k\"}"),
		         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
		         "{\"name\":\"python\",\"arguments\":{\"code\":\"1\",\"session\":\"a\","
		         "\"call_id\":\"", long_id);
		run_mcp(&r, input, 0, NULL);
	}
	all = lines(&r);
	for (json_int_t id = 1; id <= 5; id++)
		ck_assert_msg(error_code(all, id) == -32602, "id %lld: %.3000s", (long long)id, r.out);
	ck_assert(cli_has(r.out, "\\\"call_id\\\" must be a string"));
	ck_assert(cli_has(r.out, "byte 3 is 0x20"));
	ck_assert(cli_has(r.out, "a call id is 1 to 128 characters (got 129)"));
	ck_assert(cli_has(r.out, "\\\"call_id\\\" needs \\\"session\\\""));
	props = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
		answer(all, 9), "result"), "tools"), 0), "inputSchema"), "properties");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(props, "call_id"),
	                                                   "type")), "string");
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* The run flags reach every call: --env, and --timeout as the cap. */
START_TEST(run_flags_apply_to_every_call)
{
	struct cli_run r;
	json_t *all, *res;

	run_mcp(&r, INIT("2025-06-18")
	        CALL(1, "{\"code\":\"import os\\nos.environ['MCP_FLAG']\",\"session\":\"f\"}")
	        CALL(2, "{\"code\":\"import time\\ntime.sleep(30)\",\"session\":\"f\","
	                "\"timeout\":1000}"),
	        0, (const char *const[]){ "--env", "MCP_FLAG=from-the-flag", "--timeout", "1",
	                                  NULL });
	all = lines(&r);
	res = json_object_get(json_object_get(answer(all, 1), "result"), "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(res, "value")), "'from-the-flag'");
	res = json_object_get(json_object_get(answer(all, 2), "result"), "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(res, "status")), "timeout");
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* --mount (so --sandbox) too: the cell sees the mount, and the python
 * tool's description lists it, from --describe. */
START_TEST(sandbox_flags_apply_to_every_call)
{
	char dir[4400], spec[4500], file[4500];
	struct cli_run r;
	json_t *all, *res, *tool;

	snprintf(dir, sizeof(dir), "%s/shared", fx.tmp);
	ck_assert(mkdir(dir, 0755) == 0);
	snprintf(file, sizeof(file), "%s/note.txt", dir);
	cli_write_file(file, "seen inside\n");
	snprintf(spec, sizeof(spec), "%s:/data", dir);
	run_mcp(&r, INIT("2025-06-18")
	        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"
	        CALL(2, "{\"code\":\"import os\\nopen('/data/note.txt').read(), "
	                "os.path.exists('/etc/shadow')\",\"session\":\"sb\"}"),
	        0, (const char *const[]){ "--mount", spec, NULL });
	all = lines(&r);
	tool = json_array_get(json_object_get(json_object_get(answer(all, 1), "result"), "tools"), 0);
	ck_assert_msg(cli_has(json_string_value(json_object_get(tool, "description")),
	                      "mount /data (ro): 1 entry\n  note.txt\n"), "%.3000s", r.out);
	res = json_object_get(json_object_get(answer(all, 2), "result"), "structuredContent");
	ck_assert_msg(json_is_string(json_object_get(res, "value")) &&
	              strcmp(json_string_value(json_object_get(res, "value")),
	                     "('seen inside\\n', False)") == 0, "%.3000s", r.out);
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* A long --describe text is cut at a line end within the bound. */
START_TEST(describe_in_the_description_is_bounded)
{
	struct cli_run r;
	json_t *all, *tool;
	const char *desc, *gets;

	run_mcp(&r, INIT("2025-06-18") "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n",
	        0, (const char *const[]){ "--toolbox", "os:o", "--toolbox", "subprocess:sp",
	                                  "--toolbox", "socket:so", "--toolbox", "shutil:sh",
	                                  NULL });
	all = lines(&r);
	tool = json_array_get(json_object_get(json_object_get(answer(all, 1), "result"), "tools"), 0);
	desc = json_string_value(json_object_get(tool, "description"));
	ck_assert(desc);
	gets = strstr(desc, "What a cell gets:\n");
	ck_assert_msg(gets, "%.3000s", desc);
	gets += strlen("What a cell gets:\n");
	ck_assert_msg(strncmp(gets, "toolbox o (module os)", 21) == 0, "%.300s", gets);
	ck_assert_msg(strlen(gets) <= 8192 + 100, "%zu bytes", strlen(gets));
	ck_assert_msg(cli_has(gets, "\n... (cut here: `dolsot --describe` with the same flags shows "
	                      "the rest)\n"), "%.300s", gets + strlen(gets) - 200);
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* A timeout argument above the server's --timeout is capped, and the
 * result says so (text and warnings); one below it is not. */
START_TEST(capped_timeout_is_said)
{
	struct cli_run r;
	json_t *all, *res, *warnings;
	const char *text;

	run_mcp(&r, INIT("2025-11-25")
	        CALL(1, "{\"code\":\"1\",\"session\":\"cap\",\"timeout\":1000}")
	        CALL(2, "{\"code\":\"2\",\"session\":\"cap2\",\"timeout\":4}"), 0,
	        (const char *const[]){ "--timeout", "30", NULL });
	all = lines(&r);
	res = json_object_get(answer(all, 1), "result");
	ck_assert_msg(!is_tool_error(all, 1), "%.3000s", r.out);
	warnings = json_object_get(json_object_get(res, "structuredContent"), "warnings");
	ck_assert_msg(json_array_size(warnings) == 1 &&
	              cli_has(json_string_value(json_array_get(warnings, 0)),
	                      "warning: timeout 1000 s was capped at 30 s, the server's --timeout"),
	              "%.3000s", r.out);
	text = result_text(all, 1);
	ck_assert_msg(cli_has(text, "was capped at 30 s"), "%s", text);
	ck_assert_msg(!cli_has(result_text(all, 2), "capped"), "%s", result_text(all, 2));
	json_decref(all);
	cli_run_release(&r);
}
END_TEST

/* A toolbox that does not import is named at start, on stderr and in the
 * python tool's description, with why; one that imports is not. */
START_TEST(toolboxes_that_do_not_import_are_named_at_start)
{
	struct cli_run r;
	json_t *all, *tool;
	const char *desc;

	run_mcp(&r, INIT("2025-06-18") "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n",
	        0, (const char *const[]){ "--toolbox", "json:js", "--toolbox",
	                                  "no_such_toolbox_mod:nt", NULL });
	ck_assert_msg(cli_has(r.err, "dolsot mcp: toolbox 'no_such_toolbox_mod' (alias nt) cannot "
	                      "be imported: ModuleNotFoundError: No module named "
	                      "'no_such_toolbox_mod'; every python call fails until it imports"),
	              "%s", r.err);
	ck_assert_msg(!cli_has(r.err, "'json'"), "%s", r.err);
	all = lines(&r);
	tool = json_array_get(json_object_get(json_object_get(answer(all, 1), "result"), "tools"), 0);
	desc = json_string_value(json_object_get(tool, "description"));
	ck_assert_msg(cli_has(desc, "Toolboxes that do not import here, so every call fails until "
	                      "they do"), "%s", desc);
	ck_assert_msg(cli_has(desc, "toolbox 'no_such_toolbox_mod' (alias nt) cannot be imported: "
	                      "ModuleNotFoundError"), "%s", desc);
	json_decref(all);
	cli_run_release(&r);
	/* All import: nothing said. */
	run_mcp(&r, INIT("2025-06-18"), 0, (const char *const[]){ "--toolbox", "json:js", NULL });
	ck_assert_msg(!cli_has(r.err, "cannot be imported"), "%s", r.err);
	cli_run_release(&r);
}
END_TEST

/* A server with pipes on stdin and stdout, in the test's environment. */
struct live {
	pid_t pid;
	int in, out;
};

static void live_start(struct live *l)
{
	int inp[2], outp[2];

	ck_assert(pipe2(inp, O_CLOEXEC) == 0 && pipe2(outp, O_CLOEXEC) == 0);
	l->pid = fork();
	ck_assert(l->pid >= 0);
	if (l->pid == 0) {
		if (dup2(inp[0], 0) < 0 || dup2(outp[1], 1) < 0)
			_exit(125);
		for (size_t i = 0; fx.env[i]; i++) {
			char name[256];
			const char *eq = strchr(fx.env[i], '=');

			if (!eq) {
				unsetenv(fx.env[i]);
				continue;
			}
			snprintf(name, sizeof(name), "%.*s", (int)(eq - fx.env[i]), fx.env[i]);
			setenv(name, eq + 1, 1);
		}
		execl(cli_bin(), "dolsot", "mcp", (char *)NULL);
		_exit(126);
	}
	close(inp[0]);
	close(outp[1]);
	l->in = inp[1];
	l->out = outp[0];
}

static void live_send(struct live *l, const char *text)
{
	ck_assert(write(l->in, text, strlen(text)) == (ssize_t)strlen(text));
}

/* Wait up to seconds for the server to exit; its wait status, or -1. */
static int live_wait(struct live *l, double seconds)
{
	double end = cli_now() + seconds;
	int status;

	while (cli_now() < end) {
		pid_t got = waitpid(l->pid, &status, WNOHANG);

		if (got == l->pid)
			return status;
		usleep(50000);
	}
	kill(l->pid, SIGKILL);
	waitpid(l->pid, &status, 0);
	return -1;
}

/* The pid a cell wrote into path, once it has. */
static pid_t wait_pid_file(const char *path)
{
	for (int i = 0; i < 600; i++) {
		size_t n = 0;
		char *text = access(path, R_OK) == 0 ? cli_read_file(path, &n) : NULL;
		long pid = text && n ? strtol(text, NULL, 10) : 0;

		free(text);
		if (pid > 0)
			return (pid_t)pid;
		usleep(50000);
	}
	ck_abort_msg("the cell never wrote %s", path);
	return -1;
}

static char *sleeper(const char *pidfile)
{
	char *call = NULL;

	ck_assert(asprintf(&call, CALL(1, "{\"code\":\"import os, time\\nopen('%s', 'w')"
	                   ".write(str(os.getpid()))\\ntime.sleep(60)\",\"session\":\"z\"}"),
	                   pidfile) > 0);
	return call;
}

enum { GONE_CLIENT, GONE_SIGTERM };

static void client_disappears(int how)
{
	struct live l;
	char pidfile[4400], desc[4096], *call;
	pid_t cell;
	int status;

	snprintf(pidfile, sizeof(pidfile), "%s/cell.pid", fx.tmp);
	call = sleeper(pidfile);
	live_start(&l);
	live_send(&l, INIT("2025-06-18"));
	live_send(&l, call);
	cell = wait_pid_file(pidfile);
	ck_assert(cli_pid_alive(cell));
	if (how == GONE_CLIENT) {
		close(l.in);
		close(l.out);
	} else {
		kill(l.pid, SIGTERM);
	}
	status = live_wait(&l, 30);
	ck_assert_msg(status != -1, "the server did not exit");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	for (int i = 0; i < 200 && cli_pid_alive(cell); i++)
		usleep(50000);
	ck_assert_msg(!cli_pid_alive(cell), "the cell %d outlived its server", (int)cell);
	ck_assert_msg(cli_wait_no_strays(fx.store_env, 10, desc, sizeof(desc)) == 0,
	              "strays: %s", desc);
	if (how == GONE_SIGTERM) {
		close(l.in);
		close(l.out);
	}
	free(call);
}

START_TEST(client_gone_mid_call_ends_everything)
{
	client_disappears(GONE_CLIENT);
}
END_TEST

START_TEST(sigterm_mid_call_ends_everything)
{
	client_disappears(GONE_SIGTERM);
}
END_TEST

/* stdin closed with a call in flight: it is answered, then the server exits. */
START_TEST(stdin_eof_answers_calls_in_flight_then_exits)
{
	struct live l;
	char buf[65536];
	size_t n = 0;
	int status;

	live_start(&l);
	live_send(&l, INIT("2025-06-18"));
	live_send(&l, CALL(1, "{\"code\":\"import time\\ntime.sleep(1)\\n'late'\","
	                      "\"session\":\"eof\"}"));
	close(l.in);
	for (;;) {
		ssize_t got = read(l.out, buf + n, sizeof(buf) - 1 - n);

		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	status = live_wait(&l, 30);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "status %#x", status);
	ck_assert_msg(cli_has(buf, "\"value\":\"'late'\""), "%s", buf);
	close(l.out);
}
END_TEST

/* --print-config's env holds the DOLSOT_ variables of the options table
 * (dolsot(1) ENVIRONMENT), not every name that begins with DOLSOT_. */
START_TEST(print_config_env_is_the_settings)
{
	static const char *const extra[] = { "DOLSOT_NOT_A_SETTING=1",
	                                     "DOLSOT_LIVE_IDLE=77", NULL };
	struct cli_run r;
	json_t *o, *env;

	RUN_IN(&r, NULL, extra, "mcp", "--print-config", "generic");
	ck_assert_msg(r.code == 0, "%s", r.err);
	o = json_loads(r.out, 0, NULL);
	env = json_object_get(o, "env");
	ck_assert_ptr_nonnull(env);
	ck_assert_str_eq(json_string_value(json_object_get(env, "DOLSOT_LIVE_IDLE")), "77");
	ck_assert_str_eq(json_string_value(json_object_get(env, "DOLSOT_CACHE_DIR")), fx.store);
	ck_assert_msg(!json_object_get(env, "DOLSOT_NOT_A_SETTING"), "%s", r.out);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* What the toolboxes need travels with the snippet: PYTHONPATH made
 * absolute (this directory first with --toolbox), VIRTUAL_ENV, and the
 * server's namespace. */
START_TEST(print_config_carries_the_toolboxes_environment)
{
	static const char *const extra[] = { "PYTHONPATH=lib:/abs/tools", "VIRTUAL_ENV=/venv",
	                                     NULL };
	static const char *const bare[] = { "PYTHONPATH", "VIRTUAL_ENV", NULL };
	char want[4500];
	struct cli_run r;
	json_t *o, *env;

	RUN_IN(&r, fx.tmp, extra, "mcp", "--toolbox", "json:js", "--print-config", "generic");
	ck_assert_msg(r.code == 0, "%s", r.err);
	o = json_loads(r.out, 0, NULL);
	env = json_object_get(o, "env");
	snprintf(want, sizeof(want), "%s:%s/lib:/abs/tools", fx.tmp, fx.tmp);
	ck_assert_str_eq(json_string_value(json_object_get(env, "PYTHONPATH")), want);
	ck_assert_str_eq(json_string_value(json_object_get(env, "VIRTUAL_ENV")), "/venv");
	ck_assert_str_eq(json_string_value(json_object_get(env, "DOLSOT_NAMESPACE")), "mcp");
	json_decref(o);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, bare, "mcp", "--namespace", "team", "--print-config", "generic");
	ck_assert_msg(r.code == 0, "%s", r.err);
	o = json_loads(r.out, 0, NULL);
	env = json_object_get(o, "env");
	ck_assert_ptr_null(json_object_get(env, "PYTHONPATH"));
	ck_assert_ptr_null(json_object_get(env, "VIRTUAL_ENV"));
	ck_assert_str_eq(json_string_value(json_object_get(env, "DOLSOT_NAMESPACE")), "team");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(print_config_for_each_host)
{
	struct cli_run r;
	json_t *o, *args;
	char want[4400];

	CLI(&r, "mcp", "--timeout", "5", "--print-config", "claude");
	ck_assert_msg(r.code == 0, "%s", r.err);
	o = json_loads(r.out, 0, NULL);
	o = json_object_get(json_object_get(o, "mcpServers"), "dolsot");
	ck_assert_str_eq(json_string_value(json_object_get(o, "command")), cli_bin());
	args = json_object_get(o, "args");
	ck_assert_int_eq(json_array_size(args), 3);
	ck_assert_str_eq(json_string_value(json_array_get(args, 0)), "mcp");
	ck_assert_str_eq(json_string_value(json_array_get(args, 2)), "5");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "env"),
	                                                   "DOLSOT_CACHE_DIR")), fx.store);
	cli_run_release(&r);

	CLI(&r, "mcp", "--print-config=generic", "--env", "A=b");
	ck_assert_msg(r.code == 0, "%s", r.err);
	o = json_loads(r.out, 0, NULL);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "args"), 1)), "--env");
	ck_assert(json_is_object(json_object_get(o, "env")));
	json_decref(o);
	cli_run_release(&r);

	CLI(&r, "mcp", "--print-config", "codex");
	ck_assert_msg(r.code == 0, "%s", r.err);
	snprintf(want, sizeof(want), "[mcp_servers.dolsot]\ncommand = \"%s\"\nargs = [\"mcp\"]\n",
	         cli_bin());
	ck_assert_msg(strncmp(r.out, want, strlen(want)) == 0, "%.3000s", r.out);
	snprintf(want, sizeof(want), "\nDOLSOT_CACHE_DIR = \"%s\"\n", fx.store);
	ck_assert_msg(cli_has(r.out, "[mcp_servers.dolsot.env]") && cli_has(r.out, want), "%s",
	              r.out);
	cli_run_release(&r);

	CLI(&r, "mcp", "--print-config", "emacs");
	ck_assert_int_eq(r.code, 2);
	ck_assert(cli_has(r.err, "unknown host 'emacs'"));
	cli_run_release(&r);
}
END_TEST

START_TEST(mcp_usage_errors)
{
	struct cli_run r;

	CLI(&r, "--print-config", "claude");
	ck_assert_int_eq(r.code, 2);
	ck_assert(cli_has(r.err, "--print-config belongs to 'dolsot mcp'"));
	cli_run_release(&r);
	CLI(&r, "mcp", "--session", "x");
	ck_assert_int_eq(r.code, 2);
	ck_assert(cli_has(r.err, "each tool call names its own session"));
	cli_run_release(&r);
	CLI(&r, "mcp", "print(1)");
	ck_assert_int_eq(r.code, 2);
	ck_assert(cli_has(r.err, "reads its calls from stdin"));
	cli_run_release(&r);
	CLI(&r, "mcp", "--mount", "/nonexistent-dir-for-mcp:/data");
	ck_assert_int_eq(r.code, 2);
	cli_run_release(&r);
}
END_TEST

/*
 * docs/SKILL.md's examples: each "$ " line of a ```console block is run by
 * /bin/sh with this binary first on PATH, in a scratch directory, and its
 * stdout must be the lines that follow, up to the next "$ " line or the
 * block's end.
 */
START_TEST(skill_examples_run)
{
	size_t len = 0, ran = 0;
	char *doc = cli_read_file("docs/SKILL.md", &len), *p, *scratch = cli_tempdir();
	char bindir[4200], path_env[8400];
	bool in_block = false;

	ck_assert(doc);
	/* "dolsot" on PATH is the binary under test, whatever its name. */
	snprintf(bindir, sizeof(bindir), "%s/bin", scratch);
	ck_assert(mkdir(bindir, 0755) == 0);
	snprintf(path_env, sizeof(path_env), "%s/dolsot", bindir);
	ck_assert(symlink(cli_bin(), path_env) == 0);
	snprintf(path_env, sizeof(path_env), "PATH=%s:/usr/bin:/bin", bindir);
	p = doc;
	while (p && *p) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(p, "```console", 10) == 0) {
			in_block = true;
		} else if (in_block && strncmp(p, "```", 3) == 0) {
			in_block = false;
		} else if (in_block && strncmp(p, "$ ", 2) == 0) {
			const char *cmd = p + 2;
			char want[16384] = "";
			size_t wn = 0;
			char *q = nl ? nl + 1 : NULL;
			struct cli_run r;

			/* The expected stdout: lines up to the next command or the end. */
			while (q && *q && strncmp(q, "$ ", 2) != 0 && strncmp(q, "```", 3) != 0) {
				char *qn = strchr(q, '\n');
				size_t ln = qn ? (size_t)(qn - q) : strlen(q);

				ck_assert(wn + ln + 2 < sizeof(want));
				memcpy(want + wn, q, ln);
				wn += ln;
				want[wn++] = '\n';
				want[wn] = '\0';
				q = qn ? qn + 1 : NULL;
			}
			{
				const char *env[CLI_TEST_ENV_MAX + 4];
				size_t n = 0;

				for (size_t i = 0; fx.env[i]; i++)
					env[n++] = fx.env[i];
				env[n++] = path_env;
				env[n] = NULL;
				cli_run(&r, &(struct cli_opts){ .env = env, .cwd = scratch,
				                                .prog = "/bin/sh" },
				        (const char *const[]){ "sh", "-c", cmd, NULL });
			}
			ck_assert_msg(strcmp(r.out, want) == 0,
			              "docs/SKILL.md: $ %s\nstdout:\n%s\nwanted:\n%s\nstderr:\n%s",
			              cmd, r.out, want, r.err);
			cli_run_release(&r);
			ran++;
			p = q;
			continue;
		}
		p = nl ? nl + 1 : NULL;
	}
	ck_assert_msg(ran >= 8, "only %zu examples found in docs/SKILL.md", ran);
	free(doc);
	cli_rmtree(scratch);
}
END_TEST

static Suite *mcp_suite(void)
{
	Suite *s = suite_create("mcp");
	TCase *sdk = tcase_create("sdk"), *raw = tcase_create("raw"),
	      *cfg = tcase_create("config");
	TCase *all[] = { sdk, raw, cfg };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 420);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(sdk, sdk_client_drives_the_server);
	tcase_add_test(sdk, inspector_cli_lists_and_calls_the_tools);
	tcase_add_test(sdk, namespaces_keep_each_host_to_its_own);
	tcase_add_test(raw, version_negotiation);
	tcase_add_test(raw, batches_under_2025_03_26);
	tcase_add_test(raw, malformed_messages_get_errors_and_the_server_goes_on);
	tcase_add_test(raw, oversized_message_is_refused_and_the_stream_recovers);
	tcase_add_test(raw, stdout_holds_only_protocol_messages);
	tcase_add_test(raw, failing_cells_are_tool_errors);
	tcase_add_test(raw, python_tool_forks_a_session);
	tcase_add_test(raw, python_tool_call_id_replays_the_recorded_answer);
	tcase_add_test(raw, python_tool_call_id_is_checked);
	tcase_add_test(raw, history_undo_and_checkout_tools);
	tcase_add_test(raw, run_flags_apply_to_every_call);
	tcase_add_test(raw, sandbox_flags_apply_to_every_call);
	tcase_add_test(raw, describe_in_the_description_is_bounded);
	tcase_add_test(raw, toolboxes_that_do_not_import_are_named_at_start);
	tcase_add_test(raw, capped_timeout_is_said);
	tcase_add_test(raw, client_gone_mid_call_ends_everything);
	tcase_add_test(raw, sigterm_mid_call_ends_everything);
	tcase_add_test(raw, stdin_eof_answers_calls_in_flight_then_exits);
	tcase_add_test(raw, export_notebook_tool_answers_and_refuses);
	tcase_add_test(cfg, print_config_for_each_host);
	tcase_add_test(cfg, print_config_env_is_the_settings);
	tcase_add_test(cfg, print_config_carries_the_toolboxes_environment);
	tcase_add_test(cfg, mcp_usage_errors);
	tcase_add_test(cfg, skill_examples_run);
	return s;
}

int main(void)
{
	return ck_run(mcp_suite());
}
