/*
 * export.h - --export (issue 43, "Export"): a session's kept states as a
 * Jupyter notebook, a percent-format script or a markdown report, for
 * the command line and the MCP tool export_notebook.  The states come
 * from timeline_cmd_list (under the session's lock); this renders them.
 */
#ifndef DOLSOT_EXPORT_H
#define DOLSOT_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include "notebook.h"
#include "timeline.h"

enum export_format {
	EXPORT_IPYNB,   /* nbformat 4.5, the default */
	EXPORT_PY,      /* `# %%` cells */
	EXPORT_MD,      /* a markdown report */
};

/* The format named name ("ipynb", "py" or "md") into *f: 0, or -1. */
int export_format_parse(const char *name, enum export_format *f);

/* Its name, its MIME type, and the words a refusal names them with. */
const char *export_format_name(enum export_format f);
const char *export_format_mime(enum export_format f);
#define EXPORT_FORMATS "ipynb, py or md"

/*
 * v[0..n) (timeline_list's, oldest first) as f into out, flushed.  0, or
 * -1 with errno (ENOMEM, or the write's).
 */
int export_write(const struct notebook_about *a, const struct timeline_state *v, size_t n,
                 enum export_format f, FILE *out);

#endif
