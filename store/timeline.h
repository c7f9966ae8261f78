/*
 * timeline.h - a session's kept states as its caller sees them (issue 43):
 * listed, and gone back to (--undo, --checkout, --fork SRC@N), over any
 * store that keeps units.  The caller holds the lock of every session
 * named.
 */
#ifndef DOLSOT_TIMELINE_H
#define DOLSOT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histrec.h"
#include "store_ops.h"

/* One state, as --history lists it. */
struct timeline_state {
	uint64_t number;
	bool current;           /* the session's state now */
	bool gone;              /* its unit is no longer in the store */
	struct histrec rec;     /* when not gone: its record (no states, no extras
	                         * but the current's), pointing into bytes */
	uint8_t *bytes;         /* malloc'd */
};

/*
 * id's states, oldest first, the current one last, into *out (malloc'd,
 * *n of them; timeline_release frees them).  A session without a record
 * (saved before history was kept) lists its current state alone, kind
 * HISTREC_EARLIER.  *found false (and nothing listed) when the session
 * does not exist.  0, or -1 with err.
 */
int timeline_list(struct store *s, const char *id, struct timeline_state **out, size_t *n,
                  bool *found, char *err, size_t errlen);

void timeline_release(struct timeline_state *v, size_t n);

/* What a move back to an earlier state came to. */
struct timeline_move {
	uint64_t target;        /* the state gone back to */
	uint64_t number;        /* the new state's number (the session's record) */
};

/*
 * Make state target of src (0: the one before its current state, an
 * undo) the new state of dst (src itself for --undo and --checkout; kind
 * HISTREC_UNDO, HISTREC_CHECKOUT or HISTREC_FORK), as a commit: the
 * state it replaces is kept in dst's history, the target's origin mark
 * carried exactly.  O(1) in the session's size: a head is read and
 * written, and no unit moves.  A fork into a dst that exists is refused
 * unless replace.  0 with *mv, or -1 with err and nothing changed.
 */
int timeline_move(struct store *s, const char *src, uint64_t target, const char *dst,
                  uint8_t kind, bool replace, struct timeline_move *mv, char *err,
                  size_t errlen);

/*
 * Record a cell run on id's current state and rolled back (timed out,
 * killed, too big to save) in that state's record, callrec its call-id
 * record as loaded: the same blob committed again, nothing kept, the
 * session's values and state number unchanged.  Nothing for a session
 * that did not exist or keeps no record.  After a load of id under its
 * lock.  0, or -1 with err.
 */
int timeline_record_attempt(struct store *s, const char *id,
                            const struct histrec_attempt *a, const uint8_t *callrec,
                            size_t callrec_len, char *err, size_t errlen);

#endif
