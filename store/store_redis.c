/*
 * store_redis.c - sessions in a Redis server (hiredis), shared by every
 * host that names the same server.
 *
 * Keys, all under the prefix P (DOLSOT_REDIS_PREFIX, "dolsot:"):
 *   P session:ID   a hash: blob (the session's bytes), saved (the last
 *                  save, Unix time "SECONDS.NANOSECONDS"), sandboxed ("1"
 *                  when a sandboxed call wrote it, else "0"), seq (the save
 *                  counter the blob is signed with, decimal); it expires
 *                  DOLSOT_SESSION_TTL_DAYS after its last save
 *   P lock:ID      the session's lock: a random token, with a time to live
 *   P unit:HEX     a unit of version 4 sessions (their heads are the
 *                  blobs); P units:* the units lock (redis_units.c)
 *
 * MUSTs:
 * - The lock is SET NX PX with a 128-bit random token; only the holder of
 *   the token renews it (a compare-and-PEXPIRE script) or releases it (a
 *   compare-and-DEL script).  A holder that dies stops renewing, so its
 *   lock expires after DOLSOT_REDIS_LOCK_MS.
 * - A save is one script that checks the token and writes the hash: a
 *   holder whose lock expired or was taken is refused, never applied, and
 *   a save is either all of the new hash or none of it.  Under the units
 *   lock held shared (a commit's, a fork's) the same script checks that
 *   hold is live and ends it (redis_units.c).
 * - Listing and --reset all walk the keys with SCAN, never KEYS, and touch
 *   only keys under the prefix.
 * - Every socket is CLOEXEC (we connect it, then hand it to hiredis).
 *
 * Who renews: a thread started when the lock is taken, on a connection of
 * its own, with every signal blocked (the client's signalfd and SIGCHLD
 * stay the main thread's); it stops at unlock, when the lock is found
 * lost, or once the call's time is long over (twice the lock wait plus
 * HOLD_SLACK_MS), whichever comes first.
 */
#include "store_redis.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "redis_guard.h"
#include "redis_health.h"
#include "redis_units.h"
#include "store_name.h"

#define LOCK_POLL_MS 25         /* between tries of a busy lock */
#define HOLD_SLACK_MS 60000L    /* renewal goes on this long past the call's time */
#define SCAN_COUNT "1000"       /* keys SCAN looks at per round */
#define NAME_MAX_LEN 300
#define KEY_MAX (128 + 16 + STORE_ID_MAX)

/* KEYS[3], ARGV[7]: the units lock's shared holders and ours ("" when
 * none is held).  A save applied whose reply was lost is tried again: it
 * finds its own time stamp and is done. */
static const char save_script[] =
	"redis.replicate_commands() "
	"if redis.call('get', KEYS[2]) ~= ARGV[1] then "
	"return redis.error_reply('DOLSOT_LOCK_LOST') end "
	"if redis.call('hget', KEYS[1], 'saved') == ARGV[3] then return 1 end "
	"if ARGV[7] ~= '' then "
	"local t = redis.call('time') "
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
	"local sc = redis.call('zscore', KEYS[3], ARGV[7]) "
	"if not sc or tonumber(sc) <= now then "
	"return redis.error_reply('DOLSOT_UNITS_LOST') end "
	"redis.call('zrem', KEYS[3], ARGV[7]) end "
	"redis.call('hset', KEYS[1], 'blob', ARGV[2], 'saved', ARGV[3], 'sandboxed', ARGV[4], "
	"'seq', ARGV[6]) "
	"if ARGV[5] ~= '0' then redis.call('pexpire', KEYS[1], ARGV[5]) "
	"else redis.call('persist', KEYS[1]) end "
	"return 1";
static const char renew_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
/* --reset all: a session whose lock is held stays, with its save to come. */
static const char del_unlocked_script[] =
	"if redis.call('exists', KEYS[2]) == 1 then return 0 end "
	"return redis.call('del', KEYS[1])";
static const char unlock_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

struct rd_store;

/* One held lock (store_lock.priv), and its renewer. */
struct rd_lock {
	struct rd_lock *next;
	struct rd_store *rs;
	char id[STORE_ID_MAX + 1];
	char key[KEY_MAX];
	char token[33];
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* signalled at unlock */
	bool stop;
	struct timespec until;  /* renewal stops here; tv_sec 0: not bounded */
	redisContext *c;        /* the renewer's connection */
	struct redis_guard guard;   /* releases it if we die (sock -1: none yet) */
};

struct rd_store {
	struct store s;
	struct store *dir;      /* the FileStore: the warm server's socket lives there */
	struct store_spec sp;
	char name[NAME_MAX_LEN];    /* redis://host:port/db, for messages */
	struct timeval tv;      /* a connect's and a command's limit */
	long long ttl_ms;       /* key expiry after a save; 0: none */
	redisContext *c;
	struct rd_lock *locks;  /* the locks this store holds */
	struct redis_units units;
	/* Heads read with the listing a collector makes (prefetch_heads) by
	 * id, each handed to the load that asks for it next. */
	struct redis_held_set heads;
};

/* AUTH and SELECT as rs->sp asks, queued on c; how many were. */
static int queue_login(const struct rd_store *rs, redisContext *c)
{
	int n = 0;

	if (rs->sp.password[0]) {
		if (rs->sp.user[0])
			redisAppendCommand(c, "AUTH %s %s", rs->sp.user, rs->sp.password);
		else
			redisAppendCommand(c, "AUTH %s", rs->sp.password);
		n++;
	}
	if (rs->sp.db) {
		redisAppendCommand(c, "SELECT %d", rs->sp.db);
		n++;
	}
	return n;
}

