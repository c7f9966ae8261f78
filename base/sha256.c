/*
 * sha256.c - SHA-256 through libcrypto's low-level calls, as sign.c's
 * HMAC: they take SHA-NI where the CPU has it, with none of EVP's
 * per-call setup.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "sha256.h"

#include <openssl/sha.h>

void sha256_parts(const struct iovec *v, size_t n, uint8_t out[SHA256_LEN])
{
	SHA256_CTX c;

	SHA256_Init(&c);
	for (size_t i = 0; i < n; i++)
		SHA256_Update(&c, v[i].iov_base, v[i].iov_len);
	SHA256_Final(out, &c);
}
