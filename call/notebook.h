/*
 * notebook.h - a session's kept states (store/timeline.h) as a Jupyter
 * notebook, nbformat 4.5 (issue 43, "Export"): a code cell for each cell
 * that made a state, with its outputs as its --json result recorded them,
 * then the cells rolled back on that state, marked; a markdown cell for a
 * move back (undo, checkout), a fork's first state, an earlier state and
 * a state whose record is lost.  dolsot(1), History, describes the cells
 * and their metadata.
 */
#ifndef DOLSOT_NOTEBOOK_H
#define DOLSOT_NOTEBOOK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "timeline.h"

/* What the notebook's metadata says besides the states. */
struct notebook_about {
	const char *session;
	const char *version;    /* dolsot's, or NULL */
	uint64_t depth;         /* DOLSOT_HISTORY: earlier states a session keeps */
};

/*
 * The notebook of v[0..n) (oldest first, as timeline_list gives them): a
 * new reference, or NULL when memory ran out.  It holds no time of its
 * own making: the same states give the same notebook.
 */
json_t *notebook_of(const struct notebook_about *a, const struct timeline_state *v,
                    size_t n);

#endif
