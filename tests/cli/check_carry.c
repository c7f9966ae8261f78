/*
 * check_carry.c - sessions that behave like a live interpreter (issue 7):
 * one value that cannot be loaded never bricks a session, and the state a
 * cell changes outside its namespace is carried to the next call.
 *
 * Every case runs the real binary.  Where a live interpreter is the
 * reference, the same cells also run in one /usr/bin/python3.11 process
 * (tests/lib/live_cells.py) and each cell's stdout must be the same.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

#define PY "/usr/bin/python3.11"
#define CELL_SEP "#%% cell\n"

static struct cli_test fx;
static char path_env[4300];

/* In the warm run of the suite (DOLSOT_TEST_WARM), a server is up first. */
static void setup(void)
{
	char err[4096];

	cli_test_begin(&fx, (const char *const[]){ "MPLBACKEND=Agg", "DOLSOT_CARRY",
	                                           "DOLSOT_TIMEOUT=120", "DOLSOT_MAX_OUTPUT",
	                                           "DOLSOT_SESSION_TTL_DAYS", "DOLSOT_STORE",
	                                           "VIRTUAL_ENV", NULL });
	snprintf(path_env, sizeof(path_env), "PYTHONPATH=%s", fx.tmp);
	cli_test_add_env(&fx, path_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* "calls N warm" from --server-status, or -1 when no server runs. */
static long warm_calls(void)
{
	struct cli_run r;
	const char *p;
	long warm = -1;

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .cwd = fx.tmp },
	        (const char *const[]){ "dolsot", "--server-status", NULL });
	p = strstr(r.out, "calls ");
	if (r.code == 0 && p)
		sscanf(p, "calls %ld warm", &warm);
	cli_run_release(&r);
	return warm;
}

/* Run dolsot in tmp with args (after argv[0]) and extra environment entries. */
static void run_args(struct cli_run *r, const char *const *extra, const char *const *args)
{
	const char *argv[32];
	size_t a = 0;

	argv[a++] = "dolsot";
	while (*args)
		argv[a++] = *args++;
	argv[a] = NULL;
	cli_test_run(&fx, r, fx.tmp, extra, argv);
}

/* Run one cell in session with extra environment entries (NULL-terminated). */
static void run_in(struct cli_run *r, const char *const *extra, const char *session,
                   const char *code)
{
	run_args(r, extra, (const char *const[]){ "--session", session, code, NULL });
}

#define RUN(r, code) run_in((r), NULL, "t", (code))
#define CARRY_OFF ((const char *const[]){ "DOLSOT_CARRY=0", NULL })

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

	snprintf(path, sizeof(path), "%s/%s.py", fx.tmp, name);
	cli_write_file(path, text);
}

static char *file_in_tmp(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", fx.tmp, name) < 0)
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

/*
 * The reference: every cell in one live interpreter.  Returns the stdout of
 * each cell (n of them, malloc'd) in outs.
 */
static void live(const char *const *cells, size_t n, char **outs)
{
	struct cli_run r;
	char *input = NULL, *harness, *p;
	size_t len = 0;
	FILE *f = open_memstream(&input, &len);
	char cwd[4096];

	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? CELL_SEP : "", cells[i]);
	fclose(f);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	if (asprintf(&harness, "%s/tests/lib/live_cells.py", cwd) < 0)
		abort();
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .cwd = fx.tmp, .prog = PY,
	                                .stdin_data = input },
	        (const char *const[]){ PY, harness, NULL });
	ck_assert_msg(r.code == 0, "live python failed: %s", r.err);
	p = r.out;
	for (size_t i = 0; i < n; i++) {
		char *end = strstr(p, "\x1e\n");

		ck_assert_msg(end != NULL, "live output has %zu cells, want %zu", i, n);
		outs[i] = strndup(p, (size_t)(end - p));
		p = end + 2;
	}
	cli_run_release(&r);
	free(harness);
	free(input);
}

