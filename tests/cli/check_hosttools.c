/*
 * check_hosttools.c - host tools (issue 37): a --tool helper and a
 * --tools-fd host called from cells as plain functions with their
 * schemas' signatures, over the call's own channel; the README's host
 * example run as written; hostile cells (malformed, oversized and
 * undeclared calls, a flood past the calls bound, a frame forged on
 * stdout, a host that does not answer, a timeout during a host call):
 * the host's waits not counted against --timeout up to DOLSOT_TOOL_WAIT;
 * each a clear error in the cell, the host unaffected, the session
 * intact; live and sandboxed calls; --describe and dolsot mcp's tool
 * description; the caller's mistakes.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

#define PYTHON "/usr/bin/python3.11"

static struct cli_test fx;
static char schema_arg[4300], add_arg[4300];

/* The helper and schema of tool add(a: int, b: int = 1) -> int. */
static const char add_schema[] =
	"{\"description\": \"Add two numbers.\", \"inputSchema\": {\"type\": \"object\", "
	"\"properties\": {\"a\": {\"type\": \"integer\", \"description\": \"the first\"}, "
	"\"b\": {\"type\": \"integer\", \"default\": 1}}, \"required\": [\"a\"]}, "
	"\"outputSchema\": {\"type\": \"integer\"}}\n";
static const char add_helper[] =
	"import json, sys\nd = json.load(sys.stdin)\nprint(json.dumps(d['a'] + d.get('b', 1)))\n";

static void write_add(void)
{
	char *schema, *helper;

	schema = cli_path(fx.tmp, "add.json");
	helper = cli_path(fx.tmp, "add.py");
	cli_write_file(schema, add_schema);
	cli_write_file(helper, add_helper);
	snprintf(schema_arg, sizeof(schema_arg), "add=%s", schema);
	snprintf(add_arg, sizeof(add_arg), "add=" PYTHON " %s", helper);
}

static void setup(void)
{
	cli_test_begin_usual(&fx);
	write_add();
}

