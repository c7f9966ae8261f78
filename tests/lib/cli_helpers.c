/*
 * cli_helpers.c - subprocess plumbing for the CLI tests.
 */
#include "cli_helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <sched.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callrec.h"
#include "histrec.h"
#include "sign.h"

extern char **environ;

static void fatal(const char *what)
{
	fprintf(stderr, "cli_helpers: %s: %s\n", what, strerror(errno));
	abort();
}

static char bin_path[PATH_MAX];

const char *cli_bin(void)
{
	const char *b = getenv("DOLSOT_BIN");

	if (!bin_path[0] && !realpath(b && *b ? b : "./dolsot", bin_path))
		fatal("realpath of the dolsot binary");
	return bin_path;
}

char *cli_bin_shared_copy(void)
{
	char *dir = cli_tempdir(), copy[PATH_MAX + 16];
	size_t n;
	char *data = cli_read_file(cli_bin(), &n);
	FILE *f;

	if (!data || chmod(dir, 0755) < 0)
		fatal("copying the dolsot binary");
	/* Same name as the original: tests tell the ASan build by it. */
	snprintf(copy, sizeof(copy), "%s/%s", dir, strrchr(cli_bin(), '/') + 1);
	f = fopen(copy, "we");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0 || chmod(copy, 0755) < 0)
		fatal("writing the copy of the dolsot binary");
	free(data);
	snprintf(bin_path, sizeof(bin_path), "%s", copy);
	return dir;
}

double cli_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void apply_env(const char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');

		if (eq) {
			char *name = strndup(*env, (size_t)(eq - *env));

			setenv(name, eq + 1, 1);
			free(name);
		} else {
			unsetenv(*env);
		}
	}
}

static void child(const struct cli_opts *o, const char *const *argv, int in,
                  int out, int err)
{
	const char **args;
	size_t n = 0, w = 0, k = 0;

	while (argv[n])
		n++;
	while (o->wrapper && o->wrapper[w])
		w++;
	args = calloc(w + n + 2, sizeof(*args));
	for (size_t i = 0; i < w; i++)
		args[k++] = o->wrapper[i];
	args[k++] = o->prog ? o->prog : w ? cli_bin() : "dolsot";
	for (size_t i = 1; i < n; i++)
		args[k++] = argv[i];
	if (dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(125);
	if (o->close_stdin)
		close(0);
	else if (dup2(in, 0) < 0)
		_exit(125);
	if (o->drop && (setgroups(0, NULL) < 0 || setresgid(o->gid, o->gid, o->gid) < 0 ||
	                setresuid(o->uid, o->uid, o->uid) < 0))
		_exit(125);
	if (o->cwd && chdir(o->cwd) < 0)
		_exit(125);
	apply_env(o->env);
	if (w)
		execvp(args[0], (char *const *)args);
	else
		execv(o->prog ? o->prog : cli_bin(), (char *const *)args);
	_exit(126);
}

pid_t cli_spawn(const struct cli_opts *o, const char *const *argv)
{
	sigset_t none;
	int null;
	pid_t pid;

	cli_bin();
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid > 0)
		return pid;
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);   /* the harness's handlers and ignores */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDWR);
	if (null < 0)
		_exit(125);
	child(o, argv, null, null, null);
	return -1;
}

pid_t cli_spawn_reading(const struct cli_opts *o, const char *const *argv, int *out)
{
	sigset_t none;
	int p[2], null;
	pid_t pid;

	cli_bin();
	fflush(NULL);
	if (pipe2(p, O_CLOEXEC) < 0)
		fatal("pipe2");
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid > 0) {
		close(p[1]);
		*out = p[0];
		return pid;
	}
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDWR);
	if (null < 0)
		_exit(125);
	child(o, argv, null, p[1], null);
	return -1;
}

/* The bytes *buf holds room for when used are in use: a power of two, so
 * a growing buffer is copied O(log n) times (a realloc per chunk made a
 * 20 MB read quadratic under AddressSanitizer, past the test timeout). */
