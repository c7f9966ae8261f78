/*
 * redis_helper.h - a real redis-server for a test: started by the test on
 * 127.0.0.1 on a free port, in a directory of the test's, and stopped by
 * it (a system Redis is never touched).  Failures fail the test (Check).
 */
#ifndef DOLSOT_REDIS_HELPER_H
#define DOLSOT_REDIS_HELPER_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <sys/types.h>

struct redis_test {
	pid_t pid;              /* -1 when not running */
	int port;               /* 0: pick a free one at the next start */
	char dir[4400];         /* its --dir (made by the caller) */
	char url[200];          /* "redis://127.0.0.1:PORT", set by redis_test_start */
};

/* A TCP port on 127.0.0.1 that nothing listens on now. */
int redis_test_free_port(void);

/*
 * Start redis-server on rd->port (a free one when 0) in rd->dir, with RDB
 * save points that never trigger in a test (a server that keeps sessions
 * on disk, as dolsot asks; it writes them when stopped) and what extra
 * (config arguments, NULL-terminated, or NULL) adds or overrides, e.g.
 * "--save" "" "--appendonly" "no" for one that keeps nothing, or
 * "--maxmemory-policy" "allkeys-lru"; and wait until it answers PING
 * (with password, when the extra arguments set requirepass; else NULL).
 */
void redis_test_start(struct redis_test *rd, const char *const *extra, const char *password);

/* redis_test_start on a free port in parent/redis, made here. */
void redis_test_start_in(struct redis_test *rd, const char *parent, const char *const *extra,
                         const char *password);

/* Stop it (SIGTERM: an append-only file is flushed) and reap it; harmless
 * when it is not running. */
void redis_test_stop(struct redis_test *rd);

/* A connection to it (AUTH password first unless NULL); the caller frees
 * it (redisFree).  May hold an error (c->err) when it is down. */
redisContext *redis_test_conn(const struct redis_test *rd, const char *password);

/* The reply to fmt with one string argument, as text ("(nil)", an
 * integer's digits, a string), into buf. */
const char *redis_test_query(const struct redis_test *rd, char *buf, size_t len,
                             const char *password, const char *fmt, const char *arg);

#endif
