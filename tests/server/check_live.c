/*
 * check_live.c - live sessions (--live, issue 15) through the real
 * binary and its warm server: what only a live process can keep (a
 * socket, a generator, a thread, a view's identity) survives across
 * calls; a cell that does not complete (a timeout, a segfault, a limit, a
 * killed client) is rolled back to the state before it; eviction, a
 * killed server or a call without --live fall back to the store and name
 * what was lost; calls on one live session serialize, on two run side by
 * side.  No case asserts timing beyond generous bounds.
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

static struct cli_test fx;

static void setup(void)
{
	cli_test_begin_server(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* A live call that must exit with code; its run is the caller's. */
static void live(struct cli_run *r, const char *session, const char *code, int want)
{
	CLI(r, "--live", "--session", session, code);
	ck_code(r, want);
}

/* A live call that must succeed with stdout want. */
static void live_ok(const char *session, const char *code, const char *want)
{
	struct cli_run r;

	live(&r, session, code, 0);
	ck_out(&r, want);
	cli_run_release(&r);
}

/* A live call on session that the --timeout of seconds ends, and that
 * rolls back. */
static void times_out(const char *session, const char *seconds, const char *code)
{
	struct cli_run r;

	CLI(&r, "--live", "--timeout", seconds, "--session", session, code);
	ck_code(&r, 124);
	ck_err_has(&r, "session rolled back to its state before this call");
	cli_run_release(&r);
}

/* How long an idle live session may take to be evicted, and how often the
 * test looks. */
#define EVICT_SECONDS 60
#define POLL_US 20000

/* Whether --server-status lists session as live. */
static bool live_listed(const char *session)
{
	struct cli_run r;
	char line[256];
	bool listed;

	snprintf(line, sizeof(line), "  live %s pid ", session);
	CLI(&r, "--server-status");
	ck_code(&r, 0);
	listed = cli_has(r.out, line);
	cli_run_release(&r);
	return listed;
}

static long status_number(const char *label)
{
	struct cli_run r;
	const char *p;
	long v = 0;

	CLI(&r, "--server-status");
	p = r.code == 0 ? strstr(r.out, label) : NULL;
	if (p)
		v = strtol(p + strlen(label), NULL, 10);
	cli_run_release(&r);
	return v;
}

#define OBJECTS \
	"import socket, concurrent.futures\n" \
	"a, b = socket.socketpair()\n" \
	"a.sendall(b'hi')\n" \
	"g = (i for i in range(10))\n" \
	"next(g)\n" \
	"f = open(path, 'w')\n" \
	"f.write('a')\n" \
	"ex = concurrent.futures.ThreadPoolExecutor(1)\n" \
	"ex.submit(int).result()\n" \
	"x = 1\n"

START_TEST(unsaveable_objects_survive_and_are_marked)
{
	struct cli_run r;
	char code[8192];

	/* The open file in the test's directory. */
	snprintf(code, sizeof(code), "path = '%s'\n%s", cli_path(fx.tmp, "notes.txt"), OBJECTS);
	live(&r, "s", code, 0);
	ck_err_has(&r, "a (live only)");
	ck_err_has(&r, "g (live only)");
	ck_err_has(&r, "ex (live only)");
	ck_err_lacks(&r, "dropped unpicklable");
	cli_run_release(&r);
	live_ok("s", "b.recv(2), next(g), ex.submit(lambda: 41 + 1).result(), f.write('b'), x",
	        "(b'hi', 1, 42, 1, 1)\n");
	/* --describe reads the store and leaves the live process be. */
	CLI(&r, "--live", "--session", "s", "--describe");
	ck_code(&r, 0);
	cli_run_release(&r);
	live_ok("s", "f.close(); open(path).read(), next(g)", "('ab', 2)\n");
}
END_TEST

