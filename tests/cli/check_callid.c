/*
 * check_callid.c - --call-id and the stop signals around the commit
 * (README "Retrying a call safely"; dolsot(1) Signals), with the real
 * binary: a repeated id says the recorded result again and runs nothing,
 * and SIGTERM, SIGINT or SIGHUP at random moments under
 * retry-on-any-failure never apply a cell twice.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

/* Calls of the signal stream: small enough for CI (a few seconds), unless
 * DOLSOT_TEST_STREAM names more (`make soak` runs 300, cold and warm). */
#define STREAM_CALLS 12
#define STREAM_CALLS_MAX 100000
#define STREAM_PROBES 3
/* The longest a stopped call is waited for (seconds). */
#define STOP_WAIT 60

static struct cli_test fx;

static void setup(void)
{
	char err[512];

	cli_test_begin(&fx, cli_usual_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "server: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

#define COUNT "n = globals().get('n', 0) + 1\nprint('n is', n)\nn"

START_TEST(repeated_id_says_the_recorded_result_and_runs_nothing)
{
	struct cli_run a, b, j1, j2, n;

	CLI(&a, "--session", "s", "--call-id", "c-1", COUNT);
	ck_code(&a, 0);
	ck_out(&a, "n is 1\n1\n");
	CLI(&b, "--session", "s", "--call-id", "c-1", COUNT);
	ck_code(&b, 0);
	ck_out(&b, a.out);
	ck_err(&b, a.err);
	CLI(&j1, "--session", "s", "--json", "--call-id", "c-2", COUNT);
	CLI(&j2, "--session", "s", "--json", "--call-id", "c-2", COUNT);
	ck_code(&j2, 0);
	ck_out(&j2, j1.out);
	ck_out_has(&j2, "\"stdout\":\"n is 2\\n\"");
	CLI(&n, "--session", "s", "n");
	ck_out(&n, "2\n");
	cli_run_release(&a);
	cli_run_release(&b);
	cli_run_release(&j1);
	cli_run_release(&j2);
	cli_run_release(&n);
}
END_TEST

START_TEST(a_failed_cell_is_recorded_with_its_exit_status)
{
	struct cli_run a, b;

	CLI(&a, "--session", "s", "--call-id", "e", "x = 1\nraise ValueError('no')");
	ck_code(&a, 1);
	CLI(&b, "--session", "s", "--call-id", "e", "x = 1\nraise ValueError('no')");
	ck_code(&b, 1);
	ck_out(&b, a.out);
	ck_err(&b, a.err);
	cli_run_release(&a);
	cli_run_release(&b);
}
END_TEST

START_TEST(a_bad_call_id_is_a_usage_error)
{
	struct cli_run r, l;

	CLI(&r, "--session", "s", "--call-id", "a b", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--call-id 'a b': a call id is made of");
	CLI(&l, "--list-sessions", "--call-id", "x");
	ck_code(&l, 2);
	cli_run_release(&r);
	cli_run_release(&l);
}
END_TEST

static void take_env(void);

/* Where a stream call's stderr goes (in the test's directory). */
static char stream_err[4400];

/* One call of the stream, stopped by sig after delay seconds (0: not
 * stopped); its wait status. */
static int stopped_call(const char *id, int sig, double delay)
{
	const char *argv[] = { "dolsot", "--session", "ctr", "--call-id", id,
	                       "n = globals().get('n', 0) + 1\nprint('x' * 200000)\nn", NULL };
	sigset_t all, old;
	pid_t pid;
	int st;

	/* A stop that lands before the child reset its handlers must not run
	 * the harness's (Check's kills the test's whole process group). */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_WRONLY);
		int errf = open(stream_err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);   /* not the harness's handlers or SIG_IGN */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		take_env();
		dup2(null, 1);
		dup2(errf, 2);
		execv(cli_bin(), (char *const *)argv);
		_exit(127);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (sig) {
		struct timespec t = { (time_t)delay, (long)((delay - (time_t)delay) * 1e9) };

		nanosleep(&t, NULL);
		kill(pid, sig);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return st;
}

/* How long an unstopped call of the stream takes: the shortest of
 * STREAM_PROBES (they count as calls of the stream). */
static double call_seconds(void)
{
	double best = 1e9;

	for (int i = 0; i < STREAM_PROBES; i++) {
		struct timespec a, b;
		char id[32];
		double took;
		int st;

		snprintf(id, sizeof(id), "probe-%d", i);
		clock_gettime(CLOCK_MONOTONIC, &a);
		st = stopped_call(id, 0, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		if (took < best)
			best = took;
	}
	return best;
}

static int stream_calls(void)
{
	const char *v = getenv("DOLSOT_TEST_STREAM");
	long n = v && *v ? strtol(v, NULL, 10) : STREAM_CALLS;

	ck_assert_msg(n > 0 && n <= STREAM_CALLS_MAX, "DOLSOT_TEST_STREAM=%s: want 1 to %d",
	              v, STREAM_CALLS_MAX);
	return (int)n;
}

START_TEST(stop_signals_under_retry_never_apply_a_cell_twice)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct cli_run r;
	char id[32];
	int calls = stream_calls(), stopped = 0, before = 0, after = 0;
	double span;

	snprintf(stream_err, sizeof(stream_err), "%s", cli_path(fx.tmp, "stream-stderr"));
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	/* A big session (16 MiB loaded, verified and saved by every call), so
	 * that stops land in its load and its save too. */
	CLI(&r, "--session", "ctr", "import os\nblob = os.urandom(16 << 20)");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* Stops land anywhere in a call: up to a little past its usual length. */
	span = 1.2 * call_seconds();
	for (int i = 0; i < calls; i++) {
		int st, tries = 0;

		snprintf(id, sizeof(id), "call-%d", i);
		/* Retry on any failure, stopped at random moments, until one
		 * call ends cleanly. */
		do {
			bool stop = tries < 3;
			double delay = span * rand() / RAND_MAX;

			st = stopped_call(id, stop ? sigs[rand() % 3] : 0, delay);
			if (WIFSIGNALED(st)) {
				char *text = cli_read_file(stream_err, NULL);

				bool said_before = text && cli_has(text, "before the session was saved");
				bool said_after = text && cli_has(text, "after the session was saved");

				ck_assert_msg(!(said_before && said_after), "both states said: %s", text);
				stopped++;
				before += said_before;
				after += said_after;
				free(text);
			}
			tries++;
		} while (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && tries < 10);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "call %d never ended cleanly", i);
	}
	CLI(&r, "--session", "ctr", "n");
	ck_code(&r, 0);
	snprintf(id, sizeof(id), "%d\n", calls + STREAM_PROBES);
	ck_out(&r, id);
	cli_run_release(&r);
	printf("stream: %d calls; %d tries ended by a stop signal within %.0f ms: %d said "
	       "before the save, %d after it, the rest stopped before dolsot said anything\n",
	       calls, stopped, span * 1000, before, after);
}
END_TEST

/* The child's environment as the test's (fx.env: sets and unsets). */
static void take_env(void)
{
	for (const char *const *e = fx.env; *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq) {
			char name[256];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			setenv(name, eq + 1, 1);
		} else {
			unsetenv(*e);
		}
	}
}

START_TEST(a_stop_after_the_save_says_the_session_was_saved)
{
	const char *argv[] = { "dolsot", "--session", "big", "n = 1\nprint('x' * 1000000)", NULL };
	char errpath[4400], *text;
	int out[2], st, got = 0;
	struct cli_run r;
	pid_t pid;

	snprintf(errpath, sizeof(errpath), "%s", cli_path(fx.tmp, "stderr"));
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sigset_t none;
		int ef = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		take_env();
		/* Uncut, so that its output is more than the pipe holds. */
		setenv("DOLSOT_MAX_OUTPUT", "0", 1);
		dup2(out[1], 1);
		dup2(ef, 2);
		close(out[0]);
		execv(cli_bin(), (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	/* Nobody reads stdout: the call blocks writing it, after its save. */
	for (int i = 0; i < 600 && !got; i++) {
		CLI(&r, "--session", "big", "n");
		got = r.code == 0 && strcmp(r.out, "1\n") == 0;
		cli_run_release(&r);
		if (!got)
			usleep(100000);
	}
	ck_assert_msg(got, "the session was never saved");
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(out[0]);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	text = cli_read_file(errpath, NULL);
	ck_assert_msg(cli_has(text, "dolsot: stopped by SIGTERM after the session was saved; "
	                      "the cell's effects are kept"), "stderr: %s", text);
	free(text);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("callid");
	TCase *tc = tcase_create("callid");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, repeated_id_says_the_recorded_result_and_runs_nothing);
	tcase_add_test(tc, a_failed_cell_is_recorded_with_its_exit_status);
	tcase_add_test(tc, a_bad_call_id_is_a_usage_error);
	tcase_add_test(tc, a_stop_after_the_save_says_the_session_was_saved);
	suite_add_tcase(s, tc);
	tc = tcase_create("stream");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 3600);
	tcase_add_test(tc, stop_signals_under_retry_never_apply_a_cell_twice);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(suite());
}
