/*
 * check_json.c - --json, figures and rich values, and --describe, end to
 * end: each case runs the real binary, reads its stdout with jansson, and
 * validates every object against schema/result.schema.json with Debian's
 * python3-jsonschema.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

static struct cli_test fx;

static void setup(void)
{
	char err[4096];

	cli_test_begin(&fx, cli_usual_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

/* Figures import and render with matplotlib: under a sanitizer on a
 * loaded machine that alone can pass the usual 20 s. */
static void setup_figures(void)
{
	setup();
	cli_test_add_env(&fx, "DOLSOT_TIMEOUT=180");
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* stdout must be one object the shipped schema accepts. */
static void ck_schema(const struct cli_run *r)
{
	char schema[4200];
	struct cli_run v;
	char *cwd = getcwd(NULL, 0);

	snprintf(schema, sizeof(schema), "%s/schema/result.schema.json", cwd);
	cli_run(&v, &(struct cli_opts){ .prog = "/usr/bin/python3", .stdin_data = r->out,
	                                .stdin_len = r->out_len },
	        (const char *const[]){ "python3", "tests/lib/validate_json.py", schema, NULL });
	ck_assert_msg(v.code == 0, "schema rejects the output:\n%s\nstdout: %s", v.err, r->out);
	cli_run_release(&v);
	free(cwd);
}

/* Run dolsot with extra environment (or NULL) and argv; parse stdout. */
static json_t *run_json(struct cli_run *r, const char *const *extra, const char *const *argv)
{
	json_error_t e;
	json_t *o;

	cli_test_run(&fx, r, NULL, extra, argv);
	ck_schema(r);
	o = json_loadb(r->out, r->out_len, JSON_ALLOW_NUL, &e);
	ck_assert_msg(json_is_object(o), "not a JSON object (%s): %s", e.text, r->out);
	return o;
}

#define JSON(r, ...) run_json((r), NULL, (const char *const[]){ "dolsot", __VA_ARGS__, NULL })

/* The member at a dotted path ("error.ename", "displays.0.data"). */
static json_t *at(json_t *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, strtoul(k, NULL, 10)) : json_object_get(o, k);
	return o;
}

static const char *str_at(json_t *o, const char *path)
{
	json_t *v = at(o, path);

	ck_assert_msg(json_is_string(v), "%s is not a string", path);
	return json_string_value(v);
}

static long long int_at(json_t *o, const char *path)
{
	json_t *v = at(o, path);

	ck_assert_msg(json_is_integer(v), "%s is not an integer", path);
	return json_integer_value(v);
}

#define ck_str(o, path, want) ck_assert_str_eq(str_at((o), (path)), (want))
#define ck_int(o, path, want) ck_assert_int_eq(int_at((o), (path)), (want))
#define ck_null(o, path) ck_assert_msg(json_is_null(at((o), (path))), "%s is not null", (path))
#define ck_len(o, path, n) ck_assert_int_eq(json_array_size(at((o), (path))), (n))

/* ---- PNG payloads ---- */

static int b64(char c)
{
	const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(abc, c) : NULL;

	return p ? (int)(p - abc) : -1;
}

/* Decode base64 (independently of dolsot's decoder); *n the bytes. */
static unsigned char *unbase64(const char *s, size_t *n)
{
	size_t len = strlen(s), o = 0;
	unsigned char *out = malloc(len / 4 * 3 + 3);
	unsigned bits = 0, nbits = 0;

	for (size_t i = 0; i < len && s[i] != '='; i++) {
		int v = b64(s[i]);

		ck_assert_msg(v >= 0, "bad base64 at %zu", i);
		bits = (bits << 6) | (unsigned)v;
		nbits += 6;
		if (nbits >= 8) {
			nbits -= 8;
			out[o++] = (unsigned char)(bits >> nbits);
		}
	}
	*n = o;
	return out;
}

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* A PNG of exactly w x h pixels. */
static void ck_png(const unsigned char *p, size_t n, unsigned w, unsigned h)
{
	ck_assert_msg(n > 24 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG");
	ck_assert_msg(memcmp(p + 12, "IHDR", 4) == 0, "no IHDR first");
	ck_assert_int_eq(be32(p + 16), w);
	ck_assert_int_eq(be32(p + 20), h);
}

static void ck_png_display(json_t *o, size_t i, unsigned w, unsigned h)
{
	char path[64];
	size_t n;
	unsigned char *png;

	snprintf(path, sizeof(path), "displays.%zu.data.image/png", i);
	png = unbase64(str_at(o, path), &n);
	ck_png(png, n, w, h);
	free(png);
	snprintf(path, sizeof(path), "displays.%zu.metadata.width", i);
	ck_int(o, path, w);
	snprintf(path, sizeof(path), "displays.%zu.metadata.height", i);
	ck_int(o, path, h);
}

static const char plot[] =
	"import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
	"fig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3])\nprint('drawn')\n";

/* ---- --json: the fields of each kind of call ---- */

START_TEST(json_success_has_every_field)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "import sys\nprint('hi')\nsys.stderr.write('note\\n')\nx = 41\nx + 1");

	ck_code(&r, 0);
	ck_str(o, "status", "ok");
	ck_int(o, "exit_code", 0);
	ck_int(o, "execution_count", 1);
	ck_str(o, "stdout", "hi\n");
	ck_str(o, "stderr", "note\n");
	ck_str(o, "value", "42");
	ck_null(o, "error");
	ck_null(o, "limit");
	ck_str(o, "session.id", "t");
	ck_str(o, "session.state", "created");
	ck_len(o, "session.held", 2);
	ck_str(o, "session.held.0", "sys");
	ck_str(o, "session.held.1", "x");
	ck_len(o, "session.dropped", 0);
	ck_assert_int_eq(json_object_size(at(o, "truncated")), 0);
	ck_len(o, "diagnostics", 0);
	ck_len(o, "displays", 0);
	ck_len(o, "warnings", 0);
	ck_assert(json_is_number(at(o, "timings_ms.total")));
	ck_assert(json_is_number(at(o, "timings_ms.cell")));
	ck_assert(json_is_number(at(o, "timings_ms.save")));
	ck_assert(json_number_value(at(o, "timings_ms.total")) >=
	          json_number_value(at(o, "timings_ms.cell")));
	ck_assert_int_eq(r.err_len, 0);
	json_decref(o);
	cli_run_release(&r);

	o = JSON(&r, "--json", "--session", "t", "x");
	ck_int(o, "execution_count", 2);
	ck_str(o, "session.state", "committed");
	ck_str(o, "value", "41");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_exception_is_structured)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "y = 5\ndef f():\n    return 1 / 0\nf()");
	json_t *tb;

	ck_code(&r, 1);
	ck_str(o, "status", "error");
	ck_int(o, "exit_code", 1);
	ck_null(o, "value");
	ck_str(o, "error.ename", "ZeroDivisionError");
	ck_str(o, "error.evalue", "division by zero");
	ck_int(o, "error.line", 3);
	tb = at(o, "error.traceback");
	ck_assert_str_eq(json_string_value(json_array_get(tb, 0)),
	                 "Traceback (most recent call last):");
	ck_assert_str_eq(json_string_value(json_array_get(tb, 1)),
	                 "  File \"<cell>\", line 4, in <module>");
	ck_assert_str_eq(json_string_value(json_array_get(tb, 2)), "    f()");
	ck_assert_str_eq(json_string_value(json_array_get(tb, json_array_size(tb) - 1)),
	                 "ZeroDivisionError: division by zero");
	ck_len(o, "error.hints", 0);
	/* A failed cell keeps what it assigned, as in text mode. */
	ck_str(o, "session.state", "created");
	ck_str(o, "session.held.1", "y");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_error_hints_are_listed)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t", "counter = 1\ncountr + 1");

	ck_str(o, "error.ename", "NameError");
	ck_int(o, "error.line", 2);
	ck_assert_msg(json_array_size(at(o, "error.hints")) >= 1, "no hint: %s", r.out);
	ck_assert_msg(strstr(str_at(o, "error.hints.0"), "counter"), "hint: %s", r.out);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_toolbox_exit_code)
{
	struct cli_run r;
	char pp[4300], mod[4300];
	json_t *o;

	snprintf(mod, sizeof(mod), "%s/tools_x.py", fx.tmp);
	cli_write_file(mod, "class ToolError(Exception):\n    exit_code = 7\n"
	               "def fail(why):\n    raise ToolError(why)\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	o = run_json(&r, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--json", "--toolbox", "tools_x:tx",
	                                    "--session", "t", "tx.fail('no such order')", NULL });
	ck_code(&r, 7);
	ck_int(o, "exit_code", 7);
	ck_str(o, "status", "error");
	ck_str(o, "error.ename", "ToolError");
	ck_str(o, "error.evalue", "no such order");
	ck_int(o, "error.line", 1);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_timeout_rolls_back)
{
	struct cli_run r;
	char hint[400];
	json_t *o;

	o = JSON(&r, "--json", "--session", "t", "a = 1");
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "t", "--timeout", "1",
	         "a = 2\nimport time\ntime.sleep(30)");
	ck_code(&r, 124);
	ck_str(o, "status", "timeout");
	ck_int(o, "exit_code", 124);
	ck_str(o, "session.state", "rolled_back");
	/* What the session holds, rolled back: what it held before. */
	ck_len(o, "session.held", 1);
	ck_str(o, "session.held.0", "a");
	ck_null(o, "execution_count");
	ck_str(o, "error.ename", "TimeoutError");
	/* The hint goes to hints, as a cell's hints do, not into evalue. */
	ck_str(o, "error.evalue", "cell killed after exceeding its 1s timeout; session unchanged");
	ck_assert_int_eq(json_array_size(at(o, "error.traceback")), 1);
	ck_str(o, "error.traceback.0", "TimeoutError: cell killed after exceeding its 1s "
	       "timeout; session unchanged");
	ck_assert_int_eq(json_array_size(at(o, "error.hints")), 1);
	snprintf(hint, sizeof(hint), "%s", TIMEOUT_HINT_LINE("1s"));
	hint[strcspn(hint, "\n")] = '\0';   /* a line of text; an item of hints */
	ck_str(o, "error.hints.0", hint);
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "t", "a");
	ck_str(o, "value", "1");
	ck_int(o, "execution_count", 2);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* The toolbox typed_x (add(a: int, b: int) -> int) in the test's directory,
 * and the PYTHONPATH entry that finds it, into pp. */
