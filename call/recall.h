/*
 * recall.h - a --call-id's result: recorded with the save that commits
 * its call, and said again, without running anything, by a call that
 * repeats the id (the record's bytes are callrec.h's).
 */
#ifndef DOLSOT_RECALL_H
#define DOLSOT_RECALL_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"

#define RECALL_ERR_MAX 512

/*
 * Whether the session's record rec (len bytes; none when len is 0) holds
 * id: 1 with res's exit code and said_* the recorded result (res->said
 * and res->replayed set), 0 when it does not, or -1 with err when the
 * record is damaged.
 */
int recall_find(const uint8_t *rec, size_t len, const char *id, struct result *res,
                char *err, size_t errlen);

/*
 * The record to commit with res's call: rec (len bytes) with id's entry,
 * into *out (malloc'd) and *out_len.  The entry holds res rendered as if
 * saved, as text and as --json; over CALLREC_RESULT_MAX it holds a short
 * form instead (its exit status and a line saying the rest was too large).
 * res->said_* get the rendering when it is the whole result, for the call
 * to print once the save is committed.  0, or -1 with err.
 */
int recall_record(const uint8_t *rec, size_t len, const char *id, struct result *res,
                  uint8_t **out, size_t *out_len, char *err, size_t errlen);

#endif
