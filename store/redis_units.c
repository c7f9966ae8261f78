/*
 * redis_units.c - a Redis store's units and its units lock (redis_units.h).
 *
 * Keys, under the store's prefix P:
 *   P unit:HEX       a unit's bytes (HEX: its SHA-256, 64 lowercase hex
 *                    digits); written with SET NX, never rewritten; no
 *                    time to live (collecting removes it)
 *   P units:gc       the exclusive holder (a collector): its holder name,
 *                    SET NX PX DOLSOT_REDIS_LOCK_MS
 *   P units:gcwant   a collector waiting: new shared holders wait too, so
 *                    commits cannot starve it (PX, short)
 *   P units:commits  the shared holders: a sorted set of holder names,
 *                    each scored with the server time (ms) its hold ends
 *
 * The lock, one script per step, all on the server's clock (TIME):
 * - Shared (a commit from its first put until its head is in place, a
 *   fork): taken when neither units:gc nor units:gcwant exists, as
 *   ZADD name now+LOCK_MS.  Every units command under it checks first
 *   that the hold has not ended (else DOLSOT_UNITS_LOST) and extends it,
 *   so a hold once ended is never revived; the save script does the same
 *   check before it writes the head, and removes the hold in the same
 *   step.  A head is thus written only while its units are protected.
 * - Exclusive (collecting): taken when units:gc is free and no shared
 *   hold is live (the ended ones are dropped first); while shared holds
 *   are live it sets units:gcwant and waits.  Each removal checks that
 *   units:gc is still ours and extends it, so a collector whose hold
 *   ended (paused past it) removes nothing more.
 * - A killed holder wedges nothing: its hold ends LOCK_MS after its last
 *   command (the sorted set and both keys expire too), as the session
 *   lock's key does.  No guard (redis_guard.c) is needed: a hold spans
 *   only the client's own commands, never a running cell.
 *
 * Round trips: the shared hold is taken inside the commit's first units
 * command (its first put, or the check of its refs), and ended inside the
 * save script; the refs of the head the commit loaded are checked in one
 * script (redis_units_saw, known).  A commit that puts no unit costs two
 * round trips more than a whole blob's: reading its previous head
 * (store.c) and that check.  A load reads its head's units in order: the
 * next ones come with the first (one MGET, read_ahead), so a load costs
 * one round trip more than a whole blob's.
 *
 * Durability: as the store's sessions (store_redis.c): the server's own
 * persistence (redis_health.c says when it has none).  RDB snapshots and
 * the append-only file both keep the order of commands, so a unit is
 * never lost while a head written after it is kept.
 */
#include "redis_units.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

#define POLL_MS 25              /* between tries of a busy lock */
#define WANT_MS_MAX 1000L       /* a waiting collector's mark lives this long */
#define HAS_BATCH 1024          /* hashes checked per script */
#define AHEAD_MAX 256           /* units read per MGET */
#define AHEAD_BYTES (8u << 20)  /* their sizes (as the head says) summed */
#define KEY_LEN (128 + 16 + UNITS_HEX_LEN)

/* KEYS[1..3]: units:gc, units:gcwant, units:commits; ARGV[1]: the holder
 * name, ARGV[2]: LOCK_MS, ARGV[3]: 'a' take the shared hold (-1: busy),
 * 's' the shared hold must be live, 'x' the exclusive one, 'n' none. */
#define PROLOGUE \
	"redis.replicate_commands() " \
	"local t = redis.call('time') " \
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) " \
	"local ms = tonumber(ARGV[2]) " \
	"if ARGV[3] == 'a' then " \
	"if redis.call('exists', KEYS[1]) == 1 or redis.call('exists', KEYS[2]) == 1 " \
	"then return -1 end " \
	"redis.call('zadd', KEYS[3], now + ms, ARGV[1]) redis.call('pexpire', KEYS[3], ms) " \
	"elseif ARGV[3] == 's' then " \
	"local sc = redis.call('zscore', KEYS[3], ARGV[1]) " \
	"if not sc or tonumber(sc) <= now then " \
	"return redis.error_reply('DOLSOT_UNITS_LOST') end " \
	"redis.call('zadd', KEYS[3], now + ms, ARGV[1]) redis.call('pexpire', KEYS[3], ms) " \
	"elseif ARGV[3] == 'x' then " \
	"if redis.call('get', KEYS[1]) ~= ARGV[1] then " \
	"return redis.error_reply('DOLSOT_UNITS_LOST') end " \
	"redis.call('pexpire', KEYS[1], ms) end "