/*
 * Run cells one call each in session "t" and compare every cell's stdout
 * with the live interpreter's.  extra is added to the environment; toolbox,
 * when not NULL, is passed as --toolbox to every call.
 */
static void same_as_live_with(const char *const *cells, size_t n,
                              const char *const *extra, const char *toolbox)
{
	char **want = calloc(n, sizeof(*want));

	live(cells, n, want);
	for (size_t i = 0; i < n; i++) {
		struct cli_run r;

		if (toolbox)
			run_args(&r, extra, (const char *const[]){ "--toolbox", toolbox,
			                                           "--session", "t", cells[i], NULL });
		else
			run_in(&r, extra, "t", cells[i]);
		ck_assert_msg(strcmp(r.out, want[i]) == 0,
		              "cell %zu differs from a live interpreter\ncell:\n%s\n"
		              "dolsot:\n%s\nlive:\n%s\nstderr: %s", i + 1, cells[i], r.out,
		              want[i], r.err);
		ck_err_lacks(&r, "warning:");
		cli_run_release(&r);
		free(want[i]);
	}
	free(want);
}

static void same_as_live(const char *const *cells, size_t n, const char *const *extra)
{
	same_as_live_with(cells, n, extra, NULL);
}

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

/* A module that cannot be imported in this call may be in the next: its
 * values are kept unloaded (tests/check_kept.c has the rest). */
START_TEST(missing_module_keeps_its_values_unloaded)
{
	struct cli_run r;
	char *mod = file_in_tmp("gone_mod.py");

	write_module("gone_mod", "class Thing:\n    pass\n");
	ok("import gone_mod\nthing = gone_mod.Thing()\nx = 'kept'");
	ck_assert_int_eq(unlink(mod), 0);
	RUN(&r, "x");
	ck_code(&r, 0);
	ck_out(&r, "'kept'\n");
	ck_err_has(&r, "warning: names that could not be loaded in this call are kept, "
	               "unchanged, for a call that can load them (one with the right "
	               "--toolbox, or outside the sandbox): "
	               "gone_mod (ModuleNotFoundError: No module named 'gone_mod'), "
	               "thing (ModuleNotFoundError: No module named 'gone_mod')\n");
	ck_err_has(&r, "session now holds: x; kept unloaded: gone_mod, thing\n");
	cli_run_release(&r);
	write_module("gone_mod", "class Thing:\n    pass\n");
	expect("type(thing).__name__, gone_mod.__name__", "('Thing', 'gone_mod')\n");
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

/* Mode 'x' reopens as the file it created, never creating or truncating
 * (files.py), also inside a value dill pickles. */
START_TEST(file_opened_with_x_comes_back_without_truncation)
{
	char *path = file_in_tmp("new2.txt");
	char *text;

	ok("f = open('new.txt', 'x')\n"
	   "def make():\n    h = open('new2.txt', 'x')\n    h.write('kept')\n"
	   "    return lambda: h\n"
	   "g = make()\nx = 1");
	expect("f.mode, g().mode, g().tell()", "('x', 'x', 4)\n");
	text = cli_read_file(path, NULL);
	ck_assert_str_eq(text, "kept");
	free(text);
	free(path);
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
	if (asprintf(&path, "%s/t.pkl", fx.store) < 0)
		abort();
	blob = cli_read_session(fx.store, "t", &n);
	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < 3; i++) {
		struct cli_run r;
		static const char bad_index[] = "DLSS\002\005\0\0\0\0\0\0\0junk!";
		char *grown = malloc(n + 2);

		/* Damaged blobs, signed: the worker's own refusals. */
		ck_assert_ptr_nonnull(grown);
		memcpy(grown, blob, n);
		memcpy(grown + n, "++", 2);
		if (i == 1)
			cli_put_session(fx.store, "t", bad_index, sizeof(bad_index) - 1);
		else
			cli_put_session(fx.store, "t", grown, i == 0 ? n - 5 : n + 2);
		free(grown);
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
	         fx.store, fx.store);
	ck_assert_int_eq(system(cmd), 0);
	{
		char path[4400], *v1;
		size_t n;

		snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
		v1 = cli_read_file(path, &n);
		ck_assert_ptr_nonnull(v1);
		cli_put_session(fx.store, "t", v1, n);   /* as if a signing dolsot wrote it */
		free(v1);
	}
	expect("x, y", "([5], 'old')\n");
	expect("x", "[5]\n");
}
END_TEST

