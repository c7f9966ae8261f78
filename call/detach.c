/*
 * detach.c - detached cells: the keeper forked for a --detach-after call,
 * the handle's record it writes, and --wait, --peek, --cancel and
 * --list-running reading it (see detach.h and call/README.md).
 */
#include "detach.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "fdio.h"
#include "output_json.h"
#include "proc_child.h"
#include "stopsig.h"
#include "user_dir.h"

#define RECORDS_DIR ".detached"
/* A stream's head (peek.out) and its tail (peek.out.tail: a ring after an
 * 8-byte count of the bytes it was given) keep this much each. */
#define PEEK_HALF (DETACH_PEEK_MAX / 2)
#define RING_AT 8
#define N_OUTPUTS 7

static const char *const record_files[] = {
	"meta", "keeper", "out.txt", "err.txt", "result.json", "peek.out", "peek.err",
	"peek.out.tail", "peek.err.tail", "result", "result.tmp", "keeper.tmp",
};

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *detach_state_name(enum detach_state st)
{
	switch (st) {
	case DETACH_RUNNING:
		return "running";
	case DETACH_DONE:
		return "finished";
	case DETACH_CANCELLED:
		return "cancelled";
	case DETACH_LOST:
	default:
		return "lost";
	}
}

/* The user's records directory into buf, made 0700 and checked ours. */
static int records_root(const struct settings *s, char *buf, size_t len, char *err,
                        size_t errlen)
{
	char top[PATH_MAX];
	struct stat st;

	if (s->cache_dir && *s->cache_dir)
		snprintf(top, sizeof(top), "%s", s->cache_dir);
	else if (user_dir_path(top, sizeof(top)) < 0) {
		fail(err, errlen, "cannot name the handles' directory: %s", strerror(errno));
		return -1;
	}
	if (mkdir(top, 0700) < 0 && errno != EEXIST) {
		fail(err, errlen, "cannot create '%s': %s", top, strerror(errno));
		return -1;
	}
	if ((size_t)snprintf(buf, len, "%s/" RECORDS_DIR, top) >= len) {
		fail(err, errlen, "the handles' directory's path is too long");
		return -1;
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
		fail(err, errlen, "cannot create '%s': %s", buf, strerror(errno));
		return -1;
	}
	if (lstat(buf, &st) < 0) {
		fail(err, errlen, "cannot stat '%s': %s", buf, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		fail(err, errlen, "refusing the handles' directory '%s': it must be a directory "
		     "of ours with mode 0700", buf);
		return -1;
	}
	return 0;
}

static bool handle_valid(const char *h)
{
	size_t n = strlen(h);

	if (n != DETACH_HANDLE_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
			return false;
	return true;
}

static int new_handle(char *out, char *err, size_t errlen)
{
	unsigned char raw[DETACH_HANDLE_LEN / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(err, errlen, "getrandom for a handle failed: %s", strerror(errno));
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static void rec_path(const struct detach_rec *r, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", r->dir, name);
}

/* name in r's directory, all of text, put in place whole (a rename). */
static int put_file(const struct detach_rec *r, const char *name, const char *text)
{
	char tmp[PATH_MAX + 340], path[PATH_MAX + 340];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", r->dir, name);
	rec_path(r, name, path, sizeof(path));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fd_write_all(fd, text, strlen(text)) < 0 || close(fd) < 0) {
		fd_close(&fd);
		unlink(tmp);
		return -1;
	}
	return rename(tmp, path);
}

/* Up to max bytes of r's file name (malloc'd, NUL-ended); NULL when it
 * is missing or unreadable. */
static char *get_file(const struct detach_rec *r, const char *name, size_t max, size_t *len)
{
	char path[PATH_MAX + 340];
	uint8_t *buf = NULL;
	int fd;

	rec_path(r, name, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (buf) {
		ssize_t n;

		do
			n = read(fd, buf, max);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			if (len)
				*len = (size_t)n;
		}
	}
	close(fd);
	return (char *)buf;
}

/* Field 22 of /proc/PID/stat: when the process started, in ticks. */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* after ") " come fields 3 .. : skip 19 of them to reach 22 */
	p += 2;
	for (int i = 0; i < 19 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		sscanf(p, "%llu", &start);
	return start;
}

/* A pidfd on r's keeper while it is the process the record names; -1
 * when it has ended. */
static int keeper_pidfd(const struct detach_rec *r)
{
	char *text = get_file(r, "keeper", 128, NULL);
	unsigned long long start = 0;
	int pid = 0, fd;

	if (!text)
		return -1;
	if (sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0) {
		free(text);
		return -1;
	}
	free(text);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -1;
	if (proc_start(pid) != start) {
		close(fd);
		return -1;
	}
	return fd;
}

/* r's result, when its cell has ended: 1 and r->state, r->code set. */
static int read_result(struct detach_rec *r)
{
	char *text = get_file(r, "result", 64, NULL), state[16];
	int code = 0;

	if (!text)
		return 0;
	if (sscanf(text, "%15s %d", state, &code) != 2) {
		free(text);
		return 0;
	}
	free(text);
	r->state = strcmp(state, "cancelled") == 0 ? DETACH_CANCELLED : DETACH_DONE;
	r->code = code;
	return 1;
}

static void remove_record(const char *dir)
{
	char path[PATH_MAX + 340];

	for (size_t i = 0; i < sizeof(record_files) / sizeof(record_files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, record_files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static int read_meta(struct detach_rec *r)
{
	char *text = get_file(r, "meta", 1024, NULL), *save = NULL, *ns, *id, *when;

	if (!text)
		return -1;
	ns = strtok_r(text, "\n", &save);
	id = ns ? strtok_r(NULL, "\n", &save) : NULL;
	when = id ? strtok_r(NULL, "\n", &save) : NULL;
	if (!when) {
		free(text);
		return -1;
	}
	snprintf(r->ns, sizeof(r->ns), "%s", strcmp(ns, "-") == 0 ? "" : ns);
	snprintf(r->session, sizeof(r->session), "%s", id);
	r->started = atoll(when);
	free(text);
	return 0;
}

/* r's state now: ended (its result), running (its keeper lives), or lost. */
static void probe(struct detach_rec *r)
{
	int fd;

	if (read_result(r))
		return;
	fd = keeper_pidfd(r);
	r->state = fd >= 0 ? DETACH_RUNNING : DETACH_LOST;
	if (fd >= 0)
		close(fd);
	if (r->state == DETACH_LOST && read_result(r))
		return;   /* it ended between the two looks */
	r->code = r->state == DETACH_LOST ? DOLSOT_EXIT_FAIL : DETACH_EXIT;
}

/* Records whose cell ended (or was lost) a TTL ago go. */
static void sweep(const char *root, double ttl_days)
{
	DIR *d;
	struct dirent *e;
	double now = (double)time(NULL);

	if (ttl_days <= 0)
		return;
	d = opendir(root);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct detach_rec r = { 0 };
		char path[PATH_MAX + 340];
		struct stat st;

		if (!handle_valid(e->d_name))
			continue;
		snprintf(r.dir, sizeof(r.dir), "%s/%s", root, e->d_name);
		probe(&r);
		if (r.state == DETACH_RUNNING)
			continue;
		rec_path(&r, r.state == DETACH_LOST ? "meta" : "result", path, sizeof(path));
		if (stat(path, &st) == 0 && now - (double)st.st_mtime > ttl_days * 86400.0)
			remove_record(r.dir);
	}
	closedir(d);
}

/* --- the keeper ------------------------------------------------------- */

static struct {
	struct detach_rec *rec;
	struct detach_keeper *k;
	bool cancelled;
} keeper;

static void keeper_on_exit(int status, void *unused)
{
	char line[64];

	(void)unused;
	fflush(stdout);
	fflush(stderr);
	if (keeper.k->json)
		fclose(keeper.k->json);
	keeper.k->json = NULL;
	snprintf(line, sizeof(line), "%s %d\n", keeper.cancelled ? "cancelled" : "done", status);
	put_file(keeper.rec, "result", line);
}

/* Past the head, bytes go round the tail's ring; its count goes first. */
static void ring_put(struct detach_keeper *k, int i, const char *p, size_t n)
{
	uint8_t count[RING_AT];

	if (n > PEEK_HALF) {
		k->ring[i] += n - PEEK_HALF;
		p += n - PEEK_HALF;
		n = PEEK_HALF;
	}
	while (n) {
		size_t at = (size_t)(k->ring[i] % PEEK_HALF), run = PEEK_HALF - at;

		run = run < n ? run : n;
		if (fd_pwrite_all(k->tail[i], p, run, RING_AT + at) < 0)
			return;
		k->ring[i] += run;
		p += run;
		n -= run;
	}
	for (int b = 0; b < RING_AT; b++)
		count[b] = (uint8_t)(k->ring[i] >> (8 * b));
	fd_pwrite_all(k->tail[i], count, RING_AT, 0);
}

/* Each read of the cell's output as it comes, before any cap: the head
 * first, then the tail's ring. */
static void peek_feed(struct capture_tap *tap, const struct capture *c, const char *buf,
                      size_t len)
{
	struct detach_keeper *k = (struct detach_keeper *)(void *)tap;   /* its first member */
	int i = c == k->out ? 0 : 1;
	size_t room = PEEK_HALF - k->kept[i], n = len < room ? len : room;

	if (n && fd_write_all(k->peek[i], buf, n) == 0)
		k->kept[i] += n;
	if (len > n)
		ring_put(k, i, buf + n, len - n);
	if (k->next)
		k->next->feed(k->next, c, buf, len);
}

static int peek_wait_ms(struct capture_tap *tap, int ms)
{
	struct detach_keeper *k = (struct detach_keeper *)(void *)tap;

	return k->next ? k->next->wait_ms(k->next, ms) : ms;
}

static void peek_tick(struct capture_tap *tap)
{
	struct detach_keeper *k = (struct detach_keeper *)(void *)tap;

	if (k->next)
		k->next->tick(k->next);
}

void detach_keeper_tap(struct detach_keeper *k, struct capture *out, struct capture *err)
{
	k->tap = (struct capture_tap){ peek_feed, peek_wait_ms, peek_tick };
	k->out = out;
	k->next = out->tap;
	out->tap = err->tap = &k->tap;
}

static int put_owned(const struct owned *o, FILE *to)
{
	return o->len && fwrite(o->p, 1, o->len, to) != o->len ? -1 : 0;
}

void detach_keeper_finish(struct detach_keeper *k, const struct result *res)
{
	int rc;

	if (res->said)   /* a --call-id's recorded result, as it was said */
		rc = put_owned(&res->said_out, stdout) | put_owned(&res->said_err, stderr) |
		     put_owned(&res->said_json, k->json);
	else
		rc = output_render(res, stdout, stderr) | output_json_run(res, k->json);
	if (rc < 0)
		fprintf(stderr, "dolsot: cannot write the handle's result: %s\n", strerror(errno));
	exit(rc < 0 ? DOLSOT_EXIT_FAIL : res->exit_code);
}

void detach_keeper_cancelled(struct detach_keeper *k, int sig)
{
	(void)k;
	stopsig_say_unsaved(sig);
	keeper.cancelled = true;
	exit(DOLSOT_EXIT_FAIL);
}

/* The record's files the keeper writes, open: out.txt, err.txt,
 * result.json, peek.out, peek.err, and the two tails (written at
 * offsets: no O_APPEND). */
static int open_outputs(const struct detach_rec *r, int fds[N_OUTPUTS])
{
	static const char *const names[N_OUTPUTS] = { "out.txt", "err.txt", "result.json",
	                                              "peek.out", "peek.err", "peek.out.tail",
	                                              "peek.err.tail" };

	for (int i = 0; i < N_OUTPUTS; i++)
		fds[i] = -1;
	for (int i = 0; i < N_OUTPUTS; i++) {
		char path[PATH_MAX + 340];

		rec_path(r, names[i], path, sizeof(path));
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		              (i < 5 ? O_APPEND : 0), 0600);
		if (fds[i] < 0)
			return -1;
	}
	return 0;
}

static void become_keeper(struct detach_rec *r, struct detach_keeper *k, int fds[N_OUTPUTS],
                          int keep_fd)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	if (null < 0 || dup2(null, 0) < 0 || dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0)
		_exit(DOLSOT_EXIT_FAIL);
	close(null);
	close(fds[0]);
	close(fds[1]);
	/* nothing of the caller's (an MCP server's answer pipe) stays open here */
	fds[1] = keep_fd;   /* fds[0] and fds[1] are closed: the list's room */
	proc_child_close_fds(fds + 1, N_OUTPUTS - 1);
	memset(k, 0, sizeof(*k));
	k->json = fdopen(fds[2], "w");
	k->peek[0] = fds[3];
	k->peek[1] = fds[4];
	k->tail[0] = fds[5];
	k->tail[1] = fds[6];
	keeper.rec = malloc(sizeof(*r));   /* r is the caller's: it goes, the keeper stays */
	if (!keeper.rec)
		_exit(DOLSOT_EXIT_FAIL);
	*keeper.rec = *r;
	keeper.k = k;
	on_exit(keeper_on_exit, NULL);
}

/* The middle process: fork the keeper, record who it is, end. */
static void spawn_keeper(struct detach_rec *r, struct detach_keeper *k, int fds[N_OUTPUTS],
                         int keep_fd, bool *is_keeper)
{
	char line[64];
	pid_t pid = fork();

	if (pid == 0) {
		become_keeper(r, k, fds, keep_fd);
		*is_keeper = true;
		return;
	}
	if (pid < 0)
		_exit(DOLSOT_EXIT_FAIL);
	snprintf(line, sizeof(line), "%d %llu\n", (int)pid, proc_start(pid));
	_exit(put_file(r, "keeper", line) < 0 ? DOLSOT_EXIT_FAIL : 0);
}

enum detach_role detach_start(const struct settings *s, const char *session,
                              struct detach_rec *r, struct detach_keeper *k, int keep_fd,
                              char *err, size_t errlen)
{
	char root[PATH_MAX], meta[1024];
	int fds[N_OUTPUTS], status;
	bool is_keeper = false;
	pid_t mid;

	memset(r, 0, sizeof(*r));
	if (records_root(s, root, sizeof(root), err, errlen) < 0)
		return DETACH_FAILED;
	sweep(root, s->ttl_days);
	if (new_handle(r->handle, err, errlen) < 0)
		return DETACH_FAILED;
	snprintf(r->dir, sizeof(r->dir), "%s/%s", root, r->handle);
	snprintf(r->session, sizeof(r->session), "%s", session);
	snprintf(r->ns, sizeof(r->ns), "%s", s->ns ? s->ns : "");
	r->started = (long long)time(NULL);
	if (mkdir(r->dir, 0700) < 0) {
		fail(err, errlen, "cannot create the handle's record '%s': %s", r->dir,
		     strerror(errno));
		return DETACH_FAILED;
	}
	snprintf(meta, sizeof(meta), "%s\n%s\n%lld\n", *r->ns ? r->ns : "-", session, r->started);
	if (put_file(r, "meta", meta) < 0 || open_outputs(r, fds) < 0) {
		fail(err, errlen, "cannot write the handle's record '%s': %s", r->dir,
		     strerror(errno));
		for (int i = 0; i < N_OUTPUTS; i++)
			fd_close(&fds[i]);
		remove_record(r->dir);
		return DETACH_FAILED;
	}
	fflush(stdout);
	fflush(stderr);
	mid = fork();
	if (mid == 0) {
		spawn_keeper(r, k, fds, keep_fd, &is_keeper);
		if (is_keeper)
			return DETACH_KEEPER;
	}
	for (int i = 0; i < N_OUTPUTS; i++)
		fd_close(&fds[i]);
	if (mid < 0) {
		fail(err, errlen, "cannot fork the detached cell's keeper: %s", strerror(errno));
		remove_record(r->dir);
		return DETACH_FAILED;
	}
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fail(err, errlen, "the detached cell's keeper could not be started");
		return DETACH_FAILED;
	}
	r->state = DETACH_RUNNING;
	return DETACH_CLIENT;
}

/* --- the handle's readers -------------------------------------------- */

int detach_open(const struct settings *s, const char *handle, struct detach_rec *r,
                char *err, size_t errlen)
{
	char root[PATH_MAX];

	memset(r, 0, sizeof(*r));
	if (!handle_valid(handle)) {
		fail(err, errlen, "'%.64s' is not a handle (32 hexadecimal digits, as a "
		     "detached call printed it)", handle);
		return -1;
	}
	if (records_root(s, root, sizeof(root), err, errlen) < 0)
		return -1;
	snprintf(r->handle, sizeof(r->handle), "%s", handle);
	snprintf(r->dir, sizeof(r->dir), "%s/%s", root, handle);
	if (read_meta(r) < 0) {
		fail(err, errlen, "no detached cell has the handle %s here (records go a session "
		     "TTL after their cell ended; a handle belongs to its user and "
		     "DOLSOT_CACHE_DIR)", handle);
		return -1;
	}
	probe(r);
	return 0;
}

/* Poll the record's directory and the keeper until either says the cell
 * ended, or the deadline passes (NULL: none). */
static int wait_events(struct detach_rec *r, const struct timespec *deadline, char *err,
                       size_t errlen)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), pidfd = -1;

	if (in < 0 || inotify_add_watch(in, r->dir, IN_MOVED_TO | IN_CREATE) < 0) {
		fail(err, errlen, "cannot watch the handle's record: inotify: %s", strerror(errno));
		fd_close(&in);
		return -1;
	}
	pidfd = keeper_pidfd(r);
	for (;;) {
		struct pollfd p[2] = { { in, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
		char drain[4096];
		double left = deadline ? deadline_left(deadline) : -1;
		/* a deadline passed is 0 ms, never poll's -1 (no limit) */
		int ms = !deadline ? -1 : left > 0 ? deadline_poll_ms(left) : 0, got;

		if (read_result(r) || pidfd < 0)
			break;
		got = poll(p, 2, ms);
		if (got < 0 && errno != EINTR) {
			fail(err, errlen, "poll on the handle's record: %s", strerror(errno));
			break;
		}
		if (got == 0) {
			r->state = DETACH_RUNNING;
			r->code = DETACH_EXIT;
			break;
		}
		while (read(in, drain, sizeof(drain)) > 0)
			;
		if (p[1].revents)
			fd_close(&pidfd);   /* it ended: its result is there, or never will be */
	}
	if (pidfd < 0 && !read_result(r)) {
		r->state = DETACH_LOST;
		r->code = DOLSOT_EXIT_FAIL;
	}
	fd_close(&pidfd);
	close(in);
	return 0;
}

int detach_wait(struct detach_rec *r, double seconds, char *err, size_t errlen)
{
	struct timespec deadline;

	if (read_result(r))
		return 0;
	if (seconds >= 0)
		deadline_in(&deadline, seconds);
	return wait_events(r, seconds >= 0 ? &deadline : NULL, err, errlen);
}

static int copy_out(const struct detach_rec *r, const char *name, FILE *to)
{
	char path[PATH_MAX + 340], buf[65536];
	size_t n;
	FILE *f;
	int rc = 0;

	rec_path(r, name, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			rc = -1;
	if (ferror(f))
		rc = -1;
	fclose(f);
	return fflush(to) == EOF ? -1 : rc;
}

static int file_size(const struct detach_rec *r, const char *name)
{
	char path[PATH_MAX + 340];
	struct stat st;

	rec_path(r, name, path, sizeof(path));
	return stat(path, &st) == 0 && st.st_size > 0;
}

int detach_print_result(const struct detach_rec *r, bool json, FILE *out, FILE *errs)
{
	if (r->state == DETACH_LOST) {
		fprintf(errs, "dolsot: handle %s: the cell's keeper ended without a result (it was "
		        "killed, or the machine restarted); if it ended before the commit the "
		        "session '%s' is unchanged, look with --history\n", r->handle, r->session);
		return fflush(errs) == EOF ? -1 : 0;
	}
	if (json && file_size(r, "result.json"))
		return copy_out(r, "result.json", out);
	if (copy_out(r, "out.txt", out) < 0 || copy_out(r, "err.txt", errs) < 0)
		return -1;
	return 0;
}

static int emit(json_t *o, FILE *out)
{
	int rc = -1;

	if (!o) {
		errno = ENOMEM;
		return -1;
	}
	if (json_dumpf(o, out, JSON_COMPACT | JSON_ENSURE_ASCII) == 0 && fputc('\n', out) != EOF &&
	    fflush(out) != EOF)
		rc = 0;
	json_decref(o);
	return rc;
}

static json_t *status_object(const struct detach_rec *r)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I}", "status", "detached", "handle",
	                 r->handle, "state", detach_state_name(r->state), "session", r->session,
	                 "namespace", r->ns, "exit_code", DETACH_EXIT, "started",
	                 (json_int_t)r->started);
}

