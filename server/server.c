/*
 * server.c - accept calls, route them to zygotes, keep the zygotes fresh.
 *
 * The server never runs Python and never touches sessions: the client
 * holds the session lock, opens the session's files itself, and passes the
 * server its memfds, pipes and those files, which it forwards unread.  A call whose zygote is not ready yet is
 * answered WIRE_FALLBACK at once (the client runs it cold) while the zygote
 * starts in the background, so the server never makes a call slower.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/sockios.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "le.h"
#include "proc_child.h"
#include "server_diag.h"
#include "mem_server.h"
#include "peer.h"
#include "warm_proto.h"
#include "live.h"
#include "zygote.h"

#define MAX_CLIENTS 256
#define RETRY_FAILED_SECONDS 10
#define SEEN_KEYS 64
/* Modules a zygote refused to import ahead of calls, remembered for the
 * server's life; past this many, no call's modules are imported ahead. */
#define SKIP_MAX 64
/* A zygote with calls waiting that reads none of them for this long is
 * stuck (stopped, frozen, blocked): it is killed and replaced (issue 21).
 * A busy one that reads slowly is not. */
#define ZYGOTE_STALL_SECONDS 5.0
/* While a zygote has calls unread, look at it this often (ms). */
#define ZYGOTE_STALL_POLL_MS 250

enum zstate { Z_STARTING, Z_READY, Z_FAILED };

struct zygote {
	uint8_t *key;             /* the WIRE_CALL payload that made it (malloc'd) */
	size_t key_len;           /* 0: the slot is free */
	pid_t pid;
	int ctl;
	enum zstate state;
	char *files;              /* READY payload: the module files to watch */
	size_t files_len;
	double last_used;
	double started;
	double unread_since;      /* it last read a call, with calls waiting; 0: none wait */
	int unread;               /* bytes of calls waiting when we last looked */
	pid_t prev_pid;           /* the zygote it replaced, not reaped yet */
	char why[256];            /* why it failed, or why the one before it went */
	uint8_t *live;            /* its last report of its live sessions (live.h), or NULL */
	size_t live_len;
	pid_t grown_from;         /* the zygote it was forked from (its parent), or 0 */
};

struct server {
	int dirfd, listen_fd, sig, lock_fd;
	double idle, last_call, started;
	uint64_t exe_id;
	struct zygote z[SERVER_MAX_ZYGOTES];
	int clients[MAX_CLIENTS];
	size_t n_clients;
	bool stopping;
	bool replaced;            /* a call of another build came: leave, letting calls finish */
	uint64_t calls_served, calls_fallback;
	struct mem_server *mem;   /* DOLSOT_STORE=memory sessions, made on first use */
	int held[MEM_SERVER_MAX_LOCKS];   /* connections holding or awaiting a session lock */
	size_t n_held;
	uint64_t seen[SEEN_KEYS]; /* hashes of environments called without a zygote */
	size_t seen_next;
	/* calls served by a zygote holding their session's modules, and by one
	 * holding some of them while that one warms up */
	uint64_t calls_preloaded, calls_nearer;
	struct {
		char name[256];
		char why[256];
	} skip[SKIP_MAX];         /* modules never to import ahead, and why */
	size_t n_skip;
};

int server_exec_main(int argc, char **argv)
{
	struct wire_msg prewarm = { .type = WIRE_CALL };
	double idle;
	char *end;

	if (argc != 2)
		_exit(2);
	idle = strtod(argv[1], &end);
	if (*end || !(idle > 0))
		_exit(2);
	/* The spawner wrote the key, so the memfd's offset is at its end. */
	if (lseek(WARM_KEY_FD, 0, SEEK_SET) < 0 ||
	    fd_read_all(WARM_KEY_FD, 4096, &prewarm.payload, &prewarm.len) < 0)
		_exit(1);
	close(WARM_KEY_FD);
	if (prewarm.len > WIRE_MAX_PAYLOAD)
		prewarm.len = WIRE_MAX_PAYLOAD;
	server_main(WARM_DIR_FD, WARM_LOCK_FD, idle, prewarm.len ? &prewarm : NULL);
}

/* ---- zygotes ---- */

static void zygote_forget(struct zygote *z)
{
	if (z->ctl >= 0)
		close(z->ctl);   /* it finishes its calls, then exits */
	free(z->files);
	free(z->key);
	free(z->live);
	memset(z, 0, sizeof(*z));
	z->ctl = -1;
	z->pid = 0;
}

/* z takes m's key and starts: false (the slot stays free, a later call
 * tries again) when there is no memory for it. */
