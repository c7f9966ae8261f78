/*
 * mem_client.c - DOLSOT_STORE=memory: the store is the warm server's
 * memory, reached over its socket.  Nothing of a session touches the disk;
 * sessions live as long as the server does.
 *
 * A lock is a connection of its own: the server grants it with
 * WIRE_MEM_LOCKED and releases it when the connection closes, so a client
 * that dies while holding it releases it too.  The grant names the
 * server's incarnation and a token; every request about a session whose
 * lock this store holds carries them ("lock=INCARNATION:TOKEN"), so that a
 * server started after the one that granted it refuses them.
 *
 * Units (store_ops.h's obj_*): the server keeps each once, by its hash,
 * for every session in it, and the sessions' bytes are their heads
 * (unitstore.c does the rest, as for every store with units).  A put asks
 * first whether the server has the unit, so a save sends only the units
 * it lacks.  The units lock is a connection of its own, as a session's.
 *
 * A load's units reach the worker packed after the head (this store has
 * no directory a worker could read them from), and the server packs them
 * (obj_pack): it writes each straight from its memory into the memfd the
 * worker reads.  Packing them here, as the Redis store's client does,
 * would move each unit twice more: into this process, then out of it.
 */
#include "mem_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "mem_list.h"
#include "units.h"
#include "warm_proto.h"
#include "wire.h"

/* How long a lock that must not wait (timeout 0) waits for the server's
 * yes or no. */
#define TRY_LOCK_ANSWER_MS 5000

/* A held lock (store_lock.priv): the connection the server granted it on,
 * and the grant's incarnation and token. */
struct rs_lock {
	struct rs_lock *next;
	int fd;
	uint64_t incarnation, token;
	char id[STORE_ID_MAX + 1];
};

struct rstore {
	struct store s;
	struct store *dir;      /* the FileStore whose directory holds the socket */
	int dirfd;
	struct rs_lock *held;   /* the locks this store holds */
	int units_fd;           /* the units lock's connection, or -1 */
	enum store_gc_lock units_how;   /* its hold: shared or exclusive */
	uint64_t units_inc, units_token;   /* its grant */
};

/* "lock=INC:TOKEN" for id into payload when this store holds its lock. */
static void put_lock(const struct rstore *rs, const char *id, uint8_t *payload,
                     size_t *len)
{
	char v[64];

	for (const struct rs_lock *l = rs->held; l; l = l->next)
		if (strcmp(l->id, id) == 0) {
			snprintf(v, sizeof(v), "%016llx:%llu", (unsigned long long)l->incarnation,
			         (unsigned long long)l->token);
			wire_put(payload, len, "lock", v);
			return;
		}
}

static int rs_connect(struct rstore *rs, char *err, size_t errlen)
{
	int fd = warm_proto_connect(rs->dirfd);

	if (fd < 0)
		snprintf(err, errlen, "the memory store is gone: no warm server runs "
		         "for this store (%s)", strerror(errno));
	return fd;
}

/* One request (payload[0..len)), one answer; the connection is closed
 * afterwards. */
static int rs_exchange(struct rstore *rs, uint16_t type, uint64_t a, const uint8_t *payload,
                       size_t len, const int *fds, size_t nfds, struct wire_msg *m,
                       char *err, size_t errlen)
{
	int fd, got;

	memset(m, 0, sizeof(*m));
	fd = rs_connect(rs, err, errlen);
	if (fd < 0)
		return -1;
	if (wire_send(fd, type, a, 0, payload, len, fds, nfds) < 0) {
		snprintf(err, errlen, "cannot talk to the warm server: %s", strerror(errno));
		close(fd);
		return -1;
	}
	got = wire_recv(fd, m);
	close(fd);
	if (got == 1 && m->type == WIRE_MEM_ERR) {
		snprintf(err, errlen, "%.*s", (int)m->len,
		         m->len ? (const char *)m->payload : "");
		wire_msg_release(m);
		return -1;
	}
	if (got != 1) {
		snprintf(err, errlen, "the warm server did not answer");
		return -1;
	}
	/* Every other answer says it all in its header and fds. */
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
	return 0;
}

/* A request about session id (NULL: none), naming its lock when this
 * store holds it. */
