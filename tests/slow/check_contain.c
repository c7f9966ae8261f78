/*
 * check_contain.c - every process a cell starts dies with its call, however
 * the call's supervisor dies: the dolsot command killed by a signal it does
 * not handle (cold), the zygote or the server killed mid-cell (warm), a
 * live session's zygote killed; and outside these, a cell still sees the
 * host as before (its own pid, the host's PID namespace).
 *
 * Each case runs as root and as the test user, cold and warm
 * (cli_modes_add); the warm server's cases say SKIP on the cold path.  The
 * cell's processes are found by a mark in their environment.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

static char *tmp;
static char store_env[4300], mark_env[96], work[4400];
static const char *env[32];

/* A direct child, one in its own session that ignores TERM, HUP and INT,
 * and one orphaned at once (its shell exits): three sleeps in all. */
#define TREE "import subprocess, time\n" \
	"subprocess.Popen(['sleep', '1000'])\n" \
	"subprocess.Popen(['sh', '-c', 'trap \"\" TERM HUP INT; sleep 1001'], " \
	"start_new_session=True)\n" \
	"subprocess.Popen(['sh', '-c', 'setsid sleep 1002 & exit 0']).wait()\n"
#define TREE_SLEEPS 3

static void build_env(void)
{
	static const char *const unset[] = {
		"DOLSOT_TIMEOUT", "DOLSOT_MAX_OUTPUT", "DOLSOT_SESSION_TTL_DAYS", "PYTHONPATH",
		"VIRTUAL_ENV", "DOLSOT_SANDBOX", "DOLSOT_MEMORY", "DOLSOT_MAX_PROCS",
		"DOLSOT_MAX_FILE_SIZE", "DOLSOT_CPU_SECONDS", "DOLSOT_RECURSION_LIMIT",
		"DOLSOT_STORE", "DOLSOT_SERVER_IDLE", "DOLSOT_LIVE", "DOLSOT_TYPECHECK=0", NULL,
	};
	size_t n = 0;

	env[n++] = store_env;
	env[n++] = mark_env;
	env[n++] = cli_mode.warm ? "DOLSOT_SERVER=auto" : "DOLSOT_SERVER=off";
	for (size_t i = 0; unset[i]; i++)
		env[n++] = unset[i];
	env[n] = NULL;
}

static struct cli_opts opts(void)
{
	return (struct cli_opts){ .env = env, .cwd = work, .timeout = 120,
	                          .drop = cli_mode.as_user && geteuid() == 0,
	                          .uid = cli_mode.uid, .gid = cli_mode.gid };
}

static void run(struct cli_run *r, const char *const *argv)
{
	struct cli_opts o = opts();

	cli_run(r, &o, argv);
}

#define RUN(r, ...) run((r), (const char *const[]){ "dolsot", __VA_ARGS__, NULL })

/* What a failed case left: the cell's processes. */
static void kill_marked(void)
{
	pid_t pids[16];
	int n = cli_find_procs("sleep", mark_env, pids, 16);

	for (int i = 0; i < n && i < 16; i++)
		kill(pids[i], SIGKILL);
}

static void cleanup(void)
{
	struct cli_run r;

	if (!tmp)
		return;
	kill_marked();
	RUN(&r, "--server-stop");
	cli_run_release(&r);
	cli_rmtree(tmp);
	free(tmp);
	tmp = NULL;
}

static void setup(void)
{
	struct cli_run r;

	tmp = cli_tempdir();
	cli_own(tmp);
	snprintf(work, sizeof(work), "%s/work", tmp);
	cli_mkdir_own(work);
	snprintf(store_env, sizeof(store_env), "DOLSOT_CACHE_DIR=%s/store", tmp);
	snprintf(mark_env, sizeof(mark_env), "DOLSOT_TEST_MARK=contain-%ld-%d",
	         (long)time(NULL), (int)getpid());
	build_env();
	atexit(cleanup);
	if (cli_mode.warm) {
		RUN(&r, "--server-start");
		ck_assert_msg(r.code == 0, "--server-start: exit %d: %s", r.code, r.err);
		cli_run_release(&r);
	}
}

static void teardown(void)
{
	cleanup();
}

/* The cell's sleeps still alive (not zombies). */
static int sleeps(void)
{
	pid_t pids[16];

	return cli_find_procs("sleep", mark_env, pids, 16);
}

