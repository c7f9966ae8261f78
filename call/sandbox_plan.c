/*
 * sandbox_plan.c - what the sandbox will show, decided in the parent.
 *
 * MUST: no two binds overlap, and none lands on or above what the sandbox
 * builds itself (/usr and the links beside it, /etc, /dev, /proc, /tmp):
 * the worker makes mount points on its own tmpfs only, never inside a bind.
 */
#include "sandbox_plan.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount_guard.h"
#include "pidcg.h"
#include "sandbox_fs.h"
#include "sandbox_ids.h"

#define PY_VERSION_DIR "python3.11"

/* Shown whole in every sandbox: nothing under them needs a bind. */
static const char *const system_dirs[] = { SANDBOX_SYSTEM_DIRS };

/* Built by the sandbox itself: no --mount may touch them. */
static const char *const reserved[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	"/dev", "/proc", "/tmp",
};

struct bind {
	char *host;
	char *path;
	enum mount_mode mode;
	char what[320];          /* for messages: "toolbox 'mytools'", "--mount 'a:b'" */
};

struct plan {
	struct bind *b;
	size_t n, cap;
	struct mount_guard *guard;       /* what no --mount may overlap */
	char *err;
	size_t errlen;
};

static bool overlaps(const char *a, const char *b)
{
	return sandbox_path_under(a, b) || sandbox_path_under(b, a);
}

static bool under_system(const char *path)
{
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(*system_dirs); i++)
		if (sandbox_path_under(path, system_dirs[i]))
			return true;
	return false;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static enum plan_status oom(struct plan *p)
{
	snprintf(p->err, p->errlen, "out of memory");
	return PLAN_FAIL;
}

static enum plan_status add_bind(struct plan *p, const char *host, const char *path,
                                 enum mount_mode mode, const char *what)
{
	struct bind *b;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		struct bind *grown = realloc(p->b, cap * sizeof(*grown));

		if (!grown)
			return oom(p);
		p->b = grown;
		p->cap = cap;
	}
	b = &p->b[p->n];
	b->host = strdup(host);
	b->path = strdup(path);
	b->mode = mode;
	snprintf(b->what, sizeof(b->what), "%s", what);
	if (!b->host || !b->path) {
		free(b->host);
		free(b->path);
		return oom(p);
	}
	p->n++;
	return PLAN_OK;
}

static void drop_bind(struct plan *p, size_t i)
{
	free(p->b[i].host);
	free(p->b[i].path);
	memmove(&p->b[i], &p->b[i + 1], (p->n - i - 1) * sizeof(*p->b));
	p->n--;
}

/* A path of the virtualenv named by VIRTUAL_ENV, normalized, or NULL. */
static char *venv_path(void)
{
	const char *v = getenv("VIRTUAL_ENV");
	struct mount_arg m;
	char err[OPTS_ERR_MAX], spec[PATH_MAX + 8];
	char *out;

	if (!v || v[0] != '/' || strchr(v, ':') || !is_dir(v))
		return NULL;
	/* Reuse the --mount normalizer on "V:V". */
	snprintf(spec, sizeof(spec), "%s:%s", v, v);
	if (opts_parse_mount(spec, &m, err, sizeof(err)) < 0)
		return NULL;
	out = m.host;
	m.host = NULL;
	mount_arg_release(&m);
	return out;
}

/* The directories the worker's Python searches, in its order. */
static char **search_dirs(const char *venv)
{
	const char *pp = getenv("PYTHONPATH");
	size_t n = 0, cap = 16;
	char **dirs = calloc(cap, sizeof(*dirs));
	char cwd[PATH_MAX], buf[PATH_MAX + 64];
	const char *fixed[] = {
		PY_PREFIX "/lib/" PY_VERSION_DIR,
		PY_PREFIX "/lib/" PY_VERSION_DIR "/lib-dynload",
		NULL,   /* the virtualenv's site-packages */
		"/usr/local/lib/" PY_VERSION_DIR "/dist-packages",
		PY_PREFIX "/lib/python3/dist-packages",
		PY_PREFIX "/lib/" PY_VERSION_DIR "/dist-packages",
	};

	if (!dirs)
		return NULL;
	if (getcwd(cwd, sizeof(cwd)))
		dirs[n++] = strdup(cwd);
	for (const char *p = pp; p && *p; ) {
		size_t len = strcspn(p, ":");
		char **grown;

		if (n + 8 >= cap) {
			grown = realloc(dirs, 2 * cap * sizeof(*dirs));
			if (!grown)
				break;
			dirs = grown;
			cap *= 2;
		}
		if (len)
			dirs[n++] = strndup(p, len);
		p += len + (p[len] == ':');
	}
	if (venv) {
		snprintf(buf, sizeof(buf), "%s/lib/" PY_VERSION_DIR "/site-packages", venv);
		fixed[2] = buf;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed) && n + 1 < cap; i++)
		if (fixed[i])
			dirs[n++] = strdup(fixed[i]);
	dirs[n] = NULL;
	return dirs;
}

