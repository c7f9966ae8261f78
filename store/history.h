/*
 * history.h - a session's earlier states on a store that keeps units
 * (issue 43), store.c's and unitstore.c's helpers; the record's format is
 * histrec.h's.
 *
 * Each commit keeps the state it replaces: that state's blob (its head
 * and small units) and its own record become one unit of the store, which
 * the new record names, together with the units those kept states name
 * and the new head does not (its extras), so that collecting, which reads
 * every stored record, removes nothing a kept state needs.  The oldest
 * states go once more than the store's depth (DOLSOT_HISTORY) are kept.
 */
#ifndef DOLSOT_HISTORY_H
#define DOLSOT_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histrec.h"
#include "store_ops.h"
#include "units.h"

/* What a verified load kept for the next commit of the same session. */
struct history_prev {
	char id[STORE_ID_MAX + 1];
	bool absent;            /* the session did not exist */
	bool sandboxed;         /* who wrote the state, as its load decided */
	bool hashed;            /* the stored bytes' hash is known: the store may
	                         * adopt them as the unit that keeps the state */
	uint8_t stored_hash[HISTREC_HASH_LEN];
	uint64_t stored_len;
	size_t blob_len;        /* bytes[0..blob_len): the blob (head, small units) */
	size_t rec_len;         /* then its record, 0 when it has none */
	uint8_t bytes[];
};

/* Remember fd's blob (its first len bytes; fd -1: the session does not
 * exist) and rec (taken: freed here) as id's loaded state, when s keeps a
 * history; replaces what was kept.  -1 with err when it cannot. */
int history_keep(struct store *s, const char *id, int fd, size_t len, bool sandboxed,
                 uint8_t *rec, size_t rec_len, char *err, size_t errlen);

/* The hash and size of the stored bytes (trailer and records included)
 * of the state history_keep just kept, for a store with obj_adopt. */
void history_stored_as(struct store *s, const uint8_t *hash, uint64_t len);

/* The loaded state of id that history_keep kept, or NULL. */
const struct history_prev *history_prev_of(const struct store *s, const char *id);

/*
 * The hashes of the units the record at the end of a session's stored
 * bytes (stored[0..n), trailer included, nothing verified) names, its
 * states' and its extras', appended to *v (*count so far).  0 (nothing
 * for bytes with no record), or -1 with err: damaged, or out of memory.
 */
int history_named(const uint8_t *stored, size_t n, uint8_t **v, size_t *count, char *err,
                  size_t errlen);


/*
 * The record of a new state whose head is next (parsed) and which a
 * sandboxed call wrote when sandboxed, replacing prev (absent: the
 * session is new): prev kept as a unit (durably, the caller holding the
 * units lock shared), the oldest states past s's depth and the extras
 * no kept state names let go (the caller collects what the previous
 * record named and this one does not).  *rec (malloc'd) is the record.
 * 0, or -1 with err.
 */
int history_next(struct store *s, const struct history_prev *prev,
                 const struct units_head *next, bool sandboxed,
                 const struct histrec_cell *cell, uint8_t **rec, size_t *rec_len,
                 char *err, size_t errlen);

/* A kept state as read back from its unit. */
struct history_state {
	uint8_t *bytes;         /* malloc'd: the unit */
	size_t blob_len;        /* its blob, then its record */
	struct histrec rec;     /* parsed, pointing into bytes */
};

/*
 * State st of a session (its entry in the session's record) read from the
 * store's units and checked against its hash into *out: a unit that keeps
 * a state is its blob and record, or (adopted, store_ops.obj_adopt) its
 * whole stored bytes, the call-id record and the signature included.  0; 1 when the
 * store no longer has it (collected); -1 with err.
 */
int history_read_state(struct store *s, const struct histrec_state *st,
                       struct history_state *out, char *err, size_t errlen);

void history_state_release(struct history_state *st);

#endif
