/*
 * fuzz_sign.c - libFuzzer harness for the reading of a stored session's
 * trailer (sign.c's sign_verify: anyone who can write a store writes
 * these bytes) and of a recorded save counter (store_name_seq).
 *
 * Any bytes: a verdict is one of the four, never a read past the end; an
 * OK one leaves a blob and a trailer of a known version inside the bytes,
 * and a version 2 one is exactly what signing that blob with that meta
 * gives.  The bytes signed as a blob verify with their meta, and cut short
 * through the magic, or below any trailer, they are truncated.  A counter
 * text parses only when it is all digits, to the number it spells.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "sign.h"
#include "store_name.h"

#define KEY "a fuzzing key of at least thirty-two bytes"

static void check_stored(const struct sign_key *k, const uint8_t *data, size_t size)
{
	struct sign_meta meta;
	uint8_t again[SIGN_TRAILER];
	size_t trailer = 1;
	enum sign_verdict v = sign_verify(k, "s", data, size, &meta, &trailer);

	CHECK(v == SIGN_OK || v == SIGN_UNSIGNED || v == SIGN_TRUNCATED || v == SIGN_MISMATCH);
	if (v != SIGN_OK) {
		CHECK(trailer == 0 && meta.seq == 0 && !meta.sandboxed);
		return;
	}
	CHECK(trailer == SIGN_TRAILER || trailer == SIGN_TRAILER_V1);
	CHECK(trailer <= size);
	if (trailer == SIGN_TRAILER) {
		sign_trailer(k, "s", data, size - trailer, &meta, again);
		/* The reserved bytes and any origin byte but 0 and 1 are signed
		 * as stored: the same only when they were written as dolsot does. */
		if (memcmp(again, data + size - trailer, SIGN_META_LEN) == 0)
			CHECK(memcmp(again, data + size - trailer, SIGN_TRAILER) == 0);
	}
}

static void check_signed(const struct sign_key *k, const uint8_t *data, size_t size)
{
	struct sign_meta meta = { 0, false }, got;
	uint8_t *b = malloc(size + SIGN_TRAILER);
	size_t trailer;

	CHECK(b != NULL);
	for (size_t i = 0; i < size && i < 8; i++)
		meta.seq = meta.seq << 8 | data[i];
	meta.sandboxed = size && (data[size - 1] & 1);
	if (size)
		memcpy(b, data, size);
	sign_trailer(k, "s", b, size, &meta, b + size);
	CHECK(sign_verify(k, "s", b, size + SIGN_TRAILER, &got, &trailer) == SIGN_OK);
	CHECK(trailer == SIGN_TRAILER && got.seq == meta.seq && got.sandboxed == meta.sandboxed);
	CHECK(sign_verify(k, "t", b, size + SIGN_TRAILER, &got, &trailer) == SIGN_MISMATCH);
	for (size_t cut = 1; cut < SIGN_MAGIC_LEN; cut++)
		CHECK(sign_verify(k, "s", b, size + SIGN_TRAILER - cut, &got, &trailer) ==
		      SIGN_TRUNCATED);
	free(b);
}

static void check_seq(const uint8_t *data, size_t size)
{
	char text[32];
	uint64_t v = store_name_seq((const char *)data, size);
	size_t lead = 0;

	if (v == 0)
		return;
	while (lead < size && data[lead] == '0')
		lead++;
	snprintf(text, sizeof(text), "%" PRIu64, v);
	CHECK(size - lead == strlen(text) && memcmp(data + lead, text, size - lead) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sign_key k;
	static int keyed;
	char err[SIGN_ERR_MAX];

	if (!keyed) {
		CHECK(sign_key_open(KEY, -1, &k, err, sizeof(err)) == 0);
		keyed = 1;
	}
	check_stored(&k, data, size);
	check_signed(&k, data, size);
	check_seq(data, size);
	return 0;
}
