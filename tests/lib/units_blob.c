/*
 * units_blob.c - version 4 session blobs for tests (units_blob.h).
 */
#include "units_blob.h"

#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "sha256.h"
#include "units.h"

struct ub_ref {
	uint8_t hash[UNITS_HASH_LEN];
	uint8_t *bytes;
	size_t size;
	bool packed;
};

#define SMALL "small:"

uint8_t *units_blob_unit(const char *text, size_t *size)
{
	size_t n = strlen(text), want = strncmp(text, SMALL, strlen(SMALL)) == 0 ? n
	           : n < UNITS_INLINE_MAX ? UNITS_INLINE_MAX : n;
	uint8_t *b = malloc(want + 1);

	if (!b)
		abort();
	memcpy(b, text, n);
	memset(b + n, '.', want - n);
	*size = want;
	return b;
}

static int by_hash(const void *a, const void *b)
{
	return memcmp(((const struct ub_ref *)a)->hash, ((const struct ub_ref *)b)->hash,
	              UNITS_HASH_LEN);
}

static void put(uint8_t **p, const void *src, size_t n)
{
	memcpy(*p, src, n);
	*p += n;
}

void units_blob_hex(const char *text, char *hex)
{
	uint8_t h[UNITS_HASH_LEN];
	size_t n;
	uint8_t *b = units_blob_unit(text, &n);

	sha256_bytes(b, n, h);
	free(b);
	units_hex(h, hex);
}

uint8_t *units_blob(const char *index, const char *const *units, size_t n,
                    const bool *packed, size_t *len)
{
	struct ub_ref *r = calloc(n + 1, sizeof(*r));
	size_t m = 0, total, ilen = strlen(index);
	uint8_t *blob, *p, num[8];

	if (!r)
		abort();
	for (size_t i = 0; i < n; i++) {
		r[i].bytes = units_blob_unit(units[i], &r[i].size);
		sha256_bytes(r[i].bytes, r[i].size, r[i].hash);
		r[i].packed = !packed || packed[i];
	}
	qsort(r, n, sizeof(*r), by_hash);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || memcmp(r[m - 1].hash, r[i].hash, UNITS_HASH_LEN) != 0) {
			r[m++] = r[i];
		} else {
			r[m - 1].packed |= r[i].packed;
			free(r[i].bytes);
		}
	total = 5 + 8 + ilen + 4 + 4 + m * UNITS_REF_LEN;
	for (size_t i = 0; i < m; i++)
		if (r[i].packed)
			total += UNITS_REF_LEN + r[i].size;
	blob = malloc(total);
	if (!blob)
		abort();
	p = blob;
	put(&p, "DLSS\004", 5);
	le_put_u64(num, ilen);
	put(&p, num, 8);
	put(&p, index, ilen);
	le_put_u32(num, 0);
	put(&p, num, 4);
	le_put_u32(num, (uint32_t)m);
	put(&p, num, 4);
	for (size_t i = 0; i < m; i++) {
		units_entry_prefix(r[i].hash, r[i].size, p);
		p += UNITS_REF_LEN;
	}
	for (size_t i = 0; i < m; i++)
		if (r[i].packed) {
			units_entry_prefix(r[i].hash, r[i].size, p);
			p += UNITS_REF_LEN;
			put(&p, r[i].bytes, r[i].size);
		}
	for (size_t i = 0; i < m; i++)
		free(r[i].bytes);
	free(r);
	*len = total;
	return blob;
}
