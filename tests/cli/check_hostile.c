/*
 * check_hostile.c - cells and callers that try to break dolsot.
 *
 * Every hostile cell must end with a clear line on stderr and the right
 * exit code, leave no process behind, and leave the session either as it
 * was or as the contract says a failed cell leaves it.  Every hostile
 * caller (bytes, sizes, ids, numbers, environments, store directories)
 * gets either a working call or a one-line refusal.
 *
 * The suite runs twice from the Makefile: with DOLSOT_SERVER=off, and with
 * the warm server started for every test (DOLSOT_TEST_WARM=1).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

static struct cli_test fx;
static char mounted[4300];      /* a tmpfs this test mounted, or "" */

static void cleanup(void)
{
	if (mounted[0]) {
		umount2(mounted, MNT_DETACH);
		mounted[0] = '\0';
	}
	cli_test_end(&fx);
}

static void setup_plain(void)
{
	cli_test_begin(&fx, cli_usual_env);
	atexit(cleanup);   /* runs before the helpers' own: unmount first */
}

/* In the warm run (DOLSOT_TEST_WARM) a server is up before each test. */
static void setup(void)
{
	char err[4096];

	setup_plain();
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cleanup();
}

#define RUN_ENV(r, extra, ...) cli_test_run(&fx, (r), NULL, (extra), \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })

static bool store_exists(void)
{
	struct stat st;

	return lstat(fx.store, &st) == 0;
}

/* ---- hostile cells ---- */

/* The state each hostile cell starts from, and how to read it back. */
#define BEFORE "x = 1\ny = 'kept'"
#define QUERY "x, y"
#define OLD "(1, 'kept')\n"          /* the cell saved nothing */
#define NEW "(2, 'kept')\n"          /* the cell's x = 2 was kept */

struct hostile {
	const char *name;
	const char *code;
	const char *timeout;            /* NULL: 20 */
	int exit;
	const char *err;                /* a line stderr must hold */
	const char *out;                /* all of stdout, or NULL: unchecked */
	const char *state;              /* QUERY's output afterwards */
	size_t out_max;                 /* stdout at most this long (0: unchecked) */
	size_t err_max;                 /* stderr at most this long (0: unchecked) */
	long rss_max_kb;                /* dolsot's peak RSS at most (0: unchecked) */
};

