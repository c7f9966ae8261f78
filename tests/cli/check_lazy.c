/*
 * check_lazy.c - a call that loads only the units its cell can reach
 * (issue 36, worker/py/reach.py) must never show the cell a difference
 * from a full load.  Every case seeds a session holding several kinds of
 * names and runs a cell that reaches the namespace in one way (most of
 * them dynamic: the whole session must load), or names one value whose
 * code reaches others, or binds, deletes or shares names, with its exact
 * stdout, stderr and exit status; most then check that every value the
 * seed left is still there and unchanged.  The last ones check what a
 * call says about values its cell does not reach: a NameError's hint,
 * --describe, a value that cannot load, what loading prints.  These pass
 * with a worker that loads everything; they must still pass once it
 * loads lazily.  A few of each kind run again over a real redis-server,
 * whose units a call reads lazily from the machine's unit cache.
 *
 * The names bound by `from m import *` come from keyword, which a zygote
 * has imported already: a module it must import first (shlex) makes the
 * server grow a zygote after the seed, and --server-stop at the end of a
 * warm case then waits up to 2 s for it (server.c, stop_zygotes).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"
#include "redis_helper.h"

static struct cli_test fx;
static struct redis_test rd = { .pid = -1 };
static char store_env[300];

/* Plain values, a function reading a global, a class whose method reads
 * one and its instance, lambdas reading globals, names bound by `from m
 * import *` (one of them rebound), the __main__ module held by a name, a
 * function reaching the namespace dynamically, and eval held in a
 * partial. */
/* B (2 MiB) is a unit stored as an object of its own (a unit under 4 KiB
 * stays in the head): the lazy cases leave both kinds unloaded.  A str,
 * so that it is one unit (a large bytes value would be cut in parts). */
static const char seed_code[] =
	"B = ' ' * (2 << 20)\n"
	"a = 1\n"
	"b = [1, 2]\n"
	"g = 10\n"
	"h = 20\n"
	"from keyword import *\n"
	"kwlist = 'mine'\n"
	"import __main__ as main_mod\n"
	"import functools\n"
	"def f():\n    return g + 1\n"
	"class C:\n    def m(self):\n        return h * 2\n"
	"c = C()\n"
	"d = {'k': lambda: a + g}\n"
	"def dyn():\n    return globals()['h']\n"
	"pe = functools.partial(eval, 'g + 1')\n";

/* The seed's names, sorted, in three runs so that a case's own names can
 * go between them. */
#define HELD_A "B, C, a, b, c, d, dyn, f, functools, g, h"
#define HELD_B "iskeyword, issoftkeyword, kwlist, main_mod, pe"
#define HELD_C "softkwlist"
#define HOLDS(line) "session now holds: " line "\n"
#define SEED_HELD HOLDS(HELD_A ", " HELD_B ", " HELD_C)

/* Every value of the seed, read in one cell. */
static const char everything_code[] =
	"a, b, g, h, f(), C().m(), c.m(), type(c) is C, d['k'](), dyn(), pe(), kwlist, "
	"iskeyword('if'), issoftkeyword('match'), softkwlist[-1], main_mod.__name__";
static const char everything_out[] =
	"(1, [1, 2], 10, 20, 11, 40, 40, True, 11, 20, 11, 'mine', True, True, 'match', "
	"'__main__')\n";

