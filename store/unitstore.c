/*
 * unitstore.c - session format v4 over any store (unitstore.h).
 */
#include "unitstore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "history.h"
#include "sha256.h"
#include "unitcache.h"

bool unitstore_keeps(const struct store *s)
{
	return s->ops->obj_put != NULL;
}

/* Add a line to what the store's caller hears (store.h's notice). */
static void notice(struct store *s, const char *line)
{
	char *grown = NULL;

	if (asprintf(&grown, "%s%s%s", s->notice ? s->notice : "", s->notice ? "\n" : "",
	             line) < 0)
		return;
	free(s->notice);
	s->notice = grown;
}

void unitstore_warn(struct store *s, const char *why, const char *then)
{
	char line[2 * STORE_ERR_MAX];

	snprintf(line, sizeof(line), "dolsot: warning: %s; %s", why, then);
	notice(s, line);
}

__attribute__((format(printf, 5, 6)))
static int refuse(const char *id, int errnum, char *err, size_t errlen, const char *fmt,
                  ...)
{
	char why[STORE_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "cannot save session '%s': %s; the previous session is kept",
	         id, why);
	errno = errnum;
	return -1;
}

static uint8_t *packed(const struct units_head *h);

int unitstore_whole(const char *id, const struct units_head *h, char *err, size_t errlen)
{
	char hex[UNITS_HEX_LEN + 1];
	uint8_t *in;
	struct units_entry e;
	int ret = 0;

	if (h->npack == h->nrefs)   /* entries are distinct refs: every one */
		return 0;
	in = packed(h);
	if (!in)
		return refuse(id, ENOMEM, err, errlen, "out of memory");
	for (uint32_t i = 0; i < h->nrefs && !ret; i++)
		if (!in[i]) {
			units_ref(h, i, &e);
			units_hex(e.hash, hex);
			ret = refuse(id, ENOENT, err, errlen, "unit %s missing (this store keeps "
			             "whole sessions: the save must hold every unit)", hex);
		}
	free(in);
	return ret;
}

/* Whether ref i of h is in its pack, as in[i] (calloc'd h->nrefs bytes);
 * NULL out of memory. */
static uint8_t *packed(const struct units_head *h)
{
	uint8_t *in = calloc((size_t)h->nrefs + 1, 1);
	struct units_entry e;
	size_t off = 0;

	while (in && units_pack_next(h, &off, &e))
		in[units_find(h, e.hash)] = 1;
	return in;
}

/* Each entry of h's pack checked against its hash; those too big to stay
 * with the head put into s's units, and into its cache when it has one. */
static int put_pack(struct store *s, const char *id, const struct units_head *h,
                    char *err, size_t errlen)
{
	char hex[UNITS_HEX_LEN + 1], why[STORE_ERR_MAX];
	uint8_t sum[UNITS_HASH_LEN];
	struct units_entry e;
	size_t off = 0;
	bool warned = false;

	while (units_pack_next(h, &off, &e)) {
		sha256_bytes(e.bytes, (size_t)e.size, sum);
		units_hex(e.hash, hex);
		if (memcmp(sum, e.hash, UNITS_HASH_LEN) != 0)
			return refuse(id, EBADMSG, err, errlen,
			              "unit %s: its bytes do not match its hash", hex);
		if (units_inline(e.size))
			continue;
		if (s->ops->obj_put(s, e.hash, e.bytes, (size_t)e.size, why, sizeof(why)) < 0)
			return refuse(id, errno, err, errlen, "%s", why);
		/* The next call's copy, so that it fetches nothing this one wrote. */
		if (s->cache &&
		    unitcache_put(s->cache, e.hash, e.bytes, (size_t)e.size, why, sizeof(why)) < 0 &&
		    !warned) {
			unitstore_warn(s, why, "the next call fetches from the store what this one "
			               "could not keep");
			warned = true;
		}
	}
	return 0;
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, UNITS_HASH_LEN);
}

