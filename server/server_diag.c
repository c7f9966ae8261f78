/*
 * server_diag.c - the --server-status text: figures and memory of the
 * server, its zygotes and their spares.
 */
#include "server_diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "sha256.h"
#include "warm_proto.h"

/* Hex digits of the environment's fingerprint shown: enough to tell the
 * environments of one server's zygotes apart at a glance. */
#define FINGERPRINT_HEX 12
/* At most this many differing variables are named, then a count. */
#define DIFF_NAMES_MAX 16

struct mem { long rss, pss, priv, dirty; };   /* kB; -1 when unknown; dirty: private dirty */

/* "Rss: N kB" style fields of /proc/PID/smaps_rollup (pid 0: this
 * process's), in kB. */
static struct mem memory_of(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	long v, clean = 0, dirty = 0;
	struct mem m = { -1, -1, -1, -1 };

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps_rollup");
	f = fopen(path, "re");
	if (!f)
		return m;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Rss: %ld", &v) == 1)
			m.rss = v;
		else if (sscanf(line, "Pss: %ld", &v) == 1)
			m.pss = v;
		else if (sscanf(line, "Private_Clean: %ld", &v) == 1)
			clean = v;
		else if (sscanf(line, "Private_Dirty: %ld", &v) == 1)
			dirty = v;
	}
	fclose(f);
	m.priv = clean + dirty;
	m.dirty = dirty;
	return m;
}

/* The zygote's spare (the worker it forked ahead of the next call), or 0. */
static pid_t spare_of(pid_t zygote)
{
	pid_t kids[16];
	size_t n = proc_list_children(zygote, kids, 16);

	for (size_t i = 0; i < n; i++) {
		char path[64], comm[32] = "";
		FILE *f;
		bool spare;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)kids[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		spare = fgets(comm, sizeof(comm), f) && strcmp(comm, "dolsot-spare\n") == 0;
		fclose(f);
		if (spare)
			return kids[i];
	}
	return 0;
}

static void append(char *text, size_t *n, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *text, size_t *n, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*n >= cap)
		return;
	va_start(ap, fmt);
	w = vsnprintf(text + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n += (size_t)w;
}

/* The fingerprint of the NAME=VALUE variables a zygote was warmed with
 * (sorted, without dolsot's own and a shell's per-command ones: see
 * warm.c's key_environment), as FINGERPRINT_HEX hex digits into hex. */
