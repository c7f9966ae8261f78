/*
 * check_units.c - session format v4's parser (store/units.c): good heads
 * with and without packs, every kind of damage, SHA-256 and hex.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "le.h"
#include "sha256.h"
#include "units.h"
#include "units_blob.h"

static char err[UNITS_ERR_MAX];
#define ERR err, sizeof(err)

/* Units as they are ("small:": units_blob pads no other). */
static const char *const three[] = { "small:alpha", "small:beta", "small:gamma" };

/* Offset of the ref count in a blob units_blob made with index idx. */
static size_t refs_at(const char *idx)
{
	return 5 + 8 + strlen(idx) + 4;
}

START_TEST(test_sha256_and_hex)
{
	uint8_t h[UNITS_HASH_LEN];
	char hex[UNITS_HEX_LEN + 1];

	sha256_bytes("abc", 3, h);
	units_hex(h, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_bytes("", 0, h);
	units_hex(h, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_good_head_without_pack)
{
	bool none[3] = { false, false, false };
	size_t len;
	uint8_t *b = units_blob("IDX", three, 3, none, &len);
	struct units_head h;
	struct units_entry e;
	char hex[UNITS_HEX_LEN + 1];

	ck_assert(units_is_v4(b, len));
	ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	ck_assert_uint_eq(h.head_len, len);
	ck_assert_uint_eq(h.nrefs, 3);
	ck_assert_uint_eq(h.refs_size, 11 + 10 + 11);
	ck_assert_uint_eq(h.pack_len, 0);
	ck_assert_uint_eq(h.npack, 0);
	for (uint32_t i = 0; i < 3; i++) {
		units_ref(&h, i, &e);
		ck_assert_int_eq(units_find(&h, e.hash), (long)i);
	}
	units_blob_hex("small:beta", hex);
	units_ref(&h, (uint32_t)units_find(&h, h.refs + UNITS_REF_LEN), &e);
	ck_assert(e.size == 10 || e.size == 11);
	ck_assert_int_eq(units_find(&h, (const uint8_t *)"0123456789abcdef0123456789abcdef"), -1);
	free(b);
}
END_TEST

START_TEST(test_good_head_with_pack)
{
	bool some[3] = { true, false, true };
	size_t len, off = 0, n = 0;
	uint8_t *b = units_blob("", three, 3, some, &len), h2[UNITS_HASH_LEN];
	struct units_head h;
	struct units_entry e;

	ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	ck_assert_uint_eq(h.npack, 2);
	ck_assert_uint_eq(h.head_len + h.pack_len, len);
	while (units_pack_next(&h, &off, &e)) {
		sha256_bytes(e.bytes, e.size, h2);
		ck_assert_mem_eq(h2, e.hash, UNITS_HASH_LEN);
		ck_assert(memcmp(e.bytes, "small:alpha", 11) == 0 ||
		          memcmp(e.bytes, "small:gamma", 11) == 0);
		n++;
	}
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(off, h.pack_len);
	free(b);
}
END_TEST

START_TEST(test_empty_refs_and_head_only)
{
	size_t len;
	uint8_t *b = units_blob("x", NULL, 0, NULL, &len), *grown;
	struct units_head h;

	ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	ck_assert_uint_eq(h.nrefs, 0);
	/* Anything after a head: units_parse_head leaves it unread. */
	grown = realloc(b, len + 7);
	ck_assert_ptr_nonnull(grown);
	memcpy(grown + len, "trailer", 7);
	ck_assert_int_eq(units_parse_head(grown, len + 7, &h, ERR), 0);
	ck_assert_uint_eq(h.head_len, len);
	ck_assert_uint_eq(h.pack_len, 7);
	ck_assert_int_eq(units_parse(grown, len + 7, &h, ERR), -1);
	ck_assert_str_eq(err, "pack entry 0 runs past the end");
	free(grown);
}
END_TEST

START_TEST(test_not_v4)
{
	struct units_head h;

	ck_assert(!units_is_v4((const uint8_t *)"DLSS\003", 5));
	ck_assert(!units_is_v4((const uint8_t *)"DLSS", 4));
	ck_assert_int_eq(units_parse((const uint8_t *)"DLSS\003xxxxxxxxxxxx", 17, &h, ERR), -1);
	ck_assert_str_eq(err, "not a version 4 session");
	ck_assert_int_eq(units_parse((const uint8_t *)"", 0, &h, ERR), -1);
}
END_TEST

/* Every cut of a good blob with a pack is refused, but at the head's end
 * and between entries (a shorter pack). */
START_TEST(test_every_truncation)
{
	size_t len, ends[4], nends = 0, off = 0;
	uint8_t *b = units_blob("index", three, 3, NULL, &len);
	struct units_head h;
	struct units_entry e;

	ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	ends[nends++] = h.head_len;
	while (units_pack_next(&h, &off, &e))
		ends[nends++] = h.head_len + off;
	ck_assert_uint_eq(nends, 4);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		bool boundary = false;

		for (size_t i = 0; i < nends; i++)
			boundary |= cut == ends[i];
		memcpy(copy, b, cut);
		if (boundary)
			ck_assert_int_eq(units_parse(copy, cut, &h, ERR), 0);
		else
			ck_assert_msg(units_parse(copy, cut, &h, ERR) == -1, "cut %zu", cut);
		free(copy);
		ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	}
	free(b);
}
END_TEST

START_TEST(test_huge_lengths)
{
	size_t len;
	uint8_t *b = units_blob("ab", three, 3, NULL, &len);
	struct units_head h;

	le_put_u64(b + 5, UINT64_MAX);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "the head ends inside its index");
	le_put_u64(b + 5, 2);
	le_put_u32(b + 5 + 8 + 2, UINT32_MAX);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "the head ends inside its module record");
	le_put_u32(b + 5 + 8 + 2, 0);
	le_put_u32(b + refs_at("ab"), UNITS_MAX_REFS + 1);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "1048577 refs, over the most of 1048576");
	le_put_u32(b + refs_at("ab"), UNITS_MAX_REFS);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "the head ends inside its 1048576 refs");
	le_put_u32(b + refs_at("ab"), 3);
	/* A pack entry claiming more bytes than there are. */
	le_put_u64(b + refs_at("ab") + 4 + 3 * UNITS_REF_LEN + UNITS_HASH_LEN, UINT64_MAX);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "pack entry 0 runs past the end");
	free(b);
}
END_TEST

