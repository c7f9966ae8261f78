/*
 * notebook_check.c - exported notebooks judged by nbformat and nbconvert
 * (notebook_check.h).
 */
#include "notebook_check.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_helpers.h"

/* Reads the file twice: as nbformat.read upgrades it (a reader's view)
 * and exactly as written (NO_CONVERT), and validates both. */
static const char validate_py[] =
	"import sys, nbformat\n"
	"with open(sys.argv[1], encoding='utf-8') as f:\n"
	"    text = f.read()\n"
	"nb = nbformat.reads(text, as_version=4)\n"
	"nbformat.validate(nb)\n"
	"raw = nbformat.reads(text, as_version=nbformat.NO_CONVERT)\n"
	"nbformat.validate(raw)\n"
	"print(raw.nbformat, raw.nbformat_minor, len(raw.cells))\n";

void nb_export(const char *const *env, const char *session, const char *format,
               const char *path)
{
	struct cli_run r;
	FILE *f;

	cli_run(&r, &(struct cli_opts){ .env = env },
	        (const char *const[]){ "dolsot", "--export", session, "--format", format, NULL });
	ck_assert_msg(r.code == 0, "--export %s --format %s: exit %d\n%.2000s", session, format,
	              r.code, r.err);
	f = fopen(path, "we");
	ck_assert_msg(f != NULL, "%s", path);
	ck_assert(fwrite(r.out, 1, r.out_len, f) == r.out_len);
	ck_assert_int_eq(fclose(f), 0);
	cli_run_release(&r);
}

size_t nb_validate(const char *path)
{
	struct cli_run r;
	unsigned major = 0, minor = 0;
	size_t cells = 0;

	cli_run(&r, &(struct cli_opts){ .prog = NB_PYTHON },
	        (const char *const[]){ NB_PYTHON, "-W", "error", "-c", validate_py, path, NULL });
	ck_assert_msg(r.code == 0 && r.err_len == 0, "nbformat refuses %s (exit %d):\n%.4000s",
	              path, r.code, r.err);
	ck_assert_msg(sscanf(r.out, "%u %u %zu", &major, &minor, &cells) == 3 && major == 4 &&
	              minor == 5, "%s: nbformat %s", path, r.out);
	cli_run_release(&r);
	return cells;
}

char *nb_to_html(const char *path)
{
	struct cli_run r;
	char *html;

	cli_run(&r, &(struct cli_opts){ .prog = NB_PYTHON, .timeout = 300 },
	        (const char *const[]){ NB_PYTHON, "-m", "nbconvert", "--to", "html", "--stdout",
	                               path, NULL });
	ck_assert_msg(r.code == 0 && r.out_len > 0, "nbconvert --to html %s: exit %d\n%.4000s",
	              path, r.code, r.err);
	html = strdup(r.out);
	ck_assert_ptr_nonnull(html);
	cli_run_release(&r);
	return html;
}
