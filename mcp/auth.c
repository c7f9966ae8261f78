/*
 * auth.c - the tenants' token file and the bearer check; see auth.h.
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "sha256.h"

static bool name_valid(const char *p, size_t n)
{
	if (n == 0 || n > AUTH_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", p[i]) ||
		    p[i] == '\0')
			return false;
	return true;
}

static bool token_valid(const char *p, size_t n)
{
	if (n < AUTH_TOKEN_MIN || n > AUTH_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] <= ' ' || p[i] > '~')
			return false;
	return true;
}

/* A "key=N" field, N in 1..max. */
static int number_field(const char *p, size_t n, const char *key, size_t max, size_t *out)
{
	size_t k = strlen(key), v = 0;

	if (n <= k || strncmp(p, key, k) != 0)
		return 1;           /* not this field */
	for (size_t i = k; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > max / 10)
			return -1;
		v = v * 10 + (size_t)(p[i] - '0');
	}
	if (v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The next space-separated word of line [*at, end): its start and length. */
static size_t word(const char *line, size_t end, size_t *at, const char **w)
{
	size_t n;

	while (*at < end && (line[*at] == ' ' || line[*at] == '\t'))
		(*at)++;
	*w = line + *at;
	for (n = 0; *at < end && line[*at] != ' ' && line[*at] != '\t'; n++)
		(*at)++;
	return n;
}

static int parse_line(const char *line, size_t len, size_t max_bytes, struct auth_tenant *t,
                      size_t lineno, char *err, size_t errlen)
{
	const char *w;
	size_t at = 0, n = word(line, len, &at, &w);
	size_t cells = AUTH_DEFAULT_CELLS, bytes = max_bytes;

	if (!name_valid(w, n)) {
		snprintf(err, errlen, "line %zu: the tenant's name must be 1 to %d of "
		         "[A-Za-z0-9_-]", lineno, AUTH_NAME_MAX);
		return -1;
	}
	memcpy(t->name, w, n);
	t->name[n] = '\0';
	n = word(line, len, &at, &w);
	if (!token_valid(w, n)) {
		snprintf(err, errlen, "line %zu (tenant %s): the token must be %d to %d printable "
		         "characters without spaces", lineno, t->name, AUTH_TOKEN_MIN,
		         AUTH_TOKEN_MAX);
		return -1;
	}
	sha256_bytes(w, n, t->digest);
	while ((n = word(line, len, &at, &w)) > 0) {
		int c = number_field(w, n, "cells=", 4096, &cells);
		int b = c == 1 ? number_field(w, n, "bytes=", max_bytes, &bytes) : 0;

		if (c < 0 || b != 0) {
			snprintf(err, errlen, "line %zu (tenant %s): expected cells=N (1 to 4096) or "
			         "bytes=N (1 to %zu) after the token", lineno, t->name, max_bytes);
			return -1;
		}
	}
	t->max_cells = (unsigned)cells;
	t->max_bytes = bytes;
	return 0;
}

int auth_parse(const char *text, size_t len, size_t max_bytes, struct auth *a, char *err,
               size_t errlen)
{
	size_t at = 0, lineno = 0;

	memset(a, 0, sizeof(*a));
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
		const char *line = text + at;
		struct auth_tenant *grown;

		at = end + 1;
		lineno++;
		if (n && line[n - 1] == '\r')
			n--;
		while (n && (line[0] == ' ' || line[0] == '\t'))
			line++, n--;
		if (n == 0 || line[0] == '#')
			continue;
		if (a->n == AUTH_MAX_TENANTS) {
			snprintf(err, errlen, "more than %d tenants", AUTH_MAX_TENANTS);
			goto fail;
		}
		grown = realloc(a->tenants, (a->n + 1) * sizeof(*grown));
		if (!grown) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		a->tenants = grown;
		if (parse_line(line, n, max_bytes, &a->tenants[a->n], lineno, err, errlen) < 0)
			goto fail;
		for (size_t i = 0; i < a->n; i++)
			if (strcmp(a->tenants[i].name, a->tenants[a->n].name) == 0) {
				snprintf(err, errlen, "line %zu: tenant %s named twice", lineno,
				         a->tenants[i].name);
				goto fail;
			}
		a->n++;
	}
	if (a->n == 0) {
		snprintf(err, errlen, "no tenant in it");
		goto fail;
	}
	sha256_bytes(text, len, a->file_digest);
	return 0;
fail:
	auth_release(a);
	return -1;
}

int auth_load(const char *path, size_t max_bytes, struct auth *a, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	uint8_t *text = NULL;
	size_t len = 0;
	int rc;

	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "--auth-tokens %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "--auth-tokens %s: must be a regular file of this user's "
		         "that only its owner may read or write (chmod 600)", path);
		close(fd);
		return -1;
	}
	if (fd_read_all(fd, (size_t)st.st_size, &text, &len) < 0) {
		snprintf(err, errlen, "--auth-tokens %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	rc = auth_parse((const char *)text, len, max_bytes, a, err, errlen);
	if (rc < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "--auth-tokens %s: %s", path, why);
	}
	explicit_bzero(text, len);
	free(text);
	return rc;
}

void auth_release(struct auth *a)
{
	if (a->tenants)
		explicit_bzero(a->tenants, a->n * sizeof(*a->tenants));
	free(a->tenants);
	a->tenants = NULL;
	a->n = 0;
}

static bool same_digest(const uint8_t *x, const uint8_t *y)
{
	volatile uint8_t d = 0;

	for (size_t i = 0; i < 32; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

const struct auth_tenant *auth_check(const struct auth *a, const char *authorization)
{
	static const char bearer[] = "Bearer ";
	const struct auth_tenant *found = NULL;
	uint8_t digest[32];
	size_t n;

	if (!authorization || strncasecmp(authorization, bearer, sizeof(bearer) - 1) != 0)
		return NULL;
	authorization += sizeof(bearer) - 1;
	n = strlen(authorization);
	if (n > AUTH_TOKEN_MAX)
		return NULL;
	sha256_bytes(authorization, n, digest);
	/* No early exit: the time does not say which tenant, if any. */
	for (size_t i = 0; i < a->n; i++)
		if (same_digest(digest, a->tenants[i].digest) && !found)
			found = &a->tenants[i];
	explicit_bzero(digest, sizeof(digest));
	return found;
}
