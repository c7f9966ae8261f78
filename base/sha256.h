/*
 * sha256.h - SHA-256 of bytes in pieces: the one home of the hash that
 * names a session's units (session format v4).
 */
#ifndef DOLSOT_SHA256_H
#define DOLSOT_SHA256_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SHA256_LEN 32

/* The hash of the n pieces v[] back to back, into out. */
void sha256_parts(const struct iovec *v, size_t n, uint8_t out[SHA256_LEN]);

static inline void sha256_bytes(const void *p, size_t len, uint8_t out[SHA256_LEN])
{
	struct iovec v = { (void *)p, len };

	sha256_parts(&v, 1, out);
}

#endif
