/*
 * live.c - live sessions: the zygote's table of live processes, and the
 * live process's own loop (see live.h).
 *
 * Between the zygote and a live process runs a socketpair, ctl.  The
 * zygote sends each call as WIRE_RUN with one more fd before the call's
 * own (zygote.c's order): the live process's end of a new socketpair,
 * the snapshot's.  The live process forks the snapshot, which tells the
 * zygote WIRE_READY with its pid on that socket and waits for WIRE_GO
 * there (it holds the session from then on, that socket its ctl) or for
 * its end (the call completed: it is not needed).  The live process runs
 * the call as a zygote's worker would (WIRE_STARTED, the client's
 * WIRE_GO, the cell, the answer and the session written), kills what the
 * cell left running and its snapshot, and tells the zygote WIRE_STATUS on
 * ctl; the zygote answers the client for it.  A call that does not
 * complete ends its process; the zygote reaps it as any worker and wakes
 * the snapshot.
 */
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "frame.h"
#include "guard.h"
#include "le.h"
#include "proc.h"
#include "proc_child.h"
#include "server_diag.h"
#include "store_ops.h"
#include "units.h"
#include "worker.h"

/* Bytes of a saved session the fingerprint hashes: its head, which holds
 * the index and the save's random token (session.py). */
#define LIVE_HEAD 4096
/* How long the zygote waits for a snapshot's WIRE_READY when it must wake
 * it (it sent it right after the fork, so this is only for one that died). */
#define LIVE_SNAP_WAIT_MS 2000
/* A call that finds its session's live process still busy with the call
 * before (whose client gave up, so the lock was free) waits this long for
 * that process to die, so that its snapshot can take over. */
#define LIVE_BUSY_WAIT_MS 2000
#define LIVE_BUSY_POLL_NS 5000000
/* A live process reads how much it will share with the snapshot it forks
 * ahead (smaps_rollup, about a millisecond for a large session) again only
 * when its resident size moved by more than this since it last did. */
#define LIVE_REMEASURE_KB 1024
/* The server reads its live processes' memory (smaps_rollup, for the
 * memory bound) at most this often, not on every report of every call. */
#define LIVE_MEMORY_CHECK_SECONDS 1.0

struct holder {
	char session[STORE_ID_MAX + 1];
	pid_t pid;                /* the live process */
	int ctl;                  /* the zygote's end of its socket */
	int snap;                 /* the zygote's end of its snapshot's socket; -1: none */
	pid_t snap_pid;           /* from the snapshot's WIRE_READY; 0 before */
	int save;                 /* during a call: the call's save file, for the fingerprint */
	bool busy;                /* a call runs */
	bool saved;               /* len and hash are set */
	long shared_kb;           /* what it shares with the snapshot it forked
	                           * ahead of its next call, which is its own
	                           * (its WIRE_INFO); 0: none */
	uint64_t len, hash;       /* the fingerprint of what it last saved */
	struct limits limits;     /* the limits it runs under (from its first call) */
	uint64_t sandbox;         /* the sandbox it runs in (sandbox_key); 0: none */
	pid_t box;                /* in a sandbox: its outer process, the zygote's
	                           * child (the call's pid until the first call
	                           * completed); 0: none */
	int box_ctl;              /* in a sandbox: its init's reports; -1: none */
	pid_t init;               /* in a sandbox: its init (box's one child); 0 before
	                           * its first report */
	pid_t ns_pid;             /* in a sandbox: pid's number inside it */
	pid_t snap_ns;            /* the snapshot's number inside it */
	double last_used;
};

/* Calls whose process ended inside a sandbox, which the zygote cannot
 * wait for: the sandbox's init said so (live_next_ended hands them on). */
static struct {
	pid_t pid;
	int status;
} ended[LIVE_MAX_HELD];
static size_t n_ended;

/* The table changed since the zygote last told the server (live_report). */
static bool dirty;

/* Why a session's live process was ended by a bound, for the next call on
 * that session (live_take's note); the oldest gives way. */
static struct {
	char session[STORE_ID_MAX + 1];
	char why[LIVE_NOTE_MAX];
} notes[LIVE_MAX_HELD];
static size_t next_note;

static struct holder held[LIVE_MAX_HELD];
static size_t n_held;
/* The bounds (live_init). */
static size_t max_held = LIVE_MAX_HELD;
static long max_kb = LIVE_MEMORY_KB;
static double max_idle = LIVE_IDLE_SECONDS;

/* ---- the zygote's side ---- */

static long env_number(const char *name, long dflt, long max)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return dflt;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno || *end || n < 0 ? dflt : n > max ? max : n;
}

void live_forget(void)
{
	n_held = 0;
	n_ended = 0;
	dirty = false;
	memset(notes, 0, sizeof(notes));
}

void live_init(void)
{
	max_held = (size_t)env_number("DOLSOT_LIVE_MAX", LIVE_MAX_HELD, LIVE_MAX_HELD);
	max_kb = env_number("DOLSOT_LIVE_MEMORY_MB", LIVE_MEMORY_KB / 1024, 1L << 30) * 1024;
	max_idle = (double)env_number("DOLSOT_LIVE_IDLE", LIVE_IDLE_SECONDS, 1L << 30);
}

/* The bytes of the session in fd (len bytes) the store keeps: a version
 * 4 session's head, whatever pack of units follows it there (the worker
 * writes one after it, a sandboxed call is handed one: units.h); all of
 * an older one. */
