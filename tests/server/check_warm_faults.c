/*
 * check_warm_faults.c - the warm path when a process stops answering
 * (issue 21): a frozen zygote or server, a cell that leaves a process
 * in uninterruptible sleep, a zygote killed while serving, another build
 * or a copy of this one, and more environments than the old count bound.
 * Each case runs the real binary against a private store; whatever a case
 * freezes it kills or thaws before it ends.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

/* The README's grace: how long past its --timeout a call may take. */
#define GRACE 3.0
/* What the machine's load may add on top, for the bounds (never a
 * performance assertion: only that nothing waits without end). */
#define SLACK 30.0

static struct cli_test fx;

/* What a case froze, undone however it ends (a failed check exits the
 * case's process): a stopped server or zygote is killed, the freezer
 * cgroup thawed, emptied and removed. */
static pid_t stopped;
static char frozen_cg[256];
static const char *frozen_cg_file;

static void thaw_and_remove(const char *dir, const char *freeze_file);

static void release_frozen(void)
{
	if (stopped > 0)
		kill(stopped, SIGKILL);
	stopped = 0;
	if (frozen_cg[0])
		thaw_and_remove(frozen_cg, frozen_cg_file);
	frozen_cg[0] = '\0';
}

static void setup(void)
{
	static bool registered;

	if (!registered)
		atexit(release_frozen);
	registered = true;
	cli_test_begin_server(&fx);
}

static void teardown(void)
{
	release_frozen();
	cli_test_end(&fx);
}

