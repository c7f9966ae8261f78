/*
 * fuzz_histrec.c - libFuzzer harness for the history record's parser
 * (histrec.c): the bytes a stored session ends with, read by every load
 * and by collecting before anything is verified.
 *
 * The footer's length never exceeds what it was given; whatever parses
 * has its states in rising order below its number and its extras sorted
 * (each found where it is), and encodes back to the same bytes.
 */
#include <string.h>

#include "fuzz.h"
#include "histrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct histrec h;
	char err[HISTREC_ERR_MAX];
	uint8_t *again = NULL;
	size_t len = 0;

	if (histrec_footer(data, size, &len) == 0)
		CHECK(len <= size);
	if (histrec_parse(data, size, &h, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		CHECK(h.nstates == 0 && h.nextras == 0 && !h.states && !h.extras);
		return 0;
	}
	CHECK(h.number > 0);
	CHECK(h.code_len <= HISTREC_CODE_MAX && h.result_len <= HISTREC_RESULT_MAX);
	for (size_t i = 0; i < h.nstates; i++) {
		CHECK(h.states[i].number < h.number);
		CHECK(i == 0 || h.states[i - 1].number < h.states[i].number);
		CHECK(histrec_state_of(&h, h.states[i].number) == &h.states[i]);
	}
	for (size_t i = 0; i < h.nextras; i++)
		CHECK(histrec_find_extra(&h, h.extras[i].hash) == (long)i);
	CHECK(histrec_encode(&h, &again, &len) == 0);
	CHECK(len == size && memcmp(again, data, size) == 0);
	free(again);
	histrec_release(&h);
	return 0;
}