static uint64_t kept_len(int fd, uint64_t len)
{
	struct units_head h;
	char err[UNITS_ERR_MAX];
	uint64_t kept = len;
	uint8_t *p;

	if (len == 0 || len > SIZE_MAX)
		return len;
	p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return len;
	if (units_is_v4(p, (size_t)len) &&
	    units_parse_head(p, (size_t)len, &h, err, sizeof(err)) == 0)
		kept = h.head_len;
	munmap(p, (size_t)len);
	return kept;
}

/* The fingerprint of the session in fd (len bytes): the length of what the
 * store keeps of it into *kept, and a hash of its first LIVE_HEAD bytes;
 * 0 when it cannot be read. */
static uint64_t head_hash(int fd, uint64_t len, uint64_t *kept)
{
	uint8_t head[LIVE_HEAD];
	size_t want;
	ssize_t got;

	*kept = kept_len(fd, len);
	want = *kept < sizeof(head) ? (size_t)*kept : sizeof(head);
	got = pread(fd, head, want, 0);
	if (got != (ssize_t)want)
		return 0;   /* no fingerprint a save can have (see saved_fingerprint) */
	return le_fnv(le_fnv(LE_FNV_BASIS, kept, sizeof(*kept)), head, want) | 1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool queued(pid_t pid)
{
	for (size_t i = 0; i < n_ended; i++)
		if (ended[i].pid == pid)
			return true;
	return false;
}

static void queue_end(pid_t pid, int status)
{
	if (queued(pid))
		return;
	if (n_ended < LIVE_MAX_HELD)
		ended[n_ended++] = (typeof(ended[0])){ pid, status };
}

bool live_next_ended(pid_t *pid, int *status)
{
	if (!n_ended)
		return false;
	*pid = ended[--n_ended].pid;
	*status = ended[n_ended].status;
	return true;
}

/* End h's process with whatever it started (in a sandbox, the sandbox),
 * and forget it. */
static void end_holder(struct holder *h)
{
	/* A call in the sandbox ends with it, and no one could wait for it. */
	if (h->busy && h->pid > 0 && h->sandbox && h->pid != h->box)
		queue_end(h->pid, SIGKILL);
	if (h->pid > 0) {
		kill(-h->pid, SIGKILL);
		kill(h->pid, SIGKILL);
	}
	if (h->box > 0) {
		kill(-h->box, SIGKILL);
		kill(h->box, SIGKILL);
	}
	close_fd(&h->box_ctl);
	close_fd(&h->ctl);
	close_fd(&h->snap);   /* the snapshot ends when its socket does */
	close_fd(&h->save);
	*h = held[--n_held];
	dirty = true;
}

/* A bound ended h (why): the next call on its session is told so. */
static void evict(struct holder *h, const char *why)
{
	size_t i;

	for (i = 0; i < LIVE_MAX_HELD; i++)
		if (strcmp(notes[i].session, h->session) == 0)
			break;
	if (i == LIVE_MAX_HELD)
		i = next_note++ % LIVE_MAX_HELD;
	snprintf(notes[i].session, sizeof(notes[i].session), "%s", h->session);
	snprintf(notes[i].why, sizeof(notes[i].why), "%s", why);
	end_holder(h);
}

/* The note evict left for session, into note (empty when none), taken. */
static void take_note(struct span session, char *note, size_t len)
{
	*note = '\0';
	for (size_t i = 0; i < LIVE_MAX_HELD; i++)
		if (notes[i].session[0] && strlen(notes[i].session) == session.len &&
		    memcmp(notes[i].session, session.p, session.len) == 0) {
			snprintf(note, len, "%s", notes[i].why);
			memset(&notes[i], 0, sizeof(notes[i]));
		}
}

static struct holder *find(struct span session)
{
	for (size_t i = 0; i < n_held; i++)
		if (strlen(held[i].session) == session.len &&
		    memcmp(held[i].session, session.p, session.len) == 0)
			return &held[i];
	return NULL;
}

static struct holder *find_pid(pid_t pid)
{
	for (size_t i = 0; i < n_held; i++)
		if (held[i].pid == pid)
			return &held[i];
	return NULL;
}

static struct holder *find_box(pid_t pid)
{
	for (size_t i = 0; i < n_held; i++)
		if (held[i].box == pid)
			return &held[i];
	return NULL;
}

/* What the call's sandbox is made of (its binds with their modes, its
 * environment), hashed; 0 for a call without one.  A live process stays in
 * the sandbox its first call made. */
static uint64_t sandbox_key(const struct request *r)
{
	uint64_t h = LE_FNV_BASIS;

	if (!(r->flags & REQ_SANDBOX))
		return 0;
	h = le_fnv(h, &r->binds.len, sizeof(r->binds.len));
	h = le_fnv(h, r->binds.p, r->binds.len);
	h = le_fnv(h, &r->env.len, sizeof(r->env.len));
	return le_fnv(h, r->env.p, r->env.len) | 1;
}

/* Whether h may run the call: it holds what the store has, under the
 * call's limits, in the call's sandbox (or none). */
static bool matches(const struct holder *h, const struct wire_msg *m, const struct request *r)
{
	uint64_t kept;

	return !h->busy && h->saved && (r->flags & REQ_SESSION) && m->nfds > LIVE_FD_LOAD &&
	       memcmp(&r->limits, &h->limits, sizeof(r->limits)) == 0 &&
	       h->sandbox == sandbox_key(r) &&
	       head_hash(m->fds[LIVE_FD_LOAD], r->blob_len, &kept) == h->hash && kept == h->len;
}

static double now(void)
{
	return deadline_now();
}

/* The idle live process used longest ago, or NULL. */
static struct holder *lru_idle(void)
{
	struct holder *lru = NULL;

	for (size_t i = 0; i < n_held; i++)
		if (!held[i].busy && (!lru || held[i].last_used < lru->last_used))
			lru = &held[i];
	return lru;
}

/* What a live process holds, in kB: its private memory, and what it
 * shares only with the snapshot it forked ahead (shared_kb); -1 when
 * unknown. */
static long holds_kb(pid_t pid, long shared_kb)
{
	long kb = server_diag_private_kb(pid);

	return kb < 0 ? -1 : kb + shared_kb;
}

/* The private memory of the live processes together, in kB; the idle one
 * holding most into *big (NULL: none is idle). */
static long held_kb(struct holder **big)
{
	long total = 0, most = -1;

	*big = NULL;
	for (size_t i = 0; i < n_held; i++) {
		long kb = holds_kb(held[i].pid, held[i].shared_kb);

		total += kb > 0 ? kb : 0;
		if (!held[i].busy && kb > most) {
			most = kb;
			*big = &held[i];
		}
	}
	return total;
}

/* Room for one more live process: while the table is full the least
 * recently used idle one ends, while they hold too much the idle one
 * holding most.  False when all are busy. */
static bool make_room(void)
{
	struct holder *h;

	while (n_held) {
		char why[LIVE_NOTE_MAX];
		long kb;

		if (n_held >= max_held && (h = lru_idle())) {
			snprintf(why, sizeof(why), "another session's call needed its place "
			         "(DOLSOT_LIVE_MAX=%zu)", max_held);
		} else if (n_held < max_held && (kb = held_kb(&h)) > max_kb && h) {
			snprintf(why, sizeof(why), "the live sessions held %ld MB together, past "
			         "DOLSOT_LIVE_MEMORY_MB=%ld, and it held the most", kb / 1024,
			         max_kb / 1024);
		} else {
			break;
		}
		evict(h, why);
	}
	return n_held < max_held;
}

static bool decode(const struct wire_msg *m, struct request *r, uint8_t **map, size_t *len)
{
	struct stat st;
	char err[256];

	*map = NULL;
	memset(r, 0, sizeof(*r));
	if (m->nfds < LIVE_RUN_FDS - 1 || fstat(m->fds[LIVE_FD_REQUEST], &st) < 0 ||
	    st.st_size <= 0)
		return false;
	*len = (size_t)st.st_size;
	*map = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, m->fds[LIVE_FD_REQUEST], 0);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return false;
	}
	return frame_decode_request(*map, *len, r, err, sizeof(err)) == 0;
}

