/*
 * callrec.h - the call-id record: what a session remembers of the calls
 * that named a --call-id, so that a call repeating one returns the result
 * it recorded instead of running its cell again.
 *
 * The record is stored after the worker's blob and before the signature's
 * trailer (sign.h), so it is signed and saved with the state it describes,
 * in one rename:
 *
 *     blob      the worker's session (session.py), which ends in a
 *               pickle's STOP byte '.', never in this magic
 *     entries   back to back, oldest first, at most CALLREC_MAX:
 *                   u8      id length, 1..CALLREC_ID_MAX
 *                   id      bytes of CALLREC_ID_CHARS
 *                   u8      the call's exit status
 *                   3 x     u32 LE length, then bytes: the text contract's
 *                           stdout, its stderr, the --json object
 *               (the three at most CALLREC_RESULT_MAX bytes in all)
 *     footer    u32 LE    bytes of the entries
 *               MAGIC     8 bytes, "DLCR" 0x01 0x00 0x00 0x00
 *
 * A session without a record (an older dolsot's, or one no --call-id
 * reached) ends with its blob.  The parser takes any bytes (fuzz/).
 */
#ifndef DOLSOT_CALLREC_H
#define DOLSOT_CALLREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CALLREC_MAX 16                    /* call ids a session remembers */
#define CALLREC_ID_MAX 128                /* bytes of an id */
#define CALLREC_RESULT_MAX (32u << 10)    /* bytes of one call's result */
#define CALLREC_FOOTER 12
#define CALLREC_MAGIC "DLCR\001\000\000\000"
#define CALLREC_ID_CHARS "A-Z a-z 0-9 . _ : -"

struct callrec_bytes {
	uint8_t *p;             /* malloc'd, or NULL when len is 0 */
	size_t len;
};

struct callrec_entry {
	char id[CALLREC_ID_MAX + 1];
	int exit_code;
	struct callrec_bytes out, err, json;
};

/* The entries, oldest first. */
struct callrec {
	size_t n;
	struct callrec_entry e[CALLREC_MAX];
};

/* Whether id is a call id (1..CALLREC_ID_MAX of CALLREC_ID_CHARS); when
 * not, why into err. */
bool callrec_id_valid(const char *id, char *err, size_t errlen);

/*
 * The record's length at the end of a stored payload of total bytes whose
 * last CALLREC_FOOTER bytes are tail (tail NULL when total is shorter):
 * 0 into *len when the payload has no record; -1 when the footer names
 * more bytes than there are.
 */
int callrec_footer(const uint8_t *tail, size_t total, size_t *len);

/* Parse a whole record (entries and footer, len bytes) into *r, which
 * callrec_release frees.  0, or -1 with why into err (*r then empty).
 * len 0 is an empty record. */
int callrec_parse(const uint8_t *buf, size_t len, struct callrec *r, char *err,
                  size_t errlen);

/* The entry of id, or NULL. */
const struct callrec_entry *callrec_find(const struct callrec *r, const char *id);

/*
 * Remember id's result (copies of out, err and json; their lengths within
 * CALLREC_RESULT_MAX together, an id of callrec_id_valid's), forgetting
 * the oldest entry past CALLREC_MAX and an older entry of the same id.
 * 0, or -1 with errno (EINVAL, ENOMEM).
 */
int callrec_add(struct callrec *r, const char *id, int exit_code,
                const struct callrec_bytes *out, const struct callrec_bytes *err,
                const struct callrec_bytes *json);

/* *r as stored bytes into *buf (malloc'd) and *len; an empty record is
 * no bytes (*buf NULL).  0, or -1 with errno ENOMEM. */
int callrec_encode(const struct callrec *r, uint8_t **buf, size_t *len);

void callrec_release(struct callrec *r);

#endif