static bool zygote_begin(struct zygote *z, const struct wire_msg *m)
{
	z->key = malloc(m->len);
	if (!z->key)
		return false;
	memcpy(z->key, m->payload, m->len);
	z->key_len = m->len;
	z->state = Z_STARTING;
	z->started = z->last_used = deadline_now();
	return true;
}

/* z's zygote talks to us over ctl; pid 0 until it says (a grown one). */
static void zygote_attach(struct zygote *z, int ctl, pid_t pid)
{
	/* Our end never blocks: a zygote that stops reading must not stop us. */
	fcntl(ctl, F_SETFL, O_NONBLOCK);
	z->ctl = ctl;
	z->pid = pid;
}

/* The begun z's zygote as a fresh exec of dolsot, our child. */
static void zygote_exec_into(struct zygote *z, const struct wire_msg *m)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		goto failed;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		goto failed;
	}
	if (pid == 0) {
		int keep[] = { sv[1] };
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		proc_child_close_fds(keep, 1);
		zygote_exec(sv[1], m->payload, m->len);
	}
	close(sv[1]);
	zygote_attach(z, sv[0], pid);
	return;
failed:
	z->state = Z_FAILED;
	snprintf(z->why, sizeof(z->why), "cannot start a zygote: %s", strerror(errno));
}

static void zygote_spawn(struct server *s, struct zygote *z, const struct wire_msg *m)
{
	(void)s;
	if (zygote_begin(z, m))
		zygote_exec_into(z, m);
}

/* True when a module file the zygote imported changed since. */
static bool zygote_stale(const struct zygote *z)
{
	size_t pos = 0;
	const char *entry;

	while ((entry = wire_next((const uint8_t *)z->files, z->files_len, "file", &pos))) {
		char path[4096];
		long long mtime, size;
		struct stat st;

		if (warm_key_file(entry, path, sizeof(path), &mtime, &size) < 0)
			return true;
		if (stat(path, &st) < 0 || st.st_size != size ||
		    (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec != mtime)
			return true;
	}
	return false;
}

/*
 * Kill z (stuck, or already gone) and start a new one for its
 * environment in its slot, why saying what happened, for --server-status.
 * The calls it was running end with it; calls it had not read yet see
 * their connection close before the cell started, and run cold.
 */
static void zygote_replace(struct server *s, struct zygote *z, const char *why)
{
	struct wire_msg key = { .type = WIRE_CALL, .payload = z->key, .len = z->key_len };
	pid_t old = z->pid;

	if (old > 0)
		kill(old, SIGKILL);
	z->key = NULL;   /* kept across zygote_forget */
	zygote_forget(z);
	zygote_spawn(s, z, &key);
	free(key.payload);
	z->prev_pid = old;
	snprintf(z->why, sizeof(z->why), "%s", why);
}

/*
 * Look at what z has not read of what we sent it (SIOCOUTQ: only we write
 * to its socket, so the figure drops only when it reads).  Called before
 * and after each send and from the loop; true when calls have waited
 * ZYGOTE_STALL_SECONDS without it reading any.
 */
static bool zygote_stuck(struct zygote *z)
{
	int unread = 0;

	if (z->state != Z_READY || z->ctl < 0 || ioctl(z->ctl, SIOCOUTQ, &unread) < 0 ||
	    unread == 0) {
		z->unread_since = 0;
		z->unread = 0;
		return false;
	}
	if (!z->unread_since || unread < z->unread)
		z->unread_since = deadline_now();   /* calls began to wait, or it read one */
	z->unread = unread;
	return deadline_now() - z->unread_since > ZYGOTE_STALL_SECONDS;
}

static struct zygote *zygote_find(struct server *s, const struct wire_msg *m)
{
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].key_len && s->z[i].key_len == m->len &&
		    memcmp(s->z[i].key, m->payload, m->len) == 0)
			return &s->z[i];
	return NULL;
}

/* The key m asks for imports the session's modules ahead (warm_proto.h). */
static bool wants_preload(const struct wire_msg *m)
{
	long base = warm_key_base_len(m->payload, m->len);

	return base >= 0 && (size_t)base < m->len;
}

/* z's key has the same base (environment) as m's. */
static bool same_environment(const struct zygote *z, const struct wire_msg *m)
{
	long zb = warm_key_base_len(z->key, z->key_len), mb = warm_key_base_len(m->payload, m->len);

	return zb >= 0 && zb == mb && memcmp(z->key, m->payload, (size_t)zb) == 0;
}