static int rs_ask(struct rstore *rs, uint16_t type, uint64_t a, const char *id,
                  const int *fds, size_t nfds, struct wire_msg *m, char *err,
                  size_t errlen)
{
	uint8_t payload[STORE_ID_MAX + 96];
	size_t len = 0;

	if (id) {
		wire_put(payload, &len, "id", id);
		put_lock(rs, id, payload, &len);
	}
	return rs_exchange(rs, type, a, len ? payload : NULL, len, fds, nfds, m, err, errlen);
}

/* p[0..n) in a new memfd, or -1 with errno. */
static int bytes_memfd(const uint8_t *p, size_t n)
{
	int fd = memfd_create("dolsot-session", MFD_CLOEXEC);

	if (fd >= 0 && fd_write_all(fd, p, n) < 0)
		fd_close(&fd);
	return fd;
}

/* Copy a received memfd into a malloc'd buffer. */
static int read_memfd(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -1;
	*len = (size_t)st.st_size;
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return -1;
	if (*len) {
		p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			free(*out);
			*out = NULL;
			return -1;
		}
		memcpy(*out, p, *len);
		munmap(p, *len);
	}
	return 0;
}

static int rs_load(struct store *s, const char *id, uint8_t **blob, size_t *len,
                   bool *found, char *err, size_t errlen)
{
	struct wire_msg m;
	int ret;

	*blob = NULL;
	*len = 0;
	*found = false;
	if (rs_ask(s->priv, WIRE_MEM_LOAD, 0, id, NULL, 0, &m, err, errlen) < 0)
		return -1;
	if (m.type != WIRE_MEM_BLOB || (m.a && m.nfds != 1)) {
		wire_close_fds(&m);
		snprintf(err, errlen, "cannot load session '%s': bad answer", id);
		return -1;
	}
	if (!m.a)
		return 0;
	ret = read_memfd(m.fds[0], blob, len);
	wire_close_fds(&m);
	if (ret < 0) {
		snprintf(err, errlen, "cannot load session '%s': %s", id, strerror(errno));
		return -1;
	}
	*found = true;
	return 0;
}

static int rs_save(struct store *s, const char *id, const uint8_t *blob, size_t len,
                   const struct store_mark *mark, char *err, size_t errlen)
{
	struct wire_msg m;
	int fd = bytes_memfd(blob, len), ret;

	if (fd < 0) {
		snprintf(err, errlen, "cannot save session '%s': memfd: %s", id, strerror(errno));
		return -1;
	}
	ret = rs_ask(s->priv, WIRE_MEM_SAVE, mark->sandboxed, id, &fd, 1, &m, err, errlen);
	close(fd);
	wire_close_fds(&m);
	return ret;
}

static int rs_origin(struct store *s, const char *id, struct store_mark *mark, char *err,
                     size_t errlen)
{
	struct wire_msg m;

	mark->sandboxed = true;
	mark->seq = 0;   /* the server keeps no counter (store_mem.c) */
	if (rs_ask(s->priv, WIRE_MEM_ORIGIN, 0, id, NULL, 0, &m, err, errlen) < 0)
		return -1;
	wire_close_fds(&m);
	if (m.type != WIRE_MEM_OK) {
		snprintf(err, errlen, "cannot tell who wrote session '%s': bad answer", id);
		return -1;
	}
	mark->sandboxed = m.a != 0;
	return 0;
}

static int rs_del(struct store *s, const char *id, unsigned *removed, char *err,
                  size_t errlen)
{
	struct wire_msg m;

	if (rs_ask(s->priv, WIRE_MEM_DEL, 0, id, NULL, 0, &m, err, errlen) < 0)
		return -1;
	*removed = (unsigned)m.a;
	wire_close_fds(&m);
	return 0;
}

/* "all" with a = 1: only the ids the server lost (mem_server.c). */
static int rs_sweep(struct store *s, char *err, size_t errlen)
{
	struct wire_msg m;

	if (rs_ask(s->priv, WIRE_MEM_DEL, 1, "all", NULL, 0, &m, err, errlen) < 0)
		return -1;
	wire_close_fds(&m);
	return 0;
}

