/*
 * check_detach.c - detached cells (issue 38 item 1) through the real
 * binary, cold or warm as the runner says: a handle per state (running,
 * finished, cancelled, timed out, its client killed, two waiters, a wait
 * after the session was reset), the commit made once, no process left
 * behind, handles checked.  The cell says it runs by opening a FIFO the
 * test reads (ready), and goes on when the test writes another (go): no
 * sleeps; the peek waits on inotify.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

#define HANDLE_LEN 32
/* Milliseconds the peek may take to show a line the cell printed. */
#define PEEK_WAIT_MS 60000

static struct cli_test fx;
static char ready_fifo[4300], go_fifo[4300];

static void setup_fifos(void)
{
	char share[4200];

	snprintf(share, sizeof(share), "%s/share", fx.tmp);
	ck_assert_int_eq(mkdir(share, 0700), 0);
	snprintf(ready_fifo, sizeof(ready_fifo), "%s/ready", share);
	snprintf(go_fifo, sizeof(go_fifo), "%s/go", share);
	ck_assert_int_eq(mkfifo(ready_fifo, 0600), 0);
	ck_assert_int_eq(mkfifo(go_fifo, 0600), 0);
}

static void setup(void)
{
	cli_test_begin_usual(&fx);
	setup_fifos();
}

/* --live and the server's restart need the server, whichever way the
 * suite runs. */