int detach_print_status(const struct detach_rec *r, bool json, FILE *out, FILE *errs)
{
	if (json)
		return emit(status_object(r), out);
	fprintf(errs, "dolsot: the cell is still running, detached as handle %s (session '%s'): "
	        "dolsot --wait %s, --peek %s or --cancel %s\n", r->handle, r->session,
	        r->handle, r->handle, r->handle);
	return fflush(errs) == EOF ? -1 : 0;
}

/* The tail ring of a stream (name: its head's file) fed to c, after a
 * line saying what was left out between head and tail. */
static int feed_tail(const struct detach_rec *r, const char *name, struct capture *c)
{
	char tail_name[32], mark[128];
	size_t len = 0;
	uint64_t given = 0, at;
	char *ring;
	int rc = 0;

	snprintf(tail_name, sizeof(tail_name), "%s.tail", name);
	ring = get_file(r, tail_name, RING_AT + PEEK_HALF, &len);
	if (!ring || len < RING_AT) {
		free(ring);
		return 0;
	}
	for (int b = RING_AT - 1; b >= 0; b--)
		given = given << 8 | (uint8_t)ring[b];
	len -= RING_AT;
	if (given > len) {   /* it went round: the oldest bytes start at its end */
		at = given % PEEK_HALF;
		snprintf(mark, sizeof(mark), "\n[--peek: %" PRIu64 " bytes not kept here]\n",
		         given - len);
		rc = capture_feed(c, mark, strlen(mark)) |
		     capture_feed(c, ring + RING_AT + at, len - at) |
		     capture_feed(c, ring + RING_AT, at);
	} else {
		rc = capture_feed(c, ring + RING_AT, len);
	}
	free(ring);
	return rc;
}