/* How many preload entries key m has. */
static size_t preload_count(const struct wire_msg *m)
{
	static struct warm_key key;

	warm_key_decode(m->payload, m->len, &key);
	return key.n_preload;
}

/*
 * The ready zygote nearest to m's key: of its environment, with none of
 * its own modules imported ahead that the session does not need (so the
 * load imports only the rest, as the cold path would have), and holding
 * the most of the session's modules.  *full: it holds them all, so it
 * serves as well as the session's own.  NULL when none.
 */
static struct zygote *zygote_nearest(struct server *s, const struct wire_msg *m, bool *full)
{
	struct zygote *best = NULL;
	size_t best_n = 0, own;

	*full = false;
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++) {
		struct zygote *z = &s->z[i];
		size_t n;

		if (!z->key_len || z->state != Z_READY ||
		    !warm_key_within(z->key, z->key_len, m->payload, m->len, &own))
			continue;
		n = warm_key_covered(m->payload, m->len, (const uint8_t *)z->files, z->files_len);
		if ((!best || n > best_n || (n == best_n && z->last_used > best->last_used)) &&
		    !zygote_stale(z)) {
			best = z;
			best_n = n;
		}
	}
	*full = best && best_n == preload_count(m);
	return best;
}

/* The least recently used zygote that is not starting, or NULL; with
 * env, only one of m's environment. */
static struct zygote *zygote_lru(struct server *s, const struct wire_msg *env)
{
	struct zygote *lru = NULL;

	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].key_len && s->z[i].state != Z_STARTING &&
		    (!env || same_environment(&s->z[i], env)) &&
		    (!lru || s->z[i].last_used < lru->last_used))
			lru = &s->z[i];
	return lru;
}

/* How many zygotes m's environment has. */
static size_t environment_zygotes(const struct server *s, const struct wire_msg *m)
{
	size_t n = 0;

	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		n += s->z[i].key_len && same_environment(&s->z[i], m);
	return n;
}

/* The private memory of the zygotes in kB. */
static long zygotes_memory(const struct server *s, size_t *n)
{
	long total = 0;

	*n = 0;
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].key_len && s->z[i].pid > 0) {
			long kb = server_diag_private_kb(s->z[i].pid);

			total += kb > 0 ? kb : 0;
			(*n)++;
		}
	return total;
}

/*
 * A free slot for a zygote of m's key, or NULL when its environment has
 * SERVER_ENV_ZYGOTES that are all starting.  Zygotes are bounded by the
 * memory they hold (SERVER_ZYGOTE_MEMORY_KB of private memory together)
 * more than by their number: the least recently used ones make room while
 * the others hold more than that, and when every slot is taken.  Within
 * one environment the least recently used make room for a new one.
 */
static struct zygote *zygote_slot(struct server *s, const struct wire_msg *m)
{
	struct zygote *lru;
	size_t n;

	while (environment_zygotes(s, m) >= SERVER_ENV_ZYGOTES) {
		lru = zygote_lru(s, m);
		if (!lru)
			return NULL;
		zygote_forget(lru);
	}
	while (zygotes_memory(s, &n) > SERVER_ZYGOTE_MEMORY_KB && n > 1 &&
	       (lru = zygote_lru(s, NULL)))
		zygote_forget(lru);
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (!s->z[i].key_len)
			return &s->z[i];
	lru = zygote_lru(s, NULL);
	if (!lru)
		lru = &s->z[0];
	zygote_forget(lru);
	return lru;
}

/* The live sessions of all zygotes within their bounds (live.h): an idle
 * one past them ends, one each time a report comes or the loop comes
 * round (at least once a second), so that a process that grows while
 * idle ends too. */
static void bound_live(struct server *s)
{
	struct live_reports r[SERVER_MAX_ZYGOTES];
	struct zygote *of[SERVER_MAX_ZYGOTES];
	char session[256], why[LIVE_NOTE_MAX];
	uint8_t payload[512 + LIVE_NOTE_MAX];
	size_t n = 0, len = 0;
	int at;

	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].live && s->z[i].ctl >= 0) {
			of[n] = &s->z[i];
			r[n++] = (struct live_reports){ s->z[i].live, s->z[i].live_len };
		}
	if (!n)
		return;
	at = live_pick_evict(r, n, session, sizeof(session), why, sizeof(why));
	if (at < 0 || wire_put(payload, &len, LIVE_ENTRY, session) < 0 ||
	    wire_put(payload, &len, LIVE_WHY, why) < 0)
		return;
	wire_send(of[at]->ctl, WIRE_STOP, 0, 0, payload, len, NULL, 0);
}

