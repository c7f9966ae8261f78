/*
 * timeline_out.h - --history's output: a session's kept states as text
 * or as one JSON object (store/timeline.h lists them); and what --undo
 * and --checkout say of a move.  The CLI prints them, the MCP tools
 * carry the same text and objects.
 */
#ifndef DOLSOT_TIMELINE_OUT_H
#define DOLSOT_TIMELINE_OUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline.h"

/* The states as text, one line each (see dolsot(1)), or as one JSON
 * object; 0, or -1 with errno when out cannot be written. */
int timeline_print(const char *id, const struct timeline_state *v, size_t n, FILE *out);
int timeline_print_json(const char *id, const struct timeline_state *v, size_t n,
                        FILE *out);

/* timeline_print_json's object, {"session","current","states"}: a new
 * reference, or NULL on a lack of memory. */
json_t *timeline_json(const char *id, const struct timeline_state *v, size_t n);

/*
 * A move (action "undo" or "checkout") as its line, "undo ID: back to
 * state N, now state M", or as one JSON object {"session","action","to",
 * "state"} (state null when DOLSOT_HISTORY=0 keeps none); 0, or -1 when
 * out cannot be written.  timeline_move_json: that object, a new
 * reference, or NULL.
 */
int timeline_print_move(const char *id, const char *action, const struct timeline_move *mv,
                        FILE *out);
int timeline_print_move_json(const char *id, const char *action,
                             const struct timeline_move *mv, FILE *out);
json_t *timeline_move_json(const char *id, const char *action, const struct timeline_move *mv);

/* A time in ns since the epoch as --history writes it (ISO 8601, UTC). */
void timeline_out_time(int64_t ns, char *buf, size_t len);

#endif
