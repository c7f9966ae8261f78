/*
 * server_key.c - parse the warm server's text inputs: call keys and the
 * module file lists of zygotes.  Fuzzed by fuzz/fuzz_server_key.c.
 */
#include "server_key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define COUNT(a) (sizeof(a) / sizeof(*(a)))

void server_key_env(const uint8_t *key, size_t len, struct zygote_env *env)
{
	size_t pos = 0;
	const char *v;

	memset(env, 0, sizeof(*env));
	env->cwd = wire_next(key, len, "cwd", &pos);
	pos = 0;
	env->pythonpath = wire_next(key, len, "pythonpath", &pos);
	pos = 0;
	env->venv = wire_next(key, len, "venv", &pos);
	pos = 0;
	while (env->n_modules < COUNT(env->modules) &&
	       (v = wire_next(key, len, "toolbox", &pos)))
		env->modules[env->n_modules++] = v;
	pos = 0;
	while (env->n_env < COUNT(env->env) && (v = wire_next(key, len, "env", &pos)))
		env->env[env->n_env++] = v;
	if (!env->cwd)
		env->cwd = "/";
	if (!env->pythonpath)
		env->pythonpath = "";
	if (!env->venv)
		env->venv = "";
}

/* A whole decimal number, optionally negative, that fits a long long. */
static int parse_ll(const char *s, const char *end, long long *out)
{
	char *stop;

	if (s == end || !((*s >= '0' && *s <= '9') || (*s == '-' && s + 1 < end)))
		return -1;
	errno = 0;
	*out = strtoll(s, &stop, 10);
	return errno == 0 && stop == end ? 0 : -1;
}

int server_key_file(const char *entry, char *path, size_t pathlen,
                    long long *mtime_ns, long long *size)
{
	const char *end = entry + strlen(entry);
	const char *t2 = strrchr(entry, '\t'), *t1;

	/* From the right: the numbers have no tabs, a path may. */
	if (!t2 || t2 == entry)
		return -1;
	for (t1 = t2 - 1; t1 > entry && *t1 != '\t'; t1--)
		;
	if (*t1 != '\t' || t1 == entry || (size_t)(t1 - entry) >= pathlen)
		return -1;
	if (parse_ll(t1 + 1, t2, mtime_ns) < 0 || parse_ll(t2 + 1, end, size) < 0)
		return -1;
	memcpy(path, entry, (size_t)(t1 - entry));
	path[t1 - entry] = '\0';
	return 0;
}
