/*
 * check_cli.c - the dolsot command, end to end: each case runs the built
 * binary as a subprocess and checks stdout, stderr, the exit code and the
 * files left on disk.  One case per row of the contract.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "redis_helper.h"

static struct cli_test fx;

/*
 * The store-related cases (persistence, --list-sessions, --reset, TTL,
 * locks, a missing session) run once per store: _i is its index here.
 * Redis is a redis-server of the case's own (redis_helper.h), the helper
 * store examples/dolsot-store-dir over a directory of the case's.
 */
enum { ON_FILE, ON_REDIS, ON_CMD, N_STORES };
static struct redis_test rd = { .pid = -1 };
static char store_env[9000], helper_dir[4400];

/* Put this case's sessions in store k (the file store: as it is). */
static void on_store(int k)
{
	char cwd[4096];

	snprintf(helper_dir, sizeof(helper_dir), "%s/helper-store", fx.tmp);
	if (k == ON_REDIS) {
		redis_test_start_in(&rd, fx.tmp, NULL, NULL);
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=%s", rd.url);
	} else if (k == ON_CMD) {
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s/examples/"
		         "dolsot-store-dir %s", getcwd(cwd, sizeof(cwd)), helper_dir);
	} else {
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=file");
	}
	cli_test_add_env(&fx, store_env);
}

/* A Redis command's reply on the case's server, as text. */
static const char *rd_query(const char *fmt, const char *arg)
{
	static char buf[256];

	return redis_test_query(&rd, buf, sizeof(buf), NULL, fmt, arg);
}

/* A test without a server started for it (one may still start on demand). */
static void setup_plain(void)
{
	cli_test_begin(&fx, cli_usual_env);
}

/* In the warm run of the suite (DOLSOT_TEST_WARM), a server is up first. */
static void setup(void)
{
	char err[4096];

	setup_plain();
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
	redis_test_stop(&rd);
}

/* Run with extra environment entries on top of the test's own. */
#define RUN_ENV(r, extra, ...) cli_test_run(&fx, (r), NULL, (extra), \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })

static bool store_exists(void)
{
	struct stat st;

	return lstat(fx.store, &st) == 0;
}

/* ---- running cells ---- */

