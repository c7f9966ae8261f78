/*
 * http_route.c - the parts of a request `dolsot mcp --http` reads itself;
 * see http_route.h.
 */
#include "http_route.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "sha256.h"

static int parse_port(const char *s, in_port_t *port)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -1;
	*port = htons((in_port_t)v);
	return 0;
}

static int parse_unix(const char *s, struct http_addr *a, char *err, size_t errlen)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&a->sa;

	if (strlen(s) >= sizeof(un->sun_path)) {
		snprintf(err, errlen, "--http: a unix socket's path is at most %zu bytes",
		         sizeof(un->sun_path) - 1);
		return -1;
	}
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, s, strlen(s) + 1);
	a->len = sizeof(*un);
	a->loopback = true;
	return 0;
}

int http_parse_listen(const char *s, struct http_addr *a, char *err, size_t errlen)
{
	char host[64];
	const char *colon;
	size_t hlen;
	in_port_t port;

	memset(a, 0, sizeof(*a));
	if (s[0] == '/')
		return parse_unix(s, a, err, errlen);
	colon = strrchr(s, ':');
	hlen = colon ? (size_t)(colon - s) : 0;
	if (!colon || hlen == 0 || hlen >= sizeof(host) || parse_port(colon + 1, &port) < 0) {
		snprintf(err, errlen, "--http '%.80s': expected HOST:PORT (127.0.0.1:8000, "
		         "[::1]:8000, port 0 for any free one) or a unix socket's path", s);
		return -1;
	}
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (host[0] == '[' && host[hlen - 1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->sa;

		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = port;
			a->len = sizeof(*in6);
			a->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
			return 0;
		}
	} else {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&a->sa;

		if (strcmp(host, "localhost") == 0)
			snprintf(host, sizeof(host), "127.0.0.1");
		if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
			in4->sin_family = AF_INET;
			in4->sin_port = port;
			a->len = sizeof(*in4);
			a->loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
			return 0;
		}
	}
	snprintf(err, errlen, "--http '%.80s': the host must be a numeric address "
	         "(127.0.0.1, [::1]) or localhost", s);
	return -1;
}

/* Whether the media range at p (up to its ';' or ',') is type or covers it. */
static bool range_covers(const char *p, size_t n, const char *type)
{
	const char *slash = strchr(type, '/');

	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == strlen(type) && strncasecmp(p, type, n) == 0)
		return true;
	if (n == 3 && strncmp(p, "*/*", 3) == 0)
		return true;
	return slash && n == (size_t)(slash - type) + 2 &&
	       strncasecmp(p, type, (size_t)(slash - type) + 1) == 0 && p[n - 1] == '*';
}

bool http_accepts(const char *accept, const char *type)
{
	const char *p = accept;

	while (p && *p) {
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, ";,");
		if (n && range_covers(p, n, type))
			return true;
		p += n;
		p += strcspn(p, ",");
	}
	return false;
}

bool http_is_json(const char *content_type)
{
	static const char json[] = "application/json";
	size_t n;

	if (!content_type)
		return false;
	content_type += strspn(content_type, " \t");
	n = strcspn(content_type, "; \t");
	return n == sizeof(json) - 1 && strncasecmp(content_type, json, n) == 0;
}

bool http_origin_allowed(const char *origin)
{
	static const char *const hosts[] = { "localhost", "127.0.0.1", "[::1]" };
	const char *p = origin;
	size_t n;

	if (strncmp(p, "http://", 7) == 0)
		p += 7;
	else if (strncmp(p, "https://", 8) == 0)
		p += 8;
	else
		return false;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		n = strlen(hosts[i]);
		if (strncasecmp(p, hosts[i], n) != 0)
			continue;
		if (p[n] == '\0')
			return true;
		if (p[n] == ':' && p[n + 1] && strspn(p + n + 1, "0123456789") == strlen(p + n + 1))
			return true;
	}
	return false;
}

/* The hex of the id's second half: SHA-256 of key, its first half and
 * the tenant. */
static void id_tag(const char *head, const unsigned char *key, const char *tenant,
                   char tag[HTTP_SESSION_ID_LEN / 2 + 1])
{
	uint8_t digest[SHA256_LEN];
	struct iovec v[3] = {
		{ (void *)key, HTTP_KEY_LEN },
		{ (void *)head, HTTP_SESSION_ID_LEN / 2 },
		{ (void *)(tenant ? tenant : ""), tenant ? strlen(tenant) + 1 : 0 },
	};

	sha256_parts(v, 3, digest);
	for (size_t i = 0; i < HTTP_SESSION_ID_LEN / 4; i++)
		snprintf(tag + 2 * i, 3, "%02x", digest[i]);
}

bool http_session_id_valid(const char *s, const unsigned char *key, const char *tenant)
{
	char tag[HTTP_SESSION_ID_LEN / 2 + 1];
	unsigned char diff = 0;

	if (strlen(s) != HTTP_SESSION_ID_LEN ||
	    strspn(s, "0123456789abcdef") != HTTP_SESSION_ID_LEN)
		return false;
	id_tag(s, key, tenant, tag);
	for (size_t i = 0; i < HTTP_SESSION_ID_LEN / 2; i++)
		diff |= (unsigned char)(tag[i] ^ s[HTTP_SESSION_ID_LEN / 2 + i]);
	return diff == 0;
}

int http_session_id(char *buf, size_t size, const unsigned char *key, const char *tenant)
{
	unsigned char raw[HTTP_SESSION_ID_LEN / 4];

	if (size < HTTP_SESSION_ID_LEN + 1) {
		errno = EINVAL;
		return -1;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	id_tag(buf, key, tenant, buf + HTTP_SESSION_ID_LEN / 2);
	return 0;
}

int http_event_tag(char tag[HTTP_EVENT_TAG_LEN + 1])
{
	unsigned char raw[HTTP_EVENT_TAG_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(tag + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* A decimal number from 1 with no leading zero, of at most max; the
 * bytes it took, or 0. */
static size_t number_at(const char *s, uint64_t max, uint64_t *out)
{
	size_t n = strspn(s, "0123456789");
	uint64_t v = 0;

	if (n == 0 || n > 20 || s[0] == '0')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (max - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*out = v;
	return n;
}

bool http_event_id_parse(const char *s, struct http_event_id *e)
{
	uint64_t stream, seq;
	size_t n;

	if (strspn(s, "0123456789abcdef") != HTTP_EVENT_TAG_LEN || s[HTTP_EVENT_TAG_LEN] != '-')
		return false;
	memcpy(e->tag, s, HTTP_EVENT_TAG_LEN);
	e->tag[HTTP_EVENT_TAG_LEN] = '\0';
	s += HTTP_EVENT_TAG_LEN + 1;
	n = number_at(s, UINT32_MAX, &stream);
	if (!n || s[n] != '-')
		return false;
	s += n + 1;
	n = number_at(s, UINT64_MAX, &seq);
	if (!n || s[n] != '\0')
		return false;
	e->stream = (unsigned)stream;
	e->seq = seq;
	return true;
}
