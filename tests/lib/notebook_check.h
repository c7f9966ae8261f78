/*
 * notebook_check.h - a notebook dolsot exported, judged by Jupyter's own
 * tools (Debian's python3-nbformat and jupyter-nbconvert, under
 * /usr/bin/python3.11): validated against nbformat's schema and
 * converted to HTML.  Each failure fails the Check test with the tool's
 * own message.
 */
#ifndef DOLSOT_NOTEBOOK_CHECK_H
#define DOLSOT_NOTEBOOK_CHECK_H

#include <stddef.h>

#define NB_PYTHON "/usr/bin/python3.11"

/* Export session's history with `dolsot --export session --format format`
 * (env: the test's environment) into path; its stdout is the file. */
void nb_export(const char *const *env, const char *session, const char *format,
               const char *path);

/* The notebook at path validates as nbformat 4.5 (read as version 4, and
 * as it is), with every warning an error; returns its cells' count. */
size_t nb_validate(const char *path);

/* The notebook at path converted by `jupyter nbconvert --to html`: its
 * HTML, malloc'd. */
char *nb_to_html(const char *path);

#endif
