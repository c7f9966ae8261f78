/*
 * check_tiers.c - the machinery of the test tiers: DOLSOT_TEST_ONLY
 * (tests/lib/ck_run.h) keeps only the cases it names, and a name no case
 * has fails the suite; tests/run.py runs jobs side by side, prints each
 * one's output whole and in the order given, ends with a table of their
 * times, runs jobs with one lock one at a time, fails when a job
 * failed, and with --whole refuses a split suite with a TCase left out.  The suite runs itself (its own
 * TCase "picked") as the program under test.
 */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

#define PYTHON "/usr/bin/python3.11"

static char self[PATH_MAX];

/* The picked cases append their names to $DOLSOT_TEST_TIERS_LOG, when set
 * (the runs below); in the suite's own run they do nothing. */
static void note(const char *name)
{
	const char *log = getenv("DOLSOT_TEST_TIERS_LOG");
	FILE *f;

	if (!log)
		return;
	f = fopen(log, "ae");
	ck_assert_msg(f != NULL, "cannot open %s", log);
	fprintf(f, "%s\n", name);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(picked_one)
{
	note("picked_one");
}
END_TEST

START_TEST(picked_two)
{
	note("picked_two");
}
END_TEST

/* How long a locked case waits for a sibling to begin beside it. */
#define SIBLING_SECONDS 5.0

/* With DOLSOT_TEST_TIERS_LOG set: "begin", then, until another job's
 * "begin" is there too (or SIBLING_SECONDS pass), nothing, then "end". */
START_TEST(picked_waits_for_a_sibling)
{
	const char *log = getenv("DOLSOT_TEST_TIERS_LOG");
	double until = cli_now() + SIBLING_SECONDS;

	if (!log)
		return;
	note("begin");
	for (;;) {
		char *text = cli_read_file(log, NULL);
		const char *first = text ? strstr(text, "begin") : NULL;
		bool two = first && strstr(first + 1, "begin");

		free(text);
		if (two || cli_now() >= until)
			break;
		usleep(10000);
	}
	note("end");
}
END_TEST

/* Run this program's TCase "picked" with DOLSOT_TEST_ONLY=only, its log
 * in dir/log; the log's text into *log (malloc'd). */
static void run_picked(struct cli_run *r, const char *dir, const char *only, char **log)
{
	char only_env[256], log_env[PATH_MAX + 32];
	const char *env[] = { "CK_RUN_CASE=picked", only_env, log_env, "CK_FORK", NULL };

	snprintf(only_env, sizeof(only_env), "DOLSOT_TEST_ONLY=%s", only);
	snprintf(log_env, sizeof(log_env), "DOLSOT_TEST_TIERS_LOG=%s", cli_path(dir, "log"));
	cli_run(r, &(struct cli_opts){ .env = env, .prog = self },
	        (const char *const[]){ "check_tiers", NULL });
	*log = cli_read_file(cli_path(dir, "log"), NULL);
	if (!*log)
		*log = strdup("");
}

START_TEST(only_the_listed_cases_run)
{
	char *dir = cli_tempdir(), *log;
	struct cli_run r;

	run_picked(&r, dir, "picked_two", &log);
	ck_code(&r, 0);
	ck_out_has(&r, "Checks: 1, Failures: 0");
	ck_assert_str_eq(log, "picked_two\n");
	cli_run_release(&r);
	free(log);
	cli_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(a_name_no_case_has_fails_the_suite)
{
	char *dir = cli_tempdir(), *log;
	struct cli_run r;

	run_picked(&r, dir, "picked_one renamed_case", &log);
	ck_code(&r, 1);
	ck_out_has(&r, "Checks: 1, Failures: 0");
	ck_err(&r, "DOLSOT_TEST_ONLY names renamed_case, which is no case of this suite\n");
	ck_assert_str_eq(log, "picked_one\n");
	cli_run_release(&r);
	free(log);
	cli_rmtree(dir);
	free(dir);
}
END_TEST

/* tests/run.py with jobs (NULL-terminated) and DOLSOT_TEST_ONLY=only. */
static void run_runner(struct cli_run *r, const char *only, const char *const *jobs)
{
	char only_env[256];
	const char *env[] = { only_env, "DOLSOT_TEST_TIERS_LOG", "CK_RUN_CASE", NULL };
	const char *argv[16] = { PYTHON, "tests/run.py", "-j", "2" };
	size_t n = 4;

	snprintf(only_env, sizeof(only_env), "DOLSOT_TEST_ONLY=%s", only);
	for (size_t i = 0; jobs[i] && n < 15; i++)
		argv[n++] = jobs[i];
	argv[n] = NULL;
	cli_run(r, &(struct cli_opts){ .env = env, .prog = PYTHON }, argv);
}

/* Where a job's block starts in the runner's output; the test fails when
 * it is missing. */
static const char *block(const struct cli_run *r, const char *job)
{
	char head[256];
	const char *at;

	snprintf(head, sizeof(head), "== %s\nRunning suite(s): tiers\n", job);
	at = strstr(r->out, head);
	ck_assert_msg(at != NULL, "no whole block for %s:\n%s", job, r->out);
	return at;
}

/* "[way]this program@picked", a job for tests/run.py. */
static const char *job(char *buf, size_t len, const char *way)
{
	snprintf(buf, len, "%s%s@picked", way, self);
	return buf;
}

START_TEST(runner_prints_each_job_whole_in_order_and_a_table)
{
	char j[3][PATH_MAX + 32], end[PATH_MAX + 96];
	const char *const jobs[] = { job(j[0], sizeof(j[0]), ""),
	                             job(j[1], sizeof(j[1]), "cold:"),
	                             job(j[2], sizeof(j[2]), "warm:"), NULL };
	struct cli_run r;
	const char *a, *b, *c;

	run_runner(&r, "picked_one", jobs);
	ck_code(&r, 0);
	a = block(&r, jobs[0]);
	b = block(&r, jobs[1]);
	c = block(&r, jobs[2]);
	ck_assert_msg(a < b && b < c, "blocks out of order:\n%s", r.out);
	snprintf(end, sizeof(end), "Checks: 1, Failures: 0, Errors: 0\n== %s: ", jobs[0]);
	ck_out_has(&r, end);
	ck_out_has(&r, "\nsuite ");
	ck_out_has(&r, "\nwall ");
	ck_assert_msg(!cli_has(r.out, "FAILED"), "%s", r.out);
	cli_run_release(&r);
}
END_TEST

/* Two jobs with one lock run one after the other, even with room for
 * both; without it they overlap. */
START_TEST(runner_runs_jobs_with_one_lock_one_at_a_time)
{
	char *dir = cli_tempdir(), log_env[PATH_MAX + 32], j[2][PATH_MAX + 48], *log;
	const char *env[] = { "DOLSOT_TEST_ONLY=picked_waits_for_a_sibling", log_env,
	                      "CK_RUN_CASE", NULL };
	const char *argv[] = { PYTHON, "tests/run.py", "-j", "2", j[0], j[1], NULL };
	struct cli_run r;

	snprintf(log_env, sizeof(log_env), "DOLSOT_TEST_TIERS_LOG=%s", cli_path(dir, "log"));
	for (int locked = 1; locked >= 0; locked--) {
		snprintf(j[0], sizeof(j[0]), "%s@picked%s", self, locked ? "!one" : "");
		snprintf(j[1], sizeof(j[1]), "cold:%s@picked%s", self, locked ? "!one" : "");
		unlink(cli_path(dir, "log"));
		cli_run(&r, &(struct cli_opts){ .env = env, .prog = PYTHON }, argv);
		ck_code(&r, 0);
		cli_run_release(&r);
		log = cli_read_file(cli_path(dir, "log"), NULL);
		ck_assert_ptr_nonnull(log);
		ck_assert_str_eq(log, locked ? "begin\nend\nbegin\nend\n" : "begin\nbegin\nend\nend\n");
		free(log);
	}
	cli_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(runner_fails_when_a_job_fails_and_names_it)
{
	char j[PATH_MAX + 32], want[PATH_MAX + 64];
	const char *const jobs[] = { job(j, sizeof(j), ""), NULL };
	struct cli_run r;

	run_runner(&r, "no_such_case", jobs);
	ck_code(&r, 1);
	ck_out_has(&r, "DOLSOT_TEST_ONLY names no_such_case, which is no case of this suite\n");
	snprintf(want, sizeof(want), "FAILED: %s (exit 1)\n", jobs[0]);
	ck_out_has(&r, want);
	ck_out_has(&r, "  FAILED (exit 1)\n");
	snprintf(want, sizeof(want), "\nFAILED: %s\n", jobs[0]);
	ck_out_has(&r, want);
	cli_run_release(&r);
}
END_TEST

/* --whole: a suite run by TCase must have a job for each TCase its
 * source creates; this one's "tiers" has none here, and nothing runs. */
START_TEST(runner_whole_refuses_a_tcase_left_out)
{
	char j[PATH_MAX + 32];
	const char *argv[] = { PYTHON, "tests/run.py", "--whole", job(j, sizeof(j), ""), NULL };
	const char *env[] = { "DOLSOT_TEST_TIERS_LOG", "CK_RUN_CASE", NULL };
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = env, .prog = PYTHON }, argv);
	ck_code(&r, 1);
	ck_err_has(&r, "creates TCase 'tiers', which no ");
	ck_assert_msg(!cli_has(r.err, "'picked'") && !cli_has(r.out, "Running suite"), "%s%s",
	              r.out, r.err);
	cli_run_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tiers");
	TCase *picked = tcase_create("picked"), *tiers = tcase_create("tiers");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		perror("check_tiers: readlink /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	tcase_set_timeout(picked, 30);
	tcase_add_test(picked, picked_one);
	tcase_add_test(picked, picked_two);
	tcase_add_test(picked, picked_waits_for_a_sibling);
	tcase_set_timeout(tiers, 60);
	tcase_add_test(tiers, only_the_listed_cases_run);
	tcase_add_test(tiers, a_name_no_case_has_fails_the_suite);
	tcase_add_test(tiers, runner_prints_each_job_whole_in_order_and_a_table);
	tcase_add_test(tiers, runner_runs_jobs_with_one_lock_one_at_a_time);
	tcase_add_test(tiers, runner_fails_when_a_job_fails_and_names_it);
	tcase_add_test(tiers, runner_whole_refuses_a_tcase_left_out);
	suite_add_tcase(s, picked);
	suite_add_tcase(s, tiers);
	return ck_run(s);
}
