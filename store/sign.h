/*
 * sign.h - signed sessions: the session key, and the HMAC-SHA256 trailer
 * every stored session carries.
 *
 * A session pickle runs code when it is loaded, so a store that others can
 * write to would let them run code as every user of it.  Each stored
 * session is therefore the worker's blob followed by SIGN_TRAILER bytes:
 *
 *     MAC       32 bytes, HMAC-SHA256 under the session key over
 *               "dolsot session v1" NUL, the session id, NUL, the blob
 *     MAGIC     8 bytes, "DLSSIG" 0x01 0x00 (0x01: this trailer's version)
 *
 * The id is inside the MAC, so a blob moved to another id does not verify.
 * store.c signs what the worker wrote and verifies (in constant time)
 * before any of it reaches a worker; the worker never sees the trailer.
 */
#ifndef DOLSOT_SIGN_H
#define DOLSOT_SIGN_H

#include <stddef.h>
#include <stdint.h>

#define SIGN_MAC_LEN 32
#define SIGN_TRAILER 40         /* MAC + magic */
#define SIGN_KEY_MIN 32         /* bytes of the shortest key accepted */
#define SIGN_KEY_MAX 1024       /* and of the longest */
#define SIGN_KEY_FILE ".session.key"
#define SIGN_ERR_MAX 512

/* The session key, as HMAC's padded key block; see sign_key_open. */
struct sign_key {
	uint8_t block[64];
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

/* The trailer (SIGN_TRAILER bytes) of blob[0..n) stored under id. */
void sign_trailer(const struct sign_key *key, const char *id, const uint8_t *blob,
                  size_t n, uint8_t out[SIGN_TRAILER]);

enum sign_verdict {
	SIGN_OK,                /* signed with this key for this id */
	SIGN_UNSIGNED,          /* no trailer: an older dolsot's, or not dolsot's */
	SIGN_MISMATCH,          /* changed, moved from another id, or another key */
};

/* Check a stored session (blob and trailer, n bytes in all) of id; the
 * blob is the first n - SIGN_TRAILER bytes when SIGN_OK. */
enum sign_verdict sign_verify(const struct sign_key *key, const char *id,
                              const uint8_t *stored, size_t n);

/* What a verdict other than SIGN_OK means, for "session 'ID' cannot be
 * loaded: ..." */
const char *sign_verdict_reason(enum sign_verdict v);

/* HMAC-SHA256 of msg under a raw key (the building block, exposed for the
 * RFC 4231 tests). */
void sign_hmac(const uint8_t *k, size_t klen, const uint8_t *msg, size_t n,
               uint8_t out[SIGN_MAC_LEN]);

#endif
