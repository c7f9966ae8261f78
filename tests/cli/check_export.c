/*
 * check_export.c - --export (issue 43, "Export"): a session's kept states
 * as a Jupyter notebook that Jupyter's own nbformat validates and
 * nbconvert renders (its figure an <img> of base64 PNG, its error's
 * traceback, its rolled-back cells marked), as a script Python parses and
 * as a markdown report; the moves back and a lost state said in markdown;
 * the same states, the same bytes; the caller's mistakes.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "notebook_check.h"

static struct cli_test fx;

static void setup(void)
{
	cli_test_begin_usual(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

static void cell_ok(const char *session, const char *code)
{
	cli_ok_call(&fx, session, code);
}

/* A call that must exit code. */
static void call_exits(int code, const char *const *argv)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = fx.env }, argv);
	ck_code(&r, code);
	cli_run_release(&r);
}

#define CALL_EXITS(code, ...) call_exits((code), (const char *const[]){ "dolsot", __VA_ARGS__, \
                                                                      NULL })

/* --export's stdout (malloc'd), which must exit 0. */
static char *export_of(const char *session, const char *format)
{
	struct cli_run r;
	char *out;

	CLI(&r, "--export", session, "--format", format);
	ck_code(&r, 0);
	ck_assert_msg(r.err_len == 0, "stderr: %s", r.err);
	out = strdup(r.out);
	cli_run_release(&r);
	return out;
}

static int count(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

#define ck_has(text, s) ck_assert_msg(cli_has((text), (s)), "lacks '%s':\n%.3000s", (s), (text))

/* Every way a cell ends, and a move back: the notebook validates, and its
 * HTML shows the figure, the traceback and the marked rolled-back cells. */
START_TEST(the_notebook_validates_and_renders_figure_error_and_rolled_back_cells)
{
	char *path = cli_path(fx.tmp, "nb.ipynb"), *html, *text;
	struct cli_run r;

	cell_ok("nb", "x = 41\nprint('made x')\nx + 1");
	cell_ok("nb", "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
	        "fig = plt.figure(figsize=(3, 2), dpi=50)\nplt.plot([1, 3, 2])\nprint('drawn')");
	/* --json, as the MCP tool calls: the worker gives the traceback's frames
	 * (a text call's record has its last line only). */
	CALL_EXITS(1, "--json", "--session", "nb", "def half(v):\n    return v / 0\nhalf(x)");
	CALL_EXITS(124, "--session", "nb", "--timeout", "1", "x = -1\nimport time\ntime.sleep(30)");
	CALL_EXITS(1, "--session", "nb", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)");
	cell_ok("nb", "x * 2");
	CALL_EXITS(0, "--undo", "nb");
	nb_export(fx.env, "nb", "ipynb", path);
	/* The title, states 1 to 3, the two cells rolled back on 3, 4, the undo. */
	ck_assert_uint_eq(nb_validate(path), 8);
	html = nb_to_html(path);
	ck_has(html, "<img src=\"data:image/png;base64,iVBORw0KGgo");
	ck_has(html, "made x");
	ck_has(html, "ZeroDivisionError");
	ck_has(html, "return v / 0");
	ck_assert_int_eq(count(html, "celltag_rolled-back"), 2);
	ck_has(html, "dolsot: rolled back (timeout): this cell ran on state 3");
	ck_has(html, "dolsot: rolled back (killed): this cell ran on state 3");
	ck_has(html, "<strong>State 5: undo</strong>, back to state 3.");
	free(html);

	text = export_of("nb", "py");
	cli_run(&r, &(struct cli_opts){ .prog = NB_PYTHON, .stdin_data = text },
	        (const char *const[]){ NB_PYTHON, "-c", "import ast, sys\n"
	                               "ast.parse(sys.stdin.read())\n", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_has(text, "# %% state 1\nx = 41\nprint('made x')\nx + 1\n");
	ck_has(text, "# %% state 3, timeout (rolled back): commented out\n# x = -1\n");
	ck_has(text, "# %% [markdown]\n# **State 5: undo**");
	free(text);
	text = export_of("nb", "md");
	ck_has(text, "### In [1]: state 1\n\n```python\nx = 41\nprint('made x')\nx + 1\n```\n\n"
	       "*stdout:*\n\n```text\nmade x\n```\n\n*Out [1]:*\n\n```text\n42\n```\n");
	ck_has(text, "![figure](data:image/png;base64,iVBORw0KGgo");
	ck_has(text, "### In [ ]: state 3, killed (rolled back)");
	ck_has(text, "    return v / 0\n");
	free(text);
}
END_TEST

/* The notebook's frame, read by a JSON parser: the same states give the
 * same bytes, a fork's first state and a checkout are markdown cells. */
START_TEST(the_notebook_is_nbformat_4_5_and_the_same_for_the_same_states)
{
	char *a, *b;
	json_t *nb, *cells, *cell, *meta;
	json_error_t e;
	size_t i;

	cell_ok("src", "a = 1");
	cell_ok("src", "a += 1\nprint(a)");
	CALL_EXITS(0, "--session", "dst", "--fork", "src@1");
	cell_ok("dst", "b = a * 10\nb");
	CALL_EXITS(0, "--checkout", "dst@1");
	a = export_of("dst", "ipynb");
	b = export_of("dst", "ipynb");
	ck_assert_str_eq(a, b);
	nb = json_loads(a, 0, &e);
	ck_assert_msg(nb != NULL, "%s: %s", e.text, a);
	ck_assert_int_eq(json_integer_value(json_object_get(nb, "nbformat")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(nb, "nbformat_minor")), 5);
	meta = json_object_get(nb, "metadata");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "kernelspec"),
	                                                   "name")), "python3");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(meta,
	                 "language_info"), "version")), "3.11");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "dolsot"),
	                                                   "session")), "dst");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(meta, "dolsot"),
	                                                    "current")), 3);
	cells = json_object_get(nb, "cells");
	ck_assert_int_eq(json_array_size(cells), 4);
	json_array_foreach(cells, i, cell)
		for (size_t k = 0; k < i; k++)
			ck_assert_str_ne(json_string_value(json_object_get(cell, "id")),
			                 json_string_value(json_object_get(json_array_get(cells, k),
			                                                   "id")));
	cell = json_array_get(cells, 1);
	ck_assert_str_eq(json_string_value(json_object_get(cell, "cell_type")), "markdown");
	ck_has(json_string_value(json_array_get(json_object_get(cell, "source"), 0)),
	       "**State 1: fork** of session `src` at its state 1");
	cell = json_array_get(cells, 2);
	ck_assert_str_eq(json_string_value(json_object_get(cell, "cell_type")), "code");
	ck_assert_int_eq(json_integer_value(json_object_get(cell, "execution_count")), 2);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(json_object_get(
	                 json_array_get(json_object_get(cell, "outputs"), 0), "data"),
	                 "text/plain"), 0)), "10");
	cell = json_array_get(cells, 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(cell,
	                 "metadata"), "dolsot"), "from")), 1);
	json_decref(nb);
	free(a);
	free(b);
}
END_TEST

