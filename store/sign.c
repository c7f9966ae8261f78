/*
 * sign.c - signed sessions: HMAC-SHA256 trailers and the session key.
 *
 * HMAC (RFC 2104) is built here on libcrypto's SHA-256 rather than taken
 * from its EVP_MAC: fetching a MAC through OpenSSL 3's providers costs
 * 1-2 ms in every fresh process (each call of dolsot is one), twenty
 * times the budget of signing a small session, while the SHA-256 below is
 * the same assembly without that start-up.  tests/check_sign.c holds it to
 * the RFC 4231 vectors.  Comparisons of MACs are constant time
 * (CRYPTO_memcmp).
 *
 * The key file MUSTs: it is opened with O_NOFOLLOW, checked on the fd it
 * is read from (a regular file of ours, no group or other permission), and
 * created whole under a temp name (O_CREAT|O_EXCL, mode 0600) that is then
 * linked to its name, so a reader never sees half a key and two first
 * calls racing keep the one that linked first.
 */
#define OPENSSL_SUPPRESS_DEPRECATED   /* SHA256_Init & co.: see above */
#include "sign.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "fdio.h"
#include "le.h"

#define KEY_BYTES ((size_t)32)  /* random bytes of a key dolsot makes (64 hex) */
#define DOMAIN_V1 "dolsot session v1"
#define DOMAIN_V2 "dolsot session v2"
#define MAGIC_STEM 6            /* "DLSSIG", then the version and a zero */

static const uint8_t magic_v1[SIGN_MAGIC_LEN] = { 'D', 'L', 'S', 'S', 'I', 'G', 1, 0 };
static const uint8_t magic_v2[SIGN_MAGIC_LEN] = { 'D', 'L', 'S', 'S', 'I', 'G', 2, 0 };

/* The padded key block K0 of RFC 2104. */
static void key_block(const uint8_t *k, size_t klen, uint8_t block[64])
{
	SHA256_CTX c;

	memset(block, 0, 64);
	if (klen > 64) {
		/* Not SHA256(): OpenSSL 3's one-shot goes through EVP and would
		 * link in its providers (4 MB). */
		SHA256_Init(&c);
		SHA256_Update(&c, k, klen);
		SHA256_Final(block, &c);
	} else {
		memcpy(block, k, klen);
	}
}

/* The two contexts after the padded key, for one MAC. */
static void hmac_begin(const uint8_t block[64], SHA256_CTX *in, SHA256_CTX *out)
{
	uint8_t pad[64];

	for (int i = 0; i < 64; i++)
		pad[i] = block[i] ^ 0x36;
	SHA256_Init(in);
	SHA256_Update(in, pad, sizeof(pad));
	for (int i = 0; i < 64; i++)
		pad[i] = block[i] ^ 0x5c;
	SHA256_Init(out);
	SHA256_Update(out, pad, sizeof(pad));
	OPENSSL_cleanse(pad, sizeof(pad));
}

static void hmac_end(SHA256_CTX *in, SHA256_CTX *out, uint8_t mac[SIGN_MAC_LEN])
{
	uint8_t inner[SHA256_DIGEST_LENGTH];

	SHA256_Final(inner, in);
	SHA256_Update(out, inner, sizeof(inner));
	SHA256_Final(mac, out);
}

void sign_hmac(const uint8_t *k, size_t klen, const uint8_t *msg, size_t n,
               uint8_t out[SIGN_MAC_LEN])
{
	uint8_t block[64];
	SHA256_CTX in, outer;

	key_block(k, klen, block);
	hmac_begin(block, &in, &outer);
	SHA256_Update(&in, msg, n);
	hmac_end(&in, &outer, out);
	OPENSSL_cleanse(block, sizeof(block));
}

/* The MAC of blob[0..n) under id, in the domain of a trailer version, with
 * meta (NULL for version 1) after the blob. */
static void session_mac(const struct sign_key *key, const char *domain, const char *id,
                        const uint8_t *blob, size_t n, const uint8_t *meta,
                        uint8_t mac[SIGN_MAC_LEN])
{
	SHA256_CTX in, out;

	hmac_begin(key->block, &in, &out);
	SHA256_Update(&in, domain, strlen(domain) + 1);   /* with its NUL */
	SHA256_Update(&in, id, strlen(id) + 1);           /* ids hold no NUL */
	SHA256_Update(&in, blob, n);
	if (meta)
		SHA256_Update(&in, meta, SIGN_META_LEN);
	hmac_end(&in, &out, mac);
}

