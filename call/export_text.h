/*
 * export_text.h - a notebook (notebook.h's) as text: a percent-format
 * Python script (`# %%` cells, the form Jupytext, VS Code and Spyder
 * read) or a markdown report of each cell with its outputs.
 */
#ifndef DOLSOT_EXPORT_TEXT_H
#define DOLSOT_EXPORT_TEXT_H

#include <jansson.h>
#include <stdio.h>

/*
 * The script: each code cell that ran in order; a cell that was rolled
 * back or did not run (a SyntaxError, a cell the type gate blocked)
 * commented out under a line saying why; markdown cells as comments.
 * 0, or -1 with errno when out cannot be written.
 */
int export_text_py(const json_t *nb, FILE *out);

/* The report: markdown cells as they are, each code cell's code in a
 * ```python fence with its streams, value and error in text fences and
 * its figures as data: URIs.  0, or -1 with errno. */
int export_text_md(const json_t *nb, FILE *out);

#endif
