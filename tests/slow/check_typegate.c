/*
 * check_typegate.c - the type gate and the hints.
 *
 * Three parts: the output parsers of typegate_parse.c on recorded output;
 * the checker runner of typegate.c on real programs (sh scripts standing for
 * misbehaving checkers: hanging, crashing, flooding); and the dolsot command
 * end to end against the real mypy (Debian) and pyright (npm, installed into
 * tools/node by tools/npm-deps.sh).  A case whose checker is not installed
 * prints SKIP with the reason.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"
#include "typegate.h"

#define PYRIGHT_BIN "tools/node/node_modules/.bin/pyright"

static char *suite_tmp;         /* shared by every case: the mypy cache */
static char *tmp;               /* per case */
static char store_env[4300], cache_env[4300], cwd_path[4200];
/* DOLSOT_SERVER for the call: unset (the default, warm) or "...=off" (cold). */
static const char *server_env = "DOLSOT_SERVER";

/* ---- parsers on recorded output ---- */

static struct typegate_diags parse_ok(enum typegate_checker k, const char *text)
{
	struct typegate_diags d;

	ck_assert_int_eq(typegate_parse(k, text, strlen(text), &d), 0);
	return d;
}

static void ck_diag(const struct typegate_diag *g, const char *path, unsigned long line,
                    unsigned long col, enum typegate_severity sev, const char *code,
                    const char *message)
{
	ck_assert_str_eq(g->path, path);
	ck_assert_uint_eq(g->line, line);
	ck_assert_uint_eq(g->col, col);
	ck_assert_int_eq(g->severity, sev);
	if (code)
		ck_assert_str_eq(g->code, code);
	else
		ck_assert_ptr_null(g->code);
	ck_assert_str_eq(g->message, message);
}

/* Recorded from mypy 1.0.1 (Debian 12) with the gate's flags. */
START_TEST(parses_mypy_output)
{
	struct typegate_diags d = parse_ok(TYPEGATE_MYPY,
		"/tmp/g/_dolsot_cell.py:7:1: error: Too many arguments for \"add\"  [call-arg]\n"
		"/tmp/g/_dolsot_cell.py:8:8: error: Argument 1 to \"add\" has incompatible type "
		"\"str\"; expected \"int\"  [arg-type]\n"
		"/tmp/g/_dolsot_cell.py:9: note: See https://mypy.readthedocs.io\n"
		"cell.py:19:1: error: \"await\" outside function\n");

	ck_assert_uint_eq(d.n, 4);
	ck_diag(&d.v[0], "/tmp/g/_dolsot_cell.py", 7, 1, TYPEGATE_SEV_ERROR, "call-arg",
	        "Too many arguments for \"add\"");
	ck_diag(&d.v[1], "/tmp/g/_dolsot_cell.py", 8, 8, TYPEGATE_SEV_ERROR, "arg-type",
	        "Argument 1 to \"add\" has incompatible type \"str\"; expected \"int\"");
	ck_diag(&d.v[2], "/tmp/g/_dolsot_cell.py", 9, 0, TYPEGATE_SEV_NOTE, NULL,
	        "See https://mypy.readthedocs.io");
	ck_diag(&d.v[3], "cell.py", 19, 1, TYPEGATE_SEV_ERROR, NULL, "\"await\" outside function");
	typegate_diags_release(&d);
}
END_TEST

/* Recorded from pyright 1.1.414 --outputjson (trimmed: one diagnostic less). */
START_TEST(parses_pyright_json)
{
	struct typegate_diags d = parse_ok(TYPEGATE_PYRIGHT,
		"{\n  \"version\": \"1.1.414\",\n  \"time\": \"1795955230790\",\n"
		"  \"generalDiagnostics\": [\n"
		"    {\"file\": \"/tmp/tg/s.py\", \"severity\": \"error\",\n"
		"     \"message\": \"Expected 2 positional arguments\",\n"
		"     \"range\": {\"start\": {\"line\": 1, \"character\": 13},\n"
		"               \"end\": {\"line\": 1, \"character\": 14}},\n"
		"     \"rule\": \"reportCallIssue\"},\n"
		"    {\"file\": \"/tmp/tg/s.py\", \"severity\": \"error\",\n"
		"     \"message\": \"Argument of type \\\"Literal['a']\\\" cannot be assigned\\n"
		"  \\\"Literal['a']\\\" is not assignable to \\\"int\\\"\",\n"
		"     \"range\": {\"start\": {\"line\": 2, \"character\": 7},\n"
		"               \"end\": {\"line\": 2, \"character\": 10}},\n"
		"     \"rule\": \"reportArgumentType\"},\n"
		"    {\"file\": \"/tmp/tg/s.py\", \"severity\": \"warning\",\n"
		"     \"message\": \"Expression value is unused\",\n"
		"     \"range\": {\"start\": {\"line\": 3, \"character\": 0},\n"
		"               \"end\": {\"line\": 3, \"character\": 5}}}\n"
		"  ],\n"
		"  \"summary\": {\"filesAnalyzed\": 1, \"errorCount\": 2, \"warningCount\": 1,\n"
		"              \"informationCount\": 0, \"timeInSec\": 0.677}\n}\n");

	ck_assert_uint_eq(d.n, 3);
	ck_diag(&d.v[0], "/tmp/tg/s.py", 2, 14, TYPEGATE_SEV_ERROR, "reportCallIssue",
	        "Expected 2 positional arguments");
	ck_diag(&d.v[1], "/tmp/tg/s.py", 3, 8, TYPEGATE_SEV_ERROR, "reportArgumentType",
	        "Argument of type \"Literal['a']\" cannot be assigned\n"
	        "  \"Literal['a']\" is not assignable to \"int\"");
	ck_diag(&d.v[2], "/tmp/tg/s.py", 4, 1, TYPEGATE_SEV_WARNING, NULL,
	        "Expression value is unused");
	typegate_diags_release(&d);
}
END_TEST

/*
 * NOT recorded from a real ty: ty is not packaged for Debian or npm here, so
 * these lines are written from ty's documented concise format
 * ("path:line:col: severity[rule] message", one diagnostic a line) and from
 * the older severity-first form.  Parser-only; the CLI cases use mypy and
 * pyright.
 */
START_TEST(parses_ty_concise_sample)
{
	struct typegate_diags d = parse_ok(TYPEGATE_TY,
		"_dolsot_cell.py:5:1: error[missing-argument] No argument provided for "
		"required parameter `b` of function `add`\n"
		"_dolsot_cell.py:6:8: error[invalid-argument-type] Argument to function `add` is "
		"incorrect: Expected `int`, found `Literal[\"a\"]`\n"
		"_dolsot_cell.py:7:1: warning[unused-ignore-comment] Unused blanket `type: "
		"ignore` directive\n"
		"error[unresolved-reference] /tmp/g/_dolsot_cell.py:8:3: Name `x` used when "
		"not defined\n"
		"Found 4 diagnostics\n");

	ck_assert_uint_eq(d.n, 4);
	ck_diag(&d.v[0], "_dolsot_cell.py", 5, 1, TYPEGATE_SEV_ERROR, "missing-argument",
	        "No argument provided for required parameter `b` of function `add`");
	ck_diag(&d.v[1], "_dolsot_cell.py", 6, 8, TYPEGATE_SEV_ERROR, "invalid-argument-type",
	        "Argument to function `add` is incorrect: Expected `int`, found `Literal[\"a\"]`");
	ck_assert_int_eq(d.v[2].severity, TYPEGATE_SEV_WARNING);
	ck_diag(&d.v[3], "/tmp/g/_dolsot_cell.py", 8, 3, TYPEGATE_SEV_ERROR, "unresolved-reference",
	        "Name `x` used when not defined");
	typegate_diags_release(&d);
}
END_TEST

START_TEST(parses_generic_lines)
{
	struct typegate_diags d = parse_ok(TYPEGATE_GENERIC,
		"checking...\r\n"
		"C:\\work\\a.py:3:9: error: bad call\r\n"
		"a.py:4: warning: odd\n"
		"a.py: error: no location\n");

	ck_assert_uint_eq(d.n, 2);
	ck_diag(&d.v[0], "C:\\work\\a.py", 3, 9, TYPEGATE_SEV_ERROR, NULL, "bad call");
	ck_diag(&d.v[1], "a.py", 4, 0, TYPEGATE_SEV_WARNING, NULL, "odd");
	typegate_diags_release(&d);
}
END_TEST

START_TEST(unreadable_output_is_refused)
{
	struct typegate_diags d;
	const char *bad_json[] = { "", "[]", "{}", "{\"generalDiagnostics\": [}",
	                           "{\"generalDiagnostics\": []} trailing",
	                           "{\"generalDiagnostics\": [{\"message\": \"\\q\"}]}",
	                           "Traceback (most recent call last):", NULL };

	for (size_t i = 0; bad_json[i]; i++) {
		ck_assert_msg(typegate_parse(TYPEGATE_PYRIGHT, bad_json[i], strlen(bad_json[i]), &d) < 0,
		              "accepted %s", bad_json[i]);
		typegate_diags_release(&d);
	}
	ck_assert_int_lt(typegate_parse(TYPEGATE_MYPY, "Traceback:\n  boom\n", 18, &d), 0);
	typegate_diags_release(&d);
	ck_assert_int_eq(typegate_parse(TYPEGATE_MYPY, "\n  \n", 4, &d), 0);
	ck_assert_uint_eq(d.n, 0);
	typegate_diags_release(&d);
}
END_TEST