/*
 * The zygote z refused preload module i of its key (why in m's payload):
 * remember the module for the server's life, so calls' keys leave it out
 * and their loads import it as the cold path does.  False when i is not
 * in the key.
 */
static bool skip_module(struct server *s, const struct zygote *z, uint64_t i,
                        const struct wire_msg *m)
{
	static struct warm_key key;

	warm_key_decode(z->key, z->key_len, &key);
	if (i >= key.n_preload)
		return false;
	if (s->n_skip < SKIP_MAX) {
		snprintf(s->skip[s->n_skip].name, sizeof(s->skip[0].name), "%s", key.preload[i]);
		snprintf(s->skip[s->n_skip].why, sizeof(s->skip[0].why), "%.*s", (int)m->len,
		         m->len ? (const char *)m->payload : "");
	}
	s->n_skip++;   /* past SKIP_MAX: nothing is imported ahead any more */
	return true;
}

/* warm_key_drop's test: name is one not to import ahead. */
static bool skipped(const char *name, void *ctx)
{
	const struct server *s = ctx;

	if (s->n_skip > SKIP_MAX)
		return true;
	for (size_t i = 0; i < s->n_skip; i++)
		if (strcmp(s->skip[i].name, name) == 0)
			return true;
	return false;
}

static void on_zygote_message(struct server *s, struct zygote *z)
{
	struct wire_msg m;
	int got = wire_recv(z->ctl, &m);

	if (got <= 0) {
		if (got < 0 && errno == EAGAIN)
			return;
		if (z->state == Z_READY) {
			/* It died while serving (killed, say): a new one takes its
			 * place, and the status says what became of the old. */
			zygote_replace(s, z, "the zygote before this one exited while serving");
			return;
		}
		z->state = Z_FAILED;
		if (!z->why[0])
			snprintf(z->why, sizeof(z->why), "the zygote exited while starting");
		close(z->ctl);
		z->ctl = -1;
		return;
	}
	wire_close_fds(&m);
	if (m.type == WIRE_READY && z->state == Z_STARTING) {
		/* The payload is the files to watch: it is the zygote's now. */
		free(z->files);
		z->files = (char *)m.payload;
		z->files_len = m.len;
		m.payload = NULL;
		z->state = Z_READY;
		if (z->pid <= 0 && m.a > 0 && m.a < (uint64_t)INT_MAX)
			z->pid = (pid_t)m.a;   /* a grown zygote */
	} else if (m.type == WIRE_FAILED && m.a > 0 && skip_module(s, z, m.a - 1, &m)) {
		zygote_forget(z);   /* calls ask for a key without the module now */
	} else if (m.type == WIRE_FAILED) {
		z->state = Z_FAILED;
		snprintf(z->why, sizeof(z->why), "%.*s", (int)m.len,
		         m.len ? (const char *)m.payload : "");
	} else if (m.type == WIRE_INFO) {
		free(z->live);
		z->live = m.payload;
		z->live_len = m.len;
		m.payload = NULL;
		bound_live(s);
	}
	wire_msg_release(&m);
}

/* ---- calls ---- */

static void fallback(int client, const char *why)
{
	wire_send(client, WIRE_FALLBACK, 0, 0, why, strlen(why), NULL, 0);
}

static uint64_t key_hash(const struct wire_msg *m)
{
	return le_fnv(LE_FNV_BASIS, m->payload, m->len);
}

/* Remember m's environment; true when it was already remembered. */
static bool seen_before(struct server *s, const struct wire_msg *m)
{
	uint64_t h = key_hash(m);

	for (size_t i = 0; i < SEEN_KEYS; i++)
		if (s->seen[i] == h)
			return true;
	s->seen[s->seen_next++ % SEEN_KEYS] = h;
	return false;
}

/* Hand the call m to z's zygote; true when its client fd was handed on.
 * full: z holds every module the session's load imports. */
static bool zygote_run(struct server *s, struct zygote *z, int client,
                       const struct wire_msg *m, bool full)
{
	int fds[WIRE_MAX_FDS];

	fds[0] = client;
	memcpy(fds + 1, m->fds, sizeof(int) * m->nfds);
	(void)zygote_stuck(z);   /* notes whether it read since the last send */
	if (wire_send(z->ctl, WIRE_RUN, m->a, 0, NULL, 0, fds, m->nfds + 1) < 0) {
		/* Its queue is full (it stopped reading) or it is gone. */
		fallback(client, "the zygote does not answer");
		s->calls_fallback++;
		zygote_replace(s, z, errno == EAGAIN
		               ? "the zygote before this one stopped reading calls; killed"
		               : "the zygote before this one was gone");
		return false;
	}
	z->last_used = deadline_now();
	(void)zygote_stuck(z);   /* what waits now, this call included */
	s->calls_served++;
	if (wants_preload(m))
		*(full ? &s->calls_preloaded : &s->calls_nearer) += 1;
	return true;
}

