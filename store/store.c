/*
 * store.c - the store door: the factory that opens a store of a kind,
 * and sessions as file descriptors for any store.
 *
 * The worker reads the session from an fd and writes the new one into
 * another, so the client never copies a session through its own memory.
 * A store that keeps files (store_file.c) hands out its session file and
 * its temp file.  Any other store (memory, remote), and any save whose
 * writer runs under RLIMIT_FSIZE, goes through a memfd: loaded bytes are
 * written into one, and a saved memfd is mapped and passed to ops->save.
 *
 * Every session a worker reads or writes passes through here signed
 * (sign.h): the new session gets its trailer before the store sees it,
 * and a stored one is copied into a memfd of ours and verified there,
 * then handed on without its trailer, so the bytes a worker unpickles are
 * the ones verified, whatever the backend and whoever can write to it.
 */
#include "store.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callrec.h"
#include "fdio.h"
#include "history.h"
#include "mem_client.h"
#include "sha256.h"
#include "sign.h"
#include "store_cmd.h"
#include "store_file.h"
#include "store_redis.h"
#include "unitcache.h"
#include "unitstore.h"
#include "units.h"

/* Collect the units no head names once the backend reaped sessions. */
static void after_reap(struct store *s)
{
	if (!s->reaped)
		return;
	s->reaped = false;
	unitstore_collect_all(s);
	s->reaped = false;   /* what collecting's own listing reaped went with it */
}

int store_load(struct store *s, const char *id, uint8_t **blob,
               size_t *len, bool *found, char *err, size_t errlen)
{
	if (!store_id_valid(id, err, errlen))
		return -1;
	return s->ops->load(s, id, blob, len, found, err, errlen);
}

int store_save(struct store *s, const char *id,
               const uint8_t *blob, size_t len, bool sandboxed,
               char *err, size_t errlen)
{
	struct store_mark mark = { sandboxed, 0 };

	if (!store_id_valid(id, err, errlen))
		return -1;
	return s->ops->save(s, id, blob, len, &mark, err, errlen);
}

int store_origin(struct store *s, const char *id, bool *sandboxed,
                 char *err, size_t errlen)
{
	struct store_mark mark = { true, 0 };
	int ret = -1;

	if (store_id_valid(id, err, errlen))
		ret = s->ops->origin(s, id, &mark, err, errlen);
	*sandboxed = ret < 0 || mark.sandboxed;
	return ret;
}

int store_del(struct store *s, const char *id,
              unsigned *removed, char *err, size_t errlen)
{
	bool all = strcmp(id, "all") == 0;
	uint8_t *refs = NULL;
	size_t nrefs = 0;
	int ret;

	if (!all && !store_id_valid(id, err, errlen))
		return -1;
	if (!all && unitstore_keeps(s))
		unitstore_refs_of(s, id, &refs, &nrefs);
	ret = s->ops->del(s, id, removed, err, errlen);
	if (ret == 0 && all)
		unitstore_collect_all(s);
	else if (ret == 0)
		unitstore_collect(s, refs, nrefs);
	free(refs);
	after_reap(s);
	return ret;
}

int store_sweep(struct store *s, char *err, size_t errlen)
{
	int ret = s->ops->sweep ? s->ops->sweep(s, err, errlen) : 0;

	s->reaped = false;
	if (ret == 0)
		unitstore_collect_all(s);
	return ret;
}

/* A v4 session's size on a store with units: its head and its refs. */
static void units_sizes(struct store *s, struct session_info *info, size_t n)
{
	char err[STORE_ERR_MAX];
	uint8_t *stored;
	size_t len;
	bool found;

	for (size_t i = 0; i < n; i++) {
		stored = NULL;
		if (unitstore_load_v4(s, info[i].id, &stored, &len, &found, err, sizeof(err)) == 0 &&
		    stored)
			info[i].size = unitstore_size(stored, len);
		free(stored);
	}
}

int store_list(struct store *s, struct session_info **out,
               size_t *n, char *err, size_t errlen)
{
	int ret = s->ops->list(s, out, n, err, errlen);

	if (ret == 0 && unitstore_keeps(s))
		units_sizes(s, *out, *n);
	after_reap(s);
	return ret;
}

/* The store goes on without its unit cache (why). */
static void drop_cache(struct store *s, const char *why)
{
	unitstore_warn(s, why, "every call of this store is handed every unit of its session");
	s->close_cache(s->cache);
	s->cache = NULL;
}

int store_units_dir(struct store *s, char *buf, size_t len, char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];

	if (!unitstore_keeps(s))
		return 0;
	if (len)
		buf[0] = '\0';
	if (s->cache && unitcache_dir(s->cache, buf, len, why, sizeof(why)) < 0) {
		drop_cache(s, why);
		buf[0] = '\0';
	}
	if (s->cache || !s->ops->obj_dir)
		return 1;   /* the cache's, or none a worker could read itself */
	return s->ops->obj_dir(s, buf, len, err, errlen) < 0 ? -1 : 1;
}

enum store_lock_status store_lock(struct store *s, const char *id, long timeout_ms,
                                  struct store_lock *lk, char *err, size_t errlen)
{
	lk->priv = NULL;
	if (!store_id_valid(id, err, errlen))
		return STORE_LOCK_FAILED;
	return s->ops->lock(s, id, timeout_ms, lk, err, errlen);
}

void store_unlock(struct store *s, struct store_lock *lk)
{
	char why[STORE_ERR_MAX];

	s->next_id[0] = '\0';   /* a counter learnt under the lock goes with it */
	/* The call is over: the units it needed may leave the cache. */
	if (s->cache && unitcache_end(s->cache, why, sizeof(why)) < 0)
		unitstore_warn(s, why, "it was not cut to DOLSOT_UNIT_CACHE_SIZE");
	s->ops->unlock(s, lk);
	after_reap(s);
}

