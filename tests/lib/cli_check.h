/*
 * cli_check.h - the checks CLI suites make about a run of the binary
 * (struct cli_run, cli_helpers.h), shared so each suite states only its
 * cases.  The macros without a cli_ prefix use the suite's struct
 * cli_test named fx, as CLI() does.  Failure messages cut stdout and
 * stderr short, so a flood of output still leaves a readable report.
 */
#ifndef DOLSOT_CLI_CHECK_H
#define DOLSOT_CLI_CHECK_H

#include <check.h>
#include <string.h>

#include "cli_helpers.h"

/* ck_code, ck_out, ck_err, ck_err_has, ck_err_lacks and ck_out_has are in
 * cli_helpers.h. */

/* A call in session that must exit 0. */
static inline void cli_ok_call(const struct cli_test *t, const char *session,
                               const char *code)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = t->env },
	        (const char *const[]){ "dolsot", "--session", session, code, NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* What a session holds: expr evaluated in it prints want. */
static inline void cli_ck_state(const struct cli_test *t, const char *session,
                                const char *expr, const char *want)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = t->env },
	        (const char *const[]){ "dolsot", "--session", session, expr, NULL });
	ck_code(&r, 0);
	ck_out(&r, want);
	cli_run_release(&r);
}

/* No process of the test's store is left behind (waiting up to 5 s). */
static inline void cli_ck_no_strays(const struct cli_test *t)
{
	char desc[4096];
	int n = cli_wait_no_strays(t->store_env, 5, desc, sizeof(desc));

	ck_assert_msg(n == 0, "%d process(es) left behind: %s", n, desc);
}

#define ok_call(session, code) cli_ok_call(&fx, (session), (code))
#define ck_state(session, expr, want) cli_ck_state(&fx, (session), (expr), (want))
#define ck_no_strays() cli_ck_no_strays(&fx)

#endif