START_TEST(test_refs_out_of_order_or_repeated)
{
	size_t len, at = refs_at("");
	uint8_t *b = units_blob("", three, 3, NULL, &len), tmp[UNITS_REF_LEN];
	struct units_head h;

	memcpy(tmp, b + at + 4, UNITS_REF_LEN);
	memcpy(b + at + 4, b + at + 4 + UNITS_REF_LEN, UNITS_REF_LEN);
	memcpy(b + at + 4 + UNITS_REF_LEN, tmp, UNITS_REF_LEN);
	ck_assert_int_eq(units_parse_head(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "ref 1 is out of order or repeated");
	memcpy(b + at + 4 + UNITS_REF_LEN, b + at + 4, UNITS_REF_LEN);
	ck_assert_int_eq(units_parse_head(b, len, &h, ERR), -1);
	ck_assert_str_eq(err, "ref 1 is out of order or repeated");
	free(b);
}
END_TEST

START_TEST(test_pack_damage)
{
	static const char *const one[] = { "small:only" };
	bool no[1] = { false };
	size_t hl, len, olen;
	uint8_t *head = units_blob("", one, 1, no, &hl);
	uint8_t *other = units_blob("", (const char *const[]){ "small:stranger" }, 1, NULL, &olen);
	uint8_t *b, entry[UNITS_REF_LEN + 10];
	struct units_head h;
	char hex[UNITS_HEX_LEN + 1], want[UNITS_ERR_MAX];

	/* An entry twice. */
	sha256_bytes("small:only", 10, entry);
	units_entry_prefix(entry, 10, entry);
	memcpy(entry + UNITS_REF_LEN, "small:only", 10);
	len = hl + 2 * sizeof(entry);
	b = malloc(len);
	memcpy(b, head, hl);
	memcpy(b + hl, entry, sizeof(entry));
	memcpy(b + hl + sizeof(entry), entry, sizeof(entry));
	units_blob_hex("small:only", hex);
	ck_assert_int_eq(units_parse(b, hl + sizeof(entry), &h, ERR), 0);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), -1);
	snprintf(want, sizeof(want), "pack entry %s is there twice", hex);
	ck_assert_str_eq(err, want);
	/* Its size not its ref's. */
	le_put_u64(b + hl + UNITS_HASH_LEN, 3);
	ck_assert_int_eq(units_parse(b, hl + sizeof(entry) - 1, &h, ERR), -1);
	snprintf(want, sizeof(want), "pack entry %s is not its ref's size", hex);
	ck_assert_str_eq(err, want);
	/* An entry no ref names. */
	free(b);
	len = hl + (olen - (olen - hl) + 0);
	b = malloc(hl + (olen - (5 + 8 + 4 + 4 + UNITS_REF_LEN)));
	memcpy(b, head, hl);
	memcpy(b + hl, other + 5 + 8 + 4 + 4 + UNITS_REF_LEN,
	       olen - (5 + 8 + 4 + 4 + UNITS_REF_LEN));
	units_blob_hex("small:stranger", hex);
	ck_assert_int_eq(units_parse(b, hl + (olen - (5 + 8 + 4 + 4 + UNITS_REF_LEN)), &h,
	                             ERR), -1);
	snprintf(want, sizeof(want), "pack entry %s is not among the refs", hex);
	ck_assert_str_eq(err, want);
	(void)len;
	free(b);
	free(head);
	free(other);
}
END_TEST

START_TEST(test_refs_size_saturates)
{
	static const char *const two[] = { "a", "b" };
	size_t len, at = refs_at("");
	uint8_t *b = units_blob("", two, 2, (bool[]){ false, false }, &len);
	struct units_head h;

	le_put_u64(b + at + 4 + UNITS_HASH_LEN, UINT64_MAX - 1);
	le_put_u64(b + at + 4 + UNITS_REF_LEN + UNITS_HASH_LEN, 5);
	ck_assert_int_eq(units_parse(b, len, &h, ERR), 0);
	ck_assert(h.refs_size == UINT64_MAX);
	free(b);
}
END_TEST

static Suite *units_suite(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, test_sha256_and_hex);
	tcase_add_test(tc, test_good_head_without_pack);
	tcase_add_test(tc, test_good_head_with_pack);
	tcase_add_test(tc, test_empty_refs_and_head_only);
	tcase_add_test(tc, test_not_v4);
	tcase_add_test(tc, test_every_truncation);
	tcase_add_test(tc, test_huge_lengths);
	tcase_add_test(tc, test_refs_out_of_order_or_repeated);
	tcase_add_test(tc, test_pack_damage);
	tcase_add_test(tc, test_refs_size_saturates);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(units_suite());
}