/* ---- carried state: each item against a live interpreter ---- */

START_TEST(numpy_random_seed_continues_like_a_live_interpreter)
{
	const char *cells[] = {
		"import numpy as np\nnp.random.seed(12345)",
		"np.random.rand(3).tolist()",
		"np.random.randint(0, 1000, 5).tolist()",
		"np.random.standard_normal(3).tolist()",   /* leaves a cached gaussian */
		"x = np.random.standard_normal()\nnp.random.seed(99)\n1 / 0",
		"x, np.random.rand()",                      /* a cell that raised saves too */
	};
	char *want[2];
	struct cli_run r;

	same_as_live(cells, 6, NULL);
	/* Without carrying, the seed is lost between calls. */
	live(cells, 2, want);
	run_in(&r, CARRY_OFF, "off", cells[0]);
	cli_run_release(&r);
	run_in(&r, CARRY_OFF, "off", cells[1]);
	ck_code(&r, 0);
	ck_assert_str_ne(r.out, want[1]);
	cli_run_release(&r);
	free(want[0]);
	free(want[1]);
}
END_TEST

START_TEST(numpy_print_and_error_settings_carry)
{
	const char *cells[] = {
		"import numpy as np\nnp.set_printoptions(precision=3)\nnp.seterr(divide='raise')",
		"np.array([1 / 3, 2 / 3, 2.0])",
		"try:\n    np.array([1.0]) / 0\nexcept FloatingPointError as e:\n    print('raised:', e)",
	};

	same_as_live(cells, 3, NULL);
	expect("np.array([1 / 3])", "array([0.333])\n");
}
END_TEST

START_TEST(pandas_options_carry)
{
	const char *cells[] = {
		"import pandas as pd\npd.set_option('display.max_rows', 5)",
		"pd.DataFrame({'a': range(20), 'b': [i * 0.5 for i in range(20)]})",
		"pd.get_option('display.max_rows'), pd.get_option('display.max_columns')",
	};

	same_as_live(cells, 3, NULL);
	expect("len(repr(pd.Series(range(100))).splitlines())", "6\n");
}
END_TEST

START_TEST(matplotlib_rc_carries_but_never_the_backend)
{
	const char *cells[] = {
		"import matplotlib\nimport matplotlib.pyplot as plt\n"
		"plt.rc('figure', figsize=(10, 6))",
		"plt.figure()",
		"plt.rcParams['figure.figsize'], matplotlib.get_backend()",
	};

	same_as_live(cells, 3, NULL);
	ok("matplotlib.use('svg')\nassert matplotlib.get_backend() == 'svg'");
	expect("matplotlib.get_backend(), plt.rcParams['figure.figsize']",
	       "('agg', [10.0, 6.0])\n");
}
END_TEST

/* A toolbox that imports the libraries, and sets an option, when imported:
 * on the warm path they are loaded before any state is restored. */
