/*
 * redis_health.h - whether a Redis server keeps what dolsot stores in it
 * (redis_health.c): its eviction policy, its persistence, and whether it
 * restarted since this host last talked to it.
 *
 * The questions ride in the connect's pipeline (after AUTH and SELECT),
 * so asking costs no round trip of its own.
 */
#ifndef DOLSOT_REDIS_HEALTH_H
#define DOLSOT_REDIS_HEALTH_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/* How many replies redis_health_ask queues. */
#define REDIS_HEALTH_CMDS 4

/* What the server said of itself; "" and -1 where it did not say. */
struct redis_health {
	char policy[64];        /* maxmemory-policy: CONFIG GET's, else INFO memory's */
	char run_id[64];        /* INFO server's run_id */
	int rdb;                /* CONFIG GET save: 1 save points set, 0 none, -1 refused */
	int aof;                /* INFO persistence's aof_enabled, -1 unknown */
};

/* Queue the questions on c (redisAppendCommand): INFO server, memory and
 * persistence, CONFIG GET save.  -1 when out of memory. */
int redis_health_ask(redisContext *c);

/*
 * Read the REDIS_HEALTH_CMDS replies into h.  A refused question (an
 * error reply: CONFIG renamed or denied) leaves its fields unknown; a
 * refusal for want of authentication (NOAUTH) and a broken connection are
 * -1 with the reason in err.
 */
int redis_health_read(redisContext *c, struct redis_health *h, char *err, size_t errlen);

/*
 * What INFO's section answered (text, NUL-terminated; the server's bytes,
 * read as hostile: fuzzed by fuzz/fuzz_redis_health.c) into h: section 0
 * (server) its run_id, 1 (memory) maxmemory_policy, 2 (persistence)
 * aof_enabled.  A field the text lacks stays as it was.
 */
void redis_health_info(struct redis_health *h, int section, const char *text);

/*
 * 0 when h's eviction policy keeps dolsot's keys (noeviction, or a policy
 * the server did not tell); else -1 with the refusal, naming server (for
 * messages) and the setting, in err.  Every volatile-* policy is refused
 * too: a lock key always has a time to live, and so does a session with
 * DOLSOT_SESSION_TTL_DAYS.
 */
int redis_health_policy(const struct redis_health *h, const char *server, char *err,
                        size_t errlen);

/*
 * What this host remembers of the server (a file named after server and
 * prefix in the directory dirfd): the run_id it last saw, and whether it
 * said already, in that run, that the server keeps nothing on disk.
 * Writes into notice (or "" when there is nothing to say) a restart since
 * then, and the lack of persistence once per server run; the memory is
 * updated.  Never fails: a memory that cannot be read or written only
 * says things again.
 */
void redis_health_note(int dirfd, const char *server, const char *prefix,
                       const struct redis_health *h, char *notice, size_t len);

#endif