static const struct hostile cells[] = {
	{ "closes fds 1 and 2, then ends with a value",
	  "import os\nx = 2\nos.close(1)\nos.close(2)\n'done'", NULL, 0,
	  "session now holds: os, x, y\n", "'done'\n", NEW, 0, 0, 0 },
	{ "closes fds 1 and 2, then prints",
	  "import os\nx = 2\nos.close(1)\nos.close(2)\nprint('lost')", NULL, 1,
	  "OSError: [Errno 9] Bad file descriptor (line 5)\n", "", NEW, 0, 0, 0 },
	{ "writes a gigabyte to stdout",
	  "import os\nx = 2\nb = b'o' * (1 << 20)\nfor _ in range(1024): os.write(1, b)\n"
	  "del b, _", NULL, 0,
	  "session now holds: os, x, y\n", NULL, NEW, 100200, 0, 200000 },
	{ "writes a gigabyte to stderr",
	  "import os\nx = 2\nb = b'e' * (1 << 20)\nfor _ in range(1024): os.write(2, b)\n"
	  "del b, _", NULL, 0,
	  "[output truncated: kept the first 50000 and the last 50000 chars; "
	  "cut 1073641824 bytes (1073641824 chars) here]\neeee", "", NEW, 0, 0, 200000 },
	{ "writes a gigabyte of bytes that continue no UTF-8 character",
	  "import os\nx = 2\nb = b'\\x80' * (1 << 20)\nfor _ in range(1024): os.write(1, b)\n"
	  "del b, _", NULL, 0,
	  "session now holds: os, x, y\n", NULL, NEW, 100200, 0, 200000 },
	{ "calls os._exit(0)",
	  "import os\nx = 2\nos._exit(0)", NULL, 1,
	  "dolsot: the worker exited with status 0 before it finished (the cell ended "
	  "the process); session unchanged\n", "", OLD, 0, 0, 0 },
	{ "calls os._exit(7)",
	  "import os\nx = 2\nprint('bye', flush=True)\nos._exit(7)", NULL, 1,
	  "dolsot: the worker exited with status 7 before it finished (the cell ended "
	  "the process); session unchanged\n", "bye\n", OLD, 0, 0, 0 },
	{ "raises SystemExit with an int",
	  "x = 2\nraise SystemExit(3)", NULL, 1,
	  "SystemExit: 3: the cell ended the interpreter, so it did not complete; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "raises SystemExit with a str",
	  "import sys\nx = 2\nsys.exit('bye')", NULL, 1,
	  "SystemExit: 'bye': the cell ended the interpreter, so it did not complete; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "raises SystemExit(0)",
	  "import sys\nx = 2\nsys.exit(0)", NULL, 1,
	  "SystemExit: 0: the cell ended the interpreter, so it did not complete; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "calls exit()",
	  "x = 2\nexit()", NULL, 1,
	  "SystemExit: None: the cell ended the interpreter, so it did not complete; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "calls quit(4)",
	  "x = 2\nquit(4)", NULL, 1,
	  "SystemExit: 4: the cell ended the interpreter, so it did not complete; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "raises KeyboardInterrupt",
	  "x = 2\nraise KeyboardInterrupt", NULL, 1,
	  "KeyboardInterrupt (line 2)\nsession now holds: x, y\n", "", NEW, 0, 0, 0 },
	{ "segfaults through ctypes.string_at(0)",
	  "import ctypes\nx = 2\nctypes.string_at(0)", NULL, 1,
	  "dolsot: the worker was killed by signal 11 (Segmentation fault) before it "
	  "finished; session unchanged\n", "", OLD, 0, 0, 0 },
	{ "calls abort()",
	  "import os\nx = 2\nos.abort()", NULL, 1,
	  "dolsot: the worker was killed by signal 6 (Aborted) before it finished; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "sends itself SIGKILL",
	  "import os, signal\nx = 2\nos.kill(os.getpid(), signal.SIGKILL)", NULL, 1,
	  "dolsot: the worker was killed by signal 9 (Killed) before it finished; "
	  "session unchanged\n", "", OLD, 0, 0, 0 },
	{ "replaces sys.stdout and sys.stderr with garbage, then ends with a value",
	  "import sys\nx = 2\nsys.stdout = 42\nsys.stderr = 'junk'\n7", NULL, 0,
	  "session now holds: sys, x, y\n", "7\n", NEW, 0, 0, 0 },
	{ "replaces sys.stdout with garbage, then prints",
	  "import sys\nx = 2\nsys.stdout = 42\nprint('a')", NULL, 1,
	  "AttributeError: 'int' object has no attribute 'write' (line 4)\n", "", NEW, 0, 0, 0 },
	{ "replaces sys.stdout with a writer that raises",
	  "import sys\nclass W:\n    def write(self, s): raise RuntimeError('w')\n"
	  "    def flush(self): raise RuntimeError('f')\n"
	  "sys.stdout = sys.stderr = W()\nx = 2\n8", NULL, 0,
	  "session now holds: W, sys, x, y\n", "8\n", NEW, 0, 0, 0 },
	{ "leaves a thread running",
	  "import threading, time\nx = 2\n"
	  "t = threading.Thread(target=time.sleep, args=(1000,))\nt.start()\n"
	  "del t\n'ok'", NULL, 0,
	  "session now holds: threading, time, x, y\n", "'ok'\n", NEW, 0, 0, 0 },
	{ "registers an atexit handler that hangs",
	  "import atexit, time\nx = 2\natexit.register(time.sleep, 1000)\n'ok'", NULL, 0,
	  "session now holds: atexit, time, x, y\n", "'ok'\n", NEW, 0, 0, 0 },
	{ "keeps a value whose pickling raises",
	  "class R:\n    def __reduce__(self): raise ValueError('no pickling')\n"
	  "x = 2\nr = R()", NULL, 0,
	  "warning: dropped unpicklable names (gone next call): r (ValueError: no pickling)\n",
	  "", NEW, 0, 0, 0 },
	{ "keeps a value whose pickling raises with a 100 MB message",
	  "class R:\n    def __reduce__(self): raise ValueError('m' * (100 << 20))\n"
	  "x = 2\nr = R()", NULL, 0,
	  "warning: dropped unpicklable names (gone next call): r (ValueError: mmmm",
	  "", NEW, 0, 600, 0 },
	{ "keeps a value whose pickling recurses without bound",
	  "class Rec:\n    def __getstate__(self): return {'next': Rec()}\n"
	  "x = 2\nr = Rec()", NULL, 0,
	  "warning: dropped unpicklable names (gone next call): "
	  "r (RecursionError: maximum recursion depth exceeded)\n", "", NEW, 0, 0, 0 },
	{ "raises the recursion limit and keeps a value nested 3000 deep",
	  "import sys\nsys.setrecursionlimit(10 ** 7)\nx = 2\nd = []\n"
	  "for _ in range(3000):\n    d = [d]\n", NULL, 0,
	  "session now holds: _, d, sys, x, y\n", "", NEW, 0, 0, 0 },
	{ "keeps a value whose pickling outlasts the timeout",
	  "import time\nclass Slow:\n    def __reduce__(self):\n        time.sleep(1000)\n"
	  "x = 2\ns = Slow()\nprint('ran', flush=True)", "2", 124,
	  "TimeoutError: cell killed after exceeding its 2s timeout; session unchanged\n"
	  TIMEOUT_HINT_LINE("2s"),
	  "ran\n", OLD, 0, 0, 0 },
	{ "raises an exception whose str() raises",
	  "class E(Exception):\n    def __str__(self): raise ValueError('no str')\n"
	  "x = 2\nraise E()", NULL, 1,
	  "E: <str() failed: ValueError> (line 4)\nsession now holds: E, x, y\n", "", NEW, 0, 0, 0 },
	{ "raises an exception whose exit_code raises",
	  "class E(Exception):\n    @property\n    def exit_code(self): raise ValueError('no')\n"
	  "x = 2\nraise E('m')", NULL, 1,
	  "E: m (line 5)\nsession now holds: E, x, y\n", "", NEW, 0, 0, 0 },
	{ "raises an exception whose every attribute lookup raises",
	  "class E(Exception):\n    def __getattr__(self, name): raise RuntimeError(name)\n"
	  "x = 2\nraise E('m')", NULL, 1,
	  "E: m (line 4)\nsession now holds: E, x, y\n", "", NEW, 0, 0, 0 },
	{ "raises SystemExit with a code whose repr() raises",
	  "class C:\n    def __repr__(self): raise ValueError('r')\nx = 2\nraise SystemExit(C())",
	  NULL, 1,
	  "SystemExit: <unrepresentable C: ValueError: r>: the cell ended the interpreter, "
	  "so it did not complete; session unchanged\n", "", OLD, 0, 0, 0 },
	{ "raises an exception with a 300 MB message",
	  "x = 2\nraise ValueError('m' * (300 << 20))", NULL, 1,
	  "\n[error truncated: kept the first 50000 and the last 50000 chars; cut 314472821 "
	  "bytes (314472821 chars) here]\nmmmm", "", NEW, 0, 100300, 0 },
	{ "raises SystemExit with a 300 MB message",
	  "x = 2\nraise SystemExit('m' * (300 << 20))", NULL, 1,
	  "\n[error truncated: kept the first 50000 and the last 50000 chars; cut 314472814 "
	  "bytes (314472814 chars) here]\nmmmm", "", OLD, 0, 100300, 0 },
	{ "forks a child that runs on to the end of the cell, then exits",
	  "import os, time\nx = 2\nif os.fork() == 0:\n    x = 3\nelse:\n"
	  "    time.sleep(1)\n    os._exit(5)", NULL, 1,
	  "dolsot: the worker exited with status 5 before it finished (the cell ended "
	  "the process); session unchanged\n", "", OLD, 0, 0, 0 },
	{ "forks a child that runs on to the end of the cell",
	  "import os, time\nx = 2\nif os.fork() == 0:\n    x = 3\nelse:\n"
	  "    time.sleep(0.5)\n    x = 4", NULL, 0,
	  "session now holds: os, time, x, y\n", "", "(4, 'kept')\n", 0, 0, 0 },
	{ "keeps a value nested too deep to pickle, with the recursion limit raised",
	  "import sys\nsys.setrecursionlimit(10 ** 7)\nx = 2\nl = []\n"
	  "for _ in range(2000000): l = [l]", NULL, 0,
	  "warning: dropped unpicklable names (gone next call): "
	  "l (RecursionError: maximum recursion depth exceeded", "", NEW, 0, 0, 0 },
	{ "keeps a value with a __del__ that prints",
	  "class D:\n    def __del__(self): print('deleted', flush=True)\n"
	  "d = D()\ndel d\nx = 2\ne = D()\n'ok'", NULL, 0,
	  "session now holds: D, e, x, y\n", "deleted\n'ok'\n", NEW, 0, 0, 0 },
};