static size_t room(size_t used)
{
	size_t c = 64;

	while (c < used)
		c *= 2;
	return c;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	if (!*buf || room(*len + 1) < *len + n + 1)
		*buf = realloc(*buf, room(*len + n + 1));
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void cli_run(struct cli_run *r, const struct cli_opts *o, const char *const *argv)
{
	int inp[2], outp[2], errp[2];
	size_t in_left = o->stdin_data ? (o->stdin_len ? o->stdin_len : strlen(o->stdin_data)) : 0;
	const char *in_pos = o->stdin_data;
	double t0 = cli_now(), limit = o->timeout > 0 ? o->timeout : 120;
	pid_t pid;

	cli_bin();   /* resolve before a test's cwd applies */
	memset(r, 0, sizeof(*r));
	append(&r->out, &r->out_len, "", 0);
	append(&r->err, &r->err_len, "", 0);
	if (pipe2(inp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
	    pipe2(errp, O_CLOEXEC) < 0)
		fatal("pipe2");
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0)
		child(o, argv, inp[0], outp[1], errp[1]);
	close(inp[0]);
	close(outp[1]);
	close(errp[1]);
	if (!in_left) {
		close(inp[1]);
		inp[1] = -1;
	} else {
		fcntl(inp[1], F_SETFL, O_NONBLOCK);
	}
	while (outp[0] >= 0 || errp[0] >= 0) {
		struct pollfd p[3] = { { outp[0], POLLIN, 0 }, { errp[0], POLLIN, 0 },
		                       { inp[1], POLLOUT, 0 } };
		char buf[65536];

		if (cli_now() - t0 > limit) {
			kill(pid, SIGKILL);
			limit = 1e9;
		}
		if (poll(p, 3, 100) < 0 && errno != EINTR)
			fatal("poll");
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &outp[0] : &errp[0];
			ssize_t got;

			if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			got = read(*fd, buf, sizeof(buf));
			if (got > 0)
				append(i == 0 ? &r->out : &r->err, i == 0 ? &r->out_len : &r->err_len,
				       buf, (size_t)got);
			else if (got == 0 || errno != EINTR) {
				close(*fd);
				*fd = -1;
			}
		}
		if (inp[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(inp[1], in_pos, in_left);

			if (w > 0) {
				in_pos += w;
				in_left -= (size_t)w;
			}
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				in_left = 0;
			if (!in_left) {
				close(inp[1]);
				inp[1] = -1;
			}
		}
	}
	if (inp[1] >= 0)
		close(inp[1]);
	{
		struct rusage ru;

		while (wait4(pid, &r->status, 0, &ru) < 0)
			if (errno != EINTR)
				fatal("wait4");
		r->maxrss_kb = ru.ru_maxrss;
	}
	r->seconds = cli_now() - t0;
	r->code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
}

void cli_run_release(struct cli_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

char *cli_tempdir(void)
{
	char tmpl[] = "/tmp/dolsot-test-XXXXXX";
	char *d = mkdtemp(tmpl);

	if (!d)
		fatal("mkdtemp");
	return strdup(d);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void cli_rmtree(const char *path)
{
	/* Tests make read-only dirs on purpose; give the owner rights back first. */
	chmod(path, 0700);
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void cli_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		fatal(path);
	fputs(text, f);
	if (fclose(f) != 0)
		fatal(path);
}

char *cli_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0;
	char chunk[65536];
	size_t got;

	if (!f)
		return NULL;
	append(&buf, &n, "", 0);
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		append(&buf, &n, chunk, got);
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

char *cli_path(const char *dir, const char *rel)
{
	static char buf[8][PATH_MAX + 256];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, rel);
	return p;
}

int cli_store_units(const char *store, char names[][CLI_UNIT_NAME], int max)
{
	char dir[4300], sub[4400];
	struct dirent *d, *e;
	DIR *top, *inner;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/objects", store);
	top = opendir(dir);
	if (!top)
		return 0;
	while ((d = readdir(top))) {
		if (strlen(d->d_name) != 2)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, d->d_name);
		inner = opendir(sub);
		while (inner && (e = readdir(inner))) {
			if (strlen(e->d_name) != 62)
				continue;
			if (names && n < max)
				snprintf(names[n], CLI_UNIT_NAME, "%s/%s", d->d_name, e->d_name);
			n++;
		}
		if (inner)
			closedir(inner);
	}
	closedir(top);
	return n;
}

bool cli_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

bool cli_pid_alive(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;
	char *line = NULL, *rp;
	size_t cap = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (getline(&line, &cap, f) > 0 && (rp = strrchr(line, ')')) && rp[1])
		state = rp[2];
	free(line);
	fclose(f);
	return state && state != 'Z' && state != 'X';
}

bool cli_has(const char *haystack, const char *needle)
{
	return haystack && strstr(haystack, needle) != NULL;
}

/* state, ppid and comm of pid from /proc/PID/stat; false when gone. */
static bool proc_stat(pid_t pid, char *state, pid_t *ppid, char *comm, size_t commlen)
{
	char path[64], *line = NULL, *lp, *rp;
	size_t cap = 0;
	FILE *f;
	bool ok = false;
	int pp = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (getline(&line, &cap, f) > 0 && (lp = strchr(line, '(')) &&
	    (rp = strrchr(line, ')')) && sscanf(rp + 1, " %c %d", state, &pp) == 2) {
		snprintf(comm, commlen, "%.*s", (int)(rp - lp - 1), lp + 1);
		*ppid = (pid_t)pp;
		ok = true;
	}
	free(line);
	fclose(f);
	return ok;
}

/* True when the initial environment of pid holds exactly entry. */
static bool env_has(pid_t pid, const char *entry)
{
	char path[64], *env;
	size_t n, elen = strlen(entry);
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = cli_read_file(path, &n);
	if (!env)
		return false;
	for (size_t i = 0; i < n && !found; i += strlen(env + i) + 1)
		found = strlen(env + i) == elen && memcmp(env + i, entry, elen) == 0;
	free(env);
	return found;
}

/* pid is a warm type checker's daemon (checkd.c). */
static bool is_checker(pid_t pid)
{
	char state, comm[64];
	pid_t ppid;

	return pid > 0 && proc_stat(pid, &state, &ppid, comm, sizeof(comm)) &&
	       strcmp(comm, "dolsot-checkd") == 0;
}

int cli_find_procs(const char *comm, const char *env_entry, pid_t *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		fatal("opendir /proc");
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name), ppid;
		char state, c[64];

		if (pid <= 0 || !proc_stat(pid, &state, &ppid, c, sizeof(c)) || state == 'Z' ||
		    state == 'X' || strcmp(c, comm) != 0 || !env_has(pid, env_entry))
			continue;
		if (n < max)
			pids[n] = pid;
		n++;
	}
	closedir(d);
	return n;
}