static __attribute__((noreturn)) void live_main(int ctl, int box, int *fds, size_t nfds);

/* A socketpair whose end sv[0] learns the sender's pid of each message
 * (wire_msg.pid), in the zygote's PID namespace: a process in a sandbox
 * knows only its number inside.  0 or -1. */
static int pid_socketpair(int sv[2])
{
	int one = 1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	return 0;
}

/* A new live process for the call, forked from this zygote; with a
 * sandbox, *box_ctl gets the end of its init's reports. */
static pid_t fork_holder(struct wire_msg *m, const sigset_t *mask, int *ctl, bool sandbox,
                         int *box_ctl)
{
	int sv[2], box[2] = { -1, -1 }, keep[LIVE_RUN_FDS + 2];
	pid_t pid, zygote = getpid();

	if (pid_socketpair(sv) < 0)
		return -1;
	if (sandbox && pid_socketpair(box) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	worker_before_fork();
	pid = fork();
	if (pid == 0) {
		keep[0] = sv[1];
		keep[1] = box[1];
		memcpy(keep + 2, m->fds, m->nfds * sizeof(int));
		if (proc_child_detach(zygote, keep, (int)m->nfds + 2, mask) < 0)
			_exit(127);
		live_main(sv[1], box[1], m->fds, m->nfds);
	}
	worker_after_fork_parent();
	close(sv[1]);
	if (box[1] >= 0)
		close(box[1]);
	if (pid < 0) {
		close(sv[0]);
		if (box[0] >= 0)
			close(box[0]);
		return -1;
	}
	setpgid(pid, pid);
	*ctl = sv[0];
	*box_ctl = box[0];
	return pid;
}

/* Hand the call to h, which forks its snapshot first.  0 or -1. */
static int send_to(struct holder *h, const struct wire_msg *m)
{
	int sv[2], fds[WIRE_MAX_FDS];

	if (m->nfds + 1 > WIRE_MAX_FDS || pid_socketpair(sv) < 0)
		return -1;
	fds[0] = sv[1];
	memcpy(fds + 1, m->fds, m->nfds * sizeof(int));
	/* b: the pid it tells the client, which it cannot know in a sandbox. */
	if (wire_send(h->ctl, WIRE_RUN, m->a, (uint64_t)h->pid, NULL, 0, fds, m->nfds + 1) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	close(sv[1]);
	h->snap = sv[0];
	h->snap_pid = 0;
	return 0;
}

static void box_report(struct holder *h);

/* Wait until the busy process of h has ended (its status still to be
 * reaped, or queued for live_next_ended): true when it did within
 * LIVE_BUSY_WAIT_MS. */
static bool ended_soon(struct holder *h)
{
	struct timespec until, pause = { 0, LIVE_BUSY_POLL_NS };
	pid_t pid = h->pid;

	deadline_in_ns(&until, (int64_t)LIVE_BUSY_WAIT_MS * 1000000);
	if (h->box > 0 && pid != h->box) {
		/* Inside a sandbox: its init says when. */
		do {
			struct pollfd p = { h->box_ctl, POLLIN, 0 };

			if (poll(&p, 1, deadline_poll_ms(deadline_left(&until))) == 1)
				box_report(h);
			if (queued(pid))
				return true;
		} while (h->box_ctl >= 0 && deadline_left(&until) > 0);
		return false;
	}
	do {
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
			return false;
		if (si.si_pid == pid)
			return true;
		nanosleep(&pause, NULL);
	} while (deadline_left(&until) > 0);
	return false;
}

enum live_take live_take(struct wire_msg *m, const sigset_t *mask, pid_t *pid,
                         char *note, size_t notelen)
{
	struct request r;
	struct holder *h;
	uint8_t *map;
	size_t len = 0;
	bool ok = decode(m, &r, &map, &len), live = ok && (r.flags & REQ_LIVE);

	h = ok ? find(r.session) : NULL;
	if (h && live && h->busy && h->pid > 0 && ended_soon(h)) {
		munmap(map, len);
		return LIVE_REAP_FIRST;   /* its end wakes the snapshot first */
	}
	if (ok)
		take_note(r.session, note, notelen);
	if (h && live && matches(h, m, &r) && send_to(h, m) == 0)
		goto taken;
	/* The store moved on from it, the call is not live (a --describe,
	 * which writes nothing, leaves it be), or it is gone. */
	if (h && !(r.flags & REQ_DESCRIBE))
		end_holder(h);
	if (!live || r.session.len > STORE_ID_MAX || !make_room()) {
		if (map)
			munmap(map, len);
		return LIVE_NOT_TAKEN;
	}
	h = &held[n_held];
	memset(h, 0, sizeof(*h));
	h->snap = h->save = h->box_ctl = -1;
	h->sandbox = sandbox_key(&r);
	h->pid = fork_holder(m, mask, &h->ctl, h->sandbox != 0, &h->box_ctl);
	if (h->pid > 0) {
		memcpy(h->session, r.session.p, r.session.len);
		h->limits = r.limits;
		h->box = h->sandbox ? h->pid : 0;
		n_held++;
	}
taken:
	dirty = true;
	*pid = h->pid;
	if (h->pid > 0) {
		h->busy = true;
		h->last_used = now();
		h->save = fcntl(m->fds[LIVE_FD_SAVE], F_DUPFD_CLOEXEC, 3);
	}
	munmap(map, len);
	return LIVE_TAKEN;
}

/* The snapshot's WIRE_READY, if it came: its pid into h.  A snapshot is
 * its live process's child until that process dies, and the zygote's
 * from then on, which must know it by then. */
static void learn_snapshot(struct holder *h)
{
	struct pollfd p = { h->snap, POLLIN, 0 };
	struct wire_msg m;

	if (h->snap < 0 || h->snap_pid || poll(&p, 1, 0) != 1 || wire_recv(h->snap, &m) != 1)
		return;
	if (m.type == WIRE_READY && m.a > 0 && m.a < (uint64_t)INT32_MAX) {
		h->snap_ns = (pid_t)m.a;   /* its number inside a sandbox */
		h->snap_pid = m.pid > 0 ? m.pid : (pid_t)m.a;
	}
	wire_msg_release(&m);
}

bool live_is_ours(pid_t pid)
{
	for (size_t i = 0; i < n_held; i++)
		learn_snapshot(&held[i]);
	for (size_t i = 0; i < n_held; i++)
		if (held[i].pid == pid || (held[i].snap_pid && held[i].snap_pid == pid) ||
		    (held[i].box && held[i].box == pid))
			return true;
	return false;
}

size_t live_poll_fds(struct pollfd *p)
{
	size_t n = 0;

	for (size_t i = 0; i < n_held; i++) {
		p[n++] = (struct pollfd){ .fd = held[i].ctl, .events = POLLIN };
		if (held[i].box_ctl >= 0)
			p[n++] = (struct pollfd){ .fd = held[i].box_ctl, .events = POLLIN };
	}
	return n;
}

static short revents_of(const struct pollfd *p, size_t n, int fd)
{
	for (size_t i = 0; fd >= 0 && i < n; i++)
		if (p[i].fd == fd)
			return p[i].revents;
	return 0;
}

/* Whether the report m came from h's sandbox's init: the kernel names its
 * sender (SO_PASSCRED), which must be the one child of the sandbox's outer
 * process, learned at its first report.  Nothing else in the sandbox holds
 * the socket, and the init is not dumpable (sandbox_init.c), but a report
 * decides whether the session rolls back: no other process may speak for
 * it (issue 35). */
static bool from_init(struct holder *h, const struct wire_msg *m)
{
	pid_t kids[2];

	if (!h->init && h->box > 0 && proc_list_children(h->box, kids, 2) == 1)
		h->init = kids[0];
	return h->init > 0 && m->pid == h->init;
}

/* One report of h's sandbox's init: a process of the sandbox ended.  When
 * it is h's live process, its call (if any) ended as a reaped worker's
 * would; when the init is gone, so is the sandbox. */
static void box_report(struct holder *h)
{
	struct wire_msg m;
	int got = wire_recv(h->box_ctl, &m);
	pid_t inside;

	if (got < 0 && errno == EAGAIN)
		return;
	if (got != 1) {
		end_holder(h);
		return;
	}
	wire_msg_release(&m);
	inside = (pid_t)m.b;
	if (!from_init(h, &m) || m.type != WIRE_STATUS || inside <= 0 ||
	    m.b > (uint64_t)INT32_MAX)
		return;
	/* Before the first call completed, the init's one child is the
	 * process that runs it. */
	if (h->pid != h->box && inside != h->ns_pid)
		return;   /* something the cell left, or a snapshot that went */
	if (h->busy)
		queue_end(h->pid, (int)m.a);
	else
		end_holder(h);
}

/* The call of h completed: note the fingerprint of what it saved. */
static void completed(struct holder *h)
{
	struct stat st;

	if (h->save >= 0 && fstat(h->save, &st) == 0 && st.st_size > 0) {
		h->hash = head_hash(h->save, (uint64_t)st.st_size, &h->len);
		h->saved = h->hash != 0;
	}
	close_fd(&h->save);
	close_fd(&h->snap);
	h->snap_pid = 0;
	h->busy = false;
	h->last_used = now();
	dirty = true;
}

void live_events(const struct pollfd *p, size_t n, void (*done)(pid_t pid))
{
	/* From the end: end_holder moves the last entry into the hole. */
	for (size_t i = n_held; i-- > 0;) {
		struct holder *h = &held[i];
		struct wire_msg m;
		int got;

		if (revents_of(p, n, h->box_ctl)) {
			box_report(h);
			if (h != &held[i] || i >= n_held)
				continue;   /* it ended */
		}
		if (!revents_of(p, n, h->ctl))
			continue;
		got = wire_recv(h->ctl, &m);
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got == 1 && m.type == WIRE_STATUS && h->busy) {
			pid_t pid = h->pid;

			wire_msg_release(&m);
			completed(h);
			done(pid);
			/* In a sandbox, the process the zygote knows from now on
			 * (not its outer one), and its number inside. */
			if (h->box && m.pid > 0) {
				h->pid = m.pid;
				h->ns_pid = (pid_t)m.a;
				dirty = true;
			}
			continue;
		}
		if (got == 1) {
			if (m.type == WIRE_INFO && m.a < (uint64_t)LONG_MAX) {
				h->shared_kb = (long)m.a;
				dirty = true;
			}
			wire_msg_release(&m);
			continue;
		}
		/* Its socket closed: it is dying; its call (if any) ends when it
		 * is reaped, and the snapshot gets its chance then. */
		if (!h->busy)
			end_holder(h);
	}
}

/* Wake h's snapshot, which holds the state before the call: true when it
 * is the session's process now. */
static bool wake_snapshot(struct holder *h)
{
	struct pollfd p = { h->snap, POLLIN, 0 };

	if (h->snap < 0)
		return false;
	if (!h->snap_pid && poll(&p, 1, LIVE_SNAP_WAIT_MS) == 1)
		learn_snapshot(h);
	if (!h->snap_pid)
		return false;
	/* In a sandbox, what the killed process started and its group did
	 * not hold ends too: its init keeps only the snapshot. */
	if (h->box_ctl >= 0 &&
	    wire_send(h->box_ctl, WIRE_GO, (uint64_t)h->snap_ns, 0, NULL, 0, NULL, 0) < 0)
		return false;
	if (wire_send(h->snap, WIRE_GO, 0, 0, NULL, 0, NULL, 0) < 0)
		return false;
	close_fd(&h->ctl);
	h->ctl = h->snap;
	h->snap = -1;
	h->pid = h->snap_pid;
	h->ns_pid = h->snap_ns;
	h->snap_pid = 0;
	h->shared_kb = 0;
	close_fd(&h->save);
	h->busy = false;
	h->last_used = now();
	dirty = true;
	return true;
}

bool live_ended(pid_t pid)
{
	struct holder *h = find_pid(pid);

	if (!h)
		return false;
	if (h->box == pid)
		h->box = 0;   /* the first call's: reaped */
	h->pid = 0;   /* reaped (or dead in its sandbox): not to be killed by pid */
	if (!wake_snapshot(h))
		end_holder(h);
	return true;
}

void live_reaped(pid_t pid)
{
	struct holder *h = find_pid(pid);

	if (h && !h->busy) {
		h->pid = 0;
		end_holder(h);
	} else if ((h = find_box(pid))) {
		h->box = 0;   /* the sandbox is gone, and its call with it */
		end_holder(h);
	}
}

int live_expire(void)
{
	int next = -1;

	for (size_t i = n_held; i-- > 0;) {
		double left;

		if (held[i].busy)
			continue;
		left = held[i].last_used + max_idle - now();
		if (left <= 0) {
			char why[LIVE_NOTE_MAX];

			snprintf(why, sizeof(why), "it was idle for %.0f s (DOLSOT_LIVE_IDLE)",
			         max_idle);
			evict(&held[i], why);
			continue;
		}
		next = deadline_poll_min(next, deadline_poll_ms(left));
	}
	return next;
}

void live_end_all(void)
{
	while (n_held)
		end_holder(&held[n_held - 1]);
}

void live_report(int ctl)
{
	uint8_t payload[WIRE_MAX_PAYLOAD];
	size_t len = 0;

	if (!dirty)
		return;
	dirty = false;
	for (size_t i = 0; i < n_held; i++) {
		char entry[STORE_ID_MAX + 64];

		snprintf(entry, sizeof(entry), "%.128s\t%d\t%d\t%.3f\t%ld", held[i].session,
		         (int)held[i].pid, held[i].busy, held[i].last_used, held[i].shared_kb);
		if (wire_put(payload, &len, LIVE_ENTRY, entry) < 0)
			break;
	}
	/* An empty report is a valid one (nothing held): one NUL. */
	if (!len)
		payload[len++] = '\0';
	wire_send(ctl, WIRE_INFO, 0, 0, payload, len, NULL, 0);
}

void live_on_stop(const struct wire_msg *m)
{
	size_t pos = 0, at = 0;
	const char *name = wire_next(m->payload, m->len, LIVE_ENTRY, &pos),
	           *why = wire_next(m->payload, m->len, LIVE_WHY, &at);
	struct holder *h = name ? find(span_str(name)) : NULL;

	if (h && !h->busy)
		evict(h, why ? why : "the server's bounds for live sessions");
}

/* ---- the server's side ---- */

/* One entry of a report. */
struct entry {
	char session[STORE_ID_MAX + 1];
	pid_t pid;
	bool busy;
	double last_used;
	long shared_kb;   /* holder's shared_kb */
};

static bool parse_entry(const char *text, struct entry *e)
{
	const char *tab = strchr(text, '\t');
	int busy;

	if (!tab || (size_t)(tab - text) > STORE_ID_MAX)
		return false;
	memcpy(e->session, text, (size_t)(tab - text));
	e->session[tab - text] = '\0';
	if (sscanf(tab + 1, "%d\t%d\t%lf\t%ld", &e->pid, &busy, &e->last_used,
	           &e->shared_kb) != 4 || e->shared_kb < 0)
		return false;
	e->busy = busy != 0;
	return true;
}

/* The entry of r to end, if any: the least recently used idle one while
 * more than max_total are live; while they hold more than max_kb
 * together, the idle one holding most.  Its report's index into *at, and
 * why into why; false when the bounds hold (or only busy ones pass). */
static bool pick(const struct live_reports *r, size_t n, bool measure, struct entry *out,
                 int *at, char *why, size_t whylen)
{
	long max_kb_total = env_number("DOLSOT_LIVE_MEMORY_MB", LIVE_MEMORY_KB / 1024,
	                               1L << 30) * 1024, total_kb = 0, big_kb = -1;
	size_t count = 0, max_total = (size_t)env_number("DOLSOT_LIVE_MAX", LIVE_MAX_HELD,
	                                                 1L << 20);
	struct entry lru = { .last_used = 0 }, big = { .last_used = 0 };
	int lru_at = -1, big_at = -1;

	for (size_t i = 0; i < n; i++) {
		size_t pos = 0;
		const char *text;

		while ((text = wire_next(r[i].payload, r[i].len, LIVE_ENTRY, &pos))) {
			struct entry e;
			long kb;

			if (!parse_entry(text, &e))
				continue;
			count++;
			kb = measure ? holds_kb(e.pid, e.shared_kb) : 0;
			total_kb += kb > 0 ? kb : 0;
			if (e.busy)
				continue;
			if (lru_at < 0 || e.last_used < lru.last_used)
				lru = e, lru_at = (int)i;
			if (kb > big_kb)
				big = e, big_at = (int)i, big_kb = kb;
		}
	}
	if (lru_at >= 0 && count > max_total) {
		snprintf(why, whylen, "more than DOLSOT_LIVE_MAX=%zu sessions were live, and it "
		         "was the one used longest ago", max_total);
		*out = lru;
		*at = lru_at;
		return true;
	}
	if (big_at >= 0 && total_kb > max_kb_total) {
		snprintf(why, whylen, "it held %ld MB of private memory, and the live sessions "
		         "together held %ld MB, past DOLSOT_LIVE_MEMORY_MB=%ld", big_kb / 1024,
		         total_kb / 1024, max_kb_total / 1024);
		*out = big;
		*at = big_at;
		return true;
	}
	return false;
}

int live_pick_evict(const struct live_reports *r, size_t n, char *session, size_t len,
                    char *why, size_t whylen)
{
	static double memory_checked;
	bool measure = now() - memory_checked >= LIVE_MEMORY_CHECK_SECONDS;
	struct entry e;
	int at;

	if (measure)
		memory_checked = now();
	if (!pick(r, n, measure, &e, &at, why, whylen))
		return -1;
	snprintf(session, len, "%s", e.session);
	return at;
}

void live_status(char *text, size_t *n, size_t cap, const uint8_t *report, size_t len)
{
	size_t pos = 0;
	const char *entry;

	while ((entry = wire_next(report, len, LIVE_ENTRY, &pos)) && *n < cap) {
		struct entry e;
		int w;

		if (!parse_entry(entry, &e))
			continue;
		w = snprintf(text + *n, cap - *n, "  live %s pid %d: %ld kB private, %s %.0f s\n",
		             e.session, (int)e.pid, holds_kb(e.pid, e.shared_kb),
		             e.busy ? "running a call for" : "idle", now() - e.last_used);
		if (w < 0 || (size_t)w >= cap - *n)
			break;
		*n += (size_t)w;
	}
}

/* ---- the live process ---- */

/* The client's word: WIRE_STARTED, then its WIRE_GO.  False when it is
 * gone or said otherwise: the cell must not run. */
static bool client_go(int client, pid_t self, int *tools)
{
	struct wire_msg go;
	int got;

	if (wire_send(client, WIRE_STARTED, (uint64_t)self, 0, NULL, 0, NULL, 0) < 0)
		return false;
	do {
		struct pollfd p = { client, POLLIN, 0 };

		got = poll(&p, 1, -1) < 0 ? -1 : wire_recv(client, &go);
	} while (got < 0 && (errno == EINTR || errno == EAGAIN));
	if (got != 1)
		return false;
	if (go.type == WIRE_GO && go.nfds == 1) {
		*tools = go.fds[0];   /* the host-call channel (hosttools.h) */
		go.fds[0] = -1;
	}
	wire_msg_release(&go);
	return go.type == WIRE_GO;
}

/* Run one call (fds in zygote.c's order), as self (this process's pid in
 * the zygote's PID namespace); true when the cell completed or never ran,
 * false when this process must give way to its snapshot.  hold: what the
 * first call's isolation keeps. */
static bool run_call(int *fds, size_t nfds, bool held_state, pid_t self,
                     const struct isolate_hold *hold)
{
	struct worker_fds w = { fds[LIVE_FD_REQUEST], fds[LIVE_FD_RESULT],
	                        nfds > LIVE_FD_LOAD ? fds[LIVE_FD_LOAD] : -1, fds[LIVE_FD_SAVE],
	                        -1 };
	bool ok = true;

	if (proc_child_stdio(fds[LIVE_FD_OUT], fds[LIVE_FD_ERR]) < 0)
		_exit(127);
	close(fds[LIVE_FD_OUT]);
	close(fds[LIVE_FD_ERR]);
	if (client_go(fds[LIVE_FD_CLIENT], self, &w.tools)) {
		close(fds[LIVE_FD_CLIENT]);
		ok = worker_live_call(&w, held_state, hold);
		fd_close(&w.tools);
	} else {
		close(fds[LIVE_FD_CLIENT]);
		fd_close(&w.load);
	}
	close(w.request);
	close(w.result);
	close(w.save);
	/* 0-2 back on /dev/null, so the call's pipes see their end. */
	if (proc_child_null_stdio() < 0)
		_exit(127);   /* the call's pipes would stay open: end, roll back */
	return ok;
}

/*
 * Fork the snapshot of the call to come, not dumpable from its first
 * instant (the flag belongs to the memory, which fork copies): the cell
 * runs in this process, the snapshot's parent, under the same uid, and
 * must not open the snapshot's /proc/PID/mem (the state a rollback
 * restores) or take its socket to the zygote (issue 35).  This process
 * goes on as it was, *dumpable, which the snapshot becomes again once
 * woken.  Returns what fork() does (-1 also when the flag cannot be set).
 */
static pid_t fork_snapshot(int *dumpable)
{
	pid_t pid;

	*dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -1;
	pid = worker_live_fork();
	if (pid != 0 && prctl(PR_SET_DUMPABLE, *dumpable, 0, 0, 0) < 0) {
		if (pid > 0)
			kill(pid, SIGKILL);
		return -1;
	}
	return pid;
}

/* In the snapshot: wait to be woken.  Returns its socket, now its ctl;
 * exits when the call completed without it.  boxed: in a sandbox, whose
 * init is its parent once it takes over and ends the sandbox with it;
 * dumpable: what the process it was made from was (fork_snapshot). */
static int snapshot_wait(int snap, bool boxed, int dumpable)
{
	char err[256];
	struct wire_msg m;
	int got;

	prctl(PR_SET_NAME, "dolsot-snapshot");
	setpgid(0, 0);
	if (wire_send(snap, WIRE_READY, (uint64_t)getpid(), 0, NULL, 0, NULL, 0) < 0)
		_exit(0);
	do
		got = wire_recv(snap, &m);
	while (got < 0 && errno == EINTR);
	if (got != 1 || m.type != WIRE_GO)
		_exit(0);
	wire_msg_release(&m);
	/* The session's process from now on: its cells run here. */
	if (prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) < 0)
		_exit(0);
	/* Our parent, the process that ran the call, is gone: the zygote (or
	 * the sandbox's init) is our parent now, and we end with it, and so
	 * does what we start. */
	if (boxed ? prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 : guard_arm(err, sizeof(err)) < 0)
		_exit(0);
	prctl(PR_SET_NAME, "dolsot-live");
	return snap;
}