/*
 * Whether a call of m's key without a zygote should get one now.  Its
 * environment warms only the second time it is seen (a probe at once): a
 * host that changes its environment every call would otherwise keep the
 * server importing toolboxes for nothing.
 * A session's modules in an environment that has a zygote are prepared
 * at once: the next call on the session will want them.
 */
static bool worth_warming(struct server *s, const struct wire_msg *m)
{
	return (wants_preload(m) && environment_zygotes(s, m) > 0) || seen_before(s, m);
}

/*
 * Prepare a zygote for m's key in z: forked from the nearest ready zygote
 * of its environment, which imports only what the key adds, or else a
 * fresh one.  A grown zygote is its parent's child, not ours: we know its
 * pid from its WIRE_READY, and its end from its control socket.
 */
static void zygote_prepare(struct server *s, struct zygote *z, const struct wire_msg *m)
{
	bool full;
	struct zygote *from = wants_preload(m) ? zygote_nearest(s, m, &full) : NULL;
	int sv[2];

	if (!zygote_begin(z, m))
		return;
	if (from && from->pid > 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
		if (wire_send(from->ctl, WIRE_GROW, 0, 0, m->payload, m->len, &sv[1], 1) == 0) {
			close(sv[1]);
			zygote_attach(z, sv[0], 0);
			z->grown_from = from->pid;
			return;
		}
		close(sv[0]);
		close(sv[1]);
	}
	zygote_exec_into(z, m);
}

/* A probe (dolsot --server-start, or a client whose call saved a new
 * module record): is this environment warm?  A new one starts warming;
 * one that failed says why at once. */
static bool on_probe(struct server *s, int client, const struct wire_msg *m,
                     struct zygote *z)
{
	bool full = false;

	/* A zygote holding every module the key asks for serves it already. */
	if (!z && wants_preload(m) && zygote_nearest(s, m, &full) && full) {
		wire_send(client, WIRE_READY, 0, 0, NULL, 0, NULL, 0);
		return false;
	}
	if (!z && (z = zygote_slot(s, m)))
		zygote_prepare(s, z, m);
	if (z && z->state == Z_READY)
		wire_send(client, WIRE_READY, 0, 0, NULL, 0, NULL, 0);
	else if (z && z->state == Z_FAILED)
		wire_send(client, WIRE_FAILED, 0, 0, z->why, strlen(z->why), NULL, 0);
	else
		fallback(client, "warming up");
	return false;
}

/* Route a call; returns true when its client fd was handed on. */
static bool on_call(struct server *s, int client, struct wire_msg *m)
{
	struct zygote *z, *run;
	bool full = false, handed;

	s->last_call = deadline_now();
	if (m->b != s->exe_id) {
		/* Another build of dolsot: let it start its own server. */
		fallback(client, "the server belongs to another dolsot build; it stops");
		s->replaced = true;
		return false;
	}
	/* request, result, stdout, stderr, save, and load unless new */
	if (m->nfds != 0 && m->nfds != 5 && m->nfds != 6) {
		fallback(client, "malformed call");
		return false;
	}
	m->len = warm_key_drop(m->payload, m->len, skipped, s);
	z = zygote_find(s, m);
	/* An environment in use whose zygote went stale or failed a while ago
	 * is rebuilt in its own slot right away. */
	if (z && ((z->state == Z_READY && zygote_stale(z)) ||
	          (z->state == Z_FAILED && deadline_now() - z->started > RETRY_FAILED_SECONDS))) {
		zygote_forget(z);
		zygote_spawn(s, z, m);
	}
	if (m->nfds == 0)
		return on_probe(s, client, m, z);
	/* Without the session's own zygote, the nearest serves: while the
	 * session's warms up, or for good when it holds every module. */
	run = z && z->state == Z_READY ? z : wants_preload(m) ? zygote_nearest(s, m, &full) : NULL;
	if (run && run == z)
		full = true;
	handed = run && zygote_run(s, run, client, m, full);
	if (!run) {
		fallback(client, z && z->state == Z_FAILED ? z->why : "warming up");
		s->calls_fallback++;
	}
	/* After the call went, so that making room cannot end its zygote. */
	if (!z && !full && worth_warming(s, m) && (z = zygote_slot(s, m)))
		zygote_prepare(s, z, m);
	return handed;
}

