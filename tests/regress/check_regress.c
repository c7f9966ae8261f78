/*
 * check_regress.c - a fuzz harness (fuzz/fuzz_NAME.c, linked in) run as a
 * unit test: every seed in fuzz/corpus/NAME and every input that once
 * crashed it, kept in tests/regress/NAME, goes through the harness, whose
 * own checks abort on a violation.  HARNESS names the harness.
 */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"

#ifndef HARNESS
#error "build with -DHARNESS='\"name\"'"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feed every file of dir to the harness; returns how many. */
static int replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[4096];
		uint8_t *buf;
		long len;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
		len = ftell(f);
		rewind(f);
		buf = malloc(len > 0 ? (size_t)len : 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(seeds_pass)
{
	ck_assert_msg(replay_dir("fuzz/corpus/" HARNESS) > 0, "no seeds in fuzz/corpus/%s",
	              HARNESS);
}
END_TEST

START_TEST(past_crashes_pass)
{
	int n = replay_dir("tests/regress/" HARNESS);

	if (n == 0)
		printf("regress " HARNESS ": no past crashes kept\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("regress " HARNESS);
	TCase *tc = tcase_create(HARNESS);

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, seeds_pass);
	tcase_add_test(tc, past_crashes_pass);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