void sign_trailer(const struct sign_key *key, const char *id, const uint8_t *blob,
                  size_t n, const struct sign_meta *meta, uint8_t out[SIGN_TRAILER])
{
	memset(out, 0, SIGN_META_LEN);
	le_put_u64(out, meta->seq);
	out[8] = meta->sandboxed ? 1 : 0;
	session_mac(key, DOMAIN_V2, id, blob, n, out, out + SIGN_META_LEN);
	memcpy(out + SIGN_META_LEN + SIGN_MAC_LEN, magic_v2, sizeof(magic_v2));
}

/* Whether stored[0..n) ends with a proper prefix of a magic (its first
 * bytes at least), as a trailer cut short does. */
static bool magic_cut(const uint8_t *stored, size_t n)
{
	for (size_t k = SIGN_MAGIC_LEN - 1; k >= 1; k--) {
		if (n < k || memcmp(stored + n - k, magic_v2, k < MAGIC_STEM ? k : MAGIC_STEM) != 0)
			continue;
		if (k <= MAGIC_STEM || stored[n - 1] == 1 || stored[n - 1] == 2)
			return true;
	}
	return false;
}

enum sign_verdict sign_verify(const struct sign_key *key, const char *id,
                              const uint8_t *stored, size_t n, struct sign_meta *meta,
                              size_t *trailer)
{
	uint8_t mac[SIGN_MAC_LEN];
	const uint8_t *end = stored + n - SIGN_MAGIC_LEN;
	size_t blob;

	memset(meta, 0, sizeof(*meta));
	*trailer = 0;
	if (n >= SIGN_TRAILER && memcmp(end, magic_v2, SIGN_MAGIC_LEN) == 0) {
		blob = n - SIGN_TRAILER;
		session_mac(key, DOMAIN_V2, id, stored, blob, stored + blob, mac);
		if (CRYPTO_memcmp(mac, stored + blob + SIGN_META_LEN, SIGN_MAC_LEN) != 0)
			return SIGN_MISMATCH;
		meta->seq = le_get_u64(stored + blob);
		meta->sandboxed = stored[blob + 8] != 0;   /* any other value: the safe side */
		*trailer = SIGN_TRAILER;
		return SIGN_OK;
	}
	if (n >= SIGN_TRAILER_V1 && memcmp(end, magic_v1, SIGN_MAGIC_LEN) == 0) {
		blob = n - SIGN_TRAILER_V1;
		session_mac(key, DOMAIN_V1, id, stored, blob, NULL, mac);
		if (CRYPTO_memcmp(mac, stored + blob, SIGN_MAC_LEN) != 0)
			return SIGN_MISMATCH;
		*trailer = SIGN_TRAILER_V1;
		return SIGN_OK;
	}
	if (n < SIGN_TRAILER_V1 || magic_cut(stored, n))
		return SIGN_TRUNCATED;
	return SIGN_UNSIGNED;
}

size_t sign_trailer_size(const uint8_t *stored, size_t n)
{
	const uint8_t *end = stored + n - SIGN_MAGIC_LEN;

	if (n >= SIGN_TRAILER && memcmp(end, magic_v2, SIGN_MAGIC_LEN) == 0)
		return SIGN_TRAILER;
	if (n >= SIGN_TRAILER_V1 && memcmp(end, magic_v1, SIGN_MAGIC_LEN) == 0)
		return SIGN_TRAILER_V1;
	return 0;
}

const char *sign_verdict_reason(enum sign_verdict v)
{
	switch (v) {
	case SIGN_UNSIGNED:
		return "it carries no signature (it was written before dolsot signed "
		       "sessions, or not by dolsot), so it was not loaded";
	case SIGN_TRUNCATED:
		return "it is truncated (its stored bytes end before the end of its "
		       "signature), so it was not loaded";
	case SIGN_MISMATCH:
		return "its signature does not match (the bytes were changed, copied from "
		       "another session, or signed with another key: see DOLSOT_SESSION_KEY), "
		       "so it was not loaded";
	case SIGN_OK:
	default:
		return "it is signed";
	}
}

int sign_key_inline(const char *spec)
{
	return spec && spec[0] && spec[0] != '/';
}

static int set_key(const uint8_t *k, size_t n, const char *what, struct sign_key *key,
                   char *err, size_t errlen)
{
	if (n < SIGN_KEY_MIN || n > SIGN_KEY_MAX) {
		snprintf(err, errlen, "%s must hold %d to %d bytes of key, not %zu", what,
		         SIGN_KEY_MIN, SIGN_KEY_MAX, n);
		return -1;
	}
	key_block(k, n, key->block);
	return 0;
}

/* Read the key file name (in dirfd, or a path); -1 with errno ENOENT
 * when it does not exist. */