/* --live needs the server, whichever way the suite runs. */
static void setup_server(void)
{
	cli_test_begin_server(&fx);
	write_add();
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* A cell with tool add. */
#define ADD(r, ...) CLI((r), "--tool", add_arg, "--tool-schema", schema_arg, __VA_ARGS__)

START_TEST(a_helper_tool_is_a_function_with_its_schemas_signature)
{
	struct cli_run r;

	ADD(&r, "--session", "s", "import inspect\nprint(add(2, b=5), add(a=40))\n"
	    "print(inspect.signature(add))\nprint(add.__doc__)");
	ck_code(&r, 0);
	ck_out(&r, "7 41\n(a: int, b: int = 1) -> int\nAdd two numbers.\n\nArgs:\n"
	       "    a: the first\n");
	cli_run_release(&r);
	/* Not kept: the next call without --tool has no add. */
	CLI(&r, "--session", "s", "'add' in globals()");
	ck_code(&r, 0);
	ck_out(&r, "False\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(arguments_that_do_not_fit_quote_the_signature)
{
	struct cli_run r;

	ADD(&r, "--session", "s", "add(1, 2, 3)");
	ck_code(&r, 1);
	ck_err_has(&r, "TypeError: add(a: int, b: int = 1) -> int: too many positional arguments");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_failing_helper_raises_its_stderr_and_the_session_is_intact)
{
	struct cli_run r;

	ok_call("s", "x = 1");
	CLI(&r, "--session", "s", "--tool", "fail=echo boom >&2; exit 3",
	    "try:\n    fail(q=1)\nexcept RuntimeError as e:\n    print(type(e).__name__, e)\n"
	    "x = 2\nfail()");
	ck_code(&r, 1);
	ck_out(&r, "HostToolError boom\n");
	ck_err_has(&r, "HostToolError: boom");
	cli_run_release(&r);
	ck_state("s", "x", "2\n");
}
END_TEST

START_TEST(a_helper_answering_no_json_is_an_error_in_the_cell)
{
	struct cli_run r;

	CLI(&r, "--session", "s", "--tool", "text=echo not json", "text()");
	ck_code(&r, 1);
	ck_err_has(&r, "HostToolError: tool 'text' answered text that is not JSON");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_host_that_does_not_answer_in_time_raises_timeout_error)
{
	struct cli_run r;

	cli_test_add_env(&fx, "DOLSOT_TOOL_TIMEOUT=0.5");
	ok_call("s", "x = 1");
	CLI(&r, "--session", "s", "--tool", "slow=sleep 60", "x = 2\ntry:\n    slow()\n"
	    "except TimeoutError as e:\n    print('TimeoutError:', e)\nx = 3");
	ck_code(&r, 0);
	ck_out(&r, "TimeoutError: tool 'slow' did not answer in time\n");
	cli_run_release(&r);
	ck_state("s", "x", "3\n");
	ck_no_strays();
}
END_TEST

START_TEST(waiting_on_the_host_does_not_count_against_the_timeout)
{
	struct cli_run r;

	CLI(&r, "--session", "s", "--timeout", "1", "--tool", "slow=sleep 0.6; echo 2",
	    "print(slow() + slow() + slow())");
	ck_code(&r, 0);
	ck_out(&r, "6\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_timeout_during_a_host_call_rolls_the_cell_back)
{
	struct cli_run r;

	/* Past DOLSOT_TOOL_WAIT the waiting is the cell's own time. */
	cli_test_add_env(&fx, "DOLSOT_TOOL_WAIT=0.5");
	ok_call("s", "x = 1");
	CLI(&r, "--session", "s", "--timeout", "1", "--tool", "slow=sleep 60", "x = 2\nslow()");
	ck_code(&r, 124);
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	ck_state("s", "x", "1\n");
	ck_no_strays();
}
END_TEST

/* The README's example, run as it is written there. */
START_TEST(the_readme_tools_fd_example_runs)
{
	struct cli_run r;
	char *readme = cli_read_file("README.md", NULL), *example;
	char path[8200], bin[4200], real[PATH_MAX];

	example = cli_read_file("examples/tools_host.py", NULL);
	ck_assert_msg(readme && example && strstr(readme, example),
	              "README.md lacks examples/tools_host.py as written");
	/* The example runs `dolsot` from PATH: the binary under test, by that
	 * name (make asan's is build/dolsot-asan). */
	ck_assert_ptr_nonnull(realpath(cli_bin(), real));
	snprintf(bin, sizeof(bin), "%s/dolsot", fx.tmp);
	ck_assert_int_eq(symlink(real, bin), 0);
	snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", fx.tmp);
	cli_test_add_env(&fx, path);
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = PYTHON },
	        (const char *const[]){ PYTHON, "examples/tools_host.py", NULL });
	ck_code(&r, 0);
	ck_out(&r, "['dolsot #0', 'dolsot #1']\n");
	cli_run_release(&r);
	free(readme);
	free(example);
}
END_TEST

/* A host that logs every message it gets and answers echo(x) -> x. */
static const char logging_host[] =
	"import json, socket, subprocess, sys\n"
	"log = open(sys.argv[1], 'w')\n"
	"host, end = socket.socketpair()\n"
	"p = subprocess.Popen([sys.argv[2], '--session', 's', '--tools-fd', str(end.fileno()),\n"
	"                      sys.argv[3]], pass_fds=[end.fileno()])\n"
	"end.close()\n"
	"decls = [{'name': 'echo', 'inputSchema': {'type': 'object', 'required': ['x'],\n"
	"          'properties': {'x': {}}}}]\n"
	"with host.makefile('rwb') as f:\n"
	"    for line in f:\n"
	"        msg = json.loads(line)\n"
	"        log.write(msg.get('method', '?') + ' ' + json.dumps(msg.get('params')) + '\\n')\n"
	"        if 'id' not in msg: continue\n"
	"        out = ({'tools': decls} if msg['method'] == 'tools/list'\n"
	"               else msg['params']['arguments']['x'])\n"
	"        f.write(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': out}).encode()"
	" + b'\\n')\n"
	"        f.flush()\n"
	"log.write('host done\\n')\n"
	"sys.exit(p.wait())\n";

/* Run the logging host with one cell; its log (malloc'd). */
static char *with_logging_host(struct cli_run *r, const char *code)
{
	char *script = cli_path(fx.tmp, "host.py"), *log = cli_path(fx.tmp, "host.log"), *text;

	cli_write_file(script, logging_host);
	cli_run(r, &(struct cli_opts){ .env = fx.env, .prog = PYTHON },
	        (const char *const[]){ PYTHON, script, log, cli_bin(), code, NULL });
	text = cli_read_file(log, NULL);
	return text;
}

START_TEST(a_frame_forged_on_stdout_reaches_no_host)
{
	struct cli_run r;
	char *log = with_logging_host(&r, "import sys\n"
	                              "f = '{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
	                              "\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\"forged\"}}}'\n"
	                              "print(f)\nprint(f, file=sys.stderr)\nprint(echo('real'))");

	ck_code(&r, 0);
	ck_out_has(&r, "\"forged\"");
	ck_out_has(&r, "real\n");
	ck_assert_str_eq(log, "tools/list {}\ntools/call {\"name\": \"echo\", \"arguments\": "
	                 "{\"x\": \"real\"}}\nhost done\n");
	cli_run_release(&r);
	free(log);
}
END_TEST

/* The channel as the cell can reach it: raw writes beside the functions. */
#define RAW "import sys, os, socket\nch = sys.modules['_dolsot_hostcall']._channel\n" \
	"raw = socket.socket(fileno=os.dup(ch.fd))\n" \
	"def say(b):\n    raw.sendall(b, socket.MSG_NOSIGNAL)\n    return ch._line().decode()\n"

START_TEST(malformed_frames_and_undeclared_tools_are_errors_and_the_host_goes_on)
{
	struct cli_run r;
	char *log = with_logging_host(&r, RAW
	                              "print(say(b'garbage\\n'))\n"
	                              "print(say(b'[1, 2]\\n'))\n"
	                              "print(say(b'{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
	                              "\"tools/call\",\"params\":{\"name\":\"rm_rf\"}}\\n'))\n"
	                              "try:\n    ch.call('rm_rf', {})\nexcept RuntimeError as e:\n"
	                              "    print('RuntimeError:', e)\n"
	                              "raw.sendall(b'junk\\n{}\\n', socket.MSG_NOSIGNAL)\n"
	                              "print(echo(5))");

	ck_code(&r, 0);
	ck_out_has(&r, "\"error\":{\"code\":-32700,\"message\":\"parse error: not valid JSON");
	ck_out_has(&r, "\"id\":7,\"error\":{\"code\":-32601,\"message\":\"no host tool named "
	           "'rm_rf'\"}");
	ck_out_has(&r, "RuntimeError: no host tool named 'rm_rf'\n5\n");
	ck_assert_str_eq(log, "tools/list {}\ntools/call {\"name\": \"echo\", \"arguments\": "
	                 "{\"x\": 5}}\nhost done\n");
	cli_run_release(&r);
	free(log);
}
END_TEST

START_TEST(an_oversized_frame_closes_the_channel_and_the_session_is_intact)
{
	struct cli_run r;

	ok_call("s", "x = 1");
	ADD(&r, "--session", "s", RAW "raw.sendall(b'x' * (3 << 20), socket.MSG_NOSIGNAL)\n"
	    "for _ in range(2):\n    try:\n        add(1)\n    except RuntimeError as e:\n"
	    "        print('RuntimeError:', e)\nx = 2\ndel ch, raw\nprint('still running')");
	ck_code(&r, 0);
	ck_out(&r, "RuntimeError: the cell sent a host-call message over the size bound\n"
	       "RuntimeError: the cell sent a host-call message over the size bound\n"
	       "still running\n");
	cli_run_release(&r);
	/* The next call has a channel of its own. */
	ADD(&r, "--session", "s", "add(x)");
	ck_code(&r, 0);
	ck_out(&r, "3\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_flood_of_calls_stops_at_the_bound_with_a_clear_error)
{
	struct cli_run r;
	char *log;

	cli_test_add_env(&fx, "DOLSOT_TOOL_MAX_CALLS=50");
	log = with_logging_host(&r, "n = 0\ntry:\n    while True:\n        echo(n)\n"
	                        "        n += 1\nexcept RuntimeError as e:\n    print(n, e)\n"
	                        "try:\n    echo(1)\nexcept RuntimeError as e:\n"
	                        "    print('again:', e)");
	ck_code(&r, 0);
	ck_out(&r, "50 the cell made more host calls than a cell may\n"
	       "again: the cell made more host calls than a cell may\n");
	ck_assert_msg(cli_has(log, "host done\n"), "the host did not end: %s", log);
	cli_run_release(&r);
	free(log);
}
END_TEST

START_TEST(a_cell_that_writes_without_reading_is_cut_off)
{
	struct cli_run r;

	ADD(&r, "--session", "s", RAW "n = 0\ntry:\n    while True:\n"
	    "        raw.sendall(b'nonsense\\n' * 1000, socket.MSG_NOSIGNAL)\n        n += 1\n"
	    "except OSError as e:\n    print('cut off')\n"
	    "try:\n    add(1)\nexcept RuntimeError as e:\n    print('RuntimeError')");
	ck_code(&r, 0);
	ck_out(&r, "cut off\nRuntimeError\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(describe_lists_the_tools)
{
	struct cli_run r, v;

	ADD(&r, "--describe");
	ck_code(&r, 0);
	ck_out_has(&r, "  add(a: int, b: int = 1) -> int  # Add two numbers.\n");
	cli_run_release(&r);
	ADD(&r, "--describe", "--json");
	ck_code(&r, 0);
	ck_out_has(&r, "\"tools\":[{\"name\":\"add\",\"signature\":\"(a: int, b: int = 1) -> int\"");
	cli_run(&v, &(struct cli_opts){ .stdin_data = r.out, .prog = "/usr/bin/python3" },
	        (const char *const[]){ "python3", "tests/lib/validate_json.py",
	                               "schema/result.schema.json", NULL });
	ck_code(&v, 0);
	cli_run_release(&v);
	cli_run_release(&r);
}
END_TEST

START_TEST(the_type_gate_checks_calls_against_the_schema)
{
	struct cli_run r;

	if (access("/usr/bin/mypy", X_OK) != 0)
		return;   /* the gate's checkers are check_typegate's to require */
	cli_test_add_env(&fx, "DOLSOT_TYPECHECK=1");
	cli_test_add_env(&fx, "DOLSOT_TY_BIN=/usr/bin/mypy");
	ADD(&r, "--session", "g", "print('ran')\nadd('x')");
	ck_code(&r, 1);
	ck_out(&r, "");
	ck_err_has(&r, "line 2: Argument 1 to \"add\" has incompatible type \"str\"; "
	           "expected \"int\"  [arg-type]\n  hint: add(a: int, b: int = 1) -> int\n");
	cli_run_release(&r);
	ADD(&r, "--session", "g", "print(add(2))");
	ck_code(&r, 0);
	ck_out(&r, "3\n");
	cli_run_release(&r);
}
END_TEST

/* dolsot mcp --tool: the python tool's description lists the tool, and
 * its calls may call it. */
START_TEST(the_mcp_server_lists_and_serves_the_tools)
{
	struct cli_run r;
	static const char input[] =
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
		"{\"name\":\"raw\",\"version\":\"1\"}}}\n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"python\",\"arguments\":{\"code\":\"add(20, b=22)\","
		"\"session\":\"m\"}}}\n";

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = input },
	        (const char *const[]){ "dolsot", "mcp", "--tool", add_arg, "--tool-schema",
	                               schema_arg, NULL });
	ck_code(&r, 0);
	ck_out_has(&r, "add(a: int, b: int = 1) -> int  # Add two numbers.");
	ck_out_has(&r, "\"value\":\"42\"");
	cli_run_release(&r);
	CLI(&r, "mcp", "--tools-fd", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--tools-fd does not go with dolsot mcp");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_tool_hides_a_held_name_for_its_call_only)
{
	struct cli_run r;

	ok_call("s", "add = 'mine'");
	ADD(&r, "--session", "s", "add(1)");
	ck_code(&r, 0);
	ck_out(&r, "2\n");
	ck_err_has(&r, "warning: host tool 'add' hides the session's 'add'");
	cli_run_release(&r);
	ck_state("s", "add", "'mine'\n");
}
END_TEST

START_TEST(live_calls_get_their_own_channel_each)
{
	struct cli_run r;

	ADD(&r, "--session", "L", "--live", "x = add(40)");
	ck_code(&r, 0);
	cli_run_release(&r);
	ADD(&r, "--session", "L", "--live", "add(x)");
	ck_code(&r, 0);
	ck_out(&r, "42\n");
	cli_run_release(&r);
	CLI(&r, "--session", "L", "--live", "add(x)");
	ck_code(&r, 1);
	ck_err_has(&r, "NameError: name 'add' is not defined");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_sandboxed_cell_calls_out_through_the_channel_only)
{
	struct cli_run r;
	char code[8192];

	/* The helper runs on the host, where the test's directory is. */
	snprintf(code, sizeof(code), "import os, socket\nprint(add(3))\n"
	         "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
	         "except OSError:\n    print('no network')\nprint(os.path.exists('%s'))", fx.tmp);
	ADD(&r, "--session", "sb", "--sandbox", code);
	ck_code(&r, 0);
	ck_out(&r, "4\nno network\nFalse\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(the_callers_mistakes_are_usage_errors)
{
	struct cli_run r;

	CLI(&r, "--session", "s", "--tool", "_private=true", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "tool name '_private': want a Python identifier");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--tool", "class=true", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "tool name 'class': want a Python identifier");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--tool-schema", schema_arg, "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--tool-schema add: no --tool add=COMMAND declares it");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--tool", "a=true", "--tool", "a=false", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--tool 'a' is given twice");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--tools-fd", "97", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--tools-fd '97': expected an open file descriptor");
	cli_run_release(&r);
	CLI(&r, "--list-sessions", "--tool", "a=true");
	ck_code(&r, 2);
	cli_run_release(&r);
}
END_TEST

static Suite *hosttools_suite(void)
{
	Suite *s = suite_create("hosttools");
	TCase *helper = tcase_create("helper"), *fd = tcase_create("fd"),
	      *hostile = tcase_create("hostile"), *paths = tcase_create("paths"),
	      *live = tcase_create("live");
	TCase *all[] = { helper, fd, hostile, paths, live, NULL };

	for (size_t i = 0; all[i]; i++) {
		tcase_add_checked_fixture(all[i], all[i] == live ? setup_server : setup, teardown);
		tcase_set_timeout(all[i], 120);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(helper, a_helper_tool_is_a_function_with_its_schemas_signature);
	tcase_add_test(helper, arguments_that_do_not_fit_quote_the_signature);
	tcase_add_test(helper, a_failing_helper_raises_its_stderr_and_the_session_is_intact);
	tcase_add_test(helper, a_helper_answering_no_json_is_an_error_in_the_cell);
	tcase_add_test(helper, a_host_that_does_not_answer_in_time_raises_timeout_error);
	tcase_add_test(helper, waiting_on_the_host_does_not_count_against_the_timeout);
	tcase_add_test(helper, a_timeout_during_a_host_call_rolls_the_cell_back);
	tcase_add_test(helper, the_callers_mistakes_are_usage_errors);
	tcase_add_test(fd, the_readme_tools_fd_example_runs);
	tcase_add_test(fd, a_frame_forged_on_stdout_reaches_no_host);
	tcase_add_test(hostile, malformed_frames_and_undeclared_tools_are_errors_and_the_host_goes_on);
	tcase_add_test(hostile, an_oversized_frame_closes_the_channel_and_the_session_is_intact);
	tcase_add_test(hostile, a_flood_of_calls_stops_at_the_bound_with_a_clear_error);
	tcase_add_test(hostile, a_cell_that_writes_without_reading_is_cut_off);
	tcase_add_test(paths, describe_lists_the_tools);
	tcase_add_test(paths, a_tool_hides_a_held_name_for_its_call_only);
	tcase_add_test(paths, the_type_gate_checks_calls_against_the_schema);
	tcase_add_test(paths, the_mcp_server_lists_and_serves_the_tools);
	tcase_add_test(live, live_calls_get_their_own_channel_each);
	tcase_add_test(paths, a_sandboxed_cell_calls_out_through_the_channel_only);
	return s;
}

int main(void)
{
	return ck_run(hosttools_suite());
}