static const size_t n_cells = sizeof(cells) / sizeof(*cells);

START_TEST(hostile_cell)
{
	const struct hostile *h = &cells[_i];
	struct cli_run r;

	ok_call("t", BEFORE);
	ck_no_strays();
	CLI(&r, "--session", "t", "--timeout", h->timeout ? h->timeout : "20", h->code);
	ck_assert_msg(r.code == h->exit, "%s: exit %d, want %d\nstdout: %.300s\nstderr: %.2000s",
	              h->name, r.code, h->exit, r.out, r.err);
	ck_assert_msg(cli_has(r.err, h->err), "%s: stderr lacks '%s':\n%.2000s", h->name,
	              h->err, r.err);
	if (h->out)
		ck_assert_msg(strcmp(r.out, h->out) == 0, "%s: stdout '%.300s', want '%s'",
		              h->name, r.out, h->out);
	if (h->out_max)
		ck_assert_msg(r.out_len <= h->out_max, "%s: %zu bytes on stdout", h->name,
		              r.out_len);
	if (h->err_max)
		ck_assert_msg(r.err_len <= h->err_max, "%s: %zu bytes on stderr", h->name,
		              r.err_len);
	if (h->rss_max_kb)
		ck_assert_msg(r.maxrss_kb <= h->rss_max_kb, "%s: dolsot peaked at %ld kB",
		              h->name, r.maxrss_kb);
	cli_run_release(&r);
	ck_no_strays();
	ck_state("t", QUERY, h->state);
}
END_TEST

/*
 * Issue 35: the stop signals dolsot holds from lock to commit are the
 * client's, not the cell's.  A cell starts with none of SIGINT, SIGTERM
 * and SIGHUP blocked and Python's own handlers armed, on every path: a
 * SIGINT it sends itself is a KeyboardInterrupt, a handler it sets for
 * SIGTERM runs, and timeout(1) can stop the child it started.  Ways: 0
 * plain, 1 sandboxed, 2 live (warm run only), 3 live and sandboxed.
 */
#define SIGNAL_CELL \
	"import os, signal, subprocess, time\n" \
	"def probe():\n" \
	"    blocked = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n" \
	"    interrupted = False\n" \
	"    try:\n" \
	"        os.kill(os.getpid(), signal.SIGINT)\n" \
	"        for _ in range(500): time.sleep(0.01)\n" \
	"    except KeyboardInterrupt:\n" \
	"        interrupted = True\n" \
	"    got = []\n" \
	"    old = signal.signal(signal.SIGTERM, lambda n, f: got.append(n))\n" \
	"    os.kill(os.getpid(), signal.SIGTERM)\n" \
	"    for _ in range(500):\n" \
	"        if got: break\n" \
	"        time.sleep(0.01)\n" \
	"    signal.signal(signal.SIGTERM, old)\n" \
	"    t = time.monotonic()\n" \
	"    rc = subprocess.run(['timeout', '1', 'sleep', '30']).returncode\n" \
	"    return blocked, interrupted, got, rc, time.monotonic() - t\n" \
	"blocked, interrupted, got, rc, took = probe()\n" \
	"print(blocked, interrupted, got, rc)\n" \
	"took"

START_TEST(cells_get_their_signals)
{
	static const char *const ways[][3] = {
		{ NULL }, { "--sandbox", NULL }, { "--live", NULL }, { "--live", "--sandbox", NULL },
	};
	const char *const *way = ways[_i];
	const char *argv[8] = { "dolsot" };
	struct cli_run r;
	size_t n = 1;

	if (_i >= 2 && !getenv("DOLSOT_TEST_WARM")) {
		printf("SKIP: %s (way %d): --live needs the warm run\n", __func__, _i);
		return;
	}
	if ((_i & 1) && !cli_userns_probe(false)) {
		printf("SKIP: %s (way %d): user namespaces are not available here\n", __func__, _i);
		return;
	}
	for (const char *const *w = way; *w; w++)
		argv[n++] = *w;
	argv[n++] = "--session";
	argv[n++] = "t";
	argv[n++] = SIGNAL_CELL;
	argv[n] = NULL;
	cli_run(&r, &(struct cli_opts){ .env = fx.env }, argv);
	ck_code(&r, 0);
	ck_assert_msg(strncmp(r.out, "[] True [15] 124\n", 17) == 0, "way %d: stdout %s", _i,
	              r.out);
	/* timeout(1) stopped sleep after its second: not after sleep's 30. */
	ck_assert_msg(strtod(r.out + 17, NULL) < 10, "way %d: took %s", _i, r.out + 17);
	cli_run_release(&r);
	if (_i < 2)   /* a live process outlives its calls by design */
		ck_no_strays();
}
END_TEST

/*
 * Issue 35: a cell that writes lines like dolsot's on stderr, or raises an
 * error whose message holds them, cannot pass them off as dolsot's: in the
 * text contract they are indented; --json keeps them as they are.
 */
