/*
 * display_files.c - write a result's PNG displays as files for the text
 * contract (display_files.h).
 *
 * MUST: the directory is opened with O_NOFOLLOW|O_DIRECTORY and checked
 * through that fd (ours, no group or other access); every file is made
 * relative to it with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600.
 */
#include "display_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "output_json.h"

int display_dir(const char *cache_dir, const char *session, char *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	if (cache_dir && *cache_dir)
		n = snprintf(buf, len, "%s/output/%s", cache_dir, session);
	else
		n = snprintf(buf, len, "%s/dolsot-%u/output/%s",
		             tmp && *tmp ? tmp : "/tmp", (unsigned)geteuid(), session);
	return n < 0 || (size_t)n >= len ? -1 : 0;
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

long base64_decode(const uint8_t *in, size_t n, uint8_t *out)
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

static int open_dir(const char *dir, char *err, size_t errlen)
{
	char *path = strdup(dir);
	struct stat st;
	int fd = -1;

	if (!path || make_dirs(path) < 0) {
		snprintf(err, errlen, "cannot create the output directory '%s': %s", dir,
		         strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot open the output directory '%s': %s", dir,
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen, "the output directory '%s' is not private to this user "
		         "(want owner uid %u, mode 0700)", dir, (unsigned)geteuid());
		close(fd);
		return -1;
	}
	return fd;
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
	n = base64_decode(d->data[i].p, d->data[i].len, png);
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
	int dirfd = -1, rc = 0;

	while (rc == 0 && displays_next(&rest, &d) > 0) {
		for (size_t i = 0; i < d.n; i++) {
			if (d.mime[i].len != 9 || memcmp(d.mime[i].p, "image/png", 9) != 0)
				continue;
			if (dirfd < 0 && (dirfd = open_dir(dir, err, errlen)) < 0)
				return -1;
			rc = write_png(dirfd, dir, r, ++k, &d, i, err, errlen);
			break;
		}
	}
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}