void store_lock_watch(struct store *s, struct store_lock *lk, int pidfd)
{
	if (s->ops->watch && lk->priv)
		s->ops->watch(s, lk, pidfd);
}

char *store_take_notice(struct store *s)
{
	char *n = s->notice;

	s->notice = NULL;
	return n;
}

void store_dir_path(const char *dir, char *buf, size_t len)
{
	store_file_path(dir, buf, len);
}

/* A Redis or helper store over dir, where spec says. */
static struct store *open_remote(struct store *dir, const char *spec, double ttl_days,
                                 double timeout, char *err, size_t errlen)
{
	struct store_spec *sp = malloc(sizeof(*sp));
	struct store *st = NULL;
	char why[STORE_ERR_MAX];

	if (!sp) {
		snprintf(err, errlen, "out of memory");
		store_close(dir);
		return NULL;
	}
	if (store_spec_parse(spec, sp, why, sizeof(why)) < 0 ||
	    (sp->kind == STORE_KIND_REDIS && store_spec_redis_env(sp, why, sizeof(why)) < 0)) {
		snprintf(err, errlen, "DOLSOT_STORE is not valid: %s", why);
		store_close(dir);
	} else if (sp->kind == STORE_KIND_REDIS) {
		st = store_redis_open(dir, sp, ttl_days, timeout, err, errlen);
	} else if (sp->kind == STORE_KIND_CMD) {
		st = store_cmd_open(dir, sp, timeout, err, errlen);
	} else {
		snprintf(err, errlen, "DOLSOT_STORE is not a Redis URL or a helper");
		store_close(dir);
	}
	free(sp);
	return st;
}

/*
 * A store whose units no worker can read where they are kept gets this
 * machine's copy of them (unitcache.h), unless DOLSOT_UNIT_CACHE_SIZE is
 * 0 (options.c refused a bad value before any store was opened).  The
 * memory store's units are in this machine's memory already (obj_pack).
 */
static void attach_cache(struct store *st)
{
	char why[STORE_ERR_MAX];
	uint64_t bound;

	if (!unitstore_keeps(st) || st->ops->obj_dir || st->ops->obj_pack || st->home < 0 ||
	    store_spec_cache_env(&bound, why, sizeof(why)) < 0 || !bound)
		return;
	st->cache = unitcache_new(st->home, bound);
	st->close_cache = unitcache_free;
}

struct store *store_open(enum store_kind kind, const char *spec, const char *dir,
                         double ttl_days, double timeout, char *err, size_t errlen)
{
	/* Only the FileStore's own sessions are reaped by its TTL; a Redis
	 * or helper store's expire where they live. */
	bool local = kind == STORE_KIND_FILE || kind == STORE_KIND_MEMORY;
	struct store *st = store_file_open(dir, local ? ttl_days : 0, err, errlen);

	switch (kind) {
	case STORE_KIND_MEMORY:
		/* The directory still hosts the server's socket; the sessions
		 * themselves live in the server. */
		return st ? mem_client_open(st, err, errlen) : NULL;
	case STORE_KIND_REDIS:
	case STORE_KIND_CMD:
		st = st ? open_remote(st, spec, ttl_days, timeout, err, errlen) : NULL;
		if (st)
			attach_cache(st);
		return st;
	case STORE_KIND_FILE:
	default:
		return st;
	}
}

int store_sign_with(struct store *s, const char *spec, char *err, size_t errlen)
{
	struct sign_key *key = malloc(sizeof(*key));

	if (!key) {
		snprintf(err, errlen, "cannot load the session key: %s", strerror(errno));
		return -1;
	}
	if (sign_key_open(spec, s->home, key, err, errlen) < 0) {
		free(key);
		return -1;
	}
	free(s->key);
	s->key = key;
	return 0;
}

/* No signing without a key: a store that store_sign_with never keyed
 * hands no session to a worker and takes none from it. */
static int need_key(const struct store *s, const char *id, char *err, size_t errlen)
{
	if (s->key)
		return 0;
	snprintf(err, errlen, "session '%s': this store has no session key", id);
	errno = EINVAL;
	return -1;
}

/* When id was last saved, as the store lists it; -1 when it cannot say. */
static int saved_at(struct store *s, const char *id, struct timespec *t)
{
	char err[STORE_ERR_MAX];
	struct session_info *info = NULL;
	size_t n = 0;
	int ret = -1;

	if (s->ops->list(s, &info, &n, err, sizeof(err)) < 0)
		return -1;
	for (size_t i = 0; i < n && ret < 0; i++)
		if (strcmp(info[i].id, id) == 0) {
			*t = info[i].mtime;
			ret = 0;
		}
	free(info);
	return ret;
}