START_TEST(a_call_without_live_names_what_is_lost_and_keeps_the_rest)
{
	struct cli_run r;

	live(&r, "s", "import socket\na, b = socket.socketpair()\ng = (i for i in range(3))\nx = 7", 0);
	cli_run_release(&r);
	CLI(&r, "--session", "s", "x + 1");
	ck_code(&r, 0);
	ck_out(&r, "8\n");
	ck_err_has(&r, "are lost");
	ck_err_has(&r, "a (socket.socket)");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
	/* It ended the live process: the next live call starts from the store. */
	live(&r, "s", "x, 'g' in dir()", 0);
	ck_out(&r, "(7, False)\n");
	ck_err_lacks(&r, "are lost");
	cli_run_release(&r);
}
END_TEST

START_TEST(the_carried_state_of_live_calls_reaches_the_store)
{
	struct cli_run r;

	live_ok("s", "import random, os\nrandom.seed(5)\nos.environ['FOO'] = 'bar'", "");
	live_ok("s", "y = os.environ['FOO']", "");
	/* Two live calls later, a call from the store gets both back. */
	CLI(&r, "--session", "s", "import random, os\nround(random.random(), 6), os.environ['FOO'], y");
	ck_code(&r, 0);
	ck_out(&r, "(0.622902, 'bar', 'bar')\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_numpy_view_stays_a_view)
{
	live_ok("s", "import numpy as np\na = np.zeros(4)\nv = a[1:3]\nv.base is a", "True\n");
	live_ok("s", "v[0] = 5\na[1], v.base is a", "(5.0, True)\n");
}
END_TEST

#define BIG "L = list(range(10_000_000))\ng = iter(range(10))\nnext(g)\nlen(L)"
#define CHECK_BIG "L == list(range(10_000_000)), next(g)"

START_TEST(a_timeout_mid_mutation_rolls_back)
{
	live_ok("s", BIG, "10000000\n");
	times_out("s", "3", "for i in range(len(L)):\n    L[i] = -1\n    if i == 5_000_000:\n"
	          "        while True: pass");
	live_ok("s", CHECK_BIG, "(True, 1)\n");
}
END_TEST

START_TEST(a_segfault_rolls_back)
{
	struct cli_run r;

	live_ok("s", "L = [0] * 1000\ng = iter(range(10))\nnext(g)", "0\n");
	live(&r, "s", "import ctypes\nL[0] = 99\nnext(g)\nctypes.string_at(0)", 1);
	ck_err_has(&r, "Segmentation fault");
	ck_err_has(&r, "session rolled back to its state before this call");
	cli_run_release(&r);
	live_ok("s", "L[0], next(g)", "(0, 1)\n");
}
END_TEST

START_TEST(a_memory_error_under_memory_rolls_back)
{
	struct cli_run r;

	/* AddressSanitizer's shadow memory does not fit under --memory: its
	 * own mmap fails first (tests/slow/check_sandbox.c skips the same). */
	if (SANITIZED) {
		printf("SKIP: %s: --memory cannot work under AddressSanitizer\n", __func__);
		return;
	}
	CLI(&r, "--live", "--memory", "1G", "--session", "s",
	    "L = [0] * 1000\ng = iter(range(10))\nnext(g)");
	ck_code(&r, 0);
	cli_run_release(&r);
	CLI(&r, "--live", "--memory", "1G", "--session", "s",
	    "L[0] = 99\nnext(g)\nbig = bytearray(4 << 30)");
	ck_assert_msg(r.code != 0, "the cell got 4 GiB under --memory 1G");
	ck_err_has(&r, "memory");
	ck_err_has(&r, "session rolled back to its state before this call");
	cli_run_release(&r);
	CLI(&r, "--live", "--memory", "1G", "--session", "s", "L[0], next(g)");
	ck_code(&r, 0);
	ck_out(&r, "(0, 1)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_killed_client_rolls_back)
{
	struct cli_run r;
	const char *const killer[] = { "timeout", "-s", "KILL", "4", NULL };
	struct cli_opts o = { .env = fx.env, .wrapper = killer };

	live_ok("s", "L = [0] * 1000\ng = iter(range(10))\nnext(g)", "0\n");
	cli_run(&r, &o, (const char *const[]){ "dolsot", "--live", "--session", "s",
	                                       "L[0] = 99\nnext(g)\nwhile True: pass", NULL });
	ck_assert_int_eq(r.code, 128 + SIGKILL);
	cli_run_release(&r);
	/* The zygote sees the client go and kills the cell; the lock is free
	 * at once, so the next call may meet the rollback under way. */
	live_ok("s", "L[0], next(g)", "(0, 1)\n");
}
END_TEST

START_TEST(eviction_by_the_bound_falls_back_to_the_store)
{
	struct cli_run r;

	cli_test_add_env(&fx, "DOLSOT_LIVE_MAX=1");
	live_ok("a", "g = (i for i in range(3))\nx = 1", "");
	live_ok("b", "y = 2", "");
	live(&r, "a", "x", 0);   /* b took a's place */
	ck_out(&r, "1\n");
	ck_err_has(&r, "are lost");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
}
END_TEST

START_TEST(the_bound_holds_across_environments_and_the_status_shows_it)
{
	struct cli_run r;
	char *sub = strdup(cli_path(fx.tmp, "sub"));

	ck_assert_int_eq(mkdir(sub, 0755), 0);
	cli_test_add_env(&fx, "DOLSOT_LIVE_MAX=1");
	live_ok("a", "g = (i for i in range(3))\nx = 1", "");
	/* Another directory is another zygote: the bound is the server's. */
	RUN_IN(&r, sub, NULL, "--live", "--session", "b", "y = 2");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* A zygote reports to the server after it answers its client: the
	 * server may end a a moment after the call returned. */
	for (int i = 0;; i++) {
		CLI(&r, "--server-status");
		ck_code(&r, 0);
		if (!cli_has(r.out, "live a pid") || i == 100)
			break;
		cli_run_release(&r);
		usleep(100 * 1000);
	}
	ck_out_has(&r, "  live b pid ");
	ck_out_has(&r, "kB private, idle");
	ck_assert_msg(!cli_has(r.out, "live a pid"), "a is still live:\n%s", r.out);
	cli_run_release(&r);
	live(&r, "a", "x", 0);
	ck_out(&r, "1\n");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
	free(sub);
}
END_TEST

START_TEST(an_idle_live_session_is_evicted)
{
	struct cli_run r;

	cli_test_add_env(&fx, "DOLSOT_LIVE_IDLE=1");
	live_ok("a", "g = (i for i in range(3))\nx = 1", "");
	/* Until the server's status no longer lists it (a second idle, then
	 * the server's next look). */
	for (double until = cli_now() + EVICT_SECONDS; live_listed("a");) {
		ck_assert_msg(cli_now() < until, "live a was not evicted within %d s", EVICT_SECONDS);
		usleep(POLL_US);
	}
	live(&r, "a", "x", 0);
	ck_out(&r, "1\n");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_killed_server_loses_only_the_live_only_values)
{
	struct cli_run r;
	pid_t server;

	live_ok("a", "g = (i for i in range(3))\nx = [1, 2]", "");
	server = (pid_t)status_number("pid ");
	ck_assert_int_gt(server, 0);
	ck_assert_int_eq(kill(server, SIGKILL), 0);
	live(&r, "a", "x", 0);
	ck_out(&r, "[1, 2]\n");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
}
END_TEST

START_TEST(a_cold_write_and_a_reset_end_the_live_state)
{
	const char *const cold[] = { "DOLSOT_SERVER=off", NULL };
	struct cli_run r;

	live_ok("a", "x = 1\ng = (i for i in range(3))", "");
	RUN_IN(&r, NULL, cold, "--session", "a", "x = 5");
	ck_code(&r, 0);
	cli_run_release(&r);
	live_ok("a", "x, 'g' in dir()", "(5, False)\n");
	CLI(&r, "--reset", "a");
	ck_code(&r, 0);
	cli_run_release(&r);
	live_ok("a", "'x' in dir()", "False\n");
}
END_TEST

/* Run code on session in a child, writing its stdout to path. */
static pid_t live_async(const char *session, const char *code, const char *path)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct cli_run r;
		FILE *f;

		live(&r, session, code, 0);
		f = fopen(path, "w");
		if (!f || fputs(r.out, f) < 0 || fclose(f) != 0)
			_exit(1);
		_exit(0);
	}
	return pid;
}

/* The [start, end] a cell of live_async printed. */
static void span_of(const char *path, double *start, double *end)
{
	size_t n;
	char *text = cli_read_file(path, &n);

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(sscanf(text, "%lf %lf", start, end), 2);
	free(text);
}

#define TIMED "import time\nt0 = time.time()\ntime.sleep(1.5)\nn += 1\nprint(t0, time.time())"

static void two_at_once(const char *s1, const char *s2, bool overlap)
{
	char *p1 = strdup(cli_path(fx.tmp, "one")), *p2 = strdup(cli_path(fx.tmp, "two"));
	pid_t c1, c2;
	double a0, a1, b0, b1;
	int st;

	live_ok(s1, "n = 0", "");
	live_ok(s2, "n = 0", "");
	c1 = live_async(s1, TIMED, p1);
	c2 = live_async(s2, TIMED, p2);
	ck_assert_int_eq(waitpid(c1, &st, 0), c1);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the first call failed");
	ck_assert_int_eq(waitpid(c2, &st, 0), c2);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the second call failed");
	span_of(p1, &a0, &a1);
	span_of(p2, &b0, &b1);
	if (overlap)
		ck_assert_msg(a0 < b1 && b0 < a1, "the cells ran one after the other");
	else
		ck_assert_msg(a1 <= b0 || b1 <= a0, "the cells ran at once");
	live_ok(s1, "n", strcmp(s1, s2) == 0 ? "2\n" : "1\n");
	free(p1);
	free(p2);
}

START_TEST(calls_on_one_live_session_serialize)
{
	two_at_once("s", "s", false);
}
END_TEST

START_TEST(two_live_sessions_run_side_by_side)
{
	two_at_once("a", "b", true);
}
END_TEST

START_TEST(live_needs_the_server)
{
	const char *const off[] = { "DOLSOT_SERVER=off", NULL };
	const char *const env_live[] = { "DOLSOT_SERVER=off", "DOLSOT_LIVE=1", NULL };
	struct cli_run r;

	RUN_IN(&r, NULL, off, "--live", "--session", "s", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_SERVER=off");
	cli_run_release(&r);
	RUN_IN(&r, NULL, env_live, "--session", "s", "1");
	ck_code(&r, 2);
	cli_run_release(&r);
	RUN_IN(&r, NULL, off, "mcp", "--live");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_SERVER=off");
	cli_run_release(&r);
}
END_TEST

START_TEST(other_limits_start_a_new_live_process_from_the_store)
{
	struct cli_run r;

	live_ok("s", "g = (i for i in range(3))\nx = 1", "");
	CLI(&r, "--live", "--memory", "1G", "--session", "s", "x");
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	ck_err_has(&r, "g (generator)");
	cli_run_release(&r);
}
END_TEST

START_TEST(dolsot_live_1_makes_every_call_live)
{
	const char *const on[] = { "DOLSOT_LIVE=1", NULL };
	struct cli_run r;

	RUN_IN(&r, NULL, on, "--session", "s", "g = (i for i in range(3))");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, NULL, on, "--session", "s", "--json", "next(g)");
	ck_code(&r, 0);
	ck_out_has(&r, "\"value\":\"0\"");
	ck_out_has(&r, "\"held\":[\"g (live only)\"]");
	cli_run_release(&r);
}
END_TEST

START_TEST(an_exception_completes_the_cell)
{
	struct cli_run r;

	live_ok("s", "g = iter(range(5))", "");
	live(&r, "s", "next(g)\ny = 3\n1 / 0", 1);
	ck_err_has(&r, "ZeroDivisionError");
	ck_err_lacks(&r, "rolled back");
	cli_run_release(&r);
	live_ok("s", "y, next(g)", "(3, 1)\n");
}
END_TEST

/* The live process of session, as --server-status names it. */
static pid_t live_pid(const char *session)
{
	char label[64];
	long pid;

	snprintf(label, sizeof(label), "  live %s pid ", session);
	pid = status_number(label);
	ck_assert_msg(pid > 0, "no live process of %s in --server-status", session);
	return (pid_t)pid;
}

/* A field of pid's /proc/PID/smaps_rollup, in kB. */
static long rollup_kb(pid_t pid, const char *field)
{
	char path[64], *text, *p;
	long kb;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	text = cli_read_file(path, NULL);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	p = strstr(text, field);
	ck_assert_msg(p != NULL, "no %s in %s", field, path);
	kb = strtol(p + strlen(field), NULL, 10);
	free(text);
	return kb;
}

/* Issue 35, item 4: the process grew by the session's size on every call,
 * because each call's answer (which holds the saved blob) was kept. */
START_TEST(a_large_live_session_holds_one_copy_across_calls)
{
	long rss5 = 0, priv5 = 0;
	pid_t pid5 = 0;

	live_ok("s", "x = bytearray(50 << 20)\ny = b'y' * (50 << 20)", "");
	for (int call = 2; call <= 25; call++) {
		live_ok("s", "x[0] = (x[0] + 1) % 256\nlen(x) + len(y)", "104857600\n");
		if (call != 5 && call != 25)
			continue;
		pid_t pid = live_pid("s");
		long rss = rollup_kb(pid, "Rss:"),
		     priv = rollup_kb(pid, "Private_Clean:") + rollup_kb(pid, "Private_Dirty:");

		if (call == 5) {
			pid5 = pid, rss5 = rss, priv5 = priv;
			continue;
		}
		ck_assert_int_eq(pid, pid5);
		ck_assert_msg(rss - rss5 < 20L * 1024 && priv - priv5 < 20L * 1024,
		              "the live process grew from %ld to %ld kB rss (%ld to %ld kB "
		              "private) between calls 5 and 25", rss5, rss, priv5, priv);
	}
}
END_TEST

/* A live call on session whose cell leaves a thread that, half a second
 * after the call answered, takes 160 MB: the live process grows while
 * idle, with no call to come.  Returns the live process. */
static pid_t live_grows_while_idle(const char *session)
{
	live_ok(session, "import threading, time\nx = 1\n"
	        "def grow():\n    time.sleep(0.5)\n    globals()['big'] = b'b' * (160 << 20)\n"
	        "threading.Thread(target=grow, daemon=True).start()", "");
	return live_pid(session);
}

/* Wait (30 s at most) for pid to end; true when it did. */
static bool ends(pid_t pid)
{
	for (int i = 0; i < 300 && cli_pid_alive(pid); i++)
		usleep(100 * 1000);
	return !cli_pid_alive(pid);
}

/* Issue 35, item 4: DOLSOT_LIVE_MEMORY_MB was measured only when a live
 * call reported, so a live process that grew while idle (to 465 MB under
 * a 100 MB cap) kept its memory until another call came. */
START_TEST(a_live_process_past_the_memory_cap_ends_while_idle_and_the_next_call_says_so)
{
	struct cli_run r;
	pid_t pid;

	cli_test_add_env(&fx, "DOLSOT_LIVE_MEMORY_MB=64");
	pid = live_grows_while_idle("a");
	ck_assert_msg(ends(pid), "the live process %d still runs past the cap", (int)pid);
	live(&r, "a", "x", 0);
	ck_out(&r, "1\n");
	ck_err_has(&r, "dolsot: the session's live process was ended before this call: it held ");
	ck_err_has(&r, "past DOLSOT_LIVE_MEMORY_MB=64; the call started from the store\n");
	cli_run_release(&r);
	/* Said once: the call after is a live one as any. */
	live(&r, "a", "x", 0);
	ck_err_lacks(&r, "was ended");
	cli_run_release(&r);
	/* And in --json, among the warnings. */
	pid = live_grows_while_idle("b");
	ck_assert_msg(ends(pid), "the live process %d still runs past the cap", (int)pid);
	CLI(&r, "--live", "--json", "--session", "b", "x");
	ck_code(&r, 0);
	ck_out_has(&r, "\"dolsot: the session's live process was ended before this call: it held ");
	cli_run_release(&r);
}
END_TEST

/* Text the worker must encode anew (lone surrogates) was kept for the
 * process's life: a live process grew by it on every call. */
START_TEST(a_live_value_with_lone_surrogates_is_not_kept_per_call)
{
	long rss2 = 0;

	/* AddressSanitizer keeps freed memory in its quarantine (256 MB), so
	 * a sanitized process's RSS grows with what it frees. */
	if (SANITIZED) {
		printf("SKIP: %s: RSS says nothing under AddressSanitizer\n", __func__);
		return;
	}
	cli_test_add_env(&fx, "DOLSOT_MAX_OUTPUT=0");
	live_ok("s", "class R:\n    def __repr__(self):\n        return '\\udcff' * (2 << 20)\n"
	        "r = R()", "");
	for (int call = 2; call <= 12; call++) {
		struct cli_run r;
		long rss;

		live(&r, "s", "r", 0);
		ck_assert_uint_eq(r.out_len, 6 * (2 << 20) + 1);   /* \udcff each, and \n */
		cli_run_release(&r);
		rss = rollup_kb(live_pid("s"), "Rss:");
		if (call == 2)
			rss2 = rss;
		else if (call == 12)
			ck_assert_msg(rss - rss2 < 20L * 1024, "the live process grew from %ld to %ld "
			              "kB between calls 2 and 12", rss2, rss);
	}
}
END_TEST

/* The one child of pid, the snapshot a live process forks after a call's
 * answer, once it is there (5 s at most); 0 when there is none, or any
 * other child. */
static pid_t only_child(pid_t pid)
{
	pid_t kids[4];

	return cli_children_settled(pid, "dolsot-snapshot", kids, 4, 1, 5) == 1 &&
	       cli_children_named(pid, "", kids + 1, 3) == 1 ? kids[0] : 0;
}

/* Between calls a live process holds the next call's snapshot, forked
 * after the answer went: in its process group, so that whatever ends it
 * ends the snapshot; a rollback from it leaves a process that forks the
 * next one, and so on. */
START_TEST(the_next_calls_snapshot_waits_between_calls)
{
	struct cli_run r;
	pid_t pid, snap;

	live_ok("s", "L = [0] * 1000\nn = 0", "");
	pid = live_pid("s");
	snap = only_child(pid);
	ck_assert_msg(snap > 0, "the idle live process %d has no snapshot ahead", (int)pid);
	ck_assert_int_eq(getpgid(snap), getpgid(pid));
	for (int round = 0; round < 2; round++)
		times_out("s", "1", "L[0] = 1\nwhile True: pass");
	live_ok("s", "n += 1\nL[0], n", "(0, 1)\n");
	pid = live_pid("s");
	snap = only_child(pid);
	ck_assert_msg(snap > 0, "the live process %d woken from a snapshot forks none ahead",
	              (int)pid);
	CLI(&r, "--server-stop");
	cli_run_release(&r);
	ck_assert_msg(ends(pid) && ends(snap), "the live process or its snapshot outlived "
	              "the server");
}
END_TEST

/* A thread a cell left runs between calls: the state a rollback restores
 * is the one the next call found, not the one the call before left, so
 * no snapshot is forked ahead while one runs. */
START_TEST(a_thread_between_calls_is_in_the_rollback_state)
{
	char code[4096];
	const char *done = cli_path(fx.tmp, "done");

	snprintf(code, sizeof(code), "import threading, time\nv = 1\n"
	         "def later():\n    global v\n    time.sleep(0.3)\n    v = 2\n"
	         "    open(%s%s%s, 'w').close()\n"
	         "threading.Thread(target=later).start()", "'", done, "'");
	live_ok("s", code, "");
	for (int i = 0; i < 5000000 / POLL_US && !cli_exists(done); i++)
		usleep(POLL_US);
	ck_assert_msg(cli_exists(done), "the cell's thread did not run");
	times_out("s", "1", "v = 3\nwhile True: pass");
	live_ok("s", "v", "2\n");
}
END_TEST

/* What a live process shares with the snapshot it forked ahead is its
 * own (the snapshot is a copy of it): DOLSOT_LIVE_MEMORY_MB counts it, as
 * it did when the process alone held it. */
START_TEST(the_memory_cap_counts_what_the_snapshot_ahead_shares)
{
	struct cli_run r;
	pid_t pid;

	cli_test_add_env(&fx, "DOLSOT_LIVE_MEMORY_MB=64");
	live_ok("a", "x = b'b' * (100 << 20)", "");
	pid = live_pid("a");
	ck_assert_msg(ends(pid), "the live process %d holding 100 MB still runs past the cap",
	              (int)pid);
	live(&r, "a", "len(x)", 0);
	ck_out(&r, "104857600\n");
	ck_err_has(&r, "past DOLSOT_LIVE_MEMORY_MB=64; the call started from the store\n");
	cli_run_release(&r);
}
END_TEST

static Suite *live_suite(void)
{
	Suite *s = suite_create("live");
	TCase *tc = tcase_create("live");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, unsaveable_objects_survive_and_are_marked);
	tcase_add_test(tc, a_call_without_live_names_what_is_lost_and_keeps_the_rest);
	tcase_add_test(tc, the_carried_state_of_live_calls_reaches_the_store);
	tcase_add_test(tc, a_numpy_view_stays_a_view);
	tcase_add_test(tc, a_timeout_mid_mutation_rolls_back);
	tcase_add_test(tc, a_segfault_rolls_back);
	tcase_add_test(tc, a_memory_error_under_memory_rolls_back);
	tcase_add_test(tc, a_killed_client_rolls_back);
	tcase_add_test(tc, eviction_by_the_bound_falls_back_to_the_store);
	tcase_add_test(tc, the_bound_holds_across_environments_and_the_status_shows_it);
	tcase_add_test(tc, an_idle_live_session_is_evicted);
	tcase_add_test(tc, a_killed_server_loses_only_the_live_only_values);
	tcase_add_test(tc, a_cold_write_and_a_reset_end_the_live_state);
	tcase_add_test(tc, calls_on_one_live_session_serialize);
	tcase_add_test(tc, two_live_sessions_run_side_by_side);
	tcase_add_test(tc, live_needs_the_server);
	tcase_add_test(tc, an_exception_completes_the_cell);
	tcase_add_test(tc, dolsot_live_1_makes_every_call_live);
	tcase_add_test(tc, other_limits_start_a_new_live_process_from_the_store);
	tcase_add_test(tc, a_large_live_session_holds_one_copy_across_calls);
	tcase_add_test(tc, a_live_value_with_lone_surrogates_is_not_kept_per_call);
	tcase_add_test(tc, a_live_process_past_the_memory_cap_ends_while_idle_and_the_next_call_says_so);
	tcase_add_test(tc, the_next_calls_snapshot_waits_between_calls);
	tcase_add_test(tc, a_thread_between_calls_is_in_the_rollback_state);
	tcase_add_test(tc, the_memory_cap_counts_what_the_snapshot_ahead_shares);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(live_suite());
}