START_TEST(library_state_survives_a_toolbox_that_imports_them)
{
	const char *cells[] = {
		"import libbox\nimport numpy as np, pandas as pd\nnp.random.seed(5)\n"
		"pd.set_option('display.max_rows', 6)\nnp.set_printoptions(precision=2)",
		"print(np.random.rand(3))\npd.DataFrame({'v': range(30)})",
		"np.random.randint(0, 100, 4), pd.get_option('display.max_rows')",
	};

	long warm = 0;

	write_module("libbox", "import numpy, pandas\n"
	             "pandas.set_option('display.max_rows', 20)\n");
	if (getenv("DOLSOT_TEST_WARM")) {
		struct cli_run r;

		run_args(&r, NULL, (const char *const[]){ "--server-start", "--toolbox",
		                                          "libbox:lb", NULL });
		ck_code(&r, 0);
		cli_run_release(&r);
		warm = warm_calls();
	}
	same_as_live_with(cells, 3, NULL, "libbox:lb");
	if (getenv("DOLSOT_TEST_WARM"))
		ck_assert_int_eq(warm_calls(), warm + 3);
}
END_TEST

/* Toolboxes are imported before any state is restored, as a live
 * interpreter imported them once, before the cells ran. */
START_TEST(toolboxes_import_before_state_is_restored)
{
	char *sub = file_in_tmp("sub");
	const char *cells[] = {
		"import os, envbox as eb\nos.environ['FOO'] = 'cell'\nos.chdir('sub')",
		"eb.SEEN, os.path.basename(eb.CWD) != 'sub', os.environ['FOO'], "
		"os.path.basename(os.getcwd())",
	};

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	write_module("envbox", "import os\nSEEN = os.environ.get('FOO')\nCWD = os.getcwd()\n");
	same_as_live_with(cells, 2, NULL, "envbox:eb");
	free(sub);
}
END_TEST

/* Regression: a generator a toolbox (or dill) loaded and no cell touched was
 * saved anyway, freshly seeded in every process, so a call that changed
 * nothing rewrote the session with new bytes (and cold and warm differed). */
START_TEST(untouched_generators_leave_the_session_alone)
{
	struct cli_run r;
	char *pkl, *first, *then;
	size_t n_first, n_then;
	const char *with_tb[] = { "--toolbox", "genbox:gb", "--session", "t", NULL, NULL };

	write_module("genbox", "import random, numpy\n");
	if (getenv("DOLSOT_TEST_WARM")) {
		run_args(&r, NULL, (const char *const[]){ "--server-start", "--toolbox",
		                                          "genbox:gb", NULL });
		ck_code(&r, 0);
		cli_run_release(&r);
	}
	if (asprintf(&pkl, "%s/t.pkl", fx.store) < 0)
		abort();
	ok("x = 1");
	first = cli_read_file(pkl, &n_first);
	/* The toolbox loads both generators; the cell touches neither. */
	with_tb[4] = "x";
	run_args(&r, NULL, with_tb);
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	cli_run_release(&r);
	then = cli_read_file(pkl, &n_then);
	ck_assert_msg(cli_same_session_values(first, n_first, then, n_then),
	              "a call that changed nothing rewrote the session");
	free(first);
	free(then);
	/* Used once, they are carried from then on, unchanged by calls that
	 * leave them alone. */
	with_tb[4] = "import numpy\nr = gb.random.random(), numpy.random.rand()";
	run_args(&r, NULL, with_tb);
	ck_code(&r, 0);
	cli_run_release(&r);
	first = cli_read_file(pkl, &n_first);
	with_tb[4] = "x";
	run_args(&r, NULL, with_tb);
	ck_code(&r, 0);
	cli_run_release(&r);
	then = cli_read_file(pkl, &n_then);
	ck_assert_msg(cli_same_session_values(first, n_first, then, n_then),
	              "restoring and saving a carried generator changed it");
	free(first);
	free(then);
	free(pkl);
}
END_TEST

START_TEST(random_module_state_carries)
{
	const char *cells[] = {
		"import random\nrandom.seed(7)",
		"[random.random() for _ in range(3)]",
		"random.randint(1, 100), random.gauss(0, 1)",
		"random.gauss(0, 1), random.choice('abcdef')",
	};

	same_as_live(cells, 4, NULL);
}
END_TEST