/* Whether hash is among v[0..n) (sorted hashes: a head's refs in order). */
static bool among(const uint8_t *v, size_t n, const uint8_t *hash)
{
	return n && bsearch(hash, v, n, UNITS_HASH_LEN, hash_cmp) != NULL;
}

int unitstore_take_pack(struct store *s, const char *id, const struct units_head *h,
                        const uint8_t *prev, size_t nprev, char *err, size_t errlen)
{
	char hex[UNITS_HEX_LEN + 1], why[STORE_ERR_MAX];
	struct units_entry e;
	uint8_t *in;
	bool has;
	int ret = put_pack(s, id, h, err, errlen);

	if (ret < 0)
		return -1;
	in = packed(h);
	if (!in)
		return refuse(id, ENOMEM, err, errlen, "out of memory");
	for (uint32_t i = 0; i < h->nrefs && ret == 0; i++) {
		units_ref(h, i, &e);
		has = in[i] != 0 || among(prev, nprev, e.hash);
		if (!has && !units_inline(e.size) &&
		    s->ops->obj_has(s, e.hash, &has, why, sizeof(why)) < 0) {
			ret = refuse(id, errno, err, errlen, "%s", why);
		} else if (!has) {
			units_hex(e.hash, hex);
			ret = refuse(id, ENOENT, err, errlen, "unit %s missing", hex);
		}
	}
	free(in);
	return ret;
}

size_t unitstore_inline_pack(const struct units_head *h, uint8_t *out)
{
	struct units_entry e;
	size_t off = 0, n = 0;

	while (units_pack_next(h, &off, &e))
		if (units_inline(e.size)) {
			if (out) {
				units_entry_prefix(e.hash, e.size, out + n);
				memcpy(out + n + UNITS_REF_LEN, e.bytes, (size_t)e.size);
			}
			n += UNITS_REF_LEN + (size_t)e.size;
		}
	return n;
}

/* h's ref hashes, appended to *v (*n of them so far); -1 out of memory. */
static int add_refs(const struct units_head *h, uint8_t **v, size_t *n)
{
	uint8_t *grown;
	struct units_entry e;

	if (!h->nrefs)
		return 0;
	grown = realloc(*v, (*n + h->nrefs) * UNITS_HASH_LEN);
	if (!grown)
		return -1;
	*v = grown;
	for (uint32_t i = 0; i < h->nrefs; i++) {
		units_ref(h, i, &e);
		if (!units_inline(e.size))   /* one kept with the head is no unit of the store's */
			memcpy(grown + (*n)++ * UNITS_HASH_LEN, e.hash, UNITS_HASH_LEN);
	}
	return 0;
}

int unitstore_load_v4(struct store *s, const char *id, uint8_t **stored, size_t *len,
                      bool *found, char *err, size_t errlen)
{
	uint8_t magic[UNITS_MAGIC_LEN];
	int fd = -1, ret;

	*stored = NULL;
	*len = 0;
	if (!s->ops->open_blob) {
		ret = s->ops->load(s, id, stored, len, found, err, errlen);
		if (ret == 0 && *found && !units_is_v4(*stored, *len)) {
			free(*stored);
			*stored = NULL;
		}
		return ret;
	}
	if (s->ops->open_blob(s, id, &fd, len, found, err, errlen) < 0)
		return -1;
	ret = 0;
	if (*found && *len >= sizeof(magic) && fd_pread_exact(fd, magic, sizeof(magic), 0) == 0 &&
	    units_is_v4(magic, sizeof(magic)) && fd_read_all(fd, *len, stored, len) < 0) {
		snprintf(err, errlen, "cannot load session '%s': read: %s", id, strerror(errno));
		ret = -1;
	}
	fd_close(&fd);
	return ret;
}

/* id's stored bytes (malloc'd) when they hold a v4 head, parsed into *h;
 * else NULL. */