static int read_key_file(int dirfd, const char *name, const char *shown,
                         struct sign_key *key, char *err, size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY), errsv;
	struct stat st;
	uint8_t *text = NULL;
	size_t n = 0;
	int ret = -1;

	if (fd < 0) {
		errsv = errno;
		snprintf(err, errlen, "cannot open the session key file %s: %s", shown,
		         errsv == ELOOP ? "it is a symbolic link" : strerror(errsv));
		errno = errsv;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat the session key file %s: %s", shown,
		         strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the session key file %s is not a regular file", shown);
	} else if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "the session key file %s is not owned by uid %u",
		         shown, (unsigned)geteuid());
	} else if (st.st_mode & 077) {
		snprintf(err, errlen, "the session key file %s grants group or other "
		         "permissions (mode %03o): make it 0600", shown,
		         (unsigned)(st.st_mode & 0777));
	} else if (st.st_size > SIGN_KEY_MAX + 2) {
		snprintf(err, errlen, "the session key file %s is longer than %d bytes",
		         shown, SIGN_KEY_MAX);
	} else if (fd_read_all(fd, (size_t)st.st_size, &text, &n) < 0) {
		snprintf(err, errlen, "cannot read the session key file %s: %s", shown,
		         strerror(errno));
	} else {
		if (n && text[n - 1] == '\n')
			n--;
		ret = set_key(text, n, "the session key file", key, err, errlen);
		key->made = st.st_mtim;
		OPENSSL_cleanse(text, n);
	}
	free(text);
	errsv = errno;
	close(fd);
	errno = ret < 0 && errsv == ENOENT ? EIO : errsv;   /* ENOENT: only "absent" */
	return ret;
}

/* Make SIGN_KEY_FILE in dirfd with a fresh key, unless one is there:
 * 1 when ours is the one linked, 0 when another was there first. */
static int make_key_file(int dirfd, char *err, size_t errlen)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[KEY_BYTES + 6];
	char text[2 * KEY_BYTES + 1], tmp[64];
	int fd, errsv, linked;
	const char *op = "getrandom";

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		goto fail;
	for (size_t i = 0; i < KEY_BYTES; i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 15];
	}
	text[2 * KEY_BYTES] = '\n';
	snprintf(tmp, sizeof(tmp), "%s.%02x%02x%02x%02x%02x%02x.new", SIGN_KEY_FILE,
	         raw[KEY_BYTES], raw[KEY_BYTES + 1], raw[KEY_BYTES + 2], raw[KEY_BYTES + 3],
	         raw[KEY_BYTES + 4], raw[KEY_BYTES + 5]);
	op = "create";
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	op = "write";
	if (fd_write_all(fd, text, sizeof(text)) < 0 || (op = "fsync", fsync(fd) < 0)) {
		fd_close(&fd);
		unlinkat(dirfd, tmp, 0);
		goto fail;
	}
	close(fd);
	/* The first link wins; a racing call's key is dropped unused. */
	linked = linkat(dirfd, tmp, dirfd, SIGN_KEY_FILE, 0);
	errsv = errno;
	unlinkat(dirfd, tmp, 0);
	OPENSSL_cleanse(text, sizeof(text));
	OPENSSL_cleanse(raw, sizeof(raw));
	if (linked < 0 && errsv != EEXIST) {
		errno = errsv;
		op = "link";
		goto fail;
	}
	(void)fsync(dirfd);
	return linked == 0;
fail:
	errsv = errno;
	snprintf(err, errlen, "cannot make the session key file %s: %s: %s", SIGN_KEY_FILE,
	         op, strerror(errsv));
	errno = errsv;
	return -1;
}

int sign_key_open(const char *spec, int dirfd, struct sign_key *key, char *err,
                  size_t errlen)
{
	int made;

	memset(key, 0, sizeof(*key));
	if (sign_key_inline(spec))
		return set_key((const uint8_t *)spec, strlen(spec), "DOLSOT_SESSION_KEY", key,
		               err, errlen);
	if (spec && spec[0]) {
		int ret = read_key_file(AT_FDCWD, spec, spec, key, err, errlen);

		key->made = (struct timespec){ 0, 0 };   /* the caller's own file */
		return ret;
	}
	if (dirfd < 0) {
		snprintf(err, errlen, "this store has no directory to keep a session key "
		         "file in: set DOLSOT_SESSION_KEY");
		return -1;
	}
	if (read_key_file(dirfd, SIGN_KEY_FILE, SIGN_KEY_FILE, key, err, errlen) == 0)
		return 0;
	if (errno != ENOENT || (made = make_key_file(dirfd, err, errlen)) < 0)
		return -1;
	key->fresh = made == 1;
	return read_key_file(dirfd, SIGN_KEY_FILE, SIGN_KEY_FILE, key, err, errlen);
}
