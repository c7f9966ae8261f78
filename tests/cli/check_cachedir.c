/*
 * check_cachedir.c - an existing DOLSOT_CACHE_DIR (issue 42): one the
 * caller owns that others may read but not write (0755, what a host's
 * `mkdir -p` makes) is used, and what dolsot makes in it stays 0600 and
 * 0700; one group or others can write (0775, 0777), a symbolic link and
 * another user's directory are refused, with nothing written.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"

static struct cli_test fx;

static void setup(void)
{
	cli_test_begin(&fx, cli_usual_env);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

/* The store made by the test with mode (chmod'ed past the umask). */
static void make_store(mode_t mode)
{
	ck_assert_int_eq(mkdir(fx.store, 0700), 0);
	ck_assert_int_eq(chmod(fx.store, mode), 0);
}

static mode_t mode_of(const char *dir, const char *name)
{
	char path[4400];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_msg(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

/* Entries of dir besides . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	const struct dirent *e;
	int n = 0;

	ck_assert_msg(d != NULL, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* A call into the store must fail, saying why, and leave it empty. */
static void refused(const char *why, const char *dir)
{
	struct cli_run r;

	cli_test_cell(&fx, &r, "s", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "refusing session directory");
	ck_err_has(&r, why);
	cli_run_release(&r);
	ck_assert_int_eq(entries(dir), 0);
}

START_TEST(own_0755_is_used)
{
	char err[4096];
	struct cli_run r;

	make_store(0755);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
	cli_test_cell(&fx, &r, "s", "x = 41");
	ck_code(&r, 0);
	cli_run_release(&r);
	cli_test_cell(&fx, &r, "s", "x + 1");
	ck_code(&r, 0);
	ck_out(&r, "42\n");
	cli_run_release(&r);
	ck_assert_uint_eq(mode_of(fx.store, "."), 0755);
	ck_assert_uint_eq(mode_of(fx.store, "s.pkl"), 0600);
	ck_assert_uint_eq(mode_of(fx.store, "s.lock"), 0600);
	ck_assert_uint_eq(mode_of(fx.store, ".session.key"), 0600);
	ck_assert_uint_eq(mode_of(fx.store, "objects"), 0700);
}
END_TEST

START_TEST(mode_0775_is_refused)
{
	make_store(0775);
	refused("mode 0775 lets group or others write", fx.store);
}
END_TEST

START_TEST(mode_0777_is_refused)
{
	make_store(0777);
	refused("mode 0777 lets group or others write", fx.store);
}
END_TEST

START_TEST(symlink_is_refused)
{
	char real[4300];

	snprintf(real, sizeof(real), "%s/real", fx.tmp);
	ck_assert_int_eq(mkdir(real, 0700), 0);
	ck_assert_int_eq(symlink(real, fx.store), 0);
	refused("symbolic link", real);
}
END_TEST

START_TEST(other_owner_is_refused)
{
	uid_t uid;
	gid_t gid;
	char want[64];

	if (geteuid() != 0 || !cli_local_user(CLI_TEST_USER, &uid, &gid)) {
		printf("SKIP %s: needs root and the user %s\n", __func__, CLI_TEST_USER);
		return;
	}
	make_store(0755);
	ck_assert_int_eq(chown(fx.store, uid, gid), 0);
	snprintf(want, sizeof(want), "owned by uid %u, not 0", (unsigned)uid);
	refused(want, fx.store);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cachedir");
	TCase *tc = tcase_create("cachedir");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, own_0755_is_used);
	tcase_add_test(tc, mode_0775_is_refused);
	tcase_add_test(tc, mode_0777_is_refused);
	tcase_add_test(tc, symlink_is_refused);
	tcase_add_test(tc, other_owner_is_refused);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