START_TEST(texts_are_capped_and_cleaned)
{
	size_t big = TYPEGATE_MAX_TEXT * 3;
	char *s = malloc(big + 64);
	struct typegate_diags d;
	size_t n;

	n = (size_t)sprintf(s, "f.py:1:1: error: ");
	memset(s + n, 'x', big);
	s[n + 5] = '\0';
	s[n + 6] = '\x1b';
	memcpy(s + n + big, "\n", 2);
	ck_assert_int_eq(typegate_parse(TYPEGATE_GENERIC, s, n + big + 1, &d), 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_uint_eq(strlen(d.v[0].message), TYPEGATE_MAX_TEXT);
	ck_assert_int_eq(d.v[0].message[5], '?');
	ck_assert_int_eq(d.v[0].message[6], '?');
	typegate_diags_release(&d);
	free(s);
}
END_TEST

START_TEST(diagnostics_are_capped)
{
	size_t n = TYPEGATE_MAX_DIAGS + 10, len = 0;
	char *s = malloc(n * 32);
	struct typegate_diags d;

	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "f.py:%zu:1: error: e\n", i + 1);
	ck_assert_int_eq(typegate_parse(TYPEGATE_MYPY, s, len, &d), 0);
	ck_assert_uint_eq(d.n, TYPEGATE_MAX_DIAGS);
	ck_assert(d.truncated);
	typegate_diags_release(&d);
	free(s);
}
END_TEST

START_TEST(json_escapes_decode)
{
	const char *j = "{\"generalDiagnostics\": [{\"file\": \"\\u00e9\\ud83d\\ude00\\ud800x\","
	                "\"severity\": \"information\", \"message\": \"a\\u0000b\\tc\","
	                "\"range\": {\"start\": {\"line\": 1e20, \"character\": -3}}}]}";
	struct typegate_diags d;

	ck_assert_int_eq(typegate_parse(TYPEGATE_PYRIGHT, j, strlen(j), &d), 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.v[0].path, "\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx");
	ck_assert_str_eq(d.v[0].message, "a?b\tc");
	ck_assert_int_eq(d.v[0].severity, TYPEGATE_SEV_NOTE);
	ck_assert_uint_eq(d.v[0].col, 1);
	ck_assert_uint_gt(d.v[0].line, 1000);
	typegate_diags_release(&d);
}
END_TEST

START_TEST(deep_json_is_refused)
{
	char s[4096];
	size_t n = (size_t)sprintf(s, "{\"generalDiagnostics\": [{\"x\": ");
	struct typegate_diags d;

	for (int i = 0; i < 1000; i++)
		s[n++] = '[';
	s[n] = '\0';
	ck_assert_int_lt(typegate_parse(TYPEGATE_PYRIGHT, s, n, &d), 0);
	typegate_diags_release(&d);
}
END_TEST

START_TEST(checker_is_chosen_by_name)
{
	ck_assert_int_eq(typegate_checker_of("ty"), TYPEGATE_TY);
	ck_assert_int_eq(typegate_checker_of("/usr/bin/mypy"), TYPEGATE_MYPY);
	ck_assert_int_eq(typegate_checker_of("node_modules/.bin/pyright"), TYPEGATE_PYRIGHT);
	ck_assert_int_eq(typegate_checker_of("basedpyright"), TYPEGATE_PYRIGHT);
	ck_assert_int_eq(typegate_checker_of("/opt/mypy/bin/mycheck"), TYPEGATE_GENERIC);
	ck_assert_int_eq(typegate_checker_of("tyx"), TYPEGATE_GENERIC);
}
END_TEST

/* ---- the runner on real programs ---- */

static int run_sh(const char *script, double seconds, size_t cap, struct typegate_run *r)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct timespec d;
	char err[256];
	long ns;

	clock_gettime(CLOCK_MONOTONIC, &d);
	ns = d.tv_nsec + (long)((seconds - (double)(long)seconds) * 1e9);
	d.tv_sec += (time_t)seconds + ns / 1000000000L;
	d.tv_nsec = ns % 1000000000L;
	return typegate_run(argv, NULL, NULL, &d, cap, r, err, sizeof(err));
}

START_TEST(runner_captures_output_and_status)
{
	struct typegate_run r;

	ck_assert_int_eq(run_sh("echo out; echo err >&2; exit 3", 10, 1024, &r), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_EXITED);
	ck_assert_int_eq(r.code, 3);
	ck_assert_str_eq(r.out, "out\n");
	ck_assert_str_eq(r.err, "err\n");
	typegate_run_release(&r);
}
END_TEST

START_TEST(runner_caps_output)
{
	struct typegate_run r;

	ck_assert_int_eq(run_sh("head -c 1000000 /dev/zero | tr '\\0' x", 20, 1000, &r), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_EXITED);
	ck_assert_uint_eq(r.out_len, 1000);
	ck_assert(r.out_truncated);
	ck_assert(!r.err_truncated);
	typegate_run_release(&r);
}
END_TEST

