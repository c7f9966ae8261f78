/*
 * fdio.h - whole writes to a file descriptor.
 */
#ifndef DOLSOT_FDIO_H
#define DOLSOT_FDIO_H

#include <stddef.h>

/*
 * Write p[0..n) to fd, retrying short writes and EINTR.  Returns 0, or -1
 * with errno set (EIO when write() made no progress).
 */
int fd_write_all(int fd, const void *p, size_t n);

#endif
