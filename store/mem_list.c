/*
 * mem_list.c - format and parse the memory store's session list.
 *
 * The text comes from another process; the parser trusts none of it and
 * is fuzzed by fuzz/fuzz_mem_list.c.
 */
#include "mem_list.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_name.h"

int mem_list_format(FILE *f, const struct session_info *info, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fprintf(f, "%s\t%llu\t%lld.%09ld\n", info[i].id,
		            (unsigned long long)info[i].size, (long long)info[i].mtime.tv_sec,
		            info[i].mtime.tv_nsec) < 0)
			return -1;
	return 0;
}

/* Digits only, [p, end), into *out without overflow. */
static bool parse_u64(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	if (p == end)
		return false;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return true;
}

/* "ID\tSIZE\tSEC.NSEC" in [p, end) into *si. */
static bool parse_line(const char *p, const char *end, struct session_info *si)
{
	const char *tab1 = memchr(p, '\t', (size_t)(end - p)), *tab2, *dot;
	uint64_t size, sec, nsec;

	if (!tab1 || (size_t)(tab1 - p) > STORE_ID_MAX)
		return false;
	tab2 = memchr(tab1 + 1, '\t', (size_t)(end - tab1 - 1));
	if (!tab2)
		return false;
	dot = memchr(tab2 + 1, '.', (size_t)(end - tab2 - 1));
	if (!dot || !parse_u64(tab1 + 1, tab2, &size) || !parse_u64(tab2 + 1, dot, &sec) ||
	    !parse_u64(dot + 1, end, &nsec) || end - dot - 1 != 9 ||
	    sec > (uint64_t)INT64_MAX || nsec > 999999999)
		return false;
	memset(si, 0, sizeof(*si));
	memcpy(si->id, p, (size_t)(tab1 - p));
	si->id[tab1 - p] = '\0';
	if (!store_id_valid(si->id, NULL, 0))
		return false;
	si->size = size;
	si->mtime.tv_sec = (time_t)sec;
	si->mtime.tv_nsec = (long)nsec;
	return true;
}

int mem_list_parse(const char *text, size_t len, struct session_info **out, size_t *n)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct session_info si;

		if (parse_line(p, eol, &si)) {
			if (*n == cap) {
				size_t grown = cap ? 2 * cap : 16;
				struct session_info *g = realloc(*out, grown * sizeof(*g));

				if (!g) {
					free(*out);
					*out = NULL;
					*n = 0;
					errno = ENOMEM;
					return -1;
				}
				*out = g;
				cap = grown;
			}
			(*out)[(*n)++] = si;
		}
		p = eol + 1;
	}
	return 0;
}