pid_t cli_first_child(pid_t pid)
{
	char path[64], *text;
	pid_t child;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	text = cli_read_file(path, NULL);
	child = text ? (pid_t)atoi(text) : 0;
	free(text);
	return child;
}

size_t cli_children_named(pid_t pid, const char *name, pid_t *out, size_t max)
{
	char path[64], *list, *end;
	size_t len, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	list = cli_read_file(path, &len);
	if (!list)
		return 0;
	for (char *p = list; n < max; p = end) {
		long kid = strtol(p, &end, 10);
		char comm[64], *text;

		if (end == p)
			break;
		snprintf(comm, sizeof(comm), "/proc/%ld/comm", kid);
		text = cli_read_file(comm, &len);
		if (text && strncmp(text, name, strlen(name)) == 0)
			out[n++] = (pid_t)kid;
		free(text);
	}
	free(list);
	return n;
}

size_t cli_children_settled(pid_t pid, const char *name, pid_t *out, size_t max,
                            size_t want, int seconds)
{
	size_t n = 0;

	for (int i = 0; i < seconds * 100 && (n = cli_children_named(pid, name, out, max)) != want;
	     i++)
		usleep(10000);
	return n;
}

bool cli_is_server_process(const char *comm)
{
	static const char *const names[] = { "dolsot-server", "dolsot-zygote", "dolsot-spare",
	                                     "dolsot-holder", "dolsot-checkd" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(comm, names[i]) == 0)
			return true;
	return false;
}

