/*
 * store_cmd_parse.c - a store helper's output, parsed.  The helper is any
 * program: nothing it prints is trusted, no byte past len is read, and
 * nothing needs a NUL.
 */
#include "store_cmd_parse.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_name.h"
#include "units.h"

/* Digits at s[*i..len) into *v (at most max); advances *i.  0 or -1. */
static int digits(const char *s, size_t len, size_t *i, uint64_t max, uint64_t *v)
{
	size_t start = *i;

	*v = 0;
	while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
		uint64_t d = (uint64_t)(s[*i] - '0');

		if (*v > (max - d) / 10)
			return -1;
		*v = *v * 10 + d;
		(*i)++;
	}
	return *i > start ? 0 : -1;
}

int store_cmd_parse_count(const char *out, size_t len, unsigned *count)
{
	size_t i = 0;
	uint64_t v;

	if (digits(out, len, &i, UINT_MAX, &v) < 0)
		return -1;
	if (i < len && out[i] == '\n')
		i++;
	if (i != len)
		return -1;
	*count = (unsigned)v;
	return 0;
}

static size_t blanks(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* One line s[0..len) (no newline) into *si.  NULL, or why it is wrong. */
static const char *parse_line(const char *s, size_t len, struct session_info *si)
{
	size_t i = 0, idlen;
	uint64_t v, frac = 0;
	char scratch[8];

	while (i < len && s[i] != ' ' && s[i] != '\t')
		i++;
	idlen = i;
	if (idlen == 0 || idlen > STORE_ID_MAX)
		return "no valid session id";
	memcpy(si->id, s, idlen);
	si->id[idlen] = '\0';
	if (strlen(si->id) != idlen || !store_id_valid(si->id, scratch, sizeof(scratch)))
		return "no valid session id";
	i = blanks(s, len, i);
	if (digits(s, len, &i, UINT64_MAX, &si->size) < 0)
		return "SIZE is not a whole number of bytes";
	if (i == blanks(s, len, i))
		return "expected ID SIZE LAST_USED";
	i = blanks(s, len, i);
	if (digits(s, len, &i, (uint64_t)STORE_CMD_TIME_MAX, &v) < 0)
		return "LAST_USED is not a number of seconds since the epoch";
	if (i < len && s[i] == '.') {
		size_t start = ++i;

		while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 9)
			frac = frac * 10 + (uint64_t)(s[i++] - '0');
		if (i == start)
			return "LAST_USED has no digits after its point";
		for (size_t k = i - start; k < 9; k++)
			frac *= 10;
	}
	i = blanks(s, len, i);
	if (i != len)
		return "junk after LAST_USED";
	si->mtime.tv_sec = (time_t)v;
	si->mtime.tv_nsec = (long)frac;
	return NULL;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct session_info *)a)->id,
	              ((const struct session_info *)b)->id);
}

int store_cmd_parse_list(const char *out, size_t len, struct session_info **infos,
                         size_t *n, char *err, size_t errlen)
{
	size_t lines = 0, i, m = 0, line = 0;

	*infos = NULL;
	*n = 0;
	for (i = 0; i < len; i++)
		lines += out[i] == '\n';
	lines++;
	*infos = calloc(lines, sizeof(**infos));
	if (!*infos) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < len;) {
		const char *nl = memchr(out + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - out) : len;
		const char *why = parse_line(out + i, end - i, &(*infos)[m]);

		line++;
		if (why) {
			snprintf(err, errlen, "list: line %zu: %s", line, why);
			goto bad;
		}
		m++;
		i = end + 1;
	}
	qsort(*infos, m, sizeof(**infos), by_id);
	for (i = 1; i < m; i++)
		if (strcmp((*infos)[i - 1].id, (*infos)[i].id) == 0) {
			snprintf(err, errlen, "list: session '%s' is listed twice", (*infos)[i].id);
			goto bad;
		}
	*n = m;
	return 0;
bad:
	free(*infos);
	*infos = NULL;
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

int store_cmd_parse_caps(const char *out, size_t len, unsigned *caps)
{
	static const struct {
		const char *word;
		unsigned bit;
	} known[] = {
		{ "units", STORE_CMD_CAP_UNITS },
		{ "units-lock", STORE_CMD_CAP_UNITS_LOCK },
	};
	size_t i = 0;

	*caps = 0;
	while (i < len) {
		size_t start;

		while (i < len && is_space(out[i]))
			i++;
		start = i;
		while (i < len && !is_space(out[i])) {
			if (out[i] < 0x21 || out[i] > 0x7e)
				return -1;
			i++;
		}
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (i - start == strlen(known[k].word) &&
			    memcmp(out + start, known[k].word, i - start) == 0)
				*caps |= known[k].bit;
	}
	return 0;
}

static int by_hash(const void *a, const void *b)
{
	return memcmp(a, b, STORE_HASH_LEN);
}

int store_cmd_parse_hashes(const char *out, size_t len, uint8_t **hashes, size_t *n,
                           char *err, size_t errlen)
{
	size_t lines = 0, i, m = 0;

	*hashes = NULL;
	*n = 0;
	for (i = 0; i < len; i++)
		lines += out[i] == '\n';
	if (len && out[len - 1] != '\n')
		lines++;
	if (!lines)
		return 0;
	*hashes = malloc(lines * STORE_HASH_LEN);
	if (!*hashes) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < len;) {
		const char *nl = memchr(out + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - out) : len;

		if (units_unhex(out + i, end - i, *hashes + m * STORE_HASH_LEN) < 0) {
			snprintf(err, errlen, "unit-list: line %zu: not 64 lowercase hex digits",
			         m + 1);
			goto bad;
		}
		m++;
		i = end + 1;
	}
	qsort(*hashes, m, STORE_HASH_LEN, by_hash);
	for (i = 1; i < m; i++)
		if (memcmp(*hashes + (i - 1) * STORE_HASH_LEN, *hashes + i * STORE_HASH_LEN,
		           STORE_HASH_LEN) == 0) {
			snprintf(err, errlen, "unit-list: a unit is listed twice");
			goto bad;
		}
	*n = m;
	return 0;
bad:
	free(*hashes);
	*hashes = NULL;
	return -1;
}