/* What this process's snapshot forked now would share with it, in kB
 * (what it wrote: see LIVE_REMEASURE_KB), 0 when unknown. */
static long shared_with_snapshot(void)
{
	static long measured_at = -1, dirty_kb;
	long rss = (long)(proc_resident_bytes() / 1024);

	if (rss == 0)
		return 0;
	if (measured_at < 0 || labs(rss - measured_at) > LIVE_REMEASURE_KB) {
		dirty_kb = server_diag_dirty_kb(0);
		measured_at = rss;
	}
	return dirty_kb > 0 ? dirty_kb : 0;
}

/*
 * After a completed call, its answer sent: fork the next call's snapshot
 * now, off that call's path, when nothing can change this process before
 * that call comes: no thread but this one (a thread a cell started runs
 * between calls, and the state before the next call would not be this
 * one).  The snapshot waits on a socket of ours for the zygote's socket,
 * which the next call brings (hand_over).  Returns what fork() does, -1
 * also when no snapshot was forked; *ahead our end of that socket (-1:
 * none, the next call forks its own), *shared_kb what we share with the
 * snapshot (0: none).
 */
static pid_t fork_ahead(int *ahead, int *dumpable, long *shared_kb)
{
	int sv[2];
	pid_t self = getpid(), pid;

	*ahead = -1;
	*shared_kb = 0;
	if (proc_thread_count() != 1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*shared_kb = shared_with_snapshot();   /* before the fork shares it */
	pid = fork_snapshot(dumpable);
	if (pid == 0) {
		prctl(PR_SET_NAME, "dolsot-snapshot");
		close(sv[0]);
		*ahead = sv[1];
		/* Until the next call takes it, it ends with us (and, in our
		 * process group, with what ends us). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(0);
		return 0;
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		*shared_kb = 0;
	} else {
		*ahead = sv[0];
	}
	return pid;
}

/* In a snapshot forked ahead: the zygote's socket the next call brought,
 * or exit when none comes.  It outlives us from now on. */
static int take_over(int ahead)
{
	struct wire_msg m;
	int got, snap;

	do
		got = wire_recv(ahead, &m);
	while (got < 0 && errno == EINTR);
	if (got != 1 || m.type != WIRE_RUN || m.nfds != 1 || prctl(PR_SET_PDEATHSIG, 0) < 0)
		_exit(0);
	snap = m.fds[0];
	m.fds[0] = -1;
	wire_msg_release(&m);
	close(ahead);   /* we have it: the call may go on */
	return snap;
}

/* Give the snapshot forked ahead the zygote's socket snap, and wait until
 * it took it (it closes its end): from then on it no longer ends with us,
 * before the cell can end us.  False when it is gone. */
static bool hand_over(int ahead, int snap)
{
	char byte;
	bool ok = wire_send(ahead, WIRE_RUN, 0, 0, NULL, 0, &snap, 1) == 0;

	while (ok && read(ahead, &byte, 1) < 0 && errno == EINTR)
		;
	close(ahead);
	return ok;
}

/* What the cell left running ends before its answer; its snapshot, whose
 * end takes long for a large session (its memory given back), once the
 * answer is sent (end_snapshot). */
static void end_what_cell_left(pid_t snap)
{
	proc_spare(snap);
	proc_kill_descendants();
	proc_spare(0);
}

/* After the answer: the call's snapshot, killed, is reaped. */
static void end_snapshot(pid_t snap)
{
	struct timespec until;

	if (snap <= 0)
		return;
	deadline_in(&until, PROC_KILL_WAIT);
	proc_wait_until(snap, &until, NULL);
}

/* box: the end of the sandbox's init's reports (-1: no sandbox), which
 * the first call's sandbox keeps. */
static void live_main(int ctl, int box, int *fds, size_t nfds)
{
	bool held_state = false;
	struct wire_msg m = { 0 };
	pid_t self = getpid(), snap = 0;
	int ahead = -1, dumpable = 0;

	prctl(PR_SET_NAME, "dolsot-live");
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (;;) {
		int got;

		if (fds) {
			struct isolate_hold hold = { &ctl, 1, box };
			pid_t done;
			long kb;

			if (!run_call(fds, nfds, held_state, self, &hold))
				_exit(0);   /* the zygote wakes the snapshot */
			held_state = true;
			box = -1;   /* the sandbox's init holds it now */
			end_what_cell_left(snap);
			m.nfds = 0;   /* run_call closed them */
			wire_msg_release(&m);
			/* a: our number (inside a sandbox), for its init's reports. */
			if (wire_send(ctl, WIRE_STATUS, (uint64_t)getpid(), 0, NULL, 0, NULL, 0) < 0)
				_exit(0);
			done = snap;
			if (done > 0)
				kill(done, SIGKILL);   /* it ends while we fork the next */
			snap = fork_ahead(&ahead, &dumpable, &kb);
			if (snap == 0) {
				close(ctl);
				ctl = snapshot_wait(take_over(ahead), box >= 0, dumpable);
				ahead = -1;
				fds = NULL;   /* woken: the call it was made for is over */
				continue;
			}
			/* What this process holds is shared with the snapshot from
			 * now on: the zygote counts it as ours (live_events). */
			if (wire_send(ctl, WIRE_INFO, (uint64_t)kb, 0, NULL, 0, NULL, 0) < 0)
				_exit(0);
			end_snapshot(done);
		}
		worker_live_idle();
		do
			got = wire_recv(ctl, &m);
		while (got < 0 && errno == EINTR);
		worker_live_wake();
		if (got != 1 || m.type != WIRE_RUN || m.nfds < LIVE_RUN_FDS ||
		    m.nfds > LIVE_RUN_FDS + 1)
			_exit(0);   /* the zygote is done with us */
		if (ahead >= 0) {
			if (!hand_over(ahead, m.fds[0]))
				_exit(0);   /* no snapshot, no rollback: give way to a new process */
			ahead = -1;
		} else {
			snap = fork_snapshot(&dumpable);
			if (snap < 0)
				_exit(0);
			if (snap == 0) {
				/* The state before the call, kept for its rollback. */
				for (size_t i = 1; i < m.nfds; i++)
					close(m.fds[i]);
				close(ctl);
				ctl = snapshot_wait(m.fds[0], box >= 0, dumpable);
				m.nfds = 0;
				wire_msg_release(&m);
				fds = NULL;
				continue;
			}
		}
		close(m.fds[0]);
		fds = m.fds + 1;
		nfds = m.nfds - 1;
		if (m.b > 0 && m.b < (uint64_t)INT32_MAX)
			self = (pid_t)m.b;
	}
}
