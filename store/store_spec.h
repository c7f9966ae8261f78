/*
 * store_spec.h - where sessions live, as the caller names it: the value of
 * DOLSOT_STORE or --store, parsed (untrusted text; fuzz/fuzz_store_spec.c).
 *
 *   file                                   the FileStore (the default)
 *   memory                                 the warm server's memory
 *   redis://[user:password@]host[:port][/db]   a Redis server (no TLS)
 *   cmd:PROGRAM [ARGS]                     a store helper (store_cmd.c)
 *
 * Pure: no I/O, no allocation; a parsed spec holds copies of its parts.
 */
#ifndef DOLSOT_STORE_SPEC_H
#define DOLSOT_STORE_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* The kinds of store the factory opens. */
enum store_kind {
	STORE_KIND_FILE,        /* "file": store_file.c, the default */
	STORE_KIND_MEMORY,      /* "memory": the warm server's memory (mem_client.c) */
	STORE_KIND_REDIS,       /* "redis://...": store_redis.c */
	STORE_KIND_CMD,         /* "cmd:...": a helper program, store_cmd.c */
};

#define STORE_SPEC_MAX 4096     /* the longest value taken */
#define STORE_SPEC_ARGS 32      /* a helper's argv, PROGRAM included */
#define STORE_SPEC_HOST_MAX 255

struct store_spec {
	enum store_kind kind;
	/* redis: user and password percent-decoded ("" when absent; a user
	 * without a password is refused), host without IPv6 brackets. */
	char user[256], password[256], host[STORE_SPEC_HOST_MAX + 1];
	int port;               /* 1..65535, 6379 by default */
	int db;                 /* 0..STORE_SPEC_DB_MAX, 0 by default */
	/* cmd: the helper's argv (NULL-terminated), split at blanks; no
	 * shell, no quoting.  The strings live in buf. */
	char *argv[STORE_SPEC_ARGS + 1];
	int argc;
	char buf[STORE_SPEC_MAX + 1];
	/* redis, from the environment (store_spec_redis_env): the keys'
	 * prefix, the lock's time to live and how often it is renewed. */
	char prefix[128];
	long lock_ms, renew_ms;
};

#define STORE_SPEC_PREFIX "dolsot:"
#define STORE_SPEC_LOCK_MS 30000L
#define STORE_SPEC_LOCK_MS_MAX 86400000L

#define STORE_SPEC_DB_MAX 1000000
#define STORE_SPEC_REDIS_PORT 6379

/*
 * Parse v into *out.  Returns 0, or -1 with the reason in err (errlen
 * bytes; lowercase, no full stop, saying what was expected).  NULL or ""
 * is "file".  The kind names nothing on disk and opens nothing.
 */
int store_spec_parse(const char *v, struct store_spec *out, char *err, size_t errlen);

/*
 * The Redis store's settings from the environment, into sp:
 * DOLSOT_REDIS_PREFIX (default "dolsot:"; printable ASCII, no blank),
 * DOLSOT_REDIS_LOCK_MS (the lock's time to live, default 30000) and
 * DOLSOT_REDIS_RENEW_MS (how often a held lock is renewed, default a
 * third of the lock's time).  Returns 0, or -1 with err naming the variable.
 */
int store_spec_redis_env(struct store_spec *sp, char *err, size_t errlen);

/* The default of DOLSOT_UNIT_CACHE_SIZE. */
#define STORE_SPEC_UNIT_CACHE ((uint64_t)2 << 30)

/*
 * DOLSOT_UNIT_CACHE_SIZE, the most bytes of units this machine keeps a
 * copy of for the Redis and helper stores (store/unitcache.h: what a call
 * needs is kept beyond it while it runs): a size with an optional K, M or
 * G suffix, 0 for no copy (a call is then handed every unit its session
 * names), STORE_SPEC_UNIT_CACHE when unset, into *bytes.  0, or -1 with
 * err naming the variable.
 */
int store_spec_cache_env(uint64_t *bytes, char *err, size_t errlen);

/* "redis://host:port/db" for messages: never the user or password. */
void store_spec_redis_name(const struct store_spec *sp, char *buf, size_t len);

#endif
