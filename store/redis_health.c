/*
 * redis_health.c - does a Redis server keep dolsot's keys (redis_health.h)?
 *
 * Issue 35: a server that evicts (maxmemory-policy allkeys-*, or
 * volatile-* with dolsot's keys all carrying a time to live) drops
 * sessions, untouched old ones included, and lock keys, which lets two
 * cells of one session run at once; one that keeps nothing on disk loses
 * every session when it restarts.  Both happened in silence.  The first
 * is refused at connect; the second is said once per server run, and a
 * restart (a new run_id) is said at the next call of every host that
 * had talked to the server before.
 *
 * MUSTs:
 * - The memory file lives in the client's own store directory (0700, ours)
 *   and is opened with O_NOFOLLOW relative to its fd; it is replaced by a
 *   rename, so a reader never sees half of it.
 */
#include "redis_health.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"

#define MEMORY_MAX 256          /* bytes of the memory file read */

int redis_health_ask(redisContext *c)
{
	if (redisAppendCommand(c, "INFO server") != REDIS_OK ||
	    redisAppendCommand(c, "INFO memory") != REDIS_OK ||
	    redisAppendCommand(c, "INFO persistence") != REDIS_OK ||
	    redisAppendCommand(c, "CONFIG GET save") != REDIS_OK)
		return -1;
	return 0;
}

/* INFO's "name:value" line of text into out ("" when absent). */
static void info_field(const char *text, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);

	out[0] = '\0';
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
			size_t n = strcspn(p + nl + 1, "\r\n");

			snprintf(out, len, "%.*s", (int)n, p + nl + 1);
			return;
		}
	}
}

void redis_health_info(struct redis_health *h, int section, const char *text)
{
	char aof[8];

	if (section == 0) {
		info_field(text, "run_id", h->run_id, sizeof(h->run_id));
	} else if (section == 1) {
		info_field(text, "maxmemory_policy", h->policy, sizeof(h->policy));
	} else if (section == 2) {
		info_field(text, "aof_enabled", aof, sizeof(aof));
		h->aof = aof[0] ? aof[0] == '1' : -1;
	}
}

int redis_health_read(redisContext *c, struct redis_health *h, char *err, size_t errlen)
{
	int ret = 0;

	memset(h, 0, sizeof(*h));
	h->rdb = -1;
	h->aof = -1;
	for (int i = 0; i < REDIS_HEALTH_CMDS; i++) {
		void *v = NULL;
		redisReply *r;

		if (redisGetReply(c, &v) != REDIS_OK || !v) {
			snprintf(err, errlen, "%s", c->errstr[0] ? c->errstr : "no answer");
			return -1;
		}
		r = v;
		if (r->type == REDIS_REPLY_ERROR) {
			/* Without AUTH nothing else will work either. */
			if (ret == 0 && strncmp(r->str, "NOAUTH", 6) == 0) {
				snprintf(err, errlen, "%s", r->str);
				ret = -1;
			}
		} else if (i < 3 && r->type == REDIS_REPLY_STRING) {
			redis_health_info(h, i, r->str);
		} else if (i == 3 && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		           r->element[1]->type == REDIS_REPLY_STRING) {
			h->rdb = r->element[1]->len > 0;
		}
		freeReplyObject(r);
	}
	return ret;
}

int redis_health_policy(const struct redis_health *h, const char *server, char *err,
                        size_t errlen)
{
	if (!h->policy[0] || strcmp(h->policy, "noeviction") == 0)
		return 0;
	snprintf(err, errlen, "%s: its maxmemory-policy is %s, which lets it evict dolsot's "
	         "keys (sessions vanish, locks are lost): dolsot needs maxmemory-policy "
	         "noeviction (CONFIG SET maxmemory-policy noeviction, and the same line in "
	         "redis.conf), or a Redis of its own", server, h->policy);
	errno = EPERM;
	return -1;
}

/* FNV-1a over server and prefix: the memory file's name. */
static void memory_name(const char *server, const char *prefix, char *buf, size_t len)
{
	uint64_t x = 14695981039346656037ULL;
	const char *parts[] = { server, "\n", prefix };

	for (size_t i = 0; i < 3; i++)
		for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
			x = (x ^ *p) * 1099511628211ULL;
	snprintf(buf, len, ".redis-%016llx.seen", (unsigned long long)x);
}

/* The remembered run_id and warned flag; false when there is none. */
static bool recall(int dirfd, const char *name, char *run_id, size_t len, bool *warned)
{
	char text[MEMORY_MAX + 1], id[MEMORY_MAX + 1];
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;
	int w = 0;

	if (fd < 0)
		return false;
	n = read(fd, text, MEMORY_MAX);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	if (sscanf(text, "%256s %d", id, &w) != 2)
		return false;
	snprintf(run_id, len, "%s", id);
	*warned = w != 0;
	return true;
}

/* Replace the memory with run_id and warned (a failure is only said again
 * at the next call). */
static void remember(int dirfd, const char *name, const char *run_id, bool warned)
{
	char tmp[128], text[MEMORY_MAX];
	int fd, n = snprintf(text, sizeof(text), "%s %d\n", run_id, warned ? 1 : 0);

	snprintf(tmp, sizeof(tmp), "%s.%ld", name, (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (fd_write_all(fd, text, (size_t)n) < 0 || close(fd) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0)
		(void)unlinkat(dirfd, tmp, 0);
}

void redis_health_note(int dirfd, const char *server, const char *prefix,
                       const struct redis_health *h, char *notice, size_t len)
{
	char name[64], seen[MEMORY_MAX + 1] = "";
	bool warned = false, known, restarted, bare = h->rdb == 0 && h->aof == 0;
	size_t o = 0;

	notice[0] = '\0';
	if (!h->run_id[0] || dirfd < 0)
		return;
	memory_name(server, prefix, name, sizeof(name));
	known = recall(dirfd, name, seen, sizeof(seen), &warned);
	restarted = known && strcmp(seen, h->run_id) != 0;
	if (restarted) {
		warned = false;
		o = (size_t)snprintf(notice, len, "dolsot: warning: the Redis server %s restarted "
		                     "since this host's last call (its run_id changed): sessions "
		                     "saved before %s", server,
		                     bare ? "are gone, and start empty"
		                          : "may be gone, unless it kept them on disk");
	}
	if (bare && !warned && o < len)
		snprintf(notice + o, len - o, "%sdolsot: warning: the Redis server %s keeps "
		         "nothing on disk (no RDB save points, appendonly no): a restart loses "
		         "every session; set 'save' or 'appendonly yes' in its configuration",
		         o ? "\n" : "", server);
	if (!known || restarted || (bare && !warned))
		remember(dirfd, name, h->run_id, bare || warned);
}