static const char *const state_names[] = { "starting", "ready", "failed" };

static void on_info(struct server *s, int client)
{
	char text[WIRE_MAX_PAYLOAD];
	size_t n = 0;

	struct server_figures f = {
		.uptime = deadline_now() - s->started, .warm = s->calls_served,
		.cold = s->calls_fallback, .preloaded = s->calls_preloaded,
		.nearer = s->calls_nearer, .sessions = s->mem ? mem_server_count(s->mem) : 0,
		.max_zygotes = SERVER_MAX_ZYGOTES, .env_zygotes = SERVER_ENV_ZYGOTES,
		.idle_seconds = SERVER_ZYGOTE_IDLE, .memory_kb = SERVER_ZYGOTE_MEMORY_KB,
	};

	if (s->mem)
		mem_server_units(s->mem, &f.units, &f.units_stored);
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		f.zygotes += s->z[i].key_len != 0;
	server_diag_server(text, &n, sizeof(text), &f);
	for (size_t i = 0; i < s->n_skip && i < SKIP_MAX; i++)
		server_diag_skipped(text, &n, sizeof(text), s->skip[i].name, s->skip[i].why);
	for (int i = 0; i < SERVER_MAX_ZYGOTES && n < sizeof(text) - 512; i++) {
		const struct zygote *z = &s->z[i];

		if (z->key_len)
			server_diag_zygote(text, &n, sizeof(text), z->pid, state_names[z->state],
			                   deadline_now() - z->last_used, z->key, z->key_len,
			                   z->grown_from, z->why);
		/* What tells it from the first zygote listed before it that it
		 * would otherwise look the same as. */
		for (int j = 0; z->key_len && j < i; j++)
			if (s->z[j].key_len &&
			    server_diag_env_diff(text, &n, sizeof(text), z->key, z->key_len,
			                         s->z[j].pid, s->z[j].key, s->z[j].key_len))
				break;
		if (z->key_len)
			server_diag_spare(text, &n, sizeof(text), z->pid);
		if (z->key_len && z->live)
			live_status(text, &n, sizeof(text), z->live, z->live_len);
	}
	wire_send(client, WIRE_INFO, 0, 0, text, n, NULL, 0);
}

static void drop_client(struct server *s, size_t i, bool close_it)
{
	if (close_it)
		close(s->clients[i]);
	s->clients[i] = s->clients[--s->n_clients];
}

static void on_client(struct server *s, size_t i)
{
	struct wire_msg m;
	int fd = s->clients[i];
	int got = wire_recv(fd, &m);

	if (got < 0 && errno == EAGAIN)
		return;
	if (got <= 0) {
		drop_client(s, i, true);
		return;
	}
	switch (m.type) {
	case WIRE_CALL:
		if (on_call(s, fd, &m)) {
			wire_msg_release(&m);
			drop_client(s, i, true);   /* the zygote has its own copy */
			return;
		}
		break;
	case WIRE_INFO_REQ:
		on_info(s, fd);
		break;
	case WIRE_MEM_LOAD:
	case WIRE_MEM_SAVE:
	case WIRE_MEM_DEL:
	case WIRE_MEM_LIST:
	case WIRE_MEM_LOCK:
	case WIRE_MEM_ORIGIN:
	case WIRE_MEM_UNIT:
	case WIRE_MEM_UNITS_LOCK:
		s->last_call = deadline_now();
		if (!s->mem && !(s->mem = mem_server_new(s->dirfd))) {
			wire_send(fd, WIRE_MEM_ERR, 0, 0, "out of memory", 13, NULL, 0);
			break;
		}
		/* mem_server keeps at most MEM_SERVER_MAX_LOCKS, as held[] does */
		if (mem_server_handle(s->mem, fd, &m)) {
			wire_msg_release(&m);
			s->held[s->n_held++] = fd;
			drop_client(s, i, false);
			return;
		}
		break;
	case WIRE_STOP:
		/* Keep this connection open: the client sees it close when we are
		 * gone, zygotes included. */
		s->stopping = true;
		wire_send(fd, WIRE_STOPPING, (uint64_t)getpid(), 0, NULL, 0, NULL, 0);
		wire_msg_release(&m);
		drop_client(s, i, false);
		return;
	default:
		break;
	}
	wire_msg_release(&m);
	drop_client(s, i, true);
}