/* The replies to queue_login's n commands; -1 with err on the first
 * refusal. */
static int read_login(const struct rd_store *rs, redisContext *c, int n, char *err,
                      size_t errlen)
{
	bool auth = rs->sp.password[0] != '\0';
	int ret = 0;

	for (int i = 0; i < n; i++) {
		void *v = NULL;
		redisReply *r;

		if (redisGetReply(c, &v) != REDIS_OK || !v) {
			snprintf(err, errlen, "%s: cannot connect: %s", rs->name, c->errstr);
			return -1;
		}
		r = v;
		if (r->type == REDIS_REPLY_ERROR && ret == 0) {
			if (i == 0 && auth)
				snprintf(err, errlen, "%s: authentication failed: %s", rs->name, r->str);
			else
				snprintf(err, errlen, "%s: cannot select database %d: %s", rs->name,
				         rs->sp.db, r->str);
			ret = -1;
		}
		freeReplyObject(r);
	}
	return ret;
}

/*
 * Log in on c and, when check is set, ask the server whether it keeps
 * our keys (redis_health.h), all in one round trip: an evicting server is
 * refused, and what this host should hear of it (a restart, no
 * persistence) goes into rs->s.notice.
 */
static int login(struct rd_store *rs, redisContext *c, bool check, char *err,
                 size_t errlen)
{
	struct redis_health h;
	char why[STORE_ERR_MAX], said[2 * STORE_ERR_MAX];
	int n = queue_login(rs, c);

	if (check && redis_health_ask(c) < 0) {
		snprintf(err, errlen, "%s: cannot connect: out of memory", rs->name);
		return -1;
	}
	if (read_login(rs, c, n, err, errlen) < 0)
		return -1;
	if (!check)
		return 0;
	if (redis_health_read(c, &h, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: cannot read its settings: %s", rs->name, why);
		return -1;
	}
	if (redis_health_policy(&h, rs->name, err, errlen) < 0)
		return -1;
	redis_health_note(rs->dir->home, rs->name, rs->sp.prefix, &h, said, sizeof(said));
	if (said[0] && !rs->s.notice)
		rs->s.notice = strdup(said);
	return 0;
}

/* Connect a CLOEXEC socket to the server within rs->tv, then log in (and
 * check the server, when check is set).  NULL with err. */
static redisContext *rd_connect(struct rd_store *rs, bool check, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL, *a;
	char port[16];
	int fd = -1, gai, e = ECONNREFUSED;
	long ms = rs->tv.tv_sec * 1000L + rs->tv.tv_usec / 1000;
	redisContext *c;

	snprintf(port, sizeof(port), "%d", rs->sp.port);
	gai = getaddrinfo(rs->sp.host, port, &hints, &ai);
	if (gai != 0) {
		snprintf(err, errlen, "%s: cannot resolve '%s': %s", rs->name, rs->sp.host,
		         gai_strerror(gai));
		return NULL;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		struct pollfd p;
		socklen_t sl = sizeof(e);

		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
		            a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		e = errno;
		if (e == EINPROGRESS) {
			p = (struct pollfd){ .fd = fd, .events = POLLOUT };
			e = ETIMEDOUT;
			if (poll(&p, 1, (int)ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 && e == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		snprintf(err, errlen, "%s: cannot connect: %s", rs->name, strerror(e));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	c = redisConnectFd(fd);
	if (!c || c->err) {
		snprintf(err, errlen, "%s: cannot connect: %s", rs->name,
		         c ? c->errstr : "out of memory");
		if (c)
			redisFree(c);
		else
			close(fd);
		return NULL;
	}
	redisSetTimeout(c, rs->tv);
	if (login(rs, c, check, err, errlen) < 0) {
		redisFree(c);
		return NULL;
	}
	return c;
}

/* hiredis's errstr for a timeout is strerror(EAGAIN): say what it means. */
static const char *io_why(const redisContext *c, const struct rd_store *rs, char *buf,
                          size_t len)
{
	if (strstr(c->errstr, strerror(EAGAIN))) {
		snprintf(buf, len, "no answer within %ld s", (long)rs->tv.tv_sec);
		return buf;
	}
	return c->errstr;
}

/*
 * One command on *cp (connected again first when NULL), argv as bytes.
 * A connection that broke (not a timeout) is made again and the command
 * tried once more: every command here may run twice (the save script
 * writes the same hash again).  Returns the reply (an error reply is
 * turned into NULL with err), NULL with err.
 */
/* Send n commands of argc arguments each (argvs[i], lens[i] or NULL) in
 * one round trip and read their replies (error replies as they are). */
static int rd_exchange(redisContext *c, size_t n, int argc, const char *const *const *argvs,
                       const size_t *const *lens, redisReply **replies)
{
	for (size_t i = 0; i < n; i++)
		if (redisAppendCommandArgv(c, argc, (const char **)argvs[i],
		                           lens ? lens[i] : NULL) != REDIS_OK)
			return -1;
	for (size_t i = 0; i < n; i++) {
		void *v = NULL;

		if (redisGetReply(c, &v) != REDIS_OK || !v) {
			while (i-- > 0)
				freeReplyObject(replies[i]);
			return -1;
		}
		replies[i] = v;
	}
	return 0;
}

/*
 * n commands on *cp (connected again first when NULL) in one round trip,
 * their replies into replies[0..n) (error replies as they are).  A
 * connection that broke (not a timeout) is made again and the commands
 * tried once more: every command here may run twice (the save script
 * writes the same hash again).  0, or -1 with err.
 */
static int rd_run_many(struct rd_store *rs, redisContext **cp, const char *what, size_t n,
                       int argc, const char *const *const *argvs,
                       const size_t *const *lens, redisReply **replies, char *err,
                       size_t errlen)
{
	char why[128];

	for (int attempt = 0; attempt < 2; attempt++) {
		bool timeout;

		/* The store's own connection checks the server (a restart
		 * too, when it is made again); a lock renewer's does not. */
		if (!*cp && !(*cp = rd_connect(rs, cp == &rs->c, err, errlen)))
			return -1;
		if (rd_exchange(*cp, n, argc, argvs, lens, replies) == 0)
			return 0;
		timeout = strstr((*cp)->errstr, strerror(EAGAIN)) != NULL;
		snprintf(err, errlen, "%s: %s: %s", rs->name, what, io_why(*cp, rs, why,
		                                                           sizeof(why)));
		redisFree(*cp);
		*cp = NULL;
		if (timeout)
			return -1;
	}
	return -1;
}

/* One command as rd_run_many runs it: its reply, an error reply turned
 * into NULL with err; NULL with err. */
static redisReply *rd_run(struct rd_store *rs, redisContext **cp, const char *what,
                          int argc, const char **argv, const size_t *lens, char *err,
                          size_t errlen)
{
	const char *const *argvs[] = { argv };
	const size_t *lensv[] = { lens };
	redisReply *r;

	if (rd_run_many(rs, cp, what, 1, argc, argvs, lensv, &r, err, errlen) < 0)
		return NULL;
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s: %s: %s", rs->name, what, r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

static void key_of(const struct rd_store *rs, const char *kind, const char *id, char *buf)
{
	snprintf(buf, KEY_MAX, "%s%s:%s", rs->sp.prefix, kind, id);
}

/* The longest bulk the server takes (a longer one breaks the
 * connection), asked on a new connection; 0 when it does not say. */
static unsigned long long bulk_limit(struct rd_store *rs)
{
	char cerr[STORE_ERR_MAX];
	const char *argv[] = { "CONFIG", "GET", "proto-max-bulk-len" };
	redisContext *c = NULL;
	redisReply *r = rd_run(rs, &c, "CONFIG GET", 3, argv, NULL, cerr, sizeof(cerr));
	unsigned long long limit = 0;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING)
		limit = strtoull(r->element[1]->str, NULL, 10);
	if (r)
		freeReplyObject(r);
	if (c)
		redisFree(c);
	return limit;
}

/* The save's reply, or the reason it had none, as a message into err. */
static int save_failed(struct rd_store *rs, const char *id, size_t len, char *err,
                       size_t errlen)
{
	char why[STORE_ERR_MAX];
	unsigned long long limit;

	snprintf(why, sizeof(why), "%s", err);
	if (strstr(why, "DOLSOT_LOCK_LOST")) {
		snprintf(err, errlen, "cannot save session '%s' to %s: its lock was lost (it "
		         "expired or another call took it); the new state is dropped, the "
		         "stored one kept", id, rs->name);
		errno = ENOLCK;
		return -1;
	}
	if (strstr(why, "DOLSOT_UNITS_LOST")) {
		redis_units_saved(&rs->units);   /* ended already */
		snprintf(err, errlen, "cannot save session '%s' to %s: its hold on the store's "
		         "units expired (over DOLSOT_REDIS_LOCK_MS), so a unit it names may "
		         "have been collected; the new state is dropped, the stored one kept",
		         id, rs->name);
		errno = ENOLCK;
		return -1;
	}
	limit = bulk_limit(rs);
	if (limit && len > limit) {
		snprintf(err, errlen, "cannot save session '%s' to %s: it is %zu bytes, over "
		         "the server's proto-max-bulk-len of %llu bytes (raise it in the "
		         "server's configuration); the stored one is kept", id, rs->name, len,
		         limit);
		errno = EFBIG;
		return -1;
	}
	snprintf(err, errlen, "cannot save session '%s': %s; the stored one is kept", id, why);
	errno = EIO;
	return -1;
}

static struct rd_lock *held_lock(const struct rd_store *rs, const char *id)
{
	for (struct rd_lock *l = rs->locks; l; l = l->next)
		if (strcmp(l->id, id) == 0)
			return l;
	return NULL;
}

static int rd_save(struct store *s, const char *id, const uint8_t *blob, size_t len,
                   const struct store_mark *mark, char *err, size_t errlen)
{
	struct rd_store *rs = s->priv;
	struct rd_lock *l = held_lock(rs, id);
	char key[KEY_MAX], when[64], ttl[32], seq[32], commits[KEY_MAX];
	struct timespec now;
	const char *argv[13];
	size_t lens[13];
	redisReply *r;

	if (!l) {
		snprintf(err, errlen, "cannot save session '%s' to %s: its lock is not held",
		         id, rs->name);
		errno = ENOLCK;
		return -1;
	}
	key_of(rs, "session", id, key);
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(when, sizeof(when), "%lld.%09ld", (long long)now.tv_sec, now.tv_nsec);
	snprintf(ttl, sizeof(ttl), "%lld", rs->ttl_ms);
	snprintf(seq, sizeof(seq), "%" PRIu64, mark->seq);
	redis_units_key(&rs->units, "units:commits", commits, sizeof(commits));
	argv[0] = "EVAL";
	argv[1] = save_script;
	argv[2] = "3";
	argv[3] = key;
	argv[4] = l->key;
	argv[5] = commits;
	argv[6] = l->token;
	argv[7] = len ? (const char *)blob : "";
	argv[8] = when;
	argv[9] = mark->sandboxed ? "1" : "0";
	argv[10] = ttl;
	argv[11] = seq;
	argv[12] = redis_units_save_token(&rs->units);
	for (int i = 0; i < 13; i++)
		lens[i] = strlen(argv[i]);
	lens[7] = len;
	r = rd_run(rs, &rs->c, "save", 13, argv, lens, err, errlen);
	if (!r)
		return save_failed(rs, id, len, err, errlen);
	freeReplyObject(r);
	redis_units_saved(&rs->units);
	return 0;
}

static int rd_load(struct store *s, const char *id, uint8_t **blob, size_t *len,
                   bool *found, char *err, size_t errlen)
{
	struct rd_store *rs = s->priv;
	char key[KEY_MAX];
	const char *argv[] = { "HGET", key, "blob" };
	redisReply *r;

	*blob = NULL;
	*len = 0;
	*found = false;
	/* Only under the collector's hold: no head naming a unit changes
	 * meanwhile (a commit of one holds the units lock shared). */
	if (rs->units.hold == REDIS_UNITS_EXCLUSIVE &&
	    redis_held_take(&rs->heads, id, (char **)blob, len)) {
		*found = true;
		redis_units_saw(&rs->units, *blob, *len);
		return 0;
	}
	key_of(rs, "session", id, key);
	r = redis_units_ready(&rs->units, err, errlen) < 0 ? NULL
	    : rd_run(rs, &rs->c, "load", 3, argv, NULL, err, errlen);
	if (!r) {
		char why[STORE_ERR_MAX];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot load session '%s': %s", id, why);
		errno = EIO;
		return -1;
	}
	if (r->type == REDIS_REPLY_STRING) {
		/* Take the reply's bytes (hiredis allocates with malloc): a
		 * large session is not copied again. */
		*blob = (uint8_t *)r->str;
		*len = r->len;
		r->str = NULL;
		*found = true;
		redis_units_saw(&rs->units, *blob, *len);
	}
	freeReplyObject(r);
	return 0;
}

static int rd_origin(struct store *s, const char *id, struct store_mark *mark, char *err,
                     size_t errlen)
{
	struct rd_store *rs = s->priv;
	char key[KEY_MAX];
	const char *argv[] = { "HMGET", key, "sandboxed", "saved", "seq" };
	redisReply *r;

	key_of(rs, "session", id, key);
	if (redis_units_ready(&rs->units, err, errlen) < 0)
		return -1;
	r = rd_run(rs, &rs->c, "origin", 5, argv, NULL, err, errlen);
	if (!r)
		return -1;
	mark->sandboxed = true;   /* cannot tell: the safe side */
	mark->seq = 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3) {
		const redisReply *sb = r->element[0], *saved = r->element[1], *seq = r->element[2];

		bool absent = sb->type == REDIS_REPLY_NIL && saved->type == REDIS_REPLY_NIL;

		mark->sandboxed = !absent &&   /* no such session: false */
		                  !(sb->type == REDIS_REPLY_STRING && strcmp(sb->str, "0") == 0);
		/* Not a number (anyone can write the hash): none recorded. */
		if (seq->type == REDIS_REPLY_STRING)
			mark->seq = store_name_seq(seq->str, seq->len);
	}
	freeReplyObject(r);
	return 0;
}

/* Every key under the prefix that kind (a glob: "session:*") matches, by
 * SCAN (never KEYS): *keys (malloc'd strings in a malloc'd array; free
 * with free_keys). */
static int scan_keys(struct rd_store *rs, const char *kind, char ***keys, size_t *n,
                     char *err, size_t errlen)
{
	char pattern[2 * 128 + 16], cursor[32] = "0";
	size_t o = 0, cap = 0;
	const char *p;

	*keys = NULL;
	*n = 0;
	/* The prefix is the caller's: its glob characters match only
	 * themselves. */
	for (p = rs->sp.prefix; *p && o + 3 < sizeof(pattern); p++) {
		if (strchr("*?[]\\", *p))
			pattern[o++] = '\\';
		pattern[o++] = *p;
	}
	snprintf(pattern + o, sizeof(pattern) - o, "%s", kind);
	do {
		const char *argv[] = { "SCAN", cursor, "MATCH", pattern, "COUNT", SCAN_COUNT };
		redisReply *r = rd_run(rs, &rs->c, "scan", 6, argv, NULL, err, errlen);
		const redisReply *batch;

		if (!r)
			return -1;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			snprintf(err, errlen, "%s: scan: an unexpected reply", rs->name);
			return -1;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		batch = r->element[1];
		for (size_t i = 0; i < batch->elements; i++) {
			if (batch->element[i]->type != REDIS_REPLY_STRING)
				continue;
			if (*n == cap) {
				char **grown = realloc(*keys, (cap ? cap * 2 : 64) * sizeof(**keys));

				if (!grown) {
					freeReplyObject(r);
					snprintf(err, errlen, "%s: scan: out of memory", rs->name);
					return -1;
				}
				*keys = grown;
				cap = cap ? cap * 2 : 64;
			}
			if (!((*keys)[*n] = strdup(batch->element[i]->str))) {
				freeReplyObject(r);
				snprintf(err, errlen, "%s: scan: out of memory", rs->name);
				return -1;
			}
			(*n)++;
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

/* The session id of a key under the prefix, or NULL when it is not one. */
static const char *id_of(const struct rd_store *rs, const char *key)
{
	size_t pl = strlen(rs->sp.prefix);
	char scratch[8];

	if (strncmp(key, rs->sp.prefix, pl) != 0 || strncmp(key + pl, "session:", 8) != 0 ||
	    !store_id_valid(key + pl + 8, scratch, sizeof(scratch)))
		return NULL;
	return key + pl + 8;
}

static int rd_del(struct store *s, const char *id, unsigned *removed, char *err,
                  size_t errlen)
{
	struct rd_store *rs = s->priv;
	char key[KEY_MAX], **keys = NULL;
	size_t n = 0;
	int ret = 0;

	*removed = 0;
	if (strcmp(id, "all") != 0) {
		const char *argv[] = { "DEL", key };
		redisReply *r;

		key_of(rs, "session", id, key);
		if (!(r = rd_run(rs, &rs->c, "delete", 2, argv, NULL, err, errlen)))
			return -1;
		*removed = r->type == REDIS_REPLY_INTEGER ? (unsigned)r->integer : 0;
		freeReplyObject(r);
		return 0;
	}
	if (scan_keys(rs, "session:*", &keys, &n, err, errlen) < 0) {
		free_keys(keys, n);
		return -1;
	}
	for (size_t i = 0; i < n && ret == 0; i++) {
		const char *sid = id_of(rs, keys[i]);
		char lock[KEY_MAX];
		const char *argv[] = { "EVAL", del_unlocked_script, "2", keys[i], lock };
		redisReply *r;

		if (!sid)
			continue;
		key_of(rs, "lock", sid, lock);
		if (!(r = rd_run(rs, &rs->c, "delete", 5, argv, NULL, err, errlen))) {
			ret = -1;
			break;
		}
		if (r->type == REDIS_REPLY_INTEGER)
			*removed += (unsigned)r->integer;
		freeReplyObject(r);
	}
	free_keys(keys, n);
	return ret;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct session_info *)a)->id,
	              ((const struct session_info *)b)->id);
}

#define DESCRIBE_BATCH 500      /* sessions described per round trip */
#define HEAD_PREFETCH_MAX 65536 /* bytes: a session this small is read with the list */

static int by_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A listed session's size and last save from the replies to HSTRLEN
 * blob and HGET saved; false when it went away. */
static bool describe_one(const redisReply *len, const redisReply *saved,
                         struct session_info *si)
{
	char *end;
	double t;

	if (len->type != REDIS_REPLY_INTEGER || saved->type != REDIS_REPLY_STRING)
		return false;
	t = strtod(saved->str, &end);
	si->size = (uint64_t)len->integer;
	si->mtime.tv_sec = (time_t)t;
	si->mtime.tv_nsec = 0;
	if (*end == '.')
		si->mtime.tv_nsec = strtol(end + 1, NULL, 10) % 1000000000L;
	return true;
}

/* keys[0..k) (sessions, k <= DESCRIBE_BATCH) described into out in one
 * round trip (reads only: a server that pauses writes answers); *m
 * counts those still there. */
static int describe(struct rd_store *rs, char **keys, size_t k, struct session_info *out,
                    size_t *m, char *err, size_t errlen)
{
	static const char *cmds[2][3] = { { "HSTRLEN", NULL, "blob" }, { "HGET", NULL, "saved" } };
	const char *args[2 * DESCRIBE_BATCH][3];
	const char *const *argvs[2 * DESCRIBE_BATCH];
	redisReply *replies[2 * DESCRIBE_BATCH];

	for (size_t i = 0; i < 2 * k; i++) {
		memcpy(args[i], cmds[i % 2], sizeof(args[i]));
		args[i][1] = keys[i / 2];
		argvs[i] = args[i];
	}
	if (rd_run_many(rs, &rs->c, "list", 2 * k, 3, argvs, NULL, replies, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < k; i++) {
		if (describe_one(replies[2 * i], replies[2 * i + 1], &out[*m]))
			snprintf(out[(*m)++].id, sizeof(out[0].id), "%s", id_of(rs, keys[i]));
		freeReplyObject(replies[2 * i]);
		freeReplyObject(replies[2 * i + 1]);
	}
	return 0;
}

/*
 * The collector's listing (the units lock held exclusive) is followed by
 * a load of every session's head: read the small sessions' bytes now, a
 * round trip per DESCRIBE_BATCH, into rs->heads.  A failure only leaves
 * them to their loads.
 */
static void prefetch_heads(struct rd_store *rs, const struct session_info *info, size_t n)
{
	char (*keys)[KEY_MAX] = malloc(DESCRIBE_BATCH * sizeof(*keys)), err[STORE_ERR_MAX];
	const char *args[DESCRIBE_BATCH][3];
	const char *const *argvs[DESCRIBE_BATCH];
	redisReply *replies[DESCRIBE_BATCH];
	size_t ids[DESCRIBE_BATCH];

	if (!keys || redis_held_reset(&rs->heads, n) < 0) {
		free(keys);
		return;
	}
	for (size_t at = 0; at < n;) {
		size_t k = 0;

		for (; at < n && k < DESCRIBE_BATCH; at++) {
			if (info[at].size > HEAD_PREFETCH_MAX)
				continue;
			key_of(rs, "session", info[at].id, keys[k]);
			args[k][0] = "HGET";
			args[k][1] = keys[k];
			args[k][2] = "blob";
			argvs[k] = args[k];
			ids[k++] = at;
		}
		if (k && rd_run_many(rs, &rs->c, "list", k, 3, argvs, NULL, replies, err,
		                     sizeof(err)) < 0)
			break;
		for (size_t i = 0; i < k; i++) {
			redis_held_add(&rs->heads, info[ids[i]].id, replies[i]);
			freeReplyObject(replies[i]);
		}
	}
	free(keys);
}

static int rd_list(struct store *s, struct session_info **out, size_t *n, char *err,
                   size_t errlen)
{
	struct rd_store *rs = s->priv;
	char **keys = NULL;
	size_t nk = 0, kept = 0, m = 0;
	int ret = 0;

	*out = NULL;
	*n = 0;
	if (scan_keys(rs, "session:*", &keys, &nk, err, errlen) < 0) {
		free_keys(keys, nk);
		return -1;
	}
	/* Sessions only, each once (SCAN may return a key twice). */
	if (nk > 1)
		qsort(keys, nk, sizeof(*keys), by_key);
	for (size_t i = 0; i < nk; i++) {
		if (id_of(rs, keys[i]) && (!kept || strcmp(keys[kept - 1], keys[i]) != 0))
			keys[kept++] = keys[i];
		else
			free(keys[i]);
	}
	*out = calloc(kept ? kept : 1, sizeof(**out));
	if (!*out) {
		free_keys(keys, kept);
		snprintf(err, errlen, "%s: list: out of memory", rs->name);
		return -1;
	}
	for (size_t at = 0; at < kept && ret == 0; at += DESCRIBE_BATCH)
		ret = describe(rs, keys + at, kept - at < DESCRIBE_BATCH ? kept - at : DESCRIBE_BATCH,
		               *out, &m, err, errlen);
	free_keys(keys, kept);
	if (ret < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	qsort(*out, m, sizeof(**out), by_id);
	*n = m;
	if (rs->units.hold == REDIS_UNITS_EXCLUSIVE)
		prefetch_heads(rs, *out, m);
	return 0;
}

/* The compare-and-PEXPIRE: 1 renewed, 0 lost, -1 no answer. */
static int renew(struct rd_lock *l)
{
	char ms[32], err[STORE_ERR_MAX];
	const char *argv[] = { "EVAL", renew_script, "1", l->key, l->token, ms };
	redisReply *r;
	int ret;

	snprintf(ms, sizeof(ms), "%ld", l->rs->sp.lock_ms);
	r = rd_run(l->rs, &l->c, "renew the lock", 6, argv, NULL, err, sizeof(err));
	if (!r)
		return -1;
	ret = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	return ret;
}

static void add_ms(struct timespec *t, long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static void *renewer(void *arg)
{
	struct rd_lock *l = arg;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct timespec wake;

		clock_gettime(CLOCK_MONOTONIC, &wake);
		add_ms(&wake, l->rs->sp.renew_ms);
		while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &wake) != ETIMEDOUT)
			;
		if (l->stop || (l->until.tv_sec && deadline_left(&l->until) < 0))
			break;
		pthread_mutex_unlock(&l->mu);
		/* Unanswered: try again next round; the lock may expire meanwhile,
		 * and then the save is refused. */
		if (renew(l) == 0) {
			pthread_mutex_lock(&l->mu);
			break;
		}
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Start l's renewer; false when no thread could be made. */
static bool start_renewer(struct rd_lock *l)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	bool ok;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&l->mu, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ok = pthread_create(&l->thread, NULL, renewer, l) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	l->running = ok;
	return ok;
}

static void stop_renewer(struct rd_lock *l)
{
	if (!l->running)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->running = false;
}

static void free_lock(struct rd_lock *l)
{
	stop_renewer(l);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	if (l->c)
		redisFree(l->c);
	free(l);
}

static int new_token(char *hex, size_t len)
{
	unsigned char raw[16];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* SET NX the lock's key: 1 when it is now ours, 0 when another holds it,
 * -1 with err when the server could not be asked. */
static int rd_try_lock(struct rd_store *rs, struct rd_lock *l, const char *ms, char *err,
                       size_t errlen)
{
	const char *argv[] = { "SET", l->key, l->token, "NX", "PX", ms };
	const char *get[] = { "GET", l->key };
	redisReply *r = rd_run(rs, &rs->c, "lock", 6, argv, NULL, err, errlen);
	bool got;

	if (!r)
		return -1;
	got = r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	if (got)
		return 1;
	/* A SET tried again after a broken connection may have been applied
	 * the first time: the lock is then ours. */
	r = rd_run(rs, &rs->c, "lock", 2, get, NULL, err, errlen);
	if (!r)
		return -1;
	got = r->type == REDIS_REPLY_STRING && strcmp(r->str, l->token) == 0;
	freeReplyObject(r);
	return got;
}

static enum store_lock_status rd_lock(struct store *s, const char *id, long timeout_ms,
                                      struct store_lock *lk, char *err, size_t errlen)
{
	struct rd_store *rs = s->priv;
	struct rd_lock *l = calloc(1, sizeof(*l));
	struct timespec deadline;
	char ms[32];
	int got;

	lk->priv = NULL;
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return STORE_LOCK_FAILED;
	}
	l->rs = rs;
	l->guard.sock = -1;
	snprintf(l->id, sizeof(l->id), "%s", id);
	key_of(rs, "lock", id, l->key);
	if (new_token(l->token, sizeof(l->token)) < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		free(l);
		return STORE_LOCK_FAILED;
	}
	snprintf(ms, sizeof(ms), "%ld", rs->sp.lock_ms);
	deadline_in_ms(&deadline, timeout_ms >= 0 ? timeout_ms : 0);
	while ((got = rd_try_lock(rs, l, ms, err, errlen)) == 0) {
		if (timeout_ms >= 0 && deadline_left(&deadline) <= 0) {
			snprintf(err, errlen, STORE_BUSY_WHY " (its lock on %s)", rs->name);
			free(l);
			return STORE_LOCK_BUSY;
		}
		poll(NULL, 0, LOCK_POLL_MS);
	}
	if (got < 0) {
		free(l);
		return STORE_LOCK_FAILED;
	}
	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &l->until);
		add_ms(&l->until, 2 * timeout_ms + HOLD_SLACK_MS);
	}
	/* The renewer's own connection now, so a refused one is said now. */
	l->c = rd_connect(rs, false, err, errlen);
	if (!l->c || !start_renewer(l)) {
		char why[STORE_ERR_MAX];
		const char *argv[] = { "EVAL", unlock_script, "1", l->key, l->token };
		redisReply *r;

		if (l->c)
			snprintf(err, errlen, "cannot start a thread");
		r = rd_run(rs, &rs->c, "unlock", 5, argv, NULL, why, sizeof(why));
		if (r)
			freeReplyObject(r);
		if (l->c)
			redisFree(l->c);
		free(l);
		return STORE_LOCK_FAILED;
	}
	l->next = rs->locks;
	rs->locks = l;
	lk->priv = l;
	return STORE_LOCKED;
}

static void rd_unlock(struct store *s, struct store_lock *lk)
{
	struct rd_store *rs = s->priv;
	struct rd_lock *l = lk->priv, **pp;
	char err[STORE_ERR_MAX];
	redisReply *r;

	if (!l)
		return;
	for (pp = &rs->locks; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	{
		const char *argv[] = { "EVAL", unlock_script, "1", l->key, l->token };

		/* Stop renewing first, then release: a lock we could not
		 * release expires by itself. */
		stop_renewer(l);
		r = rd_run(rs, &rs->c, "unlock", 5, argv, NULL, err, sizeof(err));
		if (r)
			freeReplyObject(r);
		/* After the release: a death between the two leaves it to the
		 * guard, whose compare-and-DEL then finds nothing of ours. */
		redis_guard_stop(&l->guard);
	}
	free_lock(l);
	lk->priv = NULL;
}

/* The guard's release, formatted now (it may not allocate): AUTH and
 * SELECT as a connection of ours needs, then the compare-and-DEL.  The
 * message is malloc'd; *n counts its commands. */
static char *release_message(const struct rd_lock *l, size_t *len, int *n)
{
	const struct rd_store *rs = l->rs;
	char db[16], *cmd[3] = { NULL, NULL, NULL }, *msg;
	const char *unlock[] = { "EVAL", unlock_script, "1", l->key, l->token };
	const char *auth[] = { "AUTH", rs->sp.user, rs->sp.password };
	const char *auth1[] = { "AUTH", rs->sp.password };
	const char *sel[] = { "SELECT", db };
	int lens[3] = { 0, 0, 0 }, k = 0;
	size_t total = 0;

	snprintf(db, sizeof(db), "%d", rs->sp.db);
	if (rs->sp.password[0]) {
		lens[k] = rs->sp.user[0] ? redisFormatCommandArgv(&cmd[k], 3, auth, NULL)
		                         : redisFormatCommandArgv(&cmd[k], 2, auth1, NULL);
		k++;
	}
	if (rs->sp.db) {
		lens[k] = redisFormatCommandArgv(&cmd[k], 2, sel, NULL);
		k++;
	}
	lens[k] = redisFormatCommandArgv(&cmd[k], 5, unlock, NULL);
	*n = ++k;
	for (int i = 0; i < k; i++)
		total += lens[i] > 0 ? (size_t)lens[i] : 0;
	msg = malloc(total ? total : 1);
	*len = 0;
	for (int i = 0; i < k; i++) {
		if (msg && cmd[i] && lens[i] > 0) {
			memcpy(msg + *len, cmd[i], (size_t)lens[i]);
			*len += (size_t)lens[i];
		} else {
			free(msg);
			msg = NULL;
		}
		if (cmd[i])
			redisFreeCommand(cmd[i]);
	}
	return msg;
}

/* The guard of l, started at the first word of a cell: where to connect is
 * where the store's own connection goes.  False when there is none. */
static bool guard_lock(struct rd_lock *l)
{
	struct sockaddr_storage addr;
	socklen_t alen = sizeof(addr);
	char err[STORE_ERR_MAX], *msg;
	size_t len;
	int n, rc;

	if (l->guard.sock >= 0)
		return true;
	if (!l->rs->c || getpeername(l->rs->c->fd, (struct sockaddr *)&addr, &alen) < 0 ||
	    !(msg = release_message(l, &len, &n)))
		return false;
	rc = redis_guard_start(&l->guard, (struct sockaddr *)&addr, alen, msg, len, n,
	                       l->rs->sp.lock_ms, err, sizeof(err));
	free(msg);
	return rc == 0;
}

static void rd_watch(struct store *s, struct store_lock *lk, int pidfd)
{
	struct rd_lock *l = lk->priv;

	(void)s;
	if (guard_lock(l))
		redis_guard_cell(&l->guard, pidfd);
}

static redisReply *units_run(void *ctx, const char *what, int argc, const char **argv,
                             const size_t *lens, char *err, size_t errlen)
{
	struct rd_store *rs = ctx;

	return rd_run(rs, &rs->c, what, argc, argv, lens, err, errlen);
}

static int rd_obj_put(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
                      char *err, size_t errlen)
{
	struct rd_store *rs = s->priv;
	unsigned long long limit;

	if (redis_units_put(&rs->units, hash, p, n, err, errlen) == 0)
		return 0;
	if (errno != EIO || !(limit = bulk_limit(rs)) || n <= limit)
		return -1;
	snprintf(err, errlen, "%s: a unit of %zu bytes is over the server's "
	         "proto-max-bulk-len of %llu bytes (raise it in the server's configuration)",
	         rs->name, n, limit);
	errno = EFBIG;
	return -1;
}

static int rd_obj_has(struct store *s, const uint8_t *hash, bool *has, char *err,
                      size_t errlen)
{
	return redis_units_has(&((struct rd_store *)s->priv)->units, hash, has, err, errlen);
}

static int rd_obj_read(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
                       bool *found, char *err, size_t errlen)
{
	return redis_units_read(&((struct rd_store *)s->priv)->units, hash, p, n, found, err,
	                        errlen);
}

static int rd_obj_fetch(struct store *s, const uint8_t *hashes, const uint64_t *sizes,
                        size_t n, store_unit_take take, void *ctx, char *err, size_t errlen)
{
	return redis_units_fetch(&((struct rd_store *)s->priv)->units, hashes, sizes, n, take,
	                         ctx, err, errlen);
}

static int rd_obj_del(struct store *s, const uint8_t *hash, char *err, size_t errlen)
{
	return redis_units_del(&((struct rd_store *)s->priv)->units, hash, err, errlen);
}

static int rd_obj_lock(struct store *s, enum store_gc_lock how, char *err, size_t errlen)
{
	struct rd_store *rs = s->priv;
	int ret = redis_units_lock(&rs->units, how, err, errlen);

	if (rs->units.hold != REDIS_UNITS_EXCLUSIVE)
		redis_held_drop(&rs->heads);
	return ret;
}

static int rd_obj_list(struct store *s, uint8_t **hashes, size_t *n, char *err,
                       size_t errlen)
{
	struct rd_store *rs = s->priv;
	char **keys = NULL;
	size_t nk = 0;

	*hashes = NULL;
	*n = 0;
	if (scan_keys(rs, "unit:*", &keys, &nk, err, errlen) < 0) {
		free_keys(keys, nk);
		return -1;
	}
	*hashes = malloc(nk ? nk * STORE_HASH_LEN : 1);
	if (!*hashes) {
		free_keys(keys, nk);
		snprintf(err, errlen, "%s: list the units: out of memory", rs->name);
		errno = ENOMEM;
		return -1;
	}
	/* A key SCAN returns twice is listed twice: removing it twice is
	 * harmless. */
	for (size_t i = 0; i < nk; i++)
		if (redis_units_hash_of(&rs->units, keys[i], *hashes + *n * STORE_HASH_LEN))
			(*n)++;
	free_keys(keys, nk);
	return 0;
}

static void rd_close(struct store *s)
{
	struct rd_store *rs = s->priv;
	char err[STORE_ERR_MAX];

	while (rs->locks) {
		struct rd_lock *l = rs->locks;
		struct store_lock lk = { l };

		rd_unlock(s, &lk);
	}
	(void)redis_units_lock(&rs->units, STORE_GC_RELEASE, err, sizeof(err));
	redis_units_free(&rs->units);
	redis_held_drop(&rs->heads);
	if (rs->c)
		redisFree(rs->c);
	store_close(rs->dir);
	free(rs);
}

static const struct store_ops redis_ops = {
	.load = rd_load,
	.save = rd_save,
	.origin = rd_origin,
	.del = rd_del,
	.list = rd_list,
	.lock = rd_lock,
	.unlock = rd_unlock,
	.close = rd_close,
	.watch = rd_watch,
	.obj_has = rd_obj_has,
	.obj_put = rd_obj_put,
	.obj_read = rd_obj_read,
	.obj_del = rd_obj_del,
	.obj_list = rd_obj_list,
	.obj_lock = rd_obj_lock,
	.obj_fetch = rd_obj_fetch,
};

struct store *store_redis_open(struct store *dir, const struct store_spec *sp,
                               double ttl_days, double timeout, char *err,
                               size_t errlen)
{
	struct rd_store *rs = calloc(1, sizeof(*rs));
	char token[33];

	if (!rs || new_token(token, sizeof(token)) < 0) {
		if (rs)
			snprintf(err, errlen, "getrandom: %s", strerror(errno));
		else
			snprintf(err, errlen, "out of memory");
		free(rs);
		store_close(dir);
		return NULL;
	}
	rs->dir = dir;
	rs->sp = *sp;
	store_spec_redis_name(sp, rs->name, sizeof(rs->name));
	if (!(timeout > 0) || timeout > 86400)
		timeout = 86400;
	rs->tv.tv_sec = (time_t)timeout;
	rs->tv.tv_usec = (suseconds_t)((timeout - (double)rs->tv.tv_sec) * 1e6);
	if (rs->tv.tv_sec == 0 && rs->tv.tv_usec < 100000)
		rs->tv.tv_usec = 100000;
	/* At most about 31,000 years: PEXPIRE takes any of those. */
	rs->ttl_ms = ttl_days > 0 ? (long long)(fmin(ttl_days, 1e7) * 86400e3) : 0;
	if (ttl_days > 0 && rs->ttl_ms < 1)
		rs->ttl_ms = 1;
	redis_units_init(&rs->units, units_run, rs, rs->sp.prefix, rs->name, sp->lock_ms, token);
	rs->s.ops = &redis_ops;
	rs->s.priv = rs;
	rs->s.home = dir->home;
	/* Connected at the first command: --server-status and --server-stop,
	 * which need only the directory, work while the server is away. */
	return &rs->s;
}
