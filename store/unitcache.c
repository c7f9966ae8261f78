/*
 * unitcache.c - this machine's copy of a store's units (unitcache.h).
 *
 * Why each running call writes down what it needs (calls/NAME) instead
 * of holding the cache's lock until it ends: a call runs for as long as
 * its cell does, and its worker reads units lazily all that time, so a
 * lock held that long would keep every other call from evicting.  The
 * lock is held only while the cache is checked, filled or cut, and a cut
 * reads what the live records name.  A record is made under the lock
 * held shared, so a cut (exclusive) never sees one half made; its flock
 * ends with its holder, so a killed call's record is known dead and
 * removed by the next cut.
 */
#include "unitcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "objects.h"

#define HASH_LEN 32
#define CALLS_DIR "calls"
#define TRIM_MARK "trim"
#define CALL_NAME_MAX 64
#define CALL_NAME_TRIES 100

struct unitcache {
	int home;               /* the store's directory (borrowed) */
	uint64_t bound;
	int dirfd;              /* DIR/unit-cache; -1 until a call needs it */
	int lockfd;             /* objects/.gc (objects_lock's); -1 until used */
	bool shared;            /* the lock is held shared (a fill) */
	int callsfd;            /* calls/, and this call's record in it */
	int callfd;
	char call_name[CALL_NAME_MAX];
	/* What this call needs and put (hashes), kept from its own cut. */
	uint8_t *keep;
	size_t nkeep, cap;
	bool added;             /* this call put units */
};

struct unitcache *unitcache_new(int homefd, uint64_t bound)
{
	struct unitcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->home = homefd;
	c->bound = bound;
	c->dirfd = c->lockfd = c->callsfd = c->callfd = -1;
	return c;
}

void unitcache_free(struct unitcache *c)
{
	char err[256];

	if (!c)
		return;
	(void)unitcache_end(c, err, sizeof(err));
	fd_close(&c->lockfd);
	fd_close(&c->callsfd);
	fd_close(&c->dirfd);
	free(c);
}

/* "... the unit cache DIR/unit-cache/REL: WHY" for errno, into err; -1. */
static int cache_fail(const struct unitcache *c, const char *rel, char *err, size_t errlen)
{
	char link[64], home[4096], what[4200];
	int errsv = errno;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", c->home);
	n = readlink(link, home, sizeof(home) - 1);
	snprintf(what, sizeof(what), "%.*s%s%s", n > 0 ? (int)n : 0, home, n > 0 ? "/" : "",
	         rel);
	if (errsv == EPERM)
		snprintf(err, errlen, "refusing the unit cache %s: it is not a private "
		         "directory of ours (owned by us, mode 0700)", what);
	else if (errsv == ELOOP || errsv == ENOTDIR)
		snprintf(err, errlen, "refusing the unit cache %s: it is a symbolic link or "
		         "not a directory", what);
	else
		snprintf(err, errlen, "cannot open the unit cache %s: %s", what, strerror(errsv));
	errno = errsv;
	return -1;
}

/* DIR/unit-cache, made when absent, as c->dirfd. */
static int open_cache(struct unitcache *c, char *err, size_t errlen)
{
	bool made;

	if (c->dirfd >= 0)
		return 0;
	c->dirfd = objects_own_dir(c->home, UNITCACHE_DIR, true, &made);
	return c->dirfd < 0 ? cache_fail(c, UNITCACHE_DIR, err, errlen) : 0;
}

int unitcache_dir(struct unitcache *c, char *buf, size_t len, char *err, size_t errlen)
{
	char why[256];

	if (open_cache(c, err, errlen) < 0)
		return -1;
	if (objects_dir(c->dirfd, buf, len, why, sizeof(why)) == 0)
		return 0;
	snprintf(err, errlen, "the unit cache: %s", why);
	return -1;
}

/* Take (LOCK_SH, LOCK_EX, with LOCK_NB) or release (LOCK_UN) the
 * cache's lock: 0, 1 when LOCK_NB finds it held, -1 with err. */
static int lock(struct unitcache *c, int how, char *err, size_t errlen)
{
	char why[200];
	int ret = objects_lock(c->dirfd, &c->lockfd, how, why, sizeof(why));

	if (ret < 0)
		snprintf(err, errlen, "the unit cache: %s", why);
	return ret;
}

