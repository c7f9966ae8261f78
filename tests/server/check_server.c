/*
 * check_server.c - the warm path: the per-store server and its zygotes.
 * Each case runs the real binary against a private store.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
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

static void server_start(void)
{
	struct cli_run r;

	CLI(&r, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* The server's pid from --server-status, or 0 when none runs. */
static pid_t server_pid(void)
{
	struct cli_run r;
	int pid = 0;

	CLI(&r, "--server-status");
	if (r.code == 0)
		sscanf(r.out, "pid %d", &pid);
	cli_run_release(&r);
	return (pid_t)pid;
}

/* "calls N warm" from --server-status. */
static long warm_calls(void)
{
	struct cli_run r;
	long warm = -1;
	const char *p;

	CLI(&r, "--server-status");
	p = strstr(r.out, "calls ");
	if (p)
		sscanf(p, "calls %ld warm", &warm);
	cli_run_release(&r);
	return warm;
}

static char *call_out(const char *session, const char *code)
{
	struct cli_run r;
	char *out;

	CLI(&r, "--session", session, code);
	ck_code(&r, 0);
	out = strdup(r.out);
	cli_run_release(&r);
	return out;
}

static bool wait_gone(pid_t pid, double seconds)
{
	for (int i = 0; i < (int)(seconds * 100); i++) {
		if (!cli_pid_alive(pid))
			return true;
		usleep(10000);
	}
	return !cli_pid_alive(pid);
}

START_TEST(first_call_starts_server_and_later_calls_reuse_it)
{
	char *a, *b, *c;
	pid_t pid;

	ck_assert_int_eq(server_pid(), 0);
	free(call_out("t", "x = 1  # secret-token"));   /* cold, and starts the server */
	server_start();                  /* wait until its zygote is ready */
	pid = server_pid();
	ck_assert_int_gt(pid, 0);
	/* The server does not carry the first call's code in its command line. */
	{
		char path[64], *cmdline;
		size_t n;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		cmdline = cli_read_file(path, &n);
		ck_assert_ptr_nonnull(cmdline);
		ck_assert_str_eq(cmdline, "dolsot-server");
		for (size_t i = 0; i < n; i++)
			if (!cmdline[i])
				cmdline[i] = ' ';
		ck_assert_msg(!strstr(cmdline, "secret-token"), "cmdline: %s", cmdline);
		free(cmdline);
	}
	a = call_out("t", "import os\nos.getppid()");
	b = call_out("t", "os.getppid()");
	c = call_out("t", "x + 1");
	ck_assert_str_eq(a, b);          /* forked by the same zygote */
	ck_assert_str_eq(c, "2\n");
	ck_assert_int_eq(server_pid(), pid);
	ck_assert_int_ge(warm_calls(), 3);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(server_off_never_starts_one)
{
	struct cli_run r;

	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER=off", NULL }), "--session", "t", "1");
	ck_code(&r, 0);
	cli_run_release(&r);
	usleep(200000);
	ck_assert_int_eq(server_pid(), 0);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER=sometimes", NULL }), "--session",
	       "t", "1");
	ck_code(&r, 2);
	ck_assert(cli_has(r.err, "DOLSOT_SERVER='sometimes'"));
	cli_run_release(&r);
}
END_TEST

START_TEST(library_state_does_not_leak_between_calls)
{
	char *out;

	server_start();
	free(call_out("t", "import os, random, numpy\nos.chdir('/')\n"
	                   "os.environ['LEAK'] = '1'\nrandom.seed(7)\n"
	                   "numpy.set_printoptions(precision=2)\n__import__('colorsys')"));
	/* Another session: "t" itself carries that state on purpose (issue 7). */
	out = call_out("u", "import os, sys, random, numpy\n(os.getcwd() != '/', "
	                    "'LEAK' in os.environ, numpy.get_printoptions()['precision'], "
	                    "'colorsys' in sys.modules)");
	ck_assert_str_eq(out, "(True, False, 8, False)\n");
	free(out);
	/* Two calls never see the same random numbers unless seeded. */
	{
		char *r1 = call_out("u", "random.random(), numpy.random.rand()");
		char *r2 = call_out("u", "random.random(), numpy.random.rand()");

		ck_assert_str_ne(r1, r2);
		free(r1);
		free(r2);
	}
	ck_assert_int_ge(warm_calls(), 3);
}
END_TEST