static uint8_t *stored_head(struct store *s, const char *id, struct units_head *h)
{
	char err[STORE_ERR_MAX];
	uint8_t *stored = NULL;
	size_t len = 0;
	bool found = false;

	if (unitstore_load_v4(s, id, &stored, &len, &found, err, sizeof(err)) == 0 && stored &&
	    units_parse_head(stored, len, h, err, sizeof(err)) == 0)
		return stored;
	free(stored);
	return NULL;
}

void unitstore_refs_of(struct store *s, const char *id, uint8_t **hashes, size_t *n)
{
	char why[STORE_ERR_MAX];
	struct units_head h;
	uint8_t *stored = stored_head(s, id, &h);

	*hashes = NULL;
	*n = 0;
	if (stored && (add_refs(&h, hashes, n) < 0 ||
	               history_named(stored, h.head_len + h.pack_len, hashes, n, why,
	                             sizeof(why)) < 0))
		*n = 0;
	free(stored);
}

void unitstore_drop_named_by(struct store *s, const char *id, uint8_t *hashes, size_t *n)
{
	struct units_head h;
	uint8_t *stored = stored_head(s, id, &h);

	if (stored)
		unitstore_drop_named(hashes, n, &h);
	free(stored);
}

bool unitstore_names_new(const struct units_head *h, const uint8_t *prev, size_t nprev)
{
	struct units_entry e;

	for (uint32_t i = 0; i < h->nrefs; i++) {
		units_ref(h, i, &e);
		if (!units_inline(e.size) && !among(prev, nprev, e.hash))
			return true;
	}
	return false;
}

void unitstore_drop_named(uint8_t *hashes, size_t *n, const struct units_head *h)
{
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++)
		if (units_find(h, hashes + i * UNITS_HASH_LEN) < 0)
			memmove(hashes + kept++ * UNITS_HASH_LEN, hashes + i * UNITS_HASH_LEN,
			        UNITS_HASH_LEN);
	*n = kept;
}

/* A pack entry for unit hash (its n bytes at p) appended to fd at *len. */
static int append_entry(int fd, size_t *len, const uint8_t *hash, const uint8_t *p,
                        size_t n, char *err, size_t errlen)
{
	uint8_t prefix[UNITS_REF_LEN];
	int errsv;

	units_entry_prefix(hash, n, prefix);
	if (fd_pwrite_all(fd, prefix, sizeof(prefix), *len) < 0 ||
	    fd_pwrite_all(fd, p, n, *len + sizeof(prefix)) < 0) {
		errsv = errno;
		snprintf(err, errlen, "write: %s", strerror(errsv));
		errno = errsv;
		return -1;
	}
	*len += sizeof(prefix) + n;
	return 0;
}

/* Append a pack entry per ref of h read from s's units to fd at *len. */
static int append_refs(struct store *s, const struct units_head *h, int fd, size_t *len,
                       char *err, size_t errlen)
{
	struct units_entry e;
	uint8_t *bytes;
	size_t n;
	bool found;
	int ret = 0;

	for (uint32_t i = 0; i < h->nrefs && ret == 0; i++) {
		units_ref(h, i, &e);
		if (units_inline(e.size))
			continue;   /* in the pack the head came with */
		if (s->ops->obj_read(s, e.hash, &bytes, &n, &found, err, errlen) < 0)
			return -1;
		if (found && n == e.size)
			ret = append_entry(fd, len, e.hash, bytes, n, err, errlen);
		free(bytes);
	}
	return ret;
}

/* Whether the verified blob in fd (len bytes) begins as a v4 head. */
static bool holds_v4(int fd, size_t len)
{
	uint8_t magic[UNITS_MAGIC_LEN];

	return len >= sizeof(magic) && fd_pread_exact(fd, magic, sizeof(magic), 0) == 0 &&
	       units_is_v4(magic, sizeof(magic));
}

/* The v4 head in fd (len bytes) read into *head (malloc'd) and parsed
 * into *h: 1; 0 when it does not parse (the worker says why); -1 with
 * why. */
