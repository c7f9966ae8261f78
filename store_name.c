/*
 * store_name.c - classify the entries of a FileStore directory.
 *
 * Kept apart from store_file.c so it can be fuzzed without a directory: it
 * reads names an attacker with access to the directory may have chosen.
 */
#include "store_name.h"

#include <stdbool.h>
#include <string.h>

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