START_TEST(edited_toolbox_is_reimported)
{
	struct cli_run r;
	char path[4300];
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	snprintf(path, sizeof(path), "%s/edtool.py", fx.tmp);
	cli_write_file(path, "VALUE = 1\n");
	RUN_IN(&r, fx.tmp, NULL, "--server-start", "--toolbox", "edtool:et");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, NULL, "--toolbox", "edtool:et", "--session", "t", "et.VALUE");
	ck_out(&r, "1\n");
	cli_run_release(&r);
	cli_write_file(path, "VALUE = 22\n");
	later[1].tv_sec = time(NULL) + 5;   /* a different mtime even within one tick */
	utimensat(AT_FDCWD, path, later, 0);
	RUN_IN(&r, fx.tmp, NULL, "--toolbox", "edtool:et", "--session", "t", "et.VALUE");
	ck_out(&r, "22\n");
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, NULL, "--server-start", "--toolbox", "edtool:et");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, NULL, "--toolbox", "edtool:et", "--session", "t", "et.VALUE");
	ck_out(&r, "22\n");
	cli_run_release(&r);
}
END_TEST

/* A zygote with toolboxes has the gate's code loaded before any call (the
 * gate is off here, so the call does not load it itself); one without
 * toolboxes does not. */
START_TEST(zygote_with_toolboxes_preloads_the_gate)
{
	static const char *const gate_off[] = { "DOLSOT_TYPECHECK=0", NULL };
	static const char probe[] = "import sys\n"
		"('_dolsot_gate' in sys.modules, '_dolsot_hints' in sys.modules)";
	struct cli_run r;
	char path[4300];

	snprintf(path, sizeof(path), "%s/gtool.py", fx.tmp);
	cli_write_file(path, "def add(a: int, b: int) -> int:\n    return a + b\n");
	RUN_IN(&r, fx.tmp, gate_off, "--server-start", "--toolbox", "gtool:gt");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, gate_off, "--toolbox", "gtool:gt", "--session", "t", probe);
	ck_out(&r, "(True, True)\n");
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, gate_off, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, gate_off, "--session", "u", probe);
	ck_out(&r, "(False, False)\n");
	cli_run_release(&r);
	ck_assert_int_ge(warm_calls(), 2);
}
END_TEST

/* A module that reads the environment when imported sees the caller's. */
START_TEST(import_time_environment_is_the_callers)
{
	struct cli_run r;
	char path[4300];

	snprintf(path, sizeof(path), "%s/envtool.py", fx.tmp);
	cli_write_file(path, "import os, time\nFOO = os.environ.get('FOO')\nTZ = time.tzname[0]\n");
	for (int round = 0; round < 2; round++) {
		RUN_IN(&r, fx.tmp, ((const char *[]){ "FOO=first", "TZ=UTC", NULL }), "--server-start",
		       "--toolbox", "envtool:et");
		ck_code(&r, 0);
		cli_run_release(&r);
		RUN_IN(&r, fx.tmp, ((const char *[]){ "FOO=first", "TZ=UTC", NULL }), "--toolbox",
		       "envtool:et", "--session", "t", "et.FOO, et.TZ");
		ck_out(&r, "('first', 'UTC')\n");
		cli_run_release(&r);
		RUN_IN(&r, fx.tmp, ((const char *[]){ "FOO=second", "TZ=JST-9", NULL }), "--toolbox",
		       "envtool:et", "--session", "t", "et.FOO, et.TZ");
		ck_out(&r, "('second', 'JST')\n");
		cli_run_release(&r);
	}
}
END_TEST

