/*
 * export_text.c - a notebook as a percent-format script or a markdown
 * report (export_text.h).  Both read the notebook notebook.c built, its
 * cells' "dolsot" metadata included, so the three formats say the same.
 */
#include "export_text.h"

#include <stdbool.h>
#include <string.h>

/* A cell's "dolsot" metadata, or NULL. */
static const json_t *about(const json_t *cell)
{
	return json_object_get(json_object_get(cell, "metadata"), "dolsot");
}

static bool is_code(const json_t *cell)
{
	const char *type = json_string_value(json_object_get(cell, "cell_type"));

	return type && strcmp(type, "code") == 0;
}

/* Write a multi-line string (an array of lines, or a string), each line
 * after prefix; *nl whether it ended with a newline. */
static void put_lines(FILE *out, const json_t *text, const char *prefix, bool *nl)
{
	json_t *part;
	size_t i;

	*nl = true;
	if (json_is_string(text)) {
		const char *s = json_string_value(text);

		while (*s) {
			size_t n = strcspn(s, "\n");

			fprintf(out, "%s%.*s", n || !*prefix ? prefix : "#", (int)n, s);
			s += n;
			*nl = *s == '\n';
			if (*nl) {
				fputc('\n', out);
				s++;
			}
		}
		return;
	}
	json_array_foreach(text, i, part) {
		bool one;

		put_lines(out, part, prefix, &one);
		*nl = one;
	}
}

/* The same, ending with a newline. */
static void put_block(FILE *out, const json_t *text, const char *prefix)
{
	bool nl;

	put_lines(out, text, prefix, &nl);
	if (!nl)
		fputc('\n', out);
}

/* Whether an output of the cell is a SyntaxError (or one of its kinds):
 * the cell never ran. */
static bool syntax_error(const json_t *cell)
{
	static const char *const kinds[] = { "SyntaxError", "IndentationError", "TabError" };
	json_t *o;
	size_t i;

	json_array_foreach(json_object_get(cell, "outputs"), i, o) {
		const char *ename = json_string_value(json_object_get(o, "ename"));

		for (size_t k = 0; ename && k < sizeof(kinds) / sizeof(*kinds); k++)
			if (strcmp(ename, kinds[k]) == 0)
				return true;
	}
	return false;
}

/* Why a code cell is left out of the script, or NULL when it is in. */
static const char *left_out(const json_t *cell)
{
	const char *status = json_string_value(json_object_get(about(cell), "status"));

	if (json_is_true(json_object_get(about(cell), "rolled_back")))
		return "rolled back";
	if (status && strcmp(status, "rejected") == 0)
		return "blocked by the type gate, not run";
	if (syntax_error(cell))
		return "not valid Python, not run";
	return NULL;
}

/* "state N" and, when not ok, its status; into buf. */
static void cell_title(const json_t *cell, char *buf, size_t len)
{
	const json_t *d = about(cell);
	const char *status = json_string_value(json_object_get(d, "status"));

	snprintf(buf, len, "state %" JSON_INTEGER_FORMAT "%s%s",
	         json_integer_value(json_object_get(d, "state")),
	         status && strcmp(status, "ok") != 0 ? ", " : "",
	         status && strcmp(status, "ok") != 0 ? status : "");
}

