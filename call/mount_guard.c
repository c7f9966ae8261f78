/*
 * mount_guard.c - refuse --mounts over the store and, rw, over code.
 */
#include "mount_guard.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox_fs.h"

#define PY_VERSION_DIR "python3.11"

int mount_guard_add(struct mount_guard *g, const char *path, const char *what, bool store)
{
	char *copy;

	if (!path || !*path)
		return 0;
	if (g->n == MOUNT_GUARD_MAX)
		return -1;
	copy = strdup(path);
	if (!copy)
		return -1;
	g->e[g->n].path = copy;
	snprintf(g->e[g->n].what, sizeof(g->e[g->n].what), "%s", what);
	g->e[g->n].store = store;
	g->e[g->n].key = false;
	g->n++;
	return 0;
}

int mount_guard_add_key(struct mount_guard *g, const char *path)
{
	size_t n = g->n;

	if (mount_guard_add(g, path, "the session key", true) < 0)
		return -1;
	if (g->n > n)
		g->e[n].key = true;
	return 0;
}

int mount_guard_add_code(struct mount_guard *g)
{
	const char *pp = getenv("PYTHONPATH"), *venv = getenv("VIRTUAL_ENV");
	char cwd[PATH_MAX], buf[PATH_MAX + 64];
	static const char *const site[] = {
		"/usr/local/lib/" PY_VERSION_DIR "/dist-packages",
		PY_PREFIX "/lib/python3/dist-packages",
		PY_PREFIX "/lib/" PY_VERSION_DIR "/dist-packages",
	};
	int ret = 0;

	if (getcwd(cwd, sizeof(cwd)))
		ret |= mount_guard_add(g, cwd, "the current directory", false);
	for (const char *p = pp; p && *p; ) {
		size_t len = strcspn(p, ":");

		if (len && len < sizeof(buf)) {
			memcpy(buf, p, len);
			buf[len] = '\0';
			ret |= mount_guard_add(g, buf, "a PYTHONPATH entry", false);
		}
		p += len + (p[len] == ':');
	}
	if (venv && *venv) {
		ret |= mount_guard_add(g, venv, "the virtualenv", false);
		snprintf(buf, sizeof(buf), "%s/lib/" PY_VERSION_DIR "/site-packages", venv);
		ret |= mount_guard_add(g, buf, "the virtualenv's site-packages", false);
	}
	for (size_t i = 0; i < sizeof(site) / sizeof(*site); i++)
		ret |= mount_guard_add(g, site[i], "site-packages", false);
	ret |= mount_guard_add(g, PY_PREFIX "/lib/" PY_VERSION_DIR, "the standard library", false);
	return ret ? -1 : 0;
}

/*
 * path with symbolic links resolved; a path that does not exist (yet: the
 * store is made on first use) resolves through its longest existing
 * prefix.
 */
static void resolve(const char *path, char *out)
{
	char head[PATH_MAX], real[PATH_MAX];
	size_t n;

	snprintf(head, sizeof(head), "%s", path);
	for (;;) {
		if (realpath(head, real)) {
			n = strlen(head);
			snprintf(out, PATH_MAX, "%s%s", strcmp(real, "/") == 0 && path[n] ? "" : real,
			         path + n);
			return;
		}
		char *slash = strrchr(head, '/');

		if (!slash || slash == head) {
			snprintf(out, PATH_MAX, "%s", path);
			return;
		}
		*slash = '\0';
	}
}

/* True when the directory "dir" is, by inode, path or one of its
 * ancestors (path resolved; missing parts skipped). */
static bool inode_under(const char *path, const struct stat *dir)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s", path);
	for (;;) {
		if (stat(p, &st) == 0 && st.st_dev == dir->st_dev && st.st_ino == dir->st_ino)
			return true;
		char *slash = strrchr(p, '/');

		if (!slash)
			return false;
		if (slash == p) {
			if (p[1] == '\0')
				return false;
			p[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
}

/* a is b, or contains it, or lies inside it. */
static bool overlap(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	struct stat sa, sb;

	resolve(a, ra);
	resolve(b, rb);
	if (sandbox_path_under(ra, rb) || sandbox_path_under(rb, ra))
		return true;
	return (stat(ra, &sa) == 0 && inode_under(rb, &sa)) ||
	       (stat(rb, &sb) == 0 && inode_under(ra, &sb));
}

const char *mount_guard_check(const struct mount_guard *g, const struct mount_arg *m,
                              char *why, size_t len)
{
	bool rw = m->mode == MOUNT_RW;

	if (g->n == MOUNT_GUARD_MAX) {
		snprintf(why, len, "too many paths to check it against");
		return why;
	}
	for (size_t i = 0; i < g->n; i++) {
		const char *p = g->e[i].path;

		if (g->e[i].key && overlap(m->host, p)) {
			snprintf(why, len, "the host path overlaps %s (%s), with which a cell "
			         "could sign a session whose code every later call outside the "
			         "sandbox would run; mount another path", g->e[i].what, p);
			return why;
		}
		if (g->e[i].store && overlap(m->host, p)) {
			snprintf(why, len, "the host path overlaps %s (%s), which holds every "
			         "session and the warm server's socket, through which a cell could "
			         "run code outside the sandbox; mount another directory",
			         g->e[i].what, p);
			return why;
		}
		if (!g->e[i].store && rw && !g->rw_code_ok && overlap(m->host, p)) {
			snprintf(why, len, "the host path overlaps %s (%s): a cell could change "
			         "code that later calls without the sandbox run; use :ro or "
			         ":overlay, or set DOLSOT_ALLOW_RW_CODE_MOUNTS=1", g->e[i].what, p);
			return why;
		}
	}
	return NULL;
}

void mount_guard_release(struct mount_guard *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->e[i].path);
	g->n = 0;
}