/* The fingerprints of --server-status's "environment" lines, in order,
 * into fp (at most max, 13 bytes each); their count. */
static size_t env_fingerprints(char (*fp)[13], size_t max)
{
	struct cli_run r;
	size_t n = 0, vars;
	const char *p;

	CLI(&r, "--server-status");
	ck_code(&r, 0);
	for (p = r.out; n < max && (p = strstr(p, "\n  environment ")) != NULL; p++) {
		if (!isdigit((unsigned char)p[strlen("\n  environment ")]))
			continue;   /* the line that says how it differs */
		ck_assert_msg(sscanf(p, "\n  environment %zu variables, fingerprint %12[0-9a-f]",
		                     &vars, fp[n]) == 2 && strlen(fp[n]) == 12 && vars > 0,
		              "%s", r.out);
		n++;
	}
	cli_run_release(&r);
	return n;
}

/* Two zygotes whose directory, PYTHONPATH, venv and toolboxes agree tell
 * their environments apart by the fingerprint (issue 42); the same
 * environment again is the same zygote, with the same fingerprint. */
START_TEST(status_tells_environments_apart)
{
	const char *one[] = { "FOO=one", NULL }, *two[] = { "FOO=two", NULL };
	char fp[3][13], again[4][13];
	const char *diff;
	struct cli_run r;

	RUN_IN(&r, fx.tmp, one, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_uint_eq(env_fingerprints(fp, 1), 1);
	RUN_IN(&r, fx.tmp, two, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_uint_eq(env_fingerprints(fp + 1, 2), 2);
	ck_assert_msg(strcmp(fp[1], fp[2]) != 0, "one fingerprint for two environments: %s", fp[1]);
	ck_assert_msg(strcmp(fp[0], fp[1]) == 0 || strcmp(fp[0], fp[2]) == 0,
	              "FOO=one's fingerprint %s changed: %s %s", fp[0], fp[1], fp[2]);
	/* and the later one names the variable they differ in, not its value */
	CLI(&r, "--server-status");
	diff = strstr(r.out, "  environment differs from zygote ");
	ck_assert_msg(diff && strncmp(strchr(diff, '\''), "'s in FOO\n", 10) == 0 &&
	              !strstr(strchr(diff, '\n'), "environment differs"), "%s", r.out);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, one, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_uint_eq(env_fingerprints(again, 4), 2);
	ck_assert_str_eq(again[0], fp[1]);
	ck_assert_str_eq(again[1], fp[2]);
}
END_TEST

/* A toolbox that cannot be imported: calls run cold (and say why), and
 * --server-start reports the reason instead of waiting. */
START_TEST(broken_toolbox_stays_cold_and_says_why)
{
	struct cli_run r;
	char path[4300];

	snprintf(path, sizeof(path), "%s/broken.py", fx.tmp);
	cli_write_file(path, "raise RuntimeError('broken on purpose')\n");
	RUN_IN(&r, fx.tmp, NULL, "--server-start", "--toolbox", "broken:b");
	ck_code(&r, 1);
	ck_assert_msg(cli_has(r.err, "broken on purpose"), "%s", r.err);
	ck_assert_msg(r.seconds < 10, "took %.1fs", r.seconds);
	cli_run_release(&r);
	RUN_IN(&r, fx.tmp, NULL, "--toolbox", "broken:b", "--session", "t", "1");
	ck_code(&r, 1);
	ck_assert(cli_has(r.err, "toolbox 'broken' (alias b) cannot be imported: "
	                         "RuntimeError: broken on purpose"));
	cli_run_release(&r);
	CLI(&r, "--server-status");
	ck_assert_msg(cli_has(r.out, " failed "), "%s", r.out);
	cli_run_release(&r);
}
END_TEST

/* A long cell outlives the server's idle time and still completes. */
START_TEST(idle_exit_lets_running_cells_finish)
{
	struct cli_run r;

	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER_IDLE=1", NULL }), "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER_IDLE=1", NULL }), "--session", "t",
	       "import time\ntime.sleep(3)\n'finished'");
	ck_code(&r, 0);
	ck_out(&r, "'finished'\n");
	cli_run_release(&r);
}
END_TEST

/* Regression: a toolbox that starts a thread when imported (as numpy's
 * OpenBLAS does) could take the zygote's SIGCHLD, so a finished call was
 * only noticed at its deadline. */
START_TEST(toolbox_threads_do_not_delay_calls)
{
	struct cli_run r;
	char path[4300];

	snprintf(path, sizeof(path), "%s/threadtool.py", fx.tmp);
	cli_write_file(path, "import threading, time\n"
	                     "for _ in range(4):\n"
	                     "    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
	                     "def one():\n    return 1\n");
	RUN_IN(&r, fx.tmp, NULL, "--server-start", "--toolbox", "threadtool:tt");
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 12; i++) {
		RUN_IN(&r, fx.tmp, NULL, "--toolbox", "threadtool:tt", "--session", "t",
		       "--timeout", "8", "tt.one()");
		ck_out(&r, "1\n");
		ck_assert_msg(r.seconds < 6, "call %d waited for its deadline (%.1fs)", i, r.seconds);
		cli_run_release(&r);
	}
	ck_assert_int_ge(warm_calls(), 12);
}
END_TEST

