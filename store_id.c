/*
 * store_id.c - session id validation, shared by every store and by opts.c.
 *
 * An id becomes a file name (ID.pkl), so it is restricted to a portable,
 * shell-safe set that cannot name a path, a dot file or "..".
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store.h"

/* How many bytes of a bad id to echo back before eliding the rest. */
#define ID_SHOW_MAX 40

static bool id_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/*
 * Copy id into out for a message: printable ASCII as is, everything else
 * (and the quote and backslash) as \xHH, at most ID_SHOW_MAX input bytes.
 */
static void id_quote(const char *id, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < ID_SHOW_MAX && id[i] != '\0'; i++) {
		unsigned char c = (unsigned char)id[i];

		if (o + 5 >= outlen)
			break;
		if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 0xf];
	}
	if (id[i] != '\0' && o + 3 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* See store.h.  err may be NULL or errlen 0 when the caller wants no reason. */
bool store_id_valid(const char *id, char *err, size_t errlen)
{
	char shown[ID_SHOW_MAX * 4 + 4];
	size_t n;

	if (id == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "missing session id");
		return false;
	}
	for (n = 0; n <= STORE_ID_MAX && id[n] != '\0'; n++)
		if (!id_char_ok((unsigned char)id[n]))
			break;
	if (n >= 1 && n <= STORE_ID_MAX && id[n] == '\0' && id[0] != '.')
		return true;
	if (err != NULL && errlen > 0) {
		id_quote(id, shown, sizeof(shown));
		snprintf(err, errlen, "invalid session id '%s': use 1-%d "
		         "characters from [A-Za-z0-9._-], not starting with '.'",
		         shown, STORE_ID_MAX);
	}
	return false;
}
