/*
 * pending.c - units dropped by commits, collected in batches in a large
 * FileStore (pending.h).
 *
 * DIR/objects/.pending: records of PENDING_REC bytes, a unit's hash and
 * its size (8 bytes little-endian), appended by committers (O_APPEND, one
 * write per commit, under the shared units lock) and emptied by the
 * collector (under the exclusive one, so no append races it).
 * DIR/objects/.collected: "HEADS MICROSECONDS\n", rewritten by each
 * collection; its mtime is when.
 */
#include "pending.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "le.h"
#include "objects.h"

#define PENDING_FILE ".pending"
#define COLLECTED_FILE ".collected"
#define HASH_LEN 32
#define PENDING_REC (HASH_LEN + 8)
#define PAUSE_PER_COST 100.0    /* a pause of 100 times the last collection's
                                 * length keeps collecting under 1% of a busy
                                 * store's time */

/* The last collection: when (realtime), how many heads, how long. */
struct collected {
	struct timespec when;
	unsigned long long heads, micros;
};

static int objects_fd(int dirfd)
{
	bool made;

	return objects_own_dir(dirfd, OBJECTS_DIR, false, &made);
}

static bool read_collected(int objfd, struct collected *c)
{
	char text[64];
	struct stat st;
	ssize_t n;
	int fd = openat(objfd, COLLECTED_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof(text) - 1) : -1;
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	ok = sscanf(text, "%llu %llu", &c->heads, &c->micros) == 2;
	c->when = st.st_mtim;
	return ok;
}

/* Whether the last collection was of a large store and recent enough
 * that the next may wait. */
static bool may_wait(int objfd)
{
	struct collected c;
	struct timespec now;
	double ago, pause;

	if (!read_collected(objfd, &c) || c.heads < PENDING_HEADS_MIN ||
	    clock_gettime(CLOCK_REALTIME, &now) < 0)
		return false;
	ago = (double)(now.tv_sec - c.when.tv_sec) + (double)(now.tv_nsec - c.when.tv_nsec) / 1e9;
	pause = PAUSE_PER_COST * (double)c.micros / 1e6;
	if (pause > PENDING_PAUSE_MAX)
		pause = PENDING_PAUSE_MAX;
	return ago >= 0 && ago < pause;
}

/* The records waiting in fd: their count and bytes. */
static bool waiting(int fd, size_t *units, uint64_t *bytes)
{
	uint8_t *all = NULL;
	size_t len = 0;

	if (fd_read_all(fd, 0, &all, &len) < 0)
		return false;
	*units = len / PENDING_REC;
	*bytes = 0;
	for (size_t i = 0; i < *units; i++)
		*bytes += le_get_u64(all + i * PENDING_REC + HASH_LEN);
	free(all);
	return true;
}

int pending_defer(int dirfd, const uint8_t *cands, size_t n)
{
	int objfd = objects_fd(dirfd), fd = -1, deferred = 0;
	uint8_t *recs = NULL;
	uint64_t bytes = 0, more = 0;
	size_t units = 0;

	if (objfd < 0 || !n || !may_wait(objfd))
		goto out;
	fd = openat(objfd, PENDING_FILE,
	            O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	recs = malloc(n * PENDING_REC);
	if (fd < 0 || !recs || !waiting(fd, &units, &bytes))
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t size = objects_size(dirfd, cands + i * HASH_LEN);

		memcpy(recs + i * PENDING_REC, cands + i * HASH_LEN, HASH_LEN);
		le_put_u64(recs + i * PENDING_REC + HASH_LEN, size);
		more += size;
	}
	if (units + n > PENDING_MAX_UNITS || bytes + more > PENDING_MAX_BYTES)
		goto out;
	deferred = fd_write_all(fd, recs, n * PENDING_REC) == 0;
out:
	free(recs);
	if (fd >= 0)
		close(fd);
	if (objfd >= 0)
		close(objfd);
	return deferred;
}

int pending_take(int dirfd, uint8_t **hashes, size_t *n, char *err, size_t errlen)
{
	int objfd = objects_fd(dirfd), fd = -1, errsv;
	uint8_t *all = NULL;
	size_t len = 0;

	*hashes = NULL;
	*n = 0;
	if (objfd < 0)
		return errno == ENOENT ? 0 : -1;
	fd = openat(objfd, PENDING_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(objfd);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fd_read_all(fd, 0, &all, &len) < 0) {
		errsv = errno;
		snprintf(err, errlen, "cannot read %s/%s: %s", OBJECTS_DIR, PENDING_FILE,
		         strerror(errsv));
		if (fd >= 0)
			close(fd);
		errno = errsv;
		return -1;
	}
	close(fd);
	*n = len / PENDING_REC;
	for (size_t i = 0; i < *n; i++)   /* the hashes, packed in place */
		memmove(all + i * HASH_LEN, all + i * PENDING_REC, HASH_LEN);
	*hashes = all;
	return 0;
}

void pending_done(int dirfd, size_t heads, double seconds)
{
	char text[64];
	int objfd = objects_fd(dirfd), fd;
	int len = snprintf(text, sizeof(text), "%zu %llu\n", heads,
	                   (unsigned long long)(seconds * 1e6));

	if (objfd < 0)
		return;
	fd = openat(objfd, PENDING_FILE, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		(void)ftruncate(fd, 0);
		close(fd);
	}
	fd = openat(objfd, COLLECTED_FILE,
	            O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)fd_write_all(fd, text, (size_t)len);
		close(fd);
	}
	close(objfd);
}
