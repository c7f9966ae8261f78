/*
 * check_preload.c - zygotes that hold a session's modules (issue 11): the
 * server prepares one from the session's module record as soon as a call
 * saves it, growing it from the nearest zygote, later calls run
 * on it with the cold path's outputs, a module that misbehaves on import
 * is never imported ahead, an edited module is imported afresh, one
 * environment's zygotes stay within their bound, and the store's truth
 * (--reset, a cold call's write) is what the next call sees.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

/* How long a zygote importing numpy, pandas and matplotlib may take to
 * get ready on a slow machine (valgrind is not run on this suite). */
#define READY_SECONDS 90
/* How often a wait looks at --server-status. */
#define POLL_US 100000

static struct cli_test fx;
static char mpl_env[4400];

static void setup(void)
{
	cli_test_begin_server(&fx);
	/* matplotlib's cache in the test's directory, built before any
	 * compared call so that neither path reports building it. */
	snprintf(mpl_env, sizeof(mpl_env), "MPLCONFIGDIR=%s/mpl", fx.tmp);
	cli_test_add_env(&fx, mpl_env);
	cli_test_add_env(&fx, "MPLBACKEND");
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* --server-status's text (malloc'd), "" when none runs. */
static char *status(void)
{
	struct cli_run r;
	char *text;

	CLI(&r, "--server-status");
	text = strdup(r.code == 0 ? r.out : "");
	cli_run_release(&r);
	return text;
}

/* The figure after "label " in the status, or -1. */
static long figure(const char *label)
{
	char *text = status(), *p = strstr(text, label);
	long v = -1;

	if (p)
		sscanf(p + strlen(label), " %ld", &v);
	free(text);
	return v;
}

#define PRELOADED "calls with the session's modules imported ahead"

/* Whether the preload line starting at pre names module. */
static bool names(const char *pre, const char *module)
{
	const char *end = strchr(pre + 1, '\n');
	size_t n = strlen(module);

	for (const char *p = strchr(pre + 1, ' '); p && (!end || p < end); p = strchr(p + 1, ' '))
		if (strncmp(p + 1, module, n) == 0 &&
		    (p[1 + n] == ' ' || p[1 + n] == '\n' || p[1 + n] == '\0'))
			return true;
	return false;
}

/* Whether a ready zygote in the status text holds every module of words
 * (space-separated) ahead. */
static bool ready_with(const char *text, const char *words)
{
	for (const char *z = strstr(text, "\nzygote "); z; z = strstr(z + 1, "\nzygote ")) {
		const char *next = strstr(z + 1, "\nzygote "), *pre = strstr(z, "\n  preload ");
		char state[16] = "", want[256], *save = NULL;
		bool all = true;

		if (sscanf(z + 1, "zygote %*d %15s", state) != 1 || strcmp(state, "ready") != 0 ||
		    !pre || (next && pre > next))
			continue;
		snprintf(want, sizeof(want), "%s", words);
		for (char *w = strtok_r(want, " ", &save); w && all; w = strtok_r(NULL, " ", &save))
			all = names(pre + 3, w);
		if (all)
			return true;
	}
	return false;
}

/* Whether the status text has a ready zygote for directory cwd. */
static bool ready_in(const char *text, const char *cwd)
{
	char line[4400];

	snprintf(line, sizeof(line), "\n  cwd %s\n", cwd);
	for (const char *z = strstr(text, "\nzygote "); z; z = strstr(z + 1, "\nzygote ")) {
		const char *next = strstr(z + 1, "\nzygote "), *at = strstr(z, line);
		char state[16] = "";

		if (sscanf(z + 1, "zygote %*d %15s", state) == 1 && strcmp(state, "ready") == 0 &&
		    at && (!next || at < next))
			return true;
	}
	return false;
}

/* Wait until the status says yes(text, arg); what names it when it never
 * does. */
static void wait_status(bool (*yes)(const char *, const char *), const char *arg,
                        const char *what)
{
	double until = cli_now() + READY_SECONDS;
	char *text = NULL;

	while (cli_now() < until) {
		free(text);
		text = status();
		if (yes(text, arg)) {
			free(text);
			return;
		}
		usleep(POLL_US);
	}
	ck_abort_msg("no ready zygote %s %s:\n%s", what, arg, text);
}

/* Wait until a ready zygote holds the modules in words. */
static void wait_ready_with(const char *words)
{
	wait_status(ready_with, words, "holds");
}