static void utc_text(const struct timespec *t, char *buf, size_t len)
{
	struct tm tm;

	if (!gmtime_r(&t->tv_sec, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "%lld s after the epoch", (long long)t->tv_sec);
}

/*
 * A signature that does not match the store's own key file, when that file
 * is newer than the session: the key the session was signed with went
 * missing and a new one was made (or another put there).  The session is
 * then most likely fine, and comes back with the old key, so the message
 * says that and never names --reset.  Newer: made by this very call, or
 * in a later second than the session's last save (stores list whole
 * seconds).  0 with err written, -1 when not so.
 */
static int key_newer(struct store *s, const char *id, char *err, size_t errlen)
{
	const struct sign_key *k = s->key;
	char dir[4096], link[64], made[64], saved[64];
	struct timespec t;
	ssize_t n;

	if (!k->made.tv_sec || s->home < 0 || saved_at(s, id, &t) < 0 ||
	    (!k->fresh && t.tv_sec >= k->made.tv_sec))
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", s->home);
	n = readlink(link, dir, sizeof(dir) - 1);
	if (n < 0)
		snprintf(dir, sizeof(dir), "the session directory");
	else
		dir[n] = '\0';
	utc_text(&k->made, made, sizeof(made));
	utc_text(&t, saved, sizeof(saved));
	snprintf(err, errlen, "session '%s' cannot be loaded: it was signed with another key "
	         "than the session key file %s/%s, which is newer than the session: that file "
	         "was made %s%s, after the session's last save (%s); the session is kept as it "
	         "is, and loads again under the key it was signed with: put that key back in "
	         "that file, or name it with DOLSOT_SESSION_KEY", id, dir, SIGN_KEY_FILE,
	         k->fresh ? "by this call, as none was there, at " : "at ", made, saved);
	errno = EBADMSG;
	return 0;
}

/*
 * 0 when stored[0..n) is id's, signed with the store's key, and not an
 * earlier save than the one rec (the store's record) says was committed
 * last: *meta what the trailer signed and *trailer its size.  Else -1 with
 * the refusal, which names the reset (unless the key is newer).
 */
static int check_signed(struct store *s, const char *id, const uint8_t *stored, size_t n,
                        const struct store_mark *rec, struct sign_meta *meta,
                        size_t *trailer, char *err, size_t errlen)
{
	enum sign_verdict v = sign_verify(s->key, id, stored, n, meta, trailer);
	char why[320];

	if (v == SIGN_OK && meta->seq >= rec->seq)
		return 0;
	errno = EBADMSG;
	if (v == SIGN_MISMATCH && key_newer(s, id, err, errlen) == 0)
		return -1;
	if (v != SIGN_OK)
		snprintf(why, sizeof(why), "%s", sign_verdict_reason(v));
	else if (meta->seq)
		snprintf(why, sizeof(why), "it is an earlier save (number %" PRIu64 ") than the "
		         "one the store last committed (number %" PRIu64 "), put back by "
		         "someone who can write the store, so it was not loaded", meta->seq,
		         rec->seq);
	else
		snprintf(why, sizeof(why), "it is an earlier save (signed before dolsot numbered "
		         "saves) than the one the store last committed (number %" PRIu64 "), "
		         "put back by someone who can write the store, so it was not loaded",
		         rec->seq);
	snprintf(err, errlen, "session '%s' cannot be loaded: %s; run 'dolsot --reset %s' "
	         "to start it afresh", id, why, id);
	errno = EBADMSG;
	return -1;
}

/* Who wrote a session: its signature's meta (when its trailer has one)
 * and the store's record rec. */
/* What a verified load learnt beside the blob. */
struct loaded {
	struct store_mark rec;  /* the store's record */
	struct sign_meta meta;  /* the signature's */
	size_t trailer;         /* the trailer's size */
	/* The stored bytes' SHA-256 and size, when the store will adopt them
	 * as the unit that keeps this state (store_ops.obj_adopt). */
	bool hashed;
	uint8_t hash[STORE_HASH_LEN];
	uint64_t stored_len;
};

static enum store_origin origin_of(const struct sign_meta *meta, size_t trailer,
                                   const struct store_mark *rec)
{
	bool signed_sb = trailer == SIGN_TRAILER && meta->sandboxed;

	if (signed_sb && !rec->sandboxed)
		return STORE_ORIGIN_DISPUTED;
	return signed_sb || rec->sandboxed ? STORE_ORIGIN_SANDBOXED : STORE_ORIGIN_HOST;
}

/* The verified blob of a store without fds, in a memfd. */
static int memfd_blob(struct store *s, const char *id, int *fd, size_t *len,
                      bool *found, struct loaded *l, char *err, size_t errlen)
{
	uint8_t *blob = NULL;
	int errsv;

	if (s->ops->load(s, id, &blob, len, found, err, errlen) < 0)
		return -1;
	if (!*found) {
		free(blob);
		return 0;
	}
	if (check_signed(s, id, blob, *len, &l->rec, &l->meta, &l->trailer, err,
	                 errlen) < 0) {
		*found = false;
		free(blob);
		return -1;
	}
	*len -= l->trailer;
	*fd = memfd_create("dolsot-session", MFD_CLOEXEC);
	if (*fd < 0 || fd_write_all(*fd, blob, *len) < 0) {
		errsv = errno;
		snprintf(err, errlen, "cannot load session '%s': %s: %s", id,
		         *fd < 0 ? "memfd_create" : "write", strerror(errsv));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		*found = false;
		free(blob);
		errno = errsv;
		return -1;
	}
	free(blob);
	return 0;
}

/* Replace *fd (len bytes) by a memfd holding a copy, copied in the kernel. */
static int copy_to_memfd(const char *id, int *fd, size_t len, char *err,
                         size_t errlen)
{
	int mfd = memfd_create("dolsot-session", MFD_CLOEXEC), errsv;
	off_t off = 0;

	while (mfd >= 0 && (size_t)off < len) {
		ssize_t n = sendfile(mfd, *fd, &off, len - (size_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errsv = n < 0 ? errno : EIO;   /* 0: the file got shorter */
			close(mfd);
			mfd = -1;
			errno = errsv;
		}
	}
	errsv = errno;
	close(*fd);
	*fd = mfd;
	if (mfd >= 0)
		return 0;
	snprintf(err, errlen, "cannot load session '%s': copy: %s", id, strerror(errsv));
	errno = errsv;
	return -1;
}

/* Verify the memfd copy *fd (len bytes) and cut its trailer off. */
static int verify_memfd(struct store *s, const char *id, int fd, size_t *len,
                        struct loaded *l, char *err, size_t errlen)
{
	void *p = NULL;
	int ret, errsv;

	if (*len > 0) {
		p = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			errsv = errno;
			snprintf(err, errlen, "cannot load session '%s': mmap: %s", id,
			         strerror(errsv));
			errno = errsv;
			return -1;
		}
	}
	ret = check_signed(s, id, p ? p : (const void *)"", *len, &l->rec, &l->meta,
	                   &l->trailer, err, errlen);
	if (ret == 0 && p && s->history && s->ops->obj_adopt) {
		sha256_bytes(p, *len, l->hash);
		l->stored_len = *len;
		l->hashed = true;
	}
	if (p)
		munmap(p, *len);
	if (ret < 0)
		return -1;
	*len -= l->trailer;
	if (ftruncate(fd, (off_t)*len) < 0) {
		errsv = errno;
		snprintf(err, errlen, "cannot load session '%s': ftruncate: %s", id,
		         strerror(errsv));
		errno = errsv;
		return -1;
	}
	return 0;
}

/* The stored session's verified copy (see store_open_blob), and what was
 * learnt beside it into *l; the next save of id is numbered from both. */
static int open_verified(struct store *s, const char *id, int *fd, size_t *len,
                         bool *found, struct loaded *l, char *err, size_t errlen)
{
	*fd = -1;
	*len = 0;
	*found = false;
	memset(l, 0, sizeof(*l));
	if (!store_id_valid(id, err, errlen) || need_key(s, id, err, errlen) < 0 ||
	    s->ops->origin(s, id, &l->rec, err, errlen) < 0)
		return -1;
	if (!s->ops->open_blob) {
		if (memfd_blob(s, id, fd, len, found, l, err, errlen) < 0)   /* a copy already */
			return -1;
	} else {
		if (s->ops->open_blob(s, id, fd, len, found, err, errlen) < 0)
			return -1;
		if (*found && (copy_to_memfd(id, fd, *len, err, errlen) < 0 ||
		               verify_memfd(s, id, *fd, len, l, err, errlen) < 0)) {
			fd_close(fd);
			*found = false;
			return -1;
		}
	}
	snprintf(s->next_id, sizeof(s->next_id), "%s", id);
	s->next_seq = (l->meta.seq > l->rec.seq ? l->meta.seq : l->rec.seq) + 1;
	return 0;
}

_Static_assert(CALLREC_FOOTER == HISTREC_FOOTER, "one buffer holds either footer");

/* How a record stored after a blob says its length, from its footer. */
typedef int (*footer_fn)(const uint8_t *tail, size_t total, size_t *len);

/* Cut the record whose footer (footer_len bytes, read by footer) ends the
 * verified copy fd (*len bytes) into *rec (malloc'd, NULL when none);
 * what names it in the refusal of a damaged one. */
static int cut_record(const char *id, int fd, size_t *len, size_t footer_len,
                      footer_fn footer, const char *what_rec, uint8_t **rec,
                      size_t *rec_len, char *err, size_t errlen)
{
	uint8_t tail[CALLREC_FOOTER];   /* HISTREC_FOOTER's size too (asserted below) */
	const char *what = "read";

	*rec = NULL;
	*rec_len = 0;
	if (*len >= footer_len && fd_pread_exact(fd, tail, footer_len, *len - footer_len) < 0)
		goto fail;
	if (footer(*len >= footer_len ? tail : NULL, *len, rec_len) < 0) {
		snprintf(err, errlen, "session '%s' cannot be loaded: its %s record is "
		         "damaged; run 'dolsot --reset %s' to start it afresh", id, what_rec, id);
		errno = EBADMSG;
		return -1;
	}
	if (fd_take_tail(fd, len, *rec_len, rec, &what) == 0)
		return 0;
fail:
	*rec_len = 0;
	snprintf(err, errlen, "cannot load session '%s': %s: %s", id, what, strerror(errno));
	return -1;
}

static bool keeps_history(const struct store *s)
{
	return s->history && unitstore_keeps(s);
}

/* What units requires of the verified blob in fd (*len bytes). */
static int load_units(struct store *s, const char *id, enum store_units units, int fd,
                      size_t *len, char *err, size_t errlen)
{
	if (!unitstore_keeps(s))
		return 0;
	if (units == STORE_UNITS_PACKED)
		return unitstore_append_pack(s, id, fd, len, err, errlen);
	if (units == STORE_UNITS_IN_DIR && s->cache)
		return unitstore_fill_cache(s, id, fd, len, err, errlen);
	return 0;
}

int store_open_blob_rec(struct store *s, const char *id, int *fd, size_t *len,
                        bool *found, uint8_t **rec, size_t *rec_len,
                        enum store_origin *origin, enum store_units units, char *err,
                        size_t errlen)
{
	struct loaded l;
	uint8_t *hrec = NULL;
	size_t hrec_len = 0;

	*rec = NULL;
	*rec_len = 0;
	*origin = STORE_ORIGIN_SANDBOXED;
	if (open_verified(s, id, fd, len, found, &l, err, errlen) < 0)
		return -1;
	*origin = origin_of(&l.meta, l.trailer, &l.rec);
	/* The history record is stored last (history.h), then the call-id
	 * record before it: cut in that order; what is left is the blob. */
	if (*found && (cut_record(id, *fd, len, HISTREC_FOOTER, histrec_footer_tail, "history",
	                          &hrec, &hrec_len, err, errlen) < 0 ||
	               cut_record(id, *fd, len, CALLREC_FOOTER, callrec_footer, "call-id", rec,
	                          rec_len, err, errlen) < 0))
		goto fail;
	/* Kept whatever the depth: --history and --undo read it too. */
	if (unitstore_keeps(s) &&
	    history_keep(s, id, *found ? *fd : -1, *len, *origin != STORE_ORIGIN_HOST, hrec,
	                 hrec_len, err, errlen) < 0) {
		hrec = NULL;
		goto fail;
	}
	if (unitstore_keeps(s) && l.hashed)
		history_stored_as(s, l.hash, l.stored_len);
	if (!unitstore_keeps(s))
		free(hrec);
	hrec = NULL;
	if (*found && load_units(s, id, units, *fd, len, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	free(hrec);
	fd_close(fd);
	free(*rec);
	*rec = NULL;
	*rec_len = 0;
	*found = false;
	return -1;
}

int store_open_blob(struct store *s, const char *id, int *fd, size_t *len, bool *found,
                    char *err, size_t errlen)
{
	enum store_origin origin;
	uint8_t *rec;
	size_t rec_len;
	int ret = store_open_blob_rec(s, id, fd, len, found, &rec, &rec_len, &origin,
	                              STORE_UNITS_UNREAD, err, errlen);

	free(rec);
	return ret;
}

/*
 * A memfd that cannot grow past max bytes: sized to max (sparse: nothing
 * is allocated until written) and sealed against growing.  Its writer
 * shrinks it to what it wrote (worker.c maps such an fd).
 */
static int bounded_memfd(uint64_t max)
{
	int fd = memfd_create("dolsot-save", MFD_CLOEXEC | (max ? MFD_ALLOW_SEALING : 0));

	if (fd < 0 || !max)
		return fd;
	if (max > (uint64_t)INT64_MAX || ftruncate(fd, (off_t)max) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int errsv = max > (uint64_t)INT64_MAX ? EFBIG : errno;

		close(fd);
		errno = errsv;
		return -1;
	}
	return fd;
}

int store_save_begin(struct store *s, const char *id, bool memfd, uint64_t max,
                     struct store_save *sv, char *err, size_t errlen)
{
	memset(sv, 0, sizeof(*sv));
	sv->fd = -1;
	sv->max = max;
	if (!store_id_valid(id, err, errlen))
		return -1;
	snprintf(sv->id, sizeof(sv->id), "%s", id);
	/* A store that cannot begin one (its disk is full) still gets the
	 * memfd, and says why when the bytes reach its save. */
	if (!memfd && s->ops->save_begin && s->ops->save_begin(s, sv, err, errlen) == 0)
		return 0;
	sv->priv = NULL;   /* ours: a memfd, committed through ops->save */
	sv->fd = bounded_memfd(max);
	if (sv->fd < 0) {
		int errsv = errno;

		snprintf(err, errlen, "cannot save session '%s': memfd: %s",
		         id, strerror(errsv));
		errno = errsv;
		return -1;
	}
	return 0;
}

/*
 * Map the memfd's len bytes with room for the trailer after them, sign,
 * and hand the whole to the store's save.  The room is an anonymous
 * mapping the file's pages are mapped over (private: the memfd, which may
 * be sealed against growing, is never written).
 */
static int commit_memfd(struct store *s, struct store_save *sv, size_t len,
                        const uint8_t *rec, size_t rec_len, char *err, size_t errlen)
{
	size_t total = len + rec_len + SIGN_TRAILER;
	struct sign_meta meta = { sv->seq, sv->sandboxed };
	struct store_mark mark = { sv->sandboxed, sv->seq };
	struct stat st;
	uint8_t *p;
	int ret, errsv;

	if (fstat(sv->fd, &st) < 0)
		return store_save_fail(s, sv, "fstat", errno, err, errlen);
	if ((uint64_t)st.st_size != (uint64_t)len)
		return store_save_fail(s, sv, "write", EIO, err, errlen);
	p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return store_save_fail(s, sv, "mmap", errno, err, errlen);
	if (len && mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, sv->fd, 0) ==
	           MAP_FAILED) {
		errsv = errno;
		munmap(p, total);
		return store_save_fail(s, sv, "mmap", errsv, err, errlen);
	}
	if (rec_len)
		memcpy(p + len, rec, rec_len);
	sign_trailer(s->key, sv->id, p, len + rec_len, &meta, p + len + rec_len);
	ret = s->ops->save(s, sv->id, p, total, &mark, err, errlen);
	errsv = errno;
	munmap(p, total);
	store_save_abort(s, sv);
	errno = errsv;
	return ret;
}

/* Append the record (rec_len bytes) and the trailer to a backend's save
 * file, which holds len bytes. */
static int sign_save_file(struct store *s, struct store_save *sv, size_t len,
                          const uint8_t *rec, size_t rec_len, char *err, size_t errlen)
{
	uint8_t trailer[SIGN_TRAILER];
	struct sign_meta meta = { sv->seq, sv->sandboxed };
	size_t signed_len = len + rec_len;
	struct stat st;
	void *p = NULL;

	if (fstat(sv->fd, &st) < 0)
		return store_save_fail(s, sv, "fstat", errno, err, errlen);
	if ((uint64_t)st.st_size != (uint64_t)len)
		return store_save_fail(s, sv, "write", EIO, err, errlen);
	errno = 0;
	if (rec_len && pwrite(sv->fd, rec, rec_len, (off_t)len) != (ssize_t)rec_len)
		return store_save_fail(s, sv, "write", errno ? errno : EIO, err, errlen);
	if (signed_len) {
		p = mmap(NULL, signed_len, PROT_READ, MAP_SHARED, sv->fd, 0);
		if (p == MAP_FAILED)
			return store_save_fail(s, sv, "mmap", errno, err, errlen);
	}
	sign_trailer(s->key, sv->id, p, signed_len, &meta, trailer);
	if (p)
		munmap(p, signed_len);
	errno = 0;
	if (pwrite(sv->fd, trailer, sizeof(trailer), (off_t)signed_len) !=
	    (ssize_t)sizeof(trailer))
		return store_save_fail(s, sv, "write", errno ? errno : EIO, err, errlen);
	return 0;
}

int store_save_too_big(const struct store_save *sv, uint64_t len, char *err,
                       size_t errlen)
{
	snprintf(err, errlen, "cannot save session '%s': it is %" PRIu64
	         " bytes, over the maximum session size of %" PRIu64 " bytes "
	         "(DOLSOT_MAX_SESSION_SIZE); the previous session is kept", sv->id, len, sv->max);
	errno = EFBIG;
	return -1;
}

int store_save_commit(struct store *s, struct store_save *sv, size_t len, char *err,
                      size_t errlen)
{
	return store_save_commit_rec(s, sv, len, NULL, 0, err, errlen);
}

/* sv->seq: one more than the last committed save of sv->id, as its last
 * load under this lock learnt it, or else as the store recorded it. */
static int number_save(struct store *s, struct store_save *sv, char *err, size_t errlen)
{
	struct store_mark rec = { false, 0 };

	if (strcmp(s->next_id, sv->id) == 0) {
		sv->seq = s->next_seq;
		return 0;
	}
	if (s->ops->origin(s, sv->id, &rec, err, errlen) < 0)
		return -1;
	sv->seq = rec.seq + 1;
	return 0;
}

/* What a version 4 save's commit holds beside sv (units.h). */
struct v4_save {
	bool locked;            /* the units lock, shared */
	uint8_t *dropped;       /* the hashes the previous head named and the new
	                         * one does not: candidates for collecting */
	size_t ndropped;
	uint8_t *hrec;          /* the new state's history record (history.h), or NULL */
	size_t hrec_len;
};

static void unlock_units(struct store *s, struct v4_save *v)
{
	char why[STORE_ERR_MAX];

	if (v->locked)
		(void)s->ops->obj_lock(s, STORE_GC_RELEASE, why, sizeof(why));
	v->locked = false;
}

/* The save is over (committed or not): the lock goes, and after a
 * commit the units only the previous head named. */
static void v4_done(struct store *s, struct v4_save *v, bool committed)
{
	/* Put off only under the shared lock, which keeps a collector from
	 * emptying the list around the append. */
	bool later = committed && v->ndropped && v->locked && s->ops->obj_defer &&
	             s->ops->obj_defer(s, v->dropped, v->ndropped) == 1;

	unlock_units(s, v);
	if (committed && !later)
		unitstore_collect(s, v->dropped, v->ndropped);
	free(v->dropped);
	v->dropped = NULL;
	v->ndropped = 0;
	free(v->hrec);
	v->hrec = NULL;
	v->hrec_len = 0;
}

/* Cut the save in sv->fd to h's head and the pack of the units small
 * enough to stay with it (units.h), *kept bytes in all.  The entries are
 * copied out first: h points into a mapping of the same file. */
static int keep_inline(struct store_save *sv, const struct units_head *h, size_t *kept,
                       char *err, size_t errlen)
{
	size_t n = unitstore_inline_pack(h, NULL);
	uint8_t *small = n ? malloc(n) : NULL;
	const char *what = "malloc";
	int errsv;

	if (n && !small)
		goto fail;
	unitstore_inline_pack(h, small);
	what = "write";
	if (n && fd_pwrite_all(sv->fd, small, n, h->head_len) < 0)
		goto fail;
	what = "ftruncate";
	if (ftruncate(sv->fd, (off_t)(h->head_len + n)) < 0)
		goto fail;
	free(small);
	*kept = h->head_len + n;
	return 0;
fail:
	errsv = errno;
	free(small);
	snprintf(err, errlen, "cannot save session '%s': %s: %s", sv->id, what, strerror(errsv));
	errno = errsv;
	return -1;
}

/* The bytes a save of h puts in the store: its head, the units that stay
 * with it, and those of its pack that go into the store's units. */
static uint64_t bytes_written(const struct units_head *h)
{
	struct units_entry e;
	uint64_t n = h->head_len + unitstore_inline_pack(h, NULL);
	size_t off = 0;

	while (units_pack_next(h, &off, &e))
		if (!units_inline(e.size))
			n += e.size;
	return n;
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, UNITS_HASH_LEN);
}

/* Drop from v->dropped what the new history record names: those stay. */
static int drop_kept(struct v4_save *v, char *err, size_t errlen)
{
	uint8_t *names = NULL;
	size_t n = 0, k = 0;

	if (history_named(v->hrec, v->hrec_len, &names, &n, err, errlen) < 0)
		return -1;
	if (n > 1)
		qsort(names, n, UNITS_HASH_LEN, hash_cmp);
	for (size_t i = 0; i < v->ndropped; i++) {
		const uint8_t *d = v->dropped + i * UNITS_HASH_LEN;

		if (!n || !bsearch(d, names, n, UNITS_HASH_LEN, hash_cmp))
			memmove(v->dropped + k++ * UNITS_HASH_LEN, d, UNITS_HASH_LEN);
	}
	v->ndropped = k;
	free(names);
	return 0;
}

/* The new state's history record into v->hrec (history.h), the units
 * lock held: the state it replaces is kept as a unit of the store. */
static int v4_history(struct store *s, struct store_save *sv, const struct units_head *h,
                      const struct histrec_cell *cell, struct v4_save *v, char *err,
                      size_t errlen)
{
	struct histrec_cell c = cell ? *cell : (struct histrec_cell){ .kind = HISTREC_CELL };
	char why[STORE_ERR_MAX];

	c.written = bytes_written(h);
	if (c.kind == HISTREC_AMEND) {
		v->hrec = malloc(c.record_len ? c.record_len : 1);
		if (v->hrec) {
			memcpy(v->hrec, c.record, c.record_len);
			v->hrec_len = c.record_len;
		}
	}
	if ((c.kind == HISTREC_AMEND ? !v->hrec
	     : history_next(s, history_prev_of(s, sv->id), h, sv->sandboxed, &c, &v->hrec,
	                    &v->hrec_len, why, sizeof(why)) < 0) ||
	    drop_kept(v, why, sizeof(why)) < 0) {
		/* Only the copy above leaves why unsaid: history_next's and
		 * drop_kept's failures (a store gone away) say their own. */
		if (c.kind == HISTREC_AMEND && !v->hrec)
			snprintf(why, sizeof(why), "out of memory");
		snprintf(err, errlen, "cannot save session '%s': %s; the previous session is "
		         "kept", sv->id, why);
		return -1;
	}
	return 0;
}

/* The parsed v4 blob h of a save: its size bound, then on a store with
 * units its pack put into them under the units lock (held on return), the
 * history record made on a store that keeps one, and the save cut to what
 * the store keeps of it (*kept bytes). */
static int v4_take(struct store *s, struct store_save *sv, const struct units_head *h,
                   const struct histrec_cell *cell, struct v4_save *v, size_t *kept,
                   char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];
	uint64_t total = h->refs_size > UINT64_MAX - h->head_len ? UINT64_MAX
	                 : h->head_len + h->refs_size;
	bool need_lock;

	if (sv->max && total > sv->max)
		return store_save_too_big(sv, total, err, errlen);
	if (!unitstore_keeps(s))
		return unitstore_whole(sv->id, h, err, errlen);
	unitstore_refs_of(s, sv->id, &v->dropped, &v->ndropped);
	/* Units the previous head names stay while it is the session's (its
	 * lock is held): the units lock guards only the others, and the unit
	 * that keeps the previous state. */
	need_lock = keeps_history(s) || unitstore_names_new(h, v->dropped, v->ndropped);
	if (need_lock && s->ops->obj_lock(s, STORE_GC_SHARED, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "cannot save session '%s': %s", sv->id, why);
		return -1;
	}
	v->locked = need_lock;
	/* For the same reason, those need no look in the store. */
	if (unitstore_take_pack(s, sv->id, h, v->dropped, v->ndropped, err, errlen) < 0)
		return -1;
	unitstore_drop_named(v->dropped, &v->ndropped, h);
	if (keeps_history(s) && v4_history(s, sv, h, cell, v, err, errlen) < 0)
		return -1;
	return keep_inline(sv, h, kept, err, errlen);
}

