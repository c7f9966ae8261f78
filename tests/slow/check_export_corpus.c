/*
 * check_export_corpus.c - the project's notebook corpus replayed through
 * dolsot and exported (issue 43, "Export"): the 36 cells of
 * bench/notebook_cells.py (bench/notebook.py's sales analysis in pandas,
 * numpy and matplotlib), one call each in one session, on the warm path
 * with --json and on the cold one without; the notebook --export writes validates with
 * nbformat, holds every cell's code as it ran, and converts with
 * nbconvert; the script parses and the report holds every cell.
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

#define CORPUS_CELLS 36

static struct cli_test fx;

/* The corpus's cells, as the bench replays them (cells(work)). */
static const char cells_py[] =
	"import json, sys\n"
	"sys.path.insert(0, 'bench')\n"
	"import notebook_cells\n"
	"print(json.dumps(notebook_cells.cells(sys.argv[1])))\n";

static void setup(void)
{
	cli_test_begin_usual(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

static json_t *corpus_cells(const char *work)
{
	struct cli_run r;
	json_error_t e;
	json_t *cells;

	cli_run(&r, &(struct cli_opts){ .prog = NB_PYTHON },
	        (const char *const[]){ NB_PYTHON, "-c", cells_py, work, NULL });
	ck_code(&r, 0);
	cells = json_loads(r.out, 0, &e);
	ck_assert_msg(json_array_size(cells) == CORPUS_CELLS, "%s: %s", e.text, r.out);
	cli_run_release(&r);
	return cells;
}

static int count(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Every code cell's source, joined, is the corpus's cell, in order. */
static void sources_are(const char *path, const json_t *want)
{
	json_t *nb = json_load_file(path, 0, NULL), *cell, *line;
	size_t i, k, n = 0;

	ck_assert_ptr_nonnull(nb);
	json_array_foreach(json_object_get(nb, "cells"), i, cell) {
		char *src = calloc(1, 1 << 16);
		size_t len = 0;

		if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0)
			continue;
		ck_assert_ptr_nonnull(src);
		json_array_foreach(json_object_get(cell, "source"), k, line) {
			ck_assert(len + json_string_length(line) < (1 << 16));
			memcpy(src + len, json_string_value(line), json_string_length(line));
			len += json_string_length(line);
		}
		ck_assert_str_eq(src, json_string_value(json_array_get(want, n)));
		ck_assert_msg(json_array_size(json_object_get(cell, "outputs")) > 0 ||
		              n == 0, "cell %zu has no output", n);
		free(src);
		n++;
	}
	ck_assert_uint_eq(n, CORPUS_CELLS);
	json_decref(nb);
}

START_TEST(the_notebook_corpus_replayed_validates_and_converts)
{
	char *work = cli_path(fx.tmp, "work"), *path = cli_path(fx.tmp, "corpus.ipynb"), *html;
	json_t *cells, *cell;
	struct cli_run r;
	size_t i;

	cli_test_add_env(&fx, _i ? "DOLSOT_SERVER=off" : "DOLSOT_SERVER=auto");
	cli_mkdir_own(work);
	cells = corpus_cells(work);
	json_array_foreach(cells, i, cell) {
		cli_run(&r, &(struct cli_opts){ .env = fx.env, .cwd = work,
		                                .stdin_data = json_string_value(cell) },
		        (const char *const[]){ "dolsot", "--session", "corpus", _i ? NULL : "--json",
		                               NULL });
		ck_assert_msg(r.code == 0, "cell %zu: exit %d\n%.2000s", i, r.code, r.err);
		cli_run_release(&r);
	}
	nb_export(fx.env, "corpus", "ipynb", path);
	ck_assert_uint_eq(nb_validate(path), CORPUS_CELLS + 1);
	sources_are(path, cells);
	html = nb_to_html(path);
	/* A --json call records its values' rich forms: a DataFrame's table. */
	ck_assert(!_i == cli_has(html, "<table border=\"1\" class=\"dataframe\">"));
	ck_assert(cli_has(html, "(600, 4)"));
	ck_assert(cli_has(html, "&#39;rows&#39;: 600"));
	free(html);
	nb_export(fx.env, "corpus", "py", cli_path(fx.tmp, "corpus.py"));
	cli_run(&r, &(struct cli_opts){ .prog = NB_PYTHON },
	        (const char *const[]){ NB_PYTHON, "-c", "import ast, sys\n"
	                               "ast.parse(open(sys.argv[1], encoding='utf-8').read())\n",
	                               cli_path(fx.tmp, "corpus.py"), NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	CLI(&r, "--export", "corpus", "--format", "md");
	ck_code(&r, 0);
	ck_assert_int_eq(count(r.out, "```python\n"), CORPUS_CELLS);
	cli_run_release(&r);
	json_decref(cells);
}
END_TEST

static Suite *corpus_suite(void)
{
	Suite *s = suite_create("export_corpus");
	TCase *tc = tcase_create("corpus");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 900);
	/* 0: the warm path, each call with --json (as the MCP tool calls); 1:
	 * the cold one, the text contract. */
	tcase_add_loop_test(tc, the_notebook_corpus_replayed_validates_and_converts, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(corpus_suite());
}