static void typed_toolbox(char *pp, size_t len)
{
	char mod[4300];

	snprintf(mod, sizeof(mod), "%s/typed_x.py", fx.tmp);
	cli_write_file(mod, "def add(a: int, b: int) -> int:\n    return a + b\n");
	snprintf(pp, len, "PYTHONPATH=%s", fx.tmp);
}

/* code in session with typed_x as tx and the gate on, with mypy: --json. */
static json_t *gated(struct cli_run *r, const char *pp, const char *session, const char *code)
{
	return run_json(r, (const char *const[]){ pp, "DOLSOT_TYPECHECK=1", "DOLSOT_TY_BIN=mypy",
	                                          NULL },
	                (const char *const[]){ "dolsot", "--json", "--toolbox", "typed_x:tx",
	                                       "--session", session, "--timeout", "60", code,
	                                       NULL });
}

/* The hint lines of run's text output (stderr), without their indent, in
 * order, '\n'-separated, into out. */
static void text_hints(const struct cli_run *r, char *out, size_t len)
{
	const char *p = r->err;

	out[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "\n"), lead = strspn(p, " ");

		if (lead < n && strncmp(p + lead, "hint: ", 6) == 0)
			snprintf(out + strlen(out), len - strlen(out), "%.*s\n", (int)(n - lead),
			         p + lead);
		p += n + (p[n] == '\n');
	}
}

/* Every hint line the text output shows is in --json's error.hints: a
 * cell's own, a timeout's, the type gate's (issue 42). */
START_TEST(json_hints_are_every_hint_the_text_shows)
{
	static const struct { const char *code, *timeout; bool gate; } cells[] = {
		{ "tx.ad(1, 2)", NULL, false },
		{ "count = 3\ncount()", NULL, false },
		{ "import time\ntime.sleep(30)", "1", false },
		{ "tx.add('one', 2)", NULL, true },
	};
	char pp[4300], text[2048], json[2048], session[32];
	struct cli_run r;
	json_t *o, *h;
	size_t i, k;

	typed_toolbox(pp, sizeof(pp));
	for (i = 0; i < sizeof(cells) / sizeof(*cells); i++) {
		const char *env[] = { pp, cells[i].gate ? "DOLSOT_TYPECHECK=1" : "DOLSOT_TYPECHECK=0",
		                      "DOLSOT_TY_BIN=mypy", NULL };
		const char *argv[] = { "dolsot", "--json", "--toolbox", "typed_x:tx", "--session",
		                       session, "--timeout",
		                       cells[i].timeout ? cells[i].timeout : "60", cells[i].code,
		                       NULL };
		const char *text_argv[] = { "dolsot", argv[2], argv[3], argv[4], argv[5], argv[6],
		                            argv[7], argv[8], NULL };

		if (cells[i].gate && access("/usr/bin/mypy", X_OK) != 0)
			continue;
		/* The same cell in a fresh session each way: text, then --json. */
		snprintf(session, sizeof(session), "text%zu", i);
		cli_test_run(&fx, &r, NULL, env, text_argv);
		text_hints(&r, text, sizeof(text));
		ck_assert_msg(text[0], "%s: no hint shown: %s", cells[i].code, r.err);
		cli_run_release(&r);
		snprintf(session, sizeof(session), "json%zu", i);
		o = run_json(&r, env, argv);
		json[0] = '\0';
		h = at(o, "error.hints");
		for (k = 0; k < json_array_size(h); k++)
			snprintf(json + strlen(json), sizeof(json) - strlen(json), "%s\n",
			         json_string_value(json_array_get(h, k)));
		ck_assert_msg(strcmp(text, json) == 0, "%s:\ntext: %s\njson: %s", cells[i].code,
		              text, json);
		json_decref(o);
		cli_run_release(&r);
	}
}
END_TEST