static const char take_script[] = PROLOGUE "return 1";
/* KEYS[4]: the unit; ARGV[4]: its bytes. */
static const char put_script[] = PROLOGUE
	"redis.call('set', KEYS[4], ARGV[4], 'NX') return 1";
/* KEYS[4..]: units; an array of 0 or 1 each. */
static const char has_script[] = PROLOGUE
	"local r = {} for i = 4, #KEYS do r[#r + 1] = redis.call('exists', KEYS[i]) end "
	"return r";
static const char del_script[] = PROLOGUE "return redis.call('del', KEYS[4])";
/* ARGV[3]: units:gcwant's time to live.  1 taken, 0 not yet. */
static const char exclusive_script[] =
	"redis.replicate_commands() "
	"local t = redis.call('time') "
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
	"redis.call('zremrangebyscore', KEYS[3], '-inf', now) "
	"local g = redis.call('get', KEYS[1]) "
	"if g and g ~= ARGV[1] then return 0 end "
	"if redis.call('zcard', KEYS[3]) > 0 then "
	"redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[3]) return 0 end "
	"redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) redis.call('del', KEYS[2]) "
	"return 1";
static const char release_exclusive_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

void redis_units_init(struct redis_units *u, redis_units_run run, void *ctx,
                      const char *prefix, const char *name, long lock_ms,
                      const char *token)
{
	memset(u, 0, sizeof(*u));
	u->run = run;
	u->ctx = ctx;
	u->prefix = prefix;
	u->name = name;
	u->lock_ms = lock_ms;
	snprintf(u->token, sizeof(u->token), "%s", token);
}

static void forget_known(struct redis_units *u)
{
	u->nknown = 0;
	u->sorted = true;
}

void redis_held_drop(struct redis_held_set *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].bytes);
	free(t->v);
	t->v = NULL;
	t->n = t->cap = t->next = 0;
}

int redis_held_reset(struct redis_held_set *t, size_t cap)
{
	redis_held_drop(t);
	t->v = calloc(cap ? cap : 1, sizeof(*t->v));
	if (!t->v)
		return -1;
	t->cap = cap;
	return 0;
}

void redis_held_add(struct redis_held_set *t, const char *name, redisReply *r)
{
	struct redis_held *h;

	if (t->n == t->cap || r->type != REDIS_REPLY_STRING)
		return;
	h = &t->v[t->n++];
	snprintf(h->name, sizeof(h->name), "%s", name);
	/* hiredis allocates with malloc: the bytes are taken, not copied. */
	h->bytes = r->str;
	h->len = r->len;
	r->str = NULL;
}

bool redis_held_take(struct redis_held_set *t, const char *name, char **bytes, size_t *len)
{
	for (size_t k = 0; k < t->n; k++) {
		size_t i = (t->next + k) % t->n;
		struct redis_held *h = &t->v[i];

		if (h->bytes && strcmp(h->name, name) == 0) {
			*bytes = h->bytes;
			*len = h->len;
			h->bytes = NULL;
			t->next = i + 1;
			return true;
		}
	}
	return false;
}

static void drop_hint(struct redis_units *u)
{
	free(u->hint);
	free(u->hint_size);
	u->hint = NULL;
	u->hint_size = NULL;
	u->nhint = 0;
}

void redis_units_free(struct redis_units *u)
{
	free(u->known);
	u->known = NULL;
	u->nknown = u->cap = 0;
	drop_hint(u);
	redis_held_drop(&u->ahead);
}

void redis_units_key(const struct redis_units *u, const char *kind, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", u->prefix, kind);
}

static void unit_key(const struct redis_units *u, const uint8_t *hash, char *buf, size_t len)
{
	char hex[UNITS_HEX_LEN + 1];

	units_hex(hash, hex);
	snprintf(buf, len, "%sunit:%s", u->prefix, hex);
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, STORE_HASH_LEN);
}

static void add_known(struct redis_units *u, const uint8_t *hash)
{
	if (u->nknown == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		uint8_t *grown = realloc(u->known, cap * STORE_HASH_LEN);

		if (!grown)
			return;   /* only asked again */
		u->known = grown;
		u->cap = cap;
	}
	memcpy(u->known + u->nknown++ * STORE_HASH_LEN, hash, STORE_HASH_LEN);
	u->sorted = false;
}

