/*
 * objects.c - a FileStore's units as files (objects.h).
 */
#include "objects.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "sha256.h"
#include "stamp.h"
#include "units.h"

#define HH_LEN 2
#define REST_LEN (UNITS_HEX_LEN - HH_LEN)
#define TMP_PREFIX ".tmp-"
#define TMP_MAX_AGE 3600        /* seconds: a put older than this was killed */
#define TMP_NAME_MAX 64

int objects_own_dir(int atfd, const char *name, bool create, bool *made)
{
	struct stat st;
	int fd;

	*made = false;
	if (create) {
		if (mkdirat(atfd, name, 0700) == 0)
			*made = true;
		else if (errno != EEXIST)
			return -1;
	}
	fd = openat(atfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		fd_close(&fd);
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* fsync a directory whose entries changed; EINVAL: it cannot be. */
static int sync_dir(int fd)
{
	return fsync(fd) < 0 && errno != EINVAL ? -1 : 0;
}

/* The 256 directories HH of a new DIR/objects, made at once so that a
 * unit put later makes none (a directory made is one more sync of its
 * parent on the commit's path); one that cannot be is made by the put
 * that needs it. */
static void make_fanout(int objfd)
{
	char hh[HH_LEN + 1];

	for (int i = 0; i < 256; i++) {
		snprintf(hh, sizeof(hh), "%02x", i);
		(void)mkdirat(objfd, hh, 0700);
	}
}

/* DIR/objects, made (and its making synced) when create. */
static int open_objects(int dirfd, bool create)
{
	bool made;
	int fd = objects_own_dir(dirfd, OBJECTS_DIR, create, &made);

	if (fd >= 0 && made)
		make_fanout(fd);
	if (fd >= 0 && made && (sync_dir(fd) < 0 || sync_dir(dirfd) < 0))
		fd_close(&fd);
	return fd;
}

/* The unit's directory DIR/objects/HH (made when create), and rest its
 * file's name there. */
static int unit_dir(int dirfd, const uint8_t *hash, bool create, char rest[REST_LEN + 1])
{
	char hex[UNITS_HEX_LEN + 1], hh[HH_LEN + 1];
	bool made = false;
	int objfd, hhfd;

	units_hex(hash, hex);
	memcpy(hh, hex, HH_LEN);
	hh[HH_LEN] = '\0';
	memcpy(rest, hex + HH_LEN, REST_LEN + 1);
	objfd = open_objects(dirfd, create);
	if (objfd < 0)
		return -1;
	hhfd = objects_own_dir(objfd, hh, create, &made);
	if (hhfd >= 0 && made && sync_dir(objfd) < 0)
		fd_close(&hhfd);
	fd_close(&objfd);
	return hhfd;
}

/* "cannot OP unit HEX: WHY", errno kept; -1. */
static int unit_fail(const char *op, const uint8_t *hash, char *err, size_t errlen)
{
	char hex[UNITS_HEX_LEN + 1];
	int errsv = errno;

	units_hex(hash, hex);
	if (errsv == EPERM)
		snprintf(err, errlen, "cannot %s unit %s: a directory of the store's objects "
		         "is not a private directory of ours", op, hex);
	else
		snprintf(err, errlen, "cannot %s unit %s: %s", op, hex, strerror(errsv));
	errno = errsv;
	return -1;
}

/* A new temp file in hhfd, its name into tmp. */
static int create_tmp(int hhfd, char *tmp, size_t len)
{
	static unsigned counter;
	struct timespec now;
	int fd = -1;

	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(tmp, len, TMP_PREFIX "%ld-%ld-%u", (long)getpid(), now.tv_nsec,
		         counter++);
		fd = openat(hhfd, tmp, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	return fd;
}

/* Write, sync and name the unit's temp file; -1 with op saying what failed. */
static int write_unit(int hhfd, const char *rest, const uint8_t *p, size_t n,
                      const char **op)
{
	char tmp[TMP_NAME_MAX];
	int fd, errsv;

	*op = "create a temp file for";
	fd = create_tmp(hhfd, tmp, sizeof(tmp));
	if (fd < 0)
		return -1;
	*op = "write";
	if (fd_write_all(fd, p, n) < 0)
		goto fail;
	*op = "fsync";
	if (fsync(fd) < 0)
		goto fail;
	/* Linux closes the fd even on EINTR, and the data is synced. */
	*op = "close";
	if (close(fd) < 0 && errno != EINTR) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	*op = "rename";
	if (renameat2(hhfd, tmp, hhfd, rest, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST) {   /* another put of it came first: same bytes */
		(void)unlinkat(hhfd, tmp, 0);
		return 0;
	}
	if (errno == EINVAL && renameat(hhfd, tmp, hhfd, rest) == 0)
		return 0;   /* no RENAME_NOREPLACE here */
fail:
	errsv = errno;
	fd_close(&fd);
	(void)unlinkat(hhfd, tmp, 0);
	errno = errsv;
	return -1;
}

/* REST.ok, the stamp of the unit just named rest (stamp.h).  Best
 * effort, and not synced: without it a reader hashes the unit, as it
 * does every unit without one. */
static void write_stamp(int hhfd, const char *rest)
{
	char tmp[TMP_NAME_MAX], name[REST_LEN + sizeof(STAMP_SUFFIX)], text[STAMP_TEXT_MAX];
	struct stat st;
	size_t n;
	bool ok;
	int fd;

	if (fstatat(hhfd, rest, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return;
	n = stamp_format(&st, text, sizeof(text));
	fd = n ? create_tmp(hhfd, tmp, sizeof(tmp)) : -1;
	if (fd < 0)
		return;
	snprintf(name, sizeof(name), "%s" STAMP_SUFFIX, rest);
	ok = fd_write_all(fd, text, n) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || renameat(hhfd, tmp, hhfd, name) < 0)
		(void)unlinkat(hhfd, tmp, 0);
}

/* A unit of size bytes just named rest in hhfd, kept as keep says:
 * made durable, and stamped; -1 with op saying what failed. */
static int named(int hhfd, const char *rest, uint64_t size, enum objects_keep keep,
                 const char **op)
{
	*op = "fsync the directory of";
	/* A cache's unit that a crash loses is fetched again. */
	if (keep == OBJECTS_DURABLE && sync_dir(hhfd) < 0)
		return -1;
	if (keep == OBJECTS_CACHED || size >= STAMP_MIN)
		write_stamp(hhfd, rest);
	return 0;
}

int objects_put(int dirfd, const uint8_t *hash, const uint8_t *p, size_t n,
                enum objects_keep keep, char *err, size_t errlen)
{
	char rest[REST_LEN + 1];
	const char *op = "open the directory of";
	struct stat st;
	int hhfd = unit_dir(dirfd, hash, true, rest), ret = -1;

	if (hhfd < 0)
		return unit_fail(op, hash, err, errlen);
	if (fstatat(hhfd, rest, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ret = S_ISREG(st.st_mode) ? 0 : -1;   /* kept as it is */
		op = "store";
		errno = EEXIST;
	} else if (errno != ENOENT) {
		op = "stat";
	} else if (write_unit(hhfd, rest, p, n, &op) == 0) {
		ret = named(hhfd, rest, n, keep, &op);
	}
	if (ret < 0)
		unit_fail(op, hash, err, errlen);
	fd_close(&hhfd);
	return ret;
}

int objects_adopt(int dirfd, const char *name, const uint8_t *hash, char *err,
                  size_t errlen)
{
	char rest[REST_LEN + 1];
	const char *op = "open the directory of";
	struct stat st;
	int hhfd = unit_dir(dirfd, hash, true, rest), ret = -1;

	if (hhfd < 0)
		return unit_fail(op, hash, err, errlen);
	op = "link";
	if (linkat(dirfd, name, hhfd, rest, 0) == 0) {
		ret = named(hhfd, rest, fstatat(hhfd, rest, &st, AT_SYMLINK_NOFOLLOW) == 0 ?
		                        (uint64_t)st.st_size : 0, OBJECTS_DURABLE, &op);
	} else if (errno == EEXIST) {
		ret = 0;   /* named by its bytes: the same ones */
	}
	if (ret < 0)
		unit_fail(op, hash, err, errlen);
	fd_close(&hhfd);
	return ret;
}

/* Whether the stamp of unit file rest in hhfd (lstat st) says its bytes
 * were checked: then its times are set to now, when the unit was last
 * used (objects_scan's order). */
static bool stamp_holds(int hhfd, const char *rest, const struct stat *st)
{
	char name[REST_LEN + sizeof(STAMP_SUFFIX)], text[STAMP_TEXT_MAX];
	int fd;
	ssize_t n;
	bool holds;

	snprintf(name, sizeof(name), "%s" STAMP_SUFFIX, rest);
	fd = openat(hhfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, text, sizeof(text));
	holds = n > 0 && stamp_matches(text, (size_t)n, st);
	if (holds)
		(void)futimens(fd, NULL);   /* the order of use only: no failure matters */
	close(fd);
	return holds;
}

/* Whether unit file rest in hhfd holds size bytes that hash to hash:
 * then it is synced (its stamp's promise) and stamped. */
static bool hashes_right(int hhfd, const char *rest, const uint8_t *hash, uint64_t size)
{
	uint8_t sum[UNITS_HASH_LEN];
	int fd = openat(hhfd, rest, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	bool right = false;
	void *p;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size &&
	    size <= SIZE_MAX) {
		p = size ? mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0) : (void *)"";
		if (p != MAP_FAILED) {
			sha256_bytes(p, (size_t)size, sum);
			right = memcmp(sum, hash, UNITS_HASH_LEN) == 0;
			if (size)
				munmap(p, (size_t)size);
		}
	}
	right = right && fsync(fd) == 0;
	close(fd);
	if (right)
		write_stamp(hhfd, rest);
	return right;
}

/* Remove unit file rest from hhfd, its stamp first: a unit left without
 * one is hashed, never trusted.  -1 with op naming what failed. */
static int remove_unit(int hhfd, const char *rest, const char **op)
{
	char stamp[REST_LEN + sizeof(STAMP_SUFFIX)];

	snprintf(stamp, sizeof(stamp), "%s" STAMP_SUFFIX, rest);
	*op = "remove the stamp of";
	if (unlinkat(hhfd, stamp, 0) < 0 && errno != ENOENT)
		return -1;
	*op = "remove";
	return unlinkat(hhfd, rest, 0) < 0 && errno != ENOENT ? -1 : 0;
}

int objects_check(int dirfd, const uint8_t *hash, uint64_t size, bool *sound, char *err,
                  size_t errlen)
{
	char rest[REST_LEN + 1];
	const char *op = "check";
	struct stat st;
	int hhfd = unit_dir(dirfd, hash, false, rest), ret = 0;

	*sound = false;
	if (hhfd < 0)
		return errno == ENOENT ? 0 : unit_fail(op, hash, err, errlen);
	if (fstatat(hhfd, rest, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = errno == ENOENT ? 0 : unit_fail(op, hash, err, errlen);
	} else {
		*sound = S_ISREG(st.st_mode) && (uint64_t)st.st_size == size &&
		         (stamp_holds(hhfd, rest, &st) || hashes_right(hhfd, rest, hash, size));
		if (!*sound && remove_unit(hhfd, rest, &op) < 0)
			ret = unit_fail(op, hash, err, errlen);
	}
	close(hhfd);
	return ret;
}

/* *st of unit hash; 0 (st_mode 0 when absent), or -1 with errno. */
static int unit_stat(int dirfd, const uint8_t *hash, struct stat *st)
{
	char rest[REST_LEN + 1];
	int hhfd = unit_dir(dirfd, hash, false, rest), errsv;

	memset(st, 0, sizeof(*st));
	if (hhfd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(hhfd, rest, st, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
		errsv = errno;
		close(hhfd);
		errno = errsv;
		return -1;
	}
	close(hhfd);
	return 0;
}

int objects_has(int dirfd, const uint8_t *hash, bool *has, char *err, size_t errlen)
{
	struct stat st;

	*has = false;
	if (unit_stat(dirfd, hash, &st) < 0)
		return unit_fail("look for", hash, err, errlen);
	*has = S_ISREG(st.st_mode);
	return 0;
}

uint64_t objects_size(int dirfd, const uint8_t *hash)
{
	struct stat st;

	if (unit_stat(dirfd, hash, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

int objects_read(int dirfd, const uint8_t *hash, uint8_t **p, size_t *n, bool *found,
                 char *err, size_t errlen)
{
	char rest[REST_LEN + 1];
	struct stat st;
	int hhfd = unit_dir(dirfd, hash, false, rest), fd = -1, ret = -1;

	*p = NULL;
	*n = 0;
	*found = false;
	if (hhfd < 0)
		return errno == ENOENT ? 0 : unit_fail("read", hash, err, errlen);
	fd = openat(hhfd, rest, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		ret = 0;
	else if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		errno = EINVAL;
	else if (fd >= 0 && fd_read_all(fd, (size_t)st.st_size, p, n) == 0)
		ret = 0, *found = true;
	if (ret < 0)
		unit_fail("read", hash, err, errlen);
	fd_close(&fd);
	fd_close(&hhfd);
	return ret;
}

int objects_del(int dirfd, const uint8_t *hash, char *err, size_t errlen)
{
	char rest[REST_LEN + 1];
	const char *op;
	int hhfd = unit_dir(dirfd, hash, false, rest), ret = 0;

	if (hhfd < 0)
		return errno == ENOENT ? 0 : unit_fail("remove", hash, err, errlen);
	if (remove_unit(hhfd, rest, &op) < 0)
		ret = unit_fail(op, hash, err, errlen);
	close(hhfd);
	return ret;
}

static bool lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/* The units listed so far: hashes back to back, or objects_unit
 * entries when scan. */
struct hash_acc {
	uint8_t *v;
	size_t n, cap;
	bool scan;
};

/* e's size, and when it was last used: its stamp's time, else its own. */
static bool describe(int hhfd, const char *rest, struct objects_unit *e)
{
	char stamp[REST_LEN + sizeof(STAMP_SUFFIX)];
	struct stat st;

	if (fstatat(hhfd, rest, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return false;   /* gone meanwhile, or no unit */
	e->size = (uint64_t)st.st_size;
	e->used = st.st_mtim;
	snprintf(stamp, sizeof(stamp), "%.*s" STAMP_SUFFIX, REST_LEN, rest);
	if (fstatat(hhfd, stamp, &st, AT_SYMLINK_NOFOLLOW) == 0)
		e->used = st.st_mtim;
	return true;
}

static int add_hash(struct hash_acc *acc, int hhfd, const char *hh, const char *rest)
{
	size_t size = acc->scan ? sizeof(struct objects_unit) : UNITS_HASH_LEN;
	char hex[UNITS_HEX_LEN + 1];
	uint8_t *at;

	if (acc->n == acc->cap) {
		size_t cap = acc->cap ? acc->cap * 2 : 64;
		uint8_t *v = realloc(acc->v, cap * size);

		if (!v)
			return -1;
		acc->v = v;
		acc->cap = cap;
	}
	memcpy(hex, hh, HH_LEN);
	memcpy(hex + HH_LEN, rest, REST_LEN);
	at = acc->v + acc->n * size;
	(void)units_unhex(hex, UNITS_HEX_LEN, at);   /* the names were checked */
	if (!acc->scan || describe(hhfd, rest, (struct objects_unit *)(void *)at))
		acc->n++;
	return 0;
}

/* A killed put's temp file: old, and never a unit. */
static void drop_stale_tmp(int hhfd, const char *name, time_t now)
{
	struct stat st;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0 &&
	    fstatat(hhfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    now - st.st_mtim.tv_sec > TMP_MAX_AGE)
		(void)unlinkat(hhfd, name, 0);
}

/* The units of DIR/objects/HH into acc. */
static int list_hh(int objfd, const char *hh, struct hash_acc *acc, time_t now)
{
	struct dirent *de;
	bool made;
	int hhfd = objects_own_dir(objfd, hh, false, &made), ret = -1, errsv;
	DIR *d = hhfd >= 0 ? fd_opendir_at(hhfd, ".", 0) : NULL;

	if (!d) {
		fd_close(&hhfd);
		return errno == EPERM || errno == ENOENT ? 0 : -1;   /* not ours: not read */
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = errno ? -1 : 0;
			break;
		}
		if (lower_hex(de->d_name, REST_LEN) && add_hash(acc, hhfd, hh, de->d_name) < 0)
			break;
		drop_stale_tmp(hhfd, de->d_name, now);
	}
	errsv = errno;
	closedir(d);
	close(hhfd);
	errno = errsv;
	return ret;
}

/* Every unit of DIR/objects into acc. */
static int list_all(int dirfd, struct hash_acc *acc, char *err, size_t errlen)
{
	struct dirent *de;
	int objfd = open_objects(dirfd, false), errsv;
	DIR *d = objfd >= 0 ? fd_opendir_at(objfd, ".", 0) : NULL;
	time_t now = time(NULL);

	if (!d && objfd < 0 && errno == ENOENT)
		return 0;
	while (d) {
		errno = 0;
		de = readdir(d);
		if (!de || (lower_hex(de->d_name, HH_LEN) && list_hh(objfd, de->d_name, acc,
		                                                     now) < 0))
			break;
	}
	errsv = errno;
	if (d)
		closedir(d);
	fd_close(&objfd);
	if (!d || errsv) {
		free(acc->v);
		acc->v = NULL;
		acc->n = 0;
		snprintf(err, errlen, "cannot list the store's units: %s", strerror(errsv));
		errno = errsv;
		return -1;
	}
	return 0;
}

int objects_list(int dirfd, uint8_t **hashes, size_t *n, char *err, size_t errlen)
{
	struct hash_acc acc = { NULL, 0, 0, false };
	int ret = list_all(dirfd, &acc, err, errlen);

	*hashes = acc.v;
	*n = acc.n;
	return ret;
}

int objects_scan(int dirfd, struct objects_unit **units, size_t *n, char *err,
                 size_t errlen)
{
	struct hash_acc acc = { NULL, 0, 0, true };
	int ret = list_all(dirfd, &acc, err, errlen);

	*units = (struct objects_unit *)(void *)acc.v;
	*n = acc.n;
	return ret;
}

int objects_lock(int dirfd, int *lockfd, int how, char *err, size_t errlen)
{
	const char *op = "open";
	int objfd, errsv;

	if (*lockfd < 0) {
		objfd = open_objects(dirfd, true);
		if (objfd >= 0) {
			*lockfd = openat(objfd, OBJECTS_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
			                 O_NONBLOCK | O_CLOEXEC, 0600);
			fd_close(&objfd);
		}
	}
	if (*lockfd >= 0) {
		op = "flock";
		while (flock(*lockfd, how) < 0) {
			if ((how & LOCK_NB) && errno == EWOULDBLOCK)
				return 1;
			if (errno != EINTR)
				goto fail;
		}
		return 0;
	}
fail:
	errsv = errno;
	snprintf(err, errlen, "cannot %s the store's units lock %s/%s: %s",
	         how == LOCK_UN ? "release" : op, OBJECTS_DIR, OBJECTS_LOCK, strerror(errsv));
	errno = errsv;
	return -1;
}

int objects_dir(int dirfd, char *buf, size_t len, char *err, size_t errlen)
{
	char link[64], path[4096];
	int objfd = open_objects(dirfd, false), errsv;
	ssize_t n;

	if (objfd < 0 && errno != ENOENT) {
		errsv = errno;
		snprintf(err, errlen, "cannot open the store's objects directory: %s",
		         errsv == EPERM ? "it is not a private directory of ours"
		                        : strerror(errsv));
		errno = errsv;
		return -1;
	}
	fd_close(&objfd);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0 || (size_t)n + sizeof("/" OBJECTS_DIR) > len) {
		errsv = n < 0 ? errno : ENAMETOOLONG;
		snprintf(err, errlen, "cannot name the store's objects directory: %s",
		         strerror(errsv));
		errno = errsv;
		return -1;
	}
	path[n] = '\0';
	snprintf(buf, len, "%s/%s", path, OBJECTS_DIR);
	return 0;
}
