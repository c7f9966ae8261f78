/*
 * sandbox_plan.h - the parent's half of isolation: decide, before anything
 * runs, what the worker's sandbox shows and which environment it gets.
 *
 * Toolboxes are found the way the worker's Python would find them (the
 * current directory, PYTHONPATH, the standard library, the virtualenv,
 * Debian's dist-packages); one that lives outside /usr is bound read-only
 * into the sandbox: the package directory, or the single module file.  The
 * --mount specs are checked against the host and against what the sandbox
 * needs for itself.  The result is in the request's wire form.
 */
#ifndef DOLSOT_SANDBOX_PLAN_H
#define DOLSOT_SANDBOX_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "frame.h"
#include "opts.h"
#include "pidcg.h"

struct plan_input {
	bool sandbox;
	const struct toolbox_arg *toolboxes;
	size_t n_toolboxes;
	const struct mount_arg *mounts;
	size_t n_mounts;
	const char *const *env_args;    /* --env specs: NAME or NAME=VALUE */
	size_t n_env;
	const char *store_dir;          /* no --mount may overlap it (mount_guard.h) */
	const char *key_file;           /* nor the session key's file, when it has one */
	bool rw_code_mounts;            /* DOLSOT_ALLOW_RW_CODE_MOUNTS=1 */
};

/* Wire-form fields of the request; each NULL when empty. */
struct sandbox_plan {
	char *binds;                    /* host NUL path NUL mode NUL, ... */
	size_t binds_len;
	char *env;                      /* NAME=VALUE NUL, ...: the whole environment */
	size_t env_len;
};

enum plan_status {
	PLAN_OK = 0,
	PLAN_FAIL = -1,                 /* a system call failed: exit 1 */
	PLAN_USAGE = -2,                /* a bad --mount or --env: exit 2 */
};

/* Fill *out from in and the process's environment.  On error, err holds one
 * line naming the offending option. */
enum plan_status sandbox_plan_build(const struct plan_input *in,
                                    struct sandbox_plan *out, char *err,
                                    size_t errlen);
void sandbox_plan_release(struct sandbox_plan *p);

/* The call's cgroups: directories, or "" for none. */
struct plan_cgroups {
	char pids[PIDCG_PATH_MAX];
	char memory[PIDCG_PATH_MAX];
};

/* What the memory cgroup allows above --memory: the interpreter's own pages
 * and the kernel's for the call, so that the heap meets RLIMIT_DATA (and a
 * MemoryError) before the cgroup's OOM killer. */
#define PLAN_MEMORY_SLACK (32ull << 20)

/*
 * Right before the worker starts: when --max-procs must be counted in a
 * pids cgroup (dolsot runs as root), make it; when --memory is given, make a
 * memory cgroup where one can be made (as root, or in a cgroup delegated to
 * the caller), else --memory is held by rlimits alone.  Returns 0, or -1
 * with err (nothing made).  sandbox_plan_end() removes them once every
 * process of the call is gone (and empties cg).
 */
int sandbox_plan_begin(const struct settings *s, struct plan_cgroups *cg,
                       char *err, size_t errlen);
void sandbox_plan_end(struct plan_cgroups *cg);

/* Put the sandbox flag, the limits, p (may be NULL; its environment replaces
 * r's) and the cgroups into r; r points into p and cg afterwards. */
void sandbox_plan_fill(const struct sandbox_plan *p, const struct settings *s,
                       const struct plan_cgroups *cg, struct request *r);

#endif
