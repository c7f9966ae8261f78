/*
 * check_kept.c - nothing lost without a word (issue 19): held files come
 * back by files.py's rule without a byte changing on disk, values a call
 * cannot load are kept for one that can, and a toolbox alias never eats a
 * held name.
 *
 * Every case runs the real binary on real files.  The toolbox lives in a
 * directory of its own, on PYTHONPATH only in the calls that name it.
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

static struct cli_test fx;
static char tb_path[4400];      /* PYTHONPATH=<tmp>/tb */

static const char toolbox_py[] =
	"class Item:\n"
	"    def __init__(self, n):\n        self.n = n\n"
	"    def __eq__(self, other):\n"
	"        return isinstance(other, Item) and other.n == self.n\n"
	"    def __repr__(self):\n        return f'Item({self.n!r})'\n";

static void setup(void)
{
	char err[4096], dir[4400], path[4500];

	cli_test_begin(&fx, cli_usual_env);
	snprintf(dir, sizeof(dir), "%s/tb", fx.tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/kepttb.py", dir);
	cli_write_file(path, toolbox_py);
	snprintf(tb_path, sizeof(tb_path), "PYTHONPATH=%s", dir);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* One cell in session, in tmp; with_toolbox adds --toolbox kepttb:kt and
 * the toolbox's directory. */
static void cell(struct cli_run *r, const char *session, bool with_toolbox,
                 const char *code)
{
	const char *extra[] = { tb_path, NULL };

	if (with_toolbox)
		cli_test_run(&fx, r, fx.tmp, extra, (const char *const[]){
			"dolsot", "--toolbox", "kepttb:kt", "--session", session, code, NULL });
	else
		cli_test_run(&fx, r, fx.tmp, NULL, (const char *const[]){
			"dolsot", "--session", session, code, NULL });
}

/* A cell that must succeed with exactly this stdout and stderr. */
static void exact(const char *session, bool with_toolbox, const char *code,
                  const char *out, const char *err)
{
	struct cli_run r;

	cell(&r, session, with_toolbox, code);
	ck_code(&r, 0);
	ck_out(&r, out);
	ck_err(&r, err);
	cli_run_release(&r);
}

static char *in_tmp(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", fx.tmp, name) < 0)
		abort();
	return p;
}

static void ck_file(const char *path, const char *want, const char *when)
{
	char *text = cli_read_file(path, NULL);

	ck_assert_msg(text && strcmp(text, want) == 0, "%s: %s holds '%s', want '%s'",
	              when, path, text ? text : "(nothing)", want);
	free(text);
}

/* ---- held files ---- */

struct file_case {
	const char *mode;
	const char *before;     /* the file before the first cell, or NULL */
	const char *written;    /* the file after the first cell */
	const char *tell;       /* (mode, position) after writing '89' */
	const char *after;      /* the file then */
};

START_TEST(held_files_are_unchanged_on_disk_by_calls_that_do_not_touch_them)
{
	static const struct file_case cases[] = {
		{ "w", NULL, "1234567", "('w', 9)\n", "123456789" },
		{ "a", "old!", "old!1234567", "('a', 13)\n", "old!123456789" },
		{ "r+", "old file text", "1234567e text", "('r+', 9)\n", "123456789text" },
		{ "wb", NULL, "1234567", "('wb', 9)\n", "123456789" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const struct file_case *c = &cases[i];
		bool binary = strchr(c->mode, 'b') != NULL;
		char name[32], session[32], code[256], when[64], *path;

		snprintf(name, sizeof(name), "held%zu.txt", i);
		snprintf(session, sizeof(session), "m%zu", i);
		path = in_tmp(name);
		if (c->before)
			cli_write_file(path, c->before);
		snprintf(code, sizeof(code), "f = open('%s', '%s')\nf.write(%s'1234567')\nf.flush()",
		         name, c->mode, binary ? "b" : "");
		exact(session, false, code, "", "session now holds: f\n");
		ck_file(path, c->written, c->mode);
		for (int k = 0; k < 3; k++) {
			snprintf(when, sizeof(when), "mode %s, call %d after", c->mode, k + 1);
			exact(session, false, "1", "1\n", "session now holds: f\n");
			ck_file(path, c->written, when);
		}
		/* The file continues where the cell left it. */
		snprintf(code, sizeof(code), "f.write(%s'89')\nf.flush()\n(f.mode, f.tell())",
		         binary ? "b" : "");
		exact(session, false, code, c->tell, "session now holds: f\n");
		ck_file(path, c->after, c->mode);
		free(path);
	}
}
END_TEST

START_TEST(a_file_read_line_by_line_continues_where_it_was)
{
	struct cli_run r;
	char *path = in_tmp("lines.txt");

	cli_write_file(path, "one\ntwo\nthree\n");
	exact("r", false, "g = open('lines.txt')\ng.readline()", "'one\\n'\n",
	      "session now holds: g\n");
	exact("r", false, "g.readline()", "'two\\n'\n", "session now holds: g\n");
	exact("r", false, "g.read()", "'three\\n'\n", "session now holds: g\n");
	ck_file(path, "one\ntwo\nthree\n", "after reading");
	/* Read by iteration, Python cannot tell its position: dropped, saying so. */
	cell(&r, "r", false, "for line in g:\n    pass\nh = open('lines.txt')\n"
	     "for line in h:\n    break");
	ck_code(&r, 0);
	ck_err(&r, "session now holds: g, line\nwarning: dropped unpicklable names (gone next "
	           "call): h (the file lines.txt is being read by iteration, so its position "
	           "cannot be told: re-open it in the cell that uses it)\n");
	cli_run_release(&r);
	free(path);
}
END_TEST

START_TEST(a_held_file_whose_path_is_gone_is_dropped_with_the_true_reason)
{
	struct cli_run r;
	char *path = in_tmp("gone.txt"), want[5000];

	exact("g", false, "f = open('gone.txt', 'w')\nx = 5\nbox = {'data': [1, 2], 'log': f}",
	      "", "session now holds: box, f, x\n");
	ck_assert_int_eq(unlink(path), 0);
	/* The file itself is dropped; a value that only holds it keeps its data. */
	cell(&r, "g", false, "x, box['data'], box['log'].closed");
	ck_code(&r, 0);
	ck_out(&r, "(5, [1, 2], True)\n");
	snprintf(want, sizeof(want), "warning: dropped names that could not be loaded: "
	         "f (the file %s no longer exists: re-open it in the cell that uses it)\n"
	         "warning: names that hold a file that could not be reopened loaded with that "
	         "file closed: box (the file %s no longer exists: re-open it in the cell that "
	         "uses it)\nsession now holds: box, x\n", path, path);
	ck_err(&r, want);
	cli_run_release(&r);
	ck_assert_int_eq(access(path, F_OK), -1);   /* and not made again */
	exact("g", false, "x", "5\n", "session now holds: box, x\n");
	free(path);
}
END_TEST

START_TEST(closed_and_unsafe_files)
{
	char *path = in_tmp("closed.txt");

	exact("c", false, "with open('closed.txt', 'w') as c:\n    c.write('xyz')", "",
	      "session now holds: c\n");
	for (int k = 0; k < 2; k++)
		exact("c", false, "c.closed, c.name, c.mode", "(True, 'closed.txt', 'w')\n",
		      "session now holds: c\n");
	ck_file(path, "xyz", "closed file");
	/* A device could block or lose data if reopened: dropped at save time. */
	exact("c", false, "p = open('/dev/null', 'w')", "",
	      "session now holds: c\nwarning: dropped unpicklable names (gone next call): "
	      "p (/dev/null is not a regular file (a pipe, a terminal or a device cannot be "
	      "reopened safely): re-open it in the cell that uses it)\n");
	free(path);
}
END_TEST

/* ---- values a call cannot load ---- */

#define KEPT_NOTE "warning: names that could not be loaded in this call are kept, " \
	"unchanged, for a call that can load them (one with the right --toolbox, or " \
	"outside the sandbox): "
#define NO_TB "(ModuleNotFoundError: No module named 'kepttb')"

START_TEST(toolbox_values_are_kept_across_calls_without_the_toolbox)
{
	struct cli_run r;

	exact("t", true, "items = [kt.Item(i) for i in range(3)]\nsame = items\n"
	      "snap = repr(items)\nn = 1", "", "session now holds: items, n, same, snap\n");
	for (int k = 0; k < 2; k++)
		exact("t", false, "n += 1\nn", k ? "3\n" : "2\n",
		      KEPT_NOTE "items " NO_TB ", same " NO_TB "\n"
		      "session now holds: n, snap; kept unloaded: items, same\n");
	/* Using it says why it is missing. */
	cell(&r, "t", false, "len(items)");
	ck_code(&r, 1);
	ck_err_has(&r, "NameError: name 'items' is not defined (line 1)\n"
	               "dolsot: 'items' is in the session but could not be loaded in this "
	               "call " NO_TB "; it is kept for a call that can load it\n");
	ck_err_has(&r, "session now holds: n, snap; kept unloaded: items, same\n");
	cli_run_release(&r);
	exact("t", true, "items == [kt.Item(i) for i in range(3)], items is same, "
	      "repr(items) == snap, n", "(True, True, True, 3)\n",
	      "session now holds: items, n, same, snap\n");
}
END_TEST

START_TEST(assigning_or_deleting_a_kept_name_ends_it)
{
	exact("t", true, "items = [kt.Item(i) for i in range(3)]\nsame = items", "",
	      "session now holds: items, same\n");
	/* items and same share objects, so they are one unit: assigning same
	 * ends only same. */
	exact("t", false, "same = 'new'", "",
	      KEPT_NOTE "items " NO_TB ", same " NO_TB "\n"
	      "session now holds: same; kept unloaded: items\n");
	exact("t", true, "items == [kt.Item(i) for i in range(3)], same",
	      "(True, 'new')\n", "session now holds: items, same\n");
	exact("t", false, "del items", "",
	      KEPT_NOTE "items " NO_TB "\nsession now holds: same\n");
	exact("t", true, "'items' in globals(), same", "(False, 'new')\n",
	      "session now holds: same\n");
	/* --reset ends everything kept. */
	exact("u", true, "items = [kt.Item(1)]", "", "session now holds: items\n");
	exact("u", false, "1", "1\n", KEPT_NOTE "items " NO_TB "\n"
	      "session now holds: (nothing); kept unloaded: items\n");
	{
		struct cli_run r;

		cli_test_run(&fx, &r, fx.tmp, NULL,
		             (const char *const[]){ "dolsot", "--reset", "u", NULL });
		ck_code(&r, 0);
		cli_run_release(&r);
	}
	exact("u", true, "'items' in globals()", "False\n", "session now holds: (nothing)\n");
}
END_TEST

START_TEST(kept_bytes_are_bounded)
{
	struct cli_run r;

	exact("b", true, "small = [kt.Item(1)]\nbig = [kt.Item(b'x' * (65 << 20))]", "",
	      "session now holds: big, small\n");
	cell(&r, "b", false, "1");
	ck_code(&r, 0);
	ck_err(&r, "warning: dropped names that could not be loaded: big (ModuleNotFoundError: "
	           "No module named 'kepttb'; not kept: the values kept unloaded would pass "
	           "64 MiB)\n"
	           KEPT_NOTE "small " NO_TB "\nsession now holds: (nothing); kept unloaded: small\n");
	cli_run_release(&r);
	exact("b", true, "small, 'big' in globals()", "([Item(1)], False)\n",
	      "session now holds: small\n");
}
END_TEST

/* ---- toolbox aliases ---- */

START_TEST(an_alias_equal_to_a_held_name_leaves_the_value_held)
{
	struct cli_run r;
	const char *extra[] = { tb_path, NULL };

	exact("a", false, "np = [1, 2]", "", "session now holds: np\n");
	cli_test_run(&fx, &r, fx.tmp, extra, (const char *const[]){
		"dolsot", "--toolbox", "kepttb:np", "--session", "a", "np.__name__", NULL });
	ck_code(&r, 0);
	ck_out(&r, "'kepttb'\n");
	ck_err(&r, "warning: toolbox alias 'np' hides the session's 'np' in this call; the "
	           "session keeps it and it is back in a call without that alias\n"
	           "session now holds: np\n");
	cli_run_release(&r);
	exact("a", false, "np", "[1, 2]\n", "session now holds: np\n");
}
END_TEST

static Suite *kept_suite(void)
{
	Suite *s = suite_create("kept");
	TCase *files = tcase_create("files"), *values = tcase_create("values");

	tcase_add_checked_fixture(files, setup, teardown);
	tcase_add_checked_fixture(values, setup, teardown);
	tcase_set_timeout(files, 300);
	tcase_set_timeout(values, 300);
	tcase_add_test(files, held_files_are_unchanged_on_disk_by_calls_that_do_not_touch_them);
	tcase_add_test(files, a_file_read_line_by_line_continues_where_it_was);
	tcase_add_test(files, a_held_file_whose_path_is_gone_is_dropped_with_the_true_reason);
	tcase_add_test(files, closed_and_unsafe_files);
	tcase_add_test(values, toolbox_values_are_kept_across_calls_without_the_toolbox);
	tcase_add_test(values, assigning_or_deleting_a_kept_name_ends_it);
	tcase_add_test(values, kept_bytes_are_bounded);
	tcase_add_test(values, an_alias_equal_to_a_held_name_leaves_the_value_held);
	suite_add_tcase(s, files);
	suite_add_tcase(s, values);
	return s;
}

int main(void)
{
	return ck_run(kept_suite());
}