/* session.held is what the session holds after every call: a cell that
 * ended the interpreter, and one the gate rejected, leave it as it was. */
START_TEST(json_held_after_calls_that_roll_back)
{
	struct cli_run r;
	char pp[4300];
	json_t *o;

	o = JSON(&r, "--json", "--session", "h", "a = 1\nb = [2]");
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "h", "c = 3\nraise SystemExit(2)");
	ck_str(o, "session.state", "rolled_back");
	ck_len(o, "session.held", 2);
	ck_str(o, "session.held.0", "a");
	ck_str(o, "session.held.1", "b");
	json_decref(o);
	cli_run_release(&r);
	if (access("/usr/bin/mypy", X_OK) != 0)
		return;
	typed_toolbox(pp, sizeof(pp));
	o = gated(&r, pp, "h", "tx.add('one', 2)");
	ck_str(o, "status", "rejected");
	ck_len(o, "session.held", 2);
	ck_str(o, "session.held.1", "b");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_limit_is_killed)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t", "--recursion-limit", "50",
	                 "def f(n):\n    return f(n + 1)\nf(0)");

	ck_code(&r, 1);
	ck_str(o, "status", "killed");
	ck_str(o, "limit", "recursion-limit");
	ck_str(o, "session.state", "rolled_back");
	ck_str(o, "error.ename", "RecursionError");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_dropped_names_have_reasons)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "g = (i for i in range(3))\nn = 1");

	ck_code(&r, 0);
	ck_len(o, "session.dropped", 1);
	ck_str(o, "session.dropped.0.name", "g");
	ck_str(o, "session.dropped.0.reason", "TypeError: cannot pickle 'generator' object");
	ck_len(o, "session.held", 1);
	ck_len(o, "session.kept_unloaded", 0);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_kept_unloaded_names)
{
	struct cli_run r;
	char pp[4300], mod[4300];
	json_t *o;

	snprintf(mod, sizeof(mod), "%s/keptx.py", fx.tmp);
	cli_write_file(mod, "class Item:\n    pass\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	o = run_json(&r, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--json", "--toolbox", "keptx:kx",
	                                    "--session", "t", "item = kx.Item()\nn = 1", NULL });
	ck_len(o, "session.kept_unloaded", 0);
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "t", "n + 1");
	ck_code(&r, 0);
	ck_str(o, "value", "2");
	ck_len(o, "session.kept_unloaded", 1);
	ck_str(o, "session.kept_unloaded.0.name", "item");
	ck_assert_msg(cli_has(str_at(o, "session.kept_unloaded.0.reason"), "keptx"), "%s", r.out);
	ck_len(o, "session.held", 1);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_truncation_counts_kept_and_cut)
{
	struct cli_run r;
	json_t *o = run_json(&r, (const char *const[]){ "DOLSOT_MAX_OUTPUT=10", NULL },
	                     (const char *const[]){ "dolsot", "--json", "--session", "t",
	                                            "print('x' * 99)\n'é' * 50", NULL });

	ck_code(&r, 0);
	ck_str(o, "stdout", "xxxxx\n[output truncated: kept the first 5 and the last 5 chars; "
	       "cut 90 bytes (90 chars) here]\nxxxx\n");
	ck_int(o, "truncated.stdout.kept", 10);
	ck_int(o, "truncated.stdout.cut", 90);
	ck_int(o, "truncated.stdout.head", 5);
	ck_int(o, "truncated.stdout.tail", 5);
	ck_int(o, "truncated.stdout.cut_bytes", 90);
	ck_int(o, "truncated.value.kept", 10);
	ck_int(o, "truncated.value.cut", 42);
	ck_int(o, "truncated.value.head", 5);
	ck_int(o, "truncated.value.tail", 5);
	ck_int(o, "truncated.value.cut_bytes", 84);
	ck_assert(at(o, "truncated.stderr") == NULL);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_invalid_utf8_becomes_replacement_chars)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "import os\nos.write(1, b'a\\xff\\xfeb\\xed\\xa0\\x80c\\n')\n"
	                 "os.write(2, b'\\xc3')");

	ck_code(&r, 0);
	ck_str(o, "stdout", "a\xef\xbf\xbd\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "c\n");
	ck_str(o, "stderr", "\xef\xbf\xbd");
	json_decref(o);
	cli_run_release(&r);
	/* A lone surrogate printed, or in an exception's message, is valid
	 * JSON text too. */
	o = JSON(&r, "--json", "--session", "t", "print('\\udcff x')\nraise ValueError('\\udcff')");
	ck_code(&r, 1);
	ck_str(o, "stdout", "\xef\xbf\xbd x\n");
	ck_str(o, "error.evalue", "\\udcff");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_type_gate_rejection)
{
	struct cli_run r;
	char pp[4300];
	json_t *o;

	if (access("/usr/bin/mypy", X_OK) != 0) {
		fputs("json_type_gate_rejection: skipped, no /usr/bin/mypy\n", stderr);
		return;
	}
	typed_toolbox(pp, sizeof(pp));
	o = gated(&r, pp, "t", "n = 1\ntx.add('one', 2)");
	ck_code(&r, 1);
	ck_str(o, "status", "rejected");
	ck_str(o, "session.state", "unchanged");
	ck_len(o, "session.held", 0);   /* a new session: nothing */
	ck_str(o, "error.ename", "TypeCheckError");
	ck_len(o, "diagnostics", 1);
	ck_int(o, "diagnostics.0.line", 2);
	ck_assert_int_ge(int_at(o, "diagnostics.0.column"), 1);
	ck_str(o, "diagnostics.0.code", "arg-type");
	ck_assert_msg(strstr(str_at(o, "diagnostics.0.message"), "\"str\""), "%s", r.out);
	/* The gate's hint, shown under its diagnostic, is in hints too. */
	ck_len(o, "error.hints", 1);
	ck_str(o, "error.hints.0", "hint: tx.add(a: int, b: int) -> int");
	ck_assert_msg(!strstr(str_at(o, "error.evalue"), "hint"), "%s", r.out);
	json_decref(o);
	cli_run_release(&r);
	/* The built-in display() is known to the gate. */
	o = gated(&r, pp, "t", "display(tx.add(1, 2))");
	ck_str(o, "status", "ok");
	ck_len(o, "displays", 1);
	ck_str(o, "displays.0.data.text/plain", "3");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* The configured checker missing: the next installed one checks (mypy,
 * the only one on PATH here), and --describe and --json name it; none
 * installed: the gate is off, they say why, and the cell runs. */
START_TEST(json_type_gate_falls_back_and_says_when_off)
{
	struct cli_run r;
	char pp[4300], bin[4300], link[4400], path[4400], empty[4400];
	const char *code = "tx.add('one', 2)";
	json_t *o;

	if (access("/usr/bin/mypy", X_OK) != 0) {
		fputs("json_type_gate_falls_back_and_says_when_off: skipped, no /usr/bin/mypy\n",
		      stderr);
		return;
	}
	typed_toolbox(pp, sizeof(pp));
	snprintf(bin, sizeof(bin), "%s/bin", fx.tmp);
	ck_assert_int_eq(mkdir(bin, 0700), 0);
	snprintf(link, sizeof(link), "%s/mypy", bin);
	ck_assert_int_eq(symlink("/usr/bin/mypy", link), 0);
	snprintf(path, sizeof(path), "PATH=%s", bin);
	o = run_json(&r, (const char *const[]){ pp, path, "DOLSOT_TYPECHECK=1",
	                                        "DOLSOT_TY_BIN=no-such-checker", NULL },
	             (const char *const[]){ "dolsot", "--json", "--toolbox", "typed_x:tx",
	                                    "--session", "fb", "--timeout", "60", code, NULL });
	ck_str(o, "status", "rejected");
	ck_assert(json_is_true(at(o, "type_gate.on")));
	ck_str(o, "type_gate.checker", "mypy");
	ck_str(o, "type_gate.note", "no-such-checker is not installed");
	json_decref(o);
	cli_run_release(&r);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ pp, path, "DOLSOT_TYPECHECK=1", NULL },
	             (const char *const[]){ "dolsot", "--toolbox", "typed_x:tx", "--describe",
	                                    NULL });
	ck_out_has(&r, "\ntype gate: mypy (ty is not installed)\n");
	cli_run_release(&r);
	/* None installed. */
	snprintf(empty, sizeof(empty), "PATH=%s/none", fx.tmp);
	o = run_json(&r, (const char *const[]){ pp, empty, "DOLSOT_TYPECHECK=1", NULL },
	             (const char *const[]){ "dolsot", "--json", "--toolbox", "typed_x:tx",
	                                    "--session", "off", code, NULL });
	ck_str(o, "status", "error");
	ck_str(o, "error.ename", "TypeError");
	ck_assert(json_is_false(at(o, "type_gate.on")));
	ck_null(o, "type_gate.checker");
	ck_str(o, "type_gate.note", "no type checker is installed (ty, pyright, mypy were "
	       "looked for on PATH); cells run unchecked");
	json_decref(o);
	cli_run_release(&r);
	o = run_json(&r, (const char *const[]){ pp, empty, "DOLSOT_TYPECHECK=1", NULL },
	             (const char *const[]){ "dolsot", "--json", "--describe", NULL });
	ck_assert(json_is_false(at(o, "type_gate.on")));
	json_decref(o);
	cli_run_release(&r);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ pp, empty, "DOLSOT_TYPECHECK=1", NULL },
	             (const char *const[]){ "dolsot", "--describe", NULL });
	ck_out_has(&r, "\ntype gate: off: no type checker is installed");
	cli_run_release(&r);
	/* Turned off: --describe says nothing of it, --json says why. */
	o = JSON(&r, "--json", "--describe");
	ck_assert(json_is_false(at(o, "type_gate.on")));
	ck_str(o, "type_gate.note", "DOLSOT_TYPECHECK=0");
	json_decref(o);
	cli_run_release(&r);
	CLI(&r, "--describe");
	ck_assert_msg(!cli_has(r.out, "type gate:"), "%s", r.out);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_sandboxed_call)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--sandbox", "--session", "t",
	                 "import os\nprint(os.path.exists('/home'))\nv = 3\nv * 2");

	ck_code(&r, 0);
	ck_str(o, "status", "ok");
	ck_str(o, "stdout", "False\n");
	ck_str(o, "value", "6");
	ck_int(o, "execution_count", 1);
	ck_str(o, "session.state", "created");
	ck_len(o, "session.held", 2);
	ck_null(o, "error");
	ck_assert(json_is_number(at(o, "timings_ms.total")));
	json_decref(o);
	cli_run_release(&r);
	/* A failure inside the sandbox is structured the same way. */
	o = JSON(&r, "--json", "--sandbox", "--session", "t",
	         "w = v + 1\nopen('/etc/shadow').read()");
	ck_code(&r, 1);
	ck_str(o, "status", "error");
	ck_str(o, "error.ename", "FileNotFoundError");
	ck_int(o, "error.line", 2);
	ck_str(o, "session.state", "committed");
	ck_int(o, "execution_count", 2);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(json_list_sessions_and_reset)
{
	struct cli_run r;
	json_t *o;

	o = JSON(&r, "--json", "--list-sessions");
	ck_code(&r, 0);
	ck_len(o, "sessions", 0);
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "one", "1");
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--list-sessions");
	ck_len(o, "sessions", 1);
	ck_str(o, "sessions.0.id", "one");
	ck_assert_int_gt(int_at(o, "sessions.0.size"), 0);
	ck_assert_int_eq(strlen(str_at(o, "sessions.0.last_used")), 25);
	json_decref(o);
	cli_run_release(&r);
	/* The text forms, beside them. */
	CLI(&r, "--list-sessions");
	ck_code(&r, 0);
	ck_assert_msg(strncmp(r.out, "one\t", 4) == 0 && strchr(r.out, '\n') == r.out + r.out_len - 1,
	              "%s", r.out);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--reset", "one");
	ck_str(o, "reset", "one");
	ck_int(o, "removed", 1);
	ck_int(o, "removed_images", 0);
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--reset", "all");
	ck_str(o, "reset", "all");
	ck_int(o, "removed", 0);
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--list-sessions");
	ck_len(o, "sessions", 0);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* flag arg --json: the move to state to, now state now. */