/* Wait up to seconds for sleeps() to be want; returns the last count. */
static int wait_sleeps(int want, double seconds)
{
	double until = cli_now() + seconds;
	int n;

	while ((n = sleeps()) != want && cli_now() < until)
		usleep(20000);
	return n;
}

/* The file whose appearance ends a tree call's cell (release_cell). */
static const char *go_path(void)
{
	return cli_path(work, "go");
}

/* Start a call running TREE, then waiting (up to 60 s) for the test to
 * release it; returns once its tree is up. */
static pid_t start_tree_call(const char *session, bool live)
{
	char code[8192];
	const char *const plain[] = { "dolsot", "--session", session, "--timeout", "60",
	                              code, NULL };
	const char *const as_live[] = { "dolsot", "--live", "--session", session,
	                                "--timeout", "60", code, NULL };
	struct cli_opts o = opts();
	pid_t call;
	int up;

	snprintf(code, sizeof(code), TREE "import os\nt0 = time.time()\n"
	         "while not os.path.exists('%s') and time.time() - t0 < 60:\n"
	         "    time.sleep(0.02)\n", go_path());
	ck_assert_msg(unlink(go_path()) == 0 || errno == ENOENT, "unlink %s: %s", go_path(),
	              strerror(errno));
	call = cli_spawn(&o, live ? as_live : plain);
	up = wait_sleeps(TREE_SLEEPS, 60);
	ck_assert_msg(up == TREE_SLEEPS, "the cell's tree: %d of %d sleeps", up, TREE_SLEEPS);
	return call;
}

/* Let a tree call's cell end, if it still runs. */
static void release_cell(void)
{
	cli_write_file(go_path(), "");
}

/* Reap the call; its exit code, or 128 + signal. */
static int reap(pid_t call)
{
	int st;

	while (waitpid(call, &st, 0) < 0)
		ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void ck_tree_gone(const char *what)
{
	int left = wait_sleeps(0, 5);

	if (left)
		kill_marked();   /* a failed check ends this process at once */
	ck_assert_msg(left == 0, "%s: %d of the cell's processes survived", what, left);
}

/* The number after "<prefix>" at the start of a --server-status line. */
static pid_t status_pid(const char *prefix)
{
	struct cli_run r;
	const char *at;
	pid_t pid = 0;

	RUN(&r, "--server-status");
	for (at = r.out; at && *at; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL)
		if (strncmp(at, prefix, strlen(prefix)) == 0) {
			pid = (pid_t)atol(at + strlen(prefix));
			break;
		}
	ck_assert_msg(pid > 0, "no '%s' in --server-status:\n%s%s", prefix, r.out, r.err);
	cli_run_release(&r);
	return pid;
}

static void ck_call_ok(const char *session, const char *code, const char *out)
{
	struct cli_run r;

	RUN(&r, "--session", session, code);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_str_eq(r.out, out);
	cli_run_release(&r);
}

#define NEED_WARM() do { \
	if (!cli_mode.warm) { \
		printf("SKIP: %s: the warm server's case\n", __func__); \
		return; \
	} \
} while (0)

START_TEST(client_killed_by_any_signal_takes_the_cell_along)
{
	static const int sigs[] = { SIGKILL, SIGQUIT, SIGUSR1, SIGTERM, SIGHUP };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(*sigs); i++) {
		char what[64];
		pid_t call = start_tree_call("s", false);

		kill(call, sigs[i]);
		reap(call);
		snprintf(what, sizeof(what), "the client killed by %s", strsignal(sigs[i]));
		ck_tree_gone(what);
	}
	ck_call_ok("s", "'next'", "'next'\n");
}
END_TEST

/* Kill the warm process whose --server-status line starts with which,
 * mid-cell; the call's exit code. */
static int kill_mid_cell(const char *session, const char *which, const char *what)
{
	pid_t call;
	int code;

	ck_call_ok(session, "1", "1\n");
	call = start_tree_call(session, false);
	kill(status_pid(which), SIGKILL);
	/* A call whose worker outlives its supervisor goes on to the cell's end. */
	release_cell();
	code = reap(call);
	ck_tree_gone(what);
	ck_call_ok(session, "2", "2\n");
	return code;
}

