/*
 * mem_server.c - the memory store behind DOLSOT_STORE=memory.
 */
#include "mem_server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "mem_list.h"
#include "mem_store.h"
#include "store.h"

#define MAX_LOCKS 1024

struct lock_slot {
	char id[STORE_ID_MAX + 1];
	int fd;                 /* the connection holding or awaiting it */
	bool held;
};

struct mem_server {
	struct store *store;
	struct lock_slot locks[MAX_LOCKS];   /* holders and waiters, FIFO by index */
	size_t n_locks;
};

struct mem_server *mem_server_new(void)
{
	struct mem_server *sm = calloc(1, sizeof(*sm));

	if (!sm)
		return NULL;
	sm->store = mem_store_open();
	if (!sm->store) {
		free(sm);
		return NULL;
	}
	return sm;
}

static void reply_err(int fd, const char *why)
{
	wire_send(fd, WIRE_MEM_ERR, 0, 0, why, strlen(why), NULL, 0);
}

/* bytes into a sealed-off memfd the client can read. */
static int to_memfd(const uint8_t *p, size_t n)
{
	int fd = memfd_create("dolsot-session", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fd_write_all(fd, p, n) < 0)
		fd_close(&fd);
	return fd;
}

static void on_load(struct mem_server *sm, int fd, const char *id)
{
	char err[STORE_ERR_MAX];
	uint8_t *blob = NULL;
	size_t len = 0;
	bool found = false;
	int mfd;

	if (store_load(sm->store, id, &blob, &len, &found, err) < 0) {
		reply_err(fd, err);
		return;
	}
	if (!found) {
		wire_send(fd, WIRE_MEM_BLOB, 0, 0, NULL, 0, NULL, 0);
		return;
	}
	mfd = to_memfd(blob, len);
	free(blob);
	if (mfd < 0) {
		reply_err(fd, "cannot pass the session: memfd_create failed");
		return;
	}
	wire_send(fd, WIRE_MEM_BLOB, 1, 0, NULL, 0, &mfd, 1);
	close(mfd);
}

static void on_save(struct mem_server *sm, int fd, const char *id, struct wire_msg *m)
{
	char err[STORE_ERR_MAX];
	struct stat st;
	void *p = NULL;

	if (m->nfds != 1 || fstat(m->fds[0], &st) < 0) {
		reply_err(fd, "malformed save");
		return;
	}
	if (st.st_size > 0) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, m->fds[0], 0);
		if (p == MAP_FAILED) {
			reply_err(fd, "cannot read the session to save");
			return;
		}
	}
	if (store_save(sm->store, id, p ? p : (const uint8_t *)"", (size_t)st.st_size,
	               m->a != 0, err) < 0)
		reply_err(fd, err);
	else
		wire_send(fd, WIRE_MEM_OK, 0, 0, NULL, 0, NULL, 0);
	if (p)
		munmap(p, (size_t)st.st_size);
}

static void on_list(struct mem_server *sm, int fd)
{
	char err[STORE_ERR_MAX];
	struct session_info *info = NULL;
	size_t n = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int mfd;
	bool ok;

	if (store_list(sm->store, &info, &n, err) < 0) {
		reply_err(fd, err);
		return;
	}
	f = open_memstream(&text, &len);
	ok = f && mem_list_format(f, info, n) == 0;
	if (f && fclose(f) != 0)
		ok = false;
	free(info);
	if (!ok) {
		free(text);
		reply_err(fd, "cannot list sessions: out of memory");
		return;
	}
	mfd = to_memfd((const uint8_t *)text, len);
	free(text);
	if (mfd < 0) {
		reply_err(fd, "cannot pass the list: memfd_create failed");
		return;
	}
	wire_send(fd, WIRE_MEM_BLOB, 1, 0, NULL, 0, &mfd, 1);
	close(mfd);
}

static bool lock_held(const struct mem_server *sm, const char *id)
{
	for (size_t i = 0; i < sm->n_locks; i++)
		if (sm->locks[i].held && strcmp(sm->locks[i].id, id) == 0)
			return true;
	return false;
}

/* Grant each waiter whose session is free, oldest first. */
static void grant_waiters(struct mem_server *sm)
{
	for (size_t i = 0; i < sm->n_locks; i++) {
		struct lock_slot *l = &sm->locks[i];

		if (l->held || lock_held(sm, l->id))
			continue;
		l->held = true;
		wire_send(l->fd, WIRE_MEM_LOCKED, 0, 0, NULL, 0, NULL, 0);
	}
}

static bool on_lock(struct mem_server *sm, int fd, const char *id)
{
	struct lock_slot *l;

	if (sm->n_locks == MAX_LOCKS) {
		reply_err(fd, "too many session locks held or awaited");
		return false;
	}
	l = &sm->locks[sm->n_locks++];
	snprintf(l->id, sizeof(l->id), "%s", id);
	l->fd = fd;
	l->held = false;
	grant_waiters(sm);
	return true;
}

void mem_server_closed(struct mem_server *sm, int fd)
{
	for (size_t i = 0; i < sm->n_locks; i++) {
		if (sm->locks[i].fd != fd)
			continue;
		memmove(&sm->locks[i], &sm->locks[i + 1],
		        (sm->n_locks - i - 1) * sizeof(sm->locks[0]));
		sm->n_locks--;
		break;
	}
	grant_waiters(sm);
}

bool mem_server_handle(struct mem_server *sm, int fd, struct wire_msg *m)
{
	char err[STORE_ERR_MAX];
	size_t pos = 0;
	const char *id = m->type == WIRE_MEM_LIST ? "" : wire_next(m->payload, m->len, "id", &pos);
	unsigned removed = 0;

	if (!id) {
		reply_err(fd, "missing session id");
		return false;
	}
	switch (m->type) {
	case WIRE_MEM_LOAD:
		on_load(sm, fd, id);
		return false;
	case WIRE_MEM_SAVE:
		on_save(sm, fd, id, m);
		return false;
	case WIRE_MEM_DEL:
		if (store_del(sm->store, id, &removed, err) < 0)
			reply_err(fd, err);
		else
			wire_send(fd, WIRE_MEM_OK, removed, 0, NULL, 0, NULL, 0);
		return false;
	case WIRE_MEM_LIST:
		on_list(sm, fd);
		return false;
	case WIRE_MEM_ORIGIN: {
		bool sandboxed;

		if (store_origin(sm->store, id, &sandboxed, err) < 0)
			reply_err(fd, err);
		else
			wire_send(fd, WIRE_MEM_OK, sandboxed, 0, NULL, 0, NULL, 0);
		return false;
	}
	case WIRE_MEM_LOCK:
		if (!store_id_valid(id, err, sizeof(err))) {
			reply_err(fd, err);
			return false;
		}
		return on_lock(sm, fd, id);
	default:
		reply_err(fd, "unknown request");
		return false;
	}
}

unsigned mem_server_count(struct mem_server *sm)
{
	char err[STORE_ERR_MAX];
	struct session_info *info = NULL;
	size_t n = 0;

	if (store_list(sm->store, &info, &n, err) < 0)
		return 0;
	free(info);
	return (unsigned)n;
}