/* Wait until the server the first call in cwd started has a ready zygote
 * for cwd: on a loaded machine the next calls could otherwise all run
 * before it is up, cold, and none would ask it for a preload. */
static void wait_server_in(const char *cwd)
{
	wait_status(ready_in, cwd, "for");
}

/* One call in cwd; off: on the cold path. */
static void call_in(struct cli_run *r, const char *cwd, bool off, const char *session,
                    const char *code)
{
	const char *cold[] = { "DOLSOT_SERVER=off", NULL };

	RUN_IN(r, cwd, off ? cold : NULL, "--session", session, code);
}

/* fx's directory's subdirectory name, made (malloc'd). */
static char *subdir(const char *name)
{
	char *d = strdup(cli_path(fx.tmp, name));

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	return d;
}

static const char FIRST_CELL[] =
	"import numpy as np, pandas as pd, matplotlib\n"
	"import matplotlib.pyplot as plt\n"
	"np.random.seed(0)\n"
	"df = pd.DataFrame({'g': list('abcab') * 20, 'x': np.arange(100),\n"
	"                   'y': np.random.rand(100)})\n";

START_TEST(third_call_runs_on_a_zygote_holding_the_modules)
{
	char *dir = subdir("w");
	struct cli_run r;
	long before;

	call_in(&r, dir, false, "s", FIRST_CELL);
	ck_code(&r, 0);
	cli_run_release(&r);
	wait_server_in(dir);
	call_in(&r, dir, false, "s", "int(df.x.sum())");
	ck_code(&r, 0);
	ck_out(&r, "4950\n");
	cli_run_release(&r);
	wait_ready_with("numpy pandas matplotlib");
	before = figure(PRELOADED);
	call_in(&r, dir, false, "s", "float(df.y.mean()).__round__(6)");
	ck_code(&r, 0);
	ck_out(&r, "0.472794\n");
	cli_run_release(&r);
	ck_assert_int_eq(figure(PRELOADED), before + 1);
	free(dir);
}
END_TEST

/* The status block of the ready zygote holding words, or NULL (into
 * text). */
static const char *block_with(const char *text, const char *words)
{
	for (const char *z = strstr(text, "\nzygote "); z; z = strstr(z + 1, "\nzygote ")) {
		const char *next = strstr(z + 1, "\nzygote ");
		size_t n = next ? (size_t)(next - z) : strlen(z);
		char *one = strndup(z, n);
		bool hit = one && ready_with(one, words);

		free(one);
		if (hit)
			return z;
	}
	return NULL;
}

START_TEST(a_larger_set_grows_from_a_smaller_one)
{
	char *dir = subdir("g"), *text;
	const char *b, *next, *grown;
	struct cli_run r;
	int from = 0;

	call_in(&r, dir, false, "s", "import numpy as np\nx = np.arange(4)");
	ck_code(&r, 0);
	cli_run_release(&r);
	wait_server_in(dir);
	call_in(&r, dir, false, "s", "int(x.sum())");
	cli_run_release(&r);
	wait_ready_with("numpy");
	call_in(&r, dir, false, "s", "import fractions\nfractions.Fraction(int(x.sum()), 4)");
	ck_out(&r, "Fraction(3, 2)\n");
	cli_run_release(&r);
	call_in(&r, dir, false, "s", "fractions.Fraction(1, 3)");   /* asks for the larger set */
	ck_out(&r, "Fraction(1, 3)\n");
	cli_run_release(&r);
	wait_ready_with("fractions numpy");
	text = status();
	b = block_with(text, "fractions numpy");
	ck_assert_ptr_nonnull(b);
	next = strstr(b + 1, "\nzygote ");
	grown = strstr(b, "\n  grown from zygote ");
	ck_assert_msg(grown && (!next || grown < next), "status:\n%s", text);
	ck_assert_int_eq(sscanf(grown, "\n  grown from zygote %d", &from), 1);
	/* Its parent is the zygote that held numpy alone. */
	{
		char head[64];
		const char *p, *pre;

		snprintf(head, sizeof(head), "\nzygote %d ", from);
		p = strstr(text, head);
		ck_assert_msg(p != NULL, "zygote %d is not listed:\n%s", from, text);
		pre = strstr(p, "\n  preload ");
		ck_assert_ptr_nonnull(pre);
		ck_assert_msg(names(pre + 3, "numpy") && !names(pre + 3, "fractions"),
		              "status:\n%s", text);
	}
	free(text);
	call_in(&r, dir, false, "s", "fractions.Fraction(int(x.sum()), 6)");
	ck_out(&r, "Fraction(1, 1)\n");
	cli_run_release(&r);
	free(dir);
}
END_TEST

