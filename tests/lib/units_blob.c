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
	const char *text;
	bool packed;
};

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

	sha256_bytes(text, strlen(text), h);
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
		sha256_bytes(units[i], strlen(units[i]), r[i].hash);
		r[i].text = units[i];
		r[i].packed = !packed || packed[i];
	}
	qsort(r, n, sizeof(*r), by_hash);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || memcmp(r[m - 1].hash, r[i].hash, UNITS_HASH_LEN) != 0)
			r[m++] = r[i];
		else
			r[m - 1].packed |= r[i].packed;
	total = 5 + 8 + ilen + 4 + 4 + m * UNITS_REF_LEN;
	for (size_t i = 0; i < m; i++)
		if (r[i].packed)
			total += UNITS_REF_LEN + strlen(r[i].text);
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
		units_entry_prefix(r[i].hash, strlen(r[i].text), p);
		p += UNITS_REF_LEN;
	}
	for (size_t i = 0; i < m; i++)
		if (r[i].packed) {
			units_entry_prefix(r[i].hash, strlen(r[i].text), p);
			p += UNITS_REF_LEN;
			put(&p, r[i].text, strlen(r[i].text));
		}
	free(r);
	*len = total;
	return blob;
}