static void env_fingerprint(const struct warm_key *env, char hex[FINGERPRINT_HEX + 1])
{
	static struct iovec parts[WARM_KEY_ENV];
	uint8_t sum[SHA256_LEN];

	/* Each entry with its NUL, so that no two lists hash alike. */
	for (size_t i = 0; i < env->n_env; i++)
		parts[i] = (struct iovec){ (void *)env->env[i], strlen(env->env[i]) + 1 };
	sha256_parts(parts, env->n_env, sum);
	for (size_t i = 0; i < FINGERPRINT_HEX / 2; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
}

/* The length of entry's NAME (before its '='). */
static size_t name_len(const char *entry)
{
	return strcspn(entry, "=");
}

/* Whether a and b name the same directory, paths, venv and toolboxes. */
static bool same_outside_env(const struct warm_key *a, const struct warm_key *b)
{
	if (strcmp(a->cwd, b->cwd) != 0 || strcmp(a->pythonpath, b->pythonpath) != 0 ||
	    strcmp(a->venv, b->venv) != 0 || a->n_modules != b->n_modules)
		return false;
	for (size_t i = 0; i < a->n_modules; i++)
		if (strcmp(a->modules[i], b->modules[i]) != 0)
			return false;
	return true;
}

bool server_diag_env_diff(char *text, size_t *n, size_t cap, const uint8_t *key,
                          size_t key_len, pid_t other, const uint8_t *other_key,
                          size_t other_len)
{
	static struct warm_key a, b;
	size_t i = 0, j = 0, named = 0, more = 0;

	warm_key_decode(key, key_len, &a);
	warm_key_decode(other_key, other_len, &b);
	if (!same_outside_env(&a, &b))
		return false;
	/* Both lists are sorted by entry, so by name: walk them together. */
	while (i < a.n_env || j < b.n_env) {
		const char *name;
		size_t len;
		int order;

		if (i == a.n_env || j == b.n_env)
			order = i == a.n_env ? 1 : -1;
		else
			order = strcmp(a.env[i], b.env[j]);
		if (order == 0) {
			i++, j++;
			continue;
		}
		name = order < 0 ? a.env[i] : b.env[j];
		len = name_len(name);
		/* A variable set in both with other values counts once. */
		if (i < a.n_env && j < b.n_env && name_len(a.env[i]) == name_len(b.env[j]) &&
		    strncmp(a.env[i], b.env[j], name_len(a.env[i]) + 1) == 0)
			i++, j++;
		else if (order < 0)
			i++;
		else
			j++;
		if (named == 0)
			append(text, n, cap, "  environment differs from zygote %d's in", (int)other);
		if (named < DIFF_NAMES_MAX && *n < cap - 300)
			append(text, n, cap, " %.*s", (int)len, name), named++;
		else
			more++;
	}
	if (more)
		append(text, n, cap, " and %zu more", more);
	if (named)
		append(text, n, cap, "\n");
	return named > 0;
}

void server_diag_server(char *text, size_t *n, size_t cap, const struct server_figures *f)
{
	struct mem m = memory_of(getpid());

	append(text, n, cap, "pid %d\nuptime %.0f s\ncalls %llu warm, %llu cold\n"
	       "calls with the session's modules imported ahead %llu, some of them %llu\n"
	       "memory %ld kB rss, %ld kB pss, %ld kB private\n"
	       "sessions in memory %u\n"
	       "units in memory %u (%llu stored since the start)\n"
	       "zygotes %zu (at most %d, %d per environment, %ld kB private together, "
	       "%d s idle)\n",
	       (int)getpid(), f->uptime, (unsigned long long)f->warm,
	       (unsigned long long)f->cold, (unsigned long long)f->preloaded,
	       (unsigned long long)f->nearer, m.rss, m.pss, m.priv, f->sessions, f->units,
	       (unsigned long long)f->units_stored, f->zygotes,
	       f->max_zygotes, f->env_zygotes, f->memory_kb, f->idle_seconds);
}

void server_diag_skipped(char *text, size_t *n, size_t cap, const char *module,
                         const char *why)
{
	append(text, n, cap, "not imported ahead %s: %s\n", module, why);
}

long server_diag_private_kb(pid_t pid)
{
	return memory_of(pid).priv;
}

long server_diag_dirty_kb(pid_t pid)
{
	return memory_of(pid).dirty;
}

void server_diag_zygote(char *text, size_t *n, size_t cap, pid_t pid,
                        const char *state, double idle, const uint8_t *key,
                        size_t key_len, pid_t grown_from, const char *note)
{
	static struct warm_key env;
	struct mem m = memory_of(pid);
	char hex[FINGERPRINT_HEX + 1];

	warm_key_decode(key, key_len, &env);
	append(text, n, cap, "zygote %d %s idle %.0f s: %ld kB rss, %ld kB pss, "
	       "%ld kB private\n  cwd %s\n  pythonpath %s\n  venv %s\n  toolboxes",
	       (int)pid, state, idle, m.rss, m.pss, m.priv, env.cwd,
	       *env.pythonpath ? env.pythonpath : "-", *env.venv ? env.venv : "-");
	for (size_t j = 0; j < env.n_modules && *n < cap - 300; j++)
		append(text, n, cap, " %s", env.modules[j]);
	append(text, n, cap, "%s\n  preload", env.n_modules ? "" : " -");
	for (size_t j = 0; j < env.n_preload && *n < cap - 300; j++)
		append(text, n, cap, " %s", env.preload[j]);
	append(text, n, cap, "%s\n", env.n_preload ? "" : " -");
	env_fingerprint(&env, hex);
	append(text, n, cap, "  environment %zu variables, fingerprint %s\n", env.n_env, hex);
	if (grown_from > 0)
		append(text, n, cap, "  grown from zygote %d\n", (int)grown_from);
	if (note && *note)
		append(text, n, cap, "  note %s\n", note);
}

void server_diag_spare(char *text, size_t *n, size_t cap, pid_t zygote)
{
	pid_t spare = spare_of(zygote);
	struct mem m;

	if (spare > 0) {
		m = memory_of(spare);
		append(text, n, cap, "  spare %d: %ld kB rss, %ld kB pss, %ld kB private\n",
		       (int)spare, m.rss, m.pss, m.priv);
	}
}