long cli_rss_kb(pid_t pid)
{
	char path[64], *text, *p;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = cli_read_file(path, NULL);
	if (text && (p = strstr(text, "VmRSS:")))
		kb = atol(p + 6);
	free(text);
	return kb;
}

int cli_strays(const char *env_entry, char *desc, size_t desclen)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	if (!d)
		fatal("opendir /proc");
	if (desclen)
		desc[0] = '\0';
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name), ppid;
		char state, comm[64];

		if (pid <= 0 || pid == getpid() || !proc_stat(pid, &state, &ppid, comm, sizeof(comm)))
			continue;
		/* The warm server's processes are not the call's: the server, its
		 * zygotes, their spares (workers forked ahead of a call) and the
		 * spares' holders (base/holder.h, tested in check_server), and
		 * the warm type checkers beside it with their checkers. */
		if (state == 'Z' || state == 'X' || cli_is_server_process(comm) || is_checker(ppid))
			continue;
		if (ppid != getpid() && !env_has(pid, env_entry))
			continue;
		n++;
		if (used < desclen)
			used += (size_t)snprintf(desc + used, desclen - used, "%d %s (%c); ",
			                         (int)pid, comm, state);
	}
	closedir(d);
	return n;
}

int cli_wait_no_strays(const char *env_entry, double seconds, char *desc, size_t desclen)
{
	double t0 = cli_now();
	int n;

	while ((n = cli_strays(env_entry, desc, desclen)) > 0 && cli_now() - t0 < seconds)
		usleep(20000);
	return n;
}

int cli_count_fds(pid_t pid)
{
	char path[64];
	DIR *d;
	int n = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/fd");
	d = opendir(path);
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	/* ".", "..", and for ourselves the fd of d */
	return n - (pid ? 2 : 3);
}

const char *const cli_usual_env[] = {
	"DOLSOT_TIMEOUT", "DOLSOT_MAX_OUTPUT", "DOLSOT_SESSION_TTL_DAYS", "PYTHONPATH",
	"VIRTUAL_ENV", "DOLSOT_TYPECHECK=0", "DOLSOT_SESSION_KEY", "DOLSOT_LIVE",
	"DOLSOT_LIVE_MAX", "DOLSOT_LIVE_IDLE", "DOLSOT_LIVE_MEMORY_MB", "DOLSOT_HISTORY",
	"DOLSOT_UNIT_CACHE_SIZE", "DOLSOT_NAMESPACE", NULL,
};

/* The test that ends if the process exits first. */
static struct cli_test *current_test;

static void end_current_test(void)
{
	if (current_test)
		cli_test_end(current_test);
}

void cli_test_begin_usual(struct cli_test *t)
{
	char err[4096];

	cli_test_begin(t, cli_usual_env);
	ck_assert_msg(cli_test_warm(t, err, sizeof(err)) == 0, "--server-start: %s", err);
}

void cli_test_begin_server(struct cli_test *t)
{
	cli_test_begin(t, cli_usual_env);
	cli_test_add_env(t, "DOLSOT_SERVER=auto");
	cli_test_add_env(t, "DOLSOT_SERVER_IDLE");
	cli_test_add_env(t, "DOLSOT_STORE");
}

