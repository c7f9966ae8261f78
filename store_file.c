/*
 * store_file.c - FileStore: one file per session in a private directory.
 * The store's door and its other backends are in store/.
 *
 * Layout: ID.pkl holds a session, ".ID.XXXXXX.tmp" is a save in progress,
 * ID.lock carries the session's flock and, as its content, the save counter
 * of the session's last commit (SEQ_DIGITS decimal digits and a newline;
 * empty when none was recorded), and an ID.sandboxed entry says the
 * session was last written by a sandboxed call.  objects/ holds the units
 * of version 4 sessions (store/objects.h), which neither listing, reaping
 * nor sweeping touches: store.c removes a unit once no head names it.
 * Any other name is not ours.
 *
 * Invariants:
 * - The directory MUST be a real directory (never a symlink), owned by
 *   geteuid(), that no group or other can write (0755 is accepted: a
 *   host's `mkdir -p` makes it so; what is inside stays 0600 and 0700).
 *   Otherwise open refuses it and writes nothing into it.
 * - The directory MUST be opened once with O_DIRECTORY|O_NOFOLLOW and
 *   checked with fstat on that fd; every later access MUST be an *at() call
 *   relative to the same fd, so what was checked is what is used.
 * - Session, temp and lock files MUST be opened with O_NOFOLLOW and created
 *   0600; only regular files are read.
 * - A save MUST be atomic and durable: O_EXCL temp file, full write, fsync,
 *   renameat, fsync of the directory.  A failed save MUST leave no temp file
 *   and the old session intact.
 * - Every fd MUST be O_CLOEXEC, so a worker never inherits one.
 * - Reaping MUST never fail an operation and MUST only touch our own names;
 *   ENOENT from a racing process is expected.
 * - The whole directory is swept (each entry stat'ed for its age) at most
 *   once per SWEEP_EVERY, or per TTL / 100 when that is shorter, across
 *   every process: the mtime of .swept (.swept.NS in namespace NS, whose
 *   sweep reaps only NS's sessions) says when it last was.  A call
 *   still reaps, at once, the session it locks (when expired) and that
 *   session's temp files, and listing or deleting every session sweeps
 *   first whatever the stamp says: a store of thousands of sessions does
 *   not cost each call thousands of stats.
 * - A save of a session MUST hold the session's lock, so that a temp file
 *   of that session seen by the lock's holder belongs to a dead process and
 *   is removed at once, not an hour later.  Others MUST NOT remove a locked
 *   session's temp file, however old: a worker fills it at the end of a
 *   call that may run for hours (save_begin comes before the call).
 * - A lock file MUST only be unlinked while its flock is held, and a locker
 *   MUST check after flock that the name still refers to its inode.  The
 *   holder removes it on unlock when the session is gone (reset, expired,
 *   or a first call that saved nothing): no lock file outlives its session.
 * - An expired session MUST only be reaped under its lock, its age checked
 *   again once the lock is held: a save that lands after the first look
 *   is fresh and stays.  A locked session is never reaped by another.
 * - Deleting every session MUST skip the locked ones, with their temp
 *   files: a call in flight keeps its session and its save.
 * - ID.sandboxed is made and removed only here, in the client, under the
 *   session's lock (a worker gets no fd of this directory): it MUST exist
 *   before a sandboxed session's rename and MUST only go after an
 *   unsandboxed one's, or once ID.pkl is gone; it is never reaped by age.
 * - The counter in ID.lock is written only here, under the session's lock,
 *   after the rename: a crash between leaves the older counter, which the
 *   new session's exceeds.  It goes with the lock file, when the session
 *   is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "objects.h"
#include "pending.h"
#include "store_file.h"
#include "store_name.h"
#include "user_dir.h"

#define TEMP_MAX_AGE 3600.0     /* seconds; a killed save leaves its temp file */
#define SWEEP_EVERY 60.0        /* seconds between two sweeps of the directory */
#define SWEEP_STAMP ".swept"
#define TEMP_TRIES 100
#define LOCK_SLEEP_MIN 1000000L         /* ns */
#define LOCK_SLEEP_MAX 20000000L        /* ns */
#define PATH_SHOW_MAX 200
#define NAME_BUF STORE_NAME_MAX
#define SEQ_DIGITS 20           /* UINT64_MAX has 20 */

struct fstore {
	struct store s;
	int dirfd;
	int gcfd;               /* objects/.gc once obj_lock opened it, else -1 */
	double ttl;             /* seconds; 0 disables reaping by age */
};

/* A save in progress (store_save.priv): its temp file's name. */
struct fs_save {
	char tmp[NAME_BUF];
};

/* A held lock (store_lock.priv): the flock'ed ID.lock. */
struct fs_lock {
	int fd;
	char id[STORE_ID_MAX + 1];
};

/* Called for each of our files in the directory; -1 (errno set) stops the scan. */
typedef int (*scan_fn)(struct fstore *fs, const char *name, enum store_name_kind kind,
                       const char *id, void *arg);

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	int errsv = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	errno = errsv;
	return -1;
}

