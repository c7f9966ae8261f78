/*
 * isolate.c - turn a request's isolation fields into a sandbox and limits.
 *
 * The steps run in this order because each needs the previous one undone
 * or not yet done: the cgroup is joined while its path is still visible; the
 * sandbox is entered before the rlimits, since RLIMIT_NPROC counts
 * differently inside a user namespace; the result file is sized before
 * RLIMIT_FSIZE would forbid growing it.
 */
#include "isolate.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdio.h"
#include "guard.h"
#include "holder.h"
#include "rlimits.h"
#include "pidcg.h"
#include "sandbox.h"

static char *dup_span(struct span s)
{
	char *p = malloc(s.len + 1);

	if (p) {
		memcpy(p, s.p, s.len);
		p[s.len] = '\0';
	}
	return p;
}

/* Count the items of a list field. */
static size_t n_items(struct span list)
{
	struct span item;
	size_t n = 0;

	while (span_next_item(&list, &item))
		n++;
	return n;
}

static void free_env_list(char **list)
{
	for (char **e = list; e && *e; e++)
		free(*e);
	free(list);
}

/* The environment entries (those that are NAME=VALUE) as strings;
 * NULL-terminated. */
static char **env_list(struct span env)
{
	size_t n = n_items(env), i = 0;
	char **out = calloc(n + 1, sizeof(*out));
	struct span item;

	while (out && span_next_item(&env, &item)) {
		const uint8_t *eq = memchr(item.p, '=', item.len);

		if (!eq || eq == item.p)
			continue;
		if (!(out[i++] = dup_span(item))) {
			free_env_list(out);
			return NULL;
		}
	}
	return out;
}

static void free_bind_list(struct sandbox_bind *b, size_t n)
{
	for (size_t i = 0; b && i < n; i++) {
		free((char *)b[i].host);
		free((char *)b[i].path);
	}
	free(b);
}

static struct sandbox_bind *bind_list(struct span binds, size_t *n)
{
	size_t cap = n_items(binds) / 3, i = 0;
	struct sandbox_bind *out = calloc(cap + 1, sizeof(*out));
	struct span host, path, mode;

	while (out && span_next_item(&binds, &host) && span_next_item(&binds, &path) &&
	       span_next_item(&binds, &mode)) {
		out[i].host = dup_span(host);
		out[i].path = dup_span(path);
		out[i].mode = mode.p[0] == 'o' ? MOUNT_OVERLAY :
		              mode.p[1] == 'w' ? MOUNT_RW : MOUNT_RO;
		if (!out[i].host || !out[i].path) {
			free_bind_list(out, i + 1);
			return NULL;
		}
		i++;
	}
	*n = i;
	return out;
}

/* The request, result and save files, and what a live process keeps. */
#define ISOLATE_KEEP_MAX 10

static int enter_sandbox(const struct request *r, const struct worker_fds *fds,
                         const struct isolate_hold *hold, char *err, size_t errlen)
{
	int keep[ISOLATE_KEEP_MAX] = { fds->request, fds->result, fds->save, fds->tools };
	struct sandbox_cfg cfg = { .keep_fds = keep, .n_keep_fds = 4,
	                           .tmpfs_size = r->limits.v[LIMIT_MEMORY] };
	char why[SANDBOX_ERR_MAX], cwd[PATH_MAX];
	int ret = -1;

	for (size_t i = 0; hold && i < hold->n_keep && cfg.n_keep_fds < ISOLATE_KEEP_MAX - 1; i++)
		keep[cfg.n_keep_fds++] = hold->keep[i];
	if (hold && hold->init_fd > 2) {
		keep[cfg.n_keep_fds++] = hold->init_fd;
		cfg.init_fd = hold->init_fd;
	}
	cfg.binds = bind_list(r->binds, &cfg.n_binds);
	cfg.env = env_list(r->env);
	cfg.cwd = getcwd(cwd, sizeof(cwd));
	if (holder_end(why, sizeof(why)) < 0)   /* a shared memory cannot unshare */
		snprintf(err, errlen, "dolsot: cannot create the sandbox: %s", why);
	else if (!cfg.binds || !cfg.env)
		snprintf(err, errlen, "dolsot: cannot create the sandbox: out of memory");
	else if (sandbox_enter(&cfg, why, sizeof(why)) < 0)
		snprintf(err, errlen, "dolsot: %s", why);
	else
		ret = 0;
	free_bind_list((struct sandbox_bind *)cfg.binds, cfg.n_binds);
	free_env_list((char **)cfg.env);
	return ret;
}

/* setenv() from a "NAME=VALUE" entry. */
static int setenv_entry(const char *entry)
{
	const char *eq = strchr(entry, '=');
	char *name = strndup(entry, (size_t)(eq - entry));
	int ret = name ? setenv(name, eq + 1, 1) : -1;

	free(name);
	return ret;
}

