/*
 * export.c - --export's formats (export.h): the notebook is built once
 * (notebook.c), then written as it is or as text (export_text.c).
 */
#include "export.h"

#include <errno.h>
#include <string.h>

#include "export_text.h"

static const struct {
	const char *name;
	const char *mime;
} formats[] = {
	[EXPORT_IPYNB] = { "ipynb", "application/x-ipynb+json" },
	[EXPORT_PY] = { "py", "text/x-python" },
	[EXPORT_MD] = { "md", "text/markdown" },
};

int export_format_parse(const char *name, enum export_format *f)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
		if (strcmp(name, formats[i].name) == 0) {
			*f = (enum export_format)i;
			return 0;
		}
	return -1;
}

const char *export_format_name(enum export_format f)
{
	return formats[f].name;
}

const char *export_format_mime(enum export_format f)
{
	return formats[f].mime;
}

/* The notebook as Jupyter writes one: indented by one, keys sorted. */
static int write_ipynb(const json_t *nb, FILE *out)
{
	if (json_dumpf(nb, out, JSON_INDENT(1) | JSON_SORT_KEYS |
	                  JSON_REAL_PRECISION(15)) < 0 || fputc('\n', out) == EOF)
		return -1;
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

int export_write(const struct notebook_about *a, const struct timeline_state *v, size_t n,
                 enum export_format f, FILE *out)
{
	json_t *nb = notebook_of(a, v, n);
	int ret;

	if (!nb) {
		errno = ENOMEM;
		return -1;
	}
	switch (f) {
	case EXPORT_PY:
		ret = export_text_py(nb, out);
		break;
	case EXPORT_MD:
		ret = export_text_md(nb, out);
		break;
	case EXPORT_IPYNB:
	default:
		ret = write_ipynb(nb, out);
	}
	json_decref(nb);
	return ret;
}
