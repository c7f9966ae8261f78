/*
 * fuzz_mem_list.c - libFuzzer harness for the memory store's session list
 * (mem_list.c), which mem_client.c reads from the warm server.
 *
 * Whatever parses must hold valid ids and in-range times, and formatting
 * the parsed list then parsing it again must give the same list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mem_list.h"
#include "store_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_info *a, *b;
	size_t na, nb, len = 0;
	char *text = NULL;
	FILE *f;

	CHECK(mem_list_parse((const char *)data, size, &a, &na) == 0);
	for (size_t i = 0; i < na; i++) {
		CHECK(store_id_valid(a[i].id, NULL, 0));
		CHECK(a[i].mtime.tv_sec >= 0);
		CHECK(a[i].mtime.tv_nsec >= 0 && a[i].mtime.tv_nsec < 1000000000L);
	}
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	CHECK(mem_list_format(f, a, na) == 0);
	CHECK(fclose(f) == 0);
	CHECK(mem_list_parse(text, len, &b, &nb) == 0);
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
