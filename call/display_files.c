/*
 * display_files.c - write a result's PNG displays as files for the text
 * contract (display_files.h).
 *
 * MUST: a directory (the output root, a session's directory) is opened
 * with O_NOFOLLOW|O_DIRECTORY and checked through that fd (ours, no group
 * or other access) before anything in it is made, read or removed; every
 * file is made, listed and removed relative to that fd (openat, fstatat,
 * unlinkat), a new one with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600.
 * MUST: only names this file makes (cell-N-K.png, cell-N-K-A.png) are
 * removed, and a session's directory only when that leaves it empty.
 */
#include "display_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "output_json.h"
#include "user_dir.h"

#define REMOVE_ERR_MAX 1024

int display_root(const char *cache_dir, char *buf, size_t len)
{
	char user[PATH_MAX];
	const char *base = cache_dir;
	int n;

	if (!base || !*base) {
		if (user_dir_path(user, sizeof(user)) < 0)
			return -1;
		base = user;
	}
	n = snprintf(buf, len, "%s/output", base);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int display_dir(const char *cache_dir, const char *session, char *buf, size_t len)
{
	size_t n;

	if (display_root(cache_dir, buf, len) < 0)
		return -1;
	n = strlen(buf);
	return snprintf(buf + n, len - n, "/%s", session) >= (int)(len - n) ? -1 : 0;
}

static int b64_value(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long display_files_base64_decode(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t o = 0;

	if (n % 4 || n / 4 * 3 > (size_t)LONG_MAX)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		bool last = i + 4 == n;

		for (int k = 0; k < 4; k++) {
			if (last && k >= 2 && in[i + k] == '=' && (k == 3 || in[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			v[k] = b64_value(in[i + k]);
			if (v[k] < 0)
				return -1;
		}
		out[o++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[o++] = (uint8_t)(v[1] << 4 | v[2] >> 2);
		if (pad < 1)
			out[o++] = (uint8_t)(v[2] << 6 | v[3]);
	}
	return (long)o;
}

/* mkdir -p for the directories above and at path, each 0700. */
static int make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* fd is a directory of ours with no group or other access; else err says
 * why path is refused (errno EPERM). */
static int check_private(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot check the output directory '%s': %s", path,
		         strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen, "the output directory '%s' is not private to this user "
		         "(want owner uid %u, mode 0700)", path, (unsigned)geteuid());
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* Open a directory (at dirfd, or by path with AT_FDCWD) and check it. */
static int open_private(int dirfd, const char *name, const char *path, char *err,
                        size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int errsv = errno;
		struct stat st;
		/* With O_DIRECTORY a symbolic link fails as ENOTDIR: say which. */
		bool link = errno == ELOOP ||
		            (errno == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		             S_ISLNK(st.st_mode));

		snprintf(err, errlen, "cannot open the output directory '%s': %s", path,
		         link ? "it is a symbolic link" : strerror(errsv));
		errno = errsv;
		return -1;
	}
	if (check_private(fd, path, err, errlen) < 0) {
		fd_close(&fd);
		return -1;
	}
	return fd;
}

static int open_dir(const char *dir, char *err, size_t errlen)
{
	char *path = strdup(dir);

	if (!path || make_dirs(path) < 0) {
		snprintf(err, errlen, "cannot create the output directory '%s': %s", dir,
		         strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	return open_private(AT_FDCWD, dir, dir, err, errlen);
}

/* One of our images in a session's directory. */
struct image {
	struct timespec mtime;
	unsigned long long key[3];      /* cell, display, attempt */
	char name[96];
};

/* A name create_file makes: cell-N-K.png or cell-N-K-A.png; its numbers
 * into key. */
static bool image_name(const char *name, unsigned long long key[3])
{
	const char *p = name;
	char *end;

	if (strncmp(p, "cell-", 5) != 0 || strlen(name) >= sizeof(((struct image *)0)->name))
		return false;
	p += 5;
	key[2] = 0;
	for (int i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return false;
		errno = 0;
		key[i] = strtoull(p, &end, 10);
		if (errno)
			return false;
		p = end;
		if (strcmp(p, ".png") == 0)
			return i >= 1;
		if (*p++ != '-' || i == 2)
			return false;
	}
	return false;
}

/* Oldest first: by time written, then by cell, display and attempt. */
static int image_cmp(const void *pa, const void *pb)
{
	const struct image *a = pa, *b = pb;

	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	for (int i = 0; i < 3; i++)
		if (a->key[i] != b->key[i])
			return a->key[i] < b->key[i] ? -1 : 1;
	return 0;
}

/* Our images in the checked directory dirfd, oldest first; *out is
 * malloc'd (caller frees).  Returns 0, or -1 with errno set. */
static int list_images(int dirfd, struct image **out, size_t *n)
{
	DIR *d = fd_opendir_at(dirfd, ".", 0);
	struct image *v = NULL;
	size_t alloc = 0;
	const struct dirent *e;
	int errsv = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -1;
	for (errno = 0; (e = readdir(d)); errno = 0) {
		struct image im;
		struct stat st;

		if (!image_name(e->d_name, im.key))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			break;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (*n == alloc) {
			struct image *grown = realloc(v, (alloc ? alloc * 2 : 16) * sizeof(*v));

			if (!grown)
				break;
			v = grown;
			alloc = alloc ? alloc * 2 : 16;
		}
		im.mtime = st.st_mtim;
		memcpy(im.name, e->d_name, strlen(e->d_name) + 1);   /* image_name bounds it */
		v[(*n)++] = im;
	}
	errsv = errno;
	closedir(d);
	if (errsv) {
		free(v);
		*n = 0;
		errno = errsv;
		return -1;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), image_cmp);
	*out = v;
	return 0;
}

/* Remove the oldest of our images past keep; *removed counts them. */
static int prune_images(int dirfd, size_t keep, unsigned *removed)
{
	struct image *v;
	size_t n;
	int rc = 0;

	if (list_images(dirfd, &v, &n) < 0)
		return -1;
	for (size_t i = 0; n > keep && i < n - keep; i++) {
		if (unlinkat(dirfd, v[i].name, 0) == 0)
			++*removed;
		else if (errno != ENOENT)
			rc = -1;
	}
	free(v);
	return rc;
}

/* A new file under dirfd for display k; its name into name. */
static int create_file(int dirfd, const struct result *r, size_t k, char *name,
                       size_t len)
{
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		int fd;

		if (attempt == 0)
			snprintf(name, len, "cell-%llu-%zu.png", (unsigned long long)r->count, k);
		else
			snprintf(name, len, "cell-%llu-%zu-%u.png", (unsigned long long)r->count, k,
			         attempt);
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

static int write_png(int dirfd, const char *dir, struct result *r, size_t k,
                     const struct display_view *d, size_t i, char *err, size_t errlen)
{
	uint8_t *png = malloc(d->data[i].len / 4 * 3 + 1);
	struct shown_file *grown;
	char name[96];
	long n;
	int fd = -1, rc = -1;

	if (!png) {
		snprintf(err, errlen, "cannot write a figure: %s", strerror(errno));
		return -1;
	}
	n = display_files_base64_decode(d->data[i].p, d->data[i].len, png);
	if (n < 0) {
		snprintf(err, errlen, "a figure's image is not valid base64: not written");
		goto out;
	}
	fd = create_file(dirfd, r, k, name, sizeof(name));
	if (fd < 0 || fd_write_all(fd, png, (size_t)n) < 0) {
		snprintf(err, errlen, "cannot write a figure under '%s': %s", dir,
		         strerror(errno));
		if (fd >= 0)
			unlinkat(dirfd, name, 0);
		goto out;
	}
	grown = realloc(r->files, (r->n_files + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(err, errlen, "cannot write a figure: %s", strerror(ENOMEM));
		goto out;
	}
	r->files = grown;
	if (asprintf(&r->files[r->n_files].path, "%s/%s", dir, name) < 0) {
		snprintf(err, errlen, "cannot write a figure: %s", strerror(ENOMEM));
		goto out;
	}
	r->files[r->n_files].width = d->width;
	r->files[r->n_files].height = d->height;
	r->n_files++;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(png);
	return rc;
}

int display_files_write(struct result *r, const char *dir, char *err, size_t errlen)
{
	struct span rest = { (const uint8_t *)r->displays.p, r->displays.len,
	                     r->displays.p != NULL };
	struct display_view d;
	size_t k = 0;
	unsigned pruned = 0;
	int dirfd = -1, rc = 0;

	while (rc == 0 && output_json_displays_next(&rest, &d) > 0) {
		for (size_t i = 0; i < d.n; i++) {
			if (d.mime[i].len != 9 || memcmp(d.mime[i].p, "image/png", 9) != 0)
				continue;
			if (dirfd < 0 && (dirfd = open_dir(dir, err, errlen)) < 0)
				return -1;
			rc = write_png(dirfd, dir, r, ++k, &d, i, err, errlen);
			break;
		}
	}
	/* The session keeps its newest images only; this call's are newest
	 * (and all kept, however many). */
	if (dirfd >= 0 && prune_images(dirfd, k > DISPLAY_FILES_KEEP ? k : DISPLAY_FILES_KEEP,
	                               &pruned) < 0 && rc == 0) {
		snprintf(err, errlen, "cannot remove older images under '%s': %s", dir,
		         strerror(errno));
		rc = -1;
	}
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

/* Seconds since ts, or -1 when the clock cannot say. */
static double age_of(const struct timespec *ts)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return -1;
	return (double)(now.tv_sec - ts->tv_sec) + (double)(now.tv_nsec - ts->tv_nsec) / 1e9;
}

/* The root, checked, or -1; *absent when there is none (not an error). */
static int open_root(const char *root, bool *absent, char *err, size_t errlen)
{
	int fd;

	*absent = false;
	fd = open_private(AT_FDCWD, root, root, err, errlen);
	if (fd < 0 && errno == ENOENT)
		*absent = true;
	return fd;
}

/* Empty session id's directory of our images and remove it (unless
 * something else is in it, which stays). */
static int remove_session(int rootfd, const char *root, const char *id, double older_than,
                          unsigned *removed, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct image *v = NULL;
	struct stat st;
	size_t n = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", root, id);
	fd = open_private(rootfd, id, path, err, errlen);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (older_than > 0 && (fstat(fd, &st) < 0 || age_of(&st.st_mtim) < older_than))
		goto out;
	if (list_images(fd, &v, &n) < 0) {
		snprintf(err, errlen, "cannot list the output directory '%s': %s", path,
		         strerror(errno));
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (unlinkat(fd, v[i].name, 0) == 0) {
			++*removed;
		} else if (errno != ENOENT) {
			snprintf(err, errlen, "cannot remove '%s/%s': %s", path, v[i].name,
			         strerror(errno));
			rc = -1;
			goto out;
		}
	}
	if (unlinkat(rootfd, id, AT_REMOVEDIR) < 0 && errno != ENOENT && errno != ENOTEMPTY &&
	    errno != EEXIST) {
		snprintf(err, errlen, "cannot remove the output directory '%s': %s", path,
		         strerror(errno));
		rc = -1;
	}
out:
	free(v);
	fd_close(&fd);
	return rc;
}

/* Call fn for each entry of the checked root that names a session. */
static int each_session(int rootfd, int (*fn)(int rootfd, const char *id, void *arg),
                        void *arg)
{
	DIR *d = fd_opendir_at(rootfd, ".", 0);
	const struct dirent *e;
	char why[8];
	int rc = 0, errsv;

	if (!d)
		return -1;
	for (errno = 0; (e = readdir(d)); errno = 0)
		if (store_id_valid(e->d_name, why, sizeof(why)) && fn(rootfd, e->d_name, arg) < 0)
			rc = -1;
	errsv = errno;
	closedir(d);
	errno = errsv;
	return errsv ? -1 : rc;
}

struct remove_all {
	const char *root;
	unsigned *removed;
	char *err;
	size_t errlen;
	bool failed;
};

static int remove_one(int rootfd, const char *id, void *arg)
{
	struct remove_all *ra = arg;
	char why[REMOVE_ERR_MAX];

	/* Keep going past a directory that cannot go; report the first. */
	if (remove_session(rootfd, ra->root, id, 0, ra->removed, why, sizeof(why)) == 0)
		return 0;
	if (!ra->failed)
		snprintf(ra->err, ra->errlen, "%s", why);
	ra->failed = true;
	return 0;
}

int display_files_remove(const char *root, const char *target, double older_than,
                         unsigned *removed, char *err, size_t errlen)
{
	struct remove_all ra = { root, removed, err, errlen, false };
	bool absent;
	int rootfd, rc;

	*removed = 0;
	rootfd = open_root(root, &absent, err, errlen);
	if (rootfd < 0)
		return absent ? 0 : -1;
	if (strcmp(target, "all") != 0) {
		rc = remove_session(rootfd, root, target, older_than, removed, err, errlen);
	} else {
		rc = each_session(rootfd, remove_one, &ra);
		if (rc < 0)
			snprintf(err, errlen, "cannot list the output directory '%s': %s", root,
			         strerror(errno));
		else if (ra.failed)
			rc = -1;
	}
	close(rootfd);
	return rc;
}

struct stale {
	double older_than;
	char **ids;
	size_t n;
	bool nomem;
};

static int add_stale(int rootfd, const char *id, void *arg)
{
	struct stale *sl = arg;
	struct stat st;
	char **grown;

	if (fstatat(rootfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    age_of(&st.st_mtim) < sl->older_than)
		return 0;
	grown = realloc(sl->ids, (sl->n + 1) * sizeof(*grown));
	if (!grown || !(grown[sl->n] = strdup(id))) {
		if (grown)
			sl->ids = grown;
		sl->nomem = true;
		return -1;
	}
	sl->ids = grown;
	sl->n++;
	return 0;
}

int display_files_stale(const char *root, double older_than, char ***ids, size_t *n,
                        char *err, size_t errlen)
{
	struct stale sl = { older_than, NULL, 0, false };
	bool absent;
	int rootfd = open_root(root, &absent, err, errlen);
	int rc;

	*ids = NULL;
	*n = 0;
	if (rootfd < 0)
		return absent ? 0 : -1;
	rc = each_session(rootfd, add_stale, &sl);
	if (rc < 0) {
		snprintf(err, errlen, "cannot list the output directory '%s': %s", root,
		         strerror(sl.nomem ? ENOMEM : errno));
		display_files_stale_free(sl.ids, sl.n);
	} else {
		*ids = sl.ids;
		*n = sl.n;
	}
	close(rootfd);
	return rc;
}

void display_files_stale_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}
