/*
 * check_carry.c - sessions that behave like a live interpreter (issue 7):
 * one value that cannot be loaded never bricks a session.
 *
 * Every case runs the real binary, cold and (DOLSOT_TEST_WARM) warm.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_helpers.h"

#define PY "/usr/bin/python3.11"

static char *tmp;               /* per-test private directory */
static char store[4200];        /* DOLSOT_CACHE_DIR of this test */
static char store_env[4300], path_env[4300];
static const char *test_env[16];

static void stop_server(void)
{
	struct cli_run r;

	if (!tmp)
		return;
	cli_run(&r, &(struct cli_opts){ .env = test_env, .cwd = tmp },
	        (const char *const[]){ "dolsot", "--server-stop", NULL });
	cli_run_release(&r);
	cli_rmtree(tmp);
	free(tmp);
	tmp = NULL;
}

/* In the warm run of the suite (DOLSOT_TEST_WARM), a server is up first. */
static void setup(void)
{
	size_t n = 0;

	tmp = cli_tempdir();
	snprintf(store, sizeof(store), "%s/store", tmp);
	snprintf(store_env, sizeof(store_env), "DOLSOT_CACHE_DIR=%s", store);
	snprintf(path_env, sizeof(path_env), "PYTHONPATH=%s", tmp);
	test_env[n++] = store_env;
	test_env[n++] = path_env;
	test_env[n++] = "MPLBACKEND=Agg";
	test_env[n++] = "DOLSOT_TIMEOUT=120";
	test_env[n++] = "DOLSOT_MAX_OUTPUT";
	test_env[n++] = "DOLSOT_SESSION_TTL_DAYS";
	test_env[n++] = "DOLSOT_STORE";
	test_env[n++] = "VIRTUAL_ENV";
	test_env[n] = NULL;
	/* A failed check exits the test process: clean up then too. */
	atexit(stop_server);
	if (getenv("DOLSOT_TEST_WARM")) {
		struct cli_run r;

		cli_run(&r, &(struct cli_opts){ .env = test_env, .cwd = tmp },
		        (const char *const[]){ "dolsot", "--server-start", NULL });
		ck_assert_msg(r.code == 0, "--server-start: %s", r.err);
		cli_run_release(&r);
	}
}

static void teardown(void)
{
	stop_server();
}

#define ck_code(r, want) ck_assert_msg((r)->code == (want), \
	"exit %d, want %d\nstdout: %s\nstderr: %s", (r)->code, (want), (r)->out, (r)->err)
#define ck_out(r, want) ck_assert_msg(strcmp((r)->out, (want)) == 0, \
	"stdout %s, want %s\nstderr: %s", (r)->out, (want), (r)->err)
#define ck_err_has(r, s) ck_assert_msg(cli_has((r)->err, (s)), \
	"stderr lacks '%s':\n%s", (s), (r)->err)
#define ck_err_lacks(r, s) ck_assert_msg(!cli_has((r)->err, (s)), \
	"stderr has '%s':\n%s", (s), (r)->err)

/* Run dolsot in tmp with args (after argv[0]) and extra environment entries. */
static void run_args(struct cli_run *r, const char *const *extra, const char *const *args)
{
	const char *env[32], *argv[32];
	size_t n = 0, a = 0;

	for (size_t i = 0; test_env[i]; i++)
		env[n++] = test_env[i];
	for (size_t i = 0; extra && extra[i]; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	argv[a++] = "dolsot";
	while (*args)
		argv[a++] = *args++;
	argv[a] = NULL;
	cli_run(r, &(struct cli_opts){ .env = env, .cwd = tmp }, argv);
}

/* Run one cell in session with extra environment entries (NULL-terminated). */
static void run_in(struct cli_run *r, const char *const *extra, const char *session,
                   const char *code)
{
	run_args(r, extra, (const char *const[]){ "--session", session, code, NULL });
}

#define RUN(r, code) run_in((r), NULL, "t", (code))

/* A cell that must succeed, with no warning of any kind. */
static void ok(const char *code)
{
	struct cli_run r;

	RUN(&r, code);
	ck_code(&r, 0);
	ck_err_lacks(&r, "warning:");
	cli_run_release(&r);
}

/* Run a cell that must succeed; check its stdout. */
static void expect(const char *code, const char *out)
{
	struct cli_run r;

	RUN(&r, code);
	ck_code(&r, 0);
	ck_out(&r, out);
	cli_run_release(&r);
}

static void write_module(const char *name, const char *text)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s.py", tmp, name);
	cli_write_file(path, text);
}