START_TEST(timed_out_warm_cell_keeps_state)
{
	struct cli_run r;
	long before;

	server_start();
	free(call_out("t", "x = 1"));
	before = warm_calls();
	CLI(&r, "--session", "t", "--timeout", "1", "x = 2\nimport time\ntime.sleep(30)");
	ck_code(&r, 124);
	ck_assert_msg(r.seconds < 5, "took %.2fs", r.seconds);
	cli_run_release(&r);
	ck_assert_int_gt(warm_calls(), before);
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(cold_writes_and_resets_are_seen)
{
	struct cli_run r;
	char *out;

	server_start();
	free(call_out("t", "x = 1"));
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER=off", NULL }), "--session", "t",
	       "x = 5");
	ck_code(&r, 0);
	cli_run_release(&r);
	out = call_out("t", "x");
	ck_assert_str_eq(out, "5\n");
	free(out);
	CLI(&r, "--reset", "t");
	cli_run_release(&r);
	out = call_out("t", "'x' in globals()");
	ck_assert_str_eq(out, "False\n");
	free(out);
}
END_TEST

/* Run a cell in the background that records its pid, then sleeps. */
static pid_t start_sleeper(const char *pidfile, const char *session)
{
	char code[8800];
	pid_t kid;

	snprintf(code, sizeof(code),
	         "x = 2\nimport os, time\nopen('%s', 'w').write(str(os.getpid()))\n"
	         "time.sleep(60)", pidfile);
	kid = fork();
	if (kid == 0) {
		struct cli_run r;

		CLI(&r, "--session", session, "--timeout", "90", code);
		_exit(r.code);
	}
	return kid;
}

static pid_t wait_pidfile(const char *pidfile)
{
	for (int i = 0; i < 1000; i++) {
		char *text = cli_read_file(pidfile, NULL);

		if (text && *text) {
			pid_t pid = (pid_t)atoi(text);

			free(text);
			return pid;
		}
		free(text);
		usleep(10000);
	}
	return 0;
}

START_TEST(server_killed_mid_cell_loses_nothing)
{
	char pidfile[4300], *out;
	pid_t kid, cell, server;
	int st;

	server_start();
	free(call_out("t", "x = 1"));
	server = server_pid();
	snprintf(pidfile, sizeof(pidfile), "%s/cell.pid", fx.tmp);
	kid = start_sleeper(pidfile, "t");
	cell = wait_pidfile(pidfile);
	ck_assert_int_gt(cell, 0);
	ck_assert_int_eq(kill(server, SIGKILL), 0);
	/* The call finishes one way or the other; the session is old or new. */
	kill(cell, SIGKILL);
	waitpid(kid, &st, 0);
	out = call_out("t", "x");
	ck_assert_msg(strcmp(out, "1\n") == 0 || strcmp(out, "2\n") == 0, "x = %s", out);
	free(out);
	out = call_out("t", "x = 3\nx");
	ck_assert_str_eq(out, "3\n");
	free(out);
}
END_TEST