static void ck_move(const char *flag, const char *arg, const char *action, int to, int now)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", flag, arg);

	ck_str(o, "session", "h");
	ck_str(o, "action", action);
	ck_int(o, "to", to);
	ck_int(o, "state", now);
	json_decref(o);
	cli_run_release(&r);
}

/* --history --json, --undo --json and --checkout --json: objects the
 * schema accepts, a rolled-back cell and code that is not UTF-8 (here
 * latin-1, which Python reads by its coding line) among them. */
START_TEST(json_history_and_moves)
{
	static const char latin1[] = "# -*- coding: latin-1 -*-\ns = '\xff'\n"
	                             "import time\ntime.sleep(30)";
	struct cli_run r;
	json_t *o;

	json_decref(JSON(&r, "--json", "--session", "h", "a = 1"));
	cli_run_release(&r);
	json_decref(JSON(&r, "--json", "--session", "h", "b = 2"));
	cli_run_release(&r);
	CLI(&r, "--session", "h", "--timeout", "1", latin1);
	ck_code(&r, 124);
	cli_run_release(&r);
	ck_move("--undo", "h", "undo", 1, 3);
	ck_move("--checkout", "h@2", "checkout", 2, 4);
	o = JSON(&r, "--json", "--history", "h");
	ck_str(o, "session", "h");
	ck_int(o, "current", 4);
	ck_len(o, "states", 4);
	ck_str(o, "states.1.code", "b = 2");
	ck_str(o, "states.1.rolled_back.0.code", "# -*- coding: latin-1 -*-\ns = '\xef\xbf\xbd'\n"
	       "import time\ntime.sleep(30)");
	ck_str(o, "states.1.rolled_back.0.result.status", "timeout");
	ck_str(o, "states.3.status", "checkout:2");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* ---- figures and rich values ---- */

START_TEST(figure_in_json_is_a_png_of_its_size)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t", plot);

	ck_code(&r, 0);
	ck_str(o, "stdout", "drawn\n");
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 400, 300);
	ck_str(o, "displays.0.data.text/plain", "<Figure size 400x300>");
	json_decref(o);
	cli_run_release(&r);
	/* Shown, then closed: the next cell has none left. */
	o = JSON(&r, "--json", "--session", "t", "len(plt.get_fignums())");
	ck_str(o, "value", "0");
	ck_len(o, "displays", 0);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(two_figures_give_two_and_a_closed_one_none)
{
	struct cli_run r;
	char code[1024];
	json_t *o;

	snprintf(code, sizeof(code), "%splt.figure(figsize=(2, 1), dpi=50)\nplt.plot([0])", plot);
	o = JSON(&r, "--json", "--session", "t", code);
	ck_len(o, "displays", 2);
	ck_png_display(o, 0, 400, 300);
	ck_png_display(o, 1, 100, 50);
	json_decref(o);
	cli_run_release(&r);
	snprintf(code, sizeof(code), "%splt.close(fig)", plot);
	o = JSON(&r, "--json", "--session", "t", code);
	ck_len(o, "displays", 0);
	ck_str(o, "stdout", "drawn\n");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(figure_caps_hold)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
	                 "for i in range(11):\n    plt.figure(figsize=(1, 1), dpi=20)\n"
	                 "big = plt.figure(figsize=(100, 50), dpi=100)");

	ck_code(&r, 0);
	ck_len(o, "displays", 8);
	ck_png_display(o, 0, 20, 20);
	ck_assert_str_eq(json_string_value(json_array_get(at(o, "warnings"), 0)),
	                 "warning: 4 more displays not shown (at most 8 per cell)");
	json_decref(o);
	cli_run_release(&r);
	/* One side at most 2000 pixels, the aspect kept. */
	o = JSON(&r, "--json", "--session", "t",
	         "big = plt.figure(figsize=(100, 50), dpi=100)\nplt.plot([1])");
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 2000, 1000);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* The bounds of what one display may carry: a PNG of at most 2 MiB (a
 * figure is rendered smaller until it fits), 100,000 chars of HTML or
 * Markdown. */