static bool is_known(struct redis_units *u, const uint8_t *hash)
{
	if (!u->nknown)
		return false;
	if (!u->sorted) {
		qsort(u->known, u->nknown, STORE_HASH_LEN, hash_cmp);
		u->sorted = true;
	}
	return bsearch(hash, u->known, u->nknown, STORE_HASH_LEN, hash_cmp) != NULL;
}

void redis_units_saw(struct redis_units *u, const uint8_t *blob, size_t len)
{
	char why[UNITS_ERR_MAX];
	struct units_head h;
	struct units_entry e;

	drop_hint(u);
	redis_held_drop(&u->ahead);
	if (!units_is_v4(blob, len) || units_parse_head(blob, len, &h, why, sizeof(why)) < 0 ||
	    !h.nrefs)
		return;
	u->hint = malloc((size_t)h.nrefs * STORE_HASH_LEN);
	u->hint_size = malloc((size_t)h.nrefs * sizeof(*u->hint_size));
	if (!u->hint || !u->hint_size) {
		drop_hint(u);
		return;
	}
	for (uint32_t i = 0; i < h.nrefs; i++) {
		units_ref(&h, i, &e);
		memcpy(u->hint + (size_t)i * STORE_HASH_LEN, e.hash, STORE_HASH_LEN);
		u->hint_size[i] = e.size;
	}
	u->nhint = h.nrefs;
}

/* The prologue's mode for the hold u has. */
static const char *mode_of(const struct redis_units *u)
{
	switch (u->hold) {
	case REDIS_UNITS_SHARED_DUE:
		return "a";
	case REDIS_UNITS_SHARED:
		return "s";
	case REDIS_UNITS_EXCLUSIVE:
		return "x";
	case REDIS_UNITS_NONE:
	default:
		return "n";
	}
}

/* A script of ours: "EVAL script numkeys gc gcwant commits KEYS... token
 * ms ARGS...", argv and lens filled from keys[0..nk) and args[0..na). */
static redisReply *run_script(struct redis_units *u, const char *what, const char *script,
                              const char *const *keys, int nk, const char *const *args,
                              const size_t *arglens, int na, char *err, size_t errlen)
{
	char gc[KEY_LEN], want[KEY_LEN], commits[KEY_LEN], numkeys[16], ms[32];
	int argc = 3 + 3 + nk + 2 + na, i = 0;
	const char **argv = malloc((size_t)argc * sizeof(*argv));
	size_t *lens = malloc((size_t)argc * sizeof(*lens));
	redisReply *r = NULL;

	if (!argv || !lens) {
		snprintf(err, errlen, "%s: %s: out of memory", u->name, what);
		goto out;
	}
	redis_units_key(u, "units:gc", gc, sizeof(gc));
	redis_units_key(u, "units:gcwant", want, sizeof(want));
	redis_units_key(u, "units:commits", commits, sizeof(commits));
	snprintf(numkeys, sizeof(numkeys), "%d", 3 + nk);
	snprintf(ms, sizeof(ms), "%ld", u->lock_ms);
	argv[i++] = "EVAL";
	argv[i++] = script;
	argv[i++] = numkeys;
	argv[i++] = gc;
	argv[i++] = want;
	argv[i++] = commits;
	for (int k = 0; k < nk; k++)
		argv[i++] = keys[k];
	argv[i++] = u->token;
	argv[i++] = ms;
	for (int k = 0; k < na; k++)
		argv[i++] = args[k];
	for (int k = 0; k < argc; k++)
		lens[k] = strlen(argv[k]);
	for (int k = 0; k < na; k++)
		if (arglens)
			lens[argc - na + k] = arglens[k];
	r = u->run(u->ctx, what, argc, argv, lens, err, errlen);
	if (!r && strstr(err, "DOLSOT_UNITS_LOST")) {
		snprintf(err, errlen, "%s: the store's units lock was lost (its hold expired: "
		         "over DOLSOT_REDIS_LOCK_MS without a word)", u->name);
		u->hold = REDIS_UNITS_NONE;
		forget_known(u);
		errno = ENOLCK;
	} else if (!r) {
		errno = EIO;
	}
out:
	free(argv);
	free(lens);
	return r;
}

/* Whether r says the shared hold could not be taken yet. */
static bool busy(const redisReply *r)
{
	return r->type == REDIS_REPLY_INTEGER && r->integer < 0;
}