START_TEST(killed_client_kills_its_cell)
{
	char pidfile[4300], *out;
	pid_t kid, cell;

	server_start();
	free(call_out("t", "x = 1"));
	snprintf(pidfile, sizeof(pidfile), "%s/cell.pid", fx.tmp);
	kid = start_sleeper(pidfile, "t");
	cell = wait_pidfile(pidfile);
	ck_assert_int_gt(cell, 0);
	ck_assert(cli_pid_alive(cell));
	/* The agent host gives up on the call: kill the dolsot client itself
	 * (the child of our helper process), then the helper. */
	{
		char path[64];
		char *kids;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)kid, (int)kid);
		kids = cli_read_file(path, NULL);
		ck_assert_ptr_nonnull(kids);
		ck_assert_int_gt(atoi(kids), 0);
		kill((pid_t)atoi(kids), SIGKILL);
		free(kids);
	}
	waitpid(kid, NULL, 0);
	ck_assert_msg(wait_gone(cell, 10), "cell %d still runs", (int)cell);
	out = call_out("t", "x");
	ck_assert_str_eq(out, "1\n");
	free(out);
}
END_TEST

START_TEST(idle_server_exits)
{
	struct cli_run r;
	pid_t pid;

	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER_IDLE=1", NULL }), "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
	pid = server_pid();
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(wait_gone(pid, 6), "server %d outlived its idle time", (int)pid);
}
END_TEST

START_TEST(removed_store_stops_server)
{
	pid_t pid;
	char moved[4300];

	server_start();
	pid = server_pid();
	ck_assert_int_gt(pid, 0);
	snprintf(moved, sizeof(moved), "%s/gone", fx.tmp);
	cli_rmtree(fx.store);
	ck_assert_msg(wait_gone(pid, 6), "server %d outlived its directory", (int)pid);
	(void)moved;
}
END_TEST

/* The zygote's pid, from --server-status (0: none). */
static pid_t zygote_pid(void)
{
	struct cli_run r;
	const char *p;
	pid_t pid = 0;

	CLI(&r, "--server-status");
	p = strstr(r.out, "zygote ");
	if (p)
		pid = (pid_t)atoi(p + 7);
	cli_run_release(&r);
	return pid;
}

/* Between calls the zygote keeps one worker forked ahead (the spare); each
 * call runs in a process of its own all the same. */
START_TEST(a_spare_waits_between_calls)
{
	pid_t spare[4], zygote;
	char *a, *b;

	server_start();
	zygote = zygote_pid();
	ck_assert_int_gt(zygote, 0);
	a = call_out("t", "import os\nos.getpid()");
	b = call_out("t", "os.getpid()");
	ck_assert_str_ne(a, b);
	/* The zygote forks the next spare right after handing one a call. */
	ck_assert_uint_eq(cli_children_settled(zygote, "dolsot-spare", spare, 4, 1, 2), 1);
	ck_assert_int_ne(spare[0], atoi(a));
	ck_assert_int_ne(spare[0], atoi(b));
	/* --server-status shows it, under its zygote. */
	{
		struct cli_run r;
		char line[64];

		CLI(&r, "--server-status");
		snprintf(line, sizeof(line), "\n  spare %d: ", (int)spare[0]);
		ck_assert_msg(cli_has(r.out, line), "no '%s' in:\n%s", line + 1, r.out);
		cli_run_release(&r);
	}
	free(a);
	free(b);
}
END_TEST

