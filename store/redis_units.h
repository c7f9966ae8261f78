/*
 * redis_units.h - a Redis store's units (session format v4, units.h) and
 * the store-wide lock that keeps collecting off commits (redis_units.c),
 * over the store's own connection: store_redis.c gives the runner, and
 * calls these from its units ops (store_ops.h's obj_*).
 */
#ifndef DOLSOT_REDIS_UNITS_H
#define DOLSOT_REDIS_UNITS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_ops.h"

/* One command (argv as bytes) on the store's connection: the reply, or
 * NULL with err (an error reply included). */
typedef redisReply *(*redis_units_run)(void *ctx, const char *what, int argc,
                                       const char **argv, const size_t *lens, char *err,
                                       size_t errlen);

/* Bytes read ahead of the call that wants them (a unit's, a session's),
 * by name, each handed out once. */
struct redis_held {
	char name[STORE_ID_MAX + 1];
	char *bytes;            /* malloc'd (hiredis's); NULL once handed out */
	size_t len;
};

struct redis_held_set {
	struct redis_held *v;
	size_t n, cap;
	size_t next;            /* where the next take looks first (taken in order) */
};

/* Room for cap entries (those held are dropped); -1 out of memory. */
int redis_held_reset(struct redis_held_set *t, size_t cap);
/* Hold r's bytes (a string reply's, taken from it) as name's; others
 * (nil) are not held. */
void redis_held_add(struct redis_held_set *t, const char *name, redisReply *r);
/* name's bytes, now the caller's: true then. */
bool redis_held_take(struct redis_held_set *t, const char *name, char **bytes, size_t *len);
void redis_held_drop(struct redis_held_set *t);

enum redis_units_hold {
	REDIS_UNITS_NONE,
	REDIS_UNITS_SHARED_DUE,     /* asked for; taken with the next command */
	REDIS_UNITS_SHARED,
	REDIS_UNITS_EXCLUSIVE,
};

struct redis_units {
	redis_units_run run;
	void *ctx;
	const char *prefix;     /* the store's key prefix (the store's) */
	const char *name;       /* the server, for messages (the store's) */
	long lock_ms;           /* a hold's time to live */
	char token[33];         /* this store's holder name */
	enum redis_units_hold hold;
	/* Hashes found stored while the hold is shared: they stay until it
	 * ends (no collector runs meanwhile). */
	uint8_t *known;
	size_t nknown, cap;
	bool sorted;
	/* The refs of the last v4 head loaded (sorted hashes, and sizes):
	 * what a load reads next, and a commit checks. */
	uint8_t *hint;
	uint64_t *hint_size;
	size_t nhint;
	/* Units read ahead of their turn (one MGET) by hex, not handed out yet. */
	struct redis_held_set ahead;
};

/* Ready u (token: a random holder name, 32 hex digits). */
void redis_units_init(struct redis_units *u, redis_units_run run, void *ctx,
                      const char *prefix, const char *name, long lock_ms,
                      const char *token);
void redis_units_free(struct redis_units *u);

/* "PREFIX unit:HEX" of hash, or another key of the units (kind "units:commits"). */
void redis_units_key(const struct redis_units *u, const char *kind, char *buf, size_t len);

/* A session's stored bytes were read: remember the refs of its head. */
void redis_units_saw(struct redis_units *u, const uint8_t *blob, size_t len);

/* A shared hold asked for is taken now (before a command it covers);
 * 0, or -1 with err. */
int redis_units_ready(struct redis_units *u, char *err, size_t errlen);

/* The shared hold a save releases in its own script (its holder name,
 * "" when none is held); redis_units_saved once it did. */
const char *redis_units_save_token(const struct redis_units *u);
void redis_units_saved(struct redis_units *u);

/* The hash a "PREFIX unit:HEX" key names; false when it names none. */
bool redis_units_hash_of(const struct redis_units *u, const char *key,
                         uint8_t hash[STORE_HASH_LEN]);

/* store_ops.h's obj_put, obj_has, obj_read, obj_del and obj_lock. */
int redis_units_put(struct redis_units *u, const uint8_t *hash, const uint8_t *p, size_t n,
                    char *err, size_t errlen);
int redis_units_has(struct redis_units *u, const uint8_t *hash, bool *has, char *err,
                    size_t errlen);
int redis_units_read(struct redis_units *u, const uint8_t *hash, uint8_t **p, size_t *n,
                     bool *found, char *err, size_t errlen);
/* store_ops.h's obj_fetch: MGETs of a few units each (as many as one
 * read ahead takes). */
int redis_units_fetch(struct redis_units *u, const uint8_t *hashes, const uint64_t *sizes,
                      size_t n, store_unit_take take, void *ctx, char *err, size_t errlen);
int redis_units_del(struct redis_units *u, const uint8_t *hash, char *err, size_t errlen);
int redis_units_lock(struct redis_units *u, enum store_gc_lock how, char *err,
                     size_t errlen);

#endif