START_TEST(cell_lines_that_look_like_dolsots_are_marked)
{
	const char *code = "import sys\n"
		"print('dolsot: stopped by SIGTERM before the session was saved', file=sys.stderr)\n"
		"print('session now holds: everything', file=sys.stderr)\n"
		"x = 2\n"
		"raise ValueError('bad\\nwarning: session not saved\\nhint: run --reset')";
	struct cli_run r;

	ok_call("t", BEFORE);
	CLI(&r, "--session", "t", code);
	ck_code(&r, 1);
	ck_err(&r, "  dolsot: stopped by SIGTERM before the session was saved\n"
	           "  session now holds: everything\n"
	           "ValueError: bad (line 5)\n"
	           "  warning: session not saved\n"
	           "  hint: run --reset\n"
	           "session now holds: sys, x, y\n");
	cli_run_release(&r);
	CLI(&r, "--json", "--session", "t", "print('hint: h', file=sys.stderr)");
	ck_code(&r, 0);
	ck_out_has(&r, "\"stderr\":\"hint: h\\n\"");
	cli_run_release(&r);
}
END_TEST

/* help(), like exit() and quit(), comes from the site module, which the
 * worker does not run; it must exist all the same. */
START_TEST(help_is_there)
{
	struct cli_run r;

	CLI(&r, "--session", "t", "help(len)");
	ck_code(&r, 0);
	ck_assert_msg(strncmp(r.out, "Help on built-in function len in module builtins:", 49) == 0,
	              "stdout: %s", r.out);
	cli_run_release(&r);
}
END_TEST

/* Output of a gigabyte cell: the first half of the cap, the marker, the last half. */
START_TEST(gigabyte_output_is_cut_with_marker)
{
	struct cli_run r;
	char *marker;

	CLI(&r, "--session", "t",
	    "import os\nb = b'o' * (1 << 20)\nfor _ in range(1024): os.write(1, b)");
	ck_code(&r, 0);
	marker = strstr(r.out, "\n[output truncated: kept the first 50000 and the last 50000 "
	                "chars; cut 1073641824 bytes (1073641824 chars) here]\n");
	ck_assert_ptr_nonnull(marker);
	ck_assert_int_eq(marker - r.out, 50000);
	cli_run_release(&r);
	CLI(&r, "--session", "t",
	    "import os\nb = b'\\x80' * (1 << 20)\nfor _ in range(1024): os.write(1, b)");
	ck_code(&r, 0);
	ck_assert(cli_has(r.out, "\n[output truncated: kept the first 50000 and the last 50000 "
	                  "chars; cut 1073641824 bytes (1073641824 chars) here]\n"));
	cli_run_release(&r);
}
END_TEST

START_TEST(invalid_utf8_and_nul_bytes_pass_through)
{
	static const char want[] = "a\xff\xfe" "b\0c\n\xc3(\0\n'\\udcff\\x00'\n";
	struct cli_run r;

	CLI(&r, "--session", "t",
	    "import os, sys\nos.write(1, b'a\\xff\\xfeb\\x00c\\n')\n"
	    "sys.stdout.buffer.write(b'\\xc3(\\x00\\n')\nsys.stderr.write('\\ud800\\n')\n"
	    "'\\udcff\\x00'");
	ck_code(&r, 0);
	ck_assert_uint_eq(r.out_len, sizeof(want) - 1);
	ck_assert(memcmp(r.out, want, sizeof(want) - 1) == 0);
	ck_assert_str_eq(r.err, "\\ud800\nsession now holds: os, sys\n");
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

START_TEST(escaped_daemon_is_gone)
{
	struct cli_run r;
	char pidfile[4300], code[9000], *text;
	pid_t daemon_pid;

	snprintf(pidfile, sizeof(pidfile), "%s/daemon.pid", fx.tmp);
	snprintf(code, sizeof(code),
	         "import os, time\nx = 2\n"
	         "if os.fork() == 0:\n"
	         "    os.setsid()\n"
	         "    if os.fork() == 0:\n"
	         "        open('%s.tmp', 'w').write(str(os.getpid()))\n"
	         "        os.rename('%s.tmp', '%s')\n"
	         "        time.sleep(1000)\n"
	         "    os._exit(0)\n"
	         "while not os.path.exists('%s'): time.sleep(0.01)\n"
	         "'done'", pidfile, pidfile, pidfile, pidfile);
	ok_call("t", BEFORE);
	CLI(&r, "--session", "t", code);
	ck_code(&r, 0);
	ck_out(&r, "'done'\n");
	cli_run_release(&r);
	text = cli_read_file(pidfile, NULL);
	ck_assert_ptr_nonnull(text);
	daemon_pid = (pid_t)atoi(text);
	free(text);
	ck_assert_int_gt(daemon_pid, 0);
	ck_assert(!cli_pid_alive(daemon_pid));
	ck_no_strays();
	ck_state("t", QUERY, NEW);
}
END_TEST

/* ---- hostile input from the caller ---- */

START_TEST(code_with_nul_bytes)
{
	struct cli_run r;

	ok_call("t", BEFORE);
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "x = 2\0\n", .stdin_len = 7 },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "SyntaxError: source code cannot contain null bytes\n");
	cli_run_release(&r);
	ck_state("t", QUERY, OLD);
}
END_TEST

START_TEST(code_with_invalid_utf8)
{
	struct cli_run r;

	ok_call("t", BEFORE);
	CLI(&r, "--session", "t", "x = '\xff\xfe'");
	ck_code(&r, 1);
	ck_err_has(&r, "SyntaxError: (unicode error) 'utf-8' codec can't decode byte 0xff");
	cli_run_release(&r);
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "x = 2\nz = '\xe9'\n" },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "SyntaxError: (unicode error) 'utf-8' codec can't decode byte 0xe9");
	cli_run_release(&r);
	ck_state("t", QUERY, OLD);
	/* Python itself lets undecodable bytes pass in a comment. */
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "# caf\xe9\nx = 2\n" },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_state("t", QUERY, NEW);
}
END_TEST