static void free_list(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

/* Where Python would import the top-level module top from, or NULL. */
static char *find_module(char **dirs, const char *top)
{
	static const char *const suffixes[] = {
		".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so", ".py", ".pyc",
	};
	char path[PATH_MAX], init[PATH_MAX + 16], *namespace_dir = NULL;

	for (size_t d = 0; dirs[d]; d++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[d], top);
		if (is_dir(path)) {
			snprintf(init, sizeof(init), "%s/__init__.py", path);
			if (exists(init)) {
				free(namespace_dir);
				return strdup(path);
			}
			if (!namespace_dir)
				namespace_dir = strdup(path);
		}
		for (size_t s = 0; s < sizeof(suffixes) / sizeof(*suffixes); s++) {
			snprintf(path, sizeof(path), "%s/%s%s", dirs[d], top, suffixes[s]);
			if (exists(path) && !is_dir(path)) {
				free(namespace_dir);
				return strdup(path);
			}
		}
	}
	return namespace_dir;
}

static enum plan_status add_toolboxes(struct plan *p, const struct plan_input *in,
                                      char **dirs, const char *venv)
{
	for (size_t i = 0; i < in->n_toolboxes; i++) {
		const char *module = in->toolboxes[i].module;
		char top[256], what[300];
		char *where;
		bool covered = false;
		enum plan_status st;

		snprintf(top, sizeof(top), "%.*s", (int)strcspn(module, "."), module);
		where = find_module(dirs, top);
		if (!where)
			continue;   /* the worker reports it cannot be imported */
		covered = under_system(where) || (venv && sandbox_path_under(where, venv));
		for (size_t b = 0; b < p->n && !covered; b++)
			covered = sandbox_path_under(where, p->b[b].path);
		for (size_t r = 0; r < sizeof(reserved) / sizeof(*reserved) && !covered; r++) {
			if (sandbox_path_under(where, reserved[r]) &&
			    strcmp(reserved[r], "/tmp") != 0) {
				snprintf(p->err, p->errlen, "toolbox '%s' is at %s, which cannot be "
				         "shown in the sandbox", module, where);
				free(where);
				return PLAN_USAGE;
			}
		}
		snprintf(what, sizeof(what), "the toolbox '%s'", module);
		if (mount_guard_add(p->guard, where, what, false) < 0) {
			free(where);
			return oom(p);
		}
		st = covered ? PLAN_OK : add_bind(p, where, where, MOUNT_RO, what);
		free(where);
		if (st != PLAN_OK)
			return st;
	}
	return PLAN_OK;
}

static enum plan_status mount_error(struct plan *p, const struct mount_arg *m,
                                    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum plan_status mount_error(struct plan *p, const struct mount_arg *m,
                                    const char *fmt, ...)
{
	char q[300], why[600];
	va_list ap;

	snprintf(q, sizeof(q), "%s:%s:%s", m->host, m->virt, mount_mode_name(m->mode));
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "--mount '%s': %s", q, why);
	return PLAN_USAGE;
}

static enum plan_status check_mount(struct plan *p, const struct mount_arg *m)
{
	struct stat st;
	char why[700];

	if (stat(m->host, &st) < 0)
		return mount_error(p, m, "the host path cannot be used: %s", strerror(errno));
	if (m->mode == MOUNT_OVERLAY && !S_ISDIR(st.st_mode))
		return mount_error(p, m, "%s", "an overlay needs a directory as the host path");
	if (strcmp(m->virt, "/") == 0)
		return mount_error(p, m, "%s", "the virtual path cannot be the sandbox's root");
	if (mount_guard_check(p->guard, m, why, sizeof(why)))
		return mount_error(p, m, "%s", why);
	for (size_t r = 0; r < sizeof(reserved) / sizeof(*reserved); r++) {
		bool tmp = strcmp(reserved[r], "/tmp") == 0;

		/* Below /tmp is fine: that is the sandbox's own tmpfs. */
		if (tmp ? sandbox_path_under("/tmp", m->virt) : overlaps(m->virt, reserved[r]))
			return mount_error(p, m, "the virtual path would shadow %s, which the "
			                   "sandbox provides itself", reserved[r]);
	}
	for (size_t i = 0; i < p->n; i++) {
		struct bind *b = &p->b[i];

		/* A toolbox reached through an identical mount needs no bind. */
		if (sandbox_path_under(b->path, m->virt) && strcmp(m->host, m->virt) == 0 &&
		    strncmp(b->what, "--mount", 7) != 0) {
			drop_bind(p, i--);
			continue;
		}
		if (overlaps(m->virt, b->path))
			return mount_error(p, m, "the virtual path overlaps %s", b->what);
	}
	return PLAN_OK;
}

