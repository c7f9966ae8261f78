/*
 * units.h - session format v4: a signed head naming content-addressed
 * units, optionally followed by a pack of those units' bytes (issue 36;
 * the layout is the worker's session.py's).
 *
 *   head:  "DLSS\x04", u64 LE index length I, I bytes of index,
 *          u32 LE record length M, M bytes of module record,
 *          u32 LE ref count N (<= UNITS_MAX_REFS),
 *          N refs: 32 bytes SHA-256 of a unit, u64 LE its size
 *          (sorted by hash, no duplicates)
 *   pack:  to the end of the blob, entries of 32 bytes SHA-256,
 *          u64 LE size S, S bytes; each entry's hash one of the refs,
 *          with the ref's size, none twice
 *
 * The bytes are untrusted (a worker wrote them, or whoever can write
 * the store): every length is checked against what is there, nothing is
 * read past len.  Fuzzed by fuzz/fuzz_units.c.
 */
#ifndef DOLSOT_UNITS_H
#define DOLSOT_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UNITS_MAGIC_LEN 5
#define UNITS_HASH_LEN 32
#define UNITS_REF_LEN 40        /* hash + u64 size */
#define UNITS_MAX_REFS (1u << 20)
#define UNITS_HEX_LEN 64
#define UNITS_ERR_MAX 160
/* A unit smaller than this stays in the pack after the head, on a store
 * that keeps units too: it is stored with the head, signed with it, never
 * a unit of its own (session.py's _INLINE_MAX says the same). */
#define UNITS_INLINE_MAX 4096

static inline bool units_inline(uint64_t size)
{
	return size < UNITS_INLINE_MAX;
}

struct units_head {
	size_t head_len;        /* the head's bytes: the pack starts here */
	const uint8_t *refs;    /* nrefs entries of UNITS_REF_LEN bytes, sorted */
	uint32_t nrefs;
	uint64_t refs_size;     /* the refs' sizes summed (UINT64_MAX when more) */
	const uint8_t *pack;    /* the pack's first byte (end of the head) */
	size_t pack_len;
	size_t npack;           /* entries in the pack (units_parse only) */
};

struct units_entry {
	const uint8_t *hash;    /* UNITS_HASH_LEN bytes */
	uint64_t size;
	const uint8_t *bytes;   /* size bytes (a pack entry's), or NULL for a ref */
};

/* Whether p[0..len) begins with v4's magic. */
bool units_is_v4(const uint8_t *p, size_t len);

/*
 * Parse the v4 blob p[0..len): its head and its pack, each checked
 * whole (the entries' bytes are not hashed: sha256.h hashes them).  0 with
 * *h filled, or -1 with the damage in err (errlen bytes).
 */
int units_parse(const uint8_t *p, size_t len, struct units_head *h, char *err,
                size_t errlen);

/* Parse only the head; whatever follows it (pack, record, trailer) is
 * left unread: h->pack and h->pack_len say where, h->npack is 0. */
int units_parse_head(const uint8_t *p, size_t len, struct units_head *h, char *err,
                     size_t errlen);

/* Ref i (< h->nrefs) into *e (e->bytes NULL). */
void units_ref(const struct units_head *h, uint32_t i, struct units_entry *e);

/* The index of hash among h's refs, or -1. */
long units_find(const struct units_head *h, const uint8_t *hash);

/* The index of the entry beginning with hash among n entries stride
 * bytes apart from base, sorted by their first UNITS_HASH_LEN bytes; -1
 * when none does. */
long units_search(const void *base, size_t n, size_t stride, const uint8_t *hash);

/* The pack entry at *off (start at 0) of a pack units_parse checked, into
 * *e, *off moved past it; 1, or 0 at the end. */
int units_pack_next(const struct units_head *h, size_t *off, struct units_entry *e);

/* A hash as 64 lowercase hex digits and a NUL. */
void units_hex(const uint8_t *hash, char out[UNITS_HEX_LEN + 1]);

/* s[0..len) as a hash into out: 0, or -1 unless it is exactly 64
 * lowercase hex digits. */
int units_unhex(const char *s, size_t len, uint8_t out[UNITS_HASH_LEN]);

/* A pack entry's bytes in the wire layout: its 40-byte prefix for hash
 * and size. */
void units_entry_prefix(const uint8_t *hash, uint64_t size, uint8_t out[UNITS_REF_LEN]);

#endif