/* A record's peek files, cut to cap characters as the output contract cuts. */
static int peek_capture(const struct detach_rec *r, const char *name, uint64_t cap,
                        struct capture *c)
{
	size_t len = 0;
	char *text = get_file(r, name, PEEK_HALF, &len);

	capture_init(c, cap);
	if ((text && capture_feed(c, text, len) < 0) || feed_tail(r, name, c) < 0) {
		free(text);
		return -1;
	}
	free(text);
	return capture_finish(c);
}

int detach_print_peek(const struct detach_rec *r, uint64_t cap, bool json, FILE *out,
                      FILE *errs)
{
	struct capture c[2];
	int rc = -1;

	if (peek_capture(r, "peek.out", cap, &c[0]) < 0 ||
	    peek_capture(r, "peek.err", cap, &c[1]) < 0)
		goto out;
	if (json) {
		json_t *o = status_object(r);

		if (o) {
			json_object_set_new(o, "status", json_string("peek"));
			json_object_set_new(o, "stdout", output_json_string(c[0].data, c[0].len));
			json_object_set_new(o, "stderr", output_json_string(c[1].data, c[1].len));
			if (r->state != DETACH_RUNNING)
				json_object_set_new(o, "exit_code", json_integer(r->code));
		}
		rc = emit(o, out);
		goto out;
	}
	if ((c[0].len && fwrite(c[0].data, 1, c[0].len, out) != c[0].len) ||
	    (c[1].len && fwrite(c[1].data, 1, c[1].len, errs) != c[1].len))
		goto out;
	fprintf(errs, "dolsot: handle %s (session '%s'): %s; the output so far\n", r->handle,
	        r->session, detach_state_name(r->state));
	rc = fflush(out) == EOF || fflush(errs) == EOF ? -1 : 0;
out:
	capture_release(&c[0]);
	capture_release(&c[1]);
	return rc;
}