static char *file_in_tmp(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmp, name) < 0)
		abort();
	return p;
}

/* True when Debian's Python can import module (for SKIP decisions). */
static bool python_has(const char *module)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), PY " -c 'import %s' 2>/dev/null", module);
	return system(cmd) == 0;
}

#define SKIP_WITHOUT(module) do { \
	if (!python_has(module)) { \
		printf("SKIP %s: Python module %s is not installed\n", __func__, (module)); \
		return; \
	} \
} while (0)

/* ---- loading never bricks a session ---- */

static const char fragile_py[] =
	"def boom():\n"
	"    raise ValueError('refuses to load')\n"
	"class Fragile:\n"
	"    def __reduce__(self):\n"
	"        return (boom, ())\n";

START_TEST(unloadable_value_is_dropped_and_the_rest_loads)
{
	struct cli_run r;

	write_module("fragile", fragile_py);
	ok("import fragile\nbad = fragile.Fragile()\nkeep = [1, 2]\nn = 3");
	RUN(&r, "keep, n");
	ck_code(&r, 0);
	ck_out(&r, "([1, 2], 3)\n");
	ck_assert_str_eq(r.err, "warning: dropped names that could not be loaded: "
	                        "bad (ValueError: refuses to load)\n"
	                        "session now holds: fragile, keep, n\n");
	cli_run_release(&r);
	ok("keep.append(n)");   /* the name is gone for good, so is the warning */
	expect("keep, 'bad' in globals()", "([1, 2, 3], False)\n");
}
END_TEST

START_TEST(missing_module_drops_only_its_values)
{
	struct cli_run r;
	char *mod = file_in_tmp("gone_mod.py");

	write_module("gone_mod", "class Thing:\n    pass\n");
	ok("import gone_mod\nthing = gone_mod.Thing()\nx = 'kept'");
	ck_assert_int_eq(unlink(mod), 0);
	RUN(&r, "x");
	ck_code(&r, 0);
	ck_out(&r, "'kept'\n");
	ck_err_has(&r, "warning: dropped names that could not be loaded: "
	               "gone_mod (ModuleNotFoundError: No module named 'gone_mod'), "
	               "thing (ModuleNotFoundError: No module named 'gone_mod')\n");
	ck_err_has(&r, "session now holds: x\n");
	cli_run_release(&r);
	free(mod);
}
END_TEST

