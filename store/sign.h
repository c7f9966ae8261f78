/*
 * sign.h - signed sessions: the session key, and the HMAC-SHA256 trailer
 * every stored session carries.
 *
 * A session pickle runs code when it is loaded, so a store that others can
 * write to would let them run code as every user of it.  Each stored
 * session is therefore the worker's blob followed by a trailer.  Saves
 * write version 2 (SIGN_TRAILER bytes):
 *
 *     SEQ       8 bytes, little-endian: the save counter (1 for a session's
 *               first save, one more than the last committed at each save)
 *     ORIGIN    1 byte: 1 when a sandboxed call wrote the blob, else 0
 *     RESERVED  7 bytes, zero
 *     MAC       32 bytes, HMAC-SHA256 under the session key over
 *               "dolsot session v2" NUL, the session id, NUL, the blob,
 *               then SEQ, ORIGIN and RESERVED as stored
 *     MAGIC     8 bytes, "DLSSIG" 0x02 0x00 (0x02: this trailer's version)
 *
 * Version 1 (SIGN_TRAILER_V1 bytes, written before the counter and the
 * origin were signed) is MAC then "DLSSIG" 0x01 0x00, its MAC over
 * "dolsot session v1" NUL, the id, NUL and the blob; it still verifies,
 * without a meta (the store's own record of the origin then decides), and
 * the next save writes version 2.
 *
 * The id, the origin and the counter are inside the MAC, so a blob moved
 * to another id, or its origin changed, does not verify; an older save
 * replayed does, and only its counter tells it (store.c compares it with
 * the one the store recorded).  store.c signs what the worker wrote and
 * verifies (in constant time) before any of it reaches a worker; the
 * worker never sees the trailer.
 */
#ifndef DOLSOT_SIGN_H
#define DOLSOT_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SIGN_MAC_LEN 32
#define SIGN_MAGIC_LEN 8
#define SIGN_META_LEN 16
#define SIGN_TRAILER_V1 40      /* MAC + magic */
#define SIGN_TRAILER 56         /* meta + MAC + magic: what a save appends */
#define SIGN_KEY_MIN 32         /* bytes of the shortest key accepted */
#define SIGN_KEY_MAX 1024       /* and of the longest */
#define SIGN_KEY_FILE ".session.key"
#define SIGN_ERR_MAX 512

/* The session key, as HMAC's padded key block; see sign_key_open. */
struct sign_key {
	uint8_t block[64];
	/* For the store's own key file: its modification time (when it was
	 * made, for a file dolsot made), and whether this open made it.
	 * Zero and false for a key DOLSOT_SESSION_KEY gives. */
	struct timespec made;
	bool fresh;
};

/* What a version 2 trailer signs beside the blob. */
struct sign_meta {
	uint64_t seq;           /* the save counter; 0: none (a version 1 trailer) */
	bool sandboxed;         /* a sandboxed call wrote the blob */
};

/*
 * The key of a store, into *key.  spec is DOLSOT_SESSION_KEY: NULL or ""
 * uses SIGN_KEY_FILE in the directory dirfd (the FileStore's), made with
 * a fresh random key, mode 0600, on first use (two first calls at once
 * agree on one); a value that begins with '/' names a key file; any other
 * value is the key itself (SIGN_KEY_MIN..SIGN_KEY_MAX bytes).  A key file
 * holds the key, one trailing newline aside; it must be a regular file
 * (not a symlink) owned by the effective uid with no group or other
 * permission.  Returns 0, or -1 with a reason in err.
 */
int sign_key_open(const char *spec, int dirfd, struct sign_key *key, char *err,
                  size_t errlen);

/* Whether spec is a key given inline (not a key file's path). */
int sign_key_inline(const char *spec);

/* The version 2 trailer (SIGN_TRAILER bytes) of blob[0..n) stored under
 * id, signing meta with it. */
void sign_trailer(const struct sign_key *key, const char *id, const uint8_t *blob,
                  size_t n, const struct sign_meta *meta, uint8_t out[SIGN_TRAILER]);

enum sign_verdict {
	SIGN_OK,                /* signed with this key for this id */
	SIGN_UNSIGNED,          /* no trailer: an older dolsot's, or not dolsot's */
	SIGN_TRUNCATED,         /* cut short: too few bytes for a trailer, or its
	                         * magic cut */
	SIGN_MISMATCH,          /* changed, moved from another id, or another key */
};

/*
 * Check a stored session (blob and trailer, n bytes in all) of id.  When
 * SIGN_OK, the blob is the first n - *trailer bytes, and *meta what the
 * trailer signed (seq 0 and sandboxed false for version 1, which signs
 * neither); otherwise *trailer is 0 and *meta zero.  The bytes are anyone's:
 * nothing past n is read.
 */
enum sign_verdict sign_verify(const struct sign_key *key, const char *id,
                              const uint8_t *stored, size_t n, struct sign_meta *meta,
                              size_t *trailer);

/* The size of the trailer stored[0..n) ends with, by its magic alone (0:
 * none), for a reader that only looks (collecting units): nothing is
 * verified. */
size_t sign_trailer_size(const uint8_t *stored, size_t n);

/* What a verdict other than SIGN_OK means, for "session 'ID' cannot be
 * loaded: ..." */
const char *sign_verdict_reason(enum sign_verdict v);

/* HMAC-SHA256 of msg under a raw key (the building block, exposed for the
 * RFC 4231 tests). */
void sign_hmac(const uint8_t *k, size_t klen, const uint8_t *msg, size_t n,
               uint8_t out[SIGN_MAC_LEN]);

#endif