int detach_cancel(struct detach_rec *r, char *err, size_t errlen)
{
	int pidfd;

	probe(r);
	if (r->state != DETACH_RUNNING)
		return 0;
	pidfd = keeper_pidfd(r);
	if (pidfd < 0) {
		probe(r);
		return 0;
	}
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) < 0) {
		fail(err, errlen, "cannot stop the keeper of %s: %s", r->handle, strerror(errno));
		close(pidfd);
		return -1;
	}
	close(pidfd);
	if (detach_wait(r, -1, err, errlen) < 0)
		return -1;
	if (r->state == DETACH_LOST) {
		/* stopped by the signal itself: before its call took the stop
		 * signals in hand (nothing ran), or after its commit (stopsig.h) */
		char *said = get_file(r, "err.txt", DETACH_PEEK_MAX, NULL);
		bool saved = said && strstr(said, "after the session was saved");

		free(said);
		if (put_file(r, "result", saved ? "done 143\n" : "cancelled 1\n") < 0) {
			fail(err, errlen, "cannot record the cancel of %s: %s", r->handle,
			     strerror(errno));
			return -1;
		}
		read_result(r);
	}
	return r->state == DETACH_CANCELLED ? 1 : 0;
}

int detach_print_cancel(const struct detach_rec *r, bool cancelled, bool json, FILE *out,
                        FILE *errs)
{
	if (json) {
		json_t *o = status_object(r);

		if (o) {
			json_object_set_new(o, "status", json_string(cancelled ? "cancelled" : "ended"));
			json_object_set_new(o, "exit_code", json_integer(r->code));
		}
		return emit(o, out);
	}
	if (cancelled)
		fprintf(errs, "dolsot: cancelled handle %s: the cell was stopped before the commit; "
		        "session '%s' unchanged\n", r->handle, r->session);
	else
		fprintf(errs, "dolsot: handle %s had already ended (%s, exit %d): nothing to "
		        "cancel; dolsot --wait %s prints its result\n", r->handle,
		        detach_state_name(r->state), r->code, r->handle);
	return fflush(errs) == EOF ? -1 : 0;
}

