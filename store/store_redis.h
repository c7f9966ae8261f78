/*
 * store_redis.h - DOLSOT_STORE=redis://...: sessions in a Redis server,
 * shared by every host that names it (store_redis.c).
 */
#ifndef DOLSOT_STORE_REDIS_H
#define DOLSOT_STORE_REDIS_H

#include <stddef.h>

#include "store_ops.h"
#include "store_spec.h"

/*
 * A store over the Redis server sp names (sp->kind STORE_KIND_REDIS, its
 * knobs read with store_spec_redis_env).  dir (owned from now on) keeps
 * its directory for the warm server's socket.  Sessions expire
 * ttl_days after their last save (0: never); one command, and the
 * connection, may take timeout seconds.  Connects at its first command
 * (each operation's error names the server); NULL with err only when out
 * of memory (dir is closed then).
 */
struct store *store_redis_open(struct store *dir, const struct store_spec *sp,
                               double ttl_days, double timeout, char *err,
                               size_t errlen);

#endif