static void server_start_in(const char *cwd)
{
	struct cli_run r;

	RUN_IN(&r, cwd, NULL, "--server-start");
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* A number after "label " in --server-status (0 when absent or none runs). */
static long status_number(const char *label)
{
	struct cli_run r;
	long v = 0;
	const char *p;

	CLI(&r, "--server-status");
	p = r.code == 0 ? strstr(r.out, label) : NULL;
	if (p)
		v = strtol(p + strlen(label), NULL, 10);
	cli_run_release(&r);
	return v;
}

static pid_t server_pid(void) { return (pid_t)status_number("pid "); }
static pid_t zygote_pid(void) { return (pid_t)status_number("zygote "); }
static long warm_calls(void) { return status_number("calls "); }

/* pid is gone (or a zombie) within seconds. */
static bool wait_gone(pid_t pid, double seconds)
{
	double until = cli_now() + seconds;

	while (cli_pid_alive(pid) && cli_now() < until)
		usleep(10000);
	return !cli_pid_alive(pid);
}

/* --server-status contains s, within seconds. */
static bool status_says(const char *s, double seconds)
{
	double until = cli_now() + seconds;

	do {
		struct cli_run r;
		bool has;

		CLI(&r, "--server-status");
		has = cli_has(r.out, s);
		cli_run_release(&r);
		if (has)
			return true;
		usleep(100000);
	} while (cli_now() < until);
	return false;
}

/* One call that must succeed with stdout want, within its timeout plus
 * the grace (and the slack a loaded machine needs). */
static void call_ok(const char *session, const char *code, const char *want, double timeout)
{
	struct cli_run r;
	char t[32];

	snprintf(t, sizeof(t), "%g", timeout);
	CLI(&r, "--timeout", t, "--session", session, code);
	ck_code(&r, 0);
	ck_out(&r, want);
	ck_assert_msg(r.seconds < timeout + GRACE + SLACK, "took %.1f s", r.seconds);
	cli_run_release(&r);
}

/* With a warm session t holding x = 1, send sig to the process which()
 * names. */
static pid_t warm_then_signal(pid_t (*which)(void), int sig)
{
	pid_t pid;

	server_start_in(NULL);
	call_ok("t", "x = 1\nx", "1\n", 20);
	pid = which();
	ck_assert_int_gt(pid, 0);
	if (sig == SIGSTOP)
		stopped = pid;
	ck_assert_int_eq(kill(pid, sig), 0);
	return pid;
}

START_TEST(frozen_zygote_falls_back_cold_and_is_replaced)
{
	struct cli_run r;
	pid_t zygote = warm_then_signal(zygote_pid, SIGSTOP);
	long warm;

	/* The next calls give up on it before their cells start and run cold. */
	call_ok("t", "x += 1\nx", "2\n", 8);
	call_ok("t", "x += 1\nx", "3\n", 8);
	/* The server is not held up by it. */
	CLI(&r, "--server-status");
	ck_code(&r, 0);
	ck_assert_msg(r.seconds < 5 + SLACK, "status took %.1f s", r.seconds);
	cli_run_release(&r);
	/* It is killed and replaced, and the status says why. */
	ck_assert_msg(status_says("read no call for 5 s", 40), "the frozen zygote stays");
	ck_assert_msg(wait_gone(zygote, 10), "zygote %d still runs", (int)zygote);
	stopped = 0;   /* the server killed it */
	server_start_in(NULL);
	warm = warm_calls();
	call_ok("t", "x", "3\n", 20);
	ck_assert_int_gt(warm_calls(), warm);
}
END_TEST

START_TEST(frozen_server_falls_back_cold_and_status_times_out)
{
	struct cli_run r;
	warm_then_signal(server_pid, SIGSTOP);

	call_ok("t", "x += 1\nx", "2\n", 8);
	CLI(&r, "--server-status");
	ck_code(&r, 1);
	ck_err_has(&r, "the server does not answer");
	ck_assert_msg(r.seconds < 5 + GRACE + SLACK, "status took %.1f s", r.seconds);
	cli_run_release(&r);
	release_frozen();
	call_ok("t", "x", "2\n", 20);
}
END_TEST

#define CLIENTS 200

/* Every one of many concurrent calls against a frozen server ends within
 * its deadline plus the grace, and succeeds (cold). */
START_TEST(two_hundred_clients_against_a_frozen_server)
{
	pid_t kids[CLIENTS];
	int bad = 0;

	warm_then_signal(server_pid, SIGSTOP);
	for (int i = 0; i < CLIENTS; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			struct cli_run r;
			char sid[16];
			int ok;

			snprintf(sid, sizeof(sid), "s%d", i);
			CLI(&r, "--timeout", "60", "--session", sid, "1 + 1");
			ok = r.code == 0 && strcmp(r.out, "2\n") == 0 && r.seconds < 60 + GRACE;
			if (!ok)
				fprintf(stderr, "client %d: exit %d after %.1f s: %s\n", i, r.code,
				        r.seconds, r.err);
			_exit(!ok);
		}
	}
	for (int i = 0; i < CLIENTS; i++) {
		int st;

		waitpid(kids[i], &st, 0);
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	release_frozen();
	ck_assert_int_eq(bad, 0);
}
END_TEST

/*
 * A process that cannot die yet: in a frozen cgroup v1 freezer a task
 * sleeps uninterruptibly (SIGKILL takes effect only once it is thawed), as
 * in a hung network filesystem read.  A cgroup v2 freeze does not do it
 * on kernels where SIGKILL ends frozen tasks; then the case still runs,
 * and checks only that the call is right.  Returns the cgroup's
 * directory (freezer says which file freezes it), or NULL to skip.
 */
static char *freezer_cgroup_at(const char **freeze_file, const char **frozen)
{
	static char dir[256];

	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/freezer/dolsot-test-%d", (int)getpid());
	if (geteuid() == 0 && mkdir(dir, 0755) == 0) {
		*freeze_file = "freezer.state";
		*frozen = "FROZEN";
		return dir;
	}
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/unified/dolsot-test-%d", (int)getpid());
	if (geteuid() == 0 && mkdir(dir, 0755) == 0 && cli_exists(cli_path(dir, "cgroup.freeze"))) {
		*freeze_file = "cgroup.freeze";
		*frozen = "1";
		return dir;
	}
	rmdir(dir);
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup/dolsot-test-%d", (int)getpid());
	if (geteuid() == 0 && mkdir(dir, 0755) == 0 && cli_exists(cli_path(dir, "cgroup.freeze"))) {
		*freeze_file = "cgroup.freeze";
		*frozen = "1";
		return dir;
	}
	rmdir(dir);
	return NULL;
}

/* The cgroup, made and recorded for release_frozen, with "FZ=DIR" (how
 * the cell finds it) into env; NULL to skip. */
static char *freezer_cgroup(const char **freeze_file, const char **frozen, char *env,
                            size_t envlen)
{
	char *dir = freezer_cgroup_at(freeze_file, frozen);

	if (dir) {
		snprintf(frozen_cg, sizeof(frozen_cg), "%s", dir);
		frozen_cg_file = *freeze_file;
		snprintf(env, envlen, "FZ=%s", dir);
	}
	return dir;
}

static void thaw_and_remove(const char *dir, const char *freeze_file)
{
	bool v1 = strcmp(freeze_file, "freezer.state") == 0;
	char *procs;

	cli_write_file(cli_path(dir, freeze_file), v1 ? "THAWED" : "0");
	for (int i = 0; i < 500; i++) {
		size_t n = 0;

		procs = cli_read_file(cli_path(dir, "cgroup.procs"), &n);
		if (procs && n)
			for (char *p = procs; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
				if (atoi(p) > 0)
					kill(atoi(p), SIGKILL);
		free(procs);
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		usleep(10000);
	}
	fprintf(stderr, "cannot remove %s: %s\n", dir, strerror(errno));
}

START_TEST(cell_leaving_an_unkillable_child_reports_and_the_next_call_runs)
{
	const char *freeze_file = NULL, *frozen = NULL;
	char code[2048], env[600];
	char *dir = freezer_cgroup(&freeze_file, &frozen, env, sizeof(env));
	static const char *const modes[] = { "DOLSOT_SERVER=off", "DOLSOT_SERVER=auto" };

	if (!dir) {
		fprintf(stderr, "skipped: no cgroup freezer to freeze (needs root and the v1 "
		        "freezer or cgroup v2's cgroup.freeze)\n");
		return;
	}
	snprintf(code, sizeof(code),
	         "import os, subprocess\n"
	         "p = subprocess.Popen(['sleep', '1000'])\n"
	         "open(os.environ['FZ'] + '/cgroup.procs', 'w').write(str(p.pid))\n"
	         "open(os.environ['FZ'] + '/%s', 'w').write('%s')\n"
	         "print('cell done')\n", freeze_file, frozen);
	for (size_t m = 0; m < 2; m++) {
		const char *extra[] = { modes[m], env, NULL };
		struct cli_run r;

		if (m == 1)
			server_start_in(NULL);
		RUN_IN(&r, NULL, extra, "--timeout", "10", "--session", "d", code);
		ck_code(&r, 0);
		ck_out_has(&r, "cell done\n");
		ck_assert_msg(r.seconds < 10 + GRACE + SLACK, "took %.1f s", r.seconds);
		if (strcmp(freeze_file, "freezer.state") == 0)
			ck_err_has(&r, "did not die when killed");
		cli_run_release(&r);
		/* The next call in that environment runs. */
		RUN_IN(&r, NULL, extra, "--timeout", "10", "--session", "d", "1 + 1");
		ck_code(&r, 0);
		ck_out(&r, "2\n");
		ck_assert_msg(r.seconds < 10 + GRACE + SLACK, "took %.1f s", r.seconds);
		cli_run_release(&r);
		cli_write_file(cli_path(dir, freeze_file),
		               strcmp(freeze_file, "freezer.state") == 0 ? "THAWED" : "0");
	}
	release_frozen();
}
END_TEST

/* The cell's own process cannot die: the call still ends, as a timeout,
 * within the grace, and the next call runs. */
START_TEST(unkillable_worker_times_out_within_the_grace)
{
	const char *freeze_file = NULL, *frozen_value = NULL;
	char code[1024], env[600];
	char *dir = freezer_cgroup(&freeze_file, &frozen_value, env, sizeof(env));
	static const char *const modes[] = { "DOLSOT_SERVER=off", "DOLSOT_SERVER=auto" };

	if (!dir || strcmp(freeze_file, "freezer.state") != 0) {
		release_frozen();
		fprintf(stderr, "skipped: no cgroup v1 freezer (a v2 freeze does not stop "
		        "SIGKILL)\n");
		return;
	}
	snprintf(code, sizeof(code),
	         "import os\n"
	         "open(os.environ['FZ'] + '/cgroup.procs', 'w').write(str(os.getpid()))\n"
	         "open(os.environ['FZ'] + '/freezer.state', 'w').write('FROZEN')\n");
	for (size_t m = 0; m < 2; m++) {
		const char *extra[] = { modes[m], env, NULL };
		struct cli_run r;

		if (m == 1)
			server_start_in(NULL);
		RUN_IN(&r, NULL, extra, "--timeout", "3", "--session", "w", code);
		ck_code(&r, 124);
		ck_assert_msg(r.seconds < 3 + GRACE + SLACK, "took %.1f s", r.seconds);
		cli_run_release(&r);
		RUN_IN(&r, NULL, extra, "--timeout", "10", "--session", "w", "1 + 1");
		ck_code(&r, 0);
		ck_out(&r, "2\n");
		cli_run_release(&r);
		cli_write_file(cli_path(dir, freeze_file), "THAWED");
	}
	release_frozen();
}
END_TEST

START_TEST(zygote_killed_while_serving_is_replaced_with_a_reason)
{
	pid_t zygote = warm_then_signal(zygote_pid, SIGKILL);

	ck_assert_msg(status_says("killed by signal 9", 20), "no reason recorded");
	server_start_in(NULL);   /* works at once: a new zygote takes its place */
	ck_assert_int_ne(zygote_pid(), zygote);
	call_ok("t", "x + 1", "2\n", 20);
}
END_TEST

/* A copy of the binary under test in dir, with its build id changed when
 * other_build (a different build of the same program). */
static char *copy_binary(const char *dir, bool other_build)
{
	static const unsigned char note[] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0,
	                                      'G', 'N', 'U', 0 };
	size_t n = 0;
	char *bytes = cli_read_file(cli_bin(), &n), *path = strdup(cli_path(dir, "dolsot-copy"));
	int fd;
	bool patched = false;

	ck_assert_ptr_nonnull(bytes);
	for (size_t i = 0; other_build && i + sizeof(note) + 20 <= n && !patched; i++)
		if (memcmp(bytes + i, note, sizeof(note)) == 0) {
			bytes[i + sizeof(note)] ^= 0x5a;
			patched = true;
		}
	ck_assert(!other_build || patched);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
	close(fd);
	free(bytes);
	return path;
}

START_TEST(a_copy_at_another_path_shares_the_server)
{
	char *copy = copy_binary(fx.tmp, false);
	struct cli_run r;
	pid_t server;
	long warm;

	server_start_in(NULL);
	server = server_pid();
	warm = warm_calls();
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = copy },
	        (const char *const[]){ "dolsot", "--server-start", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	for (int i = 0; i < 3; i++) {
		cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = copy },
		        (const char *const[]){ "dolsot", "--session", "t", "1 + 1", NULL });
		ck_code(&r, 0);
		ck_out(&r, "2\n");
		cli_run_release(&r);
	}
	ck_assert_int_eq(server_pid(), server);
	ck_assert_int_ge(warm_calls(), warm + 3);
	free(copy);
}
END_TEST