/* The zygote whose preload names module (from --server-status), or 0. */
static pid_t zygote_preloading(const char *module)
{
	struct cli_run r;
	const char *p;
	pid_t pid = 0;

	CLI(&r, "--server-status");
	for (p = strstr(r.out, "\nzygote "); p && !pid; p = strstr(p + 1, "\nzygote ")) {
		const char *next = strstr(p + 1, "\nzygote "), *pre = strstr(p, "\n  preload ");

		if (pre && (!next || pre < next) && strstr(pre, module) &&
		    (!next || strstr(pre, module) < next))
			pid = (pid_t)atoi(p + 8);
	}
	cli_run_release(&r);
	return pid;
}

/* A spare of a zygote holding 32 MiB or more (here one that imported
 * pandas) has a holder of its memory (base/holder.h), which the zygote
 * kills once the call that spare ran has ended: between calls there is
 * one, the next spare's, however many calls ran; a call's own is gone,
 * and so is the last one when the server stops.  (A plain zygote's
 * spares have none in a plain build; under ASan its shadow memory makes
 * it large too.) */
START_TEST(a_holder_per_large_spare_and_none_left_behind)
{
	pid_t holder[4], first, zygote;
	struct cli_run r;

	server_start();
	free(call_out("p", "0"));
	zygote = zygote_pid();
	if (cli_children_settled(zygote, "dolsot-holder", holder, 4, 1, 2) == 1 &&
	    cli_children_named(zygote, "dolsot-spare", &first, 1))
		ck_assert_msg(cli_rss_kb(first) >= 32 * 1024, "a holder for a spare of %ld kB",
		              cli_rss_kb(first));
	free(call_out("h", "import numpy, pandas"));
	/* Its calls prepare a zygote that imports them: wait until it is up. */
	for (int i = 0; i < 500 && (zygote = zygote_preloading("pandas")) <= 0; i++)
		free(call_out("h", "0"));
	ck_assert_int_gt(zygote, 0);
	free(call_out("h", "0"));   /* on that zygote */
	ck_assert_uint_eq(cli_children_settled(zygote, "dolsot-holder", holder, 4, 1, 2), 1);
	first = holder[0];
	for (int i = 0; i < 5; i++)
		free(call_out("h", "0"));
	ck_assert(wait_gone(first, 5));   /* its call ended */
	ck_assert_uint_eq(cli_children_settled(zygote, "dolsot-holder", holder, 4, 1, 2), 1);
	CLI(&r, "--server-stop");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert(wait_gone(holder[0], 5));
}
END_TEST

START_TEST(stop_leaves_no_process)
{
	struct cli_run r;
	pid_t server, zygote = 0, spare = 0;

	server_start();
	server = server_pid();
	zygote = zygote_pid();
	ck_assert_int_gt(zygote, 0);
	cli_children_settled(zygote, "dolsot-spare", &spare, 1, 1, 2);
	ck_assert_int_gt(spare, 0);
	CLI(&r, "--server-stop");
	ck_code(&r, 0);
	ck_assert(cli_has(r.out, "stopped server"));
	cli_run_release(&r);
	ck_assert(!cli_pid_alive(server));
	ck_assert(!cli_pid_alive(zygote));
	ck_assert(wait_gone(spare, 5));
	ck_assert_int_eq(server_pid(), 0);
}
END_TEST

START_TEST(parallel_sessions)
{
	pid_t kids[8];

	server_start();
	for (int i = 0; i < 8; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			char sid[16];
			int bad = 0;

			snprintf(sid, sizeof(sid), "s%d", i);
			for (int k = 0; k < 4; k++) {
				struct cli_run r;

				CLI(&r, "--session", sid, k == 0 ? "n = 1" : "n += 1");
				bad |= r.code != 0;
				cli_run_release(&r);
			}
			_exit(bad);
		}
	}
	for (int i = 0; i < 8; i++) {
		int st;

		waitpid(kids[i], &st, 0);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int i = 0; i < 8; i++) {
		char sid[16], *out;

		snprintf(sid, sizeof(sid), "s%d", i);
		out = call_out(sid, "n");
		ck_assert_str_eq(out, "4\n");
		free(out);
	}
	ck_assert_int_ge(warm_calls(), 32);
}
END_TEST