void cli_test_add_env(struct cli_test *t, const char *entry)
{
	size_t n = 0;

	while (t->env[n])
		n++;
	if (n + 1 >= CLI_TEST_ENV_MAX)
		fatal("too many environment entries for a test");
	t->env[n] = entry;
	t->env[n + 1] = NULL;
}

void cli_test_begin(struct cli_test *t, const char *const *entries)
{
	static bool registered;

	t->tmp = cli_tempdir();
	snprintf(t->store, sizeof(t->store), "%s/store", t->tmp);
	snprintf(t->store_env, sizeof(t->store_env), "DOLSOT_CACHE_DIR=%s", t->store);
	t->env[0] = t->store_env;
	t->env[1] = NULL;
	for (size_t i = 0; entries && entries[i]; i++)
		cli_test_add_env(t, entries[i]);
	/* A suite's run with every call live (issue 15), warm only. */
	if (getenv("DOLSOT_TEST_LIVE"))
		cli_test_add_env(t, "DOLSOT_LIVE=1");
	current_test = t;
	if (!registered && atexit(end_current_test) == 0)
		registered = true;
}

int cli_test_warm(const struct cli_test *t, char *err, size_t errlen)
{
	struct cli_run r;
	int code;

	if (!getenv("DOLSOT_TEST_WARM"))
		return 0;
	cli_test_run(t, &r, t->tmp, NULL, (const char *const[]){ "dolsot", "--server-start",
	                                                         NULL });
	code = r.code;
	snprintf(err, errlen, "%s", r.err);
	cli_run_release(&r);
	return code;
}

/* What cli_test_tmpfs mounted, for cli_test_end to unmount. */
static char tmpfs_mounted[4300];

bool cli_test_tmpfs(const char *dir, const char *opts)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		fatal("mkdir");
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, opts) < 0) {
		printf("SKIP: cannot mount a tmpfs (%s)\n", strerror(errno));
		return false;
	}
	snprintf(tmpfs_mounted, sizeof(tmpfs_mounted), "%s", dir);
	return true;
}

void cli_test_end(struct cli_test *t)
{
	struct cli_run r;

	if (!t->tmp)
		return;
	cli_test_run(t, &r, t->tmp, NULL, (const char *const[]){ "dolsot", "--server-stop",
	                                                         NULL });
	cli_run_release(&r);
	if (tmpfs_mounted[0]) {
		umount2(tmpfs_mounted, MNT_DETACH);
		tmpfs_mounted[0] = '\0';
	}
	cli_rmtree(t->tmp);
	free(t->tmp);
	t->tmp = NULL;
}

void cli_test_run(const struct cli_test *t, struct cli_run *r, const char *cwd,
                  const char *const *extra, const char *const *argv)
{
	const char *env[CLI_TEST_ENV_MAX + 40];
	size_t n = 0;

	for (size_t i = 0; t->env[i]; i++)
		env[n++] = t->env[i];
	for (size_t i = 0; extra && extra[i]; i++) {
		if (n + 1 >= sizeof(env) / sizeof(*env))
			fatal("too many environment entries for a call");
		env[n++] = extra[i];
	}
	env[n] = NULL;
	cli_run(r, &(struct cli_opts){ .env = env, .cwd = cwd }, argv);
}

/* The bytes after a session file's index (magic, u64 LE length, index),
 * before its records (the history's, the call ids': each call writes its
 * own) and its signature; NULL when it is shorter than that says. */
static const char *after_index(const char *p, size_t n, size_t *rest)
{
	const uint8_t *u = (const uint8_t *)p;
	uint64_t index = 0;
	size_t rec;

	if (n < 13 + SIGN_TRAILER)
		return NULL;
	n -= SIGN_TRAILER;
	if (histrec_footer(u, n, &rec) == 0)
		n -= rec;
	if (n >= CALLREC_FOOTER && callrec_footer(u + n - CALLREC_FOOTER, n, &rec) == 0)
		n -= rec;
	if (n < 13)
		return NULL;
	for (int i = 7; i >= 0; i--)
		index = index << 8 | (unsigned char)p[5 + i];
	if (index > n - 13)
		return NULL;
	*rest = n - 13 - index;
	return p + 13 + index;
}