/* Add hashes[0..n) to what this call keeps; -1 out of memory. */
static int keep(struct unitcache *c, const uint8_t *hashes, size_t n)
{
	if (c->nkeep + n > c->cap) {
		size_t cap = c->cap ? c->cap : 64;
		uint8_t *grown;

		while (cap < c->nkeep + n)
			cap *= 2;
		grown = realloc(c->keep, cap * HASH_LEN);
		if (!grown)
			return -1;
		c->keep = grown;
		c->cap = cap;
	}
	memcpy(c->keep + c->nkeep * HASH_LEN, hashes, n * HASH_LEN);
	c->nkeep += n;
	return 0;
}

/* A new record in calls/ (made when absent), flock'ed, into c->callfd. */
static int new_record(struct unitcache *c)
{
	static unsigned counter;
	struct timespec now;
	bool made;

	if (c->callsfd < 0)
		c->callsfd = objects_own_dir(c->dirfd, CALLS_DIR, true, &made);
	for (int tries = 0; c->callsfd >= 0 && tries < CALL_NAME_TRIES; tries++) {
		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(c->call_name, sizeof(c->call_name), "%ld-%ld-%u", (long)getpid(),
		         now.tv_nsec, counter++);
		c->callfd = openat(c->callsfd, c->call_name, O_CREAT | O_EXCL | O_RDWR |
		                   O_NOFOLLOW | O_CLOEXEC, 0600);
		if (c->callfd >= 0)
			return flock(c->callfd, LOCK_EX | LOCK_NB);   /* new: nobody else has it */
		if (errno != EEXIST)
			break;
	}
	return -1;
}

/* This call's record goes. */
static void drop_record(struct unitcache *c)
{
	if (c->callfd < 0)
		return;
	(void)unlinkat(c->callsfd, c->call_name, 0);
	fd_close(&c->callfd);
}

/* Write down that this call needs hashes[0..n): its record. */
static int record(struct unitcache *c, const uint8_t *hashes, size_t n, char *err,
                  size_t errlen)
{
	const char *op = "make";

	drop_record(c);
	if (new_record(c) == 0) {
		op = "write";
		if (fd_write_all(c->callfd, hashes, n * HASH_LEN) == 0)
			return 0;
	}
	snprintf(err, errlen, "cannot %s a record in the unit cache %s/%s: %s", op,
	         UNITCACHE_DIR, CALLS_DIR, strerror(errno));
	drop_record(c);
	return -1;
}

/* The positions among hashes[0..n) of the units the cache lacks (or
 * had unsound), into *missing. */
static int check_units(struct unitcache *c, const uint8_t *hashes, const uint64_t *sizes,
                       size_t n, size_t **missing, size_t *nmissing, char *err,
                       size_t errlen)
{
	char why[256];
	bool sound;

	*missing = malloc(n * sizeof(**missing));
	if (!*missing) {
		snprintf(err, errlen, "the unit cache: out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		/* One that cannot be checked is fetched (and, should it not be
		 * written either, handed to the worker some other way). */
		if (objects_check(c->dirfd, hashes + i * HASH_LEN, sizes[i], &sound, why,
		                  sizeof(why)) < 0 || !sound)
			(*missing)[(*nmissing)++] = i;
	}
	return 0;
}

int unitcache_want(struct unitcache *c, const uint8_t *hashes, const uint64_t *sizes,
                   size_t n, size_t **missing, size_t *nmissing, char *err,
                   size_t errlen)
{
	*missing = NULL;
	*nmissing = 0;
	unitcache_filled(c);
	if (!n)
		return 0;
	if (open_cache(c, err, errlen) < 0 || lock(c, LOCK_SH, err, errlen) < 0)
		return -1;
	c->shared = true;
	if (keep(c, hashes, n) < 0) {
		snprintf(err, errlen, "the unit cache: out of memory");
	} else if (record(c, hashes, n, err, errlen) == 0 &&
	           check_units(c, hashes, sizes, n, missing, nmissing, err, errlen) == 0) {
		return 0;
	}
	unitcache_filled(c);
	return -1;
}

int unitcache_put(struct unitcache *c, const uint8_t *hash, const uint8_t *p, size_t n,
                  char *err, size_t errlen)
{
	char why[256];
	bool held = c->shared;
	int ret;

	if (open_cache(c, err, errlen) < 0 || (!held && lock(c, LOCK_SH, err, errlen) < 0))
		return -1;
	ret = objects_put(c->dirfd, hash, p, n, OBJECTS_CACHED, why, sizeof(why));
	if (!held)
		(void)lock(c, LOCK_UN, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "the unit cache: %s", why);
		return -1;
	}
	c->added = true;
	(void)keep(c, hash, 1);   /* out of memory: only evicted sooner */
	return 0;
}