START_TEST(rich_forms_are_bounded)
{
	struct cli_run r;
	size_t n;
	unsigned char *png;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "class Big:\n"
	                 "    def _repr_html_(self):\n        return '<p>' + 'x' * 150000\n"
	                 "    def _repr_markdown_(self):\n        return 'y' * 100001\n"
	                 "    def _repr_png_(self):\n"
	                 "        return b'\\x89PNG\\r\\n\\x1a\\n' + bytes(2 << 20)\n"
	                 "    def __repr__(self):\n        return 'Big()'\nBig()");

	ck_code(&r, 0);
	ck_len(o, "displays", 1);
	ck_assert(at(o, "displays.0.data.image/png") == NULL);
	ck_assert_int_eq(strlen(str_at(o, "displays.0.data.text/html")), 100000);
	ck_assert_int_eq(strlen(str_at(o, "displays.0.data.text/markdown")), 100000);
	ck_len(o, "warnings", 3);
	ck_str(o, "warnings.0", "warning: the value's PNG form was not shown: it exceeds "
	       "2097152 bytes");
	ck_str(o, "warnings.1", "warning: the value's text/html form was cut to 100000 of "
	       "150003 chars");
	json_decref(o);
	cli_run_release(&r);
	/* Noise does not compress: 1000x800 of it is over 2 MiB of PNG, so the
	 * figure is drawn again at half the resolution. */
	o = JSON(&r, "--json", "--session", "t", "--timeout", "120",
	         "import numpy as np\nimport matplotlib\nmatplotlib.use('agg')\n"
	         "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(10, 8), dpi=100)\n"
	         "ax = fig.add_axes([0, 0, 1, 1])\nax.set_axis_off()\n"
	         "noise = np.random.default_rng(1).integers(0, 256, (800, 1000, 3), np.uint8)\n"
	         "ax.imshow(noise, aspect='auto', interpolation='nearest')\ndel noise\n0");
	ck_code(&r, 0);
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 500, 400);
	png = unbase64(str_at(o, "displays.0.data.image/png"), &n);
	ck_assert_int_le(n, 2 << 20);
	free(png);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(display_function_shows_a_figure_and_values)
{
	struct cli_run r;
	char code[1024];
	json_t *o;

	snprintf(code, sizeof(code), "%sdisplay(fig)\nplt.get_fignums()", plot);
	o = JSON(&r, "--json", "--session", "t", code);
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 400, 300);
	ck_str(o, "value", "[]");
	json_decref(o);
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "t",
	         "class Card:\n    def _repr_html_(self):\n        return '<b>card</b>'\n"
	         "    def _repr_markdown_(self):\n        return '**card**'\n"
	         "    def __repr__(self):\n        return 'Card()'\nCard()");
	ck_str(o, "value", "Card()");
	ck_len(o, "displays", 1);
	ck_str(o, "displays.0.data.text/plain", "Card()");
	ck_str(o, "displays.0.data.text/html", "<b>card</b>");
	ck_str(o, "displays.0.data.text/markdown", "**card**");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(dataframe_gets_a_compact_form)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "import pandas as pd\n"
	                 "pd.DataFrame({'a': range(100), 'b': [i / 2 for i in range(100)]})");
	const char *text;

	ck_code(&r, 0);
	ck_len(o, "displays", 1);
	text = str_at(o, "displays.0.data.text/plain");
	ck_assert_msg(strncmp(text, "DataFrame: 100 rows x 2 columns\n"
	                      "columns: a (int64), b (float64)\n", 64) == 0, "%s", text);
	ck_assert_msg(strstr(text, "\n...\n") && strstr(text, "99  99  49.5"), "%s", text);
	ck_assert(json_is_string(at(o, "displays.0.data.text/html")));
	/* The value is still the repr. */
	ck_assert_msg(strstr(str_at(o, "value"), "[100 rows x 2 columns]"), "%s", r.out);
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* The text contract: stdout as without the figure, one stderr line per
 * image naming a file that holds it. */