/* A path for a message: control bytes become '?', long paths are cut. */
static const char *path_show(const char *path, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < PATH_SHOW_MAX && i + 4 < len && path[i] != '\0'; i++) {
		unsigned char c = (unsigned char)path[i];

		buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (path[i] != '\0' && i + 4 <= len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/*
 * Call fn for each of our entries.  A second open file description of the
 * directory ("." via the fd, not the path) keeps readdir's offset private.
 */
static int scan_dir(struct fstore *fs, scan_fn fn, void *arg)
{
	char id[STORE_ID_MAX + 1];
	struct dirent *de;
	enum store_name_kind kind;
	DIR *d = fd_opendir_at(fs->dirfd, ".", 0);
	int errsv, ret = -1;

	if (d == NULL)
		return -1;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL)
			break;
		kind = store_name_kind(de->d_name, id);
		if (kind != STORE_NAME_OTHER && fn(fs, de->d_name, kind, id, arg) < 0)
			goto out;
	}
	if (errno == 0)
		ret = 0;
out:
	errsv = errno;
	closedir(d);
	errno = errsv;
	return ret;
}

static double age_of(const struct stat *st, const struct timespec *now)
{
	return (double)(now->tv_sec - st->st_mtim.tv_sec) +
	       (double)(now->tv_nsec - st->st_mtim.tv_nsec) / 1e9;
}