/* Removes the store's units (the test's one session's kept state). */
static int remove_units(void)
{
	char names[4][CLI_UNIT_NAME], path[4500];
	int n = cli_store_units(fx.store, names, 4);

	for (int i = 0; i < n && i < 4; i++) {
		snprintf(path, sizeof(path), "%s/objects/%s", fx.store, names[i]);
		ck_assert_int_eq(unlink(path), 0);
	}
	return n;
}

START_TEST(a_lost_state_is_a_markdown_cell_and_the_notebook_still_validates)
{
	char *path = cli_path(fx.tmp, "lost.ipynb"), *text;

	cell_ok("g", "x = 1");
	cell_ok("g", "x = 2");
	ck_assert_int_eq(remove_units(), 1);
	text = export_of("g", "md");
	ck_has(text, "**State 1** is lost: its record is no longer in the store");
	ck_has(text, "### In [2]: state 2\n");
	free(text);
	nb_export(fx.env, "g", "ipynb", path);
	ck_assert_uint_eq(nb_validate(path), 3);
}
END_TEST

START_TEST(usage_errors_and_a_missing_session)
{
	struct cli_run r;

	cell_ok("u", "x = 1");
	CLI(&r, "--export", "nope");
	ck_code(&r, 1);
	ck_err(&r, "dolsot: session 'nope' does not exist\n");
	cli_run_release(&r);
	CLI(&r, "--export", "u", "--format", "pdf");
	ck_code(&r, 2);
	ck_err(&r, "dolsot: --format 'pdf': expected ipynb, py or md\n");
	cli_run_release(&r);
	CLI(&r, "--format", "py", "--session", "u", "x");
	ck_code(&r, 2);
	ck_err(&r, "dolsot: --format goes with --export ID\n");
	cli_run_release(&r);
	CLI(&r, "--export", "u", "--json");
	ck_code(&r, 2);
	ck_err_has(&r, "--json does not apply to --export");
	cli_run_release(&r);
	CALL_EXITS(2, "--export", "u", "--session", "u");
	CALL_EXITS(2, "--export", "u", "x = 2");
	CALL_EXITS(2, "--export", "u", "--history", "u");
	CALL_EXITS(2, "--export", "../u");
	cli_ck_state(&fx, "u", "x", "1\n");
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tools = tcase_create("jupyter"), *form = tcase_create("form");
	TCase *all[] = { tools, form, NULL };

	for (size_t i = 0; all[i]; i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 300);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(tools, the_notebook_validates_and_renders_figure_error_and_rolled_back_cells);
	tcase_add_test(tools, a_lost_state_is_a_markdown_cell_and_the_notebook_still_validates);
	tcase_add_test(form, the_notebook_is_nbformat_4_5_and_the_same_for_the_same_states);
	tcase_add_test(form, usage_errors_and_a_missing_session);
	return s;
}

int main(void)
{
	return ck_run(export_suite());
}
