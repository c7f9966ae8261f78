/*
 * sandbox_fs.h - the sandbox's file system: a read-only tmpfs root holding
 * read-only binds of /usr (the interpreter, its standard library, Debian's
 * dist-packages and the shared libraries extension modules load), a few
 * files of /etc, /dev/null, /dev/zero and /dev/urandom, a private /proc,
 * private writable /tmp and /dev/shm, and the caller's binds.
 */
#ifndef DOLSOT_SANDBOX_FS_H
#define DOLSOT_SANDBOX_FS_H

#include <stdbool.h>
#include <stddef.h>

#include "sandbox_cfg.h"

/* The host directories bound whole, read-only, into every sandbox (links
 * to them are copied as links); the plan and the build share the list. */
#define SANDBOX_SYSTEM_DIRS "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"

/* True when path is dir or below it. */
bool sandbox_path_under(const char *path, const char *dir);

struct sandbox_ids;
struct sandbox_fs;

/*
 * In a process that owns a fresh mount namespace (with CAP_SYS_ADMIN there),
 * before the sandbox's PID 1 is forked: make every mount private and take
 * every source (clones of the system directories, devices and cfg's binds)
 * while the host's tree is still in view.  The caller's binds go through
 * sandbox_ids_idmap().  Returns what the build needs (free it with
 * sandbox_fs_free() in each process that holds it), or NULL with err.
 */
struct sandbox_fs *sandbox_fs_take(const struct sandbox_cfg *cfg,
                                   struct sandbox_ids *ids, char *err,
                                   size_t errlen);

/*
 * Build the tree from what was taken and pivot into it, as PID 1 of a fresh
 * PID namespace (for /proc).  Ends in cfg->cwd, or /tmp.  Returns 0, or -1
 * with err.
 */
int sandbox_fs_build(struct sandbox_fs *fs, char *err, size_t errlen);

void sandbox_fs_free(struct sandbox_fs *fs);

#endif