START_TEST(figure_in_text_mode_is_a_file)
{
	struct cli_run r;
	char code[1024], want[4400], *path, *png, *nl;
	size_t n;

	snprintf(code, sizeof(code), "%sdisplay(fig)\n'done'", plot);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", "t", code, NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "drawn\n'done'\n");
	snprintf(want, sizeof(want), "dolsot: image 1 (400x300 PNG) written to %s/output/t/",
	         fx.store);
	path = strstr(r.err, want);
	ck_assert_msg(path == r.err, "stderr: %s", r.err);
	path += strlen("dolsot: image 1 (400x300 PNG) written to ");
	nl = strchr(path, '\n');
	ck_assert(nl);
	*nl = '\0';
	ck_assert_msg(strcmp(nl + 1, "session now holds: fig, matplotlib, plt\n") == 0, "%s",
	              nl + 1);
	png = cli_read_file(path, &n);
	ck_assert_msg(png, "no file %s", path);
	ck_png((unsigned char *)png, n, 400, 300);
	free(png);
	cli_run_release(&r);
	/* The same cell without the figure prints the same stdout. */
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", "t",
	                                    "print('drawn')\n'done'", NULL });
	ck_assert_str_eq(r.out, "drawn\n'done'\n");
	ck_assert_msg(!strstr(r.err, "image"), "%s", r.err);
	cli_run_release(&r);
}
END_TEST

/* A value's own PNG form is an image too, in both modes. */
START_TEST(repr_png_value_is_shown)
{
	struct cli_run r;
	char code[2048];
	json_t *o;

	snprintf(code, sizeof(code), "%sclass Chart:\n    def _repr_png_(self):\n"
	         "        import io\n        b = io.BytesIO()\n"
	         "        fig.savefig(b, format='png')\n        return b.getvalue()\n"
	         "    def __repr__(self):\n        return 'Chart()'\n"
	         "c = Chart()\nplt.close(fig)\nc", plot);
	o = JSON(&r, "--json", "--session", "t", code);
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 400, 300);
	ck_str(o, "displays.0.data.text/plain", "Chart()");
	json_decref(o);
	cli_run_release(&r);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", "t", "c", NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "Chart()\n");
	ck_assert_msg(cli_has(r.err, "dolsot: image 1 (400x300 PNG) written to "), "%s", r.err);
	cli_run_release(&r);
}
END_TEST

START_TEST(figure_in_the_sandbox)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--sandbox", "--session", "t", plot);

	ck_code(&r, 0);
	ck_str(o, "stderr", "");
	ck_len(o, "displays", 1);
	ck_png_display(o, 0, 400, 300);
	json_decref(o);
	cli_run_release(&r);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--sandbox", "--session", "t",
	                                    "plt.figure(figsize=(1, 1), dpi=10)\n1", NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "1\n");
	ck_assert_msg(cli_has(r.err, "dolsot: image 1 (10x10 PNG) written to "), "%s", r.err);
	cli_run_release(&r);
}
END_TEST

START_TEST(no_figure_work_without_pyplot)
{
	struct cli_run r;
	json_t *o = JSON(&r, "--json", "--session", "t",
	                 "import sys\n[m for m in ('matplotlib', '_dolsot_rich') if m in sys.modules]");

	ck_str(o, "value", "[]");
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

/* ---- the text contract's image files: their lifetime ---- */

/* How many of our image names (cell-*.png) are in the session's output
 * directory; -1 when it is absent. */
static int images_of(const char *session)
{
	char dir[4400];
	const struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/output/%s", fx.store, session);
	if (!(d = opendir(dir)))
		return -1;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, "cell-", 5) == 0;
	closedir(d);
	return n;
}

static bool image_exists(const char *session, const char *name)
{
	char path[4500];

	snprintf(path, sizeof(path), "%s/output/%s/%s", fx.store, session, name);
	return access(path, F_OK) == 0;
}

/* A text-mode cell that leaves n small figures open. */
static void draw(const char *session, int n)
{
	struct cli_run r;
	char code[1024];

	snprintf(code, sizeof(code), "import matplotlib\nmatplotlib.use('agg')\n"
	         "import matplotlib.pyplot as plt\nfor i in range(%d):\n"
	         "    plt.figure(figsize=(1, 1), dpi=10)\n", n);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", session, code, NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
}

START_TEST(reset_removes_a_sessions_images)
{
	struct cli_run r;
	char path[4500];
	json_t *o;

	draw("t", 2);
	draw("u", 1);
	ck_assert_int_eq(images_of("t"), 2);
	ck_assert_int_eq(images_of("u"), 1);
	CLI(&r, "--reset", "t");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "reset t: removed 1 session(s) and 2 image(s)\n");
	cli_run_release(&r);
	ck_assert_int_eq(images_of("t"), -1);
	ck_assert_int_eq(images_of("u"), 1);
	/* Nothing left: the usual line. */
	CLI(&r, "--reset", "t");
	ck_assert_str_eq(r.out, "reset t: removed 0 session(s)\n");
	cli_run_release(&r);
	/* Only dolsot's names go; a directory with others in it stays. */
	snprintf(path, sizeof(path), "%s/output/u/notes.txt", fx.store);
	cli_write_file(path, "mine\n");
	o = JSON(&r, "--json", "--reset", "all");
	ck_code(&r, 0);
	ck_int(o, "removed", 1);
	ck_int(o, "removed_images", 1);
	json_decref(o);
	cli_run_release(&r);
	ck_assert_int_eq(images_of("u"), 0);
	ck_assert(access(path, F_OK) == 0);
}
END_TEST

/* Removal goes through the directories it checked: a session's output
 * directory that is a symbolic link is refused, and what it points to is
 * left alone. */
START_TEST(reset_refuses_a_symlinked_output_directory)
{
	struct cli_run r;
	char target[4400], link[4400], path[4500];

	draw("t", 1);
	snprintf(target, sizeof(target), "%s/elsewhere", fx.tmp);
	ck_assert(mkdir(target, 0700) == 0);
	snprintf(path, sizeof(path), "%s/cell-1-1.png", target);
	cli_write_file(path, "not yours\n");
	snprintf(link, sizeof(link), "%s/output/evil", fx.store);
	ck_assert(symlink(target, link) == 0);
	CLI(&r, "--reset", "evil");
	ck_code(&r, 1);
	ck_assert_msg(cli_has(r.err, "is a symbolic link"), "%s", r.err);
	cli_run_release(&r);
	CLI(&r, "--reset", "all");
	ck_code(&r, 1);
	cli_run_release(&r);
	ck_assert(access(path, F_OK) == 0);
	ck_assert_int_eq(images_of("t"), -1);
}
END_TEST

START_TEST(a_session_keeps_its_newest_images)
{
	for (int i = 0; i < 5; i++)
		draw("t", 8);
	/* 40 written, the newest 32 kept: cells 2 to 5. */
	ck_assert_int_eq(images_of("t"), 32);
	ck_assert(!image_exists("t", "cell-1-8.png"));
	ck_assert(image_exists("t", "cell-2-1.png"));
	ck_assert(image_exists("t", "cell-5-8.png"));
	/* A cell's own images are all kept. */
	draw("t", 1);
	ck_assert_int_eq(images_of("t"), 32);
	ck_assert(!image_exists("t", "cell-2-1.png"));
	ck_assert(image_exists("t", "cell-6-1.png"));
}
END_TEST

/* Set path's modification time days back. */
static void age(const char *path, int days)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= days * 86400;
	t[1] = t[0];
	ck_assert_msg(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0, "utimensat %s", path);
}

