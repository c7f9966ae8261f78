/*
 * ck_run.h - every suite's main: run it, and exit 1 when a test failed;
 * and the cases it runs: all of them, or those DOLSOT_TEST_ONLY names.
 *
 * DOLSOT_TEST_ONLY="name name ..." keeps, of the suite, only the cases
 * with those START_TEST names (`make quick` sets it from tests/quick.txt,
 * through tests/run.py --quick).  A case left out is never added to its
 * TCase, so its fixture never runs.  For that this header takes over
 * Check's tcase_add_test and tcase_add_loop_test: include it after
 * <check.h>, before the suite adds its cases.  A name no case of the
 * suite has fails the run, so a renamed case cannot drop out of `make
 * quick` unseen.
 */
#ifndef DOLSOT_CK_RUN_H
#define DOLSOT_CK_RUN_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names DOLSOT_TEST_ONLY gives that a case of the suite has. */
#define CK_RUN_ONLY_MAX 256
static const char *ck_run_found[CK_RUN_ONLY_MAX];
static size_t ck_run_nfound;

/* Whether the word name (len bytes) is one of list's (blank-separated). */
static inline bool ck_run_listed(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n == len && strncmp(p, name, len) == 0)
			return true;
		p += n;
	}
	return false;
}

/* Add t (its loop from start to end) to tc unless DOLSOT_TEST_ONLY
 * leaves it out. */
static inline void ck_run_add(TCase *tc, const TTest *t, int start, int end)
{
	const char *only = getenv("DOLSOT_TEST_ONLY");

	if (only && !ck_run_listed(only, t->name, strlen(t->name)))
		return;
	if (only && ck_run_nfound < CK_RUN_ONLY_MAX)
		ck_run_found[ck_run_nfound++] = t->name;
	_tcase_add_test(tc, t, 0, 0, start, end);
}

#undef tcase_add_test
#define tcase_add_test(tc, tf) ck_run_add((tc), (tf), 0, 1)
#undef tcase_add_loop_test
#define tcase_add_loop_test(tc, tf, s, e) ck_run_add((tc), (tf), (s), (e))

/* 0 when every name of DOLSOT_TEST_ONLY is a case of the suite, else 1
 * (each missing one said on stderr). */
static inline int ck_run_only_ok(void)
{
	const char *only = getenv("DOLSOT_TEST_ONLY");
	int bad = 0;

	for (const char *p = only ? only : ""; *p;) {
		size_t n;
		bool found = false;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		for (size_t i = 0; i < ck_run_nfound && !found; i++)
			found = strlen(ck_run_found[i]) == n && strncmp(ck_run_found[i], p, n) == 0;
		if (n && !found) {
			fprintf(stderr, "DOLSOT_TEST_ONLY names %.*s, which is no case of this suite\n",
			        (int)n, p);
			bad = 1;
		}
		p += n;
	}
	return bad;
}

/* Run every test of s in the way fork says (CK_NOFORK for a suite whose
 * cases share the process; CK_FORK_GETENV, Check's CK_FORK variable, else),
 * CK_NORMAL output; 0 when all passed, else 1. */
static inline int ck_run_with(Suite *s, enum fork_status fork)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_set_fork_status(sr, fork);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	if (srunner_ntests_run(sr) == 0 && getenv("CK_RUN_CASE"))
		printf("SKIP: no case of this suite runs in TCase '%s' here\n", getenv("CK_RUN_CASE"));
	srunner_free(sr);
	return failed || ck_run_only_ok() ? 1 : 0;
}

/* Run every test of s (CK_NORMAL output); 0 when all passed, else 1. */
static inline int ck_run(Suite *s)
{
	return ck_run_with(s, CK_FORK_GETENV);
}

#endif