START_TEST(runner_reports_missing_and_unstartable)
{
	const char *missing[] = { "dolsot-no-such-checker", "x.py", NULL };
	char path[4300];
	const char *noexec[] = { path, NULL };
	struct timespec d;
	struct typegate_run r;
	char err[256];

	snprintf(path, sizeof(path), "%s/not-executable", tmp);
	cli_write_file(path, "junk\n");

	clock_gettime(CLOCK_MONOTONIC, &d);
	d.tv_sec += 10;
	ck_assert_int_eq(typegate_run(missing, NULL, NULL, &d, 100, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_NOT_FOUND);
	typegate_run_release(&r);
	ck_assert_int_eq(typegate_run(noexec, NULL, NULL, &d, 100, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_CANNOT_START);
	ck_assert_int_eq(r.code, EACCES);
	typegate_run_release(&r);
}
END_TEST

START_TEST(runner_reports_a_crash)
{
	struct typegate_run r;

	ck_assert_int_eq(run_sh("kill -SEGV $$", 10, 100, &r), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_SIGNALED);
	ck_assert_int_eq(r.code, SIGSEGV);
	typegate_run_release(&r);
}
END_TEST

/* A checker that hangs, with a child of its own, is killed with its group. */
START_TEST(runner_kills_a_hanging_group_at_the_deadline)
{
	char script[512], path[4200], *pid_text;
	struct typegate_run r;
	pid_t child;

	snprintf(path, sizeof(path), "%s/pid", tmp);
	snprintf(script, sizeof(script), "sleep 100 & echo $! > %s; exec >&- 2>&-; wait", path);
	ck_assert_int_eq(run_sh(script, 0.5, 100, &r), 0);
	ck_assert_int_eq(r.status, TYPEGATE_RUN_TIMEOUT);
	ck_assert_msg(r.seconds >= 0.45 && r.seconds < 2.0, "took %.2fs", r.seconds);
	typegate_run_release(&r);
	pid_text = cli_read_file(path, NULL);
	ck_assert_ptr_nonnull(pid_text);
	child = (pid_t)atoi(pid_text);
	free(pid_text);
	ck_assert_int_gt(child, 1);
	for (int i = 0; i < 100 && cli_pid_alive(child); i++)
		usleep(10000);
	ck_assert_msg(!cli_pid_alive(child), "the checker's child %d survived", (int)child);
}
END_TEST

/* ---- the dolsot command with real checkers ---- */

struct checker {
	const char *name;
	const char *bin;            /* NULL: not installed, see skip */
	char skip[256];
};

static struct checker checkers[2];

static void find_checkers(void)
{
	static char pyright[4200];
	char *mypy = typegate_which("mypy"), cwd[4096];

	checkers[0].name = "mypy";
	checkers[0].bin = mypy;
	if (!mypy)
		snprintf(checkers[0].skip, sizeof(checkers[0].skip),
		         "mypy is not on PATH (apt-get install mypy; see tools/deps.sh)");
	checkers[1].name = "pyright";
	/* Not realpath: the link's name, pyright, is what picks the format. */
	if (getcwd(cwd, sizeof(cwd)) &&
	    snprintf(pyright, sizeof(pyright), "%s/%s", cwd, PYRIGHT_BIN) < (int)sizeof(pyright) &&
	    access(pyright, X_OK) == 0)
		checkers[1].bin = pyright;
	else
		snprintf(checkers[1].skip, sizeof(checkers[1].skip),
		         "%s is missing (run sh tools/npm-deps.sh; needs npm)", PYRIGHT_BIN);
}

static bool have(int i)
{
	if (checkers[i].bin)
		return true;
	printf("SKIP: %s: %s\n", checkers[i].name, checkers[i].skip);
	return false;
}

static const char mytools_py[] =
	"__all__ = ['add', 'load', 'help', 'ToolError', 'BadInput']\n"
	"class ToolError(Exception):\n"
	"    exit_code = 3\n"
	"class BadInput(TypeError):\n"
	"    exit_code = 4\n"
	"def add(a: int, b: int) -> int:\n"
	"    \"\"\"Add two ints.\"\"\"\n"
	"    return a + b\n"
	"def load(name: str) -> list[int]:\n"
	"    if name == 'bad':\n"
	"        raise BadInput('no such table: ' + name)\n"
	"    return [1, 2, 3]\n"
	"def help(topic: str | None = None) -> str:\n"
	"    return 'mytools: add, load'\n"
	"def _internal_addr() -> None:\n"
	"    pass\n"
	"from dataclasses import dataclass as _dataclass\n"
	"@_dataclass\n"
	"class Row:\n"
	"    n: int\n"
	"def row(n: int) -> Row:\n"
	"    return Row(n)\n";

/* No __all__ and no help(): every public attribute counts. */
static const char plain_py[] =
	"def scale(x: float, factor: float = 2.0) -> float:\n"
	"    return x * factor\n"
	"def _scalar() -> None:\n"
	"    pass\n";

static void teardown(void);

static void setup(void)
{
	char path[4300], *crm;

	tmp = cli_tempdir();
	snprintf(cwd_path, sizeof(cwd_path), "%s", tmp);
	snprintf(store_env, sizeof(store_env), "DOLSOT_CACHE_DIR=%s/store", tmp);
	snprintf(cache_env, sizeof(cache_env), "XDG_CACHE_HOME=%s", suite_tmp);
	snprintf(path, sizeof(path), "%s/mytools.py", tmp);
	cli_write_file(path, mytools_py);
	snprintf(path, sizeof(path), "%s/plain.py", tmp);
	cli_write_file(path, plain_py);
	crm = cli_read_file("tests/lib/toolbox/crm.py", NULL);
	ck_assert_msg(crm != NULL, "cannot read tests/lib/toolbox/crm.py");
	snprintf(path, sizeof(path), "%s/crm.py", tmp);
	cli_write_file(path, crm);
	free(crm);
	atexit(teardown);   /* a failed check exits the case's process */
}

/* Stop the warm server a case may have started, then remove its files. */
static void teardown(void)
{
	struct cli_run r;
	const char *env[] = { store_env, NULL };

	if (!tmp)
		return;
	cli_run(&r, &(struct cli_opts){ .env = env },
	        (const char *const[]){ "dolsot", "--server-stop", NULL });
	cli_run_release(&r);
	cli_rmtree(tmp);
	free(tmp);
	tmp = NULL;
}

/* Run dolsot in the case's directory with the toolboxes and the checker. */
/* As run(), with one more environment entry (or NULL). */
static void run_with(struct cli_run *r, const char *checker, const char *typecheck,
                     const char *session, const char *code, const char *timeout,
                     const char *extra)
{
	char bin_env[4300], tc_env[64];
	const char *env[] = { store_env, cache_env, bin_env, tc_env, server_env, "DOLSOT_TIMEOUT",
	                      "DOLSOT_MAX_OUTPUT", "PYTHONPATH", "VIRTUAL_ENV", extra, NULL };
	const char *argv[] = { "dolsot", "--toolbox", "mytools:mt", "--toolbox", "plain:pl",
	                       "--session", session, "--timeout", timeout ? timeout : "60",
	                       code, NULL };

	snprintf(bin_env, sizeof(bin_env), "DOLSOT_TY_BIN=%s", checker ? checker : "ty");
	snprintf(tc_env, sizeof(tc_env), "DOLSOT_TYPECHECK=%s", typecheck);
	cli_run(r, &(struct cli_opts){ .env = env, .cwd = cwd_path }, argv);
}

static void run(struct cli_run *r, const char *checker, const char *typecheck,
                const char *session, const char *code, const char *timeout)
{
	run_with(r, checker, typecheck, session, code, timeout, NULL);
}

/* A cell run without the gate, that must succeed. */
static void prepare(const char *session, const char *code)
{
	struct cli_run r;

	run(&r, NULL, "0", session, code, NULL);
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* The session's x is still what it was: the blocked cell changed nothing. */
static void ck_untouched(const char *session, const char *want)
{
	struct cli_run r;

	run(&r, NULL, "0", session, "x", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, want);
	cli_run_release(&r);
}

START_TEST(wrong_argument_count_is_blocked)
{
	struct cli_run r;

	if (!have(_i))
		return;
	prepare("s", "x = 1");
	run(&r, checkers[_i].bin, "1", "s", "x = 2\ny = mt.add(1, 2, 3)\n", NULL);
	ck_code(&r, 1);
	ck_assert_str_eq(r.out, "");
	ck_err_has(&r, "TypeCheckError: ");
	ck_err_has(&r, "\nline 2: ");
	ck_err_lacks(&r, "line 1:");
	ck_err_has(&r, "hint: mt.add(a: int, b: int) -> int; see mt.help(\"add\")");
	/* The checker's rule code, to look up in its documentation. */
	ck_err_has(&r, _i == 0 ? "  [call-arg]\n" : "  [reportCallIssue]\n");
	ck_err_lacks(&r, "session now holds");
	cli_run_release(&r);
	ck_untouched("s", "1\n");
}
END_TEST

/* Only diagnostics about a toolbox block: the checker's complaints about
 * the cell's own code, even inside a toolbox call's arguments, let it run
 * (and Python report what is really wrong). */
START_TEST(diagnostics_not_about_a_toolbox_do_not_block)
{
	struct cli_run r;

	if (!have(_i))
		return;
	run(&r, checkers[_i].bin, "1", "s", "x = 1\ny = mt.add(len(1, 2), 1)", NULL);
	ck_code(&r, 1);
	ck_err_lacks(&r, "TypeCheckError");
	ck_err_has(&r, "TypeError: len() takes exactly one argument (2 given) (line 2)\n");
	cli_run_release(&r);
	run(&r, checkers[_i].bin, "1", "s",
	    "class C:\n    pass\nc = C()\nc.extra = 5\nz = mt.add(c.extra, 1)\nz", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "6\n");
	ck_err_lacks(&r, "TypeCheckError");
	cli_run_release(&r);
}
END_TEST

/* The gate runs in the worker whether it is forked cold or from a zygote. */
START_TEST(gate_blocks_on_the_cold_path_too)
{
	struct cli_run r;

	if (!have(_i))
		return;
	server_env = "DOLSOT_SERVER=off";
	run(&r, checkers[_i].bin, "1", "s", "mt.add(1)", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\nline 1: ");
	ck_err_has(&r, "hint: mt.add(a: int, b: int) -> int");
	cli_run_release(&r);
	run(&r, checkers[_i].bin, "1", "s", "mt.add(1, 2)", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "3\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(wrong_argument_type_is_blocked)
{
	struct cli_run r;

	if (!have(_i))
		return;
	prepare("s", "x = 1\nname = 'orders'");
	run(&r, checkers[_i].bin, "1", "s", "x = 5\nmt.add(name, 1)", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\nline 2: ");
	ck_err_has(&r, "\"str\"");
	ck_err_has(&r, "hint: mt.add(a: int, b: int) -> int; see mt.help(\"add\")");
	cli_run_release(&r);
	ck_untouched("s", "1\n");
}
END_TEST

/* A held instance of a toolbox's own class is declared as that class: a
 * record passed where the toolbox wants one of its fields is blocked. */
START_TEST(held_toolbox_record_passed_for_a_field_is_blocked)
{
	struct cli_run r;

	if (!have(_i))
		return;
	prepare("s", "x = 1\nrec = mt.row(2)");
	run(&r, checkers[_i].bin, "1", "s", "mt.add(rec, 1)", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\"Row\"");
	ck_err_has(&r, "hint: mt.add(a: int, b: int) -> int");
	ck_err_has(&r, "\n  hint: pass its field instead: rec.n (int)\n");
	cli_run_release(&r);
	run(&r, checkers[_i].bin, "1", "s", "mt.add(1, b=rec)", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\n  hint: pass its field instead: rec.n (int)\n");
	cli_run_release(&r);
	run(&r, checkers[_i].bin, "1", "s", "mt.add(rec.n, 1)", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "3\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(unknown_toolbox_attribute_is_blocked)
{
	struct cli_run r;

	if (!have(_i))
		return;
	run(&r, checkers[_i].bin, "1", "s", "total = 0\n\ntotal = mt.ad(1, 2)", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\nline 3: ");
	ck_err_has(&r, _i == 0 ? "  [attr-defined]\n" : "  [reportAttributeAccessIssue]\n");
	ck_err_has(&r, "  hint: did you mean mt.add?");
	cli_run_release(&r);
}
END_TEST

START_TEST(toolbox_without_help_gets_the_signature_only)
{
	struct cli_run r;

	if (!have(_i))
		return;
	run(&r, checkers[_i].bin, "1", "s", "pl.scale()", NULL);
	ck_code(&r, 1);
	ck_err_has(&r, "\nline 1: ");
	ck_err_has(&r, "hint: pl.scale(x: float, factor: float = 2.0) -> float\n");
	ck_err_lacks(&r, "help(");
	cli_run_release(&r);
}
END_TEST

/* Cells that run fine must pass every checker: tests/lib/valid_cells.txt, one
 * case per "#== title" line, with the lines after "#-- earlier" run first
 * without the gate (names from earlier cells), and those after "#-- cell"
 * the gated cell. */
struct valid_cell {
	char *title, *earlier, *cell;
};

static char *append_line(char *text, const char *line, size_t n)
{
	size_t have = text ? strlen(text) : 0;
	char *t = realloc(text, have + n + 2);

	ck_assert_ptr_nonnull(t);
	if (have)
		t[have++] = '\n';
	memcpy(t + have, line, n);
	t[have + n] = '\0';
	return t;
}

static size_t read_valid_cells(struct valid_cell **out)
{
	char *text = cli_read_file("tests/lib/valid_cells.txt", NULL), *p;
	struct valid_cell *v = NULL;
	size_t n = 0;
	char **into = NULL;

	ck_assert_msg(text != NULL, "cannot read tests/lib/valid_cells.txt");
	for (p = text; *p;) {
		char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len >= 4 && strncmp(p, "#== ", 4) == 0) {
			v = realloc(v, (n + 1) * sizeof(*v));
			ck_assert_ptr_nonnull(v);
			v[n].title = strndup(p + 4, len - 4);
			v[n].earlier = v[n].cell = NULL;
			into = NULL;
			n++;
		} else if (n && len == 11 && strncmp(p, "#-- earlier", 11) == 0) {
			into = &v[n - 1].earlier;
		} else if (n && len == 8 && strncmp(p, "#-- cell", 8) == 0) {
			into = &v[n - 1].cell;
		} else if (into) {
			*into = append_line(*into, p, len);
		}
		p += len + (nl != NULL);
	}
	free(text);
	*out = v;
	return n;
}

/*
 * Loop index: checker (0 mypy, 1 pyright) + 2 * path (0 the warm server, as
 * calls run by default, 1 DOLSOT_SERVER=off).  A cold checker costs about a
 * second a cell (pyright), so the whole corpus runs on the warm path and
 * every CORPUS_STRIDE-th cell on the cold one, which runs the same gate code
 * in a worker that started Python itself; DOLSOT_TEST_CORPUS=full runs all
 * of it on both.  The generous timeout keeps a loaded machine from turning a
 * slow checker into a skipped gate.
 */
#define CORPUS_STRIDE 7

START_TEST(valid_cells_pass_the_gate)
{
	struct valid_cell *v;
	size_t n, stride = 1;
	const char *full = getenv("DOLSOT_TEST_CORPUS");
	int k = _i % 2;
	bool cold = _i >= 2;

	if (!have(k))
		return;
	n = read_valid_cells(&v);
	ck_assert_uint_ge(n, 150);
	server_env = cold ? "DOLSOT_SERVER=off" : "DOLSOT_SERVER=auto";
	if (cold && !(full && strcmp(full, "full") == 0))
		stride = CORPUS_STRIDE;
	for (size_t i = 0; i < n; i++) {
		struct cli_run r;
		char session[32];

		ck_assert_msg(v[i].cell != NULL, "valid cell '%s' has no #-- cell part", v[i].title);
		if (i % stride) {
			free(v[i].title);
			free(v[i].earlier);
			free(v[i].cell);
			continue;
		}
		snprintf(session, sizeof(session), "c%zu", i);
		if (v[i].earlier)
			prepare(session, v[i].earlier);
		run(&r, checkers[k].bin, "1", session, v[i].cell, "240");
		ck_assert_msg(r.code == 0 && !cli_has(r.err, "type gate") &&
		              !cli_has(r.err, "TypeCheckError"),
		              "%s (%s path) blocked or warned on valid cell '%s':\n%s\n--- exit %d, "
		              "stderr:\n%s", checkers[k].name, cold ? "cold" : "warm", v[i].title,
		              v[i].cell, r.code, r.err);
		cli_run_release(&r);
		free(v[i].title);
		free(v[i].earlier);
		free(v[i].cell);
	}
	free(v);
}
END_TEST

/* ---- the warm checker (checkd.c) ---- */

/* The case's warm checker daemon (the only one, or the first), or 0. */
static pid_t checkd_pid(void)
{
	pid_t pids[8];

	return cli_find_procs("dolsot-checkd", store_env, pids, 8) > 0 ? pids[0] : 0;
}

/* The daemon's checker, waiting up to seconds for one to be running. */
static pid_t checker_pid(double seconds)
{
	for (int i = 0; i < (int)(seconds * 50); i++) {
		pid_t d = checkd_pid(), c = d ? cli_first_child(d) : 0;

		if (c > 0 && cli_pid_alive(c))
			return c;
		usleep(20000);
	}
	return 0;
}

/* Warm path, server up, the environment's daemon started and its checker
 * running: a session s with x = 1, and gated calls (the first starts the
 * daemon and runs cold, a later one, once the zygote for the call's
 * environment is ready, starts the checker). */
static pid_t warm_up(int k, const char *extra)
{
	struct cli_run r;
	pid_t c = 0;

	server_env = "DOLSOT_SERVER=auto";
	prepare("s", "x = 1");
	for (int i = 0; i < 30 && !c; i++) {
		run_with(&r, checkers[k].bin, "1", "s", "x", NULL, extra);
		ck_code(&r, 0);
		cli_run_release(&r);
		c = checker_pid(i < 2 ? 0.02 : 0.5);
	}
	ck_assert_msg(c > 0, "no warm %s checker runs", checkers[k].name);
	return c;
}

static void ck_blocked(int k, const char *extra, const char *timeout)
{
	struct cli_run r;

	run_with(&r, checkers[k].bin, "1", "s", "y = mt.add(1, 2, 3)\n", timeout, extra);
	ck_code(&r, 1);
	ck_err_has(&r, "TypeCheckError: ");
	ck_err_has(&r, k == 0 ? "  [call-arg]\n" : "  [reportCallIssue]\n");
	cli_run_release(&r);
}

/* The warm checker's verdicts are the cold one's, byte for byte: blocked
 * cells (wrong count, wrong type, unknown attribute) and cells that run. */
START_TEST(warm_checker_answers_as_the_cold_one)
{
	static const char *const cells[] = {
		"y = mt.add(1, 2, 3)\n", "y = mt.add(1, 'a')\n", "mt.nosuch(1)\n",
		"z = mt.add(x, 2)\nz\n", "n = pl.scale(2.0)\nn\n", "import os\nos.getpid() > 0\n",
		"y = pl.scale('x', factor=[1])\n",
		"import numpy as np\nv = np.arange(3)\nmt.add(int(v.sum()), 1)\n",
		"import numpy\nmt.add(numpy.zeros(2), 1)\n",
		"from dataclasses import dataclass\n@dataclass\nclass P:\n    n: int\n"
		"p = P(2)\np.extra = 1\nmt.add(p.n, mt.add(1, 2))\n",
		"rows = [mt.load('t')]\nmt.add(*rows[0][:2])\nmt.load(name=3)\n",
	};
	static const int blocked[] = { 1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1 };
	enum { N = sizeof(cells) / sizeof(*cells) };
	struct cli_run warm[N], cold;

	if (!have(_i))
		return;
	warm_up(_i, NULL);
	/* A generous limit, so that a loaded machine cannot turn the cold
	 * checker's verdict into a skipped gate (as for the corpus). */
	for (size_t i = 0; i < N; i++)
		run(&warm[i], checkers[_i].bin, "1", "s", cells[i], "200");
	ck_assert_msg(checker_pid(1) > 0, "the warm checker is gone");
	server_env = "DOLSOT_SERVER=off";
	prepare("c", "x = 1");
	for (size_t i = 0; i < N; i++) {
		run(&cold, checkers[_i].bin, "1", "c", cells[i], "200");
		ck_assert_msg(warm[i].code == cold.code && strcmp(warm[i].out, cold.out) == 0 &&
		              strcmp(warm[i].err, cold.err) == 0,
		              "%s: warm and cold differ on %s\nwarm %d: %s%s\ncold %d: %s%s",
		              checkers[_i].name, cells[i], warm[i].code, warm[i].out, warm[i].err,
		              cold.code, cold.out, cold.err);
		ck_assert_msg(cold.code == blocked[i], "%s: exit %d on %s\n%s", checkers[_i].name,
		              cold.code, cells[i], cold.err);
		cli_run_release(&cold);
		cli_run_release(&warm[i]);
	}
}
END_TEST

/* A checker killed between cells is replaced; the cell in between is
 * still checked (warm after the restart, or cold). */
START_TEST(killed_warm_checker_is_replaced)
{
	pid_t c1, c2;

	if (!have(_i))
		return;
	c1 = warm_up(_i, NULL);
	ck_assert_int_eq(kill(c1, SIGKILL), 0);
	ck_blocked(_i, NULL, NULL);
	ck_blocked(_i, NULL, NULL);
	c2 = checker_pid(10);
	ck_assert_msg(c2 > 0 && c2 != c1, "checker %d not replaced (now %d)", (int)c1, (int)c2);
}
END_TEST

/* A checker that stops answering costs the call what a hanging cold
 * checker costs: half the time left, then the cell runs with the warning;
 * the daemon replaces it. */
START_TEST(hung_warm_checker_fails_open_within_the_deadline)
{
	struct cli_run r;
	char want[128];
	pid_t c1, c2;

	if (!have(_i))
		return;
	c1 = warm_up(_i, NULL);
	ck_assert_int_eq(kill(c1, SIGSTOP), 0);
	run(&r, checkers[_i].bin, "1", "s", "x = 41\nx + 1", "4");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "42\n");
	snprintf(want, sizeof(want), "warning: type gate skipped: %s did not finish within ",
	         checkers[_i].name);
	ck_err_has(&r, want);
	ck_assert_msg(r.seconds < 4.0, "took %.2fs with --timeout 4", r.seconds);
	cli_run_release(&r);
	for (int i = 0; i < 250 && cli_pid_alive(c1); i++)
		usleep(20000);
	ck_assert_msg(!cli_pid_alive(c1), "the hung checker %d still runs", (int)c1);
	ck_blocked(_i, NULL, NULL);
	c2 = checker_pid(10);
	ck_assert_msg(c2 > 0 && c2 != c1, "checker %d not replaced (now %d)", (int)c1, (int)c2);
}
END_TEST

/* A checker past DOLSOT_CHECKER_MAX_MB is replaced after its answer. */
START_TEST(oversized_warm_checker_is_replaced)
{
	const char *limit = "DOLSOT_CHECKER_MAX_MB=1";
	pid_t c1, c2;

	if (!have(_i))
		return;
	c1 = warm_up(_i, limit);
	ck_blocked(_i, limit, NULL);
	for (int i = 0; i < 250 && cli_pid_alive(c1); i++)
		usleep(20000);
	c2 = checker_pid(10);
	ck_assert_msg(!cli_pid_alive(c1) && c2 > 0 && c2 != c1,
	              "checker %d not replaced (now %d)", (int)c1, (int)c2);
}
END_TEST

static int count_sockets(const char *prefix, char *first, size_t len)
{
	char dir[4400];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/store", tmp);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && l > 5 &&
		    strcmp(e->d_name + l - 5, ".sock") == 0) {
			if (first && !n)
				snprintf(first, len, "%s", e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* One daemon per environment (here: per working directory), at most
 * CHECKD_MAX (4) per store: a fifth evicts the least recently used. */
START_TEST(warm_checkers_are_evicted_beyond_the_bound)
{
	char first[256] = "", dir[4300], file[4400];
	pid_t pids[16];
	struct cli_run r;
	int n;

	if (!have(1))
		return;
	server_env = "DOLSOT_SERVER=auto";
	prepare("s", "x = 1");
	for (int i = 0; i < 5; i++) {
		snprintf(dir, sizeof(dir), "%s/env%d", tmp, i);
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		snprintf(file, sizeof(file), "%s/mytools.py", dir);
		cli_write_file(file, mytools_py);
		snprintf(file, sizeof(file), "%s/plain.py", dir);
		cli_write_file(file, plain_py);
		snprintf(cwd_path, sizeof(cwd_path), "%s", dir);
		run(&r, checkers[1].bin, "1", "s", "x", NULL);
		ck_code(&r, 0);
		cli_run_release(&r);
		/* the daemon binds its socket as it starts */
		for (int t = 0; t < 250 && count_sockets(".checkd-", NULL, 0) < (i < 4 ? i + 1 : 4);
		     t++)
			usleep(20000);
		if (i == 0)
			ck_assert_int_eq(count_sockets(".checkd-", first, sizeof(first)), 1);
		usleep(50000);      /* distinct last-use times */
	}
	first[strlen(first) - 5] = '\0';
	for (int t = 0; t < 250 && count_sockets(first, NULL, 0) > 0; t++)
		usleep(20000);
	ck_assert_msg(count_sockets(first, NULL, 0) == 0, "%s was not evicted", first);
	for (int t = 0; t < 250 && cli_find_procs("dolsot-checkd", store_env, pids, 16) > 4; t++)
		usleep(20000);
	n = cli_find_procs("dolsot-checkd", store_env, pids, 16);
	ck_assert_msg(n == 4, "%d warm checkers run, want 4", n);
	ck_assert_int_eq(count_sockets(".checkd-", NULL, 0), 4);
}
END_TEST

/* A warm checker checks the text it is given now, not one it saw: a
 * cell of the same size, written again within the same second, as a valid
 * one before it (mypy's cache would take the same path, size and mtime
 * for the same file). */
START_TEST(warm_checker_checks_a_rewritten_cell_of_the_same_size)
{
	struct cli_run r;

	if (!have(_i))
		return;
	warm_up(_i, NULL);
	for (int i = 0; i < 3; i++) {
		run(&r, checkers[_i].bin, "1", "s", "mt.add(1, 234)\n", NULL);
		ck_code(&r, 0);
		ck_assert_str_eq(r.out, "235\n");
		cli_run_release(&r);
		run(&r, checkers[_i].bin, "1", "s", "mt.add(1, '3')\n", NULL);
		ck_code(&r, 1);
		ck_err_has(&r, "TypeCheckError: ");
		cli_run_release(&r);
	}
	ck_assert_msg(checker_pid(1) > 0, "the warm checker is gone");
}
END_TEST

/* A toolbox edited between cells is checked as it is now. */
START_TEST(warm_checker_sees_an_edited_toolbox)
{
	char path[4300];
	struct cli_run r;

	if (!have(_i))
		return;
	warm_up(_i, NULL);
	ck_blocked(_i, NULL, NULL);
	snprintf(path, sizeof(path), "%s/mytools.py", tmp);
	cli_write_file(path, "def add(a: int, b: int, c: int = 0) -> int:\n"
	               "    return a + b + c\n");
	run(&r, checkers[_i].bin, "1", "s", "y = mt.add(1, 2, 3)\ny\n", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "6\n");
	cli_run_release(&r);
	ck_assert_msg(checker_pid(1) > 0, "the warm checker is gone");
}
END_TEST

/* mypy's cache entry for the cell, as mypy names it in the suite's cache. */
static void cell_meta(struct stat *st)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/dolsot/mypy/3.11/_dolsot_cell.meta.json", suite_tmp);
	ck_assert_msg(stat(path, st) == 0, "%s: %s", path, strerror(errno));
}

/* The warm mypy checks each cell in place against its kept build and
 * leaves that build as it was: what one cell defines (a function named
 * like a toolbox's, a class with a dynamic attribute, a star import of the
 * toolbox) changes no later verdict, the checker is never restarted, and
 * no cache entry is written (or deleted) for a cell checked in place. */
START_TEST(warm_mypy_leaves_its_build_as_it_was_kept)
{
	static const char *const cells[] = {
		"def add(a: str) -> str:\n    return a\nclass Ticket:\n    pass\n"
		"t = Ticket()\nt.n = add('a')\n",
		"y = mt.add(1, 'a')\n",
		"from mytools import *\nz = add(2, 3)\n",
		"y = mt.add(1, 2, 3)\n",
	};
	static const char *const want[] = { NULL, "  [arg-type]\n", NULL, "  [call-arg]\n" };
	struct stat before, after;
	struct cli_run r;
	pid_t c;

	if (!have(0))
		return;
	c = warm_up(0, NULL);
	run(&r, checkers[0].bin, "1", "s", "y = mt.add(1, 2)\n", "200");
	ck_code(&r, 0);
	cli_run_release(&r);
	cell_meta(&before);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(cells) / sizeof(*cells); i++) {
			run(&r, checkers[0].bin, "1", "s", cells[i], "200");
			ck_assert_msg(r.code == (want[i] ? 1 : 0), "exit %d on %s\n%s", r.code,
			              cells[i], r.err);
			if (want[i])
				ck_err_has(&r, want[i]);
			ck_assert_msg(!cli_has(r.err, "warning"), "%s", r.err);
			cli_run_release(&r);
		}
	ck_assert_msg(checker_pid(1) == c, "checker %d was replaced", (int)c);
	cell_meta(&after);
	ck_assert_msg(after.st_ino == before.st_ino && after.st_size == before.st_size &&
	              after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	              after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
	              "the cell's cache entry was rewritten by cells checked in place");
}
END_TEST

/* A mypy whose #! line is not its interpreter alone (here with a flag) is
 * not started warm: every cell is checked by the cold run, and no checker
 * stays behind the daemon. */
START_TEST(mypy_without_a_plain_interpreter_line_runs_cold)
{
	char dir[4300], path[4400];
	struct cli_run r;

	if (!have(0))
		return;
	snprintf(dir, sizeof(dir), "%s/bin", tmp);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/mypy", dir);
	cli_write_file(path, "#!/usr/bin/python3 -s\n"
	               "from mypy.__main__ import console_entry\nconsole_entry()\n");
	ck_assert_int_eq(chmod(path, 0755), 0);
	server_env = "DOLSOT_SERVER=auto";
	prepare("s", "x = 1");
	for (int i = 0; i < 4; i++) {
		run(&r, path, "1", "s", "y = mt.add(1, 2, 3)\n", NULL);
		ck_code(&r, 1);
		ck_err_has(&r, "  [call-arg]\n");
		cli_run_release(&r);
	}
	run(&r, path, "1", "s", "x + 1", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "2\n");
	ck_assert_msg(!cli_has(r.err, "warning"), "%s", r.err);
	cli_run_release(&r);
	ck_assert_int_eq(checker_pid(0.5), 0);
}
END_TEST

/* The daemon never outlives the warm server: stopping it ends the daemon
 * and its checker, and removes the daemon's work directory (in TMPDIR). */
START_TEST(warm_checker_ends_with_the_server)
{
	char tmpdir_env[4300], work[4400];
	const char *env[] = { store_env, NULL };
	struct cli_run r;
	pid_t d, c;
	DIR *dir;
	struct dirent *e;
	int left = 0;

	if (!have(_i))
		return;
	snprintf(tmpdir_env, sizeof(tmpdir_env), "TMPDIR=%s", tmp);
	c = warm_up(_i, tmpdir_env);
	d = checkd_pid();
	cli_run(&r, &(struct cli_opts){ .env = env },
	        (const char *const[]){ "dolsot", "--server-stop", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 500 && (cli_pid_alive(d) || cli_pid_alive(c)); i++)
		usleep(20000);
	ck_assert_msg(!cli_pid_alive(d) && !cli_pid_alive(c), "daemon %d or checker %d lives on",
	              (int)d, (int)c);
	dir = opendir(tmp);
	ck_assert_ptr_nonnull(dir);
	while ((e = readdir(dir)))
		if (strncmp(e->d_name, "dolsot-checkd-", 14) == 0) {
			snprintf(work, sizeof(work), "%s/%s", tmp, e->d_name);
			left++;
		}
	closedir(dir);
	ck_assert_msg(left == 0, "%s is still there", work);
	ck_assert_int_eq(count_sockets(".checkd-", NULL, 0), 0);
}
END_TEST

/* ---- fail open, and the switch ---- */

static void write_script(const char *name, const char *body, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmp, name);
	cli_write_file(path, body);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

START_TEST(missing_checker_runs_the_cell_silently)
{
	struct cli_run r;

	run(&r, "dolsot-no-such-checker", "1", "s", "1 + 1", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "2\n");
	ck_assert_str_eq(r.err, "session now holds: (nothing)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(hanging_checker_fails_open_within_the_deadline)
{
	char path[4300], body[4600], pidfile[4300], *pid_text;
	struct cli_run r;
	pid_t pid;

	snprintf(pidfile, sizeof(pidfile), "%s/checker.pid", tmp);
	snprintf(body, sizeof(body), "#!/bin/sh\necho $$ > %s\nsleep 100\n", pidfile);
	write_script("slowcheck", body, path, sizeof(path));
	run(&r, path, "1", "s", "x = 41\nx + 1", "3");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "42\n");
	ck_err_has(&r, "warning: type gate skipped: slowcheck did not finish within 1.");
	ck_assert_msg(r.seconds < 3.0, "took %.2fs with --timeout 3", r.seconds);
	cli_run_release(&r);
	pid_text = cli_read_file(pidfile, NULL);
	ck_assert_ptr_nonnull(pid_text);
	pid = (pid_t)atoi(pid_text);
	free(pid_text);
	ck_assert(pid > 1 && !cli_pid_alive(pid));
}
END_TEST

/* A worker killed while its checker ran (the deadline, a host that gave up)
 * leaves the checker's directory behind; the next check removes it, as its
 * pid is gone, and leaves a live worker's alone. */
START_TEST(stale_checker_directories_are_removed)
{
	char path[4300], tmpdir_env[4300], ns[64], stale[4400], live[4400], file[4500];
	struct cli_run r;
	struct stat st;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	ck_assert_int_gt(gone, 0);
	waitpid(gone, NULL, 0);
	ck_assert_int_eq(stat("/proc/self/ns/pid", &st), 0);
	snprintf(ns, sizeof(ns), "%lu", (unsigned long)st.st_ino);
	snprintf(stale, sizeof(stale), "%s/dolsot-gate-%s-%d-0123456789ab", tmp, ns, (int)gone);
	snprintf(live, sizeof(live), "%s/dolsot-gate-%s-%d-0123456789ab", tmp, ns, (int)getpid());
	for (int i = 0; i < 2; i++) {
		const char *dir = i ? live : stale;

		ck_assert_int_eq(mkdir(dir, 0700), 0);
		snprintf(file, sizeof(file), "%s/_dolsot_cell.py", dir);
		cli_write_file(file, "x = 1\n");
		snprintf(file, sizeof(file), "%s/pyrightconfig.json", dir);
		cli_write_file(file, "{}\n");
	}
	write_script("okcheck", "#!/bin/sh\nexit 0\n", path, sizeof(path));
	snprintf(tmpdir_env, sizeof(tmpdir_env), "TMPDIR=%s", tmp);
	run_with(&r, path, "1", "s", "1 + 1", NULL, tmpdir_env);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "2\n");
	cli_run_release(&r);
	ck_assert_msg(stat(stale, &st) < 0 && errno == ENOENT, "%s is still there", stale);
	ck_assert_msg(stat(live, &st) == 0, "%s was removed", live);
}
END_TEST

START_TEST(crashing_checker_fails_open_with_a_warning)
{
	char path[4300];
	struct cli_run r;

	write_script("crashcheck", "#!/bin/sh\nkill -SEGV $$\n", path, sizeof(path));
	/* Relative to the caller's directory, though the checker runs elsewhere. */
	run(&r, "./crashcheck", "1", "s", "1 + 1", NULL);
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "2\n");
	ck_err_has(&r, "warning: type gate skipped: crashcheck crashed (signal 11)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(unreadable_output_fails_open_with_a_warning)
{
	char dir[4300], path[4400];
	struct cli_run r;

	/* Named mypy, so its output must be mypy's, and is not. */
	snprintf(dir, sizeof(dir), "%s/fake", tmp);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	write_script("fake/mypy", "#!/bin/sh\necho 'Segmentation fault (core dumped)'\nexit 1\n",
	             path, sizeof(path));
	run(&r, path, "1", "s", "1 + 1", NULL);
	ck_code(&r, 0);
	ck_err_has(&r, "warning: type gate skipped: cannot read mypy's output (exit status 1): "
	               "Segmentation fault (core dumped)\n");
	cli_run_release(&r);
}
END_TEST

/* Any other checker gets the file as its one argument, and its
 * file:line:col: error: lines are read; line numbers are the cell's own. */
START_TEST(generic_checker_format_blocks)
{
	char path[4300];
	struct cli_run r;

	write_script("mycheck", "#!/bin/sh\n"
	             "n=$(grep -n FLAGGED \"$1\" | cut -d: -f1)\n"
	             "echo \"$1:$n:5: error: flagged by mycheck\"\n"
	             "echo \"$1:1:1: error: in the prelude, ignored\"\n"
	             "echo \"/elsewhere/other.py:$n:1: error: another file, ignored\"\n"
	             "echo \"$1:$n:1: warning: a warning, ignored\"\n"
	             "exit 1\n", path, sizeof(path));
	run(&r, path, "1", "s", "a = 1\nb = 2\nc = mt.add(a, b)  # FLAGGED", NULL);
	ck_code(&r, 1);
	ck_assert_str_eq(r.err, "TypeCheckError: mycheck found 1 error in the cell, so it did "
	                        "not run; session unchanged\nline 3: flagged by mycheck\n"
	                        "  hint: mt.add(a: int, b: int) -> int; see mt.help(\"add\")\n");
	cli_run_release(&r);
	/* Not about a toolbox: the cell runs. */
	run(&r, path, "1", "s", "a = 1\nb = 2\nc = 3  # FLAGGED", NULL);
	ck_code(&r, 0);
	ck_err_lacks(&r, "TypeCheckError");
	cli_run_release(&r);
}
END_TEST

START_TEST(typecheck_zero_never_runs_the_checker)
{
	char path[4300], body[4600], marker[4300];
	struct cli_run r;
	struct stat st;

	snprintf(marker, sizeof(marker), "%s/checker-ran", tmp);
	snprintf(body, sizeof(body), "#!/bin/sh\ntouch %s\n", marker);
	write_script("markcheck", body, path, sizeof(path));
	run(&r, path, "0", "s", "mt.add(1, 2, 3)", NULL);
	ck_code(&r, 1);
	ck_err_lacks(&r, "TypeCheckError");
	ck_err_has(&r, "TypeError: add() takes 2 positional arguments but 3 were given");
	cli_run_release(&r);
	ck_assert_msg(stat(marker, &st) < 0 && errno == ENOENT,
	              "DOLSOT_TYPECHECK=0 ran the checker");
	/* The same call with the gate on does run it: the marker works. */
	run(&r, path, "1", "s", "1", NULL);
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_int_eq(stat(marker, &st), 0);
}
END_TEST

START_TEST(malformed_typecheck_is_a_usage_error)
{
	struct cli_run r;

	run(&r, NULL, "on", "s", "1", NULL);
	ck_code(&r, 2);
	ck_assert_str_eq(r.err, "dolsot: DOLSOT_TYPECHECK='on' is not valid: expected 0 (skip "
	                        "the type gate) or 1 (run it)\n");
	cli_run_release(&r);
}
END_TEST

/* ---- hints at run time (gate off) ---- */

static void run_hint(struct cli_run *r, const char *code)
{
	run(r, NULL, "0", "h", code, NULL);
}

START_TEST(type_error_on_toolbox_call_shows_signature)
{
	struct cli_run r;

	run_hint(&r, "a = 1\nmt.add(1, 2, 3)");
	ck_code(&r, 1);
	ck_err_has(&r, "TypeError: add() takes 2 positional arguments but 3 were given (line 2)\n"
	               "hint: mt.add(a: int, b: int) -> int; see mt.help(\"add\")\n");
	cli_run_release(&r);
	run_hint(&r, "mt.add(1, c=2)");
	ck_err_has(&r, "unexpected keyword argument 'c' (line 1)\nhint: mt.add(a: int");
	cli_run_release(&r);
	run_hint(&r, "pl.scale()");
	ck_err_has(&r, "hint: pl.scale(x: float, factor: float = 2.0) -> float\n");
	ck_err_lacks(&r, "help(");
	cli_run_release(&r);
}
END_TEST

START_TEST(type_error_from_own_function_has_no_hint)
{
	struct cli_run r;

	run_hint(&r, "def add(a, b):\n    return a + b\nadd(1, 2, 3)");
	ck_code(&r, 1);
	ck_err_has(&r, "TypeError: add() takes 2 positional arguments but 3 were given (line 3)");
	ck_err_lacks(&r, "hint:");
	cli_run_release(&r);
	/* Raised inside the toolbox although every argument fits: no hint. */
	run_hint(&r, "mt.load('bad')");
	ck_code(&r, 4);
	ck_err_lacks(&r, "hint:");
	cli_run_release(&r);
}
END_TEST

START_TEST(attribute_error_suggests_public_name)
{
	struct cli_run r;

	run_hint(&r, "mt.ad(1, 2)");
	ck_code(&r, 1);
	ck_err_has(&r, "AttributeError: module 'mytools' has no attribute 'ad' (line 1)\n"
	               "hint: did you mean mt.add?\n");
	cli_run_release(&r);
	/* _internal_addr is closer to "internal_addr" but private. */
	run_hint(&r, "mt.internal_addr()");
	ck_err_lacks(&r, "_internal");
	cli_run_release(&r);
	run_hint(&r, "pl.scalar(1)");
	ck_err_has(&r, "hint: did you mean pl.scale?\n");
	ck_err_lacks(&r, "_scalar");
	cli_run_release(&r);
	run_hint(&r, "mt.zzzzzz");
	ck_err_has(&r, "hint: mt has: BadInput, ToolError, add, help, load\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(name_error_suggests_session_name_or_alias)
{
	struct cli_run r;

	prepare("h", "orders = [1, 2]");
	run_hint(&r, "len(ordrs)");
	ck_code(&r, 1);
	ck_err_has(&r, "NameError: name 'ordrs' is not defined (line 1)\n"
	               "hint: did you mean orders?\n");
	cli_run_release(&r);
	run_hint(&r, "m.add(1, 2)");
	ck_err_has(&r, "hint: did you mean mt?\n");
	cli_run_release(&r);
	run_hint(&r, "qqqqqq");
	ck_err_lacks(&r, "hint:");
	cli_run_release(&r);
	/* Session names and aliases first, then the builtins. */
	run_hint(&r, "pritn(1)");
	ck_err_has(&r, "hint: did you mean print?\n");
	cli_run_release(&r);
}
END_TEST

/* A toolbox written in C: its functions name themselves module.name(). */
START_TEST(type_error_on_c_toolbox_call_shows_signature)
{
	const char *env[] = { store_env, "DOLSOT_TYPECHECK=0", NULL };
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = env },
	        (const char *const[]){ "dolsot", "--toolbox", "math:m", "--session", "c",
	                               "m.sqrt(1, 2)", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "TypeError: math.sqrt() takes exactly one argument (2 given) (line 1)\n"
	               "hint: m.sqrt(x, /)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(hints_keep_the_toolbox_exit_code)
{
	struct cli_run r;

	run_hint(&r, "mt.load('bad')");
	ck_code(&r, 4);
	ck_err_has(&r, "BadInput: no such table: bad (line 1)");
	cli_run_release(&r);
}
END_TEST

/* ---- hints with the crm toolbox (tests/lib/toolbox/crm.py) ---- */

/* Run a cell of session "crm" without the gate, with crm as crm. */
static void run_crm(struct cli_run *r, const char *code)
{
	const char *env[] = { store_env, cache_env, "DOLSOT_TYPECHECK=0", server_env, NULL };

	cli_run(r, &(struct cli_opts){ .env = env, .cwd = cwd_path },
	        (const char *const[]){ "dolsot", "--toolbox", "crm:crm", "--session", "crm",
	                               code, NULL });
}

/* Run a cell that must succeed. */
static void crm_ok(const char *code)
{
	struct cli_run r;

	run_crm(&r, code);
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* Run a cell that fails with exit status code; stderr must hold want. */
static void crm_hint(const char *code, int exit_code, const char *want)
{
	struct cli_run r;

	run_crm(&r, code);
	ck_code(&r, exit_code);
	ck_err_has(&r, want);
	cli_run_release(&r);
}

/* Run a failing cell that must get no hint. */
static void crm_no_hint(const char *code)
{
	struct cli_run r;

	run_crm(&r, code);
	ck_assert_msg(r.code != 0, "the cell succeeded:\n%s", r.err);
	ck_err_lacks(&r, "hint:");
	cli_run_release(&r);
}

START_TEST(dropped_name_says_which_call_and_why)
{
	crm_ok("x = 1");
	crm_ok("import sqlite3\nconn = sqlite3.connect(':memory:')");
	crm_hint("conn.execute('select 1')", 1,
	         "NameError: name 'conn' is not defined (line 1)\n"
	         "hint: conn was dropped at the end of the call that ran `conn = "
	         "sqlite3.connect(':memory:')`: its value, a sqlite3.Connection, could not be "
	         "pickled (TypeError: cannot pickle 'sqlite3.Connection' object); re-create it "
	         "in the cell that uses it\n");
	/* Held again, then deleted: the old drop no longer explains it. */
	crm_ok("conn = 5");
	crm_ok("del conn");
	crm_no_hint("conn.execute('select 1')");
}
END_TEST

/* The session remembers the newest 32 dropped names, not all of them. */
START_TEST(dropped_names_are_remembered_bounded)
{
	crm_ok("gens = {}\nfor i in range(40):\n    globals()[f'g{i:02}'] = (j for j in range(1))\n"
	       "del gens, i");
	crm_hint("next(g39)", 1, "hint: g39 was dropped at the end of an earlier call: its "
	         "value, a generator, could not be pickled");
	crm_hint("next(g08)", 1, "hint: g08 was dropped");
	crm_no_hint("next(g07)");
}
END_TEST

START_TEST(failed_cell_names_are_explained)
{
	crm_ok("a = 1");
	crm_hint("b = 2\nratio = a / 0\ntotal = ratio * 2\ndef report():\n    return total", 1,
	         "ZeroDivisionError: division by zero (line 2)\n");
	crm_hint("total + 1", 1, "NameError: name 'total' is not defined (line 1)\n"
	         "hint: total was never assigned: an earlier cell raised ZeroDivisionError "
	         "before `total = ratio * 2` completed; run that line again\n");
	crm_hint("report()", 1, "hint: report was never assigned: an earlier cell raised "
	         "ZeroDivisionError before `def report():` completed; run that line again\n");
	/* b was bound before the failure: it is held, with no record. */
	crm_ok("b");
	/* skipped was passed over by the cell's own if, before the failure. */
	crm_hint("if a > 5:\n    skipped = 1\nboom = 1 / 0", 1, "ZeroDivisionError");
	crm_no_hint("skipped");
	crm_hint("boom", 1, "hint: boom was never assigned: an earlier cell raised "
	         "ZeroDivisionError before `boom = 1 / 0` completed; run that line again\n");
	/* Assigned since: the record is gone. */
	crm_ok("total = 3");
	crm_ok("del total");
	crm_no_hint("total + 1");
}
END_TEST

START_TEST(name_used_before_the_cell_binds_it_gets_no_hint)
{
	/* json would suggest the import, tota a near miss: both mislead. */
	crm_ok("total = 1");
	crm_no_hint("print(json.dumps(1))\nimport json");
	crm_no_hint("print(tota)\ntota = 2");
}
END_TEST

START_TEST(forgotten_alias_prefix_is_suggested)
{
	crm_hint("user = fetch_user(1)", 1,
	         "NameError: name 'fetch_user' is not defined (line 1)\n"
	         "hint: did you mean crm.fetch_user?\n");
	crm_hint("list_tickets()", 1, "hint: did you mean crm.list_tickets?\n");
	/* A private toolbox name is never suggested. */
	crm_no_hint("db_handle()");
}
END_TEST

START_TEST(calling_a_value_names_what_it_shadows)
{
	crm_ok("lookup = crm.lookup('ada@example.com')");
	crm_hint("lookup('grace@example.com')", 1,
	         "TypeError: 'Customer' object is not callable (line 1)\n"
	         "hint: lookup is a Customer (Customer(id=1, name='Ada Lovelace', e...), not a "
	         "function: it shadows crm.lookup; call crm.lookup instead, and keep the value "
	         "under another name\n");
	crm_ok("list = [t.id for t in crm.list_tickets()]");
	crm_hint("list('abc')", 1, "hint: list is a list ([100, 102]), not a function: it "
	         "shadows the builtin list(); del list to get the builtin back, and keep the "
	         "value under another name\n");
	crm_ok("del list\ncount = 3");
	crm_hint("count()", 1, "hint: count is an int (3), not a function\n");
	/* A toolbox's constant, called. */
	crm_hint("crm.CATALOG_VERSION()", 1,
	         "TypeError: 'str' object is not callable (line 1)\n"
	         "hint: crm.CATALOG_VERSION is a str ('2024.1'), not a function, so it cannot be "
	         "called: use crm.CATALOG_VERSION without ()\n");
	/* The cell's own callable that raises is not a non-callable. */
	crm_no_hint("class K:\n    def __call__(self):\n        raise TypeError('nope')\nK()()");
}
END_TEST

START_TEST(missing_import_is_suggested)
{
	crm_hint("json.dumps({'a': 1})", 1, "NameError: name 'json' is not defined (line 1)\n"
	         "hint: json is not imported in this session: add `import json` to the cell\n");
	crm_hint("np.zeros(3)", 1,
	         "hint: np is not imported in this session: add `import numpy as np` to the cell\n");
	crm_hint("pd.DataFrame()", 1,
	         "hint: pd is not imported in this session: add `import pandas as pd` to the cell\n");
	crm_hint("Path('.').exists()", 1, "hint: Path is not imported in this session: add "
	         "`from pathlib import Path` to the cell\n");
	crm_hint("datetime.date.today()", 1, "add `import datetime` to the cell\n");
}
END_TEST

START_TEST(attribute_near_miss_on_any_object)
{
	crm_hint("c = crm.fetch_user(1)\nc.emial", 1,
	         "AttributeError: 'Customer' object has no attribute 'emial' (line 2)\n"
	         "hint: did you mean .email?\n");
	crm_hint("'abc'.uper()", 1, "hint: did you mean .upper?\n");
	crm_hint("t = crm.list_tickets()[0]\nt.name", 1,
	         "hint: Ticket has: customer_id, id, priority, status, title\n");
	crm_hint("row = {'region': 'emea'}\nrow.region", 1,
	         "hint: it is a dict: use ['region'], not .region\n");
	/* Private attributes are never suggested. */
	crm_no_hint("class K:\n    def __init__(self):\n        self._token = 1\nK().token");
	crm_hint("crm.fetch_usr(1)", 1, "hint: did you mean crm.fetch_user?\n");
}
END_TEST

START_TEST(key_error_near_miss_and_existing_keys)
{
	crm_hint("row = {'id': 1, 'region': 'emea', 'email': 'a@b.c'}\nrow['regin']", 1,
	         "KeyError: 'regin' (line 2)\n"
	         "hint: did you mean 'region'? (row has keys: 'id', 'region', 'email')\n");
	crm_hint("cfg = {'db': {'Host': 'x'}}\ncfg['db']['host']", 1,
	         "hint: did you mean 'Host'? (cfg['db'] has keys: 'Host')\n");
	crm_hint("big = {f'k{i}': i for i in range(20)}\nbig['zzz']", 1,
	         "hint: big has keys: 'k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8', "
	         "'k9', 'k10', 'k11', ... (20 in all)\n");
	crm_hint("df = crm.tickets_frame()\ndf['priorty']", 1,
	         "KeyError: 'priorty' (line 2)\nhint: did you mean 'priority'? (df has columns: "
	         "'id', 'customer_id', 'title', 'priority', 'status')\n");
	crm_hint("s = crm.tickets_frame().set_index('title')['priority']\ns['cannot login']", 1,
	         "hint: did you mean 'cannot log in'? (s has index labels: 'cannot log in', "
	         "'invoice is wrong', 'export to csv')\n");
	/* A key looked up inside the cell's own function. */
	crm_hint("def region_of(rec):\n    return rec['regoin']\nregion_of({'region': 'x'})", 1,
	         "hint: did you mean 'region'? (rec has keys: 'region')\n");
	/* Not a dict, a frame or a series: no guess. */
	crm_no_hint("import os\nos.environ['DOLSOT_NO_SUCH_VARIABLE']");
}
END_TEST

START_TEST(positional_frame_access_points_at_iloc)
{
	crm_hint("df = crm.tickets_frame()\nfirst = df[0]", 1,
	         "KeyError: 0 (line 2)\n"
	         "hint: df[0] looks up a column named 0; for the row at position 0 use "
	         "df.iloc[0], for a column by position df.iloc[:, 0] (df has columns: 'id', "
	         "'customer_id', 'title', 'priority', 'status')\n");
}
END_TEST

START_TEST(type_error_inside_toolbox_names_the_parameter)
{
	crm_hint("c = crm.fetch_user(1)\nt = crm.open_ticket(c, 'refund', priority='high')", 1,
	         "TypeError: '<=' not supported between instances of 'int' and 'str' (line 2)\n"
	         "hint: crm.open_ticket() parameter priority is annotated int, but the call "
	         "passed str 'high'; see crm.help(\"open_ticket\")\n");
	/* A record passed where the toolbox wants one of its fields. */
	crm_hint("c = crm.fetch_user(2)\ncrm.tickets_of(c)", 1,
	         "hint: crm.tickets_of() parameter email is annotated str, but the call passed "
	         "Customer Customer(id=2, name='Grace Hopper', e...; pass its field instead: "
	         "c.email (str); see crm.help(\"tickets_of\")\n");
	crm_hint("crm.open_ticket({'id': 1}, 'refund')", 1,
	         "hint: crm.open_ticket() parameter customer is annotated Customer, but the "
	         "call passed dict {'id': 1}; see crm.help(\"open_ticket\")\n");
	/* Every argument fits: the fault is not the call's. */
	crm_hint("crm.open_ticket(crm.fetch_user(1), 'x', priority=9)", 3,
	         "CrmError: priority must be 1, 2 or 3, not 9 (line 1)\n");
	crm_no_hint("crm.open_ticket(crm.fetch_user(1), 'x', priority=9)");
	/* The cell's own function. */
	crm_no_hint("def open_ticket(c, title, priority: int = 2):\n    return priority <= 3\n"
	            "open_ticket(None, 'x', priority='high')");
}
END_TEST

/* A call that raises nothing never imports the hints. */
START_TEST(hints_cost_nothing_on_success)
{
	struct cli_run r;

	run_crm(&r, "import sys\n'_dolsot_hints' in sys.modules");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "False\n");
	cli_run_release(&r);
}
END_TEST

static Suite *typegate_suite(void)
{
	Suite *s = suite_create("typegate");
	TCase *parse = tcase_create("parse"), *runner = tcase_create("runner"),
	      *gate = tcase_create("gate"), *open = tcase_create("fail-open"),
	      *hint = tcase_create("hints"), *warm = tcase_create("warm-checker");
	/* The corpus of valid cells, the suite's longest part, in four TCases.
	 * `make check` runs each TCase as a job of its own, side by side
	 * (tests/run.py SUITE@TCASE): a new one goes into the Makefile's
	 * TYPEGATE_TCASES too. */
	TCase *corpus_warm_mypy = tcase_create("corpus-warm-mypy"),
	      *corpus_warm_pyright = tcase_create("corpus-warm-pyright"),
	      *corpus_mypy = tcase_create("corpus-cold-mypy"),
	      *corpus_pyright = tcase_create("corpus-cold-pyright");
	/* The warm checkers' cases: mypy's in warm-checker, pyright's (the
	 * slower to start) in a TCase of their own. */
	TCase *warm_pyright = tcase_create("warm-pyright");
	TCase *all[] = { parse, runner, gate, corpus_warm_mypy, corpus_warm_pyright, corpus_mypy,
	                 corpus_pyright, open, hint, warm, warm_pyright };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], all[i] == parse || all[i] == runner || all[i] == open ||
		                          all[i] == hint || all[i] == warm || all[i] == warm_pyright ?
		                          300 : 3600);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(parse, parses_mypy_output);
	tcase_add_test(parse, parses_pyright_json);
	tcase_add_test(parse, parses_ty_concise_sample);
	tcase_add_test(parse, parses_generic_lines);
	tcase_add_test(parse, unreadable_output_is_refused);
	tcase_add_test(parse, texts_are_capped_and_cleaned);
	tcase_add_test(parse, diagnostics_are_capped);
	tcase_add_test(parse, json_escapes_decode);
	tcase_add_test(parse, deep_json_is_refused);
	tcase_add_test(parse, checker_is_chosen_by_name);
	tcase_add_test(runner, runner_captures_output_and_status);
	tcase_add_test(runner, runner_caps_output);
	tcase_add_test(runner, runner_reports_missing_and_unstartable);
	tcase_add_test(runner, runner_reports_a_crash);
	tcase_add_test(runner, runner_kills_a_hanging_group_at_the_deadline);
	/* One loop index per checker: 0 mypy, 1 pyright. */
	tcase_add_loop_test(gate, wrong_argument_count_is_blocked, 0, 2);
	tcase_add_loop_test(gate, diagnostics_not_about_a_toolbox_do_not_block, 0, 2);
	tcase_add_loop_test(gate, gate_blocks_on_the_cold_path_too, 0, 2);
	tcase_add_loop_test(gate, wrong_argument_type_is_blocked, 0, 2);
	tcase_add_loop_test(gate, held_toolbox_record_passed_for_a_field_is_blocked, 0, 2);
	tcase_add_loop_test(gate, unknown_toolbox_attribute_is_blocked, 0, 2);
	tcase_add_loop_test(gate, toolbox_without_help_gets_the_signature_only, 0, 2);
	tcase_add_loop_test(corpus_warm_mypy, valid_cells_pass_the_gate, 0, 1);
	tcase_add_loop_test(corpus_warm_pyright, valid_cells_pass_the_gate, 1, 2);
	tcase_add_loop_test(corpus_mypy, valid_cells_pass_the_gate, 2, 3);
	tcase_add_loop_test(corpus_pyright, valid_cells_pass_the_gate, 3, 4);
	/* Both checkers are kept warm: 0 mypy, 1 pyright. */
	/* Loop index 0: mypy, in warm-checker; 1: pyright, in warm-pyright. */
	for (int k = 0; k < 2; k++) {
		TCase *tc = k ? warm_pyright : warm;

		tcase_add_loop_test(tc, warm_checker_answers_as_the_cold_one, k, k + 1);
		tcase_add_loop_test(tc, warm_checker_checks_a_rewritten_cell_of_the_same_size, k,
		                    k + 1);
		tcase_add_loop_test(tc, warm_checker_sees_an_edited_toolbox, k, k + 1);
		tcase_add_loop_test(tc, killed_warm_checker_is_replaced, k, k + 1);
		tcase_add_loop_test(tc, hung_warm_checker_fails_open_within_the_deadline, k, k + 1);
		tcase_add_loop_test(tc, oversized_warm_checker_is_replaced, k, k + 1);
		tcase_add_loop_test(tc, warm_checker_ends_with_the_server, k, k + 1);
	}
	tcase_add_test(warm_pyright, warm_checkers_are_evicted_beyond_the_bound);
	tcase_add_test(warm, mypy_without_a_plain_interpreter_line_runs_cold);
	tcase_add_test(warm, warm_mypy_leaves_its_build_as_it_was_kept);
	tcase_add_test(open, missing_checker_runs_the_cell_silently);
	tcase_add_test(open, hanging_checker_fails_open_within_the_deadline);
	tcase_add_test(open, stale_checker_directories_are_removed);
	tcase_add_test(open, crashing_checker_fails_open_with_a_warning);
	tcase_add_test(open, unreadable_output_fails_open_with_a_warning);
	tcase_add_test(open, generic_checker_format_blocks);
	tcase_add_test(open, typecheck_zero_never_runs_the_checker);
	tcase_add_test(open, malformed_typecheck_is_a_usage_error);
	tcase_add_test(hint, type_error_on_toolbox_call_shows_signature);
	tcase_add_test(hint, type_error_from_own_function_has_no_hint);
	tcase_add_test(hint, attribute_error_suggests_public_name);
	tcase_add_test(hint, name_error_suggests_session_name_or_alias);
	tcase_add_test(hint, type_error_on_c_toolbox_call_shows_signature);
	tcase_add_test(hint, hints_keep_the_toolbox_exit_code);
	tcase_add_test(hint, dropped_name_says_which_call_and_why);
	tcase_add_test(hint, dropped_names_are_remembered_bounded);
	tcase_add_test(hint, failed_cell_names_are_explained);
	tcase_add_test(hint, name_used_before_the_cell_binds_it_gets_no_hint);
	tcase_add_test(hint, forgotten_alias_prefix_is_suggested);
	tcase_add_test(hint, calling_a_value_names_what_it_shadows);
	tcase_add_test(hint, missing_import_is_suggested);
	tcase_add_test(hint, attribute_near_miss_on_any_object);
	tcase_add_test(hint, key_error_near_miss_and_existing_keys);
	tcase_add_test(hint, positional_frame_access_points_at_iloc);
	tcase_add_test(hint, type_error_inside_toolbox_names_the_parameter);
	tcase_add_test(hint, hints_cost_nothing_on_success);
	return s;
}

int main(void)
{
	int failed;

	suite_tmp = cli_tempdir();
	find_checkers();
	failed = ck_run(typegate_suite());
	cli_rmtree(suite_tmp);
	free(suite_tmp);
	free((char *)checkers[0].bin);
	return failed ? 1 : 0;
}