/* Connect to the server's socket as another uid: it hangs up at once. */
START_TEST(other_uid_is_refused)
{
	struct passwd *pw = getpwnam("nobody");
	char sock[4400];
	pid_t kid;
	int st;

	if (geteuid() != 0 || !pw) {
		fprintf(stderr, "SKIP other_uid_is_refused: needs root and user nobody\n");
		return;
	}
	server_start();
	snprintf(sock, sizeof(sock), "%s/.server.sock", fx.store);
	/* Open the way on purpose, so only the server's own check stands. */
	ck_assert_int_eq(chmod(fx.tmp, 0711), 0);
	ck_assert_int_eq(chmod(fx.store, 0711), 0);
	ck_assert_int_eq(chmod(sock, 0777), 0);
	kid = fork();
	if (kid == 0) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		char buf[64];
		int fd;
		ssize_t got;

		if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
			_exit(10);
		fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
			_exit(11);
		/* The server hangs up without a word. */
		got = recv(fd, buf, sizeof(buf), 0);
		_exit(got == 0 ? 0 : 12);
	}
	waitpid(kid, &st, 0);
	chmod(fx.store, 0700);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", WEXITSTATUS(st));
}
END_TEST

/* A broken program squatting on the socket: it answers each connection
 * with junk (or with nothing), then hangs up. */
static pid_t start_squatter(bool junk)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	pid_t kid;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/.server.sock", fx.store);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	kid = fork();
	if (kid == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c < 0)
				_exit(0);
			if (junk && send(c, "not a dolsot message at all", 27, MSG_NOSIGNAL) < 0)
				_exit(1);
			close(c);
		}
	}
	close(fd);
	return kid;
}

START_TEST(garbage_from_the_server_falls_back_to_cold)
{
	struct cli_run r;

	for (int junk = 0; junk < 2; junk++) {
		pid_t squatter;

		RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SERVER=off", NULL }), "--session", "t",
		       "x = 1");
		ck_code(&r, 0);
		cli_run_release(&r);
		squatter = start_squatter(junk);
		CLI(&r, "--session", "t", "x + 1");
		ck_code(&r, 0);
		ck_out(&r, "2\n");
		ck_assert_str_eq(r.err, "session now holds: x\n");
		cli_run_release(&r);
		kill(squatter, SIGKILL);
		waitpid(squatter, NULL, 0);
		cli_rmtree(fx.store);
	}
}
END_TEST

static const char *const memory_env[] = { "DOLSOT_STORE=memory", NULL };

