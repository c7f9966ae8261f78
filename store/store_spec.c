/*
 * store_spec.c - the value of DOLSOT_STORE or --store, parsed.
 *
 * The text comes from the caller's environment or command line: every
 * part is bounded, every byte checked, and nothing is read past the NUL.
 */
#include "store_spec.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlimits.h"

#define REDIS_SCHEME "redis://"
#define REDISS_SCHEME "rediss://"
#define CMD_PREFIX "cmd:"

static int fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Copy s[0..n) into dst (cap bytes) with %XX decoded; a NUL or a control
 * byte, decoded or not, is refused.  0 or -1. */
static int decode(const char *s, size_t n, char *dst, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f || o + 1 >= cap)
			return -1;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
}

/* A decimal number in s[0..n), no sign, no leading junk, <= max. */
static int number(const char *s, size_t n, long max, long *out)
{
	long v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	*out = v;
	return 0;
}

/* A host name or IPv4 address: letters, digits, '-', '.', '_'. */
static bool host_ok(const char *s, size_t n)
{
	if (n == 0 || n > STORE_SPEC_HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
			return false;
	}
	return true;
}

/* An IPv6 address between brackets: hex digits, ':' and '.'. */
static bool ipv6_ok(const char *s, size_t n)
{
	if (n < 2 || n > 45)
		return false;
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0 && s[i] != ':' && s[i] != '.')
			return false;
	return true;
}

#define REDIS_WANT "expected redis://[user:password@]host[:port][/db]"

static int parse_redis(const char *v, struct store_spec *sp, char *err, size_t errlen)
{
	const char *p = v + strlen(REDIS_SCHEME), *at, *end, *hp;
	size_t hn;
	long num;

	/* The user information ends at the authority's last '@' (a '/' or
	 * '@' inside a password is written %2F, %40). */
	end = p + strcspn(p, "/");
	at = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;

	sp->port = STORE_SPEC_REDIS_PORT;
	sp->db = 0;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));

		if (!colon)
			return fail(err, errlen, "a user needs a password (user:password@): "
			            REDIS_WANT);
		if (decode(p, (size_t)(colon - p), sp->user, sizeof(sp->user)) < 0 ||
		    decode(colon + 1, (size_t)(at - colon - 1), sp->password,
		           sizeof(sp->password)) < 0)
			return fail(err, errlen, "the user or password is too long or holds "
			            "a bad %-escape or a control character");
		if (!sp->password[0])
			return fail(err, errlen, "the password is empty: " REDIS_WANT);
		p = at + 1;
	}
	end = p + strcspn(p, "/");
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close || !ipv6_ok(p + 1, (size_t)(close - p - 1)))
			return fail(err, errlen, "a bad IPv6 address: " REDIS_WANT);
		hp = p + 1;
		hn = (size_t)(close - p - 1);
		p = close + 1;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));

		hp = p;
		hn = (size_t)((colon ? colon : end) - p);
		if (!host_ok(hp, hn))
			return fail(err, errlen, "a bad or missing host name: " REDIS_WANT);
		p += hn;
	}
	memcpy(sp->host, hp, hn);
	sp->host[hn] = '\0';
	if (*p == ':') {
		if (number(p + 1, (size_t)(end - p - 1), 65535, &num) < 0 || num == 0)
			return fail(err, errlen, "the port is not a number from 1 to 65535");
		sp->port = (int)num;
	} else if (p != end) {
		return fail(err, errlen, "junk after the host: " REDIS_WANT);
	}
	if (*end == '/' && end[1]) {
		if (number(end + 1, strlen(end + 1), STORE_SPEC_DB_MAX, &num) < 0)
			return fail(err, errlen, "the database is not a number (0, 1, ...): "
			            REDIS_WANT);
		sp->db = (int)num;
	}
	return 0;
}

static int parse_cmd(const char *v, struct store_spec *sp, char *err, size_t errlen)
{
	const char *line = v + strlen(CMD_PREFIX);
	char *p;

	if (strlen(line) > STORE_SPEC_MAX)
		return fail(err, errlen, "the helper's command line is too long");
	for (const char *q = line; *q; q++)
		if ((unsigned char)*q < 0x20 && *q != '\t')
			return fail(err, errlen, "the helper's command line holds a control "
			            "character");
	memcpy(sp->buf, line, strlen(line) + 1);
	sp->argc = 0;
	for (p = sp->buf; *p;) {
		if (*p == ' ' || *p == '\t') {
			*p++ = '\0';
			continue;
		}
		if (sp->argc == STORE_SPEC_ARGS)
			return fail(err, errlen, "the helper takes at most 31 arguments");
		sp->argv[sp->argc++] = p;
		p += strcspn(p, " \t");
	}
	sp->argv[sp->argc] = NULL;
	if (sp->argc == 0)
		return fail(err, errlen, "expected cmd:PROGRAM [ARGS], with a program");
	return 0;
}