START_TEST(the_zygote_is_prepared_once_the_record_is_saved)
{
	char *dir = subdir("p");
	struct cli_run r;
	long before;

	RUN_IN(&r, dir, NULL, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	call_in(&r, dir, false, "s", "import numpy as np\nx = np.arange(5)");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* No call asks: the save's own request prepares it. */
	wait_ready_with("numpy");
	before = figure(PRELOADED);
	call_in(&r, dir, false, "s", "int(x.sum())");
	ck_out(&r, "10\n");
	cli_run_release(&r);
	ck_assert_int_eq(figure(PRELOADED), before + 1);
	free(dir);
}
END_TEST

/* The compared cells: frames, groupby, a saved figure, the RNG after a
 * seed, print options, pandas options, warnings filters, the backend and
 * the modules loaded. */
static const char *const CELLS[] = {
	"print(df.head())",
	"print(df.groupby('g').agg({'x': 'sum', 'y': 'mean'}).round(4))",
	"np.set_printoptions(precision=3)\nprint(np.linspace(0, 1, 7))",
	"print(np.linspace(0, 1, 7))",
	"np.random.seed(42)\nprint(np.random.rand(3))",
	"print(np.random.rand(2))",
	"pd.set_option('display.max_rows', 6)\nprint(df)",
	"print(df.describe())",
	"fig, ax = plt.subplots(figsize=(3, 2))\nax.plot(df.x, df.y)\n"
	"fig.savefig('fig.png', metadata={'Software': None})\nplt.close(fig)\ndel fig, ax",
	"print(matplotlib.get_backend())",
	"import warnings\nprint([repr(f) for f in warnings.filters])",
	"import sys\nprint(sorted(m for m in sys.modules\n"
	"             if m.partition('.')[0] in ('numpy', 'pandas', 'matplotlib')))",
	"print(pd.pivot_table(df, index='g', values='y', aggfunc='max').round(4))",
};

START_TEST(outputs_match_the_cold_path)
{
	char *warm = subdir("warm"), *cold = subdir("cold"), *a, *b;
	size_t na, nb;
	struct cli_run r;
	long before;

	for (int path = 0; path < 2; path++) {
		call_in(&r, path ? cold : warm, path, path ? "c" : "w", FIRST_CELL);
		ck_code(&r, 0);
		cli_run_release(&r);
	}
	wait_server_in(warm);
	call_in(&r, warm, false, "w", "1");
	cli_run_release(&r);
	wait_ready_with("numpy pandas matplotlib");
	before = figure(PRELOADED);
	for (size_t i = 0; i < sizeof(CELLS) / sizeof(*CELLS); i++) {
		struct cli_run w, c;

		call_in(&w, warm, false, "w", CELLS[i]);
		call_in(&c, cold, true, "c", CELLS[i]);
		ck_assert_msg(w.code == c.code && strcmp(w.out, c.out) == 0 &&
		              strcmp(w.err, c.err) == 0,
		              "cell %zu differs\nwarm (%d):\n%s%s\ncold (%d):\n%s%s", i, w.code,
		              w.out, w.err, c.code, c.out, c.err);
		cli_run_release(&w);
		cli_run_release(&c);
	}
	/* Most of them ran with the modules imported ahead (a cell that
	 * imports a module the zygote lacks makes the next call wait for
	 * one that has it). */
	ck_assert_int_ge(figure(PRELOADED), before + 8);
	a = cli_read_file(cli_path(warm, "fig.png"), &na);
	b = cli_read_file(cli_path(cold, "fig.png"), &nb);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_msg(na == nb && memcmp(a, b, na) == 0, "the figures differ");
	free(a);
	free(b);
	free(warm);
	free(cold);
}
END_TEST

START_TEST(a_module_starting_a_thread_is_never_imported_ahead)
{
	char *dir = subdir("t"), *text;
	struct cli_run r;

	cli_write_file(cli_path(dir, "threader.py"),
	               "import threading, time\n"
	               "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
	               "VALUE = 7\n");
	call_in(&r, dir, false, "s", "import threader");
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 3; i++) {
		call_in(&r, dir, false, "s", "import threading\n"
		        "print(threader.VALUE, threading.active_count())");
		ck_code(&r, 0);
		ck_out(&r, "7 2\n");
		cli_run_release(&r);
		usleep(500000);
	}
	text = status();
	ck_assert_msg(strstr(text, "not imported ahead threader: module threader is not "
	                     "imported ahead of calls: importing it started a thread"),
	              "status:\n%s", text);
	ck_assert_msg(!strstr(text, "preload threader"), "status:\n%s", text);
	free(text);
	free(dir);
}
END_TEST