START_TEST(zygote_killed_mid_cell_takes_the_cell_along)
{
	NEED_WARM();
	ck_assert_int_eq(kill_mid_cell("z", "zygote ", "the zygote killed"), 1);
}
END_TEST

START_TEST(server_killed_mid_cell_takes_the_cell_along)
{
	NEED_WARM();
	(void)kill_mid_cell("v", "pid ", "the server killed");
}
END_TEST

START_TEST(live_zygote_killed_mid_cell_takes_the_cell_along)
{
	struct cli_run r;
	pid_t call;

	NEED_WARM();
	RUN(&r, "--live", "--session", "l", "x = 1");
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	cli_run_release(&r);
	call = start_tree_call("l", true);
	kill(status_pid("zygote "), SIGKILL);
	ck_assert_int_eq(reap(call), 1);
	ck_tree_gone("a live session's zygote killed");
	ck_call_ok("l", "x", "1\n");
}
END_TEST

/* A rollback kills the live process's tree but keeps the snapshot, which
 * becomes the live process and is guarded in turn. */
START_TEST(live_snapshot_that_took_over_is_guarded)
{
	struct cli_run r;
	pid_t call;

	NEED_WARM();
	RUN(&r, "--live", "--session", "t", "x = 1");
	cli_run_release(&r);
	RUN(&r, "--live", "--session", "t", "--timeout", "2", TREE "x = 2\ntime.sleep(60)");
	ck_assert_int_eq(r.code, 124);
	ck_err_has(&r, "session rolled back to its state before this call");
	cli_run_release(&r);
	ck_tree_gone("a timed-out live cell");
	call = start_tree_call("t", true);
	kill(status_pid("zygote "), SIGKILL);
	reap(call);
	ck_tree_gone("the zygote of a rolled-back live session killed");
}
END_TEST

START_TEST(timeout_takes_the_tree_along)
{
	struct cli_run r;

	RUN(&r, "--session", "o", "--timeout", "2", TREE "time.sleep(60)");
	ck_assert_int_eq(r.code, 124);
	cli_run_release(&r);
	ck_tree_gone("a timed-out cell");
}
END_TEST

START_TEST(what_a_finished_cell_left_is_swept)
{
	struct cli_run r;

	RUN(&r, "--session", "f", TREE "'done'");
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_str_eq(r.out, "'done'\n");
	cli_run_release(&r);
	ck_tree_gone("a finished cell");
}
END_TEST

/* No namespace outside the sandbox: the cell's pid is its host pid, and
 * its children and waits behave as in any program. */
START_TEST(cell_sees_the_host_as_before)
{
	char ns[64], code[512], want[128];
	ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);

	ck_assert_int_gt(n, 0);
	ns[n] = '\0';
	snprintf(code, sizeof(code),
	         "import os, subprocess\n"
	         "p = subprocess.Popen(['sh', '-c', 'echo $PPID'], stdout=subprocess.PIPE)\n"
	         "ppid = int(p.communicate()[0])\n"
	         "(os.getpid() > 1, ppid == os.getpid(), os.readlink('/proc/self/ns/pid'), "
	         "os.readlink('/proc/self') == str(os.getpid()), p.returncode)");
	snprintf(want, sizeof(want), "(True, True, '%s', True, 0)\n", ns);
	ck_call_ok("h", code, want);
}
END_TEST

static void add_cases(TCase *tc)
{
	tcase_add_test(tc, client_killed_by_any_signal_takes_the_cell_along);
	tcase_add_test(tc, zygote_killed_mid_cell_takes_the_cell_along);
	tcase_add_test(tc, server_killed_mid_cell_takes_the_cell_along);
	tcase_add_test(tc, live_zygote_killed_mid_cell_takes_the_cell_along);
	tcase_add_test(tc, live_snapshot_that_took_over_is_guarded);
	tcase_add_test(tc, timeout_takes_the_tree_along);
	tcase_add_test(tc, what_a_finished_cell_left_is_swept);
	tcase_add_test(tc, cell_sees_the_host_as_before);
}

int main(void)
{
	Suite *s = suite_create("contain");
	char *bin_dir = cli_bin_shared_copy();
	int failed;

	cli_modes_add(s, add_cases, setup, teardown, 240);
	failed = ck_run(s);
	cli_rmtree(bin_dir);
	free(bin_dir);
	return failed ? 1 : 0;
}