START_TEST(value_is_repr_of_last_expression)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "x = 'abc'\nx");
	ck_code(&r, 0);
	ck_out(&r, "'abc'\n");
	ck_assert_str_eq(r.err, "session now holds: x\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(none_value_prints_nothing)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "None");
	ck_code(&r, 0);
	ck_out(&r, "");
	ck_assert_str_eq(r.err, "session now holds: (nothing)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(stdout_then_value)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "print('a', end='')\n1 + 1");
	ck_code(&r, 0);
	ck_out(&r, "a\n2\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(state_persists_across_calls)
{
	struct cli_run r;

	on_store(_i);
	ok_call("t", "import math\nx = 40\n"
	             "def f(a):\n    return a + x\n"
	             "class K:\n    def m(self):\n        return f(1)\n"
	             "sq = lambda v: v * v\nk = K()");
	ok_call("t", "x = 41");   /* functions see later rebinding of globals */
	CLI(&r, "--session", "t", "(f(1), k.m(), sq(3), isinstance(k, K), math.floor(2.5))");
	ck_code(&r, 0);
	ck_out(&r, "(42, 42, 9, True, 2)\n");
	ck_assert_str_eq(r.err, "session now holds: K, f, k, math, sq, x\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(shared_references_survive)
{
	struct cli_run r;

	ok_call("t", "a = [1]\nb = a");
	CLI(&r, "--session", "t", "b.append(2)\n(a is b, a)");
	ck_out(&r, "(True, [1, 2])\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(code_from_stdin)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "2 ** 10\n" },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 0);
	ck_out(&r, "1024\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(fd_level_capture_keeps_order)
{
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import os, sys\nprint('one')\nos.system('echo two; echo e1 >&2')\n"
	    "sys.stderr.write('e2\\n')\nprint('three')");
	ck_code(&r, 0);
	ck_out(&r, "one\ntwo\nthree\n");
	ck_assert_str_eq(r.err, "e1\ne2\nsession now holds: os, sys\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(failed_cell_keeps_earlier_assignments)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "a = 1\nb = 1 / 0\nc = 3");
	ck_code(&r, 1);
	ck_out(&r, "");
	ck_assert_str_eq(r.err, "ZeroDivisionError: division by zero (line 2)\n"
	                        "session now holds: a\n");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "a");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(syntax_error_names_line)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "x = 1\ny = (");
	ck_code(&r, 1);
	ck_err_has(&r, "SyntaxError: ");
	ck_err_has(&r, "(line 2)");
	cli_run_release(&r);
}
END_TEST

START_TEST(unicode_streams_are_utf8)
{
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import sys\nprint('caf\u00e9 \u2603')\nsys.stderr.write('\u00df\\n')\n'\u00fc'");
	ck_code(&r, 0);
	ck_out(&r, "caf\xc3\xa9 \xe2\x98\x83\n'\xc3\xbc'\n");
	ck_err_has(&r, "\xc3\x9f\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(extension_modules_load)
{
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import numpy, _ctypes, sqlite3, ssl, json\nint(numpy.arange(5).sum())");
	ck_code(&r, 0);
	ck_out(&r, "10\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(binary_has_no_libpython_dependency)
{
	char cmd[4200], line[512];
	FILE *p;
	bool seen_libc = false;

	snprintf(cmd, sizeof(cmd), "ldd '%s'", cli_bin());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		ck_assert_msg(!strstr(line, "libpython"), "linked: %s", line);
		seen_libc |= strstr(line, "libc.so") != NULL;
	}
	pclose(p);
	ck_assert(seen_libc);
}
END_TEST

START_TEST(top_level_await_runs)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "import asyncio\nawait asyncio.sleep(0)\n7");
	ck_code(&r, 0);
	ck_out(&r, "7\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(sys_executable_is_a_real_python)
{
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import subprocess, sys\n"
	    "print(subprocess.run([sys.executable, '-c', 'print(6*7)'], "
	    "capture_output=True, text=True).stdout.strip())");
	ck_code(&r, 0);
	ck_out(&r, "42\n");
	cli_run_release(&r);
}
END_TEST

/* ---- values that cannot be pickled ---- */

START_TEST(unpicklable_values_are_dropped_by_name)
{
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import socket\ns = socket.socket()\ng = (i for i in range(3))\nkeep = 5");
	ck_code(&r, 0);
	ck_err_has(&r, "session now holds: keep, socket\n");
	ck_err_has(&r, "warning: dropped unpicklable names (gone next call): "
	               "g (TypeError: cannot pickle 'generator' object), "
	               "s (TypeError: cannot pickle 'socket' object)\n");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "keep, 'g' in globals(), 's' in globals()");
	ck_out(&r, "(5, False, False)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(dill_carries_what_pickle_cannot)
{
	struct cli_run r;

	ok_call("t", "import threading\nlock = threading.Lock()\n"
	             "nested = {'fn': lambda v: v + 1}");
	CLI(&r, "--session", "t", "type(lock).__name__, nested['fn'](1)");
	ck_code(&r, 0);
	ck_out(&r, "('lock', 2)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(large_value_survives)
{
	struct cli_run r;

	ok_call("t", "import hashlib, os\nblob = os.urandom(5 * 1024 * 1024)\n"
	             "digest = hashlib.sha256(blob).hexdigest()");
	CLI(&r, "--session", "t", "len(blob), hashlib.sha256(blob).hexdigest() == digest");
	ck_code(&r, 0);
	ck_out(&r, "(5242880, True)\n");
	cli_run_release(&r);
}
END_TEST

/* ---- the session's files: read and written by the worker ---- */

/* The bytes of the session file of id (malloc'd), *len its size. */
static char *session_file(const char *id, size_t *len)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s.pkl", fx.store, id);
	return cli_read_file(path, len);
}

/* Saves in progress (".ID.XXXXXX.tmp") left in the store. */
static int temp_files(void)
{
	DIR *d = opendir(fx.store);
	const struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] == '.' && strlen(de->d_name) > 4 &&
		     strcmp(de->d_name + strlen(de->d_name) - 4, ".tmp") == 0;
	closedir(d);
	return n;
}

/* The largest unit the store keeps (objects/HH/REST), in bytes. */
static off_t largest_unit(void)
{
	char path[4400];
	DIR *top, *sub;
	const struct dirent *de, *ue;
	struct stat st;
	off_t most = 0;

	snprintf(path, sizeof(path), "%s/objects", fx.store);
	top = opendir(path);
	ck_assert_ptr_nonnull(top);
	while ((de = readdir(top))) {
		if (strlen(de->d_name) != 2)
			continue;
		snprintf(path, sizeof(path), "%s/objects/%s", fx.store, de->d_name);
		sub = opendir(path);
		ck_assert_ptr_nonnull(sub);
		while ((ue = readdir(sub)))
			if (fstatat(dirfd(sub), ue->d_name, &st, 0) == 0 && S_ISREG(st.st_mode) &&
			    st.st_size > most)
				most = st.st_size;
		closedir(sub);
	}
	closedir(top);
	return most;
}

static void ck_session_file(const char *id, const char *want, size_t want_len)
{
	size_t len;
	char *got = session_file(id, &len);

	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, want_len);
	ck_assert_msg(memcmp(got, want, len) == 0, "session %s changed", id);
	free(got);
}

static void ck_session_values(const char *id, const char *want, size_t want_len)
{
	size_t len;
	char *got = session_file(id, &len);

	ck_assert_ptr_nonnull(got);
	ck_assert_msg(cli_same_session_values(got, len, want, want_len), "session %s changed", id);
	free(got);
}

START_TEST(big_session_survives_calls_byte_for_byte)
{
	struct cli_run r;
	size_t len;
	char *before;

	ok_call("big", "import hashlib, os\nblob = os.urandom(20_000_000)\n"
	               "nums = list(range(200_000))\n"
	               "digest = hashlib.sha256(blob).hexdigest()");
	before = session_file("big", &len);
	/* The head names the values; the 20 MB are units of their own, parts
	 * of 4 MiB (the last holding the rest, under 8 MiB). */
	ck_assert_uint_lt(len, 4096);
	ck_assert_int_ge(largest_unit(), 4 << 20);
	ck_assert_int_lt(largest_unit(), 8 << 20);
	for (int i = 0; i < 3; i++) {
		CLI(&r, "--session", "big", "len(blob) + len(nums), "
		    "hashlib.sha256(blob).hexdigest() == digest");
		ck_code(&r, 0);
		ck_out(&r, "(20200000, True)\n");
		cli_run_release(&r);
		ck_session_values("big", before, len);
	}
	ck_assert_int_eq(temp_files(), 0);
	free(before);
}
END_TEST

/* A call that ends without saving keeps the old file and drops its own. */
static void ck_unsaved(const char *code, const char *timeout, int want_code, bool bytes)
{
	struct cli_run r;
	size_t len;
	char *before;

	ok_call("t", "blob = bytes(10_000_000)\nn = 1");
	before = session_file("t", &len);
	CLI(&r, "--session", "t", "--timeout", timeout, code);
	ck_code(&r, want_code);
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	/* Its values; its bytes too unless it keeps a history, whose record
	 * then names the cell rolled back (check_history.c). */
	if (bytes)
		ck_session_file("t", before, len);
	else
		ck_session_values("t", before, len);
	ck_assert_int_eq(temp_files(), 0);
	CLI(&r, "--session", "t", "n, len(blob)");
	ck_out(&r, "(1, 10000000)\n");
	cli_run_release(&r);
	free(before);
}

START_TEST(timed_out_call_keeps_session_and_leaves_no_temp_file)
{
	ck_unsaved("n = 2\nimport time\ntime.sleep(60)", "2", 124, false);
}
END_TEST

START_TEST(timed_out_call_without_history_leaves_the_file_byte_for_byte)
{
	cli_test_add_env(&fx, "DOLSOT_HISTORY=0");
	ck_unsaved("n = 2\nimport time\ntime.sleep(60)", "2", 124, true);
}
END_TEST

START_TEST(killed_worker_keeps_session_and_leaves_no_temp_file)
{
	ck_unsaved("n = 2\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "60", 1,
	           false);
}
END_TEST

START_TEST(empty_session_file_names_itself_and_the_reset)
{
	struct cli_run r;
	char path[4400];

	ok_call("t", "n = 1");
	snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
	cli_put_session(fx.store, "t", "", 0);   /* signed: the worker reads it */
	CLI(&r, "--session", "t", "n");
	ck_code(&r, 1);
	ck_err_has(&r, "dolsot: session 't' cannot be loaded: not a dolsot session "
	           "(bad magic); run 'dolsot --reset t' to start it afresh");
	cli_run_release(&r);
}
END_TEST

/* The worker saves the session itself: the cell's file size limit must not
 * stop it. */
START_TEST(max_file_size_still_saves_a_bigger_session)
{
	struct cli_run r;

	CLI(&r, "--max-file-size", "1M", "--session", "t", "y = b'z' * 5_000_000\nlen(y)");
	ck_code(&r, 0);
	ck_out(&r, "5000000\n");
	cli_run_release(&r);
	CLI(&r, "--max-file-size", "1M", "--session", "t", "len(y)");
	ck_code(&r, 0);
	ck_out(&r, "5000000\n");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "y == b'z' * 5_000_000");
	ck_out(&r, "True\n");
	cli_run_release(&r);
	ck_assert_int_eq(temp_files(), 0);
}
END_TEST

/* What the cell runs sees fds 0-2 only: not the session's files. */
START_TEST(cell_programs_inherit_no_session_fds)
{
	struct cli_run r;

	ok_call("t", "x = b'x' * 1000");
	CLI(&r, "--session", "t", "import subprocess\n"
	    "sorted(subprocess.run(['/bin/ls', '/proc/self/fd'], close_fds=False, "
	    "capture_output=True, text=True).stdout.split())");
	ck_code(&r, 0);
	ck_out(&r, "['0', '1', '2', '3']\n");
	cli_run_release(&r);
}
END_TEST

/* ---- toolboxes ---- */

static void write_toolbox(const char *dir)
{
	char path[4300];

	snprintf(path, sizeof(path), "%s/mytools.py", dir);
	cli_write_file(path,
	               "__all__ = ['add', 'fail', 'ToolError']\n"
	               "class ToolError(Exception):\n    exit_code = 3\n"
	               "class BadCode(Exception):\n    exit_code = 300\n"
	               "def add(a: int, b: int) -> int:\n    return a + b\n"
	               "def fail(msg: str) -> None:\n    raise ToolError(msg)\n"
	               "def fail_badly() -> None:\n    raise BadCode('x')\n");
}

START_TEST(toolbox_next_to_caller_cwd)
{
	struct cli_run r;

	write_toolbox(fx.tmp);
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .cwd = fx.tmp },
	        (const char *const[]){ "dolsot", "--toolbox", "mytools:mt", "--session",
	                               "t", "mt.add(1, 2)", NULL });
	ck_code(&r, 0);
	ck_out(&r, "3\n");
	ck_assert_str_eq(r.err, "session now holds: (nothing)\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(toolbox_exit_code_is_the_exit_status)
{
	struct cli_run r;
	char pp[4300];

	write_toolbox(fx.tmp);
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	RUN_ENV(&r, ((const char *[]){ pp, NULL }), "--toolbox", "mytools:mt",
	        "--session", "t", "a = 1\nmt.fail('no such order')");
	ck_code(&r, 3);
	ck_err_has(&r, "ToolError: no such order (line 2)\n");
	ck_err_has(&r, "session now holds: a\n");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ pp, NULL }), "--toolbox", "mytools:mt",
	        "--session", "t", "mt.fail_badly()");
	ck_code(&r, 1);   /* an exit_code outside 1..255 falls back to 1 */
	cli_run_release(&r);
}
END_TEST

START_TEST(toolbox_import_failure_names_module)
{
	struct cli_run r;

	ok_call("t", "x = 1");
	CLI(&r, "--toolbox", "no_such_mod:nm", "--session", "t", "x = 2");
	ck_code(&r, 1);
	ck_err_has(&r, "toolbox 'no_such_mod' (alias nm) cannot be imported: "
	               "ModuleNotFoundError: No module named 'no_such_mod'");
	ck_assert(!cli_has(r.err, "session now holds"));
	cli_run_release(&r);
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(toolbox_aliases_are_not_persisted)
{
	struct cli_run r;

	CLI(&r, "--toolbox", "json:js", "--session", "t", "v = js.dumps([1])");
	ck_code(&r, 0);
	ck_assert_str_eq(r.err, "session now holds: v\n");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "'js' in globals(), v");
	ck_out(&r, "(False, '[1]')\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(virtualenv_toolbox_is_importable)
{
	struct cli_run r;
	char cmd[4400], site[4400], venv[4400], path[4500];

	snprintf(venv, sizeof(venv), "%s/venv", fx.tmp);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3.11 -m venv --without-pip '%s'", venv);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(site, sizeof(site), "%s/lib/python3.11/site-packages", venv);
	snprintf(path, sizeof(path), "%s/venvtool.py", site);
	cli_write_file(path, "def where() -> str:\n    return 'venv'\n");
	snprintf(cmd, sizeof(cmd), "VIRTUAL_ENV=%s", venv);
	RUN_ENV(&r, ((const char *[]){ cmd, NULL }), "--toolbox", "venvtool:vt",
	        "--session", "t", "vt.where()");
	ck_code(&r, 0);
	ck_out(&r, "'venv'\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(pythonpath_is_honored)
{
	struct cli_run r;
	char pp[4300], path[4300];

	snprintf(path, sizeof(path), "%s/pp_mod.py", fx.tmp);
	cli_write_file(path, "VALUE = 17\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=/nonexistent:%s", fx.tmp);
	RUN_ENV(&r, ((const char *[]){ pp, NULL }), "--session", "t",
	        "import pp_mod\npp_mod.VALUE");
	ck_code(&r, 0);
	ck_out(&r, "17\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(missing_dill_says_how_to_install)
{
	struct cli_run r;
	char pp[4300], path[4300];

	snprintf(path, sizeof(path), "%s/dill.py", fx.tmp);
	cli_write_file(path, "raise ImportError('dill is broken here')\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", fx.tmp);
	RUN_ENV(&r, ((const char *[]){ pp, NULL }), "--session", "t",
	        "def f():\n    return 1");
	ck_code(&r, 1);
	ck_err_has(&r, "apt-get install python3-dill");
	cli_run_release(&r);
}
END_TEST

/* ---- timeouts and processes ---- */

START_TEST(timeout_kills_grandchild_and_keeps_state)
{
	struct cli_run r;
	char pidfile[4300], code[8800];
	char *pid_text;
	pid_t sleeper;

	ok_call("t", "x = 1");
	snprintf(pidfile, sizeof(pidfile), "%s/sleep.pid", fx.tmp);
	snprintf(code, sizeof(code),
	         "import subprocess, time\nx = 2\n"
	         "p = subprocess.Popen(['sleep', '300'])\n"
	         "open('%s', 'w').write(str(p.pid))\nprint('before', flush=True)\n"
	         "time.sleep(300)", pidfile);
	CLI(&r, "--session", "t", "--timeout", "1", code);
	ck_code(&r, 124);
	ck_out(&r, "before\n");
	ck_assert_str_eq(r.err, "TimeoutError: cell killed after exceeding its 1s timeout; "
	                        "session unchanged\n" TIMEOUT_HINT_LINE("1s"));
	ck_assert_msg(r.seconds < 5, "took %.2fs", r.seconds);
	cli_run_release(&r);
	pid_text = cli_read_file(pidfile, NULL);
	ck_assert_ptr_nonnull(pid_text);
	sleeper = (pid_t)atoi(pid_text);
	free(pid_text);
	ck_assert(!cli_pid_alive(sleeper));
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(escaped_daemon_is_killed_when_call_ends)
{
	struct cli_run r;
	char pidfile[4300], code[8800];
	char *pid_text;
	pid_t daemon_pid;

	snprintf(pidfile, sizeof(pidfile), "%s/daemon.pid", fx.tmp);
	/* setsid + double fork: the grandchild holds stdout open and lives on. */
	snprintf(code, sizeof(code),
	         "import os, time\n"
	         "if os.fork() == 0:\n"
	         "    os.setsid()\n"
	         "    if os.fork() == 0:\n"
	         "        open('%s', 'w').write(str(os.getpid()))\n"
	         "        time.sleep(300)\n"
	         "    os._exit(0)\n"
	         "for _ in range(200):\n"
	         "    if os.path.exists('%s'): break\n"
	         "    time.sleep(0.01)\n"
	         "'done'", pidfile, pidfile);
	CLI(&r, "--session", "t", code);
	ck_code(&r, 0);
	ck_out(&r, "'done'\n");
	ck_assert_msg(r.seconds < 10, "took %.2fs", r.seconds);
	cli_run_release(&r);
	pid_text = cli_read_file(pidfile, NULL);
	ck_assert_ptr_nonnull(pid_text);
	daemon_pid = (pid_t)atoi(pid_text);
	free(pid_text);
	ck_assert(daemon_pid > 0);
	ck_assert(!cli_pid_alive(daemon_pid));
}
END_TEST

START_TEST(worker_death_keeps_state)
{
	struct cli_run r;

	ok_call("t", "x = 1");
	CLI(&r, "--session", "t", "x = 2\nimport os\nos._exit(7)");
	ck_code(&r, 1);
	ck_err_has(&r, "exited with status 7");
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "x = 3\nimport ctypes\nctypes.string_at(0)");
	ck_code(&r, 1);
	ck_err_has(&r, "killed by signal 11");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(system_exit_saves_nothing)
{
	struct cli_run r;

	ok_call("t", "x = 1");
	CLI(&r, "--session", "t", "x = 2\nraise SystemExit(0)");
	ck_code(&r, 1);
	ck_err_has(&r, "SystemExit: 0");
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

/* ---- output caps ---- */

START_TEST(output_is_truncated_with_marker)
{
	struct cli_run r;

	RUN_ENV(&r, ((const char *[]){ "DOLSOT_MAX_OUTPUT=10", NULL }), "--session", "t",
	        "print('x' * 1000)\n'y' * 50");
	ck_code(&r, 0);
	ck_out(&r, "xxxxx\n[output truncated: kept the first 5 and the last 5 chars; "
	           "cut 991 bytes (991 chars) here]\nxxxx\n"
	           "'yyyy\n[value truncated: kept the first 5 and the last 5 chars; "
	           "cut 42 bytes (42 chars) here]\nyyyy'\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(huge_output_keeps_memory_bounded)
{
	struct cli_run r;

	/* 200 MB through the pipe with the default cap. */
	CLI(&r, "--session", "t",
	    "import os\nchunk = b'z' * (1 << 20)\nfor _ in range(200): os.write(1, chunk)");
	ck_code(&r, 0);
	ck_assert_uint_lt(r.out_len, 100200);
	ck_assert(cli_has(r.out, "[output truncated: kept the first 50000 and the last 50000 "
	                  "chars; cut 209615200 bytes (209615200 chars) here]"));
	cli_run_release(&r);
}
END_TEST

START_TEST(max_output_zero_means_no_cap)
{
	struct cli_run r;

	RUN_ENV(&r, ((const char *[]){ "DOLSOT_MAX_OUTPUT=0", NULL }), "--session", "t",
	        "print('x' * 300000)");
	ck_code(&r, 0);
	ck_assert_uint_eq(r.out_len, 300001);
	cli_run_release(&r);
}
END_TEST

/* ---- concurrency ---- */

START_TEST(parallel_increments_are_all_kept)
{
	pid_t kids[20];
	struct cli_run r;

	on_store(_i);
	ok_call("t", "n = 0");
	for (int i = 0; i < 20; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			CLI(&r, "--session", "t", "--timeout", "60", "n += 1");
			_exit(r.code);
		}
	}
	for (int i = 0; i < 20; i++) {
		int st;

		ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "call %d failed", i);
	}
	CLI(&r, "--session", "t", "n");
	ck_out(&r, "20\n");
	cli_run_release(&r);
}
END_TEST

/* Another holder of t's lock, in store k's own way: the file store's
 * flock, a Redis lock key, the example helper's lock directory.  Returns
 * the fd to close (file) or -1; release_lock undoes it. */
static int hold_lock(int k)
{
	char path[4500];
	int fd = -1;

	if (k == ON_REDIS) {
		ck_assert_str_eq(rd_query("SET %s someone-else PX 600000", "dolsot:lock:t"), "OK");
	} else if (k == ON_CMD) {
		snprintf(path, sizeof(path), "%s/.t.lock", helper_dir);
		ck_assert_int_eq(mkdir(path, 0700), 0);
	} else {
		snprintf(path, sizeof(path), "%s/t.lock", fx.store);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	}
	return fd;
}

static void release_lock(int k, int fd)
{
	char path[4500];

	if (k == ON_REDIS) {
		rd_query("DEL %s", "dolsot:lock:t");
	} else if (k == ON_CMD) {
		snprintf(path, sizeof(path), "%s/.t.lock", helper_dir);
		ck_assert_int_eq(rmdir(path), 0);
	} else {
		close(fd);
	}
}

START_TEST(busy_session_times_out_clearly)
{
	struct cli_run r;
	int fd;

	on_store(_i);
	ok_call("t", "x = 1");
	fd = hold_lock(_i);
	CLI(&r, "--session", "t", "--timeout", "0.5", "x = 2");
	ck_code(&r, 1);
	ck_err_has(&r, "dolsot: session 't' is busy: another call is using it");
	ck_assert(strchr(r.err, '\n') == r.err + r.err_len - 1);   /* one line */
	cli_run_release(&r);
	/* A reset waits for the call in flight too, rather than be undone by it. */
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=0.3", NULL }), "--reset", "t");
	ck_code(&r, 1);
	ck_err_has(&r, "session 't' is busy");
	cli_run_release(&r);
	release_lock(_i, fd);
	CLI(&r, "--session", "t", "x");
	ck_out(&r, "1\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(different_sessions_run_in_parallel)
{
	pid_t kid;
	struct cli_run r;
	int st;

	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		CLI(&r, "--session", "slow", "import time\ntime.sleep(2)");
		_exit(r.code);
	}
	usleep(300000);
	CLI(&r, "--session", "fast", "import time\ntime.sleep(2)");
	ck_code(&r, 0);
	/*
	 * Both cells sleep 2 s; run one after the other, the second call would
	 * wait for the first's lock and take well over 3.7 s from its start.
	 * Anything below that proves they overlapped, and leaves the call most
	 * of 2 s of slack under load.
	 */
	ck_assert_msg(r.seconds < 3.7, "blocked for %.2fs", r.seconds);
	cli_run_release(&r);
	waitpid(kid, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* ---- the store ---- */

START_TEST(list_sessions_format)
{
	struct cli_run r;
	char a[32], b[32];
	unsigned long size;
	int year;

	on_store(_i);
	CLI(&r, "--list-sessions");
	ck_code(&r, 0);
	ck_out(&r, "");
	ck_assert_str_eq(r.err, "(no sessions)\n");
	cli_run_release(&r);
	ok_call("beta", "x = 1");
	ok_call("alpha", "y = 2");
	CLI(&r, "--list-sessions");
	ck_code(&r, 0);
	ck_assert_int_eq(sscanf(r.out, "%31[^\t]\t%lu\t%d-", a, &size, &year), 3);
	ck_assert_str_eq(a, "alpha");
	ck_assert_uint_gt(size, 0);
	ck_assert_int_ge(year, 2024);
	ck_assert(cli_has(r.out, "+00:00\nbeta\t"));
	ck_assert_int_eq(sscanf(strchr(r.out, '\n') + 1, "%31[^\t]", b), 1);
	ck_assert_str_eq(b, "beta");
	cli_run_release(&r);
}
END_TEST

START_TEST(reset_one_and_all)
{
	struct cli_run r;
	char foreign[4500];

	on_store(_i);
	ok_call("a", "x = 1");
	ok_call("b", "x = 1");
	ok_call("c", "x = 1");
	/* Something beside the sessions that is not one (the helper lists
	 * every file but a dot file as a session). */
	snprintf(foreign, sizeof(foreign), "%s/%s", _i == ON_CMD ? helper_dir : fx.store,
	         _i == ON_CMD ? ".notes.txt" : "notes.txt");
	cli_write_file(foreign, "not ours\n");
	if (_i == ON_REDIS)
		rd_query("SET %s 1", "unrelated");
	CLI(&r, "--reset", "a");
	ck_code(&r, 0);
	ck_out(&r, "reset a: removed 1 session(s)\n");
	cli_run_release(&r);
	CLI(&r, "--reset", "a");
	ck_out(&r, "reset a: removed 0 session(s)\n");
	cli_run_release(&r);
	CLI(&r, "--reset", "all");
	ck_out(&r, "reset all: removed 2 session(s)\n");
	cli_run_release(&r);
	ck_assert_int_eq(access(foreign, F_OK), 0);
	if (_i == ON_REDIS)
		ck_assert_str_eq(rd_query("EXISTS %s", "unrelated"), "1");
	CLI(&r, "--session", "b", "'x' in globals()");
	ck_out(&r, "False\n");
	cli_run_release(&r);
}
END_TEST

START_TEST(store_files_and_modes)
{
	struct cli_run r;
	struct stat st;
	char path[4300];

	ok_call("t", "x = 1");
	ck_assert_int_eq(lstat(fx.store, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert(S_ISREG(st.st_mode));
	CLI(&r, "--list-sessions");
	ck_out(&r, r.out);   /* listing works on the same store */
	cli_run_release(&r);
}
END_TEST

START_TEST(store_refuses_open_permissions)
{
	struct cli_run r;

	ck_assert_int_eq(mkdir(fx.store, 0775), 0);
	ck_assert_int_eq(chmod(fx.store, 0775), 0);
	CLI(&r, "--session", "t", "x = 1");
	ck_code(&r, 1);
	ck_assert(cli_has(r.err, "dolsot: "));
	ck_assert(strchr(r.err, '\n') == r.err + r.err_len - 1);   /* one line */
	cli_run_release(&r);
	{
		char path[4300];

		snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
		ck_assert_int_ne(access(path, F_OK), 0);
	}
}
END_TEST

START_TEST(store_refuses_symlink)
{
	struct cli_run r;
	char real[4300];

	snprintf(real, sizeof(real), "%s/real", fx.tmp);
	ck_assert_int_eq(mkdir(real, 0700), 0);
	ck_assert_int_eq(symlink(real, fx.store), 0);
	CLI(&r, "--session", "t", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "symbolic link");
	cli_run_release(&r);
}
END_TEST

START_TEST(corrupt_session_names_reset)
{
	struct cli_run r;
	char path[4300];

	ok_call("t", "x = 1");
	snprintf(path, sizeof(path), "%s/t.pkl", fx.store);
	cli_put_session(fx.store, "t", "DLSS\001garbage", 12);
	CLI(&r, "--session", "t", "x");
	ck_code(&r, 1);
	ck_err_has(&r, "session 't' cannot be loaded");
	ck_err_has(&r, "dolsot --reset t");
	cli_run_release(&r);
	cli_put_session(fx.store, "t", "", 0);
	CLI(&r, "--session", "t", "x");
	ck_code(&r, 1);
	ck_err_has(&r, "session 't' cannot be loaded");
	cli_run_release(&r);
	/* The file is never silently replaced. */
	{
		size_t n;
		char *s = cli_read_session(fx.store, "t", &n);

		ck_assert_uint_eq(n, 0);
		free(s);
	}
}
END_TEST

START_TEST(ttl_zero_never_reaps)
{
	struct cli_run r;
	char path[4300];
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	ok_call("old", "x = 1");
	snprintf(path, sizeof(path), "%s/old.pkl", fx.store);
	old[1].tv_sec = time(NULL) - 800 * 86400;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_SESSION_TTL_DAYS=0", NULL }), "--list-sessions");
	ck_assert(cli_has(r.out, "old\t"));
	cli_run_release(&r);
}
END_TEST

/* The file store's TTL reaps only the calling namespace's sessions: an
 * expired session of another namespace waits for a call of its own. */
START_TEST(ttl_reaps_within_the_namespace)
{
	const char *mine[] = { "DOLSOT_NAMESPACE=mine", NULL };
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	char path[4300], other[4300];
	struct cli_run r;

	ok_call("old", "x = 1");
	RUN_ENV(&r, mine, "--session", "old", "x = 2");
	ck_code(&r, 0);
	cli_run_release(&r);
	snprintf(path, sizeof(path), "%s/old.pkl", fx.store);
	snprintf(other, sizeof(other), "%s/mine+old.pkl", fx.store);
	old[1].tv_sec = time(NULL) - 8 * 86400;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	ck_assert_int_eq(utimensat(AT_FDCWD, other, old, 0), 0);
	CLI(&r, "--list-sessions");
	ck_assert_msg(!cli_has(r.out, "old\t"), "%s", r.out);
	cli_run_release(&r);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(access(other, F_OK), 0);
	RUN_ENV(&r, mine, "--list-sessions");
	ck_assert_msg(!cli_has(r.out, "old\t"), "%s", r.out);
	cli_run_release(&r);
	ck_assert_int_eq(access(other, F_OK), -1);
}
END_TEST

/* DOLSOT_SESSION_TTL_DAYS on each store: the file store reaps a session
 * unsaved for that long (7 days by default), Redis expires its
 * key that long after the save (0: never), and a helper's sessions are the
 * helper's to expire: dolsot reaps none of them. */
START_TEST(session_ttl_on_each_store)
{
	const char *brief[] = { "DOLSOT_SESSION_TTL_DAYS=0.00003", NULL };   /* 2.6 s */
	const char *never[] = { "DOLSOT_SESSION_TTL_DAYS=0", NULL };
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	char path[4500];
	struct cli_run r;
	double t0;

	on_store(_i);
	if (_i == ON_REDIS) {
		RUN_ENV(&r, never, "--session", "keep", "x = 1");
		ck_code(&r, 0);
		cli_run_release(&r);
		ck_assert_str_eq(rd_query("PTTL %s", "dolsot:session:keep"), "-1");
		RUN_ENV(&r, brief, "--session", "old", "x = 1");
		ck_code(&r, 0);
		cli_run_release(&r);
		t0 = cli_now();
		for (;;) {   /* gone once its time has passed, however slow we are */
			CLI(&r, "--list-sessions");
			if (!cli_has(r.out, "old\t"))
				break;
			ck_assert_msg(cli_now() - t0 < 60, "never expired: %s", r.out);
			cli_run_release(&r);
			usleep(200000);
		}
		ck_assert(cli_has(r.out, "keep\t"));
		cli_run_release(&r);
		ck_state("old", "'x' in dir()", "False\n");
		return;
	}
	ok_call("old", "x = 1");
	ok_call("new", "x = 1");
	snprintf(path, sizeof(path), "%s/%s", _i == ON_CMD ? helper_dir : fx.store,
	         _i == ON_CMD ? "old" : "old.pkl");
	old[1].tv_sec = time(NULL) - 8 * 86400;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	CLI(&r, "--list-sessions");
	ck_assert(cli_has(r.out, "new\t"));
	ck_assert_msg(cli_has(r.out, "old\t") == (_i == ON_CMD), "%s", r.out);
	cli_run_release(&r);
	ck_assert_int_eq(access(path, F_OK) == 0, _i == ON_CMD);
}
END_TEST

/* Set the mtime of NAME in the store to `ago` seconds before now. */
static void age_store_file(const char *name, long ago)
{
	struct timespec when[2] = { { 0, UTIME_OMIT }, { time(NULL) - ago, 0 } };
	char path[4500];

	snprintf(path, sizeof(path), "%s/%s", fx.store, name);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, when, 0), 0);
}

static bool store_has(const char *name)
{
	char path[4500];

	snprintf(path, sizeof(path), "%s/%s", fx.store, name);
	return access(path, F_OK) == 0;
}

/* The file store sweeps its directory for expired sessions at most once a
 * minute (.swept's mtime says when); the session a call opens is reaped at
 * once, and listing sweeps whatever the stamp says. */
START_TEST(file_store_sweeps_at_most_once_a_minute)
{
	struct cli_run r;

	ok_call("a", "x = 1");
	ok_call("b", "x = 1");
	ck_assert(store_has(".swept"));
	age_store_file("a.pkl", 8 * 86400);
	age_store_file("b.pkl", 8 * 86400);
	ck_state("b", "'x' in dir()", "False\n");   /* b expired: reaped when opened */
	ck_assert(store_has("a.pkl"));               /* a waits for the next sweep */
	age_store_file(".swept", 61);
	ok_call("b", "x = 2");                       /* that call sweeps */
	ck_assert(!store_has("a.pkl"));
	ok_call("c", "x = 1");
	age_store_file("c.pkl", 8 * 86400);
	CLI(&r, "--list-sessions");
	ck_code(&r, 0);
	ck_assert_msg(!cli_has(r.out, "c\t") && cli_has(r.out, "b\t"), "%s", r.out);
	cli_run_release(&r);
	ck_assert(!store_has("c.pkl"));
}
END_TEST

/* A warm zygote runs with glibc's huge-page tunable; a cell sees the
 * caller's GLIBC_TUNABLES, or none, as on the cold path. */
START_TEST(a_cell_sees_only_the_callers_glibc_tunables)
{
	const char *mine[] = { "GLIBC_TUNABLES=glibc.malloc.check=0", NULL };
	const char *code = "import os; print(repr(os.environ.get('GLIBC_TUNABLES')))";
	struct cli_run r;

	RUN_ENV(&r, NULL, "--session", "t", code);
	ck_code(&r, 0);
	ck_out(&r, "None\n");
	cli_run_release(&r);
	RUN_ENV(&r, mine, "--session", "t", code);
	ck_code(&r, 0);
	ck_out(&r, "'glibc.malloc.check=0'\n");
	cli_run_release(&r);
}
END_TEST

/* ---- usage errors: exit 2, one line, no Python, no store ---- */

static void expect_usage(const char *const *extra_env, const char *const *argv,
                         const char *needle)
{
	struct cli_run r;

	cli_test_run(&fx, &r, NULL, extra_env, argv);
	ck_code(&r, 2);
	ck_out(&r, "");
	ck_assert_msg(strncmp(r.err, "dolsot: ", 8) == 0, "stderr: %s", r.err);
	ck_assert_msg(strchr(r.err, '\n') == r.err + r.err_len - 1,
	              "not one line: %s", r.err);
	ck_err_has(&r, needle);
	ck_assert_msg(!store_exists(), "the store was touched");
	cli_run_release(&r);
}

#define USAGE(needle, ...) expect_usage(NULL, \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL }, (needle))
#define USAGE_ENV(env, needle, ...) expect_usage((const char *const[]){ env, NULL }, \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL }, (needle))

START_TEST(missing_session_explains_why)
{
	on_store(_i);
	USAGE("stable id", "1 + 1");
	ck_assert(!cli_exists(helper_dir));
	if (_i == ON_REDIS)
		ck_assert_str_eq(rd_query("DBSIZE%s", ""), "0");
}
END_TEST

START_TEST(malformed_toolbox_specs)
{
	USAGE("expected MODULE:ALIAS", "--toolbox", "mytools", "--session", "t", "1");
	USAGE("the module is empty", "--toolbox", ":mt", "--session", "t", "1");
	USAGE("the alias is empty", "--toolbox", "mytools:", "--session", "t", "1");
	USAGE("not a Python identifier", "--toolbox", "mytools:m-t", "--session", "t", "1");
	USAGE("not a Python identifier", "--toolbox", "mytools:1mt", "--session", "t", "1");
	USAGE("is a Python keyword", "--toolbox", "mytools:class", "--session", "t", "1");
	USAGE("not a dotted Python name", "--toolbox", "my..tools:mt", "--session", "t", "1");
	USAGE("given twice", "--toolbox", "a:x", "--toolbox", "b:x", "--session", "t", "1");
}
END_TEST

START_TEST(bad_session_ids)
{
	char long_id[200];

	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	USAGE("invalid session id", "--session", "", "1");
	USAGE("invalid session id", "--session", long_id, "1");
	USAGE("invalid session id", "--session", "a/b", "1");
	USAGE("invalid session id", "--session", ".hidden", "1");
	USAGE("invalid session id", "--session", "..", "1");
	USAGE("invalid session id", "--session", "caf\xc3\xa9", "1");
	USAGE("invalid session id", "--session", "a;rm -rf", "1");
	USAGE("reserved", "--session", "all", "1");
	USAGE("invalid session id", "--reset", "../x");
	long_id[128] = '\0';
	{
		struct cli_run r;

		CLI(&r, "--session", long_id, "1");
		ck_code(&r, 0);
		cli_run_release(&r);
	}
}
END_TEST

START_TEST(empty_code_is_refused)
{
	USAGE("empty code", "--session", "t", "");
	USAGE("empty code", "--session", "t", "  \n\t ");
	USAGE("empty code", "--session", "t");   /* stdin is /dev/null */
}
END_TEST

START_TEST(unknown_option_and_extra_arguments)
{
	USAGE("unknown option '--frobnicate'", "--frobnicate", "--session", "t", "1");
	USAGE("unknown option '-x'", "-x", "--session", "t", "1");
	USAGE("unexpected argument 'b'", "--session", "t", "a", "b");
	USAGE("needs a value", "--session");
	USAGE("take no code", "--list-sessions", "1");
}
END_TEST

START_TEST(bad_timeouts)
{
	USAGE("--timeout '0'", "--session", "t", "--timeout", "0", "1");
	USAGE("--timeout '-1'", "--session", "t", "--timeout", "-1", "1");
	USAGE("--timeout 'abc'", "--session", "t", "--timeout", "abc", "1");
	USAGE("--timeout 'nan'", "--session", "t", "--timeout", "nan", "1");
	USAGE("--timeout 'inf'", "--session", "t", "--timeout", "inf", "1");
	USAGE("--timeout '-0'", "--session", "t", "--timeout", "-0", "1");
	USAGE("--timeout '1e308'", "--session", "t", "--timeout", "1e308", "1");
	USAGE("--timeout '5s'", "--session", "t", "--timeout", "5s", "1");
}
END_TEST

START_TEST(malformed_environment_is_named)
{
	USAGE_ENV("DOLSOT_TIMEOUT=soon", "DOLSOT_TIMEOUT='soon'", "--session", "t", "1");
	USAGE_ENV("DOLSOT_TIMEOUT=0", "DOLSOT_TIMEOUT='0'", "--session", "t", "1");
	USAGE_ENV("DOLSOT_MAX_OUTPUT=-5", "DOLSOT_MAX_OUTPUT='-5'", "--session", "t", "1");
	USAGE_ENV("DOLSOT_MAX_OUTPUT=1.5", "DOLSOT_MAX_OUTPUT='1.5'", "--session", "t", "1");
	USAGE_ENV("DOLSOT_SESSION_TTL_DAYS=week", "DOLSOT_SESSION_TTL_DAYS='week'",
	          "--list-sessions");
}
END_TEST

START_TEST(flag_beats_environment)
{
	struct cli_run r;

	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=0.3", NULL }), "--session", "t",
	        "--timeout", "5", "import time\ntime.sleep(1)\n'slept'");
	ck_code(&r, 0);
	ck_out(&r, "'slept'\n");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=0.3", NULL }), "--session", "t",
	        "import time\ntime.sleep(2)");
	ck_code(&r, 124);
	ck_err_has(&r, "0.3s timeout");
	cli_run_release(&r);
}
END_TEST

/* ---- help, version, man page ---- */

START_TEST(version_and_help)
{
	struct cli_run r;

	CLI(&r, "--version");
	ck_code(&r, 0);
	ck_assert(strncmp(r.out, "dolsot ", 7) == 0);
	cli_run_release(&r);
	CLI(&r, "--help");
	ck_code(&r, 0);
	ck_assert(strncmp(r.out, "usage: dolsot ", 14) == 0);
	ck_assert_str_eq(r.err, "");
	cli_run_release(&r);
}
END_TEST

/* Every option the usage text names appears in the man page's SYNOPSIS,
 * and every option of the man SYNOPSIS appears in the usage text. */
START_TEST(help_matches_man_synopsis)
{
	struct cli_run r;
	FILE *p;
	char line[1024], synopsis[8192] = "";
	bool in_synopsis = false;
	const char *opts[] = { "--toolbox", "--session", "--timeout", "--list-sessions",
	                       "--reset", "--help", "--version", "MODULE:ALIAS",
	                       "SECONDS", "CODE", "ID", "--sandbox", "--mount",
	                       "HOST:VIRTUAL[:MODE]", "--env", "NAME[=VALUE]", "--memory",
	                       "--max-procs", "--max-file-size", "--cpu-seconds",
	                       "--recursion-limit", "SIZE", "--history", "--undo",
	                       "--checkout", "--export", "--format", "--tool",
	                       "NAME=COMMAND", "--tool-schema", "NAME=FILE", "--tools-fd",
	                       NULL };

	p = popen("mandoc -Tascii man/dolsot.1 | col -b", "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		if (strncmp(line, "SYNOPSIS", 8) == 0)
			in_synopsis = true;
		else if (in_synopsis && line[0] >= 'A' && line[0] <= 'Z')
			in_synopsis = false;
		else if (in_synopsis)
			strncat(synopsis, line, sizeof(synopsis) - strlen(synopsis) - 1);
	}
	ck_assert_int_eq(pclose(p), 0);
	CLI(&r, "--help");
	for (size_t i = 0; opts[i]; i++) {
		char *usage_end = strstr(r.out, "\n\n");
		bool in_usage;

		ck_assert_ptr_nonnull(usage_end);
		*usage_end = '\0';
		in_usage = strstr(r.out, opts[i]) != NULL;
		*usage_end = '\n';
		ck_assert_msg(in_usage == (strstr(synopsis, opts[i]) != NULL),
		              "%s: usage %d, man synopsis %d\n%s", opts[i], in_usage,
		              !in_usage, synopsis);
	}
	cli_run_release(&r);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *run = tcase_create("run"), *tb = tcase_create("toolbox"),
	      *proc = tcase_create("processes"), *out = tcase_create("output"),
	      *conc = tcase_create("concurrency"), *st = tcase_create("store"),
	      *refuse = tcase_create("refusals"), *use = tcase_create("usage");
	TCase *all[] = { run, tb, proc, out, conc, st, refuse, use };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		/* Refusals and usage errors need a store nobody created yet. */
		bool plain = all[i] == refuse || all[i] == use;

		tcase_add_checked_fixture(all[i], plain ? setup_plain : setup, teardown);
		tcase_set_timeout(all[i], 120);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(run, value_is_repr_of_last_expression);
	tcase_add_test(run, none_value_prints_nothing);
	tcase_add_test(run, stdout_then_value);
	tcase_add_loop_test(run, state_persists_across_calls, 0, N_STORES);
	tcase_add_test(run, shared_references_survive);
	tcase_add_test(run, code_from_stdin);
	tcase_add_test(run, fd_level_capture_keeps_order);
	tcase_add_test(run, failed_cell_keeps_earlier_assignments);
	tcase_add_test(run, syntax_error_names_line);
	tcase_add_test(run, unicode_streams_are_utf8);
	tcase_add_test(run, extension_modules_load);
	tcase_add_test(run, binary_has_no_libpython_dependency);
	tcase_add_test(run, top_level_await_runs);
	tcase_add_test(run, sys_executable_is_a_real_python);
	tcase_add_test(run, unpicklable_values_are_dropped_by_name);
	tcase_add_test(run, dill_carries_what_pickle_cannot);
	tcase_add_test(run, large_value_survives);
	tcase_add_test(st, big_session_survives_calls_byte_for_byte);
	tcase_add_test(st, timed_out_call_keeps_session_and_leaves_no_temp_file);
	tcase_add_test(st, timed_out_call_without_history_leaves_the_file_byte_for_byte);
	tcase_add_test(st, killed_worker_keeps_session_and_leaves_no_temp_file);
	tcase_add_test(st, empty_session_file_names_itself_and_the_reset);
	tcase_add_test(st, max_file_size_still_saves_a_bigger_session);
	tcase_add_test(st, cell_programs_inherit_no_session_fds);
	tcase_add_test(tb, toolbox_next_to_caller_cwd);
	tcase_add_test(tb, toolbox_exit_code_is_the_exit_status);
	tcase_add_test(tb, toolbox_import_failure_names_module);
	tcase_add_test(tb, toolbox_aliases_are_not_persisted);
	tcase_add_test(tb, virtualenv_toolbox_is_importable);
	tcase_add_test(tb, pythonpath_is_honored);
	tcase_add_test(tb, missing_dill_says_how_to_install);
	tcase_add_test(proc, timeout_kills_grandchild_and_keeps_state);
	tcase_add_test(proc, escaped_daemon_is_killed_when_call_ends);
	tcase_add_test(proc, worker_death_keeps_state);
	tcase_add_test(proc, system_exit_saves_nothing);
	tcase_add_test(out, output_is_truncated_with_marker);
	tcase_add_test(out, huge_output_keeps_memory_bounded);
	tcase_add_test(out, max_output_zero_means_no_cap);
	tcase_add_loop_test(conc, parallel_increments_are_all_kept, 0, N_STORES);
	tcase_add_loop_test(conc, busy_session_times_out_clearly, 0, N_STORES);
	tcase_add_test(conc, different_sessions_run_in_parallel);
	tcase_add_loop_test(st, list_sessions_format, 0, N_STORES);
	tcase_add_loop_test(st, reset_one_and_all, 0, N_STORES);
	tcase_add_test(st, store_files_and_modes);
	tcase_add_test(refuse, store_refuses_open_permissions);
	tcase_add_test(refuse, store_refuses_symlink);
	tcase_add_test(st, corrupt_session_names_reset);
	tcase_add_test(st, ttl_zero_never_reaps);
	tcase_add_test(st, ttl_reaps_within_the_namespace);
	tcase_add_loop_test(st, session_ttl_on_each_store, 0, N_STORES);
	tcase_add_test(st, file_store_sweeps_at_most_once_a_minute);
	tcase_add_test(st, a_cell_sees_only_the_callers_glibc_tunables);
	tcase_add_loop_test(use, missing_session_explains_why, 0, N_STORES);
	tcase_add_test(use, malformed_toolbox_specs);
	tcase_add_test(use, bad_session_ids);
	tcase_add_test(use, empty_code_is_refused);
	tcase_add_test(use, unknown_option_and_extra_arguments);
	tcase_add_test(use, bad_timeouts);
	tcase_add_test(use, malformed_environment_is_named);
	tcase_add_test(use, flag_beats_environment);
	tcase_add_test(use, version_and_help);
	tcase_add_test(use, help_matches_man_synopsis);
	return s;
}

int main(void)
{
	return ck_run(cli_suite());
}