static void setup_server(void)
{
	cli_test_begin_server(&fx);
	setup_fifos();
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* The gated cell: prints, says it runs, waits for go, counts its runs. */
static char *gated_cell(const char *rest)
{
	char *code;

	ck_assert_int_ne(asprintf(&code, "import sys\nprint('first')\nopen('%s', 'w').close()\n"
	                          "open('%s').read()\nprint('second')\nsys.stderr.write('e\\n')\n"
	                          "n = globals().get('n', 0) + 1\n%s",
	                          ready_fifo, go_fifo, rest), -1);
	return code;
}

/* The cell has started: it opened ready (this open waits for it). */
static void wait_ready(void)
{
	int fd = open(ready_fifo, O_RDONLY | O_CLOEXEC);
	char c;

	ck_assert_msg(fd >= 0, "open %s: %s", ready_fifo, strerror(errno));
	ck_assert_int_eq(read(fd, &c, 1), 0);
	close(fd);
}

static void go(void)
{
	int fd = open(go_fifo, O_WRONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", go_fifo, strerror(errno));
	ck_assert_int_eq(write(fd, "go", 2), 2);
	close(fd);
}

/* One JSON line the shipped schema accepts. */
static void ck_schema(const char *line)
{
	char schema[4200], *cwd = getcwd(NULL, 0);
	struct cli_run v;

	snprintf(schema, sizeof(schema), "%s/schema/result.schema.json", cwd);
	cli_run(&v, &(struct cli_opts){ .prog = "/usr/bin/python3.11", .stdin_data = line },
	        (const char *const[]){ "python3.11", "tests/lib/validate_json.py", schema, NULL });
	ck_assert_msg(v.code == 0, "schema rejects the line:\n%s\nline: %s", v.err, line);
	cli_run_release(&v);
	free(cwd);
}

/* The handle a detached call's status line names, into h. */
static void handle_of(const char *err, char *h)
{
	const char *p = strstr(err, "detached as handle ");

	ck_assert_msg(p != NULL, "no handle in: %s", err);
	p += strlen("detached as handle ");
	memcpy(h, p, HANDLE_LEN);
	h[HANDLE_LEN] = '\0';
	for (int i = 0; i < HANDLE_LEN; i++)
		ck_assert_msg((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'),
		              "not a handle: %s", h);
}

/* Run the gated cell detached at once (extra: one more flag pair, or
 * NULLs); its handle into h, once the cell has started. */
static void start(const char *extra, const char *value, const char *rest, char *h)
{
	struct cli_run r;
	char *code = gated_cell(rest);

	if (extra)
		CLI(&r, "--session", "s", "--detach-after", "0", extra, value, code);
	else
		CLI(&r, "--session", "s", "--detach-after", "0", code);
	ck_code(&r, 75);
	ck_assert_str_eq(r.out, "");
	handle_of(r.err, h);
	cli_run_release(&r);
	free(code);
	wait_ready();
}

/* --wait HANDLE must exit 0 with the gated cell's text result. */
static void ck_waited(const char *h)
{
	struct cli_run r;

	CLI(&r, "--wait", h);
	ck_code(&r, 0);
	ck_out(&r, "first\nsecond\n");
	ck_err_has(&r, "e\n");
	cli_run_release(&r);
}

/* --wait HANDLE must exit 0, whatever it printed. */
static void ck_waited_code(const char *h)
{
	struct cli_run r;

	CLI(&r, "--wait", h);
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* Wait (inotify) until the record's peek.out holds want. */
static void wait_peek_file(const char *h, const char *want)
{
	char dir[4400], *path;
	int in = inotify_init1(IN_CLOEXEC);

	snprintf(dir, sizeof(dir), "%s/.detached/%s", fx.store, h);
	path = cli_path(dir, "peek.out");
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, path, IN_MODIFY), 0);
	for (;;) {
		size_t len = 0;
		char *text = cli_read_file(path, &len), buf[4096];
		bool has = text && strstr(text, want);
		struct pollfd p = { in, POLLIN, 0 };

		free(text);
		if (has)
			break;
		ck_assert_msg(poll(&p, 1, PEEK_WAIT_MS) == 1, "peek.out never got '%s'", want);
		ck_assert_int_gt(read(in, buf, sizeof(buf)), 0);
	}
	close(in);
}

START_TEST(a_running_cell_is_listed_peeked_and_waited_for)
{
	char h[HANDLE_LEN + 1], dir[4300];
	struct cli_run r;
	struct stat st;
	json_t *o;

	start(NULL, NULL, "", h);
	snprintf(dir, sizeof(dir), "%s/.detached", fx.store);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(st.st_uid, geteuid());
	CLI(&r, "--list-running");
	ck_code(&r, 0);
	ck_out_has(&r, h);
	ck_out_has(&r, "\ts\t");
	cli_run_release(&r);
	wait_peek_file(h, "first\n");
	CLI(&r, "--peek", h);
	ck_code(&r, 0);
	ck_out(&r, "first\n");
	ck_err_has(&r, "running");
	cli_run_release(&r);
	CLI(&r, "--wait", h, "--timeout", "0.1");
	ck_code(&r, 75);
	ck_err_has(&r, h);
	ck_err_has(&r, "still running");
	cli_run_release(&r);
	CLI(&r, "--wait", h, "--timeout", "0.1", "--json");
	ck_code(&r, 75);
	o = json_loads(r.out, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "handle")), h);
	ck_assert_str_eq(json_string_value(json_object_get(o, "state")), "running");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "exit_code")), 75);
	json_decref(o);
	ck_schema(r.out);
	cli_run_release(&r);
	CLI(&r, "--peek", h, "--json");
	ck_code(&r, 0);
	ck_schema(r.out);
	ck_out_has(&r, "\"stdout\":\"first\\n\"");
	cli_run_release(&r);
	CLI(&r, "--list-running", "--json");
	ck_code(&r, 0);
	ck_schema(r.out);
	ck_out_has(&r, h);
	cli_run_release(&r);
	go();
	ck_waited(h);
	CLI(&r, "--wait", h, "--json");
	ck_code(&r, 0);
	o = json_loads(r.out, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "ok");
	ck_assert_str_eq(json_string_value(json_object_get(o, "stdout")), "first\nsecond\n");
	json_decref(o);
	cli_run_release(&r);
	CLI(&r, "--list-running");
	ck_code(&r, 0);
	ck_assert_msg(!cli_has(r.out, h), "still listed: %s", r.out);
	cli_run_release(&r);
	/* committed once: one run of the cell, one kept state */
	ck_state("s", "n", "1\n");
	CLI(&r, "--history", "s");
	ck_code(&r, 0);
	ck_assert_msg(strncmp(r.out, "1\t", 2) == 0 && strchr(r.out, '\n') &&
	              strncmp(strchr(r.out, '\n') + 1, "2*\t", 3) == 0 &&
	              !strchr(r.out, '\n')[1 + strcspn(strchr(r.out, '\n') + 1, "\n") + 1],
	              "want the cell's one state, then the check's: %s", r.out);
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