START_TEST(expired_sessions_lose_their_images)
{
	struct cli_run r;
	char path[4500];

	draw("old", 1);
	draw("held", 1);
	draw("orphan", 1);
	/* old expired with its images; held was used since its last image;
	 * orphan's session is gone (a reset through another store) but its
	 * images are recent. */
	snprintf(path, sizeof(path), "%s/old.pkl", fx.store);
	age(path, 3);
	snprintf(path, sizeof(path), "%s/output/old", fx.store);
	age(path, 3);
	snprintf(path, sizeof(path), "%s/output/held", fx.store);
	age(path, 3);
	snprintf(path, sizeof(path), "%s/orphan.pkl", fx.store);
	ck_assert(unlink(path) == 0);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ "DOLSOT_SESSION_TTL_DAYS=1", NULL },
	             (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(!cli_has(r.out, "old\t"), "%s", r.out);
	cli_run_release(&r);
	ck_assert_int_eq(images_of("old"), -1);
	ck_assert_int_eq(images_of("held"), 1);
	ck_assert_int_eq(images_of("orphan"), 1);
	/* With sessions that never expire, neither do their images. */
	snprintf(path, sizeof(path), "%s/output/orphan", fx.store);
	age(path, 10);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ "DOLSOT_SESSION_TTL_DAYS=0", NULL },
	             (const char *const[]){ "dolsot", "--list-sessions", NULL });
	cli_run_release(&r);
	ck_assert_int_eq(images_of("orphan"), 1);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ "DOLSOT_SESSION_TTL_DAYS=1", NULL },
	             (const char *const[]){ "dolsot", "--session", "held", "1", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_int_eq(images_of("orphan"), -1);
	ck_assert_int_eq(images_of("held"), 1);
}
END_TEST

/* ---- --describe ---- */

static const char crm_py[] =
	"\"\"\"CRM tools for the agent.\"\"\"\n"
	"import os\n"
	"__all__ = ['find', 'help', 'Client', 'LIMIT']\n"
	"LIMIT = 50\n"
	"_SECRET = 'hidden'\n"
	"def find(name: str, limit: int = 10) -> list[str]:\n"
	"    \"\"\"Find clients by name.\n\n    Longer text that is not shown.\"\"\"\n"
	"    return []\n"
	"def help() -> str:\n"
	"    \"\"\"Show how to use these tools.\"\"\"\n"
	"    return 'use find'\n"
	"def _private():\n"
	"    pass\n"
	"def unlisted():\n"
	"    pass\n"
	"class Client:\n"
	"    \"\"\"A client record.\"\"\"\n"
	"    def __init__(self, name: str):\n"
	"        self.name = name\n";

static void crm_env(char *pp, size_t len)
{
	char mod[4300];

	snprintf(mod, sizeof(mod), "%s/crm_x.py", fx.tmp);
	cli_write_file(mod, crm_py);
	snprintf(pp, len, "PYTHONPATH=%s", fx.tmp);
}

START_TEST(describe_lists_a_toolbox_public_api)
{
	struct cli_run r;
	char pp[4300];
	json_t *o;

	crm_env(pp, sizeof(pp));
	cli_test_run(&fx, &r, NULL, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--toolbox", "crm_x:crm", "--describe",
	                                    NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out,
	                 "toolbox crm (module crm_x): CRM tools for the agent.\n"
	                 "  crm.find(name: str, limit: int = 10) -> list[str]  "
	                 "# Find clients by name.\n"
	                 "  crm.help() -> str  # Show how to use these tools.\n"
	                 "  class crm.Client(name: str)  # A client record.\n"
	                 "  crm.LIMIT: int = 50\n"
	                 "limits: --timeout 20s\n");
	ck_assert_str_eq(r.err, "");
	cli_run_release(&r);
	o = run_json(&r, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--toolbox", "crm_x:crm", "--json",
	                                    "--describe", NULL });
	ck_str(o, "toolboxes.0.alias", "crm");
	ck_str(o, "toolboxes.0.functions.0.name", "find");
	ck_str(o, "toolboxes.0.functions.0.signature", "(name: str, limit: int = 10) -> list[str]");
	ck_str(o, "toolboxes.0.functions.0.doc", "Find clients by name.");
	ck_str(o, "toolboxes.0.classes.0.name", "Client");
	ck_str(o, "toolboxes.0.constants.0.value", "50");
	ck_null(o, "session");
	ck_assert(json_is_false(at(o, "sandbox")));
	ck_assert(json_is_number(at(o, "limits.timeout")));
	json_decref(o);
	cli_run_release(&r);
}
END_TEST

START_TEST(describe_without_all_skips_private_and_imported_names)
{
	struct cli_run r;
	char pp[4300], mod[4300];

	snprintf(mod, sizeof(mod), "%s/plain_x.py", fx.tmp);
	cli_write_file(mod, "from os.path import join\nimport json\nRATE = 0.5\n_hidden = 1\n"
	               "def visible(x):\n    return x\ndef _private():\n    pass\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--toolbox", "plain_x:px", "--describe",
	                                    NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "toolbox px (module plain_x)\n"
	                 "  px.visible(x)\n"
	                 "  px.RATE: float = 0.5\n"
	                 "limits: --timeout 20s\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(describe_shows_held_names_and_changes_nothing)
{
	struct cli_run r;
	char file[4400], *before, *after;
	size_t n1, n2;
	struct stat st1, st2;
	json_t *o;

	o = JSON(&r, "--json", "--session", "t",
	         "import numpy as np\narr = np.zeros((3, 4))\nnames = ['a', 'b']\nk = 1");
	json_decref(o);
	cli_run_release(&r);
	snprintf(file, sizeof(file), "%s/t.pkl", fx.store);
	before = cli_read_file(file, &n1);
	ck_assert_msg(before && stat(file, &st1) == 0, "no session file %s", file);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", "t", "--describe", NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "no toolboxes\n"
	                 "session t holds:\n"
	                 "  arr: numpy.ndarray shape (3, 4)\n"
	                 "  k: int\n"
	                 "  names: list len 2\n"
	                 "  np: module\n"
	                 "limits: --timeout 20s\n");
	cli_run_release(&r);
	o = JSON(&r, "--json", "--session", "t", "--describe");
	ck_str(o, "session.held.0.name", "arr");
	ck_int(o, "session.held.0.shape.1", 4);
	json_decref(o);
	cli_run_release(&r);
	after = cli_read_file(file, &n2);
	ck_assert(stat(file, &st2) == 0);
	ck_assert(n1 == n2 && memcmp(before, after, n1) == 0);
	ck_assert(st1.st_mtim.tv_sec == st2.st_mtim.tv_sec &&
	          st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
	free(before);
	free(after);
	/* It ran no cell: the counter did not move. */
	o = JSON(&r, "--json", "--session", "t", "k");
	ck_int(o, "execution_count", 2);
	json_decref(o);
	cli_run_release(&r);
	/* A session not made yet stays unmade. */
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--session", "fresh", "--describe", NULL });
	ck_assert_msg(cli_has(r.out, "session fresh holds nothing yet\n"), "%s", r.out);
	cli_run_release(&r);
	snprintf(file, sizeof(file), "%s/fresh.pkl", fx.store);
	ck_assert(access(file, F_OK) != 0);
}
END_TEST

START_TEST(describe_lists_mounts_within_bounds)
{
	struct cli_run r;
	char dir[4300], path[4400], spec[4400];
	json_t *o;

	snprintf(dir, sizeof(dir), "%s/data", fx.tmp);
	ck_assert(mkdir(dir, 0755) == 0);
	for (int i = 0; i < 15; i++) {
		snprintf(path, sizeof(path), "%s/a%02d.csv", dir, i);
		cli_write_file(path, "x\n");
	}
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "%s/b%02d.txt", dir, i);
		cli_write_file(path, "x\n");
	}
	snprintf(path, sizeof(path), "%s/%s.csv", dir,
	         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	cli_write_file(path, "x\n");
	snprintf(spec, sizeof(spec), "%s:/data", dir);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--mount", spec, "--cpu-seconds", "30",
	                                    "--describe", NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out,
	                 "no toolboxes\n"
	                 "mount /data (ro): 26 entries\n"
	                 "  a00.csv, a01.csv, a02.csv, a03.csv, a04.csv, a05.csv, a06.csv, "
	                 "a07.csv, a08.csv, a09.csv, a10.csv, a11.csv, a12.csv, a13.csv, a14.csv, "
	                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..., b00.txt, b01.txt, b02.txt, "
	                 "b03.txt\n"
	                 "  ... and 6 more: 6 .txt\n"
	                 "limits: --timeout 20s, --cpu-seconds 30\n");
	cli_run_release(&r);
	o = JSON(&r, "--mount", spec, "--json", "--describe");
	ck_int(o, "mounts.0.count", 26);
	ck_len(o, "mounts.0.entries", 20);
	ck_assert_int_eq(json_integer_value(json_object_get(at(o, "mounts.0.more"), ".txt")), 6);
	ck_assert(json_is_true(at(o, "sandbox")));
	json_decref(o);
	cli_run_release(&r);
	cli_test_run(&fx, &r, NULL, NULL,
	             (const char *const[]){ "dolsot", "--sandbox", "--describe", NULL });
	ck_assert_msg(cli_has(r.out, "no host filesystem: "), "%s", r.out);
	cli_run_release(&r);
}
END_TEST