/*
 * The save's bound, and when sv->fd's *len bytes are a version 4 blob,
 * its checks: on a store with units its pack goes into them and the save
 * is cut to the head and its small units (*len), the units lock held shared from there to
 * v4_done.  0, or -1 with err and the save aborted.
 */
static int v4_prepare(struct store *s, struct store_save *sv, size_t *len,
                      const struct histrec_cell *cell, struct v4_save *v, char *err,
                      size_t errlen)
{
	char why[UNITS_ERR_MAX];
	uint8_t magic[UNITS_MAGIC_LEN];
	struct units_head h;
	size_t kept = 0;
	void *p;
	int ret = -1, errsv;

	memset(v, 0, sizeof(*v));
	if (*len < sizeof(magic) || fd_pread_exact(sv->fd, magic, sizeof(magic), 0) < 0 ||
	    !units_is_v4(magic, sizeof(magic))) {
		if (!sv->max || (uint64_t)*len <= sv->max)
			return 0;
		store_save_abort(s, sv);
		return store_save_too_big(sv, *len, err, errlen);
	}
	p = mmap(NULL, *len, PROT_READ, MAP_SHARED, sv->fd, 0);
	if (p == MAP_FAILED)
		return store_save_fail(s, sv, "mmap", errno, err, errlen);
	if (units_parse(p, *len, &h, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "cannot save session '%s': its version 4 blob is damaged: "
		         "%s; the previous session is kept", sv->id, why);
		errno = EBADMSG;
	} else {
		ret = v4_take(s, sv, &h, cell, v, &kept, err, errlen);
	}
	errsv = errno;
	munmap(p, *len);
	if (ret == 0 && unitstore_keeps(s))
		*len = kept;
	if (ret < 0) {
		store_save_abort(s, sv);
		v4_done(s, v, false);
	}
	errno = errsv;
	return ret;
}

