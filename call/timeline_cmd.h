/*
 * timeline_cmd.h - --history, --undo and --checkout (issue 43): a
 * session's kept states listed, and gone back to, each under the
 * session's lock on the configured store (store/timeline.h does the work).
 */
#ifndef DOLSOT_TIMELINE_CMD_H
#define DOLSOT_TIMELINE_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "opts.h"
#include "timeline.h"

/* id's states into *v (timeline_release frees them), oldest first.  0, or
 * -1 with err (a session that does not exist is one). */
int timeline_cmd_list(const struct settings *s, const char *id, struct timeline_state **v,
                      size_t *n, char *err, size_t errlen);

/* --undo (target 0) or --checkout ID@target.  0 with *mv, or -1 with err. */
int timeline_cmd_move(const struct settings *s, const char *id, uint64_t target,
                      struct timeline_move *mv, char *err, size_t errlen);

/*
 * "ID@N" into id (STORE_ID_MAX + 1 bytes) and *n (1 or more).  0, or -1
 * with why into err.
 */
int timeline_parse_ref(const char *ref, char *id, uint64_t *n, char *err, size_t errlen);

#endif
