/*
 * units.c - session format v4's head and pack, parsed (units.h).
 */
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "le.h"

static const uint8_t magic_v4[] = "DLSS\004";

/* A read position in untrusted bytes. */
struct cursor {
	const uint8_t *p;
	size_t len, off;
};

/* The next n bytes, or NULL when fewer remain. */
static const uint8_t *take(struct cursor *c, uint64_t n)
{
	const uint8_t *at = c->p + c->off;

	if (n > (uint64_t)(c->len - c->off))
		return NULL;
	c->off += (size_t)n;
	return at;
}

bool units_is_v4(const uint8_t *p, size_t len)
{
	return len >= UNITS_MAGIC_LEN && memcmp(p, magic_v4, UNITS_MAGIC_LEN) == 0;
}

void units_hex(const uint8_t *hash, char out[UNITS_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < UNITS_HASH_LEN; i++) {
		out[2 * i] = digits[hash[i] >> 4];
		out[2 * i + 1] = digits[hash[i] & 15];
	}
	out[UNITS_HEX_LEN] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int units_unhex(const char *s, size_t len, uint8_t out[UNITS_HASH_LEN])
{
	if (len != UNITS_HEX_LEN)
		return -1;
	for (size_t i = 0; i < UNITS_HASH_LEN; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void units_entry_prefix(const uint8_t *hash, uint64_t size, uint8_t out[UNITS_REF_LEN])
{
	memcpy(out, hash, UNITS_HASH_LEN);
	le_put_u64(out + UNITS_HASH_LEN, size);
}

void units_ref(const struct units_head *h, uint32_t i, struct units_entry *e)
{
	const uint8_t *r = h->refs + (size_t)i * UNITS_REF_LEN;

	e->hash = r;
	e->size = le_get_u64(r + UNITS_HASH_LEN);
	e->bytes = NULL;
}

long units_search(const void *base, size_t n, size_t stride, const uint8_t *hash)
{
	const uint8_t *v = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(v + mid * stride, hash, UNITS_HASH_LEN);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

long units_find(const struct units_head *h, const uint8_t *hash)
{
	return units_search(h->refs, h->nrefs, UNITS_REF_LEN, hash);
}

/* The ref table at c's position: its count, its extent, its order. */
static int parse_refs(struct cursor *c, struct units_head *h, char *err, size_t errlen)
{
	const uint8_t *q = take(c, 4);
	struct units_entry e;

	if (!q) {
		snprintf(err, errlen, "the head ends before its ref count");
		return -1;
	}
	h->nrefs = le_get_u32(q);
	if (h->nrefs > UNITS_MAX_REFS) {
		snprintf(err, errlen, "%" PRIu32 " refs, over the most of %u", h->nrefs,
		         UNITS_MAX_REFS);
		return -1;
	}
	h->refs = take(c, (uint64_t)h->nrefs * UNITS_REF_LEN);
	if (!h->refs) {
		snprintf(err, errlen, "the head ends inside its %" PRIu32 " refs", h->nrefs);
		return -1;
	}
	h->refs_size = 0;
	for (uint32_t i = 0; i < h->nrefs; i++) {
		if (i && memcmp(h->refs + (size_t)(i - 1) * UNITS_REF_LEN,
		                h->refs + (size_t)i * UNITS_REF_LEN, UNITS_HASH_LEN) >= 0) {
			snprintf(err, errlen, "ref %" PRIu32 " is out of order or repeated", i);
			return -1;
		}
		units_ref(h, i, &e);
		h->refs_size = e.size > UINT64_MAX - h->refs_size ? UINT64_MAX
		                                                   : h->refs_size + e.size;
	}
	return 0;
}

int units_parse_head(const uint8_t *p, size_t len, struct units_head *h, char *err,
                     size_t errlen)
{
	struct cursor c = { p, len, 0 };
	const uint8_t *q;

	memset(h, 0, sizeof(*h));
	if (!units_is_v4(p, len)) {
		snprintf(err, errlen, "not a version 4 session");
		return -1;
	}
	c.off = UNITS_MAGIC_LEN;
	q = take(&c, 8);
	if (!q || !take(&c, le_get_u64(q))) {
		snprintf(err, errlen, "the head ends inside its index");
		return -1;
	}
	q = take(&c, 4);
	if (!q || !take(&c, le_get_u32(q))) {
		snprintf(err, errlen, "the head ends inside its module record");
		return -1;
	}
	if (parse_refs(&c, h, err, errlen) < 0)
		return -1;
	h->head_len = c.off;
	h->pack = p + c.off;
	h->pack_len = len - c.off;
	return 0;
}

/* The pack entry at *off: its extent only. */
static int entry_at(const struct units_head *h, size_t *off, struct units_entry *e)
{
	struct cursor c = { h->pack, h->pack_len, *off };
	const uint8_t *q = take(&c, UNITS_REF_LEN);

	if (!q)
		return -1;
	e->hash = q;
	e->size = le_get_u64(q + UNITS_HASH_LEN);
	e->bytes = take(&c, e->size);
	if (!e->bytes)
		return -1;
	*off = c.off;
	return 0;
}

/* Each entry whole, named by a ref of its size, none twice. */
static int check_pack(struct units_head *h, uint8_t *seen, char *err, size_t errlen)
{
	struct units_entry e;
	char hex[UNITS_HEX_LEN + 1];
	size_t off = 0;

	while (off < h->pack_len) {
		long i;

		if (entry_at(h, &off, &e) < 0) {
			snprintf(err, errlen, "pack entry %zu runs past the end", h->npack);
			return -1;
		}
		i = units_find(h, e.hash);
		units_hex(e.hash, hex);
		if (i < 0) {
			snprintf(err, errlen, "pack entry %s is not among the refs", hex);
			return -1;
		}
		if (le_get_u64(h->refs + (size_t)i * UNITS_REF_LEN + UNITS_HASH_LEN) != e.size) {
			snprintf(err, errlen, "pack entry %s is not its ref's size", hex);
			return -1;
		}
		if (seen[i / 8] & (1u << (i % 8))) {
			snprintf(err, errlen, "pack entry %s is there twice", hex);
			return -1;
		}
		seen[i / 8] |= (uint8_t)(1u << (i % 8));
		h->npack++;
	}
	return 0;
}

int units_parse(const uint8_t *p, size_t len, struct units_head *h, char *err,
                size_t errlen)
{
	uint8_t *seen;
	int ret;

	if (units_parse_head(p, len, h, err, errlen) < 0)
		return -1;
	if (!h->pack_len)
		return 0;
	seen = calloc((size_t)h->nrefs / 8 + 1, 1);
	if (!seen) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ret = check_pack(h, seen, err, errlen);
	free(seen);
	return ret;
}

int units_pack_next(const struct units_head *h, size_t *off, struct units_entry *e)
{
	if (*off >= h->pack_len)
		return 0;
	return entry_at(h, off, e) == 0 ? 1 : 0;
}