static enum plan_status add_mounts(struct plan *p, const struct plan_input *in)
{
	for (size_t i = 0; i < in->n_mounts; i++) {
		const struct mount_arg *m = &in->mounts[i];
		char what[320];
		enum plan_status st = check_mount(p, m);

		if (st != PLAN_OK)
			return st;
		snprintf(what, sizeof(what), "--mount '%s:%s'", m->host, m->virt);
		if ((st = add_bind(p, m->host, m->virt, m->mode, what)) != PLAN_OK)
			return st;
	}
	return PLAN_OK;
}

struct wire {
	char *p;
	size_t len, cap;
};

static int wire_add(struct wire *w, const char *a, const char *b)
{
	size_t na = strlen(a), nb = b ? strlen(b) : 0, need = w->len + na + nb + 1;

	if (need > w->cap) {
		size_t cap = need > 2 * w->cap ? need : 2 * w->cap;
		char *grown = realloc(w->p, cap);

		if (!grown)
			return -1;
		w->p = grown;
		w->cap = cap;
	}
	memcpy(w->p + w->len, a, na);
	if (nb)
		memcpy(w->p + w->len + na, b, nb);
	w->p[w->len + na + nb] = '\0';
	w->len = need;
	return 0;
}

static int add_env(struct wire *w, const char *name, const char *value)
{
	char buf[256];

	if (!value)
		return 0;
	snprintf(buf, sizeof(buf), "%s=", name);
	return wire_add(w, buf, value);
}

extern char **environ;

/* The worker's whole environment: in a sandbox a minimal one; otherwise,
 * when --env is given, ours with its settings on top.  Without either the
 * plan has none (the worker inherits ours). */
static int build_env(const struct plan_input *in, struct wire *w)
{
	const char *lang = getenv("LANG");

	if (in->sandbox &&
	    (add_env(w, "PATH", "/usr/local/bin:/usr/bin:/bin") < 0 ||
	     add_env(w, "HOME", "/tmp") < 0 ||
	     add_env(w, "LANG", lang && *lang ? lang : "C.UTF-8") < 0 ||
	     add_env(w, "VIRTUAL_ENV", getenv("VIRTUAL_ENV")) < 0 ||
	     add_env(w, "PYTHONPATH", getenv("PYTHONPATH")) < 0))
		return -1;
	for (char **e = environ; !in->sandbox && in->n_env && *e; e++)
		if (wire_add(w, *e, NULL) < 0)
			return -1;
	for (size_t i = 0; i < in->n_env; i++) {
		const char *e = in->env_args[i];

		/* NAME passes the caller's value through; later entries win. */
		if (strchr(e, '=') ? wire_add(w, e, NULL) < 0
		                   : in->sandbox && add_env(w, e, getenv(e)) < 0)
			return -1;
	}
	return 0;
}

static enum plan_status serialize(struct plan *p, const struct plan_input *in,
                                  struct sandbox_plan *out)
{
	struct wire binds = { 0 }, env = { 0 };

	for (size_t i = 0; i < p->n; i++)
		if (wire_add(&binds, p->b[i].host, NULL) < 0 ||
		    wire_add(&binds, p->b[i].path, NULL) < 0 ||
		    wire_add(&binds, mount_mode_name(p->b[i].mode), NULL) < 0)
			goto oom;
	if (build_env(in, &env) < 0)
		goto oom;
	out->binds = binds.p;
	out->binds_len = binds.len;
	out->env = env.p;
	out->env_len = env.len;
	return PLAN_OK;
oom:
	free(binds.p);
	free(env.p);
	return oom(p);
}