bool cli_same_session_values(const char *a, size_t na, const char *b, size_t nb)
{
	size_t ra, rb;
	const char *pa = after_index(a, na, &ra), *pb = after_index(b, nb, &rb);

	return pa && pb && memcmp(a, b, 5) == 0 && ra == rb && memcmp(pa, pb, ra) == 0;
}

void cli_put_session(const char *store, const char *id, const void *blob, size_t len)
{
	char path[PATH_MAX], err[SIGN_ERR_MAX];
	uint8_t trailer[SIGN_TRAILER];
	struct sign_key key;
	int dfd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	ck_assert_msg(dfd >= 0, "open %s: %s", store, strerror(errno));
	ck_assert_msg(sign_key_open(NULL, dfd, &key, err, sizeof(err)) == 0, "key: %s", err);
	close(dfd);
	/* A counter above any the store's own saves reached. */
	sign_trailer(&key, id, blob, len, &(struct sign_meta){ (uint64_t)time(NULL) << 20, false },
	             trailer);
	snprintf(path, sizeof(path), "%s/%s.pkl", store, id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert(write(fd, blob, len) == (ssize_t)len);
	ck_assert(write(fd, trailer, sizeof(trailer)) == (ssize_t)sizeof(trailer));
	close(fd);
}

char *cli_read_session(const char *store, const char *id, size_t *len)
{
	char path[PATH_MAX], *text;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.pkl", store, id);
	text = cli_read_file(path, &n);
	if (!text)
		return NULL;
	ck_assert_uint_ge(n, SIGN_TRAILER);
	n -= SIGN_TRAILER;
	text[n] = '\0';
	if (len)
		*len = n;
	return text;
}

/* ---- root and user, cold and warm ---- */

struct cli_modes cli_mode;
static void (*mode_setup)(void);

static void setup_root_cold(void) { cli_mode.as_user = false; cli_mode.warm = false; mode_setup(); }
static void setup_root_warm(void) { cli_mode.as_user = false; cli_mode.warm = true; mode_setup(); }
static void setup_user_cold(void) { cli_mode.as_user = true; cli_mode.warm = false; mode_setup(); }
static void setup_user_warm(void) { cli_mode.as_user = true; cli_mode.warm = true; mode_setup(); }

/* Whether a child (as the test user, when drop) can unshare a user
 * namespace. */
bool cli_userns_probe(bool drop)
{
	pid_t kid = fork();
	int st;

	if (kid == 0) {
		if (drop && (setgroups(0, NULL) < 0 ||
		             setresgid(cli_mode.gid, cli_mode.gid, cli_mode.gid) < 0 ||
		             setresuid(cli_mode.uid, cli_mode.uid, cli_mode.uid) < 0))
			_exit(2);
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	}
	return kid > 0 && waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool cli_local_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "useradd --system --no-create-home --home-dir /nonexistent "
	         "--shell /usr/sbin/nologin %s >/dev/null 2>&1", name);
	/* Suites run side by side (tests/run.py -j): another may make the
	 * user first, and this useradd then fails; look again either way. */
	if (!pw && geteuid() == 0) {
		if (system(cmd) != 0)
			fprintf(stderr, "cli_helpers: useradd %s failed (made by another suite?)\n",
			        name);
		pw = getpwnam(name);
	}
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

static void add_mode(Suite *s, const char *name, void (*add_cases)(TCase *),
                     void (*setup)(void), void (*teardown)(void), double timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	add_cases(tc);
	suite_add_tcase(s, tc);
}

void cli_modes_add(Suite *s, void (*add_cases)(TCase *), void (*setup)(void),
                   void (*teardown)(void), double timeout)
{
	mode_setup = setup;
	if (geteuid() == 0) {
		cli_mode.userns_root = cli_userns_probe(false);
		add_mode(s, "root-cold", add_cases, setup_root_cold, teardown, timeout);
		add_mode(s, "root-warm", add_cases, setup_root_warm, teardown, timeout);
		if (!cli_local_user(CLI_TEST_USER, &cli_mode.uid, &cli_mode.gid)) {
			printf("SKIP: the unprivileged half: user %s cannot be made\n", CLI_TEST_USER);
			return;
		}
		cli_mode.userns_user = cli_userns_probe(true);
	} else {
		/* Already unprivileged: run the user half as ourselves. */
		printf("SKIP: the root half needs root\n");
		cli_mode.uid = getuid();
		cli_mode.gid = getgid();
		cli_mode.userns_user = cli_userns_probe(false);
	}
	add_mode(s, "user-cold", add_cases, setup_user_cold, teardown, timeout);
	add_mode(s, "user-warm", add_cases, setup_user_warm, teardown, timeout);
}


bool cli_userns_available(void)
{
	return cli_mode.as_user ? cli_mode.userns_user : cli_mode.userns_root;
}

void cli_own(const char *path)
{
	if (cli_mode.as_user && geteuid() == 0)
		ck_assert_msg(lchown(path, cli_mode.uid, cli_mode.gid) == 0, "chown %s: %s", path,
		              strerror(errno));
}

void cli_mkdir_own(const char *path)
{
	ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
	cli_own(path);
}

void cli_test_cell(const struct cli_test *t, struct cli_run *r, const char *session,
                   const char *code)
{
	cli_test_run(t, r, t->tmp, NULL, (const char *const[]){
		"dolsot", "--session", session, code, NULL });
}

pid_t cli_test_cell_async(const struct cli_test *t, const char *session, const char *code,
                          const char *out_path)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct cli_run r;
		FILE *f;

		cli_test_cell(t, &r, session, code);
		f = fopen(out_path, "w");
		if (f) {
			fprintf(f, "%d\n%s%s", r.code, r.out, r.err);
			fclose(f);
		}
		_exit(0);
	}
	return pid;
}