int store_save_commit_rec(struct store *s, struct store_save *sv, size_t len,
                          const uint8_t *rec, size_t rec_len, char *err, size_t errlen)
{
	return store_save_commit_cell(s, sv, len, rec, rec_len, NULL, err, errlen);
}

/* A commit with no load of its session before it under this store (its
 * lock held) loads it now: its history goes on from the state it has. */
static int ensure_prev(struct store *s, const char *id, char *err, size_t errlen)
{
	enum store_origin origin;
	uint8_t *rec = NULL;
	size_t len, rec_len;
	bool found;
	int fd = -1;

	if (!keeps_history(s) || history_prev_of(s, id))
		return 0;
	if (store_open_blob_rec(s, id, &fd, &len, &found, &rec, &rec_len, &origin, STORE_UNITS_UNREAD, err,
	                        errlen) < 0)
		return -1;
	fd_close(&fd);
	free(rec);
	return 0;
}

/* rec then hrec, into one malloc'd block *tail (NULL when both are empty). */
static int join_tail(const uint8_t *rec, size_t rec_len, const uint8_t *hrec,
                     size_t hrec_len, uint8_t **tail)
{
	*tail = NULL;
	if (!hrec_len)
		return 0;
	*tail = malloc(rec_len + hrec_len);
	if (!*tail)
		return -1;
	if (rec_len)
		memcpy(*tail, rec, rec_len);
	memcpy(*tail + rec_len, hrec, hrec_len);
	return 0;
}

