/*
 * store.c - the store door: the factory that opens a store of a kind,
 * and sessions as file descriptors for any store.
 *
 * The worker reads the session from an fd and writes the new one into
 * another, so the client never copies a session through its own memory.
 * A store that keeps files (store_file.c) hands out its session file and
 * its temp file.  Any other store (memory, remote), and any save whose
 * writer runs under RLIMIT_FSIZE, goes through a memfd: loaded bytes are
 * written into one, and a saved memfd is mapped and passed to ops->save.
 */
#include "store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "mem_client.h"
#include "store_file.h"

struct store *store_open(enum store_kind kind, const char *dir, double ttl_days,
                         char *err)
{
	struct store *st = store_file_open(dir, ttl_days, err);

	switch (kind) {
	case STORE_KIND_MEMORY:
		/* The directory still hosts the server's socket; the sessions
		 * themselves live in the server. */
		return st ? mem_client_open(st, err) : NULL;
	case STORE_KIND_FILE:
	default:
		return st;
	}
}

/* The bytes of a store without fds, in a memfd. */
static int memfd_blob(struct store *s, const char *id, int *fd, size_t *len,
                      bool *found, char *err)
{
	uint8_t *blob = NULL;
	int errsv;

	if (s->ops->load(s, id, &blob, len, found, err) < 0)
		return -1;
	if (!*found) {
		free(blob);
		return 0;
	}
	*fd = memfd_create("dolsot-session", MFD_CLOEXEC);
	if (*fd < 0 || fd_write_all(*fd, blob, *len) < 0) {
		errsv = errno;
		snprintf(err, STORE_ERR_MAX, "cannot load session '%s': %s: %s", id,
		         *fd < 0 ? "memfd_create" : "write", strerror(errsv));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		*found = false;
		free(blob);
		errno = errsv;
		return -1;
	}
	free(blob);
	return 0;
}

int store_open_blob(struct store *s, const char *id, int *fd, size_t *len,
                    bool *found, char *err)
{
	*fd = -1;
	*len = 0;
	*found = false;
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	if (s->ops->open_blob)
		return s->ops->open_blob(s, id, fd, len, found, err);
	return memfd_blob(s, id, fd, len, found, err);
}

int store_save_begin(struct store *s, const char *id, bool memfd,
                     struct store_save *sv, char *err)
{
	memset(sv, 0, sizeof(*sv));
	sv->fd = -1;
	if (!store_id_valid(id, err, STORE_ERR_MAX))
		return -1;
	snprintf(sv->id, sizeof(sv->id), "%s", id);
	/* A store that cannot begin one (its disk is full) still gets the
	 * memfd, and says why when the bytes reach its save. */
	if (!memfd && s->ops->save_begin && s->ops->save_begin(s, sv, err) == 0)
		return 0;
	sv->memfd = true;
	sv->tmp[0] = '\0';
	sv->fd = memfd_create("dolsot-save", MFD_CLOEXEC);
	if (sv->fd < 0) {
		int errsv = errno;

		snprintf(err, STORE_ERR_MAX, "cannot save session '%s': memfd_create: %s",
		         id, strerror(errsv));
		errno = errsv;
		return -1;
	}
	return 0;
}

/* Map the memfd's len bytes and hand them to the store's save. */
static int commit_memfd(struct store *s, struct store_save *sv, size_t len, char *err)
{
	struct stat st;
	void *p = NULL;
	int ret, errsv;

	if (fstat(sv->fd, &st) < 0)
		return store_save_fail(s, sv, "fstat", errno, err);
	if ((uint64_t)st.st_size != (uint64_t)len)
		return store_save_fail(s, sv, "write", EIO, err);
	if (len) {
		p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, sv->fd, 0);
		if (p == MAP_FAILED)
			return store_save_fail(s, sv, "mmap", errno, err);
	}
	ret = s->ops->save(s, sv->id, p ? p : (const uint8_t *)"", len, err);
	errsv = errno;
	if (p)
		munmap(p, len);
	store_save_abort(s, sv);
	errno = errsv;
	return ret;
}

int store_save_commit(struct store *s, struct store_save *sv, size_t len, char *err)
{
	if (sv->memfd)
		return commit_memfd(s, sv, len, err);
	return s->ops->save_commit(s, sv, len, err);
}

void store_save_abort(struct store *s, struct store_save *sv)
{
	int errsv = errno;

	if (!sv->memfd && s->ops->save_abort) {
		s->ops->save_abort(s, sv);
	} else if (sv->fd >= 0) {
		close(sv->fd);
	}
	sv->fd = -1;
	errno = errsv;
}

int store_save_fail(struct store *s, struct store_save *sv, const char *op,
                    int errnum, char *err)
{
	store_save_abort(s, sv);
	snprintf(err, STORE_ERR_MAX, "cannot save session '%s': %s: %s", sv->id, op,
	         strerror(errnum));
	errno = errnum;
	return -1;
}
