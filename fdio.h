/*
 * fdio.h - whole writes to a file descriptor, and what its seals say.
 */
#ifndef DOLSOT_FDIO_H
#define DOLSOT_FDIO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Write p[0..n) to fd, retrying short writes and EINTR.  Returns 0, or -1
 * with errno set (EIO when write() made no progress).
 */
int fd_write_all(int fd, const void *p, size_t n);

/*
 * True when fd is sealed against growing (F_SEAL_GROW): a save memfd that
 * store_save_begin sized to the session's bound beforehand.  Its writer
 * shrinks it to what it writes rather than appending to it.
 */
bool fd_grow_sealed(int fd);

#endif