int store_save_commit_cell(struct store *s, struct store_save *sv, size_t len,
                           const uint8_t *rec, size_t rec_len,
                           const struct histrec_cell *cell, char *err, size_t errlen)
{
	struct v4_save v;
	uint8_t *tail = NULL;
	size_t tail_len;
	int ret;

	if (need_key(s, sv->id, err, errlen) < 0 || number_save(s, sv, err, errlen) < 0 ||
	    ensure_prev(s, sv->id, err, errlen) < 0) {
		store_save_abort(s, sv);
		return -1;
	}
	if (v4_prepare(s, sv, &len, cell, &v, err, errlen) < 0)
		return -1;
	if (join_tail(rec, rec_len, v.hrec, v.hrec_len, &tail) < 0) {
		v4_done(s, &v, false);
		return store_save_fail(s, sv, "malloc", errno, err, errlen);
	}
	if (tail) {
		rec = tail;
		rec_len += v.hrec_len;
	}
	tail_len = rec_len;
	if (!sv->priv)
		ret = commit_memfd(s, sv, len, rec, tail_len, err, errlen);
	else if (sign_save_file(s, sv, len, rec, tail_len, err, errlen) < 0)
		ret = -1;
	else
		ret = s->ops->save_commit(s, sv, len + tail_len + SIGN_TRAILER, err, errlen);
	free(tail);
	v4_done(s, &v, ret == 0);
	if (ret == 0) {
		snprintf(s->next_id, sizeof(s->next_id), "%s", sv->id);
		s->next_seq = sv->seq + 1;
		/* The state just committed is the next one's previous: load it
		 * again, verified, when it is needed. */
		free(s->hist_prev);
		s->hist_prev = NULL;
	}
	return ret;
}