static int list_one(const struct detach_rec *r, json_t *arr, FILE *out)
{
	char when[64];
	struct tm tm;
	time_t t = (time_t)r->started;

	if (arr)
		return json_array_append_new(arr, status_object(r));
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	fprintf(out, "%s\t%s%s%s\t%s\n", r->handle, r->ns, *r->ns ? "/" : "", r->session, when);
	return 0;
}

int detach_running(const struct settings *s, struct detach_rec **out, size_t *n, char *err,
                   size_t errlen)
{
	char root[PATH_MAX];
	struct dirent *e;
	DIR *d;

	*out = NULL;
	*n = 0;
	if (records_root(s, root, sizeof(root), err, errlen) < 0)
		return -1;
	sweep(root, s->ttl_days);
	d = opendir(root);
	if (!d) {
		fail(err, errlen, "cannot read '%s': %s", root, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		struct detach_rec r = { 0 }, *grown;

		if (!handle_valid(e->d_name))
			continue;
		memcpy(r.handle, e->d_name, DETACH_HANDLE_LEN);   /* handle_valid: that long */
		snprintf(r.dir, sizeof(r.dir), "%s/%s", root, r.handle);
		if (read_meta(&r) < 0)
			continue;
		probe(&r);
		if (r.state != DETACH_RUNNING)
			continue;
		grown = realloc(*out, (*n + 1) * sizeof(**out));
		if (!grown) {
			fail(err, errlen, "out of memory listing the handles");
			closedir(d);
			free(*out);
			*out = NULL;
			return -1;
		}
		*out = grown;
		(*out)[(*n)++] = r;
	}
	closedir(d);
	return 0;
}

int detach_print_running(const struct settings *s, bool json, FILE *out, char *err,
                         size_t errlen)
{
	json_t *arr = json ? json_array() : NULL;
	struct detach_rec *v;
	size_t n;

	if (detach_running(s, &v, &n, err, errlen) < 0) {
		json_decref(arr);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		list_one(&v[i], arr, out);
	free(v);
	if (json && emit(json_pack("{s:o}", "running", arr), out) < 0) {
		fail(err, errlen, "cannot write the output: %s", strerror(errno));
		return -1;
	}
	if (!json && fflush(out) == EOF) {
		fail(err, errlen, "cannot write the output: %s", strerror(errno));
		return -1;
	}
	return 0;
}