START_TEST(an_edited_module_is_imported_afresh)
{
	char *dir = subdir("e"), *mod = strdup(cli_path(dir, "mine.py"));
	struct cli_run r;
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	cli_write_file(mod, "VALUE = 1\n");
	call_in(&r, dir, false, "s", "import mine");
	ck_code(&r, 0);
	cli_run_release(&r);
	wait_server_in(dir);
	call_in(&r, dir, false, "s", "mine.VALUE");
	ck_out(&r, "1\n");
	cli_run_release(&r);
	wait_ready_with("mine");
	call_in(&r, dir, false, "s", "mine.VALUE");
	ck_out(&r, "1\n");
	cli_run_release(&r);
	cli_write_file(mod, "VALUE = 2\n");
	later[1].tv_sec = time(NULL) + 10;   /* a change within the mtime's grain */
	ck_assert_int_eq(utimensat(AT_FDCWD, mod, later, 0), 0);
	call_in(&r, dir, false, "s", "mine.VALUE");
	ck_code(&r, 0);
	ck_out(&r, "2\n");
	cli_run_release(&r);
	free(mod);
	free(dir);
}
END_TEST

/* Modules the base zygote does not import, one set per session. */
static const char *const SETS[] = {
	"fractions", "decimal", "statistics", "csv", "sqlite3", "difflib", "textwrap",
	"calendar", "colorsys", "wave", "getopt", "zipfile", "tarfile", "uuid", "plistlib",
	"ipaddress", "mailbox", "sched", "graphlib", "netrc",
};

START_TEST(one_environment_keeps_its_bound)
{
	char *dir = subdir("b"), *text;
	struct cli_run r;
	long zygotes;

	for (size_t i = 0; i < sizeof(SETS) / sizeof(*SETS); i++) {
		char session[32], code[64];

		snprintf(session, sizeof(session), "s%zu", i);
		snprintf(code, sizeof(code), "import %s", SETS[i]);
		for (int call = 0; call < 2; call++) {
			call_in(&r, dir, false, session, call ? "1" : code);
			ck_code(&r, 0);
			cli_run_release(&r);
		}
		zygotes = figure("zygotes");
		ck_assert_msg(zygotes >= 1 && zygotes <= 6, "%ld zygotes after session %zu",
		              zygotes, i);
	}
	text = status();
	ck_assert_msg(strstr(text, "zygotes ") && strstr(text, "6 per environment"),
	              "status:\n%s", text);
	free(text);
	free(dir);
}
END_TEST

START_TEST(reset_and_a_cold_write_are_seen)
{
	char *dir = subdir("r");
	struct cli_run r;

	call_in(&r, dir, false, "s", "import numpy as np\nx = np.arange(3)");
	ck_code(&r, 0);
	cli_run_release(&r);
	wait_server_in(dir);
	call_in(&r, dir, false, "s", "int(x.sum())");
	ck_out(&r, "3\n");
	cli_run_release(&r);
	wait_ready_with("numpy");
	call_in(&r, dir, true, "s", "x = np.arange(5)");   /* cold */
	ck_code(&r, 0);
	cli_run_release(&r);
	call_in(&r, dir, false, "s", "int(x.sum())");
	ck_code(&r, 0);
	ck_out(&r, "10\n");
	cli_run_release(&r);
	RUN_IN(&r, dir, NULL, "--reset", "s");
	ck_code(&r, 0);
	cli_run_release(&r);
	call_in(&r, dir, false, "s", "'x' in dir()");
	ck_code(&r, 0);
	ck_out(&r, "False\n");
	cli_run_release(&r);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("preload");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, third_call_runs_on_a_zygote_holding_the_modules);
	tcase_add_test(tc, a_larger_set_grows_from_a_smaller_one);
	tcase_add_test(tc, the_zygote_is_prepared_once_the_record_is_saved);
	tcase_add_test(tc, outputs_match_the_cold_path);
	tcase_add_test(tc, a_module_starting_a_thread_is_never_imported_ahead);
	tcase_add_test(tc, an_edited_module_is_imported_afresh);
	tcase_add_test(tc, one_environment_keeps_its_bound);
	tcase_add_test(tc, reset_and_a_cold_write_are_seen);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
