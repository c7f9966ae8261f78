/*
 * check_valgrind.c - the C side of dolsot under valgrind memcheck.
 *
 * Each case runs real calls of the built binary under valgrind and fails
 * on any memcheck error or leak (exit 99), with CPython's own allocations
 * suppressed by tests/lib/valgrind.supp (see there why).  On the cold path
 * valgrind follows the forked worker too; on the warm path the server is
 * started without valgrind and the calls checked are the clients the
 * server serves warm.  Run by `make valgrind`, not by `make check`: a
 * cold worker under valgrind takes seconds.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

#define VG_ERROR 99

static char *tmp;
static char store_env[4300];
static const char *env_off[8], *env_auto[8];

static const char *const valgrind[] = {
	"valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
	"--errors-for-leak-kinds=definite,possible", "--show-leak-kinds=definite,possible",
	"--suppressions=tests/lib/valgrind.supp", "--num-callers=30", NULL,
};

static void setup(void)
{
	tmp = cli_tempdir();
	snprintf(store_env, sizeof(store_env), "DOLSOT_CACHE_DIR=%s/store", tmp);
	env_off[0] = env_auto[0] = store_env;
	env_off[1] = "DOLSOT_SERVER=off";
	env_auto[1] = "DOLSOT_SERVER=auto";
	env_off[2] = env_auto[2] = "DOLSOT_TIMEOUT=240";
	env_off[3] = env_auto[3] = NULL;
}

static void teardown(void)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = env_auto },
	        (const char *const[]){ "dolsot", "--server-stop", NULL });
	cli_run_release(&r);
	cli_rmtree(tmp);
	free(tmp);
}

/* One call under valgrind: dolsot must exit want, valgrind find nothing. */
static void vg_call(const char *const *env, const char *stdin_code, int want,
                    const char *const *argv)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = env, .wrapper = valgrind, .timeout = 300,
	                                .stdin_data = stdin_code }, argv);
	ck_assert_msg(r.code != VG_ERROR, "valgrind found errors in dolsot %s:\n%s", argv[1],
	              r.err);
	ck_assert_msg(r.code == want, "dolsot %s: exit %d, want %d\n%s", argv[1], r.code, want,
	              r.err);
	cli_run_release(&r);
}

#define VG(env, want, ...) vg_call((env), NULL, (want), \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })

/* A value with a 1x1 PNG form: an image display without matplotlib. */
static const char png_cell[] =
	"import struct, zlib\n"
	"def chunk(t, d):\n"
	"    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
	"png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 0, 0, 0, 0))"
	" + chunk(b'IDAT', zlib.compress(b'\\0\\0')) + chunk(b'IEND', b''))\n"
	"class Dot:\n"
	"    def _repr_png_(self):\n        return png\n"
	"    def _repr_html_(self):\n        return '<b>dot</b>'\n"
	"Dot()";

/* The calls every path gets: values, drops, a toolbox, failures, stdin,
 * a timeout, --json, images (a file, then inline), --describe, and the
 * store commands (--reset removing the images). */
static void run_calls(const char *const *env)
{
	struct cli_run r;
	bool sandboxed;

	VG(env, 0, "--toolbox", "json:js", "--session", "v",
	   "import socket, collections\nx = 1\ns = socket.socket()\n"
	   "d = collections.OrderedDict(a=1)\ndef f(a):\n    return a\nprint(js.dumps([x]))\nx");
	VG(env, 1, "--session", "v", "x = 2\nraise ValueError('boom')");
	vg_call(env, "x + 1\n", 0, (const char *const[]){ "dolsot", "--session", "v", NULL });
	VG(env, 124, "--session", "v", "--timeout", "2", "import time\ntime.sleep(30)");
	VG(env, 2, "--session", "v", "--timeout", "nan", "1");
	VG(env, 0, "--session", "v", png_cell);
	VG(env, 0, "--json", "--session", "v", png_cell);
	VG(env, 1, "--json", "--session", "v", "y = x\n1 / 0");
	VG(env, 0, "--describe", "--session", "v");
	VG(env, 0, "--json", "--list-sessions");
	/* The limits (as root: the pids and memory cgroups); --memory leaves
	 * room for valgrind's own pages.  valgrind cannot run a sandboxed call
	 * (it lacks open_tree and the other new mount calls): a sandboxed call
	 * without it writes a session, whose load without the sandbox, under
	 * valgrind, is refused. */
	VG(env, 0, "--session", "lim", "--max-procs", "64", "--memory", "8G",
	   "--max-file-size", "1G", "--cpu-seconds", "600", "x = 1\nx");
	cli_run(&r, &(struct cli_opts){ .env = env },
	        (const char *const[]){ "dolsot", "--session", "sb", "--sandbox", "x = 1", NULL });
	sandboxed = r.code == 0;
	cli_run_release(&r);
	if (sandboxed)
		VG(env, 1, "--session", "sb", "x");
	VG(env, 0, "--list-sessions");
	VG(env, 0, "--json", "--reset", "v");
	VG(env, 0, "--reset", "v");
}

START_TEST(cold_calls_are_clean)
{
	run_calls(env_off);
}
END_TEST

/* "calls N warm" from --server-status. */
static long warm_calls(void)
{
	struct cli_run r;
	const char *p;
	long n = -1;

	cli_run(&r, &(struct cli_opts){ .env = env_auto },
	        (const char *const[]){ "dolsot", "--server-status", NULL });
	if ((p = strstr(r.out, "calls ")))
		sscanf(p, "calls %ld warm", &n);
	cli_run_release(&r);
	return n;
}

START_TEST(warm_calls_are_clean)
{
	struct cli_run r;
	long before;

	cli_run(&r, &(struct cli_opts){ .env = env_auto },
	        (const char *const[]){ "dolsot", "--server-start", NULL });
	ck_assert_msg(r.code == 0, "%s", r.err);
	cli_run_release(&r);
	/* valgrind adds to the environment, which picks zygotes of its own:
	 * warm them the same way, so the calls checked are served warm. */
	VG(env_auto, 0, "--server-start");
	VG(env_auto, 0, "--server-start", "--toolbox", "json:js");
	before = warm_calls();
	run_calls(env_auto);
	VG(env_auto, 0, "--server-status");
	ck_assert_msg(warm_calls() >= before + 4, "calls were not served warm: %ld, then %ld",
	              before, warm_calls());
}
END_TEST

int main(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("memcheck");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 3000);
	tcase_add_test(tc, cold_calls_are_clean);
	tcase_add_test(tc, warm_calls_are_clean);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