void unitcache_filled(struct unitcache *c)
{
	char why[256];

	if (c->shared)
		(void)lock(c, LOCK_UN, why, sizeof(why));
	c->shared = false;
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, HASH_LEN);
}

/* What the live record fd names, added to c->keep; a record whose
 * holder is gone (its flock free) is removed instead. */
static void keep_record(struct unitcache *c, const char *name)
{
	int fd = openat(c->callsfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	uint8_t *hashes = NULL;
	size_t len = 0;

	if (fd < 0)
		return;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		(void)unlinkat(c->callsfd, name, 0);
	else if (fd_read_all(fd, 0, &hashes, &len) == 0)
		(void)keep(c, hashes, len / HASH_LEN);
	free(hashes);
	close(fd);
}

/* c->keep: this call's, and what every running call needs. */
static int keep_running(struct unitcache *c, char *err, size_t errlen)
{
	bool made;
	DIR *d;
	struct dirent *de;

	if (c->callsfd < 0)
		c->callsfd = objects_own_dir(c->dirfd, CALLS_DIR, true, &made);
	d = c->callsfd >= 0 ? fd_opendir_at(c->callsfd, ".", 0) : NULL;
	if (!d)
		return cache_fail(c, UNITCACHE_DIR "/" CALLS_DIR, err, errlen);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			keep_record(c, de->d_name);
	closedir(d);
	if (c->nkeep > 1)
		qsort(c->keep, c->nkeep, HASH_LEN, hash_cmp);
	return 0;
}

static int used_cmp(const void *a, const void *b)
{
	const struct objects_unit *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return 0;
}

/* Remove units[0..n) (sorted by last use), least recently used first,
 * until total bytes fit the bound; never one c->keep names. */
static int evict(struct unitcache *c, struct objects_unit *units, size_t n, uint64_t total,
                 char *err, size_t errlen)
{
	char why[256];

	qsort(units, n, sizeof(*units), used_cmp);
	for (size_t i = 0; i < n && total > c->bound; i++) {
		if (c->nkeep && bsearch(units[i].hash, c->keep, c->nkeep, HASH_LEN, hash_cmp))
			continue;
		if (objects_del(c->dirfd, units[i].hash, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "the unit cache: %s", why);
			return -1;
		}
		total -= units[i].size;
	}
	return 0;
}

/* Cut the cache to its bound, under its lock held exclusive (taken here
 * when free; else the cut is left to a later call: TRIM_MARK). */
static int trim(struct unitcache *c, char *err, size_t errlen)
{
	struct objects_unit *units = NULL;
	size_t n = 0;
	uint64_t total = 0;
	char why[256];
	int got = lock(c, LOCK_EX | LOCK_NB, err, errlen), ret, fd;

	if (got == 1) {
		fd = openat(c->dirfd, TRIM_MARK, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return cache_fail(c, UNITCACHE_DIR "/" TRIM_MARK, err, errlen);
		close(fd);
		return 0;
	}
	if (got < 0)
		return -1;
	ret = keep_running(c, err, errlen);
	if (ret == 0 && objects_scan(c->dirfd, &units, &n, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "the unit cache: %s", why);
		ret = -1;
	}
	for (size_t i = 0; ret == 0 && i < n; i++)
		total += units[i].size;
	if (ret == 0 && total > c->bound)
		ret = evict(c, units, n, total, err, errlen);
	if (ret == 0)
		(void)unlinkat(c->dirfd, TRIM_MARK, 0);
	free(units);
	(void)lock(c, LOCK_UN, why, sizeof(why));
	return ret;
}

int unitcache_end(struct unitcache *c, char *err, size_t errlen)
{
	struct stat st;
	int ret = 0;

	unitcache_filled(c);
	drop_record(c);
	if (c->dirfd >= 0 && (c->added || fstatat(c->dirfd, TRIM_MARK, &st,
	                                          AT_SYMLINK_NOFOLLOW) == 0))
		ret = trim(c, err, errlen);
	c->nkeep = 0;
	c->added = false;
	return ret;
}