START_TEST(another_build_does_not_kill_a_running_cell)
{
	char *other = copy_binary(fx.tmp, true), pidfile[4300], code[4500];
	struct cli_run r;
	pid_t kid;
	int st;

	server_start_in(NULL);
	snprintf(pidfile, sizeof(pidfile), "%s/cell.pid", fx.tmp);
	snprintf(code, sizeof(code),
	         "import os, time\nopen(%s%s%s, 'w').write(str(os.getpid()))\n"
	         "time.sleep(3)\nprint('finished')\n", "'", pidfile, "'");
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		CLI(&r, "--timeout", "60", "--session", "a", code);
		_exit(r.code == 0 && strcmp(r.out, "finished\n") == 0 ? 0 : 1);
	}
	for (int i = 0; i < 3000 && !cli_exists(pidfile); i++)
		usleep(10000);
	ck_assert(cli_exists(pidfile));
	/* A call of another build runs (cold) and makes the server leave... */
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = other },
	        (const char *const[]){ "dolsot", "--session", "b", "1 + 1", NULL });
	ck_code(&r, 0);
	ck_out(&r, "2\n");
	cli_run_release(&r);
	/* ...but the running cell finishes and its call succeeds. */
	waitpid(kid, &st, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the running call failed");
	free(other);
}
END_TEST

