/*
 * pidcg.h - a pids cgroup for one call, so --max-procs holds for root too,
 * and a memory cgroup, so --memory holds for every kind of memory.
 *
 * RLIMIT_NPROC never applies to the host's uid 0, so when dolsot runs as
 * root the process count is capped by a pids cgroup instead: the parent
 * makes one (cgroup v1: below its own in the "pids" hierarchy; v2: below the
 * nearest cgroup, its own or one above it, that enables the controller for
 * its children and that it may write), the worker joins it before anything
 * else, and the parent removes it once every process of the call is gone.
 * Nothing here writes cgroup.subtree_control: a cgroup's controllers are
 * the ones its parent enables, so a cgroup of dolsot's own could pass on
 * only what its parent already gives, and the call's cgroup is made there.
 */
#ifndef DOLSOT_PIDCG_H
#define DOLSOT_PIDCG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PIDCG_PATH_MAX 4096

/*
 * Make a cgroup allowing at most max tasks; its directory goes into path.
 * On cgroup v2, where the call has one cgroup for both, with_memory asks
 * for a place whose cgroups can have the memory controller too (when there
 * is one).  Returns 0, or -1 with a reason in err (no pids controller, not
 * writable).
 */
int pidcg_create(uint64_t max, bool with_memory, char *path, size_t pathlen,
                 char *err, size_t errlen);

/*
 * Make a cgroup holding its processes to bytes of memory (anonymous, shared,
 * tmpfs and page cache alike; swap too where it is accounted); its
 * directory goes into path.  When pids_path is a v2 cgroup from
 * pidcg_create(), the limit is set there instead (a process is in one v2
 * cgroup) and path is a copy of it; pidcg_remove() it only once then.
 * Returns 0, or -1 with err and path "" (no memory controller, no
 * permission).
 */
int pidcg_create_memory(uint64_t bytes, const char *pids_path, char *path,
                        size_t pathlen, char *err, size_t errlen);

/* Move the calling process into the cgroup at path.  0 or -1 with err. */
int pidcg_join(const char *path, char *err, size_t errlen);

/* True when the kernel's OOM killer killed a process of the memory cgroup
 * at path (it hit its limit). */
bool pidcg_oom_killed(const char *path);

/* Remove the cgroup (empty by now); errors are ignored. */
void pidcg_remove(const char *path);

#endif