/* "x = 0", a comment of n bytes, "x + 1". */
static char *padded_code(size_t n)
{
	char *code = malloc(n + 32);

	ck_assert_ptr_nonnull(code);
	strcpy(code, "x = 0\n#");
	memset(code + 7, 'c', n);
	strcpy(code + 7 + n, "\nx + 1\n");
	return code;
}

START_TEST(fifty_megabytes_of_code_on_stdin)
{
	struct cli_run r;
	char *code = padded_code(50u << 20);

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = code },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	fprintf(stderr, "50 MB of code: %.2fs, peak RSS %ld kB\n", r.seconds, r.maxrss_kb);
	cli_run_release(&r);
	free(code);
}
END_TEST

START_TEST(code_past_the_stdin_cap_is_refused)
{
	struct cli_run r;
	char *code = padded_code((256u << 20) + 1);

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = code },
	        (const char *const[]){ "dolsot", "--session", "t", NULL });
	ck_code(&r, 2);
	ck_assert_str_eq(r.err, "dolsot: the code on stdin is larger than 256 MiB\n");
	ck_assert(!store_exists());
	cli_run_release(&r);
	free(code);
}
END_TEST

/* Linux refuses any single argument over 128 KiB (MAX_ARG_STRLEN) before
 * dolsot runs; the largest argument that fits works. */
START_TEST(megabyte_code_argument)
{
	char *big = padded_code(1u << 20), *fits = padded_code(120u << 10);
	const char *argv[] = { "dolsot", "--session", "t", big, NULL };
	struct cli_run r;
	pid_t pid;
	int st;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execv(cli_bin(), (char *const *)argv);
		_exit(errno == E2BIG ? 42 : 43);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 42, "execve of 1 MiB: status %d", st);
	CLI(&r, "--session", "t", fits);
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	cli_run_release(&r);
	free(big);
	free(fits);
}
END_TEST

/* A refusal: exit 2, one line, every byte printable, no store made. */
static void ck_refused(const struct cli_run *r, const char *needle)
{
	ck_code(r, 2);
	ck_out(r, "");
	ck_assert_msg(strchr(r->err, '\n') == r->err + r->err_len - 1, "not one line: %s", r->err);
	for (size_t i = 0; i + 1 < r->err_len; i++)
		ck_assert_msg((unsigned char)r->err[i] >= 0x20 && (unsigned char)r->err[i] < 0x7f,
		              "raw byte 0x%02x in: %s", (unsigned char)r->err[i], r->err);
	ck_err_has(r, needle);
	ck_assert_msg(!store_exists(), "the store was touched");
}

START_TEST(hostile_session_ids)
{
	static const char *const ids[] = {
		"caf\xc3\xa9", "\xe2\x98\x83", "\xff\xfe", "a;rm -rf ~", "$(id)", "`id`",
		"a b", "a|b", "a&b", "a>b", "*", "~x", "a\nb", "a\tb", "\x1b[31mred",
		"'quoted'", "\"dq\"", "a\\b", "../x", "x/", "/abs", ".", "..", "",
	};
	struct cli_run r;

	for (size_t i = 0; i < sizeof(ids) / sizeof(*ids); i++) {
		CLI(&r, "--session", ids[i], "1");
		ck_refused(&r, "invalid session id");
		cli_run_release(&r);
		CLI(&r, "--reset", ids[i]);
		ck_refused(&r, "invalid session id");
		cli_run_release(&r);
	}
}
END_TEST

START_TEST(timeouts_at_the_limits)
{
	static const char *const bad[] = {
		"1e308", "-0", "nan", "inf", "-inf", "infinity", "NaN(1)", "0", "-1",
		"31622401", "1e400", "4e-400", " 5", "5 ", "5s", "", "0x", "1e",
	};
	struct cli_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CLI(&r, "--session", "t", "--timeout", bad[i], "1");
		ck_refused(&r, "--timeout '");
		cli_run_release(&r);
	}
	/* A hex float works (see longest_timeout_works for the maximum). */
	CLI(&r, "--session", "t", "--timeout", "0x1p4", "2");
	ck_code(&r, 0);
	ck_out(&r, "2\n");
	cli_run_release(&r);
	/* A timeout too short to start Python is a timeout, not a crash. */
	CLI(&r, "--session", "t", "--timeout", "1e-300", "x = 1");
	ck_code(&r, 124);
	ck_err_has(&r, "TimeoutError: cell killed after exceeding its 1e-300s timeout");
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

/* The longest timeout allowed, 366 days, on a warm server too, where it
 * once overflowed an int of milliseconds. */
START_TEST(longest_timeout_works)
{
	struct cli_run r;

	for (int i = 0; i < 2; i++) {
		CLI(&r, "--session", "t", "--timeout", "31622400", "1");
		ck_code(&r, 0);
		ck_out(&r, "1\n");
		cli_run_release(&r);
	}
}
END_TEST

START_TEST(numeric_variables_at_the_limits)
{
	struct cli_run r;

	RUN_ENV(&r, ((const char *[]){ "DOLSOT_MAX_OUTPUT=18446744073709551615", NULL }),
	        "--session", "t", "'v' * 3");
	ck_code(&r, 0);
	ck_out(&r, "'vvv'\n");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_MAX_OUTPUT=18446744073709551616", NULL }),
	        "--session", "t", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_MAX_OUTPUT='18446744073709551616' is not valid");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=1e308", NULL }), "--session", "t", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_TIMEOUT='1e308' is not valid");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_SESSION_TTL_DAYS=-0", NULL }),
	        "--session", "t", "1");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_SESSION_TTL_DAYS=nan", NULL }),
	        "--session", "t", "1");
	ck_code(&r, 2);
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_SERVER_IDLE=inf", NULL }), "--session", "t", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_SERVER_IDLE='inf' is not valid");
	cli_run_release(&r);
}
END_TEST