START_TEST(working_directory_carries)
{
	char *sub = file_in_tmp("sub"), *data = file_in_tmp("sub/data.txt");
	char want[4400];
	const char *cells[] = {
		"import os\nos.chdir('sub')\nfh = open('data.txt')",
		"os.path.basename(os.getcwd()), open('data.txt').read()",
		"fh.readline()",   /* reopened by its relative name, in sub */
	};

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	cli_write_file(data, "line one\nline two\n");
	same_as_live(cells, 3, NULL);
	snprintf(want, sizeof(want), "'%s'\n", sub);
	expect("os.getcwd()", want);
	free(sub);
	free(data);
}
END_TEST

START_TEST(environment_changes_reapply_over_the_caller)
{
	struct cli_run r;

	run_in(&r, ((const char *const[]){ "KEEP=caller1", "DROPME=x", NULL }), "t",
	       "import os, subprocess\nos.environ['ADDED'] = 'by cell'\n"
	       "del os.environ['DROPME']\nos.environ['MINE'] = 'cell'");
	ck_code(&r, 0);
	cli_run_release(&r);
	run_in(&r, ((const char *const[]){ "KEEP=caller2", "DROPME=y", "MINE=caller", NULL }),
	       "t", "(os.environ['ADDED'], 'DROPME' in os.environ, os.environ['KEEP'], "
	            "os.environ['MINE'], subprocess.run(['sh', '-c', 'echo $ADDED'], "
	            "capture_output=True, text=True).stdout)");
	ck_code(&r, 0);
	ck_out(&r, "('by cell', False, 'caller2', 'cell', 'by cell\\n')\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(sys_path_additions_carry_and_load_values)
{
	char *a = file_in_tmp("liba"), *b = file_in_tmp("libb"), code[9000], want[9000];
	char *ma = file_in_tmp("liba/moda.py"), *mb = file_in_tmp("libb/modb.py");

	ck_assert_int_eq(mkdir(a, 0700), 0);
	ck_assert_int_eq(mkdir(b, 0700), 0);
	cli_write_file(ma, "class Thing:\n    def hello(self):\n        return 'hi'\n");
	cli_write_file(mb, "VALUE = 41\n");
	snprintf(code, sizeof(code), "import sys\nsys.path.insert(0, '%s')\n"
	         "sys.path.append('%s')\nimport moda\nthing = moda.Thing()", a, b);
	ok(code);
	snprintf(want, sizeof(want), "('%s', '%s', 'hi', 42)\n", a, b);
	/* thing loads only because sys.path is back before the namespace. */
	expect("import modb\nsys.path[0], sys.path[-1], thing.hello(), modb.VALUE + 1", want);
	free(a);
	free(b);
	free(ma);
	free(mb);
}
END_TEST

START_TEST(warnings_filters_carry)
{
	struct cli_run r;

	ok("import warnings\nwarnings.simplefilter('error', UserWarning)\n"
	   "warnings.filterwarnings('ignore', message='quiet.*', category=RuntimeWarning)");
	RUN(&r, "warnings.warn('quietly', RuntimeWarning)\nwarnings.warn('careful')");
	ck_code(&r, 1);
	ck_assert_str_eq(r.err, "UserWarning: careful (line 2)\nsession now holds: warnings\n");
	cli_run_release(&r);
	RUN(&r, "warnings.warn('loud', RuntimeWarning)");
	ck_code(&r, 0);
	ck_err_has(&r, "RuntimeWarning: loud");
	cli_run_release(&r);
	/* Without carrying, the default filters apply. */
	run_in(&r, CARRY_OFF, "t", "warnings.warn('careful')");
	ck_code(&r, 0);
	ck_err_has(&r, "UserWarning: careful\n");
	cli_run_release(&r);
}
END_TEST

/* ---- modules that carry their own state ---- */

static const char counter_py[] =
	"_n = 0\n"
	"def bump() -> int:\n"
	"    global _n\n"
	"    _n += 1\n"
	"    return _n\n"
	"def __dolsot_save__():\n"
	"    return _n\n"
	"def __dolsot_restore__(state):\n"
	"    global _n\n"
	"    _n = state\n";

static void bump(const char *const *extra, const char *want)
{
	struct cli_run r;

	run_args(&r, extra, (const char *const[]){ "--toolbox", "counter:ct", "--session",
	                                           "t", "ct.bump()", NULL });
	ck_code(&r, 0);
	ck_out(&r, want);
	ck_err_lacks(&r, "warning:");
	cli_run_release(&r);
}

START_TEST(toolbox_carries_its_own_state)
{
	write_module("counter", counter_py);
	bump(NULL, "1\n");
	bump(NULL, "2\n");
	bump(NULL, "3\n");
	bump(CARRY_OFF, "1\n");   /* the reference: a fresh module every call */
	bump(NULL, "4\n");        /* carrying off kept what was carried */
	/* Any imported module may carry state, not only a toolbox. */
	ok("import counter\ncounter.bump()");
	expect("counter.bump()", "6\n");
}
END_TEST

START_TEST(failing_restore_only_warns)
{
	struct cli_run r;
	char *sub = file_in_tmp("sub");

	write_module("sulky", "state = 'x'\n"
	             "def __dolsot_save__():\n    return state\n"
	             "def __dolsot_restore__(s):\n    raise ValueError('nope')\n");
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ok("import os, random, sulky\nos.chdir('sub')\nrandom.seed(5)\nr1 = random.random()");
	RUN(&r, "os.path.basename(os.getcwd()), random.random() != r1");
	ck_code(&r, 0);
	ck_out(&r, "('sub', True)\n");
	ck_assert_str_eq(r.err, "warning: carried state 'module sulky' not restored: "
	                        "ValueError: nope\n"
	                        "session now holds: os, r1, random, sulky\n");
	cli_run_release(&r);
	/* A piece that cannot be applied (its directory is gone) is skipped too. */
	ck_assert_int_eq(rmdir(sub), 0);
	RUN(&r, "os.getcwd() == os.environ['PWD'] or os.getcwd()");
	ck_code(&r, 0);
	ck_err_has(&r, "warning: carried state 'cwd' not restored: FileNotFoundError: ");
	cli_run_release(&r);
	free(sub);
}
END_TEST

START_TEST(failing_save_only_warns)
{
	struct cli_run r;

	write_module("grumpy", "def __dolsot_save__():\n    raise KeyError('k')\n"
	             "def __dolsot_restore__(s):\n    pass\n");
	RUN(&r, "import grumpy\nx = 1");
	ck_code(&r, 0);
	ck_assert_str_eq(r.err, "warning: carried state 'module grumpy' not saved: "
	                        "KeyError: 'k'\nsession now holds: grumpy, x\n");
	cli_run_release(&r);
	expect("x", "1\n");
	/* A state that cannot be pickled keeps the one saved before. */
	write_module("fickle", "state = 1\n"
	             "def __dolsot_save__():\n"
	             "    return (i for i in ()) if state == 'gen' else state\n"
	             "def __dolsot_restore__(s):\n    global state\n    state = s\n");
	run_in(&r, NULL, "f", "import fickle\nfickle.state = 5");
	ck_assert_str_eq(r.err, "session now holds: fickle\n");
	cli_run_release(&r);
	run_in(&r, NULL, "f", "fickle.state = 'gen'");
	ck_code(&r, 0);
	ck_err_has(&r, "warning: carried state 'module fickle' not saved: "
	               "TypeError: cannot pickle 'generator' object\n");
	cli_run_release(&r);
	run_in(&r, NULL, "f", "fickle.state");
	ck_out(&r, "5\n");
	cli_run_release(&r);
}
END_TEST

/* ---- switching it off, and calls that change nothing ---- */

START_TEST(carry_off_is_the_reference_behavior)
{
	struct cli_run r;
	char *sub = file_in_tmp("sub"), want[4400];

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	run_in(&r, CARRY_OFF, "t", "import os, sys, random\nos.chdir('sub')\n"
	       "os.environ['ADDED'] = '1'\nsys.path.append('/nowhere')\nrandom.seed(1)");
	ck_code(&r, 0);
	cli_run_release(&r);
	run_in(&r, CARRY_OFF, "t", "os.getcwd(), 'ADDED' in os.environ, "
	       "'/nowhere' in sys.path, random.random() == 0.13436424411240122");
	snprintf(want, sizeof(want), "('%s', False, False, False)\n", fx.tmp);
	ck_code(&r, 0);
	ck_out(&r, want);
	cli_run_release(&r);
	free(sub);
}
END_TEST

START_TEST(malformed_carry_is_a_usage_error)
{
	struct cli_run r;
	char *session = NULL;

	run_in(&r, ((const char *const[]){ "DOLSOT_CARRY=yes", NULL }), "t", "1");
	ck_code(&r, 2);
	ck_out(&r, "");
	ck_assert_str_eq(r.err, "dolsot: DOLSOT_CARRY='yes' is not valid: expected 0 (off) "
	                        "or 1 (on)\n");
	if (asprintf(&session, "%s/t.pkl", fx.store) < 0)
		abort();
	ck_assert_int_ne(access(session, F_OK), 0);   /* nothing ran */
	free(session);
	cli_run_release(&r);
	run_in(&r, ((const char *const[]){ "DOLSOT_CARRY=", NULL }), "t", "1");
	ck_code(&r, 0);   /* empty means unset */
	cli_run_release(&r);
}
END_TEST

START_TEST(timed_out_or_failed_call_changes_no_carried_state)
{
	static const char slow[] = "os.chdir('/')\nrandom.seed(4)\ntime.sleep(60)";
	struct cli_run r;
	char *sub = file_in_tmp("sub");

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ok("import os, time, random\nos.chdir('sub')\nrandom.seed(3)");
	run_args(&r, NULL, (const char *const[]){ "--session", "t", "--timeout", "2", slow,
	                                          NULL });
	ck_code(&r, 124);
	cli_run_release(&r);
	RUN(&r, "os.chdir('/')\nrandom.seed(4)\nraise SystemExit(3)");
	ck_code(&r, 1);
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	expect("random.seed(3)\nr = random.random()", "");
	expect("import os.path\nos.path.basename(os.getcwd())", "'sub'\n");
	free(sub);
}
END_TEST

/* ---- a notebook: realistic cells, one call each, as in a live kernel ---- */

START_TEST(notebook_matches_a_live_interpreter)
{
	const char *cells[] = {
		"import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
		"np.random.seed(2024)\npd.set_option('display.max_columns', 6)\n"
		"pd.set_option('display.width', 100)\nnp.set_printoptions(precision=4, suppress=True)",

		"n = 240\ndates = pd.date_range('2023-01-01', periods=n, freq='D')\n"
		"sales = pd.DataFrame({'date': dates,\n"
		"    'store': np.random.choice(['north', 'south', 'east'], n),\n"
		"    'units': np.random.poisson(20, n),\n"
		"    'price': np.round(np.random.uniform(2.5, 9.5, n), 2)})\n"
		"sales['revenue'] = sales.units * sales.price\nsales.head()",

		"sales.describe().round(2)",

		"by_store = sales.groupby('store').agg(units=('units', 'sum'),\n"
		"    revenue=('revenue', 'sum'), days=('date', 'count'))\nby_store",

		"monthly = sales.set_index('date').resample('M')['revenue'].sum()\nmonthly.round(1)",

		"noise = np.random.normal(0, 1, 5)\nnoise",

		"pd.set_option('display.max_rows', 8)\nsales.sort_values('revenue', ascending=False)",

		"np.corrcoef(sales.units, sales.revenue)",

		"pivot = sales.pivot_table(index=sales.date.dt.month, columns='store',\n"
		"    values='units', aggfunc='mean')\npivot.round(2)",

		"plt.rc('figure', figsize=(8, 3))\nplt.rc('lines', linewidth=2.5)\n"
		"fig, ax = plt.subplots()\nline, = ax.plot(monthly.index, monthly.values)\n"
		"print(fig.get_size_inches(), line.get_linewidth())\nplt.close(fig)",

		"fig2 = plt.figure()\nprint(fig2.get_size_inches())\nplt.close(fig2)\n"
		"sales.sample(5)[['store', 'units']]",

		"import warnings\nwarnings.simplefilter('ignore', FutureWarning)\n"
		"boot = [sales.units.sample(frac=1, replace=True).mean() for _ in range(3)]\n"
		"np.array(boot)",

		"import os\nos.makedirs('out', exist_ok=True)\nos.chdir('out')\n"
		"sales.to_csv('sales.csv', index=False)\nsorted(os.listdir('.'))",

		"back = pd.read_csv('sales.csv', parse_dates=['date'])\n"
		"back.shape, os.path.basename(os.getcwd()), round(back.revenue.sum(), 2)",
	};

	same_as_live(cells, sizeof(cells) / sizeof(*cells), NULL);
	if (getenv("DOLSOT_TEST_WARM"))
		ck_assert_int_ge(warm_calls(), 10);
}
END_TEST

static Suite *carry_suite(void)
{
	Suite *s = suite_create("carry");
	TCase *brick = tcase_create("never_brick"), *item = tcase_create("carried"),
	      *mods = tcase_create("modules"), *off = tcase_create("off_and_failures"),
	      *book = tcase_create("notebook");
	TCase *all[] = { brick, item, mods, off, book };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 300);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(brick, unloadable_value_is_dropped_and_the_rest_loads);
	tcase_add_test(brick, missing_module_keeps_its_values_unloaded);
	tcase_add_test(brick, shared_references_load_as_one_object);
	tcase_add_test(brick, excel_writer_is_reported_at_save_time);
	tcase_add_test(brick, file_opened_with_x_comes_back_without_truncation);
	tcase_add_test(brick, dill_value_that_would_not_load_is_reported_at_save_time);
	tcase_add_test(brick, file_opened_for_writing_is_untouched_by_the_save);
	tcase_add_test(brick, damaged_session_is_an_error_naming_reset);
	tcase_add_test(brick, version_1_session_still_loads);
	tcase_add_test(item, numpy_random_seed_continues_like_a_live_interpreter);
	tcase_add_test(item, numpy_print_and_error_settings_carry);
	tcase_add_test(item, pandas_options_carry);
	tcase_add_test(item, matplotlib_rc_carries_but_never_the_backend);
	tcase_add_test(item, library_state_survives_a_toolbox_that_imports_them);
	tcase_add_test(item, toolboxes_import_before_state_is_restored);
	tcase_add_test(item, random_module_state_carries);
	tcase_add_test(item, untouched_generators_leave_the_session_alone);
	tcase_add_test(item, working_directory_carries);
	tcase_add_test(item, environment_changes_reapply_over_the_caller);
	tcase_add_test(item, sys_path_additions_carry_and_load_values);
	tcase_add_test(item, warnings_filters_carry);
	tcase_add_test(mods, toolbox_carries_its_own_state);
	tcase_add_test(mods, failing_restore_only_warns);
	tcase_add_test(mods, failing_save_only_warns);
	tcase_add_test(off, carry_off_is_the_reference_behavior);
	tcase_add_test(off, malformed_carry_is_a_usage_error);
	tcase_add_test(off, timed_out_or_failed_call_changes_no_carried_state);
	tcase_add_test(book, notebook_matches_a_live_interpreter);
	return s;
}

int main(void)
{
	return ck_run(carry_suite());
}
