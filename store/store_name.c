/*
 * store_name.c - classify the entries of a FileStore directory.
 *
 * Kept apart from store_file.c so it can be fuzzed without a directory: it
 * reads names an attacker with access to the directory may have chosen.
 */
#include "store_name.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copy name[0..idlen) into id when it is a valid session id. */
static bool take_id(const char *name, size_t idlen, char *id)
{
	if (idlen < 1 || idlen > STORE_ID_MAX)
		return false;
	memcpy(id, name, idlen);
	id[idlen] = '\0';
	return store_id_valid(id, NULL, 0);
}

static bool has_suffix(const char *name, size_t len, const char *sfx)
{
	size_t n = strlen(sfx);

	return len > n && memcmp(name + len - n, sfx, n) == 0;
}

static bool temp_rand_ok(const char *p)
{
	int i;

	for (i = 0; i < STORE_TEMP_RAND_LEN; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9')))
			return false;
	return true;
}

enum store_name_kind store_name_kind(const char *name, char *id)
{
	size_t len = strlen(name);
	size_t mid;

	if (name[0] == '.') {
		/* ".ID.XXXXXX.tmp": strip the dot, ".tmp" and ".XXXXXX" */
		if (!has_suffix(name, len, ".tmp") || len < 1 + 1 + 1 + STORE_TEMP_RAND_LEN + 4)
			return STORE_NAME_OTHER;
		mid = len - 4 - STORE_TEMP_RAND_LEN - 1;
		if (name[mid] != '.' || !temp_rand_ok(name + mid + 1))
			return STORE_NAME_OTHER;
		return take_id(name + 1, mid - 1, id) ? STORE_NAME_TEMP : STORE_NAME_OTHER;
	}
	if (has_suffix(name, len, ".pkl"))
		return take_id(name, len - 4, id) ? STORE_NAME_SESSION : STORE_NAME_OTHER;
	if (has_suffix(name, len, ".lock"))
		return take_id(name, len - 5, id) ? STORE_NAME_LOCK : STORE_NAME_OTHER;
	if (has_suffix(name, len, ".sandboxed"))
		return take_id(name, len - 10, id) ? STORE_NAME_MARK : STORE_NAME_OTHER;
	return STORE_NAME_OTHER;
}

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

/* How many of part's bytes, up to max + 1, are id characters. */
static size_t part_len(const char *part, size_t max)
{
	size_t n;

	for (n = 0; n <= max && part[n] != '\0'; n++)
		if (!id_char_ok((unsigned char)part[n]))
			break;
	return n;
}

bool store_part_valid(const char *part, const char *what, size_t max, char *err,
                      size_t errlen)
{
	char shown[ID_SHOW_MAX * 4 + 4];
	size_t n;

	if (part == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "missing %s", what);
		return false;
	}
	n = part_len(part, max);
	if (n >= 1 && n <= max && part[n] == '\0' && part[0] != '.')
		return true;
	if (err != NULL && errlen > 0) {
		id_quote(part, shown, sizeof(shown));
		snprintf(err, errlen, "invalid %s '%s': use 1-%zu characters from "
		         "[A-Za-z0-9._-], not starting with '.'", what, shown, max);
	}
	return false;
}

/* See store.h.  err may be NULL or errlen 0 when the caller wants no reason. */
bool store_id_valid(const char *id, char *err, size_t errlen)
{
	size_t n;

	if (id == NULL)
		return store_part_valid(id, "session id", STORE_ID_MAX, err, errlen);
	n = part_len(id, STORE_NS_MAX);
	if (n >= 1 && id[n] == STORE_NS_SEP && id[0] != '.' && strlen(id) <= STORE_ID_MAX)
		return store_part_valid(id + n + 1, "session id", STORE_ID_MAX - n - 1, err,
		                        errlen);
	return store_part_valid(id, "session id", STORE_ID_MAX, err, errlen);
}

bool store_ns_is_default(const char *ns)
{
	return ns == NULL || ns[0] == '\0' || strcmp(ns, STORE_NS_DEFAULT) == 0;
}

int store_ns_name(const char *ns, const char *id, char *out, char *err, size_t errlen)
{
	size_t room;

	if (store_ns_is_default(ns)) {
		if (!store_part_valid(id, "session id", STORE_ID_MAX, err, errlen))
			return -1;
		snprintf(out, STORE_ID_MAX + 1, "%s", id);
		return 0;
	}
	if (!store_part_valid(ns, "namespace", STORE_NS_MAX, err, errlen))
		return -1;
	room = STORE_ID_MAX - strlen(ns) - 1;
	if (!store_part_valid(id, "session id", STORE_ID_MAX, err, errlen))
		return -1;
	if (strlen(id) > room) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "session id too long for namespace '%s': at most %zu "
			         "characters there", ns, room);
		return -1;
	}
	snprintf(out, STORE_ID_MAX + 1, "%s%c%s", ns, STORE_NS_SEP, id);
	return 0;
}

bool store_ns_holds(const char *ns, const char *stored)
{
	const char *sep = strchr(stored, STORE_NS_SEP);
	size_t n;

	if (store_ns_is_default(ns))
		return sep == NULL;
	n = strlen(ns);
	return sep != NULL && (size_t)(sep - stored) == n && memcmp(stored, ns, n) == 0;
}

const char *store_ns_id(const char *stored)
{
	const char *sep = strchr(stored, STORE_NS_SEP);

	return sep ? sep + 1 : stored;
}

/* Replace text's n bytes at at with with (len: text's buffer); false when
 * it does not fit. */
static bool splice(char *text, size_t len, char *at, size_t n, const char *with)
{
	size_t w = strlen(with), tail = strlen(at + n) + 1;

	if (strlen(text) - n + w + 1 > len)
		return false;
	memmove(at + w, at + n, tail);
	memcpy(at, with, w);
	return true;
}

void store_ns_unname(char *text, size_t len, const char *ns)
{
	char quoted[STORE_NS_MAX + 3], reset[STORE_NS_MAX + 12], again[STORE_NS_MAX + 26];
	char *at;

	if (store_ns_is_default(ns) || strlen(ns) > STORE_NS_MAX)
		return;
	snprintf(quoted, sizeof(quoted), "'%s%c", ns, STORE_NS_SEP);
	snprintf(reset, sizeof(reset), "--reset %s%c", ns, STORE_NS_SEP);
	snprintf(again, sizeof(again), "--namespace %s --reset ", ns);
	while ((at = strstr(text, reset)) != NULL && splice(text, len, at, strlen(reset), again))
		;
	while ((at = strstr(text, quoted)) != NULL)
		splice(text, len, at, strlen(quoted), "'");
}

uint64_t store_name_seq(const char *text, size_t len)
{
	uint64_t v = 0;

	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++) {
		uint64_t d = (uint64_t)(text[i] - '0');

		if (text[i] < '0' || text[i] > '9' || v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	return v;
}