void store_save_abort(struct store *s, struct store_save *sv)
{
	int errsv = errno;

	if (sv->priv) {
		s->ops->save_abort(s, sv);
	} else if (sv->fd >= 0) {
		close(sv->fd);
	}
	sv->fd = -1;
	sv->priv = NULL;
	errno = errsv;
}

int store_save_fail(struct store *s, struct store_save *sv, const char *op,
                    int errnum, char *err, size_t errlen)
{
	store_save_abort(s, sv);
	snprintf(err, errlen, "cannot save session '%s': %s: %s", sv->id, op,
	         strerror(errnum));
	errno = errnum;
	return -1;
}

/* Whether id has a stored session (its bytes are not read). */
static int exists(struct store *s, const char *id, bool *found, char *err, size_t errlen)
{
	uint8_t *blob = NULL;
	size_t len;
	int fd = -1, ret;

	if (s->ops->open_blob) {
		ret = s->ops->open_blob(s, id, &fd, &len, found, err, errlen);
		fd_close(&fd);
		return ret;
	}
	ret = s->ops->load(s, id, &blob, &len, found, err, errlen);
	free(blob);
	return ret;
}

static int fork_copy(struct store *s, const char *src, const char *dst, size_t *len,
                     char *err, size_t errlen);

/*
 * On a store with units the copy is of the head alone (O(1) in the
 * session's size), read and written under the units lock (shared), and
 * the units only the head it replaced named are collected after.
 */
