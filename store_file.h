/*
 * store_file.h - FileStore, the default backend: one file per session in a
 * private directory (see the invariants atop store_file.c).
 */
#ifndef DOLSOT_STORE_FILE_H
#define DOLSOT_STORE_FILE_H

#include "store_ops.h"

/*
 * dir NULL means the default: $DOLSOT_CACHE_DIR is resolved by the caller;
 * NULL here is sessions/ in the user's directory (store/user_dir.h).
 * ttl_days 0 disables reaping; reaping runs on every operation.  Returns NULL and fills err on
 * refusal (symlink, wrong owner, group/other access, not a directory),
 * errlen bytes at most.
 * The store's home is its directory.
 */
struct store *store_file_open(const char *dir, double ttl_days, char *err,
                              size_t errlen);

/* The directory store_file_open(dir, ...) uses, as a path, into buf
 * (nothing is checked or made). */
void store_file_path(const char *dir, char *buf, size_t len);

#endif
