/*
 * fuzz_warm_key.c - libFuzzer harness for the warm path's text inputs
 * (warm_proto.c): the key of a call, which picks and configures a zygote,
 * and the module file entries that decide when a zygote is stale.
 *
 * The input is a payload as wire_decode hands it over (a final NUL is
 * added when missing).  Every string the key parser returns must lie
 * inside the payload; every file entry it accepts must rebuild the entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "warm_proto.h"
#include "wire.h"

static const uint8_t *lo, *hi;

/* s is a NUL-terminated string inside [lo, hi), or a static default. */
static void check_inside(const char *s, const char *dflt)
{
	const uint8_t *p = (const uint8_t *)s;

	CHECK(s != NULL);
	if (dflt && strcmp(s, dflt) == 0 && !(p >= lo && p < hi))
		return;
	CHECK(p >= lo && p < hi);
	CHECK(memchr(p, '\0', (size_t)(hi - p)) != NULL);
}

static void fuzz_file(const char *entry)
{
	char path[64], again[256];
	long long mtime, size;

	if (warm_key_file(entry, path, sizeof(path), &mtime, &size) < 0)
		return;
	CHECK(strlen(path) < sizeof(path) && path[0] != '\0');
	snprintf(again, sizeof(again), "%s\t%lld\t%lld", path, mtime, size);
	/* Numbers may be written with a sign or leading zeros; the path is exact. */
	CHECK(strncmp(entry, again, strlen(path) + 1) == 0);
}

static bool drop_odd(const char *name, void *ctx)
{
	(void)ctx;
	return strlen(name) % 2 == 1;
}

/*
 * The server's view of a key's tail: within itself, a key holds no more
 * than its preload entries; no more of them are covered than it has; and
 * dropping some leaves its base as it was and the key no longer.
 */
static void fuzz_preload(const uint8_t *key, size_t len, size_t n_preload)
{
	long base = warm_key_base_len(key, len);
	size_t n, kept;
	uint8_t *copy;

	CHECK(base >= -1 && base <= (long)len);
	if (base < 0) {
		CHECK(!warm_key_within(key, len, key, len, &n));
		return;
	}
	if (warm_key_within(key, len, key, len, &n))
		CHECK(n <= n_preload);
	CHECK(warm_key_covered(key, len, key, len) <= n_preload);
	copy = malloc(len);
	CHECK(copy != NULL);
	memcpy(copy, key, len);
	kept = warm_key_drop(copy, len, drop_odd, NULL);
	CHECK(kept <= len);
	CHECK(warm_key_base_len(copy, kept) == base);
	CHECK(memcmp(copy, key, (size_t)base) == 0);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct warm_key env;
	uint8_t *key;
	size_t len = size, pos = 0;
	const char *v;

	if (size > WIRE_MAX_PAYLOAD)
		return 0;
	key = malloc(size + 1);
	CHECK(key != NULL);
	memcpy(key, data, size);
	if (len == 0 || key[len - 1] != '\0')
		key[len++] = '\0';
	lo = key;
	hi = key + len;
	warm_key_decode(key, len, &env);
	check_inside(env.cwd, "/");
	check_inside(env.pythonpath, "");
	check_inside(env.venv, "");
	CHECK(env.n_modules <= sizeof(env.modules) / sizeof(*env.modules));
	CHECK(env.n_env <= sizeof(env.env) / sizeof(*env.env));
	for (size_t i = 0; i < env.n_modules; i++)
		check_inside(env.modules[i], NULL);
	for (size_t i = 0; i < env.n_env; i++)
		check_inside(env.env[i], NULL);
	CHECK(env.n_preload <= sizeof(env.preload) / sizeof(*env.preload));
	for (size_t i = 0; i < env.n_preload; i++)
		check_inside(env.preload[i], NULL);
	fuzz_preload(key, len, env.n_preload);
	while ((v = wire_next(key, len, "file", &pos)))
		fuzz_file(v);
	/* The whole input as one entry too, cut at its first NUL. */
	fuzz_file((const char *)key);
	free(key);
	return 0;
}