int store_fork(struct store *s, const char *src, const char *dst, bool replace,
               size_t *len, char *err, size_t errlen)
{
	struct v4_save v = { .locked = false };
	char why[STORE_ERR_MAX];
	int ret;

	*len = 0;
	if (!store_id_valid(src, err, errlen) || !store_id_valid(dst, err, errlen) ||
	    need_key(s, dst, err, errlen) < 0)
		return -1;
	if (!replace) {
		bool found;

		if (exists(s, dst, &found, err, errlen) < 0)
			return -1;
		if (found) {
			snprintf(err, errlen, "cannot fork session '%s' into '%s': '%s' already "
			         "exists (add --replace to start it over from '%s', or pick "
			         "another id)", src, dst, dst, src);
			errno = EEXIST;
			return -1;
		}
	}
	if (unitstore_keeps(s)) {
		unitstore_refs_of(s, dst, &v.dropped, &v.ndropped);
		if (s->ops->obj_lock(s, STORE_GC_SHARED, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "cannot fork session '%s': %s", src, why);
			v4_done(s, &v, false);
			return -1;
		}
		v.locked = true;
	}
	ret = fork_copy(s, src, dst, len, err, errlen);
	unlock_units(s, &v);
	if (ret == 0)
		unitstore_drop_named_by(s, dst, v.dropped, &v.ndropped);
	v4_done(s, &v, ret == 0);
	return ret;
}

/* --fork's copy of src's stored session into dst (see store_fork). */
static int fork_copy(struct store *s, const char *src, const char *dst, size_t *len,
                     char *err, size_t errlen)
{
	uint8_t *blob = NULL, *grown;
	struct store_save sv = { .fd = -1 };
	struct loaded l = { .trailer = 0 };
	struct store_mark mark;
	bool found;
	int ret = -1;

	snprintf(sv.id, sizeof(sv.id), "%s", dst);
	if (s->ops->origin(s, src, &l.rec, err, errlen) < 0 ||
	    s->ops->load(s, src, &blob, len, &found, err, errlen) < 0)
		return -1;
	if (!found) {
		snprintf(err, errlen, "cannot fork session '%s': there is no such session", src);
		errno = ENOENT;
		goto out;
	}
	/* The copy keeps where the bytes came from: a sandboxed call's stay
	 * refused outside the sandbox under their new id too. */
	if (check_signed(s, src, blob, *len, &l.rec, &l.meta, &l.trailer, err, errlen) < 0 ||
	    number_save(s, &sv, err, errlen) < 0)
		goto out;
	*len -= l.trailer;
	grown = realloc(blob, *len + SIGN_TRAILER);
	if (!grown) {
		snprintf(err, errlen, "cannot fork session '%s': out of memory", src);
		errno = ENOMEM;
		goto out;
	}
	blob = grown;
	mark.sandboxed = origin_of(&l.meta, l.trailer, &l.rec) != STORE_ORIGIN_HOST;
	mark.seq = sv.seq;
	sign_trailer(s->key, dst, blob, *len,
	             &(struct sign_meta){ mark.seq, mark.sandboxed }, blob + *len);
	ret = s->ops->save(s, dst, blob, *len + SIGN_TRAILER, &mark, err, errlen);
out:
	free(blob);
	return ret;
}