START_TEST(shared_references_load_as_one_object)
{
	struct cli_run r;

	write_module("fragile", fragile_py);
	ok("import fragile\na = [1]\nb = a\nc = {'k': a}\nd = [fragile.Fragile()]\n"
	   "e = d\nbig = 'x' * 100000\nbig2 = big\nlone = 7");
	RUN(&r, "b.append(2)\n(a is b, c['k'] is a, a, big2 is big, lone)");
	ck_code(&r, 0);
	ck_out(&r, "(True, True, [1, 2], True, 7)\n");
	/* d and e share an object, so they load (or fail) together. */
	ck_err_has(&r, "warning: dropped names that could not be loaded: "
	               "d (ValueError: refuses to load), e (ValueError: refuses to load)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(excel_writer_is_reported_at_save_time)
{
	struct cli_run r;

	SKIP_WITHOUT("openpyxl");
	RUN(&r, "import pandas as pd\nw = pd.ExcelWriter('out.xlsx')\nx = 1");
	ck_code(&r, 0);
	ck_err_has(&r, "session now holds: pd, x\n");
	ck_err_has(&r, "warning: dropped unpicklable names (gone next call): "
	               "w (a pandas ExcelWriter cannot be restored");
	cli_run_release(&r);
	ok("x");
}
END_TEST

START_TEST(file_opened_with_x_is_reported_at_save_time)
{
	struct cli_run r;

	RUN(&r, "f = open('new.txt', 'x')\n"
	        "def make():\n    h = open('new2.txt', 'x')\n    return lambda: h\n"
	        "g = make()\nx = 1");
	ck_code(&r, 0);
	ck_err_has(&r, "session now holds: make, x\n");
	ck_err_has(&r, "warning: dropped unpicklable names (gone next call): "
	               "f (a file opened with mode 'x' cannot be reopened: the file exists now), "
	               "g (a file opened with mode 'x' cannot be reopened: the file exists now)\n");
	cli_run_release(&r);
	ok("x");
}
END_TEST

START_TEST(dill_value_that_would_not_load_is_reported_at_save_time)
{
	struct cli_run r;

	write_module("fragile", fragile_py);
	RUN(&r, "import fragile\n"
	        "def make():\n    obj = fragile.Fragile()\n    return lambda: obj\n"
	        "g = make()\nsq = lambda v: v * v");
	ck_code(&r, 0);
	ck_err_has(&r, "session now holds: fragile, make, sq\n");
	ck_err_has(&r, "warning: dropped unpicklable names (gone next call): "
	               "g (would not load again: ValueError: refuses to load)\n");
	cli_run_release(&r);
	expect("sq(4)", "16\n");
}
END_TEST

/* Loading a file handle back reopens it, and mode 'w' truncates: the check
 * at save time must leave such a file alone (dill does it at the next load,
 * as the reference does). */
START_TEST(file_opened_for_writing_is_untouched_by_the_save)
{
	char *path = file_in_tmp("log.txt");
	char *text;

	ok("log = open('log.txt', 'w')\nlog.write('written')\nlog.flush()");
	text = cli_read_file(path, NULL);
	ck_assert_str_eq(text, "written");
	free(text);
	free(path);
}
END_TEST

START_TEST(damaged_session_is_an_error_naming_reset)
{
	const char *bad[] = { "truncated", "bad index", "trailing" };
	char *path;
	char *blob;
	size_t n;

	ok("x = list(range(100))\ny = 'text'");
	if (asprintf(&path, "%s/t.pkl", store) < 0)
		abort();
	blob = cli_read_file(path, &n);
	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < 3; i++) {
		struct cli_run r;
		FILE *f = fopen(path, "we");
		static const char bad_index[] = "DLSS\002\005\0\0\0\0\0\0\0junk!";

		if (i == 1)
			fwrite(bad_index, 1, sizeof(bad_index) - 1, f);
		else
			fwrite(blob, 1, i == 0 ? n - 5 : n, f);
		if (i == 2)
			fputs("++", f);
		fclose(f);
		RUN(&r, "1");
		ck_code(&r, 1);
		ck_assert_msg(cli_has(r.err, "dolsot: session 't' cannot be loaded: "),
		              "%s: %s", bad[i], r.err);
		ck_err_has(&r, "; run 'dolsot --reset t' to start it afresh\n");
		ck_err_lacks(&r, "session now holds");
		cli_run_release(&r);
	}
	free(blob);
	free(path);
}
END_TEST

START_TEST(version_1_session_still_loads)
{
	char cmd[8800];

	snprintf(cmd, sizeof(cmd), "mkdir -p -m 700 '%s' && " PY " -c 'import pickle, sys; "
	         "open(sys.argv[1], \"wb\").write(b\"DLSS\\x01\" + "
	         "pickle.dumps({\"x\": [5], \"y\": \"old\"}, protocol=5))' '%s/t.pkl'",
	         store, store);
	ck_assert_int_eq(system(cmd), 0);
	expect("x, y", "([5], 'old')\n");
	expect("x", "[5]\n");
}
END_TEST

static Suite *carry_suite(void)
{
	Suite *s = suite_create("carry");
	TCase *brick = tcase_create("never_brick");
	TCase *all[] = { brick };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 300);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(brick, unloadable_value_is_dropped_and_the_rest_loads);
	tcase_add_test(brick, missing_module_drops_only_its_values);
	tcase_add_test(brick, shared_references_load_as_one_object);
	tcase_add_test(brick, excel_writer_is_reported_at_save_time);
	tcase_add_test(brick, file_opened_with_x_is_reported_at_save_time);
	tcase_add_test(brick, dill_value_that_would_not_load_is_reported_at_save_time);
	tcase_add_test(brick, file_opened_for_writing_is_untouched_by_the_save);
	tcase_add_test(brick, damaged_session_is_an_error_naming_reset);
	tcase_add_test(brick, version_1_session_still_loads);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(carry_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