/* True when fd is a regular file that name in the directory still refers to. */
static bool still_named(struct fstore *fs, int fd, const char *name)
{
	struct stat a, b;

	if (fstat(fd, &a) < 0 ||
	    fstatat(fs->dirfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return S_ISREG(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Unlink a lock file unless someone holds its lock.  Best effort. */
static void remove_lock_if_free(struct fstore *fs, const char *name)
{
	int fd, errsv = errno;

	fd = openat(fs->dirfd, name,
	            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		goto out;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && still_named(fs, fd, name))
		(void)unlinkat(fs->dirfd, name, 0);
	close(fd);
out:
	errno = errsv;
}

/*
 * True when someone holds the lock of session id.  A temp file of a locked
 * session may be a save in progress however old it is: the worker writes
 * it at the end of a call that may run for hours.
 */
static bool session_locked(struct fstore *fs, const char *id)
{
	char name[NAME_BUF];
	int fd, errsv = errno;
	bool held;

	snprintf(name, sizeof(name), "%s.lock", id);
	fd = openat(fs->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		errno = errsv;
		return false;
	}
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	errno = errsv;
	return held;
}

static int open_lock(struct fstore *fs, const char *name, bool *notreg);

/* Remove ID.sandboxed once ID.pkl is gone (a session reaped or deleted,
 * or a sandboxed save that failed after marking).  Unless locked (we hold
 * the session's lock), only when the lock can be taken at once: a save in
 * progress may have found the mark and is about to rename.  Best effort. */
static void drop_orphan_mark(struct fstore *fs, const char *id, bool locked)
{
	char pkl[NAME_BUF], name[NAME_BUF];
	struct stat st;
	bool notreg;
	int fd = -1, errsv = errno;

	snprintf(pkl, sizeof(pkl), "%s.pkl", id);
	snprintf(name, sizeof(name), "%s.sandboxed", id);
	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fstatat(fs->dirfd, pkl, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		goto out;
	if (!locked) {
		snprintf(name, sizeof(name), "%s.lock", id);
		fd = open_lock(fs, name, &notreg);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || !still_named(fs, fd, name))
			goto out;
		if (fstatat(fs->dirfd, pkl, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			goto out;
	}
	snprintf(name, sizeof(name), "%s.sandboxed", id);
	(void)unlinkat(fs->dirfd, name, 0);
out:
	if (fd >= 0)
		close(fd);
	errno = errsv;
}

/*
 * Take session id's lock without waiting, creating ID.lock if need be;
 * the held fd, or -1 when someone holds it (or it cannot be had).
 */
static int try_lock(struct fstore *fs, const char *id)
{
	char name[NAME_BUF];
	bool notreg;
	int fd, errsv = errno;

	snprintf(name, sizeof(name), "%s.lock", id);
	fd = open_lock(fs, name, &notreg);
	if (fd >= 0 && (flock(fd, LOCK_EX | LOCK_NB) < 0 || !still_named(fs, fd, name)))
		fd_close(&fd);
	errno = errsv;
	return fd;
}

/* Unlink ID.lock, whose flock fd holds, when ID.pkl is gone, then close fd. */
static void unlock_and_tidy(struct fstore *fs, const char *id, int fd)
{
	char name[NAME_BUF];
	struct stat st;
	int errsv = errno;

	snprintf(name, sizeof(name), "%s.pkl", id);
	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
		snprintf(name, sizeof(name), "%s.lock", id);
		if (still_named(fs, fd, name))
			(void)unlinkat(fs->dirfd, name, 0);
	}
	close(fd);
	errno = errsv;
}

/*
 * Remove session id if it is still older than the TTL once its lock is
 * held (held: by us already); a save between a scan's look and now made
 * it fresh.  Unless held, a locked session is in use and stays.
 */
static void reap_expired(struct fstore *fs, const char *id, bool held,
                         const struct timespec *now)
{
	char name[NAME_BUF];
	struct stat st;
	int fd = held ? -1 : try_lock(fs, id);

	if (!held && fd < 0)
		return;
	snprintf(name, sizeof(name), "%s.pkl", id);
	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    age_of(&st, now) > fs->ttl) {
		if (unlinkat(fs->dirfd, name, 0) == 0)
			fs->s.reaped = true;   /* its units may be garbage now */
		drop_orphan_mark(fs, id, true);
	}
	if (fd >= 0)
		unlock_and_tidy(fs, id, fd);
}

struct reap_ctx {
	struct timespec now;
	const char *locked;     /* the session whose lock we hold, or NULL */
};

static int reap_one(struct fstore *fs, const char *name, enum store_name_kind kind,
                    const char *id, void *arg)
{
	const struct reap_ctx *ctx = arg;
	struct stat st;
	double age;

	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (kind == STORE_NAME_TEMP && ctx->locked && strcmp(id, ctx->locked) == 0) {
		/* Its save was killed: saves happen only under this lock. */
		(void)unlinkat(fs->dirfd, name, 0);
		return 0;
	}
	age = age_of(&st, &ctx->now);
	switch (kind) {
	case STORE_NAME_SESSION:
		if (fs->ttl > 0 && age > fs->ttl && store_ns_holds(fs->s.ns, id))
			reap_expired(fs, id, ctx->locked && strcmp(id, ctx->locked) == 0, &ctx->now);
		break;
	case STORE_NAME_TEMP:
		if ((age > TEMP_MAX_AGE || (fs->ttl > 0 && age > fs->ttl)) &&
		    !session_locked(fs, id))
			(void)unlinkat(fs->dirfd, name, 0);
		break;
	case STORE_NAME_LOCK:
		if (fs->ttl > 0 && age > fs->ttl && store_ns_holds(fs->s.ns, id))
			remove_lock_if_free(fs, name);
		break;
	case STORE_NAME_MARK:
		drop_orphan_mark(fs, id, ctx->locked && strcmp(id, ctx->locked) == 0);
		break;
	case STORE_NAME_OTHER:
	default:
		break;
	}
	return 0;
}

/* Seconds between two sweeps of the directory. */
static double sweep_every(const struct fstore *fs)
{
	return fs->ttl > 0 && fs->ttl / 100 < SWEEP_EVERY ? fs->ttl / 100 : SWEEP_EVERY;
}

/*
 * Whether the directory is due for a sweep: no process swept it within
 * sweep_every (the stamp's mtime says when one last did).  A due sweep is
 * claimed by touching the stamp; two processes claiming it at once both
 * sweep, as every call did before the stamp.
 */
static bool sweep_due(struct fstore *fs)
{
	struct timespec now;
	struct stat st;
	double every = sweep_every(fs);
	char stamp[NAME_BUF];
	int fd;

	/* A namespace's sweep reaps only its sessions: each has its stamp. */
	if (store_ns_is_default(fs->s.ns))
		snprintf(stamp, sizeof(stamp), "%s", SWEEP_STAMP);
	else
		snprintf(stamp, sizeof(stamp), "%s.%s", SWEEP_STAMP, fs->s.ns);
	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return true;
	if (fstatat(fs->dirfd, stamp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    age_of(&st, &now) >= 0 && age_of(&st, &now) < every)
		return false;
	fd = openat(fs->dirfd, stamp,
	            O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return true;
}

/* Remove every temp file of session id, whose lock we hold: their saves
 * were killed (saves happen only under this lock).  Names only: no stat. */
static int drop_temp_of(struct fstore *fs, const char *name, enum store_name_kind kind,
                        const char *id, void *arg)
{
	if (kind == STORE_NAME_TEMP && strcmp(id, arg) == 0)
		(void)unlinkat(fs->dirfd, name, 0);
	return 0;
}

/*
 * Remove expired sessions, stale temp files and unused old lock files; with
 * locked (an id whose lock we hold), every temp file of that session too.
 * Between sweeps, only what concerns locked: itself if expired, its temps.
 */
static void reap_locked(struct fstore *fs, const char *locked, bool sweep)
{
	struct reap_ctx ctx = { .locked = locked };
	char name[NAME_BUF];
	int errsv = errno;

	if (clock_gettime(CLOCK_REALTIME, &ctx.now) < 0)
		goto out;
	if (sweep || sweep_due(fs)) {
		(void)scan_dir(fs, reap_one, &ctx);
		goto out;
	}
	if (!locked)
		goto out;
	if (fs->ttl > 0)
		reap_expired(fs, locked, true, &ctx.now);
	snprintf(name, sizeof(name), "%s", locked);
	(void)scan_dir(fs, drop_temp_of, name);
out:
	errno = errsv;
}

static void reap(struct fstore *fs)
{
	reap_locked(fs, NULL, false);
}

/* Before listing or deleting every session: a sweep, whatever the stamp. */
static void reap_all(struct fstore *fs)
{
	reap_locked(fs, NULL, true);
}

static int fs_open_blob(struct store *s, const char *id, int *fdp, size_t *len,
                        bool *found, char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	char name[NAME_BUF];
	struct stat st;
	int fd;

	*fdp = -1;
	*len = 0;
	*found = false;
	reap(fs);
	snprintf(name, sizeof(name), "%s.pkl", id);
	/* O_NONBLOCK: a FIFO planted as ID.pkl must not hang us before fstat. */
	fd = openat(fs->dirfd, name,
	            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 && errno == ELOOP)
		return fail(err, errlen, "cannot load session '%s': %s is a symbolic link",
		            id, name);
	if (fd < 0)
		return fail(err, errlen, "cannot load session '%s': open: %s", id,
		            strerror(errno));
	if (fstat(fd, &st) < 0) {
		fail(err, errlen, "cannot load session '%s': fstat: %s", id,
		     strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		fail(err, errlen, "cannot load session '%s': %s is not a regular file",
		     id, name);
		goto out;
	}
	*fdp = fd;
	*len = (size_t)st.st_size;
	*found = true;
	return 0;
out:
	fd_close(&fd);
	return -1;
}

static int fs_load(struct store *s, const char *id, uint8_t **blob,
                   size_t *len, bool *found, char *err, size_t errlen)
{
	int fd, ret = 0;

	*blob = NULL;
	if (fs_open_blob(s, id, &fd, len, found, err, errlen) < 0)
		return -1;
	if (!*found)
		return 0;
	if (fd_read_all(fd, *len, blob, len) < 0) {
		fail(err, errlen, "cannot load session '%s': read: %s", id,
		     strerror(errno));
		*found = false;
		ret = -1;
	}
	fd_close(&fd);
	return ret;
}

static void fill_random(unsigned char *buf, size_t n)
{
	struct timespec ts;
	uint64_t x;
	size_t i;

	if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n)
		return;
	/* Only uniqueness matters here (O_EXCL guards); mix time and pid. */
	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
	    ((uint64_t)getpid() << 17) ^ (uint64_t)(uintptr_t)buf;
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

/* Create ".ID.XXXXXX.tmp" exclusively; tmp gets its name, or "" on failure. */
static int create_temp(struct fstore *fs, const char *id, char *tmp,
                       size_t tmplen)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[STORE_TEMP_RAND_LEN];
	char sfx[STORE_TEMP_RAND_LEN + 1];
	int i, tries, fd = -1;

	for (tries = 0; tries < TEMP_TRIES; tries++) {
		fill_random(rnd, sizeof(rnd));
		for (i = 0; i < STORE_TEMP_RAND_LEN; i++)
			sfx[i] = alnum[rnd[i] % (sizeof(alnum) - 1)];
		sfx[STORE_TEMP_RAND_LEN] = '\0';
		snprintf(tmp, tmplen, ".%s.%s.tmp", id, sfx);
		/* Read and write: store.c signs what the worker wrote. */
		fd = openat(fs->dirfd, tmp, O_CREAT | O_EXCL | O_NOFOLLOW |
		            O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		tmp[0] = '\0';
	return fd;
}

/* Close and unlink a save's temp file (if it still has one), keeping errno. */
static void fs_save_abort(struct store *s, struct store_save *sv)
{
	struct fstore *fs = s->priv;
	struct fs_save *fv = sv->priv;
	int errsv = errno;

	if (sv->fd >= 0)
		close(sv->fd);
	sv->fd = -1;
	if (fv && fv->tmp[0] != '\0')
		(void)unlinkat(fs->dirfd, fv->tmp, 0);
	free(fv);
	sv->priv = NULL;
	errno = errsv;
}

static int fs_save_failed(struct store *s, struct store_save *sv, const char *op,
                          char *err, size_t errlen)
{
	int errsv = errno;

	fs_save_abort(s, sv);
	errno = errsv;
	return fail(err, errlen, "cannot save session '%s': %s: %s", sv->id, op,
	            strerror(errsv));
}

static int fs_save_begin(struct store *s, struct store_save *sv, char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	struct fs_save *fv;

	reap(fs);
	fv = calloc(1, sizeof(*fv));
	if (fv == NULL)
		return fail(err, errlen, "cannot save session '%s': %s", sv->id,
		            strerror(errno));
	sv->priv = fv;
	sv->fd = create_temp(fs, sv->id, fv->tmp, sizeof(fv->tmp));
	if (sv->fd < 0)
		return fs_save_failed(s, sv, "create temporary file", err, errlen);
	return 0;
}

/* Make ID.sandboxed, durably, unless it exists. */
static int mark_sandboxed(struct fstore *fs, const char *id)
{
	char name[NAME_BUF];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "%s.sandboxed", id);
	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	fd = openat(fs->dirfd, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC,
	            0600);
	if (fd < 0 && errno != EEXIST)
		return -1;
	if (fd >= 0)
		close(fd);
	return fsync(fs->dirfd) < 0 && errno != EINVAL ? -1 : 0;
}

/* Remove ID.sandboxed (after an unsandboxed session is in place). */
static int unmark_sandboxed(struct fstore *fs, const char *id)
{
	char name[NAME_BUF];

	snprintf(name, sizeof(name), "%s.sandboxed", id);
	if (unlinkat(fs->dirfd, name, 0) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* Record seq in ID.lock, whose flock we hold.  Best effort: the session is
 * committed already, and a counter not recorded only lets an earlier save
 * of it load (as before counters were). */
static void record_seq(struct fstore *fs, const char *id, uint64_t seq)
{
	char name[NAME_BUF], text[SEQ_DIGITS + 2];
	int fd, errsv = errno;

	snprintf(name, sizeof(name), "%s.lock", id);
	snprintf(text, sizeof(text), "%0*" PRIu64 "\n", SEQ_DIGITS, seq);
	fd = openat(fs->dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		(void)!pwrite(fd, text, SEQ_DIGITS + 1, 0);
		close(fd);
	}
	errno = errsv;
}

/* The counter ID.lock records; 0 when none (or not one written here). */
static uint64_t recorded_seq(struct fstore *fs, const char *id)
{
	char name[NAME_BUF], text[SEQ_DIGITS + 2] = "";
	ssize_t n = -1;
	int fd, errsv = errno;

	snprintf(name, sizeof(name), "%s.lock", id);
	fd = openat(fs->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		n = pread(fd, text, sizeof(text), 0);
		close(fd);
	}
	errno = errsv;
	if (n != SEQ_DIGITS + 1 || text[SEQ_DIGITS] != '\n')
		return 0;
	return store_name_seq(text, SEQ_DIGITS);
}

static int fs_origin(struct store *s, const char *id, struct store_mark *mark, char *err,
                     size_t errlen)
{
	struct fstore *fs = s->priv;
	char name[NAME_BUF];
	struct stat st;

	mark->sandboxed = true;
	mark->seq = recorded_seq(fs, id);
	snprintf(name, sizeof(name), "%s.sandboxed", id);
	/* Any entry of that name counts, whatever its type. */
	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return fail(err, errlen, "cannot tell who wrote session '%s': %s: %s", id, name,
		            strerror(errno));
	mark->sandboxed = false;
	return 0;
}

/* The temp file holds the new session: sync it, rename it into place and
 * sync the directory. */
static int fs_save_commit(struct store *s, struct store_save *sv, size_t len,
                          char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	struct fs_save *fv = sv->priv;
	char name[NAME_BUF];
	struct stat st;
	int r;

	snprintf(name, sizeof(name), "%s.pkl", sv->id);
	if (fstat(sv->fd, &st) < 0)
		return fs_save_failed(s, sv, "fstat", err, errlen);
	if ((uint64_t)st.st_size != (uint64_t)len) {
		errno = EIO;   /* a writer that stopped short, or wrote on */
		return fs_save_failed(s, sv, "write", err, errlen);
	}
	if (fsync(sv->fd) < 0)
		return fs_save_failed(s, sv, "fsync", err, errlen);
	if (sv->sandboxed && mark_sandboxed(fs, sv->id) < 0)
		return fs_save_failed(s, sv, "record that a sandboxed call wrote it", err, errlen);
	r = close(sv->fd);
	sv->fd = -1;
	/* Linux closes the fd even on EINTR, and the data is already synced. */
	if (r < 0 && errno != EINTR)
		return fs_save_failed(s, sv, "close", err, errlen);
	if (renameat(fs->dirfd, fv->tmp, fs->dirfd, name) < 0)
		return fs_save_failed(s, sv, "rename", err, errlen);
	fv->tmp[0] = '\0';
	/*
	 * The rename is done; a failure here means it may not survive a crash,
	 * which the caller should hear about.  EINVAL: the filesystem cannot
	 * sync directories at all.
	 */
	if (fsync(fs->dirfd) < 0 && errno != EINVAL)
		return fs_save_failed(s, sv, "fsync directory", err, errlen);
	if (!sv->sandboxed && unmark_sandboxed(fs, sv->id) < 0)
		return fs_save_failed(s, sv, "clear the sandboxed mark", err, errlen);
	record_seq(fs, sv->id, sv->seq);
	fs_save_abort(s, sv);   /* nothing left to drop but fv */
	return 0;
}

static int fs_save(struct store *s, const char *id, const uint8_t *blob,
                   size_t len, const struct store_mark *mark, char *err, size_t errlen)
{
	struct store_save sv = { .fd = -1, .sandboxed = mark->sandboxed, .seq = mark->seq,
	                         .priv = NULL };

	snprintf(sv.id, sizeof(sv.id), "%s", id);
	if (fs_save_begin(s, &sv, err, errlen) < 0)
		return -1;
	if (fd_write_all(sv.fd, blob, len) < 0)
		return fs_save_failed(s, &sv, "write", err, errlen);
	return fs_save_commit(s, &sv, len, err, errlen);
}

struct del_acc {
	unsigned removed;
	int errsv;              /* first unlink error, 0 if none */
	bool sessions;          /* remove the unlocked sessions too (not a sweep) */
};

static int del_all_one(struct fstore *fs, const char *name, enum store_name_kind kind,
                       const char *id, void *arg)
{
	struct del_acc *acc = arg;
	struct stat st;

	if (fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (!S_ISREG(st.st_mode) && kind != STORE_NAME_MARK))
		return 0;
	switch (kind) {
	case STORE_NAME_SESSION: {
		int fd = acc->sessions ? try_lock(fs, id) : -1;

		if (fd < 0)
			break;   /* a call holds it: it stays, with its save */
		if (unlinkat(fs->dirfd, name, 0) == 0)
			acc->removed++;
		else if (errno != ENOENT && acc->errsv == 0)
			acc->errsv = errno;
		drop_orphan_mark(fs, id, true);
		unlock_and_tidy(fs, id, fd);
		break;
	}
	case STORE_NAME_TEMP:
		/* Saves hold the lock: an unlocked session's temp file is a
		 * killed save's; a locked one's may be a save in progress. */
		if (!session_locked(fs, id))
			(void)unlinkat(fs->dirfd, name, 0);
		break;
	case STORE_NAME_LOCK:
		remove_lock_if_free(fs, name);
		break;
	case STORE_NAME_MARK:
		drop_orphan_mark(fs, id, false);
		break;
	case STORE_NAME_OTHER:
	default:
		break;
	}
	return 0;
}

static int fs_del_all(struct fstore *fs, bool sessions, unsigned *removed, char *err,
                      size_t errlen)
{
	struct del_acc acc = { 0, 0, sessions };

	if (scan_dir(fs, del_all_one, &acc) < 0) {
		*removed = acc.removed;
		return fail(err, errlen, "cannot delete all sessions: read directory: %s",
		            strerror(errno));
	}
	*removed = acc.removed;
	if (acc.errsv != 0) {
		errno = acc.errsv;
		return fail(err, errlen, "cannot delete all sessions: unlink: %s",
		            strerror(errno));
	}
	return 0;
}

static int fs_del(struct store *s, const char *id, unsigned *removed,
                  char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	char name[NAME_BUF];

	*removed = 0;
	if (strcmp(id, "all") == 0) {
		reap_all(fs);
		return fs_del_all(fs, true, removed, err, errlen);
	}
	reap(fs);
	snprintf(name, sizeof(name), "%s.pkl", id);
	if (unlinkat(fs->dirfd, name, 0) == 0)
		*removed = 1;
	else if (errno != ENOENT)
		return fail(err, errlen, "cannot delete session '%s': unlink: %s", id,
		            strerror(errno));
	drop_orphan_mark(fs, id, true);   /* repl_reset holds the lock */
	/* ID.lock goes when its holder unlocks (fs_unlock); unlocked, now. */
	snprintf(name, sizeof(name), "%s.lock", id);
	remove_lock_if_free(fs, name);
	return 0;
}

/* The leftovers of unlocked sessions, every session kept. */
static int fs_sweep(struct store *s, char *err, size_t errlen)
{
	unsigned none;

	reap_all(s->priv);
	return fs_del_all(s->priv, false, &none, err, errlen);
}

struct list_acc {
	struct session_info *v;
	size_t n, cap;
	bool nomem;             /* the scan stopped for lack of memory */
};

static int list_one(struct fstore *fs, const char *name, enum store_name_kind kind,
                    const char *id, void *arg)
{
	struct list_acc *acc = arg;
	struct session_info *nv;
	struct stat st;

	if (kind != STORE_NAME_SESSION ||
	    fstatat(fs->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (acc->n == acc->cap) {
		size_t cap = acc->cap ? acc->cap * 2 : 16;

		nv = realloc(acc->v, cap * sizeof(*nv));
		if (nv == NULL) {
			acc->nomem = true;
			return -1;
		}
		acc->v = nv;
		acc->cap = cap;
	}
	nv = &acc->v[acc->n++];
	memset(nv, 0, sizeof(*nv));
	snprintf(nv->id, sizeof(nv->id), "%s", id);
	nv->size = (uint64_t)st.st_size;
	nv->mtime = st.st_mtim;
	return 0;
}

static int info_cmp(const void *a, const void *b)
{
	const struct session_info *x = a, *y = b;

	return strcmp(x->id, y->id);
}

static int fs_list(struct store *s, struct session_info **out, size_t *n,
                   char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	struct list_acc acc = { NULL, 0, 0, false };
	int errsv;

	*out = NULL;
	*n = 0;
	reap_all(fs);
	if (scan_dir(fs, list_one, &acc) < 0) {
		errsv = errno;
		free(acc.v);
		errno = errsv;
		return fail(err, errlen, "cannot list sessions: %s: %s",
		            acc.nomem ? "allocate" : "read directory",
		            strerror(errno));
	}
	if (acc.n > 1)
		qsort(acc.v, acc.n, sizeof(*acc.v), info_cmp);
	*out = acc.v;
	*n = acc.n;
	return 0;
}

/*
 * flock LOCK_EX; with a deadline, poll LOCK_NB with growing sleeps, since
 * flock itself has no timeout.  0, 1 once the deadline passes with the
 * lock held elsewhere, or -1 (errno set by flock).
 */
static int flock_until(int fd, const struct timespec *deadline)
{
	long sleep_ns = LOCK_SLEEP_MIN;
	long long left;
	struct timespec ts;

	for (;;) {
		if (flock(fd, deadline ? LOCK_EX | LOCK_NB : LOCK_EX) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (deadline == NULL)
			continue;
		left = deadline_ns_left(deadline);
		if (left == 0)
			return 1;
		ts.tv_sec = 0;
		ts.tv_nsec = left < sleep_ns ? (long)left : sleep_ns;
		nanosleep(&ts, NULL);
		sleep_ns = sleep_ns * 2 > LOCK_SLEEP_MAX ? LOCK_SLEEP_MAX : sleep_ns * 2;
	}
}

/* Open ID.lock, creating it; *notreg tells a non-regular file (errno EINVAL). */
static int open_lock(struct fstore *fs, const char *name, bool *notreg)
{
	struct stat st;
	int fd;

	*notreg = false;
	fd = openat(fs->dirfd, name,
	            O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0) {
		*notreg = errno == ELOOP;
		return -1;
	}
	if (fstat(fd, &st) < 0 || S_ISREG(st.st_mode))
		return fd;
	close(fd);
	*notreg = true;
	errno = EINVAL;
	return -1;
}

static enum store_lock_status fs_lock(struct store *s, const char *id, long timeout_ms,
                                      struct store_lock *lk, char *err, size_t errlen)
{
	enum store_lock_status ret = STORE_LOCK_FAILED;
	struct fstore *fs = s->priv;
	struct timespec deadline;
	struct fs_lock *held;
	char name[NAME_BUF];
	bool notreg;
	int fd = -1, errsv, got;

	lk->priv = NULL;
	held = malloc(sizeof(*held));
	if (held == NULL) {
		fail(err, errlen, "%s", strerror(errno));
		return STORE_LOCK_FAILED;
	}
	snprintf(name, sizeof(name), "%s.lock", id);
	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms);
	for (;;) {
		fd = open_lock(fs, name, &notreg);
		if (fd < 0 && notreg) {
			fail(err, errlen, "%s is not a regular file", name);
			goto bad;
		}
		if (fd < 0) {
			fail(err, errlen, "open %s: %s", name, strerror(errno));
			goto bad;
		}
		got = flock_until(fd, timeout_ms >= 0 ? &deadline : NULL);
		if (got > 0) {
			fail(err, errlen, STORE_BUSY_WHY);
			ret = STORE_LOCK_BUSY;
			goto bad;
		}
		if (got < 0) {
			fail(err, errlen, "flock %s: %s", name, strerror(errno));
			goto bad;
		}
		/* A reaper may have unlinked the file between our open and flock. */
		if (still_named(fs, fd, name))
			break;
		close(fd);
	}
	held->fd = fd;
	snprintf(held->id, sizeof(held->id), "%s", id);
	lk->priv = held;
	reap_locked(fs, id, false);
	return STORE_LOCKED;
bad:
	errsv = errno;
	fd_close(&fd);
	free(held);
	errno = errsv;
	return ret;
}

/* A session that is gone (reset, reaped, never saved) loses its lock file
 * too, while the flock still keeps lockers off it. */
static void fs_unlock(struct store *s, struct store_lock *lk)
{
	struct fs_lock *held = lk->priv;

	if (held) {
		unlock_and_tidy(s->priv, held->id, held->fd);
		free(held);
	}
	lk->priv = NULL;
}

static void fs_close(struct store *s)
{
	struct fstore *fs = s->priv;

	fd_close(&fs->gcfd);
	close(fs->dirfd);
	free(fs);
}

/* Units: objects.h, in DIR/objects. */
static int fs_obj_dir(struct store *s, char *buf, size_t len, char *err, size_t errlen)
{
	return objects_dir(((struct fstore *)s->priv)->dirfd, buf, len, err, errlen);
}

static int fs_obj_has(struct store *s, const uint8_t *hash, bool *has, char *err,
                      size_t errlen)
{
	return objects_has(((struct fstore *)s->priv)->dirfd, hash, has, err, errlen);
}

static int fs_obj_put(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
                      char *err, size_t errlen)
{
	return objects_put(((struct fstore *)s->priv)->dirfd, hash, p, n, OBJECTS_DURABLE, err,
	                   errlen);
}

static int fs_obj_adopt(struct store *s, const char *id, const uint8_t *hash, char *err,
                        size_t errlen)
{
	char name[NAME_BUF];

	snprintf(name, sizeof(name), "%s.pkl", id);
	return objects_adopt(((struct fstore *)s->priv)->dirfd, name, hash, err, errlen);
}

static int fs_obj_read(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
                       bool *found, char *err, size_t errlen)
{
	return objects_read(((struct fstore *)s->priv)->dirfd, hash, p, n, found, err, errlen);
}

static int fs_obj_del(struct store *s, const uint8_t *hash, char *err, size_t errlen)
{
	return objects_del(((struct fstore *)s->priv)->dirfd, hash, err, errlen);
}

static int fs_obj_list(struct store *s, uint8_t **hashes, size_t *n, char *err,
                       size_t errlen)
{
	return objects_list(((struct fstore *)s->priv)->dirfd, hashes, n, err, errlen);
}

static int fs_obj_lock(struct store *s, enum store_gc_lock how, char *err, size_t errlen)
{
	struct fstore *fs = s->priv;
	int op = how == STORE_GC_SHARED ? LOCK_SH : how == STORE_GC_EXCLUSIVE ? LOCK_EX : LOCK_UN;

	return objects_lock(fs->dirfd, &fs->gcfd, op, err, errlen);
}

static int fs_obj_defer(struct store *s, const uint8_t *cands, size_t n)
{
	return pending_defer(((struct fstore *)s->priv)->dirfd, cands, n);
}

static int fs_obj_pending(struct store *s, uint8_t **hashes, size_t *n, char *err,
                          size_t errlen)
{
	return pending_take(((struct fstore *)s->priv)->dirfd, hashes, n, err, errlen);
}

static void fs_obj_collected(struct store *s, size_t heads, double seconds)
{
	pending_done(((struct fstore *)s->priv)->dirfd, heads, seconds);
}

static const struct store_ops fstore_ops = {
	.load = fs_load,
	.save = fs_save,
	.origin = fs_origin,
	.open_blob = fs_open_blob,
	.save_begin = fs_save_begin,
	.save_commit = fs_save_commit,
	.save_abort = fs_save_abort,
	.del = fs_del,
	.sweep = fs_sweep,
	.list = fs_list,
	.lock = fs_lock,
	.unlock = fs_unlock,
	.close = fs_close,
	.obj_dir = fs_obj_dir,
	.obj_has = fs_obj_has,
	.obj_put = fs_obj_put,
	.obj_read = fs_obj_read,
	.obj_del = fs_obj_del,
	.obj_list = fs_obj_list,
	.obj_lock = fs_obj_lock,
	.obj_adopt = fs_obj_adopt,
	.obj_defer = fs_obj_defer,
	.obj_pending = fs_obj_pending,
	.obj_collected = fs_obj_collected,
};

/* Explain why opening path as our directory failed with errno. */
static int open_dir_fail(int atfd, const char *path, const char *shown,
                         char *err, size_t errlen)
{
	struct stat st;
	int errsv = errno;

	if (errsv == ENOTDIR || errsv == ELOOP) {
		if (fstatat(atfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode)) {
			errno = ELOOP;
			return fail(err, errlen, "refusing session directory '%s': it is a "
			            "symbolic link", shown);
		}
		errno = ENOTDIR;
		return fail(err, errlen, "refusing session directory '%s': not a directory",
		            shown);
	}
	return fail(err, errlen, "cannot open session directory '%s': %s", shown,
	            strerror(errsv));
}

/* Open path (relative to atfd) and check it is ours and that nobody else
 * can write in it; -1 and err. */
static int open_private_dir(int atfd, const char *path, const char *shown,
                            char *err, size_t errlen)
{
	struct stat st;
	int fd;

	fd = openat(atfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return open_dir_fail(atfd, path, shown, err, errlen);
	if (fstat(fd, &st) < 0) {
		fail(err, errlen, "cannot open session directory '%s': fstat: %s", shown,
		     strerror(errno));
		goto bad;
	}
	errno = EPERM;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		fail(err, errlen, "refusing session directory '%s': not a directory", shown);
	} else if (st.st_uid != geteuid()) {
		fail(err, errlen, "refusing session directory '%s': owned by uid %u, not %u",
		     shown, (unsigned)st.st_uid, (unsigned)geteuid());
	} else if (st.st_mode & 022) {
		fail(err, errlen, "refusing session directory '%s': mode %04o lets group "
		     "or others write in it, need 0700 or 0755", shown,
		     (unsigned)(st.st_mode & 07777));
	} else {
		return fd;
	}
bad:
	fd_close(&fd);
	return -1;
}

/* mkdir that accepts an existing directory. */
static int mkdir_ok(const char *path)
{
	struct stat st;
	int errsv;

	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return 0;
	errsv = errno;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	errno = errsv;
	return -1;
}

/* mkdir -p; our new directories get 0700.  On failure path ends at the culprit. */
static int mkdir_parents(char *path)
{
	char *p;

	for (p = path + 1; *p != '\0'; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		if (mkdir_ok(path) < 0)
			return -1;
		*p = '/';
	}
	return mkdir_ok(path);
}

static int open_given_dir(const char *dir, char *err, size_t errlen)
{
	char shown[PATH_SHOW_MAX + 8], *path;
	int fd = -1, errsv;
	size_t len;

	path_show(dir, shown, sizeof(shown));
	path = strdup(dir);
	if (path == NULL)
		return fail(err, errlen, "cannot open session directory '%s': %s", shown,
		            strerror(errno));
	/* A trailing slash makes O_NOFOLLOW follow a symlink: drop it. */
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	if (mkdir_parents(path) < 0) {
		char culprit[PATH_SHOW_MAX + 8];

		fail(err, errlen, "cannot create session directory '%s': mkdir %s: %s",
		     shown, path_show(path, culprit, sizeof(culprit)),
		     strerror(errno));
		goto out;
	}
	fd = open_private_dir(AT_FDCWD, path, shown, err, errlen);
out:
	errsv = errno;
	free(path);
	errno = errsv;
	return fd;
}

void store_file_path(const char *dir, char *buf, size_t len)
{
	if (dir) {
		snprintf(buf, len, "%s", dir);
		return;
	}
	if (user_dir_path(buf, len) == 0)
		snprintf(buf + strlen(buf), len - strlen(buf), "/sessions");
}

/* The user's directory (user_dir.h)/sessions; both levels made 0700 and
 * checked. */
static int open_default_dir(char *err, size_t errlen)
{
	char shown[PATH_SHOW_MAX + 8], top[PATH_MAX], sub[PATH_MAX + 16];
	int topfd = -1, fd = -1, errsv;
	bool fits = user_dir_path(top, sizeof(top)) == 0;

	snprintf(sub, sizeof(sub), "%s/sessions", top);
	path_show(top, shown, sizeof(shown));
	if (!fits) {   /* what mkdir would say of it */
		fail(err, errlen, "cannot create session directory '%s': %s", shown,
		     strerror(errno));
		goto out;
	}
	if (mkdir(top, 0700) < 0 && errno != EEXIST) {
		fail(err, errlen, "cannot create session directory '%s': %s", shown,
		     strerror(errno));
		goto out;
	}
	topfd = open_private_dir(AT_FDCWD, top, shown, err, errlen);
	if (topfd < 0)
		goto out;
	path_show(sub, shown, sizeof(shown));
	if (mkdirat(topfd, "sessions", 0700) < 0 && errno != EEXIST) {
		fail(err, errlen, "cannot create session directory '%s': %s", shown,
		     strerror(errno));
		goto out;
	}
	fd = open_private_dir(topfd, "sessions", shown, err, errlen);
out:
	errsv = errno;
	if (topfd >= 0)
		close(topfd);
	errno = errsv;
	return fd;
}

/*
 * See store.h.  dir is created (with missing parents) when absent; the
 * returned store owns one directory fd until store_close().
 */
struct store *store_file_open(const char *dir, double ttl_days, char *err,
                              size_t errlen)
{
	struct fstore *fs;
	int fd;

	if (!(ttl_days >= 0)) {
		errno = EINVAL;
		fail(err, errlen, "invalid session ttl %g: must be 0 (never expire) or more",
		     ttl_days);
		return NULL;
	}
	fd = dir != NULL ? open_given_dir(dir, err, errlen) : open_default_dir(err, errlen);
	if (fd < 0)
		return NULL;
	fs = calloc(1, sizeof(*fs));
	if (fs == NULL) {
		fail(err, errlen, "cannot open session store: %s", strerror(errno));
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	fs->s.ops = &fstore_ops;
	fs->s.priv = fs;
	fs->dirfd = fd;
	fs->gcfd = -1;
	fs->s.home = fd;
	fs->ttl = ttl_days * 86400.0;
	return &fs->s;
}
