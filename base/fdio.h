/*
 * fdio.h - whole reads and writes on a file descriptor, closing one
 * without losing errno, and what its seals say.  The one home of these.
 */
#ifndef DOLSOT_FDIO_H
#define DOLSOT_FDIO_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Write p[0..n) to fd, retrying short writes and EINTR.  Returns 0, or -1
 * with errno set (EIO when write() made no progress).
 */
int fd_write_all(int fd, const void *p, size_t n);

/* Write p[0..n) at offset off of fd (pwrite: fd's offset stays), retrying
 * short writes and EINTR.  Returns 0, or -1 with errno set (EIO when
 * pwrite() made no progress). */
int fd_pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/*
 * Exactly n bytes at offset off of fd into p (pread: fd's offset stays),
 * retrying short reads and EINTR.  Returns 0, or -1 with errno set:
 * ENODATA when the file ends first, EOVERFLOW when off + n does not fit.
 */
int fd_pread_exact(int fd, void *p, size_t n, uint64_t off);

/*
 * Read fd to EOF into a malloc'd *out (caller frees), *len bytes; hint is
 * the expected size.  Returns 0, or -1 with errno set and nothing
 * allocated.
 */
int fd_read_all(int fd, size_t hint, uint8_t **out, size_t *len);

/* Close *fd unless it is -1, then set it to -1; errno is kept, so this
 * fits on an error path. */
/*
 * The last n of fd's first *len bytes (n <= *len) into *out (malloc'd;
 * NULL when n is 0), then fd cut before them and *len less n: a record
 * stored after a file's payload, taken off it.  0, or -1 with errno and
 * *what the step that failed ("malloc", "read", "ftruncate"), *out NULL.
 */
int fd_take_tail(int fd, size_t *len, size_t n, uint8_t **out, const char **what);

void fd_close(int *fd);

/*
 * Make fd's content p[0..n) (n > 0): cut to n bytes, then stored through a
 * shared mapping, not write(): under RLIMIT_FSIZE a file sized beforehand
 * takes stores into a mapping and shrinking, but no write past the limit
 * (the worker's result file).  Returns 0, or -1 with errno set.
 */
int fd_replace_mapped(int fd, const void *p, size_t n);

/*
 * The directory path names below dirfd ("." for dirfd itself), open for
 * readdir on a file description of its own, so its offset is private;
 * flags add to O_RDONLY | O_DIRECTORY | O_CLOEXEC (O_NOFOLLOW, say).
 * Returns NULL with errno set and nothing left open; closedir ends it.
 */
DIR *fd_opendir_at(int dirfd, const char *path, int flags);

/*
 * True when fd is sealed against growing (F_SEAL_GROW): a save memfd that
 * store_save_begin sized to the session's bound beforehand.  Its writer
 * shrinks it to what it writes rather than appending to it.
 */
bool fd_grow_sealed(int fd);

#endif