static void setup(void)
{
	cli_test_begin_usual(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* The same cases over a Redis store, whose units a call reads from this
 * machine's unit cache as it reads a FileStore's (store/unitcache.h). */
static void setup_redis(void)
{
	char err[4096];

	cli_test_begin(&fx, cli_usual_env);
	redis_test_start_in(&rd, fx.tmp, NULL, NULL);
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=%s", rd.url);
	cli_test_add_env(&fx, store_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown_redis(void)
{
	cli_test_end(&fx);   /* the server stops through the store: Redis first */
	redis_test_stop(&rd);
}

/* One cell in the session, with exactly this exit status, stdout and stderr. */
static void call(const char *code, int code_want, const char *out, const char *err)
{
	struct cli_run r;

	cli_test_run(&fx, &r, fx.tmp, NULL,
	             (const char *const[]){ "dolsot", "--session", "s", code, NULL });
	ck_code(&r, code_want);
	ck_out(&r, out);
	ck_err(&r, err);
	cli_run_release(&r);
}

static void seed(void)
{
	call(seed_code, 0, "", SEED_HELD);
}

/* The seed, the cell (which must print out and leave the session holding
 * held), then every value of the seed as it was. */
static void cell_then_all(const char *code, const char *out, const char *held)
{
	seed();
	call(code, 0, out, held);
	call(everything_code, 0, everything_out, held);
}

/* ---- the ways a cell reaches the namespace without naming a value ---- */

START_TEST(globals_reads_a_held_name)
{
	cell_then_all("globals()['a']", "1\n", SEED_HELD);
}
END_TEST

START_TEST(vars_without_an_argument_reads_a_held_name)
{
	cell_then_all("vars()['b']", "[1, 2]\n", SEED_HELD);
}
END_TEST

START_TEST(locals_at_the_top_level_reads_a_held_name)
{
	cell_then_all("locals()['a']", "1\n", SEED_HELD);
}
END_TEST

START_TEST(dir_lists_every_held_name)
{
	cell_then_all("sorted(k for k in dir() if not k.startswith('_'))",
	              "['B', 'C', 'a', 'b', 'c', 'd', 'dyn', 'f', 'functools', 'g', 'h', 'iskeyword', "
	              "'issoftkeyword', 'kwlist', 'main_mod', 'pe', 'softkwlist']\n", SEED_HELD);
}
END_TEST

START_TEST(eval_of_a_text_and_of_a_computed_one)
{
	cell_then_all("eval('a+1') + eval(chr(104))", "22\n", SEED_HELD);
}
END_TEST

START_TEST(exec_of_a_text_and_of_a_computed_one)
{
	cell_then_all("exec('print(b)'); exec('print(' + chr(103) + ')')", "[1, 2]\n10\n",
	              SEED_HELD);
}
END_TEST

START_TEST(compile_then_exec)
{
	cell_then_all("exec(compile('print(h)', 'c', 'exec'))", "20\n", SEED_HELD);
}
END_TEST

START_TEST(dunder_import_of_main)
{
	cell_then_all("__import__('__main__').a", "1\n", SEED_HELD);
}
END_TEST

START_TEST(sys_modules_main)
{
	cell_then_all("import sys; sys.modules['__main__'].b", "[1, 2]\n",
	              HOLDS(HELD_A ", " HELD_B ", " HELD_C ", sys"));
}
END_TEST

START_TEST(import_main)
{
	cell_then_all("import __main__; __main__.a", "1\n", SEED_HELD);
}
END_TEST

START_TEST(currentframe_f_globals)
{
	cell_then_all("import inspect; inspect.currentframe().f_globals['a']", "1\n",
	              HOLDS(HELD_A ", inspect, " HELD_B ", " HELD_C));
}
END_TEST

START_TEST(getframe_f_back_from_a_new_function)
{
	cell_then_all("def peek():\n    import sys\n"
	              "    return sys._getframe().f_back.f_globals['h']\npeek()", "20\n",
	              HOLDS(HELD_A ", " HELD_B ", peek, " HELD_C));
}
END_TEST

START_TEST(dict_of_the_held_main_module)
{
	cell_then_all("main_mod.__dict__['g']", "10\n", SEED_HELD);
}
END_TEST

START_TEST(globals_of_a_held_function)
{
	cell_then_all("f.__globals__['h']", "20\n", SEED_HELD);
}
END_TEST

START_TEST(builtins_module_eval)
{
	cell_then_all("__builtins__.eval(chr(97))", "1\n", SEED_HELD);
}
END_TEST

START_TEST(getattr_with_a_computed_name)
{
	cell_then_all("getattr(f, ''.join(['__glo', 'bals__']))[chr(97)], "
	              "getattr(main_mod, chr(98))", "(1, [1, 2])\n", SEED_HELD);
}
END_TEST

START_TEST(breakpoint_hook_reads_the_callers_globals)
{
	cell_then_all("import sys\n"
	              "sys.breakpointhook = lambda: print(sys._getframe(1).f_globals['b'])\n"
	              "breakpoint()", "[1, 2]\n", HOLDS(HELD_A ", " HELD_B ", " HELD_C ", sys"));
}
END_TEST

START_TEST(import_star_rebinds_a_held_name)
{
	seed();
	call("from keyword import *", 0, "", SEED_HELD);
	call("kwlist[:2], iskeyword('if'), a", 0, "(['False', 'None'], True, 1)\n", SEED_HELD);
	call("kwlist = 'mine'", 0, "", SEED_HELD);
	call(everything_code, 0, everything_out, SEED_HELD);
}
END_TEST

/* ---- what held code reaches ---- */

START_TEST(a_function_reads_a_global)
{
	cell_then_all("f()", "11\n", SEED_HELD);
}
END_TEST

START_TEST(a_method_reads_a_global)
{
	cell_then_all("C().m()", "40\n", SEED_HELD);
}
END_TEST

START_TEST(an_instance_method_reads_a_global)
{
	cell_then_all("c.m(), isinstance(c, C)", "(40, True)\n", SEED_HELD);
}
END_TEST

START_TEST(a_lambda_in_a_dict_reads_globals)
{
	cell_then_all("d['k']()", "11\n", SEED_HELD);
}
END_TEST

START_TEST(a_held_function_reaches_the_namespace_dynamically)
{
	cell_then_all("dyn()", "20\n", SEED_HELD);
}
END_TEST

START_TEST(eval_held_in_a_partial_reads_the_callers_globals)
{
	cell_then_all("pe()", "11\n", SEED_HELD);
}
END_TEST

/* ---- names bound, deleted, untouched and shared ---- */

START_TEST(rebinding_a_name_without_reading_it)
{
	seed();
	call("a = 'new'", 0, "", SEED_HELD);
	call("a, b, g", 0, "('new', [1, 2], 10)\n", SEED_HELD);
	call("a = 1", 0, "", SEED_HELD);
	call(everything_code, 0, everything_out, SEED_HELD);
}
END_TEST

START_TEST(a_deleted_name_is_gone_in_the_next_call)
{
	seed();
	call("del a", 0, "", HOLDS("B, C, b, c, d, dyn, f, functools, g, h, " HELD_B ", " HELD_C));
	call("a", 1, "", "NameError: name 'a' is not defined (line 1)\n"
	     HOLDS("B, C, b, c, d, dyn, f, functools, g, h, " HELD_B ", " HELD_C));
	call("a = 1", 0, "", SEED_HELD);
	call(everything_code, 0, everything_out, SEED_HELD);
}
END_TEST

START_TEST(a_cell_naming_nothing_held_then_one_reading_everything)
{
	cell_then_all("print('hi')", "hi\n", SEED_HELD);
}
END_TEST

START_TEST(mutation_through_an_alias_is_seen_by_the_held_name)
{
	seed();
	call("x = b; x.append(3)", 0, "", HOLDS(HELD_A ", " HELD_B ", " HELD_C ", x"));
	call("b, x, x is b", 0, "([1, 2, 3], [1, 2, 3], True)\n",
	     HOLDS(HELD_A ", " HELD_B ", " HELD_C ", x"));
	call("b.remove(3); del x", 0, "", SEED_HELD);
	call(everything_code, 0, everything_out, SEED_HELD);
}
END_TEST

/* ---- what a call says about names its cell does not reach ---- */

START_TEST(a_misspelled_name_is_hinted_from_every_held_name)
{
	seed();
	call("kwlst", 1, "", "NameError: name 'kwlst' is not defined (line 1)\n"
	     "hint: did you mean kwlist?\n" SEED_HELD);
	call(everything_code, 0, everything_out, SEED_HELD);
}
END_TEST

/* Remove the store's units of more than min bytes (B's, the seed's only
 * one that big); how many. */
static int remove_big_units(off_t min)
{
	char dir[4400], path[4700];
	DIR *top, *sub;
	const struct dirent *de, *ue;
	struct stat st;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/objects", fx.store);
	top = opendir(dir);
	ck_assert_ptr_nonnull(top);
	while ((de = readdir(top)))
		if (strlen(de->d_name) == 2) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			sub = opendir(path);
			ck_assert_ptr_nonnull(sub);
			while ((ue = readdir(sub)))
				if (fstatat(dirfd(sub), ue->d_name, &st, 0) == 0 && S_ISREG(st.st_mode) &&
				    st.st_size > min && unlinkat(dirfd(sub), ue->d_name, 0) == 0)
					n++;
			closedir(sub);
		}
	closedir(top);
	return n;
}

/* A unit whose file is gone is dropped by a call whose cell does not reach
 * it, as a full load drops it, and the call saves (its ref kept, the save
 * would be refused). */
START_TEST(a_gone_unit_is_dropped_though_the_cell_does_not_reach_it)
{
	struct cli_run r;

	seed();
	ck_assert_int_eq(remove_big_units(2 << 20), 1);
	cli_test_run(&fx, &r, fx.tmp, NULL,
	             (const char *const[]){ "dolsot", "--session", "s", "a + 1", NULL });
	ck_code(&r, 0);
	ck_out(&r, "2\n");
	ck_err_has(&r, "warning: dropped names that could not be loaded: B (its stored bytes "
	               "are missing (unit ");
	ck_err_has(&r, HOLDS("C, a, b, c, d, dyn, f, functools, g, h, " HELD_B ", " HELD_C));
	cli_run_release(&r);
	call(everything_code, 0, everything_out,
	     HOLDS("C, a, b, c, d, dyn, f, functools, g, h, " HELD_B ", " HELD_C));
}
END_TEST

START_TEST(describe_lists_every_held_name)
{
	struct cli_run r;

	seed();
	cli_test_run(&fx, &r, fx.tmp, NULL,
	             (const char *const[]){ "dolsot", "--session", "s", "--describe", NULL });
	ck_code(&r, 0);
	ck_out(&r, "no toolboxes\nsession s holds:\n"
	       "  B: str len 2097152\n  C: type\n  a: int\n  b: list len 2\n  c: __main__.C\n  d: dict len 1\n"
	       "  dyn: function\n  f: function\n  functools: module\n  g: int\n  h: int\n"
	       "  iskeyword: builtin_function_or_method\n"
	       "  issoftkeyword: builtin_function_or_method\n  kwlist: str len 4\n"
	       "  main_mod: module\n  pe: functools.partial\n  softkwlist: list len 3\n"
	       "limits: --timeout 20s\n");
	ck_err(&r, "");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_value_that_cannot_load_is_reported_though_the_cell_does_not_reach_it)
{
	char module[4400];
	const char *kept = "warning: names that could not be loaded in this call are kept, "
		"unchanged, for a call that can load them (one with the right --toolbox, or "
		"outside the sandbox): lzmod (ModuleNotFoundError: No module named 'lzmod'), "
		"x (ModuleNotFoundError: No module named 'lzmod')\n";
	char err[1024];

	snprintf(module, sizeof(module), "%s/lzmod.py", fx.tmp);
	seed();
	cli_write_file(module, "class Item:\n    def __repr__(self):\n        return 'Item()'\n");
	call("import lzmod\nx = lzmod.Item()", 0, "",
	     HOLDS(HELD_A ", iskeyword, issoftkeyword, kwlist, lzmod, main_mod, pe, " HELD_C
	           ", x"));
	ck_assert_int_eq(unlink(module), 0);
	snprintf(err, sizeof(err), "%s" HOLDS(HELD_A ", " HELD_B ", " HELD_C
	         "; kept unloaded: lzmod, x"), kept);
	call("a + 1", 0, "2\n", err);
	call(everything_code, 0, everything_out, err);
}
END_TEST

/* Loading runs a metaclass's __init__ and a __setstate__ (reach.py's
 * runs_on_load): what they print, a full load prints in every call, and
 * saving prints again as the class's pickle is loaded back once. */
START_TEST(code_run_by_loading_prints_in_every_call)
{
	const char *held = HOLDS("B, C, K, Meta, S, a, b, c, d, dyn, f, functools, g, h, iskeyword, "
	                         "issoftkeyword, kwlist, main_mod, pe, s, softkwlist");

	seed();
	call("class Meta(type):\n"
	     "    def __init__(cls, *args):\n"
	     "        super().__init__(*args)\n"
	     "        print('made', cls.__name__)\n"
	     "class K(metaclass=Meta):\n    pass\n"
	     "class S:\n"
	     "    def __setstate__(self, state):\n"
	     "        print('setstate')\n"
	     "        self.__dict__.update(state)\n"
	     "s = S()\ns.v = 1", 0, "made K\nmade K\n", held);
	call("a + 1", 0, "made K\nsetstate\nmade K\n2\n", held);
}
END_TEST

/* ---- reach.py itself, in the worker ---- */

START_TEST(reach_is_compiled_in_and_reads_the_held_code)
{
	seed();
	call("import _dolsot\n"
	     "reach = _dolsot.embedded('reach')\n"
	     "def s(names):\n    return None if names is None else sorted(names)\n"
	     "[s(reach.value_code_names(v)) for v in (f, C, c.m, d['k'], dyn, pe, main_mod)], "
	     "s(reach.code_names(compile('f() + a', 'c', 'exec')))",
	     0, "([['g'], ['h'], ['h'], ['a', 'g'], None, None, None], ['a', 'f'])\n",
	     HOLDS("B, C, _dolsot, a, b, c, d, dyn, f, functools, g, h, " HELD_B ", reach, s, "
	           HELD_C));
}
END_TEST

static Suite *lazy_suite(void)
{
	Suite *s = suite_create("lazy");
	TCase *dynamic = tcase_create("dynamic"), *held = tcase_create("held"),
	      *names = tcase_create("names");
	TCase *redis = tcase_create("redis");
	TCase *all[] = { dynamic, held, names, redis };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		if (all[i] == redis)
			tcase_add_checked_fixture(redis, setup_redis, teardown_redis);
		else
			tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 120);
		suite_add_tcase(s, all[i]);
	}
	/* Cases of each kind again over Redis (none of them quick ones, which
	 * would run twice in `make quick`). */
	tcase_add_test(redis, vars_without_an_argument_reads_a_held_name);
	tcase_add_test(redis, a_method_reads_a_global);
	tcase_add_test(redis, a_lambda_in_a_dict_reads_globals);
	tcase_add_test(redis, eval_held_in_a_partial_reads_the_callers_globals);
	tcase_add_test(redis, rebinding_a_name_without_reading_it);
	tcase_add_test(redis, a_cell_naming_nothing_held_then_one_reading_everything);
	tcase_add_test(dynamic, globals_reads_a_held_name);
	tcase_add_test(dynamic, vars_without_an_argument_reads_a_held_name);
	tcase_add_test(dynamic, locals_at_the_top_level_reads_a_held_name);
	tcase_add_test(dynamic, dir_lists_every_held_name);
	tcase_add_test(dynamic, eval_of_a_text_and_of_a_computed_one);
	tcase_add_test(dynamic, exec_of_a_text_and_of_a_computed_one);
	tcase_add_test(dynamic, compile_then_exec);
	tcase_add_test(dynamic, dunder_import_of_main);
	tcase_add_test(dynamic, sys_modules_main);
	tcase_add_test(dynamic, import_main);
	tcase_add_test(dynamic, currentframe_f_globals);
	tcase_add_test(dynamic, getframe_f_back_from_a_new_function);
	tcase_add_test(dynamic, dict_of_the_held_main_module);
	tcase_add_test(dynamic, globals_of_a_held_function);
	tcase_add_test(dynamic, builtins_module_eval);
	tcase_add_test(dynamic, getattr_with_a_computed_name);
	tcase_add_test(dynamic, breakpoint_hook_reads_the_callers_globals);
	tcase_add_test(dynamic, import_star_rebinds_a_held_name);
	tcase_add_test(held, a_function_reads_a_global);
	tcase_add_test(held, a_method_reads_a_global);
	tcase_add_test(held, an_instance_method_reads_a_global);
	tcase_add_test(held, a_lambda_in_a_dict_reads_globals);
	tcase_add_test(held, a_held_function_reaches_the_namespace_dynamically);
	tcase_add_test(held, eval_held_in_a_partial_reads_the_callers_globals);
	tcase_add_test(names, rebinding_a_name_without_reading_it);
	tcase_add_test(names, a_deleted_name_is_gone_in_the_next_call);
	tcase_add_test(names, a_cell_naming_nothing_held_then_one_reading_everything);
	tcase_add_test(names, mutation_through_an_alias_is_seen_by_the_held_name);
	tcase_add_test(names, a_misspelled_name_is_hinted_from_every_held_name);
	tcase_add_test(names, describe_lists_every_held_name);
	tcase_add_test(names, a_gone_unit_is_dropped_though_the_cell_does_not_reach_it);
	tcase_add_test(names, a_value_that_cannot_load_is_reported_though_the_cell_does_not_reach_it);
	tcase_add_test(names, code_run_by_loading_prints_in_every_call);
	tcase_add_test(held, reach_is_compiled_in_and_reads_the_held_code);
	return s;
}

int main(void)
{
	return ck_run(lazy_suite());
}