/* Take the shared hold, waiting for a collector to finish. */
static int take_shared(struct redis_units *u, char *err, size_t errlen)
{
	for (;;) {
		const char *mode = "a";
		redisReply *r = run_script(u, "lock the units", take_script, NULL, 0, &mode, NULL,
		                           1, err, errlen);
		bool wait;

		if (!r)
			return -1;
		wait = busy(r);
		freeReplyObject(r);
		if (!wait)
			break;
		poll(NULL, 0, POLL_MS);
	}
	u->hold = REDIS_UNITS_SHARED;
	return 0;
}

int redis_units_ready(struct redis_units *u, char *err, size_t errlen)
{
	return u->hold == REDIS_UNITS_SHARED_DUE ? take_shared(u, err, errlen) : 0;
}

/*
 * A units script under u's hold (args after the mode): a shared hold
 * still due is taken by the script itself, or, when a collector holds
 * the lock, after waiting for it, and the script run again.
 */
static redisReply *run_held(struct redis_units *u, const char *what, const char *script,
                            const char *const *keys, int nk, const char **args,
                            size_t *arglens, int na, char *err, size_t errlen)
{
	for (;;) {
		redisReply *r;

		args[0] = mode_of(u);
		arglens[0] = 1;
		r = run_script(u, what, script, keys, nk, args, arglens, na, err, errlen);
		if (!r || u->hold != REDIS_UNITS_SHARED_DUE)
			return r;
		if (!busy(r)) {
			u->hold = REDIS_UNITS_SHARED;
			return r;
		}
		freeReplyObject(r);
		if (take_shared(u, err, errlen) < 0)
			return NULL;
	}
}

const char *redis_units_save_token(const struct redis_units *u)
{
	return u->hold == REDIS_UNITS_SHARED ? u->token : "";
}

void redis_units_saved(struct redis_units *u)
{
	if (u->hold == REDIS_UNITS_SHARED || u->hold == REDIS_UNITS_SHARED_DUE) {
		u->hold = REDIS_UNITS_NONE;
		forget_known(u);
	}
}

bool redis_units_hash_of(const struct redis_units *u, const char *key,
                         uint8_t hash[STORE_HASH_LEN])
{
	size_t pl = strlen(u->prefix);
	const char *hex = key + pl + strlen("unit:");

	return strncmp(key, u->prefix, pl) == 0 && strncmp(key + pl, "unit:", 5) == 0 &&
	       units_unhex(hex, strlen(hex), hash) == 0;
}

int redis_units_put(struct redis_units *u, const uint8_t *hash, const uint8_t *p, size_t n,
                    char *err, size_t errlen)
{
	char key[KEY_LEN];
	const char *keys[] = { key }, *args[] = { NULL, n ? (const char *)p : "" };
	size_t lens[] = { 1, n };
	redisReply *r;

	unit_key(u, hash, key, sizeof(key));
	r = run_held(u, "store a unit", put_script, keys, 1, args, lens, 2, err, errlen);
	if (!r)
		return -1;
	freeReplyObject(r);
	if (u->hold == REDIS_UNITS_SHARED)
		add_known(u, hash);
	return 0;
}

/* The hashes to check with hash: those of the last head loaded from
 * hash on, not known yet, up to HAS_BATCH in all (hash first). */
static size_t batch_of(struct redis_units *u, const uint8_t *hash, const uint8_t **out)
{
	size_t n = 0, i = 0;

	out[n++] = hash;
	if (u->hold == REDIS_UNITS_NONE)
		return n;
	while (i < u->nhint && memcmp(u->hint + i * STORE_HASH_LEN, hash, STORE_HASH_LEN) <= 0)
		i++;
	for (; i < u->nhint && n < HAS_BATCH; i++)
		if (!is_known(u, u->hint + i * STORE_HASH_LEN))
			out[n++] = u->hint + i * STORE_HASH_LEN;
	return n;
}