START_TEST(describe_size_is_bounded)
{
	struct cli_run r;
	char pp[4300], mod[4300];
	char *text = malloc(1 << 20);
	size_t off = 0;

	for (int i = 0; i < 300; i++)
		off += (size_t)sprintf(text + off, "def function_number_%03d(a: int, b: str = 'x'"
		                       " * 10) -> dict[str, list[int]]:\n    \"\"\"%s\"\"\"\n",
		                       i, "A long first line of documentation that goes on and on.");
	for (int t = 0; t < 5; t++) {
		snprintf(mod, sizeof(mod), "%s/big%d.py", fx.tmp, t);
		cli_write_file(mod, text);
	}
	free(text);
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	cli_test_run(&fx, &r, NULL, (const char *const[]){ pp, NULL },
	             (const char *const[]){ "dolsot", "--toolbox", "big0:b0", "--toolbox",
	                                    "big1:b1", "--toolbox", "big2:b2", "--toolbox",
	                                    "big3:b3", "--toolbox", "big4:b4", "--describe",
	                                    NULL });
	ck_code(&r, 0);
	ck_assert_msg(r.out_len <= 16000 + 100, "%zu bytes", r.out_len);
	ck_assert_msg(cli_has(r.out, "  ... and 240 more\n"), "%s", r.out);
	ck_assert_msg(cli_has(r.out, "[description cut at 16000 chars]\nlimits: "), "%.300s",
	              r.out + r.out_len - 300);
	cli_run_release(&r);
}
END_TEST

START_TEST(describe_usage_errors)
{
	struct cli_run r;

	CLI(&r, "--describe", "1 + 1");
	ck_code(&r, 2);
	cli_run_release(&r);
	CLI(&r, "--describe", "--list-sessions");
	ck_code(&r, 2);
	cli_run_release(&r);
	CLI(&r, "--json", "--server-status");
	ck_code(&r, 2);
	cli_run_release(&r);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *js = tcase_create("json"), *fig = tcase_create("figures"),
	      *desc = tcase_create("describe");
	TCase *all[] = { js, fig, desc };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], all[i] == fig ? setup_figures : setup, teardown);
		tcase_set_timeout(all[i], all[i] == fig ? 900 : 180);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(js, json_success_has_every_field);
	tcase_add_test(js, json_exception_is_structured);
	tcase_add_test(js, json_error_hints_are_listed);
	tcase_add_test(js, json_toolbox_exit_code);
	tcase_add_test(js, json_timeout_rolls_back);
	tcase_add_test(js, json_limit_is_killed);
	tcase_add_test(js, json_dropped_names_have_reasons);
	tcase_add_test(js, json_kept_unloaded_names);
	tcase_add_test(js, json_truncation_counts_kept_and_cut);
	tcase_add_test(js, json_invalid_utf8_becomes_replacement_chars);
	tcase_add_test(js, json_type_gate_rejection);
	tcase_add_test(js, json_type_gate_falls_back_and_says_when_off);
	tcase_add_test(js, json_held_after_calls_that_roll_back);
	tcase_add_test(js, json_hints_are_every_hint_the_text_shows);
	tcase_add_test(js, json_sandboxed_call);
	tcase_add_test(js, json_list_sessions_and_reset);
	tcase_add_test(js, json_history_and_moves);
	tcase_add_test(fig, figure_in_json_is_a_png_of_its_size);
	tcase_add_test(fig, two_figures_give_two_and_a_closed_one_none);
	tcase_add_test(fig, figure_caps_hold);
	tcase_add_test(fig, rich_forms_are_bounded);
	tcase_add_test(fig, display_function_shows_a_figure_and_values);
	tcase_add_test(fig, dataframe_gets_a_compact_form);
	tcase_add_test(fig, figure_in_text_mode_is_a_file);
	tcase_add_test(fig, repr_png_value_is_shown);
	tcase_add_test(fig, figure_in_the_sandbox);
	tcase_add_test(fig, no_figure_work_without_pyplot);
	tcase_add_test(fig, reset_removes_a_sessions_images);
	tcase_add_test(fig, reset_refuses_a_symlinked_output_directory);
	tcase_add_test(fig, a_session_keeps_its_newest_images);
	tcase_add_test(fig, expired_sessions_lose_their_images);
	tcase_add_test(desc, describe_lists_a_toolbox_public_api);
	tcase_add_test(desc, describe_without_all_skips_private_and_imported_names);
	tcase_add_test(desc, describe_shows_held_names_and_changes_nothing);
	tcase_add_test(desc, describe_lists_mounts_within_bounds);
	tcase_add_test(desc, describe_size_is_bounded);
	tcase_add_test(desc, describe_usage_errors);
	return s;
}

int main(void)
{
	return ck_run(json_suite());
}
