/*
 * fdio.c - whole reads and writes on a file descriptor; closing one
 * without losing errno.
 */
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Write p[0..n) to fd: at its offset (at false), or at off (pwrite). */
static int write_whole(int fd, const void *p, size_t n, bool at, uint64_t off)
{
	const uint8_t *b = p;

	if (at && off > (uint64_t)INT64_MAX - n) {
		errno = EOVERFLOW;
		return -1;
	}
	while (n > 0) {
		ssize_t w = at ? pwrite(fd, b, n, (off_t)off) : write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int fd_write_all(int fd, const void *p, size_t n)
{
	return write_whole(fd, p, n, false, 0);
}

int fd_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	return write_whole(fd, p, n, true, off);
}

int fd_pread_exact(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *b = p;

	if (off > (uint64_t)INT64_MAX - n) {
		errno = EOVERFLOW;
		return -1;
	}
	while (n > 0) {
		ssize_t r = pread(fd, b, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = ENODATA;
			return -1;
		}
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int fd_read_all(int fd, size_t hint, uint8_t **out, size_t *len)
{
	size_t cap = hint + 1, n = 0;
	uint8_t *buf, *nb;
	ssize_t r;

	buf = malloc(cap);
	if (buf == NULL)
		return -1;
	for (;;) {
		if (n == cap) {
			nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int errsv = errno;

			free(buf);
			errno = errsv;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

DIR *fd_opendir_at(int dirfd, const char *path, int flags)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d)
		fd_close(&fd);
	return d;
}

int fd_take_tail(int fd, size_t *len, size_t n, uint8_t **out, const char **what)
{
	int errsv;

	*out = NULL;
	if (!n)
		return 0;
	*what = "malloc";
	*out = malloc(n);
	if (!*out)
		return -1;
	*what = "read";
	if (fd_pread_exact(fd, *out, n, *len - n) < 0)
		goto fail;
	*what = "ftruncate";
	if (ftruncate(fd, (off_t)(*len - n)) < 0)
		goto fail;
	*len -= n;
	return 0;
fail:
	errsv = errno ? errno : EIO;
	free(*out);
	*out = NULL;
	errno = errsv;
	return -1;
}

void fd_close(int *fd)
{
	int errsv = errno;

	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	errno = errsv;
}

bool fd_grow_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & F_SEAL_GROW);
}

int fd_replace_mapped(int fd, const void *p, size_t n)
{
	void *map;

	if (ftruncate(fd, (off_t)n) < 0)
		return -1;
	map = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -1;
	memcpy(map, p, n);
	return munmap(map, n);
}
