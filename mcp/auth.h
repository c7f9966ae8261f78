/*
 * auth.h - `dolsot mcp --http --auth-tokens FILE`: the tenants and their
 * bearer tokens, read from a file only its owner may read (mode 0600 or
 * stricter), and the check of a request's Authorization header against
 * them in constant time.  A token is never logged.  Reads untrusted
 * bytes; fuzz/fuzz_http.c is its harness.
 *
 * The file: one tenant a line, "NAME TOKEN [cells=N] [bytes=N]"; blank
 * lines and lines starting with '#' are skipped.  NAME is 1..AUTH_NAME_MAX
 * bytes of [A-Za-z0-9_-]; TOKEN at least AUTH_TOKEN_MIN printable bytes
 * without spaces; cells= caps the tenant's tool calls waiting or running
 * at once (default AUTH_DEFAULT_CELLS), bytes= the size of one request's
 * body (default and at most the server's 16 MiB).
 */
#ifndef DOLSOT_AUTH_H
#define DOLSOT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_NAME_MAX 24
#define AUTH_TOKEN_MIN 16
#define AUTH_TOKEN_MAX 512
#define AUTH_MAX_TENANTS 1024
#define AUTH_DEFAULT_CELLS 8

struct auth_tenant {
	char name[AUTH_NAME_MAX + 1];
	uint8_t digest[32];         /* SHA-256 of the token: compared, never kept */
	unsigned max_cells;
	size_t max_bytes;
};

struct auth {
	struct auth_tenant *tenants;
	size_t n;
	uint8_t file_digest[32];    /* SHA-256 of the file: a key all servers
	                             * given the same file share */
};

/* Read the file at path (its mode checked).  0, or -1 with why in err
 * (the line's number, never its token). */
int auth_load(const char *path, size_t max_bytes, struct auth *a, char *err, size_t errlen);
/* The same from text already read (what the file holds). */
int auth_parse(const char *text, size_t len, size_t max_bytes, struct auth *a, char *err,
               size_t errlen);
void auth_release(struct auth *a);
/* The tenant an Authorization header value ("Bearer TOKEN") names, or
 * NULL (none, malformed, or no tenant's).  Every tenant's digest is
 * compared, each in constant time. */
const struct auth_tenant *auth_check(const struct auth *a, const char *authorization);

#endif