int redis_units_has(struct redis_units *u, const uint8_t *hash, bool *has, char *err,
                    size_t errlen)
{
	const uint8_t **batch;
	char (*keys)[KEY_LEN] = NULL;
	const char **kp = NULL, *args[1];
	size_t lens[1], n;
	redisReply *r = NULL;
	int ret = -1;

	*has = false;
	if (u->hold == REDIS_UNITS_SHARED && is_known(u, hash)) {
		*has = true;
		return 0;
	}
	batch = malloc(HAS_BATCH * sizeof(*batch));
	n = batch ? batch_of(u, hash, batch) : 0;
	keys = n ? malloc(n * sizeof(*keys)) : NULL;
	kp = n ? malloc(n * sizeof(*kp)) : NULL;
	if (!keys || !kp) {
		snprintf(err, errlen, "%s: look for a unit: out of memory", u->name);
		errno = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unit_key(u, batch[i], keys[i], sizeof(keys[i]));
		kp[i] = keys[i];
	}
	r = run_held(u, "look for a unit", has_script, kp, (int)n, args, lens, 1, err, errlen);
	if (!r)
		goto out;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
		snprintf(err, errlen, "%s: look for a unit: an unexpected reply", u->name);
		errno = EIO;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		bool there = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer;

		if (there && u->hold == REDIS_UNITS_SHARED)
			add_known(u, batch[i]);
		if (i == 0)
			*has = there;
	}
	ret = 0;
out:
	if (r)
		freeReplyObject(r);
	free(batch);
	free(keys);
	free(kp);
	return ret;
}

/* The position of hash among the hint's refs, or -1. */
static long hint_pos(const struct redis_units *u, const uint8_t *hash)
{
	const uint8_t *at = u->nhint ? bsearch(hash, u->hint, u->nhint, STORE_HASH_LEN, hash_cmp)
	                             : NULL;

	return at ? (long)((size_t)(at - u->hint) / STORE_HASH_LEN) : -1;
}

/* Hand out hash's bytes when they were read ahead: true then.  One found
 * absent is asked again (it may have been put since). */
static bool take_ahead(struct redis_units *u, const uint8_t *hash, uint8_t **p, size_t *n)
{
	char hex[UNITS_HEX_LEN + 1];

	units_hex(hash, hex);
	return redis_held_take(&u->ahead, hex, (char **)p, n);
}

/* How many of the units with sizes[0..n) to read at once: the first
 * always, then up to AHEAD_MAX units and AHEAD_BYTES (their sizes as a
 * head says). */
static size_t batch_len(const uint64_t *sizes, size_t n)
{
	uint64_t total = sizes[0];
	size_t k = 1;

	while (k < n && k < AHEAD_MAX && total < AHEAD_BYTES && sizes[k] <= AHEAD_BYTES - total)
		total += sizes[k++];
	return k;
}

/* MGET the units hashes[0..n): an array reply of n, or NULL with err. */
static redisReply *mget(struct redis_units *u, const uint8_t *hashes, size_t n, char *err,
                        size_t errlen)
{
	char (*keys)[KEY_LEN] = malloc(n * sizeof(*keys));
	const char **argv = malloc((n + 1) * sizeof(*argv));
	redisReply *r = NULL;

	if (!keys || !argv) {
		snprintf(err, errlen, "%s: read a unit: out of memory", u->name);
		errno = ENOMEM;
		goto out;
	}
	argv[0] = "MGET";
	for (size_t i = 0; i < n; i++) {
		unit_key(u, hashes + i * STORE_HASH_LEN, keys[i], sizeof(keys[i]));
		argv[i + 1] = keys[i];
	}
	r = u->run(u->ctx, "read a unit", (int)n + 1, argv, NULL, err, errlen);
	if (r && (r->type != REDIS_REPLY_ARRAY || r->elements != n)) {
		snprintf(err, errlen, "%s: read a unit: an unexpected reply", u->name);
		freeReplyObject(r);
		r = NULL;
	}
	if (!r)
		errno = EIO;
out:
	free(keys);
	free(argv);
	return r;
}

/* MGET hash and those after it in the hint into u->ahead. */
static int read_ahead(struct redis_units *u, const uint8_t *hash, char *err, size_t errlen)
{
	long at = hint_pos(u, hash);
	const uint8_t *from = at < 0 ? hash : u->hint + (size_t)at * STORE_HASH_LEN;
	size_t n = at < 0 ? 1 : batch_len(u->hint_size + at, u->nhint - (size_t)at);
	char hex[UNITS_HEX_LEN + 1];
	redisReply *r;

	if (redis_held_reset(&u->ahead, n) < 0) {
		snprintf(err, errlen, "%s: read a unit: out of memory", u->name);
		errno = ENOMEM;
		return -1;
	}
	r = mget(u, from, n, err, errlen);
	if (!r)
		return -1;
	for (size_t i = 0; i < n; i++) {
		units_hex(from + i * STORE_HASH_LEN, hex);
		redis_held_add(&u->ahead, hex, r->element[i]);
	}
	freeReplyObject(r);
	return 0;
}