static int read_head(int fd, size_t len, uint8_t **head, struct units_head *h, char *why,
                     size_t whylen)
{
	*head = malloc(len);
	if (!*head || fd_pread_exact(fd, *head, len, 0) < 0) {
		snprintf(why, whylen, "read: %s", strerror(errno));
		return -1;
	}
	return units_parse_head(*head, len, h, why, whylen) == 0;
}

/* "cannot load session 'ID': its units: WHY" into err, errno kept; -1. */
static int load_fail(const char *id, const char *why, char *err, size_t errlen)
{
	int errsv = errno;

	snprintf(err, errlen, "cannot load session '%s': its units: %s", id, why);
	errno = errsv;
	return -1;
}

int unitstore_append_pack(struct store *s, const char *id, int fd, size_t *len,
                          char *err, size_t errlen)
{
	char why[STORE_ERR_MAX];
	struct units_head h;
	uint8_t *head;
	int ret;

	if (!holds_v4(fd, *len))
		return 0;
	if (s->ops->obj_pack)
		return s->ops->obj_pack(s, id, fd, len, err, errlen);
	ret = read_head(fd, *len, &head, &h, why, sizeof(why));
	if (ret > 0)
		ret = append_refs(s, &h, fd, len, why, sizeof(why));
	free(head);
	return ret < 0 ? load_fail(id, why, err, errlen) : 0;
}

/* Where a cache's filling puts what it fetched: the cache, or else the
 * pack of the blob in fd (*len bytes). */
struct fill {
	struct store *s;
	int fd;
	size_t *len;
	char refused[STORE_ERR_MAX];    /* why the cache refused a unit; "" */
};

static int take_fetched(void *ctx, const uint8_t *hash, const uint8_t *p, size_t n,
                        char *err, size_t errlen)
{
	struct fill *f = ctx;
	uint8_t sum[UNITS_HASH_LEN];
	char why[STORE_ERR_MAX];

	/* Bytes that do not match their name are never cached: the worker is
	 * handed them, and says they are damaged. */
	sha256_bytes(p, n, sum);
	if (memcmp(sum, hash, UNITS_HASH_LEN) == 0) {
		if (unitcache_put(f->s->cache, hash, p, n, why, sizeof(why)) == 0)
			return 0;
		if (!f->refused[0])
			snprintf(f->refused, sizeof(f->refused), "%s", why);
	}
	return append_entry(f->fd, f->len, hash, p, n, err, errlen);
}

/* Read the units hashes[0..n) (sizes[i] each, as a head says) from s,
 * each found handed to take. */
static int fetch(struct store *s, const uint8_t *hashes, const uint64_t *sizes, size_t n,
                 store_unit_take take, void *ctx, char *err, size_t errlen)
{
	uint8_t *bytes;
	size_t got;
	bool found;
	int ret = 0;

	if (s->ops->obj_fetch)
		return s->ops->obj_fetch(s, hashes, sizes, n, take, ctx, err, errlen);
	for (size_t i = 0; i < n && ret == 0; i++) {
		const uint8_t *hash = hashes + i * UNITS_HASH_LEN;

		if (s->ops->obj_read(s, hash, &bytes, &got, &found, err, errlen) < 0)
			return -1;
		if (found)
			ret = take(ctx, hash, bytes, got, err, errlen);
		free(bytes);
	}
	return ret;
}

/* The refs of h the store keeps (not with the head): hashes and sizes
 * (malloc'd, *n of them); -1 out of memory. */
static int stored_refs(const struct units_head *h, uint8_t **hashes, uint64_t **sizes,
                       size_t *n)
{
	struct units_entry e;

	*n = 0;
	*hashes = malloc((size_t)h->nrefs * UNITS_HASH_LEN + 1);
	*sizes = malloc((size_t)h->nrefs * sizeof(**sizes) + 1);
	if (!*hashes || !*sizes)
		return -1;
	for (uint32_t i = 0; i < h->nrefs; i++) {
		units_ref(h, i, &e);
		if (units_inline(e.size))
			continue;
		memcpy(*hashes + *n * UNITS_HASH_LEN, e.hash, UNITS_HASH_LEN);
		(*sizes)[(*n)++] = e.size;
	}
	return 0;
}

