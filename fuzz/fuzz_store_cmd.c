/*
 * fuzz_store_cmd.c - libFuzzer harness for what a store helper prints
 * (store_cmd_parse.c): a count after "delete", lines after "list", the
 * words after "capabilities", the hashes after "unit-list".
 *
 * A parsed list holds valid, distinct ids in order and in-range times;
 * printed back in the protocol's form it parses to the same list.  A
 * parsed count printed back parses to the same count.  Capabilities
 * parse to known bits only.  Parsed hashes are distinct and sorted, and
 * printed back as lowercase hex parse to the same.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "store_cmd_parse.h"
#include "store_name.h"
#include "store_ops.h"

static void check_caps(const uint8_t *data, size_t size)
{
	unsigned caps;

	if (store_cmd_parse_caps((const char *)data, size, &caps) == 0)
		CHECK((caps & ~(STORE_CMD_CAP_UNITS | STORE_CMD_CAP_UNITS_LOCK)) == 0);
}

static void check_hashes(const uint8_t *data, size_t size)
{
	uint8_t *a, *b;
	size_t na, nb;
	char err[512], *text;

	if (store_cmd_parse_hashes((const char *)data, size, &a, &na, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		CHECK(a == NULL);
		return;
	}
	CHECK((na == 0) == (a == NULL));
	text = malloc(na * (2 * STORE_HASH_LEN + 1) + 1);
	CHECK(text != NULL);
	for (size_t i = 0; i < na; i++) {
		CHECK(i == 0 || memcmp(a + (i - 1) * STORE_HASH_LEN, a + i * STORE_HASH_LEN,
		                       STORE_HASH_LEN) < 0);
		for (size_t k = 0; k < STORE_HASH_LEN; k++)
			snprintf(text + i * (2 * STORE_HASH_LEN + 1) + 2 * k, 3, "%02x",
			         a[i * STORE_HASH_LEN + k]);
		text[i * (2 * STORE_HASH_LEN + 1) + 2 * STORE_HASH_LEN] = '\n';
	}
	CHECK(store_cmd_parse_hashes(text, na * (2 * STORE_HASH_LEN + 1), &b, &nb, err,
	                             sizeof(err)) == 0);
	CHECK(na == nb && (na == 0 || memcmp(a, b, na * STORE_HASH_LEN) == 0));
	free(a);
	free(b);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_info *a, *b;
	size_t na, nb, len = 0;
	char err[512], *text = NULL;
	unsigned count, again;
	FILE *f;

	check_caps(data, size);
	check_hashes(data, size);
	if (store_cmd_parse_count((const char *)data, size, &count) == 0) {
		char num[32];
		int n = snprintf(num, sizeof(num), "%u\n", count);

		CHECK(store_cmd_parse_count(num, (size_t)n, &again) == 0 && again == count);
	}
	if (store_cmd_parse_list((const char *)data, size, &a, &na, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		CHECK(a == NULL);
		return 0;
	}
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	for (size_t i = 0; i < na; i++) {
		CHECK(store_id_valid(a[i].id, NULL, 0));
		CHECK(i == 0 || strcmp(a[i - 1].id, a[i].id) < 0);
		CHECK(a[i].mtime.tv_sec >= 0 && a[i].mtime.tv_sec <= STORE_CMD_TIME_MAX);
		CHECK(a[i].mtime.tv_nsec >= 0 && a[i].mtime.tv_nsec < 1000000000L);
		fprintf(f, "%s %" PRIu64 " %lld.%09ld\n", a[i].id, a[i].size,
		        (long long)a[i].mtime.tv_sec, a[i].mtime.tv_nsec);
	}
	CHECK(fclose(f) == 0);
	CHECK(store_cmd_parse_list(text, len, &b, &nb, err, sizeof(err)) == 0);
	CHECK(na == nb);
	for (size_t i = 0; i < na; i++) {
		CHECK(strcmp(a[i].id, b[i].id) == 0);
		CHECK(a[i].size == b[i].size);
		CHECK(a[i].mtime.tv_sec == b[i].mtime.tv_sec);
		CHECK(a[i].mtime.tv_nsec == b[i].mtime.tv_nsec);
	}
	free(a);
	free(b);
	free(text);
	return 0;
}
