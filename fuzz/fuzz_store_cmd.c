/*
 * fuzz_store_cmd.c - libFuzzer harness for what a store helper prints
 * (store_cmd_parse.c): a count after "delete", lines after "list".
 *
 * A parsed list holds valid, distinct ids in order and in-range times;
 * printed back in the protocol's form it parses to the same list.  A
 * parsed count printed back parses to the same count.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "store_cmd_parse.h"
#include "store_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_info *a, *b;
	size_t na, nb, len = 0;
	char err[512], *text = NULL;
	unsigned count, again;
	FILE *f;

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