/* The units at positions missing[0..nm) of hashes/sizes, fetched into
 * the cache (or f's pack); the lists are reused for them. */
static int fill_missing(struct fill *f, uint8_t *hashes, uint64_t *sizes,
                        const size_t *missing, size_t nm, char *err, size_t errlen)
{
	for (size_t k = 0; k < nm; k++) {
		memmove(hashes + k * UNITS_HASH_LEN, hashes + missing[k] * UNITS_HASH_LEN,
		        UNITS_HASH_LEN);
		sizes[k] = sizes[missing[k]];
	}
	return fetch(f->s, hashes, sizes, nm, take_fetched, f, err, errlen);
}

int unitstore_fill_cache(struct store *s, const char *id, int fd, size_t *len, char *err,
                         size_t errlen)
{
	struct fill f = { s, fd, len, "" };
	char why[STORE_ERR_MAX];
	struct units_head h;
	uint8_t *head, *hashes = NULL;
	uint64_t *sizes = NULL;
	size_t n = 0, *missing = NULL, nm = 0;
	int ret;

	if (!holds_v4(fd, *len))
		return 0;
	ret = read_head(fd, *len, &head, &h, why, sizeof(why));
	if (ret > 0 && stored_refs(&h, &hashes, &sizes, &n) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		ret = -1;
	}
	free(head);   /* h points into it: only the lists are used from here */
	if (ret > 0 && unitcache_want(s->cache, hashes, sizes, n, &missing, &nm, why,
	                              sizeof(why)) < 0) {
		unitstore_warn(s, why, "this call is handed every unit of its session");
		why[0] = '\0';   /* err is append_pack's */
		ret = unitstore_append_pack(s, id, fd, len, err, errlen);
	} else if (ret > 0) {
		ret = fill_missing(&f, hashes, sizes, missing, nm, why, sizeof(why));
		unitcache_filled(s->cache);
	}
	if (f.refused[0])
		unitstore_warn(s, f.refused, "what it could not keep is handed to this call, and "
		               "fetched again by the next");
	free(missing);
	free(hashes);
	free(sizes);
	if (ret < 0 && why[0])
		return load_fail(id, why, err, errlen);
	return ret < 0 ? -1 : 0;
}

/* Every hash any session's head names, sorted, into *v, and into *heads
 * how many sessions were read; -1 with err naming what could not be read. */
static int named_units(struct store *s, uint8_t **v, size_t *n, size_t *heads, char *err,
                       size_t errlen)
{
	struct session_info *info = NULL;
	struct units_head h;
	size_t count = 0, len;
	uint8_t *stored;
	bool found;
	int ret = 0;

	*v = NULL;
	*n = 0;
	if (s->ops->list(s, &info, &count, err, errlen) < 0)
		return -1;
	*heads = count;
	for (size_t i = 0; i < count && ret == 0; i++) {
		char why[UNITS_ERR_MAX];
		bool v4;

		stored = NULL;
		ret = unitstore_load_v4(s, info[i].id, &stored, &len, &found, err, errlen);
		v4 = ret == 0 && stored;
		if (v4 && units_parse_head(stored, len, &h, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "session '%s' has a damaged head: %s", info[i].id, why);
			ret = -1;
		} else if (v4 && add_refs(&h, v, n) < 0) {
			snprintf(err, errlen, "out of memory");
			ret = -1;
		} else if (v4 && history_named(stored, len, v, n, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "session '%s': %s", info[i].id, why);
			ret = -1;
		}
		free(stored);
	}
	free(info);
	if (ret == 0 && *n > 1)
		qsort(*v, *n, UNITS_HASH_LEN, hash_cmp);
	return ret;
}

