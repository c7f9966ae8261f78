/*
 * check_faults.c - dolsot under faults and load: the dolsot process killed
 * with SIGKILL at random moments, a full filesystem, session files
 * corrupted on disk, and 200 calls at once.
 *
 * Like check_cli it runs twice from the Makefile: cold (DOLSOT_SERVER=off)
 * and with the warm server started for every test (DOLSOT_TEST_WARM=1).
 * Each test prints what it measured on stdout.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

static struct cli_test fx;
/* The store is dir, or tmp/store when dir is NULL. */
static void use_store(const char *dir)
{
	if (dir)
		snprintf(fx.store, sizeof(fx.store), "%s", dir);
	else
		snprintf(fx.store, sizeof(fx.store), "%s/store", fx.tmp);
	snprintf(fx.store_env, sizeof(fx.store_env), "DOLSOT_CACHE_DIR=%s", fx.store);
}

static void start_server_if_warm(void)
{
	char err[4096];

	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void setup(void)
{
	cli_test_begin(&fx, cli_usual_env);
	start_server_if_warm();
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* A cell that leaves "ghost", a list of objects of a module only that call
 * has (made in sys.modules): later calls cannot load it and keep it. */
#define GHOST "import sys, types\nghost_mod = types.ModuleType('ghost_mod')\n" \
	"exec('class G:\\n    pass', ghost_mod.__dict__)\n" \
	"sys.modules['ghost_mod'] = ghost_mod\nghost = [ghost_mod.G(), ghost_mod.G()]\n" \
	"del ghost_mod\n"

/* The session still keeps ghost unloaded. */
static void ck_ghost_kept(const char *session)
{
	struct cli_run r;

	CLI(&r, "--session", session, "'ghost' in globals()");
	ck_code(&r, 0);
	ck_out(&r, "False\n");
	ck_err_has(&r, "ghost (ModuleNotFoundError: No module named 'ghost_mod')");
	ck_err_has(&r, "; kept unloaded: ghost\n");
	cli_run_release(&r);
}

/* Names in the store directory that start with prefix. */
static int count_names(const char *prefix)
{
	DIR *d = opendir(fx.store);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* Start dolsot with argv and the test's environment, streams on /dev/null. */
static pid_t spawn(const char *const *argv)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		const char *eq = strchr(fx.store_env, '=');

		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(125);
		setenv("DOLSOT_CACHE_DIR", eq + 1, 1);
		unsetenv("DOLSOT_TIMEOUT");
		execv(cli_bin(), (char *const *)argv);
		_exit(126);
	}
	return pid;
}

/* ---- kill -9 at random moments ---- */

#define KILLS 300

/* The next call's n: it must be the old state plus one, or, when the
 * killed call's save got through, plus two. */
START_TEST(sigkill_at_random_moments_keeps_old_or_new)
{
	const char *const argv[] = { "dolsot", "--session", "k", "--timeout", "20",
	                             "n += 1\nn", NULL };
	int saved = 0, lost = 0, finished = 0, mid_save = 0;
	long prev = 0;
	double call = 0, t0 = cli_now();
	unsigned seed = (unsigned)time(NULL);

	srandom(seed);
	/* A session of some size, so that saves take a moment, with a unit
	 * every call keeps unloaded. */
	ok_call("k", GHOST "n = 0\npad = bytes(range(256)) * 1024");
	for (int i = 0; i < 3; i++) {
		struct cli_run r;

		CLI(&r, "--session", "k", "n += 1\nn");
		ck_code(&r, 0);
		prev = atol(r.out);
		call += r.seconds / 3;
		cli_run_release(&r);
	}
	for (int i = 0; i < KILLS; i++) {
		struct timespec wait;
		double delay = call * 1.2 * (double)random() / RAND_MAX;
		struct cli_run r;
		pid_t pid;
		int st;
		long got;

		pid = spawn(argv);
		wait.tv_sec = (time_t)delay;
		wait.tv_nsec = (long)((delay - (double)wait.tv_sec) * 1e9);
		nanosleep(&wait, NULL);
		kill(pid, SIGKILL);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		if (WIFEXITED(st)) {
			ck_assert_msg(WEXITSTATUS(st) == 0, "kill %d: exit %d", i, WEXITSTATUS(st));
			finished++;
		}
		mid_save += count_names(".k.") > 0;
		/* The next call loads what is there, runs, and saves. */
		CLI(&r, "--session", "k", "n += 1\nn");
		ck_assert_msg(r.code == 0, "after kill %d (seed %u, %.3fs in): exit %d\n%s", i,
		              seed, delay, r.code, r.err);
		got = atol(r.out);
		ck_assert_msg(got == prev + 1 || got == prev + 2,
		              "after kill %d (seed %u, %.3fs in): n = %ld, before %ld", i, seed,
		              delay, got, prev);
		ck_assert_msg(!WIFEXITED(st) || got == prev + 2, "kill %d: finished call lost", i);
		saved += got == prev + 2;
		lost += got == prev + 1;
		prev = got;
		/* Follow the machine's pace, so kills keep landing inside calls. */
		call = 0.8 * call + 0.2 * r.seconds;
		cli_run_release(&r);
		ck_assert_msg(count_names(".k.") == 0, "after kill %d: a temp file is left", i);
	}
	ck_no_strays();
	{
		char want[64];

		snprintf(want, sizeof(want), "(%ld, 262144)\n", prev);
		ck_state("k", "n, len(pad)", want);
	}
	ck_ghost_kept("k");
	printf("kill -9: %d kills in %.1fs (a call took %.3fs at the end): %d saved, %d not saved, "
	       "%d finished before the kill, %d left a temp file; seed %u\n",
	       KILLS, cli_now() - t0, call, saved, lost, finished, mid_save, seed);
}
END_TEST

/* ---- a full filesystem ---- */

/*
 * A tmpfs of our own (we run as root), in a mount namespace of this test
 * process and what it starts, so that it goes away with them even if the
 * test dies.  SKIP where mounting is not allowed.
 */
/* Fill the filesystem of path until writes fail; returns the file's size. */
static long fill(const char *path)
{
	static char block[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	long total = 0;
	ssize_t w;

	ck_assert_int_ge(fd, 0);
	memset(block, 'f', sizeof(block));
	while ((w = write(fd, block, sizeof(block))) > 0)
		total += w;
	while ((w = write(fd, block, 1)) > 0)
		total += w;
	ck_assert_int_eq(errno, ENOSPC);
	close(fd);
	return total;
}

static void ck_save_failed(const struct cli_run *r, const char *pkl, const char *before)
{
	char *after;

	ck_code(r, 1);
	ck_err_has(r, "warning: session 't' not saved: cannot save session 't': ");
	ck_err_has(r, "No space left on device\n");
	ck_assert(!cli_has(r->err, "session now holds"));
	after = cli_read_file(pkl, NULL);
	ck_assert_ptr_nonnull(after);
	ck_assert_msg(strcmp(before, after) == 0, "the session file changed");
	free(after);
	ck_assert_msg(count_names(".t.") == 0, "a half-written temp file is left");
}

START_TEST(full_filesystem_keeps_the_old_state)
{
	struct cli_run r;
	char mnt[4300], dir[4400], pkl[4500], filler[4500], *before;

	snprintf(mnt, sizeof(mnt), "%s/full", fx.tmp);
	if (!cli_test_tmpfs(mnt, "size=2m,mode=0700"))
		return;
	CLI(&r, "--server-stop");   /* the fixture's store: this test uses its own */
	cli_run_release(&r);
	snprintf(dir, sizeof(dir), "%s/store", mnt);
	use_store(dir);
	start_server_if_warm();
	ok_call("t", GHOST "x = 1\ny = 'kept'");
	ok_call("t", "1");   /* now ghost is kept unloaded */
	snprintf(pkl, sizeof(pkl), "%s/t.pkl", fx.store);
	before = cli_read_file(pkl, NULL);
	ck_assert_ptr_nonnull(before);
	/* A save bigger than the filesystem. */
	CLI(&r, "--session", "t", "x = 2\nbig = b'b' * 3000000\nprint('ran')\n7");
	ck_save_failed(&r, pkl, before);
	ck_out(&r, "ran\n7\n");
	cli_run_release(&r);
	ck_state("t", "x, y, 'big' in globals()", "(1, 'kept', False)\n");
	/* A filesystem with no byte left: even a tiny save fails cleanly. */
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	printf("full filesystem: filled %ld bytes\n", fill(filler));
	CLI(&r, "--session", "t", "x = 3");
	ck_save_failed(&r, pkl, before);
	cli_run_release(&r);
	CLI(&r, "--list-sessions");
	ck_code(&r, 0);
	ck_assert(cli_has(r.out, "t\t"));
	cli_run_release(&r);
	/* With room again, the session goes on from its old state. */
	unlink(filler);
	ck_state("t", "x += 10\nx, y", "(11, 'kept')\n");
	ck_ghost_kept("t");
	free(before);
	ck_no_strays();
}
END_TEST

/* ---- corrupted session files ---- */

static void ck_load_refused(const struct cli_run *r, int i)
{
	ck_assert_msg(r->code == 1, "corruption %d: exit %d\n%s", i, r->code, r->err);
	ck_assert_msg(cli_has(r->err, "dolsot: session 't' cannot be loaded: ") &&
	              cli_has(r->err, "; run 'dolsot --reset t' to start it afresh\n"),
	              "corruption %d: %s", i, r->err);
}

START_TEST(corrupted_session_names_itself_and_the_reset)
{
	static const char *const whole[] = {
		"", "DLSS", "DLSS\001", "XXXX\001\x80\x05N.", "DLSS\001\x80\x05K\x07.",
		"DLSS\001\x80\x05\x8c\x08nosuchmo\x94\x8c\x01X\x94\x93\x94.",
		"DLSS\001\x80\x05\x8e\xff\xff\xff\xff\xff\xff\xff\x7f",
		"DLSS\001garbage", "\x80\x05}\x94.",
	};
	char pkl[4400], *good;
	size_t len;
	struct cli_run r;
	int refused = 0, loaded = 0;

	ok_call("t", "import collections\ndef f(a):\n    return a + 1\n"
	             "class K:\n    pass\nk = K()\nd = collections.OrderedDict(a=[1, 2.5, 'x'])\n"
	             "b = bytes(range(256))\ns = {1, 2}");
	snprintf(pkl, sizeof(pkl), "%s/t.pkl", fx.store);
	/* The blob itself, damaged and signed again: what the worker makes of
	 * it (the signature's refusals are check_sign's). */
	good = cli_read_session(fx.store, "t", &len);
	ck_assert_ptr_nonnull(good);
	ck_assert_uint_gt(len, 100);
	/* Files that are not a session at all. */
	for (size_t i = 0; i < sizeof(whole) / sizeof(*whole); i++) {
		char *after;

		cli_put_session(fx.store, "t", whole[i], strlen(whole[i]));
		CLI(&r, "--session", "t", "1");
		ck_load_refused(&r, (int)i);
		cli_run_release(&r);
		after = cli_read_session(fx.store, "t", NULL);
		ck_assert_str_eq(after, whole[i]);   /* never silently replaced */
		free(after);
	}
	/* Cut short anywhere, or a byte changed anywhere: a clear refusal, or a
	 * session that loads (a changed byte inside a string, say). */
	for (int i = 0; i < 60; i++) {
		size_t cut = i < 20 ? (len * (size_t)i) / 20 : len;
		char *bad = malloc(len);

		ck_assert_ptr_nonnull(bad);
		memcpy(bad, good, len);
		if (i >= 20)
			bad[5 + (len - 5) * (size_t)(i - 20) / 40] = (char)(i * 37);
		cli_put_session(fx.store, "t", bad, cut);
		free(bad);
		CLI(&r, "--session", "t", "--timeout", "10", "1");
		if (r.code == 0) {
			loaded++;
		} else {
			ck_load_refused(&r, 100 + i);
			refused++;
		}
		cli_run_release(&r);
	}
	ck_assert_int_ge(refused, 20);
	/* The reset it names works, and the session starts afresh. */
	CLI(&r, "--reset", "t");
	ck_code(&r, 0);
	ck_out(&r, "reset t: removed 1 session(s)\n");
	cli_run_release(&r);
	ck_state("t", "'k' in globals()", "False\n");
	free(good);
	ck_no_strays();
	printf("corruption: %d damaged files refused with the reset hint, %d still loaded\n",
	       refused + (int)(sizeof(whole) / sizeof(*whole)), loaded);
}
END_TEST

/* ---- load ---- */

#define CALLS 200
#define SESSIONS 20

/* The warm server's pid and its zygotes', from --server-status. */
static size_t server_pids(pid_t *pids, size_t max)
{
	struct cli_run r;
	size_t n = 0;
	const char *p;

	CLI(&r, "--server-status");
	if (r.code == 0 && sscanf(r.out, "pid %d", &pids[0]) == 1)
		n = 1;
	for (p = r.out; n && n < max && (p = strstr(p, "\nzygote ")); p++)
		pids[n++] = (pid_t)atoi(p + 8);
	cli_run_release(&r);
	return n;
}

/* pid's fd count once it is at most want, or after 5 s: a server closes a
 * connection a moment after its client saw the answer. */
static int fds_settled(pid_t pid, int want)
{
	int n = cli_count_fds(pid);

	for (int i = 0; i < 250 && n > want; i++) {
		usleep(20000);
		n = cli_count_fds(pid);
	}
	return n;
}

START_TEST(two_hundred_concurrent_calls)
{
	static const char *argv[CALLS][8];
	static char sessions[SESSIONS][16];
	pid_t kids[CALLS], srv[16];
	size_t n_srv;
	int fds_before, srv_fds_before[16], failed = 0;
	long max_rss = 0, srv_rss[16];
	double t0;

	for (int s = 0; s < SESSIONS; s++) {
		snprintf(sessions[s], sizeof(sessions[s]), "s%02d", s);
		ok_call(sessions[s], "n = 0");
	}
	ck_no_strays();
	fds_before = cli_count_fds(0);
	n_srv = server_pids(srv, 16);
	usleep(200000);
	for (size_t i = 0; i < n_srv; i++)
		srv_fds_before[i] = cli_count_fds(srv[i]);
	t0 = cli_now();
	for (int i = 0; i < CALLS; i++) {
		const char *const a[] = { "dolsot", "--session", sessions[i % SESSIONS],
		                          "--timeout", "300", "n += 1", NULL };

		memcpy(argv[i], a, sizeof(a));
		kids[i] = spawn(argv[i]);
	}
	for (int i = 0; i < CALLS; i++) {
		struct rusage ru;
		int st;

		ck_assert_int_eq(wait4(kids[i], &st, 0, &ru), kids[i]);
		failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (ru.ru_maxrss > max_rss)
			max_rss = ru.ru_maxrss;
	}
	ck_assert_msg(failed == 0, "%d of %d calls failed", failed, CALLS);
	printf("load: %d calls over %d sessions in %.1fs, peak RSS of one call %ld kB\n",
	       CALLS, SESSIONS, cli_now() - t0, max_rss);
	for (int s = 0; s < SESSIONS; s++)
		ck_state(sessions[s], "n", "10\n");
	ck_no_strays();
	ck_assert_int_eq(cli_count_fds(0), fds_before);
	/* Memory is bounded: one call (with its cold worker) stays small. */
	ck_assert_msg(max_rss < 150 * 1024, "a call peaked at %ld kB", max_rss);
	/* The warm server and its zygotes neither leak fds nor grow. */
	for (size_t i = 0; i < n_srv; i++) {
		int fds = fds_settled(srv[i], srv_fds_before[i]);

		srv_rss[i] = cli_rss_kb(srv[i]);
		ck_assert_msg(fds <= srv_fds_before[i], "process %d had %d fds, now %d",
		              (int)srv[i], srv_fds_before[i], fds);
		ck_assert_msg(srv_rss[i] < 100 * 1024, "process %d holds %ld kB", (int)srv[i],
		              srv_rss[i]);
		printf("load: %s %d: %ld kB RSS, %d fds after\n", i ? "zygote" : "server",
		       (int)srv[i], srv_rss[i], cli_count_fds(srv[i]));
	}
	{
		pid_t after[16];

		ck_assert_uint_eq(server_pids(after, 16), n_srv);
	}
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *kill9 = tcase_create("sigkill"), *disk = tcase_create("disk"),
	      *load = tcase_create("load");
	TCase *all[] = { kill9, disk, load };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 900);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(kill9, sigkill_at_random_moments_keeps_old_or_new);
	tcase_add_test(disk, full_filesystem_keeps_the_old_state);
	tcase_add_test(disk, corrupted_session_names_itself_and_the_reset);
	tcase_add_test(load, two_hundred_concurrent_calls);
	return s;
}

int main(void)
{
	return ck_run(faults_suite());
}