/* While the table is full, the rest wait in the listen queue (closing
 * them would fail their calls, a lock request among them). */
static void on_accept(struct server *s)
{
	while (s->n_clients < MAX_CLIENTS) {
		/* Non-blocking: a client that does not read must not stop us. */
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;
		if (!peer_is_ours(fd)) {
			close(fd);
			continue;
		}
		s->clients[s->n_clients++] = fd;
	}
}

/* ---- life cycle ---- */

static int open_listener(struct server *s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (s->lock_fd < 0) {
		/* Read-only: flock needs no more, and a file open for writing
		 * would keep the store's filesystem from being remounted
		 * read-only while the server runs. */
		s->lock_fd = openat(s->dirfd, WARM_LOCK,
		                    O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0)
			return -1;   /* another server holds the store */
	}
	unlinkat(s->dirfd, WARM_SOCKET, 0);
	warm_proto_socket_path(s->dirfd, addr.sun_path, sizeof(addr.sun_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 128) < 0) {
		close(fd);
		return -1;
	}
	s->listen_fd = fd;
	return 0;
}

/* The store directory was removed: so are we. */
static bool dir_gone(const struct server *s)
{
	struct stat st;

	return fstat(s->dirfd, &st) < 0 || st.st_nlink == 0;
}

/* The replaced zygote's end, added to why its successor's slot gives. */
static void describe_death(struct zygote *z, int status)
{
	size_t n = strlen(z->why);

	if (WIFSIGNALED(status))
		snprintf(z->why + n, sizeof(z->why) - n, " (pid %d, killed by signal %d: %s)",
		         (int)z->prev_pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(z->why + n, sizeof(z->why) - n, " (pid %d, exit status %d)",
		         (int)z->prev_pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* A zygote that died while starting keeps its slot as failed, with its
 * reason, so calls fall back at once and it is retried only later. */
static void reap_zygotes(struct server *s)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < SERVER_MAX_ZYGOTES; i++) {
			struct zygote *z = &s->z[i];

			if (z->prev_pid == pid) {
				describe_death(z, status);
				z->prev_pid = 0;
			}
			if (z->pid != pid)
				continue;
			if (z->state == Z_STARTING && z->ctl >= 0)
				on_zygote_message(s, z);   /* its last word: why it failed */
			if (!z->key_len)
				continue;   /* it refused a module, and its slot is free */
			if (z->state == Z_READY) {
				/* Killed while serving: replaced, and the status says so. */
				zygote_replace(s, z, "the zygote before this one exited while serving");
				describe_death(z, status);   /* z->prev_pid is pid, reaped */
				z->prev_pid = 0;
				continue;
			}
			if (z->state == Z_STARTING)
				snprintf(z->why, sizeof(z->why), "the zygote died while starting");
			z->state = Z_FAILED;
			z->pid = -1;
			if (z->ctl >= 0)
				close(z->ctl);
			z->ctl = -1;
		}
	}
}

static void evict_idle_zygotes(struct server *s)
{
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].key_len && s->z[i].state != Z_STARTING &&
		    deadline_now() - s->z[i].last_used > SERVER_ZYGOTE_IDLE)
			zygote_forget(&s->z[i]);
}

/* pid has not exited: our child not reaped yet, or a grown zygote (its
 * parent zygote's child) still there. */
static bool still_running(pid_t pid)
{
	pid_t got = waitpid(pid, NULL, WNOHANG);

	return got == 0 || (got < 0 && errno == ECHILD && kill(pid, 0) == 0);
}

/* Ask zygotes to finish (closing their control socket), wait a little for
 * them, then kill what is left: no process of ours outlives the server. */
static void stop_zygotes(struct server *s)
{
	pid_t pids[SERVER_MAX_ZYGOTES];
	size_t n = 0;

	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		if (s->z[i].key_len) {
			if (s->z[i].pid > 0)
				pids[n++] = s->z[i].pid;
			zygote_forget(&s->z[i]);
		}
	for (int tries = 0; tries < 200; tries++) {
		size_t alive = 0;

		for (size_t i = 0; i < n; i++) {
			if (pids[i] && still_running(pids[i]))
				alive++;
			else
				pids[i] = 0;
		}
		if (!alive)
			return;
		usleep(10000);
	}
	for (size_t i = 0; i < n; i++)
		if (pids[i]) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
}

/* An explicit stop (or a signal) waits for zygotes and kills what is left;
 * idling out or losing the directory lets calls in flight finish. */
