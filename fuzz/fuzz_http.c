/*
 * fuzz_http.c - libFuzzer harness for what `dolsot mcp --http` reads
 * itself beside libmicrohttpd: the token file and the bearer check
 * (auth.c), and the listen address, Accept, Content-Type, Origin,
 * Last-Event-ID and session id values (http_route.c).
 *
 * Byte 0 picks the reader; the rest is its input.  Properties: a parsed
 * token file has tenants with valid names and caps in range, and the
 * bearer check finds a tenant only by a token of the file; a parsed
 * address has a family and a length; a loopback Origin starts with a
 * scheme; a session id made for a tenant is valid for it alone, and one
 * changed in any byte is not.
 */
#include <string.h>
#include <sys/socket.h>

#include "auth.h"
#include "fuzz.h"
#include "http_route.h"

static char *text_of(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	CHECK(s);
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static void tokens(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t file = nul ? (size_t)(nul - data) : size;
	char *header = text_of(data + file, size - file), *text = text_of(data, file);
	struct auth a;
	char err[256];
	const struct auth_tenant *t;

	if (auth_parse((const char *)data, file, 1 << 20, &a, err, sizeof(err)) < 0) {
		CHECK(err[0] && !a.tenants && a.n == 0);
		free(header);
		free(text);
		return;
	}
	CHECK(a.n >= 1 && a.n <= AUTH_MAX_TENANTS);
	for (size_t i = 0; i < a.n; i++) {
		size_t n = strlen(a.tenants[i].name);

		CHECK(n >= 1 && n <= AUTH_NAME_MAX);
		CHECK(strspn(a.tenants[i].name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		             "0123456789_-") == n);
		CHECK(a.tenants[i].max_cells >= 1 && a.tenants[i].max_bytes >= 1 &&
		      a.tenants[i].max_bytes <= (1 << 20));
	}
	t = auth_check(&a, header + (nul ? 1 : 0));
	CHECK(!t || (t >= a.tenants && t < a.tenants + a.n));
	/* A token of the file finds its tenant: the first line's second word. */
	{
		const char *p = text;
		size_t at = strspn(p, " \t"), name, tok;
		char bearer[AUTH_TOKEN_MAX + 16];

		if (file && p[at] != '#' && at < file) {
			name = strcspn(p + at, " \t\n");
			at += name;
			at += strspn(p + at, " \t");
			tok = strcspn(p + at, " \t\r\n");
			if (at + tok <= file && tok >= AUTH_TOKEN_MIN && tok <= AUTH_TOKEN_MAX &&
			    p[at] != '#') {
				snprintf(bearer, sizeof(bearer), "Bearer %.*s", (int)tok, p + at);
				t = auth_check(&a, bearer);
				CHECK(t);
			}
		}
	}
	auth_release(&a);
	free(header);
	free(text);
}

static void values(const uint8_t *data, size_t size)
{
	char *s = text_of(data, size), err[256];
	struct http_addr addr;
	struct http_event_id ev;

	if (http_parse_listen(s, &addr, err, sizeof(err)) == 0)
		CHECK(addr.len > 0 && (addr.sa.ss_family == AF_INET || addr.sa.ss_family == AF_INET6 ||
		                       addr.sa.ss_family == AF_UNIX));
	else
		CHECK(err[0]);
	(void)http_accepts(s, "text/event-stream");
	(void)http_accepts(s, "application/json");
	(void)http_is_json(s);
	if (http_event_id_parse(s, &ev))
		CHECK(strlen(ev.tag) == HTTP_EVENT_TAG_LEN && ev.stream >= 1 && ev.seq >= 1);
	if (http_origin_allowed(s))
		CHECK(strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0);
	free(s);
}

static void session_ids(const uint8_t *data, size_t size)
{
	unsigned char key[HTTP_KEY_LEN] = { 0 };
	char id[HTTP_SESSION_ID_LEN + 1], *tenant, *given;
	size_t k = size < HTTP_KEY_LEN ? size : HTTP_KEY_LEN;

	memcpy(key, data, k);
	tenant = text_of(data + k, size - k);
	given = text_of(data + k, size - k);
	CHECK(http_session_id(id, sizeof(id), key, tenant) == 0);
	CHECK(strlen(id) == HTTP_SESSION_ID_LEN);
	CHECK(http_session_id_valid(id, key, tenant));
	CHECK(!http_session_id_valid(id, key, strcmp(tenant, "x") ? "x" : "y"));
	if (size > k) {
		size_t at = data[k] % HTTP_SESSION_ID_LEN;
		char was = id[at];

		id[at] = was == '0' ? '1' : '0';
		CHECK(!http_session_id_valid(id, key, tenant));
		id[at] = was;
	}
	(void)http_session_id_valid(given, key, tenant);
	free(tenant);
	free(given);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		tokens(data + 1, size - 1);
		break;
	case 1:
		values(data + 1, size - 1);
		break;
	default:
		session_ids(data + 1, size - 1);
		break;
	}
	return 0;
}
