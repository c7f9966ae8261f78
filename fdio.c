/*
 * fdio.c - whole writes to a file descriptor.
 */
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

int fd_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

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
	}
	return 0;
}

bool fd_grow_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & F_SEAL_GROW);
}
