/*
 * check_sandbox_enter.c - sandbox_enter() called the way a warm fork server
 * will call it: in a child forked from a long-lived process whose Python is
 * already initialized, with extra threads running (as OpenBLAS starts) and
 * file descriptors open, including a directory.  Run as root and, when the
 * suite's unprivileged user exists, as that user.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "sandbox.h"

#define TEST_USER "dolsot-test"

static void start_python(void)
{
	PyConfig c;
	PyStatus st;

	PyConfig_InitIsolatedConfig(&c);
	c.site_import = 0;
	st = PyConfig_SetBytesString(&c, &c.home, PY_PREFIX);
	ck_assert(!PyStatus_Exception(st));
	st = Py_InitializeFromConfig(&c);
	PyConfig_Clear(&c);
	ck_assert_msg(!PyStatus_Exception(st), "Python did not start");
}

/* In the child: enter, then let Python report what it sees to fd w. */
static void child(int w, const struct passwd *drop)
{
	int keep[] = { w };
	char *env[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", NULL };
	struct sandbox_cfg cfg = { .env = env, .keep_fds = keep, .n_keep_fds = 1 };
	char err[SANDBOX_ERR_MAX], code[1024];

	PyOS_AfterFork_Child();
	if (drop && (setgroups(0, NULL) < 0 || setresgid(drop->pw_gid, drop->pw_gid, drop->pw_gid) < 0 ||
	             setresuid(drop->pw_uid, drop->pw_uid, drop->pw_uid) < 0))
		_exit(3);
	if (sandbox_enter(&cfg, err, sizeof(err)) < 0) {
		dprintf(w, "error: %s", err);
		_exit(1);
	}
	/* The sandboxed process is a fork as well. */
	PyOS_AfterFork_Child();
	/* os.environ is Python's snapshot from before: the C environment is
	 * what sandbox_enter sets (worker.py copies it into os.environ). */
	snprintf(code, sizeof(code),
	         "import ctypes, os, stat, threading\n"
	         "getenv = ctypes.CDLL(None).getenv\ngetenv.restype = ctypes.c_char_p\n"
	         "res = (os.getpid(), sorted(os.listdir('/proc'))[:1], os.path.exists('/etc/shadow'),\n"
	         "       stat.S_ISCHR(os.fstat(zdir).st_mode), zfile.read(10),\n"
	         "       threading.active_count(), getenv(b'HOME'), getenv(b'USER'), os.getcwd())\n"
	         "os.write(%d, repr(res).encode())\n", w);
	_exit(PyRun_SimpleString(code) == 0 ? 0 : 2);
}

static void enter_from_warm_process(const struct passwd *drop)
{
	int p[2], st;
	char buf[1024] = "";
	ssize_t n, got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	PyOS_BeforeFork();
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1], drop);
	}
	PyOS_AfterFork_Parent();
	ck_assert_int_gt(pid, 0);
	close(p[1]);
	while ((n = read(p[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, buf);
	/* PID 1, its own /proc, no /etc/shadow, the inherited directory fd
	 * now /dev/null, the open file empty, one thread, the given env. */
	ck_assert_str_eq(buf, "(1, ['1'], False, True, '', 1, b'/tmp', None, '/tmp')");
}

START_TEST(enter_from_a_forked_warm_python)
{
	static bool started;
	struct passwd *pw = getpwnam(TEST_USER);

	if (!started) {
		start_python();
		/* What a warm server holds: a thread, a directory fd, an open file. */
		ck_assert_int_eq(PyRun_SimpleString(
			"import os, threading, time\n"
			"threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
			"zdir = os.open('/etc', os.O_RDONLY | os.O_DIRECTORY)\n"
			"zfile = open(os.__file__)\n"), 0);
		started = true;
	}
	if (unshare(CLONE_NEWUSER) == 0 || errno != EINVAL)
		ck_abort_msg("a multithreaded process should not be able to unshare a user namespace");
	enter_from_warm_process(NULL);
	if (geteuid() == 0 && pw)
		enter_from_warm_process(pw);
	else
		printf("SKIP: the unprivileged run: no user %s (check_sandbox makes it)\n", TEST_USER);
}
END_TEST

static bool userns_available(void)
{
	pid_t kid = fork();
	int st;

	if (kid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	return kid > 0 && waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
	Suite *s = suite_create("sandbox_enter");
	TCase *tc = tcase_create("warm");

	if (!userns_available()) {
		printf("SKIP: check_sandbox_enter: user namespaces are not available here\n");
		return 0;
	}
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, enter_from_a_forked_warm_python);
	suite_add_tcase(s, tc);
	/* Python stays up in this process, as in the server. */
	return ck_run_with(s, CK_NOFORK);
}