#define ENVIRONMENTS 10

/* More environments than the old bound of 8, used in turn, stay warm. */
START_TEST(ten_environments_in_rotation_stay_warm)
{
	char *dirs[ENVIRONMENTS];
	long warm;

	for (int i = 0; i < ENVIRONMENTS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "env%d", i);
		dirs[i] = strdup(cli_path(fx.tmp, name));
		ck_assert_int_eq(mkdir(dirs[i], 0700), 0);
		server_start_in(dirs[i]);
	}
	warm = warm_calls();
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < ENVIRONMENTS; i++) {
			struct cli_run r;

			RUN_IN(&r, dirs[i], NULL, "--session", "t", "1 + 1");
			ck_code(&r, 0);
			ck_out(&r, "2\n");
			cli_run_release(&r);
		}
	ck_assert_int_ge(warm_calls(), warm + 2 * ENVIRONMENTS);
	for (int i = 0; i < ENVIRONMENTS; i++)
		free(dirs[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("warm_faults");
	TCase *tc = tcase_create("warm_faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, frozen_zygote_falls_back_cold_and_is_replaced);
	tcase_add_test(tc, frozen_server_falls_back_cold_and_status_times_out);
	tcase_add_test(tc, two_hundred_clients_against_a_frozen_server);
	tcase_add_test(tc, cell_leaving_an_unkillable_child_reports_and_the_next_call_runs);
	tcase_add_test(tc, unkillable_worker_times_out_within_the_grace);
	tcase_add_test(tc, zygote_killed_while_serving_is_replaced_with_a_reason);
	tcase_add_test(tc, a_copy_at_another_path_shares_the_server);
	tcase_add_test(tc, another_build_does_not_kill_a_running_cell);
	tcase_add_test(tc, ten_environments_in_rotation_stay_warm);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
