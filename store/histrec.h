/*
 * histrec.h - the history record (issue 43): what a session keeps of its
 * earlier states, and of the call that made each state.
 *
 * A session's stored bytes on a store that keeps units are
 *
 *     blob      the v4 head and its small units (units.h)
 *     callrec   optional, callrec.h
 *     histrec   optional, this record
 *     trailer   the signature (sign.h), over all of the above
 *
 * and an earlier state is kept as a unit of the store (named by its
 * SHA-256 like any other): its blob followed by its own record, holding
 * no states and no extras.  The current record names those units, so the
 * signature over it covers every kept state through their hashes.
 *
 *     record   body, then u32 LE body length, then HISTREC_MAGIC
 *     body     u64 number        this state's number, from 1
 *              u8  kind          enum histrec_kind
 *              u8  flags         bit 0: a sandboxed call wrote the state
 *              u32 exit status   of the call that made it
 *              u64 time          when it was committed, ns since the epoch
 *              u64 duration      of that call, microseconds
 *              u64 from          undo, checkout: the state it came back to;
 *                                fork: the source's state number
 *              u64 written       bytes the commit wrote to the store
 *              u32 + bytes       the cell's code (a fork's: the source id)
 *              u32 + bytes       the call's --json object
 *              u32 A, A attempts the cells run on this state and rolled back
 *                                (timed out, killed, too big to save),
 *                                oldest first, at most HISTREC_ATTEMPTS_MAX:
 *                                u32 exit status, u64 time, u64 duration,
 *                                u32 + code, u32 + --json object
 *              u32 N, N states   u64 number, 32 bytes hash, u64 size:
 *                                oldest first, numbers rising, below number
 *              u32 E, E extras   32 bytes hash, u64 size, u64 last: the
 *                                units a kept state names and this head
 *                                does not, sorted by hash, last the newest
 *                                state naming it (collecting reads these)
 *
 * The bytes are untrusted until their signature or hash is checked, and
 * read by collecting before either: every length is checked against what
 * is there.  Fuzzed by fuzz/fuzz_histrec.c.
 */
#ifndef DOLSOT_HISTREC_H
#define DOLSOT_HISTREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTREC_MAGIC "DLHR\001\000\000\000"
#define HISTREC_FOOTER 12
#define HISTREC_HASH_LEN 32
#define HISTREC_CODE_MAX (1u << 20)     /* bytes of code kept */
#define HISTREC_RESULT_MAX (1u << 20)   /* bytes of a --json object kept */
#define HISTREC_STATES_MAX 100000u      /* DOLSOT_HISTORY's bound */
#define HISTREC_ATTEMPTS_MAX 16u        /* rolled-back cells a state keeps */
#define HISTREC_ATTEMPT_RESULT_MAX (64u << 10)   /* bytes of one's --json kept */
#define HISTREC_EXTRAS_MAX (1u << 22)
#define HISTREC_ERR_MAX 160

enum histrec_kind {
	HISTREC_CELL = 1,       /* a cell ran */
	HISTREC_UNDO,           /* --undo */
	HISTREC_CHECKOUT,       /* --checkout */
	HISTREC_FORK,           /* --fork SRC@N */
	HISTREC_EARLIER,        /* saved before the session kept a history */
	HISTREC_AMEND,          /* not a state: the current one's record amended
	                         * (histrec_cell.record), its blob as it is */
};

struct histrec_state {
	uint64_t number;
	uint8_t hash[HISTREC_HASH_LEN];
	uint64_t size;
};

/* A cell run on a state and rolled back. */
struct histrec_attempt {
	int exit_code;
	int64_t time_ns;
	uint64_t duration_us;
	const uint8_t *code;    /* into the parsed bytes, or the caller's */
	size_t code_len;
	const uint8_t *result;
	size_t result_len;
};

struct histrec_extra {
	uint8_t hash[HISTREC_HASH_LEN];     /* first: units_search finds it */
	uint64_t size;
	uint64_t last;
};

struct histrec {
	uint64_t number;
	uint8_t kind;
	bool sandboxed;
	int exit_code;
	int64_t time_ns;
	uint64_t duration_us;
	uint64_t from;
	uint64_t written;
	/* Into the parsed bytes (histrec_parse) or the caller's (encode). */
	const uint8_t *code;
	size_t code_len;
	const uint8_t *result;
	size_t result_len;
	/* malloc'd by histrec_parse (histrec_release frees them). */
	struct histrec_attempt *attempts;
	size_t nattempts;
	struct histrec_state *states;
	size_t nstates;
	struct histrec_extra *extras;
	size_t nextras;
};

/* What a commit's new state is, for its record. */
struct histrec_cell {
	uint8_t kind;           /* enum histrec_kind */
	const uint8_t *code;    /* the cell's code; a fork's: the source id */
	size_t code_len;
	const uint8_t *result;  /* the call's --json object */
	size_t result_len;
	int exit_code;
	uint64_t duration_us;
	uint64_t from;          /* undo, checkout, fork: the state it comes from */
	uint64_t written;       /* bytes the commit writes besides the record */
	const uint8_t *record;  /* HISTREC_AMEND: the record to store as it is */
	size_t record_len;
};

/*
 * The record's length at the end of p[0..n): 0 into *len when the bytes
 * end with no record, -1 when the footer names more bytes than there are.
 */
int histrec_footer(const uint8_t *p, size_t n, size_t *len);

/* The same from the last HISTREC_FOOTER bytes alone (tail; NULL when
 * total is shorter) of a payload of total bytes: callrec_footer's form,
 * for a reader that has not read the rest. */
int histrec_footer_tail(const uint8_t *tail, size_t total, size_t *len);

/* Parse a whole record (body and footer, len bytes) into *h, whose code
 * and result then point into buf.  0, or -1 with the damage in err (*h
 * then empty). */
int histrec_parse(const uint8_t *buf, size_t len, struct histrec *h, char *err,
                  size_t errlen);

/* *h as stored bytes (body and footer) into *out (malloc'd), *len bytes.
 * 0, or -1 with errno (ENOMEM, EINVAL for a record over its bounds). */
int histrec_encode(const struct histrec *h, uint8_t **out, size_t *len);

/* *h with a rolled-back cell a added (the oldest let go past
 * HISTREC_ATTEMPTS_MAX; a result over HISTREC_ATTEMPT_RESULT_MAX is not
 * kept), as stored bytes into *out (malloc'd).  0, or -1 with errno. */
int histrec_encode_with_attempt(const struct histrec *h, const struct histrec_attempt *a,
                                uint8_t **out, size_t *len);

/* The index of hash among h's extras (sorted), or -1. */
long histrec_find_extra(const struct histrec *h, const uint8_t *hash);

/* The kept state numbered number, or NULL. */
const struct histrec_state *histrec_state_of(const struct histrec *h, uint64_t number);

/* The kind as a word ("cell", "undo", ...). */
const char *histrec_kind_name(uint8_t kind);

void histrec_release(struct histrec *h);

#endif
