/*
 * fuzz_callrec.c - libFuzzer harness for the call-id record's parser
 * (callrec.c): the bytes after a stored session's blob.
 *
 * Whatever parses holds at most CALLREC_MAX valid, distinct ids, each
 * result within CALLREC_RESULT_MAX, and encodes back to the same bytes;
 * the footer's length never exceeds what it was given.
 */
#include <string.h>

#include "callrec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct callrec r;
	char err[512];
	uint8_t *again = NULL;
	size_t len = 0;

	if (callrec_footer(size >= CALLREC_FOOTER ? data + size - CALLREC_FOOTER : NULL, size,
	                   &len) == 0)
		CHECK(len <= size);
	if (callrec_parse(data, size, &r, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		CHECK(r.n == 0);
		return 0;
	}
	CHECK(r.n <= CALLREC_MAX);
	for (size_t i = 0; i < r.n; i++) {
		CHECK(callrec_id_valid(r.e[i].id, err, sizeof(err)));
		CHECK(callrec_find(&r, r.e[i].id) == &r.e[i]);
		CHECK(r.e[i].out.len + r.e[i].err.len + r.e[i].json.len <= CALLREC_RESULT_MAX);
	}
	CHECK(callrec_encode(&r, &again, &len) == 0);
	/* An empty record (a footer alone) is stored as no bytes at all. */
	if (r.n == 0)
		CHECK(len == 0 && again == NULL);
	else
		CHECK(len == size && memcmp(again, data, size) == 0);
	free(again);
	callrec_release(&r);
	return 0;
}