START_TEST(a_cell_that_ends_in_time_answers_as_attached)
{
	struct cli_run r;
	json_t *o;

	CLI(&r, "--session", "q", "--detach-after", "600", "print(6 * 7)");
	ck_code(&r, 0);
	ck_out(&r, "42\n");
	cli_run_release(&r);
	CLI(&r, "--session", "q", "--detach-after", "600", "--json", "raise KeyError('k')");
	ck_code(&r, 1);
	o = json_loads(r.out, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "error");
	json_decref(o);
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

START_TEST(a_cancelled_cell_leaves_its_session_unchanged)
{
	char h[HANDLE_LEN + 1];
	struct cli_run r;

	ok_call("s", "before = 1");
	start(NULL, NULL, "", h);
	CLI(&r, "--cancel", h);
	ck_code(&r, 0);
	ck_err_has(&r, "cancelled");
	ck_err_has(&r, "unchanged");
	cli_run_release(&r);
	CLI(&r, "--wait", h);
	ck_code(&r, 1);
	cli_run_release(&r);
	CLI(&r, "--cancel", h);
	ck_code(&r, 1);
	ck_err_has(&r, "already ended");
	cli_run_release(&r);
	CLI(&r, "--cancel", h, "--json");
	ck_code(&r, 1);
	ck_schema(r.out);
	ck_out_has(&r, "\"status\":\"ended\"");
	cli_run_release(&r);
	ck_state("s", "('n' in globals(), before)", "(False, 1)\n");
	ck_no_strays();
}
END_TEST

START_TEST(a_detached_cell_keeps_its_own_timeout)
{
	char h[HANDLE_LEN + 1];
	struct cli_run r;
	char *code;

	CLI(&r, "--session", "s", "--detach-after", "0", "--timeout", "1",
	    (code = gated_cell("")));
	free(code);
	ck_code(&r, 75);
	handle_of(r.err, h);
	cli_run_release(&r);
	wait_ready();   /* and never let it go: its --timeout ends it */
	CLI(&r, "--wait", h);
	ck_code(&r, 124);
	ck_err_has(&r, "TimeoutError");
	cli_run_release(&r);
	ck_state("s", "'n' in globals()", "False\n");
	ck_no_strays();
}
END_TEST

START_TEST(a_detached_cell_outlives_its_killed_client)
{
	char *code = gated_cell(""), h[HANDLE_LEN + 1];
	const char *argv[] = { "dolsot", "--session", "s", "--detach-after", "600", code, NULL };
	pid_t pid = cli_spawn(&(struct cli_opts){ .env = fx.env }, argv);
	struct cli_run r;
	int st;

	wait_ready();
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	CLI(&r, "--list-running");
	ck_code(&r, 0);
	ck_assert_msg(strlen(r.out) > HANDLE_LEN && r.out[HANDLE_LEN] == '\t', "%s", r.out);
	memcpy(h, r.out, HANDLE_LEN);
	h[HANDLE_LEN] = '\0';
	cli_run_release(&r);
	go();
	ck_waited(h);
	ck_state("s", "n", "1\n");
	free(code);
	ck_no_strays();
}
END_TEST

/* All a reader of fd gets, then its process's exit code. */
static int drain(int fd, pid_t pid, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t got;
	int st;

	while (n < len - 1 && (got = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)got;
	buf[n] = '\0';
	close(fd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(two_waiters_both_get_the_result)
{
	char h[HANDLE_LEN + 1], out[2][4096];
	int fd[2];
	pid_t pid[2];

	start(NULL, NULL, "", h);
	for (int i = 0; i < 2; i++)
		pid[i] = cli_spawn_reading(&(struct cli_opts){ .env = fx.env },
		                           (const char *const[]){ "dolsot", "--wait", h, NULL },
		                           &fd[i]);
	go();
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(drain(fd[i], pid[i], out[i], sizeof(out[i])), 0);
		ck_assert_str_eq(out[i], "first\nsecond\n");
	}
	ck_state("s", "n", "1\n");
	ck_no_strays();
}
END_TEST

START_TEST(a_handle_outlives_its_sessions_reset)
{
	char h[HANDLE_LEN + 1];
	struct cli_run r;

	start(NULL, NULL, "", h);
	go();
	ck_waited(h);
	CLI(&r, "--reset", "s");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_waited(h);
	ck_state("s", "'n' in globals()", "False\n");
}
END_TEST

START_TEST(a_sandboxed_cell_detaches)
{
	struct cli_run r;
	char h[HANDLE_LEN + 1];

	if (!cli_userns_probe(geteuid() != 0)) {
		printf("SKIP a_sandboxed_cell_detaches: no user namespaces here\n");
		return;
	}
	CLI(&r, "--session", "b", "--sandbox", "--detach-after", "0", "print('in')\nv = 5");
	ck_assert_msg(r.code == 0 || r.code == 75, "exit %d: %s", r.code, r.err);
	if (r.code == 75) {
		handle_of(r.err, h);
		cli_run_release(&r);
		CLI(&r, "--wait", h);
		ck_code(&r, 0);
	}
	ck_out(&r, "in\n");
	cli_run_release(&r);
	CLI(&r, "--session", "b", "--sandbox", "print(v)");
	ck_code(&r, 0);
	ck_out(&r, "5\n");
	cli_run_release(&r);
	ck_no_strays();
}
END_TEST

/* A record goes a session TTL after its cell ended (its result file's
 * time, set back here), at the next --list-running or --detach-after. */
START_TEST(a_record_expires_after_the_ttl)
{
	char h[HANDLE_LEN + 1], path[4400];
	struct timespec old[2];
	struct cli_run r;

	start(NULL, NULL, "", h);
	go();
	ck_waited_code(h);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SESSION_TTL_DAYS=1", NULL }),
	       "--list-running");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_waited_code(h);   /* not a day old yet */
	snprintf(path, sizeof(path), "%s/.detached/%s/result", fx.store, h);
	clock_gettime(CLOCK_REALTIME, &old[0]);
	old[0].tv_sec -= 2 * 86400;
	old[1] = old[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_SESSION_TTL_DAYS=1", NULL }),
	       "--list-running");
	ck_code(&r, 0);
	cli_run_release(&r);
	CLI(&r, "--wait", h);
	ck_code(&r, 1);
	ck_err_has(&r, "no detached cell has the handle");
	cli_run_release(&r);
}
END_TEST

/* A flood: --peek keeps its head and its tail, bounded. */
START_TEST(a_peek_keeps_head_and_tail)
{
	char h[HANDLE_LEN + 1];
	struct cli_run r;

	start(NULL, NULL, "print('HEAD')\nprint('x' * 3000000)\nprint('TAIL')\n", h);
	go();
	ck_waited_code(h);
	CLI(&r, "--peek", h);   /* cut to DOLSOT_MAX_OUTPUT as a result is */
	ck_code(&r, 0);
	ck_out_has(&r, "HEAD\n");
	ck_out_has(&r, "TAIL\n");
	ck_err_has(&r, "finished");
	ck_assert_uint_lt(r.out_len, 200000);
	cli_run_release(&r);
	/* uncut: what the record keeps, a MiB at most */
	RUN_IN(&r, NULL, ((const char *[]){ "DOLSOT_MAX_OUTPUT=0", NULL }), "--peek", h);
	ck_code(&r, 0);
	ck_out_has(&r, "HEAD\n");
	ck_out_has(&r, "TAIL\n");
	ck_out_has(&r, "bytes not kept here]");
	ck_assert_uint_lt(r.out_len, 1100000);
	cli_run_release(&r);
}
END_TEST

START_TEST(a_live_cell_detaches_and_commits)
{
	char h[HANDLE_LEN + 1], *code = gated_cell("import threading\nlock = threading.Lock()\n");
	struct cli_run r;

	CLI(&r, "--session", "s", "--live", "--detach-after", "0", code);
	free(code);
	ck_code(&r, 75);
	handle_of(r.err, h);
	cli_run_release(&r);
	wait_ready();
	go();
	CLI(&r, "--wait", h);
	ck_code(&r, 0);
	ck_out(&r, "first\nsecond\n");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--live", "print(n, type(lock).__name__)");
	ck_code(&r, 0);
	ck_out(&r, "1 lock\n");
	cli_run_release(&r);
}
END_TEST

/* A handle does not survive the warm server's restart: its cell fails as
 * an attached call would, and --wait says so. */
START_TEST(the_warm_servers_restart_ends_a_detached_cell)
{
	char h[HANDLE_LEN + 1];
	struct cli_run r;

	start(NULL, NULL, "", h);
	CLI(&r, "--server-stop");
	ck_code(&r, 0);
	cli_run_release(&r);
	CLI(&r, "--wait", h);
	/* the server's stop kills the cell (1), or its stop waits out the
	 * call's deadline (124): either way nothing is committed */
	ck_assert_msg(r.code == 1 || r.code == 124, "exit %d: %s", r.code, r.err);
	ck_err_has(&r, "session unchanged");
	cli_run_release(&r);
	ck_state("s", "'n' in globals()", "False\n");
	ck_no_strays();
}
END_TEST

/* Another user cannot wait on, peek at or cancel a handle of ours. */
START_TEST(a_handle_is_its_users)
{
	char h[HANDLE_LEN + 1], *shared;
	const char *const verbs[] = { "--wait", "--peek", "--cancel" };
	struct cli_run r;
	uid_t uid;
	gid_t gid;

	if (geteuid() != 0 || !cli_local_user(CLI_TEST_USER, &uid, &gid)) {
		printf("SKIP a_handle_is_its_users: needs root and a second user\n");
		return;
	}
	shared = cli_bin_shared_copy();
	start(NULL, NULL, "", h);
	for (size_t i = 0; i < 3; i++) {
		cli_run(&r, &(struct cli_opts){ .env = fx.env, .drop = true, .uid = uid, .gid = gid },
		        (const char *const[]){ "dolsot", verbs[i], h, NULL });
		ck_code(&r, 1);
		ck_assert_str_eq(r.out, "");
		cli_run_release(&r);
	}
	go();
	ck_waited(h);
	cli_rmtree(shared);
	free(shared);
}
END_TEST

START_TEST(handles_are_checked)
{
	struct cli_run r;

	CLI(&r, "--wait", "../../etc");
	ck_code(&r, 1);
	ck_err_has(&r, "is not a handle");
	cli_run_release(&r);
	CLI(&r, "--peek", "0123456789abcdef0123456789abcdef");
	ck_code(&r, 1);
	ck_err_has(&r, "no detached cell has the handle");
	cli_run_release(&r);
	CLI(&r, "--wait", "0123456789abcdef0123456789abcdef", "--session", "s");
	ck_code(&r, 2);
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--detach-after", "x", "1");
	ck_code(&r, 2);
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--detach-after", "1", "--json-stream", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--detach-after does not go with --json-stream");
	cli_run_release(&r);
	CLI(&r, "--list-running", "--json");
	ck_code(&r, 0);
	ck_out(&r, "{\"running\":[]}\n");
	cli_run_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("detach");
	TCase *tc = tcase_create("detach"), *server = tcase_create("server");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_running_cell_is_listed_peeked_and_waited_for);
	tcase_add_test(tc, a_cell_that_ends_in_time_answers_as_attached);
	tcase_add_test(tc, a_cancelled_cell_leaves_its_session_unchanged);
	tcase_add_test(tc, a_detached_cell_keeps_its_own_timeout);
	tcase_add_test(tc, a_detached_cell_outlives_its_killed_client);
	tcase_add_test(tc, two_waiters_both_get_the_result);
	tcase_add_test(tc, a_handle_outlives_its_sessions_reset);
	tcase_add_test(tc, a_sandboxed_cell_detaches);
	tcase_add_test(tc, handles_are_checked);
	tcase_add_test(tc, a_handle_is_its_users);
	tcase_add_test(tc, a_peek_keeps_head_and_tail);
	tcase_add_test(tc, a_record_expires_after_the_ttl);
	tcase_add_checked_fixture(server, setup_server, teardown);
	tcase_set_timeout(server, 120);
	tcase_add_test(server, a_live_cell_detaches_and_commits);
	tcase_add_test(server, the_warm_servers_restart_ends_a_detached_cell);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, server);
	return ck_run(s);
}
