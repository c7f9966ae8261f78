/*
 * server_key.h - reading what the warm server is told in text: the key of
 * a WIRE_CALL (which environment a call needs) and the module files a
 * zygote reports, which decide when it is stale.
 */
#ifndef DOLSOT_SERVER_KEY_H
#define DOLSOT_SERVER_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "zygote.h"

/*
 * Fill env from a WIRE_CALL key (NUL-separated "name=value" entries ending
 * with a NUL, as wire_decode guarantees).  env's strings point into key;
 * missing fields read as "/" (cwd) or "".  Entries past env's arrays are
 * ignored.
 */
void server_key_env(const uint8_t *key, size_t len, struct zygote_env *env);

/*
 * Split a "PATH<TAB>MTIME_NS<TAB>SIZE" entry (the path may hold tabs; the
 * numbers are decimal).  Returns 0 with path (NUL-terminated, at most
 * pathlen bytes), *mtime_ns and *size set, or -1 when the entry is
 * malformed or the path does not fit.
 */
int server_key_file(const char *entry, char *path, size_t pathlen,
                    long long *mtime_ns, long long *size);

#endif
