/*
 * unitstore.h - session format v4 (units.h) over any store (store.c's
 * helpers): a commit's pack into the store's units, a load's pack out of
 * them, and collecting the units no session's head names.
 *
 * A store keeps units when its ops have them (store_ops.h's obj_*); its
 * sessions' stored bytes are then heads, each followed by the pack of its
 * small units (units_inline).  Every function here is
 * for such a store but unitstore_whole.
 */
#ifndef DOLSOT_UNITSTORE_H
#define DOLSOT_UNITSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_ops.h"
#include "units.h"

/* Whether s keeps units. */
bool unitstore_keeps(const struct store *s);

/* "dolsot: warning: WHY; THEN" added to what the store's caller hears
 * (store.h's store_take_notice). */
void unitstore_warn(struct store *s, const char *why, const char *then);

/*
 * id's stored bytes into *stored (malloc'd, *len bytes) when they begin
 * as a v4 head; else *stored NULL (an older blob is not read past its
 * magic when the store has fds).  *found as the store's load says.  0, or
 * -1 with err.
 */
int unitstore_load_v4(struct store *s, const char *id, uint8_t **stored, size_t *len,
                      bool *found, char *err, size_t errlen);

/*
 * A whole-blob store's check of a v4 blob of session id: every ref of
 * the head has its entry in the pack.  0, or -1 with the refusal in err
 * ("cannot save session 'ID': ...").
 */
int unitstore_whole(const char *id, const struct units_head *h, char *err, size_t errlen);

/*
 * The pack of h (a v4 blob session id's save parsed) into s's units:
 * each entry's bytes checked against its hash, then stored unless small
 * enough to stay with the head (units_inline), and put into the store's
 * cache when it has one (one the cache refuses: s->notice says so); then
 * every ref of the head must be stored, or in the pack when that small,
 * or among prev[0..nprev) (sorted: the previous head's refs,
 * unitstore_refs_of), which stay while that head is the session's (its
 * lock held).  The caller holds the units lock shared.  0, or -1 with the refusal in err.
 */
int unitstore_take_pack(struct store *s, const char *id, const struct units_head *h,
                        const uint8_t *prev, size_t nprev, char *err, size_t errlen);

/* The entries of h's pack that stay with the head (units_inline), back
 * to back as in a pack, into out (NULL: only counted); their bytes. */
size_t unitstore_inline_pack(const struct units_head *h, uint8_t *out);

/*
 * The hashes (UNITS_HASH_LEN bytes each, malloc'd into *hashes, *n of
 * them) that the stored head of id names, unverified (enough to pick
 * candidates for collecting, never to keep or remove one by); NULL and 0
 * when it has none or cannot be read.
 */
void unitstore_refs_of(struct store *s, const char *id, uint8_t **hashes, size_t *n);

/* Whether h names a unit of the store's (not one kept with the head) that
 * is not among prev[0..nprev) (the previous head's, unitstore_refs_of):
 * one a concurrent collector could remove unless the commit holds the
 * units lock. */
bool unitstore_names_new(const struct units_head *h, const uint8_t *prev, size_t nprev);

/* Drop from hashes[0..*n) those h names. */
void unitstore_drop_named(uint8_t *hashes, size_t *n, const struct units_head *h);

/* Drop from hashes[0..*n) those the stored head of id names. */
void unitstore_drop_named_by(struct store *s, const char *id, uint8_t *hashes, size_t *n);

/*
 * Append to the verified head in fd (*len bytes; fd's offset is kept) a
 * pack entry for each ref, read from s's units; a unit missing (or not of
 * its ref's size) is left out.  Nothing for a blob that is not v4.
 * *len is then the whole.  0, or -1 with err.
 */
int unitstore_append_pack(struct store *s, const char *id, int fd, size_t *len,
                          char *err, size_t errlen);

/*
 * For a store with a unit cache (store_ops.h's cache): every unit the
 * verified head in fd (*len bytes) names, beyond those kept with it, made
 * present in the cache for a worker that reads them there (store_units_dir):
 * those it lacks (or has unsound) are fetched from the store (obj_fetch,
 * else obj_read of each), checked against their hash and put.  One the
 * cache cannot take (or that does not match its hash) is appended to fd's
 * pack instead, as unitstore_append_pack does (*len is then the whole),
 * and so is every one when the cache cannot be used at all; s->notice
 * says why.  One the store lacks is left out (the worker says so).  Nothing
 * for a blob that is not v4.  0, or -1 with err (the store failed).
 */
int unitstore_fill_cache(struct store *s, const char *id, int fd, size_t *len,
                         char *err, size_t errlen);

/*
 * Remove those of cands[0..n) (hashes) that no session's head names,
 * under the units lock held exclusive.  A head that cannot be read stops
 * it before any removal, and s->notice says so; so does any other
 * failure (nothing to return: a unit left is garbage, never a loss).
 * Nothing for a store without units.
 */
void unitstore_collect(struct store *s, const uint8_t *cands, size_t n);

/* unitstore_collect among every unit of the store. */
void unitstore_collect_all(struct store *s);

/* A session's size: its stored bytes (stored[0..n)) plus its refs' sizes
 * when they hold a v4 head. */
uint64_t unitstore_size(const uint8_t *stored, size_t n);

#endif