int export_text_py(const json_t *nb, FILE *out)
{
	json_t *cell;
	size_t i;
	char title[128];

	json_array_foreach(json_object_get(nb, "cells"), i, cell) {
		const char *why;

		if (i)
			fputc('\n', out);
		if (!is_code(cell)) {
			fputs("# %% [markdown]\n", out);
			put_block(out, json_object_get(cell, "source"), "# ");
			continue;
		}
		cell_title(cell, title, sizeof(title));
		why = left_out(cell);
		if (why)
			fprintf(out, "# %%%% %s (%s): commented out\n", title, why);
		else
			fprintf(out, "# %%%% %s\n", title);
		put_block(out, json_object_get(cell, "source"), why ? "# " : "");
	}
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ---- the report ---- */

/* The longest run of backticks in a multi-line string. */
static size_t longest_ticks(const json_t *text)
{
	const char *s = json_string_value(text);
	size_t most = 0, run = 0, i;
	json_t *part;

	json_array_foreach(text, i, part) {
		size_t n = longest_ticks(part);

		most = n > most ? n : most;
	}
	for (; s && *s; s++) {
		run = *s == '`' ? run + 1 : 0;
		most = run > most ? run : most;
	}
	return most;
}

/* A fence longer than any run of backticks in text, at least 3. */
static size_t fence_len(const json_t *text)
{
	size_t n = longest_ticks(text) + 1;

	return n < 3 ? 3 : n;
}

static void put_fence(FILE *out, size_t n, const char *lang)
{
	for (size_t i = 0; i < n; i++)
		fputc('`', out);
	fprintf(out, "%s\n", lang);
}

/* text in a fence of its own. */
static void put_fenced(FILE *out, const char *lang, const json_t *text)
{
	size_t n = fence_len(text);

	put_fence(out, n, lang);
	put_block(out, text, "");
	put_fence(out, n, "\n");
}

static void put_display(FILE *out, const json_t *data)
{
	const json_t *png = json_object_get(data, "image/png");

	if (json_is_string(png)) {
		fprintf(out, "![figure](data:image/png;base64,%s)\n\n", json_string_value(png));
	} else if (json_object_get(data, "text/markdown")) {
		put_block(out, json_object_get(data, "text/markdown"), "");
		fputc('\n', out);
	} else {
		put_fenced(out, "text", json_object_get(data, "text/plain"));
	}
}

static void put_output(FILE *out, const json_t *o)
{
	const char *type = json_string_value(json_object_get(o, "output_type"));
	const json_t *count = json_object_get(o, "execution_count");

	if (!type)
		return;
	if (strcmp(type, "stream") == 0) {
		fprintf(out, "*%s:*\n\n", json_is_string(json_object_get(o, "name")) ?
		        json_string_value(json_object_get(o, "name")) : "stream");
		put_fenced(out, "text", json_object_get(o, "text"));
	} else if (strcmp(type, "execute_result") == 0) {
		if (json_is_integer(count))
			fprintf(out, "*Out [%" JSON_INTEGER_FORMAT "]:*\n\n", json_integer_value(count));
		else
			fputs("*Out:*\n\n", out);
		put_fenced(out, "text", json_object_get(json_object_get(o, "data"), "text/plain"));
	} else if (strcmp(type, "display_data") == 0) {
		put_display(out, json_object_get(o, "data"));
	} else if (strcmp(type, "error") == 0) {
		json_t *tb = json_object_get(o, "traceback"), *line;
		size_t i, n = fence_len(tb);

		fputs("*error:*\n\n", out);
		put_fence(out, n, "text");
		json_array_foreach(tb, i, line) {
			fprintf(out, "%s\n", json_string_value(line) ? json_string_value(line) : "");
		}
		put_fence(out, n, "\n");
	}
}

int export_text_md(const json_t *nb, FILE *out)
{
	json_t *cell, *o;
	size_t i, k;
	char title[128];

	json_array_foreach(json_object_get(nb, "cells"), i, cell) {
		const json_t *count = json_object_get(cell, "execution_count");

		if (!is_code(cell)) {
			put_block(out, json_object_get(cell, "source"), "");
			fputc('\n', out);
			continue;
		}
		cell_title(cell, title, sizeof(title));
		if (json_is_integer(count))
			fprintf(out, "### In [%" JSON_INTEGER_FORMAT "]: %s", json_integer_value(count),
			        title);
		else
			fprintf(out, "### In [ ]: %s", title);
		fprintf(out, "%s\n\n", json_is_true(json_object_get(about(cell), "rolled_back")) ?
		        " (rolled back)" : "");
		put_fenced(out, "python", json_object_get(cell, "source"));
		json_array_foreach(json_object_get(cell, "outputs"), k, o) {
			put_output(out, o);
		}
	}
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
