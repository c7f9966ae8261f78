/*
 * stamp.c - a unit file's stamp (stamp.h).
 */
#include "stamp.h"

#include <stdio.h>
#include <string.h>

#define STAMP_TAG "dolsot-stamp 1"

size_t stamp_format(const struct stat *st, char *buf, size_t len)
{
	int n = snprintf(buf, len, STAMP_TAG " %llu %llu %lld %lld %ld\n",
	                 (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
	                 (long long)st->st_size, (long long)st->st_ctim.tv_sec,
	                 (long)st->st_ctim.tv_nsec);

	return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}

bool stamp_matches(const char *text, size_t n, const struct stat *st)
{
	char want[STAMP_TEXT_MAX];
	size_t m = stamp_format(st, want, sizeof(want));

	return m && m == n && memcmp(text, want, n) == 0;
}