static int rs_list(struct store *s, struct session_info **out, size_t *n, char *err,
                   size_t errlen)
{
	struct wire_msg m;
	uint8_t *text = NULL;
	size_t len = 0;
	int ret;

	if (rs_ask(s->priv, WIRE_MEM_LIST, 0, NULL, NULL, 0, &m, err, errlen) < 0)
		return -1;
	ret = m.nfds == 1 ? read_memfd(m.fds[0], &text, &len) : -1;
	wire_close_fds(&m);
	if (ret == 0)
		ret = mem_list_parse((const char *)text, len, out, n);
	free(text);
	if (ret < 0)
		snprintf(err, errlen, "cannot list sessions: bad answer");
	return ret;
}

/* Wait until fd has the server's answer; false once the deadline (NULL:
 * none) passes first. */
static bool answered_by(int fd, const struct timespec *deadline)
{
	struct pollfd p = { fd, POLLIN, 0 };

	for (;;) {
		double left = deadline ? deadline_left(deadline) : 0;
		int r = poll(&p, 1, !deadline ? -1 : left > 0 ? deadline_poll_ms(left) : 0);

		if (r > 0 || (r < 0 && errno != EINTR))
			return true;   /* an answer, or an error wire_recv will see */
		if (r == 0 && deadline && deadline_left(deadline) <= 0)
			return false;
	}
}

/* Whether a failed exchange with the server (errno e, or 0 for the end
 * of the stream) means that it ended before it answered: none listens
 * any more, or it closed or reset the connection.  A killed server's
 * listener takes the connections queued on it, never accepted, with it
 * as its last fd closes; until then a connect succeeds. */
static bool server_ended(int e)
{
	return e == 0 || e == ECONNREFUSED || e == ENOENT || e == ECONNRESET || e == EPIPE;
}

/* A lock exchange that failed with errno e (0: the stream ended). */
static enum store_lock_status lock_lost(int e, char *err, size_t errlen)
{
	if (server_ended(e)) {
		snprintf(err, errlen, "the warm server ended before it answered");
		return STORE_LOCK_GONE;
	}
	snprintf(err, errlen, "the warm server failed: %s", strerror(e));
	return STORE_LOCK_FAILED;
}

/* The server's answer to a lock request sent on fd: STORE_LOCKED with *m
 * the grant, or why not into err. */
static enum store_lock_status lock_answer(int fd, const struct timespec *deadline,
                                          struct wire_msg *m, char *err, size_t errlen)
{
	enum store_lock_status ret;
	int got;

	if (!answered_by(fd, deadline)) {
		snprintf(err, errlen, STORE_BUSY_WHY);
		return STORE_LOCK_BUSY;
	}
	got = wire_recv(fd, m);
	if (got <= 0)
		return lock_lost(got < 0 ? errno : 0, err, errlen);
	if (m->type == WIRE_MEM_LOCKED)
		return STORE_LOCKED;
	if (m->type == WIRE_MEM_ERR) {
		snprintf(err, errlen, "%.*s", (int)m->len, m->len ? (const char *)m->payload : "");
		ret = m->a == 1 ? STORE_LOCK_BUSY : STORE_LOCK_FAILED;
	} else {
		snprintf(err, errlen, "the warm server failed: a bad answer");
		ret = STORE_LOCK_FAILED;
	}
	wire_msg_release(m);
	return ret;
}

/*
 * The lock is granted on a connection of its own, kept open while held.
 * timeout_ms 0 asks the server to answer busy at once rather than queue
 * (the answer itself may take up to TRY_LOCK_ANSWER_MS); its ERR answer
 * has a = 1 when the lock is busy (held, or its table full).  A server
 * that ended before it answered is STORE_LOCK_GONE: the caller may start
 * one anew and ask again.
 */
static enum store_lock_status rs_lock(struct store *s, const char *id, long timeout_ms,
                                      struct store_lock *lk, char *err, size_t errlen)
{
	enum store_lock_status ret;
	struct rstore *rs = s->priv;
	struct wire_msg m;
	uint8_t payload[STORE_ID_MAX + 8];
	struct timespec deadline;
	struct rs_lock *held;
	size_t len = 0;
	int fd;