START_TEST(memory_store_keeps_sessions_off_disk)
{
	struct cli_run r;
	char path[4300];

	RUN_IN(&r, NULL, memory_env, "--session", "t", "x = 41");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, NULL, memory_env, "--session", "t", "x + 1");
	ck_out(&r, "42\n");
	cli_run_release(&r);
	snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
	ck_assert_int_ne(access(path, F_OK), 0);
	RUN_IN(&r, NULL, memory_env, "--list-sessions");
	ck_assert(strncmp(r.out, "t\t", 2) == 0);
	cli_run_release(&r);
	/* A file store of the same directory knows nothing of it. */
	CLI(&r, "--session", "t", "'x' in globals()");
	ck_out(&r, "False\n");
	cli_run_release(&r);
	/* Sessions live as long as the server; the next one says t is gone
	 * (issue 21) until it is reset. */
	CLI(&r, "--server-stop");
	cli_run_release(&r);
	RUN_IN(&r, NULL, memory_env, "--session", "t", "'x' in globals()");
	ck_code(&r, 1);
	ck_err_has(&r, "dolsot: session 't' is gone: the memory store was restarted at ");
	cli_run_release(&r);
	RUN_IN(&r, NULL, memory_env, "--reset", "t");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_IN(&r, NULL, memory_env, "--session", "t", "'x' in globals()");
	ck_out(&r, "False\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(memory_store_carries_a_big_session)
{
	struct cli_run r;

	RUN_IN(&r, NULL, memory_env, "--session", "big", "import hashlib, os\n"
	       "blob = os.urandom(20_000_000)\ndigest = hashlib.sha256(blob).hexdigest()");
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 3; i++) {
		RUN_IN(&r, NULL, memory_env, "--session", "big",
		       "len(blob), hashlib.sha256(blob).hexdigest() == digest");
		ck_code(&r, 0);
		ck_out(&r, "(20000000, True)\n");
		cli_run_release(&r);
	}
	/* Under --max-file-size too (the save goes through a memfd either way). */
	RUN_IN(&r, NULL, memory_env, "--max-file-size", "1M", "--session", "big",
	       "len(blob)");
	ck_code(&r, 0);
	ck_out(&r, "20000000\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(memory_store_serializes_a_session)
{
	pid_t kids[12];
	struct cli_run r;

	RUN_IN(&r, NULL, memory_env, "--session", "t", "n = 0");
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 12; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			RUN_IN(&r, NULL, memory_env, "--session", "t", "--timeout", "60", "n += 1");
			_exit(r.code);
		}
	}
	for (int i = 0; i < 12; i++) {
		int st;

		waitpid(kids[i], &st, 0);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	RUN_IN(&r, NULL, memory_env, "--session", "t", "n");
	ck_out(&r, "12\n");
	cli_run_release(&r);
	RUN_IN(&r, NULL, memory_env, "--reset", "all");
	ck_out(&r, "reset all: removed 1 session(s)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(memory_store_needs_the_server)
{
	struct cli_run r;

	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_STORE=memory", "DOLSOT_SERVER=off", NULL }),
	       "--session", "t", "1");
	ck_code(&r, 2);
	ck_assert(cli_has(r.err, "DOLSOT_SERVER=off"));
	cli_run_release(&r);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_STORE=disk", NULL }), "--session", "t", "1");
	ck_code(&r, 2);
	ck_assert(cli_has(r.err, "DOLSOT_STORE='disk'"));
	cli_run_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("server");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, first_call_starts_server_and_later_calls_reuse_it);
	tcase_add_test(tc, server_off_never_starts_one);
	tcase_add_test(tc, library_state_does_not_leak_between_calls);
	tcase_add_test(tc, edited_toolbox_is_reimported);
	tcase_add_test(tc, zygote_with_toolboxes_preloads_the_gate);
	tcase_add_test(tc, import_time_environment_is_the_callers);
	tcase_add_test(tc, status_tells_environments_apart);
	tcase_add_test(tc, broken_toolbox_stays_cold_and_says_why);
	tcase_add_test(tc, idle_exit_lets_running_cells_finish);
	tcase_add_test(tc, toolbox_threads_do_not_delay_calls);
	tcase_add_test(tc, timed_out_warm_cell_keeps_state);
	tcase_add_test(tc, cold_writes_and_resets_are_seen);
	tcase_add_test(tc, server_killed_mid_cell_loses_nothing);
	tcase_add_test(tc, killed_client_kills_its_cell);
	tcase_add_test(tc, idle_server_exits);
	tcase_add_test(tc, removed_store_stops_server);
	tcase_add_test(tc, a_spare_waits_between_calls);
	tcase_add_test(tc, a_holder_per_large_spare_and_none_left_behind);
	tcase_add_test(tc, stop_leaves_no_process);
	tcase_add_test(tc, parallel_sessions);
	tcase_add_test(tc, other_uid_is_refused);
	tcase_add_test(tc, garbage_from_the_server_falls_back_to_cold);
	tcase_add_test(tc, memory_store_keeps_sessions_off_disk);
	tcase_add_test(tc, memory_store_carries_a_big_session);
	tcase_add_test(tc, memory_store_serializes_a_session);
	tcase_add_test(tc, memory_store_needs_the_server);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
