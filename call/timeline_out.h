/*
 * timeline_out.h - --history's output: a session's kept states as text
 * or as one JSON object (store/timeline.h lists them).
 */
#ifndef DOLSOT_TIMELINE_OUT_H
#define DOLSOT_TIMELINE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline.h"

/* The states as text, one line each (see dolsot(1)), or as one JSON
 * object; 0, or -1 with errno when out cannot be written. */
int timeline_print(const char *id, const struct timeline_state *v, size_t n, FILE *out);
int timeline_print_json(const char *id, const struct timeline_state *v, size_t n,
                        FILE *out);

/* A time in ns since the epoch as --history writes it (ISO 8601, UTC). */
void timeline_out_time(int64_t ns, char *buf, size_t len);

#endif