int cli_count_lines(const char *path, const char *word)
{
	size_t len, wlen = strlen(word);
	char *text = cli_read_file(path, &len);
	int n = 0;

	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += strncmp(p, word, wlen) == 0 && (p[wlen] == ' ' || p[wlen] == '\n');
	free(text);
	return n;
}

/* The unit files of objects/HH into f[n..max); the new n. */
static int list_hh_units(const char *objects, const char *hh, struct cli_unit_file *f,
                         int n, int max)
{
	char sub[PATH_MAX];
	DIR *d;
	struct dirent *g;

	snprintf(sub, sizeof(sub), "%s/%s", objects, hh);
	d = opendir(sub);
	ck_assert_msg(d != NULL, "%s: %s", sub, strerror(errno));
	while ((g = readdir(d))) {
		struct stat st;

		if (g->d_name[0] == '.' || strchr(g->d_name, '.'))
			continue;   /* a temp file, or a unit's stamp */
		ck_assert_int_lt(n, max);
		ck_assert_int_eq(fstatat(dirfd(d), g->d_name, &st, AT_SYMLINK_NOFOLLOW), 0);
		snprintf(f[n].hex, sizeof(f[n].hex), "%s%s", hh, g->d_name);
		f[n].ino = st.st_ino;
		f[n].mtime = st.st_mtim;
		f[n].size = st.st_size;
		n++;
	}
	closedir(d);
	return n;
}

int cli_list_units(const char *objects, struct cli_unit_file *f, int max)
{
	DIR *top = opendir(objects);
	struct dirent *e;
	int n = 0;

	if (!top)
		return 0;
	while ((e = readdir(top)))
		if (e->d_name[0] != '.')
			n = list_hh_units(objects, e->d_name, f, n, max);
	closedir(top);
	return n;
}