int redis_units_fetch(struct redis_units *u, const uint8_t *hashes, const uint64_t *sizes,
                      size_t n, store_unit_take take, void *ctx, char *err, size_t errlen)
{
	for (size_t i = 0, k; i < n; i += k) {
		const uint8_t *from = hashes + i * STORE_HASH_LEN;
		redisReply *r;

		k = batch_len(sizes + i, n - i);
		r = mget(u, from, k, err, errlen);
		if (!r)
			return -1;
		for (size_t j = 0; j < k; j++) {
			const redisReply *e = r->element[j];

			if (e->type == REDIS_REPLY_STRING &&
			    take(ctx, from + j * STORE_HASH_LEN, (const uint8_t *)e->str, e->len, err,
			         errlen) < 0) {
				freeReplyObject(r);
				return -1;
			}
		}
		freeReplyObject(r);
	}
	return 0;
}

/* A load reads the refs of the head it loaded in order: those after the
 * one asked for come in the same round trip. */
int redis_units_read(struct redis_units *u, const uint8_t *hash, uint8_t **p, size_t *n,
                     bool *found, char *err, size_t errlen)
{
	*p = NULL;
	*n = 0;
	*found = false;
	if (take_ahead(u, hash, p, n)) {
		*found = true;
		return 0;
	}
	if (read_ahead(u, hash, err, errlen) < 0)
		return -1;
	*found = take_ahead(u, hash, p, n);
	return 0;
}

int redis_units_del(struct redis_units *u, const uint8_t *hash, char *err, size_t errlen)
{
	char key[KEY_LEN];
	const char *keys[] = { key }, *args[1];
	size_t lens[1];
	redisReply *r;

	unit_key(u, hash, key, sizeof(key));
	r = run_held(u, "remove a unit", del_script, keys, 1, args, lens, 1, err, errlen);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* Take the exclusive hold, waiting as long as it takes. */
static int take_exclusive(struct redis_units *u, char *err, size_t errlen)
{
	char want[32];
	const char *args[] = { want };

	snprintf(want, sizeof(want), "%ld", u->lock_ms < WANT_MS_MAX ? u->lock_ms : WANT_MS_MAX);
	for (;;) {
		redisReply *r = run_script(u, "lock the units", exclusive_script, NULL, 0, args,
		                           NULL, 1, err, errlen);
		bool got;

		if (!r)
			return -1;
		got = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
		freeReplyObject(r);
		if (got)
			break;
		poll(NULL, 0, POLL_MS);
	}
	u->hold = REDIS_UNITS_EXCLUSIVE;
	return 0;
}

/* End u's hold (one that expired meanwhile is ended already). */
static int release(struct redis_units *u, char *err, size_t errlen)
{
	char key[KEY_LEN];
	const char *zrem[] = { "ZREM", key, u->token };
	const char *del[] = { "EVAL", release_exclusive_script, "1", key, u->token };
	enum redis_units_hold was = u->hold;
	redisReply *r = NULL;

	u->hold = REDIS_UNITS_NONE;
	forget_known(u);
	if (was == REDIS_UNITS_SHARED) {
		redis_units_key(u, "units:commits", key, sizeof(key));
		r = u->run(u->ctx, "unlock the units", 3, zrem, NULL, err, errlen);
	} else if (was == REDIS_UNITS_EXCLUSIVE) {
		redis_units_key(u, "units:gc", key, sizeof(key));
		r = u->run(u->ctx, "unlock the units", 5, del, NULL, err, errlen);
	} else {
		return 0;
	}
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int redis_units_lock(struct redis_units *u, enum store_gc_lock how, char *err,
                     size_t errlen)
{
	switch (how) {
	case STORE_GC_SHARED:
		if (u->hold == REDIS_UNITS_EXCLUSIVE && release(u, err, errlen) < 0)
			return -1;
		if (u->hold == REDIS_UNITS_NONE)
			u->hold = REDIS_UNITS_SHARED_DUE;
		return 0;
	case STORE_GC_EXCLUSIVE:
		if (u->hold == REDIS_UNITS_EXCLUSIVE)
			return 0;
		if (release(u, err, errlen) < 0)
			return -1;
		forget_known(u);
		return take_exclusive(u, err, errlen);
	case STORE_GC_RELEASE:
	default:
		return release(u, err, errlen);
	}
}