static void server_exit(struct server *s, int code, bool kill_calls)
{
	/* We hold the server lock, so the socket name is still ours. */
	unlinkat(s->dirfd, WARM_SOCKET, 0);
	close(s->listen_fd);
	if (kill_calls) {
		stop_zygotes(s);
	} else {
		for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
			zygote_forget(&s->z[i]);   /* each exits after its last call */
	}
	_exit(code);
}

static void server_loop(struct server *s)
{
	struct pollfd p[2 + SERVER_MAX_ZYGOTES + MAX_CLIENTS + MEM_SERVER_MAX_LOCKS];

	for (;;) {
		nfds_t n = 0;
		size_t nc = s->n_clients;
		int zi[SERVER_MAX_ZYGOTES];

		int timeout = 1000;

		if (s->stopping)
			server_exit(s, 0, true);
		if (s->replaced)
			server_exit(s, 0, false);   /* never kill a running cell for that */
		for (int i = 0; i < SERVER_MAX_ZYGOTES; i++) {
			if (s->z[i].key_len && zygote_stuck(&s->z[i]))
				zygote_replace(s, &s->z[i], "the zygote before this one read no "
				               "call for 5 s while calls waited; killed");
			if (s->z[i].unread_since)
				timeout = ZYGOTE_STALL_POLL_MS;
		}
		if (dir_gone(s) ||
		    (deadline_now() - s->last_call > s->idle && s->n_clients == 0 && s->n_held == 0))
			server_exit(s, 0, false);
		evict_idle_zygotes(s);
		bound_live(s);
		p[n++] = (struct pollfd){ .fd = s->sig, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = s->listen_fd,
		                          .events = s->n_clients < MAX_CLIENTS ? POLLIN : 0 };
		for (int i = 0; i < SERVER_MAX_ZYGOTES; i++) {
			zi[i] = -1;
			if (s->z[i].ctl >= 0) {
				zi[i] = (int)n;
				p[n++] = (struct pollfd){ .fd = s->z[i].ctl, .events = POLLIN };
			}
		}
		size_t nh = s->n_held;

		for (size_t i = 0; i < nh; i++)
			p[n++] = (struct pollfd){ .fd = s->held[i], .events = POLLIN };
		for (size_t i = 0; i < nc; i++)
			p[n++] = (struct pollfd){ .fd = s->clients[i], .events = POLLIN };
		if (poll(p, n, timeout) < 0 && errno != EINTR)
			server_exit(s, 1, true);
		/* A lock connection only ever closes: release what it held. */
		for (size_t i = nh; i-- > 0;)
			if (p[n - nc - nh + i].revents) {
				mem_server_closed(s->mem, s->held[i]);
				close(s->held[i]);
				s->held[i] = s->held[--s->n_held];
				s->last_call = deadline_now();
			}
		if (p[0].revents) {
			struct signalfd_siginfo si;

			while (read(s->sig, &si, sizeof(si)) == (ssize_t)sizeof(si))
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
					s->stopping = true;
			reap_zygotes(s);
		}
		for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
			if (zi[i] >= 0 && p[zi[i]].revents && s->z[i].ctl >= 0)
				on_zygote_message(s, &s->z[i]);
		/* Clients last, newest first, since handling one may drop it. */
		for (size_t i = nc; i-- > 0;)
			if (p[n - nc + i].revents)
				on_client(s, i);
		if (p[1].revents)
			on_accept(s);
	}
}

void server_main(int dirfd, int lock_fd, double idle_seconds,
                 const struct wire_msg *prewarm)
{
	struct server s;   /* server_main never returns: its frame lives as long */
	sigset_t mask;
	int keep[] = { dirfd, lock_fd };

	prctl(PR_SET_NAME, "dolsot-server");
	memset(&s, 0, sizeof(s));
	s.dirfd = dirfd;
	s.idle = idle_seconds;
	s.started = s.last_call = deadline_now();
	s.exe_id = warm_proto_exe_id();
	for (int i = 0; i < SERVER_MAX_ZYGOTES; i++)
		s.z[i].ctl = -1;
	proc_child_close_fds(keep, lock_fd >= 0 ? 2 : 1);
	s.lock_fd = lock_fd;
	if (lock_fd >= 0)
		fcntl(lock_fd, F_SETFD, FD_CLOEXEC);
	if (proc_child_null_stdio() < 0)
		_exit(1);
	if (chdir("/") < 0)
		_exit(1);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	s.sig = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sig < 0 || open_listener(&s) < 0)
		_exit(0);
	if (prewarm)
		zygote_spawn(&s, &s.z[0], prewarm);
	server_loop(&s);
	_exit(0);
}
