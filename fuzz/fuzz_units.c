/*
 * fuzz_units.c - libFuzzer harness for session format v4's parser
 * (store/units.c), the input being a whole blob: head and pack.
 *
 * A blob that parses has its head within the input, at most
 * UNITS_MAX_REFS refs sorted and distinct, and a pack that walks to the
 * input's end in npack entries, each a ref's hash with the ref's size;
 * the head alone parses to the same extent.  Anything else is refused
 * with a reason.
 */
#include <string.h>

#include "fuzz.h"
#include "units.h"

static void check_pack(const struct units_head *h)
{
	struct units_entry e, r;
	size_t off = 0, n = 0;

	while (units_pack_next(h, &off, &e)) {
		long i = units_find(h, e.hash);

		CHECK(i >= 0);
		units_ref(h, (uint32_t)i, &r);
		CHECK(r.size == e.size);
		CHECK(e.bytes >= h->pack && e.bytes + e.size <= h->pack + h->pack_len);
		n++;
	}
	CHECK(off == h->pack_len);
	CHECK(n == h->npack);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct units_head h, only;
	char err[UNITS_ERR_MAX] = "";
	int rc = units_parse(data, size, &h, err, sizeof(err));
	int head_rc = units_parse_head(data, size, &only, err, sizeof(err));

	if (rc < 0) {
		CHECK(err[0] != '\0');
		return 0;
	}
	CHECK(head_rc == 0);
	CHECK(units_is_v4(data, size));
	CHECK(h.head_len <= size && h.head_len + h.pack_len == size);
	CHECK(only.head_len == h.head_len && only.nrefs == h.nrefs);
	CHECK(h.nrefs <= UNITS_MAX_REFS);
	CHECK(h.refs >= data && h.refs + (size_t)h.nrefs * UNITS_REF_LEN <= data + h.head_len);
	for (uint32_t i = 1; i < h.nrefs; i++)
		CHECK(memcmp(h.refs + (size_t)(i - 1) * UNITS_REF_LEN,
		             h.refs + (size_t)i * UNITS_REF_LEN, UNITS_HASH_LEN) < 0);
	for (uint32_t i = 0; i < h.nrefs; i++) {
		struct units_entry r;

		units_ref(&h, i, &r);
		CHECK(units_find(&h, r.hash) == (long)i);
	}
	check_pack(&h);
	return 0;
}
