/*
 * ck_run.h - every suite's main: run it, and exit 1 when a test failed.
 */
#ifndef DOLSOT_CK_RUN_H
#define DOLSOT_CK_RUN_H

#include <check.h>

/* Run every test of s (CK_NORMAL output); 0 when all passed, else 1. */
static inline int ck_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
