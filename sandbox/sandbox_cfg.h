/*
 * sandbox_cfg.h - what a sandbox is made of: the binds and their modes,
 * the environment, directory and fds inside.  Shared by the door
 * (sandbox.h), the file system's build (sandbox_fs.c) and --mount's
 * parser (opts.c); types only.
 */
#ifndef DOLSOT_SANDBOX_CFG_H
#define DOLSOT_SANDBOX_CFG_H

#include <stddef.h>
#include <stdint.h>

/* How a host path is shown inside: one enum for --mount (opts.c), the
 * plan (sandbox_plan.c) and the sandbox's build (sandbox_fs.c). */
enum mount_mode {
	MOUNT_RO,          /* read-only bind: writes fail with EROFS */
	MOUNT_RW,          /* read-write bind: writes reach the host */
	MOUNT_OVERLAY,     /* overlay: writes go to a tmpfs dropped with the sandbox */
};

/* One host path shown inside, at path. */
struct sandbox_bind {
	const char *host;          /* absolute, existing; a directory for overlay */
	const char *path;          /* absolute; not inside another bind */
	enum mount_mode mode;
};

struct sandbox_cfg {
	const struct sandbox_bind *binds;   /* besides the system ones; in order */
	size_t n_binds;
	char *const *env;          /* "NAME=VALUE" strings: the whole environment
	                            * inside; NULL-terminated */
	const char *cwd;           /* the directory to start in: made empty on the
	                            * read-only root when nothing is bound there;
	                            * NULL or unusable means /tmp */
	const int *keep_fds;       /* fds >= 3 to keep; every other open fd is
	                            * pointed at /dev/null (the number stays valid) */
	size_t n_keep_fds;
	uint64_t tmpfs_size;       /* when not 0, caps each of the sizes below
	                            * (dolsot passes --memory) */
	int init_fd;               /* an fd >= 3 of keep_fds: PID 1 stays the
	                            * sandbox's init and reports on it
	                            * (sandbox_init.h); 0: no init */
};

/* The sizes of the sandbox's tmpfs mounts: /tmp, /dev/shm, and the one that
 * holds every overlay's upper layer.  Their pages count as the writer's
 * memory, so a memory cgroup holds them too. */
#define SANDBOX_TMP_SIZE (512ull << 20)
#define SANDBOX_SHM_SIZE (64ull << 20)
#define SANDBOX_OVERLAY_SIZE (512ull << 20)

#endif