	lk->priv = NULL;
	held = calloc(1, sizeof(*held));
	if (!held) {
		snprintf(err, errlen, "%s", strerror(errno));
		return STORE_LOCK_FAILED;
	}
	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms ? timeout_ms : TRY_LOCK_ANSWER_MS);
	wire_put(payload, &len, "id", id);
	fd = rs_connect(rs, err, errlen);
	if (fd < 0) {
		ret = server_ended(errno) ? STORE_LOCK_GONE : STORE_LOCK_FAILED;
		goto out;
	}
	if (wire_send(fd, WIRE_MEM_LOCK, timeout_ms == 0, 0, payload, len, NULL, 0) < 0) {
		ret = lock_lost(errno, err, errlen);
		goto out;
	}
	ret = lock_answer(fd, timeout_ms >= 0 ? &deadline : NULL, &m, err, errlen);
	if (ret != STORE_LOCKED)
		goto out;
	wire_msg_release(&m);
	held->fd = fd;
	held->incarnation = m.a;
	held->token = m.b;
	snprintf(held->id, sizeof(held->id), "%s", id);
	held->next = rs->held;
	rs->held = held;
	lk->priv = held;
	return STORE_LOCKED;
out:
	fd_close(&fd);
	free(held);
	return ret;
}

static void rs_unlock(struct store *s, struct store_lock *lk)
{
	struct rstore *rs = s->priv;
	struct rs_lock *held = lk->priv, **pp;

	if (held) {
		for (pp = &rs->held; *pp; pp = &(*pp)->next)
			if (*pp == held) {
				*pp = held->next;
				break;
			}
		close(held->fd);
		free(held);
	}
	lk->priv = NULL;
}

/* ---- units ---- */

/* A unit request: op on hash (NULL: none), with the exclusive units
 * lock's grant for a removal. */
static int rs_unit(struct rstore *rs, enum wire_mem_unit op, const uint8_t *hash,
                   const int *fds, size_t nfds, struct wire_msg *m, char *err,
                   size_t errlen)
{
	uint8_t payload[UNITS_HEX_LEN + 128];
	char hex[UNITS_HEX_LEN + 1], grant[64];
	size_t len = 0;

	if (hash) {
		units_hex(hash, hex);
		wire_put(payload, &len, "hash", hex);
	}
	if (op == WIRE_UNIT_DEL && rs->units_fd >= 0) {
		snprintf(grant, sizeof(grant), "%016llx:%llu", (unsigned long long)rs->units_inc,
		         (unsigned long long)rs->units_token);
		wire_put(payload, &len, "units", grant);
	}
	return rs_exchange(rs, WIRE_MEM_UNIT, op, len ? payload : NULL, len, fds, nfds, m, err,
	                   errlen);
}

static int rs_obj_has(struct store *s, const uint8_t *hash, bool *has, char *err,
                      size_t errlen)
{
	struct wire_msg m;

	*has = false;
	if (rs_unit(s->priv, WIRE_UNIT_HAS, hash, NULL, 0, &m, err, errlen) < 0)
		return -1;
	wire_close_fds(&m);
	*has = m.a != 0;
	return 0;
}

/* Sent only when the server lacks it. */
static int rs_obj_put(struct store *s, const uint8_t *hash, const uint8_t *p, size_t n,
                      char *err, size_t errlen)
{
	struct wire_msg m;
	bool has;
	int fd, ret;

	if (rs_obj_has(s, hash, &has, err, errlen) < 0 || has)
		return has ? 0 : -1;
	fd = bytes_memfd(p, n);
	if (fd < 0) {
		snprintf(err, errlen, "cannot keep a unit: memfd: %s", strerror(errno));
		return -1;
	}
	ret = rs_unit(s->priv, WIRE_UNIT_PUT, hash, &fd, 1, &m, err, errlen);
	close(fd);
	wire_close_fds(&m);
	return ret;
}

/* A BLOB answer's memfd (none when a is 0) into *p, *n bytes. */
static int take_blob(struct wire_msg *m, uint8_t **p, size_t *n, bool *found, char *err,
                     size_t errlen)
{
	int ret = 0;

	*found = false;
	if (m->type != WIRE_MEM_BLOB || (m->a && m->nfds != 1)) {
		snprintf(err, errlen, "the warm server failed: a bad answer");
		ret = -1;
	} else if (m->a && read_memfd(m->fds[0], p, n) < 0) {
		snprintf(err, errlen, "cannot read the warm server's answer: %s", strerror(errno));
		ret = -1;
	} else {
		*found = m->a != 0;
	}
	wire_close_fds(m);
	return ret;
}

static int rs_obj_read(struct store *s, const uint8_t *hash, uint8_t **p, size_t *n,
                       bool *found, char *err, size_t errlen)
{
	struct wire_msg m;

	*p = NULL;
	*n = 0;
	*found = false;
	if (rs_unit(s->priv, WIRE_UNIT_READ, hash, NULL, 0, &m, err, errlen) < 0)
		return -1;
	return take_blob(&m, p, n, found, err, errlen);
}