/* Remove those of cands[0..n) that named[0..nn) (sorted) lacks. */
static int remove_unnamed(struct store *s, const uint8_t *cands, size_t n,
                          const uint8_t *named, size_t nn, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *c = cands + i * UNITS_HASH_LEN;

		if ((!nn || !bsearch(c, named, nn, UNITS_HASH_LEN, hash_cmp)) &&
		    s->ops->obj_del(s, c, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* cands[0..n) and the units a store put off (obj_pending), into *all
 * (malloc'd; cands itself when none waits, *all then NULL). */
static int with_pending(struct store *s, const uint8_t **cands, size_t *n, uint8_t **all,
                        char *err, size_t errlen)
{
	uint8_t *waiting = NULL, *both;
	size_t nw = 0;

	*all = NULL;
	if (!s->ops->obj_pending || s->ops->obj_pending(s, &waiting, &nw, err, errlen) < 0)
		return s->ops->obj_pending ? -1 : 0;
	if (!nw) {
		free(waiting);
		return 0;
	}
	both = realloc(waiting, (nw + *n) * UNITS_HASH_LEN);
	if (!both) {
		free(waiting);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (*n)
		memcpy(both + nw * UNITS_HASH_LEN, *cands, *n * UNITS_HASH_LEN);
	*all = both;
	*cands = both;
	*n += nw;
	return 0;
}

/* Collect among cands[0..n) and the units put off, or every unit when
 * every. */
static void collect(struct store *s, const uint8_t *cands, size_t n, bool every)
{
	char err[STORE_ERR_MAX], line[STORE_ERR_MAX + 64];
	uint8_t *named = NULL, *all = NULL;
	size_t nn = 0, nall = 0, heads = 0;
	double started = deadline_now();
	int ret;

	if (!unitstore_keeps(s) || (!every && !n))
		return;
	/* A store with no units yet is left as it is (the lock would make its
	 * directory); one a commit puts meanwhile is named once it is done. */
	if (every && s->ops->obj_list(s, &all, &nall, err, sizeof(err)) == 0 && !nall)
		return;
	free(all);
	all = NULL;
	if (s->ops->obj_lock(s, STORE_GC_EXCLUSIVE, err, sizeof(err)) < 0) {
		snprintf(line, sizeof(line), "dolsot: warning: unused units not removed: %s", err);
		notice(s, line);
		return;
	}
	ret = every ? 0 : with_pending(s, &cands, &n, &all, err, sizeof(err));
	if (ret == 0)
		ret = named_units(s, &named, &nn, &heads, err, sizeof(err));
	if (ret == 0 && every) {
		ret = s->ops->obj_list(s, &all, &nall, err, sizeof(err));
		cands = all;
		n = nall;
	}
	if (ret == 0)
		ret = remove_unnamed(s, cands, n, named, nn, err, sizeof(err));
	if (ret == 0 && s->ops->obj_collected)
		s->ops->obj_collected(s, heads, deadline_now() - started);
	(void)s->ops->obj_lock(s, STORE_GC_RELEASE, line, sizeof(line));
	if (ret < 0) {
		snprintf(line, sizeof(line), "dolsot: warning: unused units not removed: %s", err);
		notice(s, line);
	}
	free(all);
	free(named);
}

void unitstore_collect(struct store *s, const uint8_t *cands, size_t n)
{
	collect(s, cands, n, false);
}

void unitstore_collect_all(struct store *s)
{
	collect(s, NULL, 0, true);
}

uint64_t unitstore_size(const uint8_t *stored, size_t n)
{
	char err[UNITS_ERR_MAX];
	struct units_head h;

	struct units_entry e;
	uint64_t size = n;

	if (!units_is_v4(stored, n) || units_parse_head(stored, n, &h, err, sizeof(err)) < 0)
		return n;
	for (uint32_t i = 0; i < h.nrefs; i++) {
		units_ref(&h, i, &e);
		if (!units_inline(e.size))   /* the others are in the n bytes */
			size = e.size > UINT64_MAX - size ? UINT64_MAX : size + e.size;
	}
	return size;
}
