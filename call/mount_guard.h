/*
 * mount_guard.h - host paths a --mount must not expose.
 *
 * Two kinds.  The session store (its directory holds the warm server's
 * socket and every session) and a session key file kept elsewhere
 * (DOLSOT_SESSION_KEY=/path): no mount of any mode may be, contain or lie
 * inside them.  Code that later unsandboxed calls run (the toolboxes, the
 * current directory, PYTHONPATH, the virtualenv, site-packages): no rw
 * mount may be, contain or lie inside it unless the caller opted in
 * (DOLSOT_ALLOW_RW_CODE_MOUNTS=1); ro and overlay mounts cannot change it.
 * Paths are compared after resolving symbolic links, and by inode along
 * each path, so another name of the same directory is caught too.
 */
#ifndef DOLSOT_MOUNT_GUARD_H
#define DOLSOT_MOUNT_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "opts.h"

#define MOUNT_GUARD_MAX 512

struct mount_guard {
	struct {
		char *path;
		char what[160];     /* "the session store", "the toolbox 'mt'" */
		bool store;         /* refused for every mode, not only rw */
		bool key;           /* the session key file (store is set too) */
	} e[MOUNT_GUARD_MAX];
	size_t n;
	bool rw_code_ok;        /* DOLSOT_ALLOW_RW_CODE_MOUNTS=1 */
};

/* Guard path (copied; entries past MOUNT_GUARD_MAX are dropped, and
 * refused instead at check time).  0, or -1 when out of memory. */
int mount_guard_add(struct mount_guard *g, const char *path, const char *what, bool store);

/* Guard the session key file at path (NULL or "": none), for every mode:
 * whoever reads it can sign sessions that unsandboxed calls load, and
 * whoever writes it can change the key.  0, or -1 as mount_guard_add. */
int mount_guard_add_key(struct mount_guard *g, const char *path);

/* Add the code the worker's Python imports from: the current directory,
 * each PYTHONPATH entry, VIRTUAL_ENV and the site-packages directories. */
int mount_guard_add_code(struct mount_guard *g);

/* NULL when m may be made, else why not (into why, also returned). */
const char *mount_guard_check(const struct mount_guard *g, const struct mount_arg *m,
                              char *why, size_t len);

void mount_guard_release(struct mount_guard *g);

#endif