static int rs_obj_del(struct store *s, const uint8_t *hash, char *err, size_t errlen)
{
	struct wire_msg m;

	if (rs_unit(s->priv, WIRE_UNIT_DEL, hash, NULL, 0, &m, err, errlen) < 0)
		return -1;
	wire_close_fds(&m);
	return 0;
}

static int rs_obj_list(struct store *s, uint8_t **hashes, size_t *n, char *err,
                       size_t errlen)
{
	struct wire_msg m;
	size_t len = 0;
	bool found;

	*hashes = NULL;
	*n = 0;
	if (rs_unit(s->priv, WIRE_UNIT_LIST, NULL, NULL, 0, &m, err, errlen) < 0 ||
	    take_blob(&m, hashes, &len, &found, err, errlen) < 0)
		return -1;
	*n = len / STORE_HASH_LEN;
	return 0;
}

static int rs_obj_pack(struct store *s, const char *id, int fd, size_t *len, char *err,
                       size_t errlen)
{
	struct wire_msg m;

	if (rs_ask(s->priv, WIRE_MEM_UNIT, WIRE_UNIT_PACK, id, &fd, 1, &m, err, errlen) < 0)
		return -1;
	wire_close_fds(&m);
	if (m.type != WIRE_MEM_OK || m.a < *len) {
		snprintf(err, errlen, "cannot load session '%s': its units: a bad answer", id);
		return -1;
	}
	*len = (size_t)m.a;
	return 0;
}

static void units_release(struct rstore *rs)
{
	fd_close(&rs->units_fd);
}

/* The units lock on a connection of its own, waiting as long as it
 * takes; a hold of the other kind is let go first. */
static int rs_obj_lock(struct store *s, enum store_gc_lock how, char *err, size_t errlen)
{
	struct rstore *rs = s->priv;
	struct wire_msg m;
	int fd;

	if (how == STORE_GC_RELEASE || (rs->units_fd >= 0 && rs->units_how != how))
		units_release(rs);
	if (how == STORE_GC_RELEASE || rs->units_fd >= 0)
		return 0;
	fd = rs_connect(rs, err, errlen);
	if (fd < 0)
		return -1;
	if (wire_send(fd, WIRE_MEM_UNITS_LOCK, how, 0, NULL, 0, NULL, 0) < 0) {
		snprintf(err, errlen, "cannot talk to the warm server: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (lock_answer(fd, NULL, &m, err, errlen) != STORE_LOCKED) {
		close(fd);
		return -1;
	}
	wire_msg_release(&m);
	rs->units_fd = fd;
	rs->units_how = how;
	rs->units_inc = m.a;
	rs->units_token = m.b;
	return 0;
}

static void rs_close(struct store *s)
{
	struct rstore *rs = s->priv;

	while (rs->held) {   /* a caller's missing unlock: release them all the same */
		struct rs_lock *l = rs->held;

		rs->held = l->next;
		close(l->fd);
		free(l);
	}
	units_release(rs);
	store_close(rs->dir);
	free(rs);
}

static const struct store_ops rstore_ops = {
	.load = rs_load,
	.save = rs_save,
	.origin = rs_origin,
	.del = rs_del,
	.sweep = rs_sweep,
	.list = rs_list,
	.lock = rs_lock,
	.unlock = rs_unlock,
	.close = rs_close,
	.obj_has = rs_obj_has,
	.obj_put = rs_obj_put,
	.obj_read = rs_obj_read,
	.obj_del = rs_obj_del,
	.obj_list = rs_obj_list,
	.obj_lock = rs_obj_lock,
	.obj_pack = rs_obj_pack,
};

struct store *mem_client_open(struct store *dir, char *err, size_t errlen)
{
	struct rstore *rs = calloc(1, sizeof(*rs));

	if (!rs) {
		snprintf(err, errlen, "out of memory");
		store_close(dir);
		return NULL;
	}
	rs->dir = dir;
	rs->dirfd = dir->home;
	rs->units_fd = -1;
	rs->s.ops = &rstore_ops;
	rs->s.priv = rs;
	rs->s.home = dir->home;
	return &rs->s;
}