START_TEST(junk_environment)
{
	static char big[100010];
	struct cli_run r;

	memcpy(big, "BIG=", 4);
	memset(big + 4, 'b', 100000);
	RUN_ENV(&r, ((const char *[]){
		"PYTHONPATH=\xff:/no\x01where::", "LANG=xx_YY.junk", "LC_ALL=\xff",
		"TZ=\xff", "HOME", "PATH", "PYTHONHOME=/nonexistent", "PYTHONSTARTUP=/etc/passwd",
		"PYTHONINSPECT=1", "PYTHONSAFEPATH=1", "VIRTUAL_ENV=relative/venv",
		"DOLSOT_NO_SUCH_SETTING=\xff", "DOLSOT_TIMEOUT=", big, NULL }),
	        "--session", "t", "import os\nlen(os.environ['BIG']), os.environ['LANG']");
	ck_code(&r, 0);
	ck_out(&r, "(100000, 'xx_YY.junk')\n");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_SERVER=\xff\xfe", NULL }), "--session", "t", "1");
	ck_code(&r, 2);
	ck_assert_str_eq(r.err, "dolsot: DOLSOT_SERVER='\\xff\\xfe' is not valid: "
	                        "expected auto or off\n");
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

/* Environment entries without '=' and thousands of variables: only execve
 * can hand those over. */
START_TEST(raw_environment_entries)
{
	enum { N = 5000 };
	char **env = calloc(N + 8, sizeof(*env)), outpath[4300];
	const char *argv[] = { "dolsot", "--session", "t",
	                       "import os\nsum(k.startswith('JUNK') for k in os.environ)", NULL };
	size_t n = 0;
	pid_t pid;
	int st;
	char *out;

	env[n++] = fx.store_env;
	env[n++] = (char *)"NOEQUALSIGN";
	env[n++] = (char *)"=startswithequals";
	if (getenv("DOLSOT_SERVER"))
		asprintf(&env[n++], "DOLSOT_SERVER=%s", getenv("DOLSOT_SERVER"));
	for (int i = 0; i < N; i++)
		asprintf(&env[n++], "JUNK%d=v%d", i, i);
	snprintf(outpath, sizeof(outpath), "%s/out", fx.tmp);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(fd, 1);
		dup2(null, 2);
		execve(cli_bin(), (char *const *)argv, env);
		_exit(126);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	out = cli_read_file(outpath, NULL);
	ck_assert_str_eq(out, "5000\n");
	free(out);
	ck_no_strays();
}
END_TEST

START_TEST(too_many_toolboxes_is_a_usage_error)
{
	const char *argv[600];
	char specs[257][32];
	struct cli_run r;
	size_t n = 0;

	argv[n++] = "dolsot";
	for (int i = 0; i < 257; i++) {
		snprintf(specs[i], sizeof(specs[i]), "json:j%d", i);
		argv[n++] = "--toolbox";
		argv[n++] = specs[i];
	}
	argv[n++] = "--session";
	argv[n++] = "t";
	argv[n++] = "j0.dumps(1)";
	argv[n] = NULL;
	cli_run(&r, &(struct cli_opts){ .env = fx.env }, argv);
	ck_refused(&r, "too many --toolbox options: at most 256");
	cli_run_release(&r);
	/* 256 is fine. */
	argv[1 + 2 * 256] = "--session";
	argv[2 + 2 * 256] = "t";
	argv[3 + 2 * 256] = "j255.dumps(1)";
	argv[4 + 2 * 256] = NULL;
	cli_run(&r, &(struct cli_opts){ .env = fx.env }, argv);
	ck_code(&r, 0);
	ck_out(&r, "'1'\n");
	cli_run_release(&r);
}
END_TEST

/* --reset ID waits for a call in flight; --reset all does not: it keeps
 * the busy session and says so. */
START_TEST(reset_all_does_not_wait_for_a_busy_session)
{
	struct cli_run r;
	char lockpath[4300];
	int fd;

	ok_call("t", BEFORE);
	snprintf(lockpath, sizeof(lockpath), "%s/t.lock", fx.store);
	fd = open(lockpath, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=0.3", NULL }), "--reset", "t");
	ck_code(&r, 1);
	ck_err_has(&r, "session 't' is busy");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ "DOLSOT_TIMEOUT=0.3", NULL }), "--reset", "all");
	ck_code(&r, 0);
	ck_out(&r, "reset all: removed 0 session(s); kept, in use by a call: t\n");
	cli_run_release(&r);
	close(fd);
	RUN_ENV(&r, ((const char *[]){ NULL }), "--reset", "all");
	ck_code(&r, 0);
	ck_out(&r, "reset all: removed 1 session(s)\n");
	cli_run_release(&r);
}
END_TEST

/* ---- hostile session directories ---- */

static void ck_one_line_failure(const struct cli_run *r, const char *needle)
{
	ck_code(r, 1);
	ck_out(r, "");
	ck_assert_msg(strncmp(r->err, "dolsot: ", 8) == 0, "stderr: %s", r->err);
	ck_assert_msg(strchr(r->err, '\n') == r->err + r->err_len - 1, "not one line: %s", r->err);
	ck_err_has(r, needle);
}