/* The request's environment, when it has one, replaces the inherited one
 * (before Python starts, PYTHONPATH and VIRTUAL_ENV are read from it). */
static int set_env(struct span env, char *err, size_t errlen)
{
	char **list;

	if (!env.present)
		return 0;
	list = env_list(env);
	if (!list || clearenv() != 0)
		goto fail;
	for (char **e = list; *e; e++)
		if (setenv_entry(*e) != 0)
			goto fail;
	free_env_list(list);
	return 0;
fail:
	free_env_list(list);
	snprintf(err, errlen, "dolsot: cannot set the environment: %s",
	         strerror(errno ? errno : ENOMEM));
	return -1;
}

/* The answer for a cell stopped by its CPU limit, ready before it is needed:
 * a signal handler can only copy bytes. */
static struct {
	int fd;
	uint8_t *map;
	struct frame_buf frame;
} cpu_answer = { -1, NULL, { 0 } };

static void on_sigxcpu(int sig)
{
	(void)sig;
	if (ftruncate(cpu_answer.fd, (off_t)cpu_answer.frame.len) == 0)
		memcpy(cpu_answer.map, cpu_answer.frame.data, cpu_answer.frame.len);
	_exit(0);
}

static int prepare_cpu_answer(uint64_t seconds, int result_fd, char *err, size_t errlen)
{
	struct worker_result res;
	struct sigaction sa;
	char msg[160];

	snprintf(msg, sizeof(msg), "dolsot: the cell hit the CPU time limit "
	         "(--cpu-seconds %llu); session unchanged", (unsigned long long)seconds);
	memset(&res, 0, sizeof(res));
	res.exit_code = 1;
	res.error = span_str(msg);
	res.limit = span_str("cpu-seconds");
	if (frame_encode_result(&cpu_answer.frame, &res) < 0)
		goto fail;
	cpu_answer.fd = result_fd;
	cpu_answer.map = mmap(NULL, cpu_answer.frame.len, PROT_READ | PROT_WRITE,
	                      MAP_SHARED, result_fd, 0);
	if (cpu_answer.map == MAP_FAILED)
		goto fail;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigxcpu;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "dolsot: cannot prepare the cpu-seconds limit: %s",
	         strerror(errno));
	return -1;
}

/* Past RLIMIT_FSIZE a file could not grow: size the result and the save
 * files now (sparse) and let the worker shrink them to what it writes.
 * The save file is then a memfd (the client's choice), never the store's. */
static int presize(int fd, const char *what, char *err, size_t errlen)
{
	if (fd_grow_sealed(fd))
		return 0;   /* sized to the session's bound already */
	if (ftruncate(fd, (off_t)FRAME_MAX) < 0) {
		snprintf(err, errlen, "dolsot: cannot size the %s file: %s", what,
		         strerror(errno));
		return -1;
	}
	return 0;
}

static int join(struct span cgroup, const char *limit, char *err, size_t errlen)
{
	char *path = dup_span(cgroup), why[512];
	int joined = path ? pidcg_join(path, why, sizeof(why)) : -1;

	if (!path)
		snprintf(why, sizeof(why), "out of memory");
	free(path);
	if (joined < 0) {
		snprintf(err, errlen, "dolsot: cannot enforce %s: %s", limit, why);
		return -1;
	}
	return 0;
}

int isolate_worker(const struct request *r, const struct worker_fds *fds,
                   const struct isolate_hold *hold, char *err, size_t errlen)
{
	const uint64_t *l = r->limits.v;
	bool sandbox = r->flags & REQ_SANDBOX;
	enum procs_count procs = sandbox ? PROCS_BY_USERNS : PROCS_BY_USER;
	char why[512];

	if (r->pids_cgroup.present) {
		if (join(r->pids_cgroup, "--max-procs", err, errlen) < 0)
			return -1;
		procs = PROCS_BY_CGROUP;
	}
	/* Before the sandbox, whose cgroup namespace hides the path. */
	if (r->mem_cgroup.present && join(r->mem_cgroup, "--memory", err, errlen) < 0)
		return -1;
	if (sandbox ? enter_sandbox(r, fds, hold, err, errlen) < 0
	            : guard_arm(err, errlen) < 0 || set_env(r->env, err, errlen) < 0)
		return -1;
	if (l[LIMIT_MAX_FILE_SIZE] && (presize(fds->result, "result", err, errlen) < 0 ||
	                         presize(fds->save, "session", err, errlen) < 0))
		return -1;
	if (limits_apply(&r->limits, procs, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "dolsot: cannot apply the limits: %s", why);
		return -1;
	}
	if (l[LIMIT_CPU_SECONDS] && prepare_cpu_answer(l[LIMIT_CPU_SECONDS], fds->result, err, errlen) < 0)
		return -1;
	return 0;
}