enum plan_status sandbox_plan_build(const struct plan_input *in,
                                    struct sandbox_plan *out, char *err,
                                    size_t errlen)
{
	struct plan p = { .err = err, .errlen = errlen };
	enum plan_status st = PLAN_OK;
	char *venv = NULL, **dirs = NULL;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < in->n_env; i++)
		if (opts_check_env(in->env_args[i], err, errlen) < 0)
			return PLAN_USAGE;
	/* A root caller's sandbox is SANDBOX_ROOT_ID on the host: it must be
	 * nobody's. */
	if (in->sandbox && geteuid() == 0 &&
	    (getpwuid(SANDBOX_ROOT_ID) || getgrgid(SANDBOX_ROOT_ID))) {
		snprintf(err, errlen, "cannot create the sandbox: the id %u it runs as for "
		         "root is in use on this host (/etc/passwd or /etc/group)",
		         SANDBOX_ROOT_ID);
		return PLAN_FAIL;
	}
	if (in->sandbox) {
		p.guard = calloc(1, sizeof(*p.guard));
		if (!p.guard)
			return oom(&p);
		p.guard->rw_code_ok = in->rw_code_mounts;
		if (mount_guard_add(p.guard, in->store_dir, "the session store", true) < 0 ||
		    mount_guard_add_key(p.guard, in->key_file) < 0 ||
		    mount_guard_add_code(p.guard) < 0)
			st = oom(&p);
		venv = venv_path();
		if (st == PLAN_OK && venv && !under_system(venv))
			st = add_bind(&p, venv, venv, MOUNT_RO, "the virtualenv");
		if (st == PLAN_OK && !(dirs = search_dirs(venv)))
			st = oom(&p);
		if (st == PLAN_OK)
			st = add_toolboxes(&p, in, dirs, venv);
		if (st == PLAN_OK)
			st = add_mounts(&p, in);
	}
	if (st == PLAN_OK)
		st = serialize(&p, in, out);
	for (size_t i = 0; i < p.n; i++) {
		free(p.b[i].host);
		free(p.b[i].path);
	}
	free(p.b);
	free(venv);
	free_list(dirs);
	if (p.guard)
		mount_guard_release(p.guard);
	free(p.guard);
	return st;
}

void sandbox_plan_release(struct sandbox_plan *p)
{
	free(p->binds);
	free(p->env);
	memset(p, 0, sizeof(*p));
}

int sandbox_plan_begin(const struct settings *s, struct plan_cgroups *cg,
                       char *err, size_t errlen)
{
	uint64_t max = s->limits.v[LIMIT_MAX_PROCS], mem = s->limits.v[LIMIT_MEMORY];
	char why[PIDCG_PATH_MAX + 128];

	cg->pids[0] = cg->memory[0] = '\0';
	/* RLIMIT_NPROC does not hold uid 0 back: count in a cgroup instead.
	 * In a sandbox the outer waiting process is in it too. */
	if (max && geteuid() == 0 &&
	    pidcg_create(max + (s->sandbox ? 1 : 0), mem != 0, cg->pids, sizeof(cg->pids),
	                 why, sizeof(why)) < 0) {
		cg->pids[0] = '\0';
		snprintf(err, errlen, "cannot enforce --max-procs for root, which process "
		         "rlimits do not hold back: %s", why);
		return -1;
	}
	/* Where no memory cgroup can be made, rlimits and the tmpfs sizes are
	 * what holds --memory (see the README). */
	if (mem)
		pidcg_create_memory(mem + PLAN_MEMORY_SLACK, cg->pids, cg->memory,
		                    sizeof(cg->memory), why, sizeof(why));
	return 0;
}

void sandbox_plan_end(struct plan_cgroups *cg)
{
	if (cg->memory[0] && strcmp(cg->memory, cg->pids) != 0)
		pidcg_remove(cg->memory);
	if (cg->pids[0])
		pidcg_remove(cg->pids);
	cg->pids[0] = cg->memory[0] = '\0';
}

static struct span wire_span(const char *p, size_t len)
{
	struct span s = { (const uint8_t *)p, len, p != NULL };

	return s;
}

void sandbox_plan_fill(const struct sandbox_plan *p, const struct settings *s,
                       const struct plan_cgroups *cg, struct request *r)
{
	if (s->sandbox)
		r->flags |= REQ_SANDBOX;
	r->limits = s->limits;
	if (p) {
		r->binds = wire_span(p->binds, p->binds_len);
		if (p->env)
			r->env = wire_span(p->env, p->env_len);
	}
	if (cg && cg->pids[0])
		r->pids_cgroup = span_str(cg->pids);
	if (cg && cg->memory[0])
		r->mem_cgroup = span_str(cg->memory);
}