START_TEST(cache_dir_refusals)
{
	struct cli_run r;
	char target[4300], below[4400], env_below[4500], env_long[8200], longdir[8000];

	cli_write_file(fx.store, "not a directory\n");
	CLI(&r, "--session", "t", "1");
	ck_one_line_failure(&r, "refusing session directory");
	ck_err_has(&r, "not a directory");
	cli_run_release(&r);
	snprintf(below, sizeof(below), "%s/sub", fx.store);
	snprintf(env_below, sizeof(env_below), "DOLSOT_CACHE_DIR=%s", below);
	RUN_ENV(&r, ((const char *[]){ env_below, NULL }), "--session", "t", "1");
	ck_one_line_failure(&r, "Not a directory");
	cli_run_release(&r);
	unlink(fx.store);
	/* A dangling symlink is refused, and nothing is made where it points. */
	snprintf(target, sizeof(target), "%s/elsewhere", fx.tmp);
	ck_assert_int_eq(symlink(target, fx.store), 0);
	CLI(&r, "--session", "t", "1");
	ck_one_line_failure(&r, "it is a symbolic link");
	cli_run_release(&r);
	snprintf(env_below, sizeof(env_below), "DOLSOT_CACHE_DIR=%s/", fx.store);
	RUN_ENV(&r, ((const char *[]){ env_below, NULL }), "--session", "t", "1");
	ck_one_line_failure(&r, "it is a symbolic link");
	cli_run_release(&r);
	ck_assert_int_ne(access(target, F_OK), 0);
	/* A path too long for the kernel is named, cut, in one line. */
	memset(longdir, 'd', 6000);
	longdir[6000] = '\0';
	snprintf(env_long, sizeof(env_long), "DOLSOT_CACHE_DIR=%s/%s", fx.tmp, longdir);
	RUN_ENV(&r, ((const char *[]){ env_long, NULL }), "--session", "t", "1");
	ck_one_line_failure(&r, "cannot create session directory");
	ck_assert_uint_lt(r.err_len, 1000);
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

/*
 * Issue 35: another local user made the victim's default directory,
 * {TMPDIR}/dolsot-UID, first.  The victim's calls still work: in
 * $XDG_RUNTIME_DIR/dolsot when that is the victim's and 0700, else in
 * $HOME/.cache/dolsot/store, else in a mkdtemp directory the next call finds
 * again; each says where on stderr, and the warm server follows.
 */
struct victim {
	uid_t uid;
	gid_t gid;
	const char *env[CLI_TEST_ENV_MAX + 8];
	const char *home;
};

static void victim_run(const struct victim *v, struct cli_run *r, const char *const *argv)
{
	cli_run(r, &(struct cli_opts){ .env = v->env, .cwd = v->home, .drop = true,
	                               .uid = v->uid, .gid = v->gid }, argv);
}

/* Two calls of the victim keep x; each says that the default was taken
 * and that sessions went to a directory starting with dir; the session
 * and the warm server's socket are in its sessions/. */
static void ck_victim_keeps_state(struct victim *v, const char *def, unsigned attacker,
                                  const char *dir)
{
	char say[3 * PATH_MAX], kept[PATH_MAX], path[PATH_MAX + 32];
	const char *at;
	struct cli_run r;
	size_t n = 0;

	snprintf(say, sizeof(say), "dolsot: the default directory %s is not usable (owned by "
	         "uid %u, not %u)", def, attacker, (unsigned)v->uid);
	victim_run(v, &r, (const char *const[]){ "dolsot", "--session", "t", "x = 41", NULL });
	ck_code(&r, 0);
	ck_err_has(&r, say);
	at = strstr(r.err, "kept in ");
	ck_assert_ptr_nonnull(at);
	at += 8;
	while (at[n] && at[n] != ' ' && at[n] != ',' && n < sizeof(kept) - 1)
		n++;
	snprintf(kept, sizeof(kept), "%.*s", (int)n, at);
	ck_assert_msg(strncmp(kept, dir, strlen(dir)) == 0, "kept in %s, want %s", kept, dir);
	cli_run_release(&r);
	victim_run(v, &r, (const char *const[]){ "dolsot", "--session", "t", "x + 1", NULL });
	ck_code(&r, 0);
	ck_out(&r, "42\n");
	ck_err_has(&r, say);
	ck_err_has(&r, kept);
	cli_run_release(&r);
	snprintf(path, sizeof(path), "%s/sessions/t.pkl", kept);
	ck_assert_msg(cli_exists(path), "no %s", path);
	/* The warm server's socket is made beside the sessions too. */
	for (n = 0; v->env[n]; n++)
		;
	v->env[n] = "DOLSOT_SERVER=auto";
	victim_run(v, &r, (const char *const[]){ "dolsot", "--server-start", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	snprintf(path, sizeof(path), "%s/sessions/.server.sock", kept);
	ck_assert_msg(cli_exists(path), "no %s", path);
	victim_run(v, &r, (const char *const[]){ "dolsot", "--server-stop", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	v->env[n] = NULL;
}

START_TEST(default_dir_made_by_another_user)
{
	struct victim v = { 0 };
	struct cli_run r;
	uid_t att;
	gid_t attg;
	char *bin_dir, tmp[PATH_MAX], home[PATH_MAX], xdg[PATH_MAX], def[PATH_MAX + 32],
	     env_tmp[PATH_MAX + 16], env_home[PATH_MAX + 16], env_xdg[PATH_MAX + 32],
	     want[PATH_MAX + 32], *mine;
	size_t n = 0, at;

	if (geteuid() != 0 || !cli_local_user(CLI_TEST_USER, &v.uid, &v.gid) ||
	    !cli_local_user(CLI_TEST_USER "2", &att, &attg)) {
		printf("SKIP: %s: needs root and two local users\n", __func__);
		return;
	}
	bin_dir = cli_bin_shared_copy();
	ck_assert_int_eq(chmod(fx.tmp, 0755), 0);
	snprintf(tmp, sizeof(tmp), "%s/tmp", fx.tmp);
	snprintf(home, sizeof(home), "%s/home", fx.tmp);
	snprintf(xdg, sizeof(xdg), "%s/xdg", fx.tmp);
	ck_assert_int_eq(mkdir(tmp, 0700), 0);
	ck_assert_int_eq(chmod(tmp, 01777), 0);
	ck_assert_int_eq(mkdir(home, 0755), 0);
	ck_assert_int_eq(mkdir(xdg, 0700), 0);
	ck_assert_int_eq(chown(home, v.uid, v.gid), 0);
	ck_assert_int_eq(chown(xdg, v.uid, v.gid), 0);
	/* The other user makes the victim's default directory, open to all. */
	snprintf(def, sizeof(def), "%s/dolsot-%u", tmp, (unsigned)v.uid);
	cli_run(&r, &(struct cli_opts){ .prog = "/bin/mkdir", .drop = true, .uid = att,
	                                .gid = attg },
	        (const char *const[]){ "mkdir", "-m", "0777", def, NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	for (size_t i = 0; fx.env[i]; i++)
		if (strncmp(fx.env[i], "DOLSOT_CACHE_DIR=", 17) != 0)
			v.env[n++] = fx.env[i];
	snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
	snprintf(env_home, sizeof(env_home), "HOME=%s", home);
	snprintf(env_xdg, sizeof(env_xdg), "XDG_RUNTIME_DIR=%s", xdg);
	v.env[n++] = "DOLSOT_CACHE_DIR";
	v.env[n++] = env_tmp;
	v.env[n++] = env_home;
	at = n;
	v.env[n++] = env_xdg;
	v.home = home;
	snprintf(want, sizeof(want), "%s/dolsot", xdg);
	ck_victim_keeps_state(&v, def, (unsigned)att, want);
	/* Without a runtime directory: the home's cache. */
	v.env[at] = "XDG_RUNTIME_DIR";
	snprintf(want, sizeof(want), "%s/.cache/dolsot/store", home);
	ck_victim_keeps_state(&v, def, (unsigned)att, want);
	/* Without either: a directory of the victim's own in TMPDIR. */
	v.env[at] = "XDG_RUNTIME_DIR";
	snprintf(env_home, sizeof(env_home), "HOME=%s/none", fx.tmp);
	snprintf(want, sizeof(want), "%s/dolsot-%u.", tmp, (unsigned)v.uid);
	ck_victim_keeps_state(&v, def, (unsigned)att, want);
	/* The other user's directory was left alone, and nothing went in it. */
	mine = cli_path(def, "sessions");
	ck_assert_msg(!cli_exists(mine), "%s was made", mine);
	ck_assert_int_eq(cli_wait_no_strays(env_tmp, 5, want, sizeof(want)), 0);
	cli_rmtree(bin_dir);
	free(bin_dir);
}
END_TEST

/*
 * A tmpfs of our own (we run as root), in a mount namespace of this test
 * process and what it starts, so that it goes away with them even if the
 * test dies.  SKIP where mounting is not allowed.
 */
static bool mount_tmpfs(const char *dir, const char *opts)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return false;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, opts) < 0) {
		printf("SKIP: cannot mount a tmpfs (%s)\n", strerror(errno));
		return false;
	}
	snprintf(mounted, sizeof(mounted), "%s", dir);
	return true;
}

START_TEST(cache_dir_on_a_read_only_filesystem)
{
	struct cli_run r;
	char mnt[4300], env_ro[4400], pkl[4400], *before, *after;

	snprintf(mnt, sizeof(mnt), "%s/ro", fx.tmp);
	if (!mount_tmpfs(mnt, "size=4m,mode=0700"))
		return;
	snprintf(env_ro, sizeof(env_ro), "DOLSOT_CACHE_DIR=%s/store", mnt);
	snprintf(pkl, sizeof(pkl), "%s/store/t.pkl", mnt);
	RUN_ENV(&r, ((const char *[]){ env_ro, "DOLSOT_SERVER=off", NULL }), "--session", "t", BEFORE);
	ck_code(&r, 0);
	cli_run_release(&r);
	before = cli_read_file(pkl, NULL);
	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
	RUN_ENV(&r, ((const char *[]){ env_ro, NULL }), "--session", "t", "x = 2");
	ck_one_line_failure(&r, "Read-only file system");
	ck_err_has(&r, "session 't'");
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ env_ro, NULL }), "--list-sessions");
	ck_code(&r, 0);
	ck_assert(cli_has(r.out, "t\t"));
	cli_run_release(&r);
	RUN_ENV(&r, ((const char *[]){ env_ro, NULL }), "--reset", "t");
	ck_one_line_failure(&r, "Read-only file system");
	cli_run_release(&r);
	after = cli_read_file(pkl, NULL);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	ck_no_strays();
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *cell = tcase_create("cells"), *input = tcase_create("input"),
	      *dirs = tcase_create("directories"), *sigs = tcase_create("signals");

	tcase_add_checked_fixture(cell, setup, teardown);
	tcase_add_checked_fixture(input, setup_plain, teardown);
	tcase_add_checked_fixture(dirs, setup_plain, teardown);
	tcase_add_checked_fixture(sigs, setup, teardown);
	tcase_set_timeout(sigs, 120);
	tcase_add_loop_test(sigs, cells_get_their_signals, 0, 4);
	tcase_set_timeout(cell, 120);
	tcase_set_timeout(input, 120);
	tcase_set_timeout(dirs, 120);
	tcase_add_loop_test(cell, hostile_cell, 0, (int)n_cells);
	tcase_add_test(cell, gigabyte_output_is_cut_with_marker);
	tcase_add_test(cell, cell_lines_that_look_like_dolsots_are_marked);
	tcase_add_test(cell, help_is_there);
	tcase_add_test(cell, invalid_utf8_and_nul_bytes_pass_through);
	tcase_add_test(cell, escaped_daemon_is_gone);
	tcase_add_test(cell, longest_timeout_works);
	tcase_add_test(input, code_with_nul_bytes);
	tcase_add_test(input, code_with_invalid_utf8);
	tcase_add_test(input, fifty_megabytes_of_code_on_stdin);
	tcase_add_test(input, code_past_the_stdin_cap_is_refused);
	tcase_add_test(input, megabyte_code_argument);
	tcase_add_test(input, hostile_session_ids);
	tcase_add_test(input, timeouts_at_the_limits);
	tcase_add_test(input, numeric_variables_at_the_limits);
	tcase_add_test(input, junk_environment);
	tcase_add_test(input, raw_environment_entries);
	tcase_add_test(input, too_many_toolboxes_is_a_usage_error);
	tcase_add_test(input, reset_all_does_not_wait_for_a_busy_session);
	tcase_add_test(dirs, cache_dir_refusals);
	tcase_add_test(dirs, cache_dir_on_a_read_only_filesystem);
	tcase_add_test(dirs, default_dir_made_by_another_user);
	suite_add_tcase(s, cell);
	suite_add_tcase(s, input);
	suite_add_tcase(s, dirs);
	suite_add_tcase(s, sigs);
	return s;
}

int main(void)
{
	return ck_run(hostile_suite());
}