int store_spec_parse(const char *v, struct store_spec *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->kind = STORE_KIND_FILE;
	if (!v || !*v || strcmp(v, "file") == 0)
		return 0;
	if (strcmp(v, "memory") == 0) {
		out->kind = STORE_KIND_MEMORY;
		return 0;
	}
	if (strncmp(v, REDISS_SCHEME, strlen(REDISS_SCHEME)) == 0)
		return fail(err, errlen, "rediss:// (Redis over TLS) is not supported: this "
		            "build's hiredis has no TLS; reach the server through a TLS "
		            "tunnel (stunnel, an SSH forward) with redis://");
	if (strncmp(v, REDIS_SCHEME, strlen(REDIS_SCHEME)) == 0) {
		out->kind = STORE_KIND_REDIS;
		return parse_redis(v, out, err, errlen);
	}
	if (strncmp(v, CMD_PREFIX, strlen(CMD_PREFIX)) == 0) {
		out->kind = STORE_KIND_CMD;
		return parse_cmd(v, out, err, errlen);
	}
	return fail(err, errlen, "expected file, memory, redis://[user:password@]host[:port][/db] "
	            "or cmd:PROGRAM [ARGS]");
}

void store_spec_redis_name(const struct store_spec *sp, char *buf, size_t len)
{
	bool v6 = strchr(sp->host, ':') != NULL;

	snprintf(buf, len, "redis://%s%s%s:%d/%d", v6 ? "[" : "", sp->host, v6 ? "]" : "",
	         sp->port, sp->db);
}

/* A whole number of ms in 1..STORE_SPEC_LOCK_MS_MAX from name, or dflt. */
static int env_ms(const char *name, long dflt, long *out, char *err, size_t errlen)
{
	const char *v = getenv(name);
	long n;

	*out = dflt;
	if (!v || !*v)
		return 0;
	if (number(v, strlen(v), STORE_SPEC_LOCK_MS_MAX, &n) < 0 || n == 0) {
		snprintf(err, errlen, "%s is not valid: expected a whole number of "
		         "milliseconds from 1 to %ld", name, STORE_SPEC_LOCK_MS_MAX);
		return -1;
	}
	*out = n;
	return 0;
}

int store_spec_redis_env(struct store_spec *sp, char *err, size_t errlen)
{
	const char *v = getenv("DOLSOT_REDIS_PREFIX");

	if (!v || !*v)
		v = STORE_SPEC_PREFIX;
	if (strlen(v) >= sizeof(sp->prefix))
		return fail(err, errlen, "DOLSOT_REDIS_PREFIX is not valid: longer than 127 "
		            "bytes");
	for (const char *q = v; *q; q++)
		if (*q <= ' ' || *q > '~')
			return fail(err, errlen, "DOLSOT_REDIS_PREFIX is not valid: expected "
			            "printable ASCII without blanks");
	memcpy(sp->prefix, v, strlen(v) + 1);
	if (env_ms("DOLSOT_REDIS_LOCK_MS", STORE_SPEC_LOCK_MS, &sp->lock_ms, err, errlen) < 0)
		return -1;
	return env_ms("DOLSOT_REDIS_RENEW_MS", sp->lock_ms / 3 ? sp->lock_ms / 3 : 1,
	              &sp->renew_ms, err, errlen);
}

int store_spec_cache_env(uint64_t *bytes, char *err, size_t errlen)
{
	const char *v = getenv("DOLSOT_UNIT_CACHE_SIZE");

	*bytes = STORE_SPEC_UNIT_CACHE;
	if (!v || !*v)
		return 0;
	if (limit_parse_size(v, bytes) == 0)
		return 0;
	*bytes = 0;
	return fail(err, errlen, "DOLSOT_UNIT_CACHE_SIZE is not valid: expected a size like 2G "
	            "(bytes, with an optional K, M or G suffix), or 0 for no cache");
}
