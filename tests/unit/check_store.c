/*
 * check_store.c - the store suite.
 *
 * The "common" case runs every test once per backend (a loop test whose
 * index picks the constructor); "file" holds FileStore-only behavior: the
 * directory checks, atomic saves, TTL reaping and lock files.  Each test gets
 * its own mkdtemp directory, removed by the teardown; main() also removes
 * the run's base directory in case a failing test skipped its teardown.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "deadline.h"
#include "mem_client.h"
#include "mem_server.h"
#include "redis_helper.h"
#include "store_mem.h"
#include "sign.h"
#include "stamp.h"
#include "store.h"
#include "store_file.h"
#include "fdio.h"
#include "sha256.h"
#include "unitcache.h"
#include "units.h"
#include "units_blob.h"
#include "warm_proto.h"
#include "wire.h"

#define DAY 86400.0
#define HOUR 3600.0

static char base_dir[PATH_MAX];
static char tmp_dir[PATH_MAX];
static char sess_dir[PATH_MAX];         /* tmp_dir/s, the FileStore's dir */
static char err[STORE_ERR_MAX];
#define ERR err, sizeof(err)    /* a store call's last two arguments */

static char *path_in(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	ck_assert(n > 0 && n < PATH_MAX);
	return buf;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(path_in(tmp_dir, base_dir, "t.XXXXXX")));
	path_in(sess_dir, tmp_dir, "s");
	err[0] = '\0';
}

static void host_stop(void);

static void teardown(void)
{
	host_stop();
	rm_rf(tmp_dir);
}

static struct store *open_file_ttl(double ttl)
{
	struct store *s = store_file_open(sess_dir, ttl, ERR);

	ck_assert_msg(s != NULL, "store_file_open: %s", err);
	return s;
}

static struct store *open_file(void)
{
	return open_file_ttl(0);
}

static struct store *open_mem(void)
{
	struct store *s = store_mem_open();

	ck_assert_ptr_nonnull(s);
	return s;
}

/* A script in tmp_dir named name, of text (mode 0700); its path in buf. */
static char *write_script(char *buf, const char *name, const char *text)
{
	FILE *f = fopen(path_in(buf, tmp_dir, name), "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(buf, 0700), 0);
	return buf;
}

/*
 * The example helper over tmp_dir/h, as it is (it keeps units) or behind
 * a wrapper that refuses "capabilities" as an older helper does (whole
 * blobs).
 */
static struct store *open_example_at(bool units, const char *local, double timeout)
{
	char cwd[PATH_MAX], helper[PATH_MAX], spec[3 * PATH_MAX], text[3 * PATH_MAX];
	struct store *s;

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "%s/examples/dolsot-store-dir", cwd);
	if (!units) {
		snprintf(text, sizeof(text), "#!/bin/sh\n[ \"$2\" = capabilities ] && "
		         "{ echo no such verb >&2; exit 2; }\nexec %s \"$@\"\n", helper);
		write_script(helper, "old-helper", text);
	}
	snprintf(spec, sizeof(spec), "cmd:%s %s/h", helper, tmp_dir);
	s = store_open(STORE_KIND_CMD, spec, local, 0, timeout, ERR);
	ck_assert_msg(s != NULL, "store_open %s: %s", spec, err);
	return s;
}

static struct store *open_example(bool units)
{
	return open_example_at(units, sess_dir, 5);
}

static struct store *open_cmd_units(void)
{
	return open_example(true);
}

static struct store *open_cmd_whole(void)
{
	return open_example(false);
}

struct backend {
	const char *name;
	struct store *(*open)(void);
	bool units;             /* it keeps units */
	size_t listed_extra;    /* what its list counts beyond a session's bytes (a
	                         * helper's files hold their origin line) */
};

static const struct backend backends[] = {
	{ "file", open_file, true, 0 },
	{ "mem", open_mem, true, 0 },
	{ "cmd-units", open_cmd_units, true, 11 },
	{ "cmd-whole", open_cmd_whole, false, 11 },
};

#define NBACKENDS ((int)(sizeof(backends) / sizeof(backends[0])))

static void save_str(struct store *s, const char *id, const char *v)
{
	ck_assert_msg(store_save(s, id, (const uint8_t *)v, strlen(v), false, ERR) == 0,
	              "save %s: %s", id, err);
}

/* The session as a NUL-terminated string, or NULL when not found. */
static char *load_str(struct store *s, const char *id)
{
	uint8_t *blob;
	size_t len;
	bool found;
	char *str;

	ck_assert_msg(store_load(s, id, &blob, &len, &found, ERR) == 0,
	              "load %s: %s", id, err);
	if (!found) {
		ck_assert_ptr_null(blob);
		ck_assert_uint_eq(len, 0);
		return NULL;
	}
	str = malloc(len + 1);
	ck_assert_ptr_nonnull(str);
	memcpy(str, blob, len);
	str[len] = '\0';
	free(blob);
	return str;
}

#define TEST_KEY "a test key of more than thirty-two bytes"

/* A store of the fd door: keyed, as repl.c keys every store it opens. */
static struct store *keyed(struct store *s)
{
	ck_assert_msg(store_sign_with(s, TEST_KEY, ERR) == 0, "key: %s", err);
	return s;
}

/* The stored bytes of id are want, signed for id with TEST_KEY. */
static void assert_signed(struct store *s, const char *id, const char *want)
{
	struct sign_key key;
	struct sign_meta meta;
	uint8_t *blob;
	size_t len, trailer;
	bool found;

	ck_assert_int_eq(sign_key_open(TEST_KEY, -1, &key, ERR), 0);
	ck_assert_msg(store_load(s, id, &blob, &len, &found, ERR) == 0 && found,
	              "load %s: %s", id, err);
	ck_assert_uint_eq(len, strlen(want) + SIGN_TRAILER);
	ck_assert(memcmp(blob, want, strlen(want)) == 0);
	ck_assert_int_eq(sign_verify(&key, id, blob, len, &meta, &trailer), SIGN_OK);
	ck_assert_uint_eq(trailer, SIGN_TRAILER);
	ck_assert_uint_ge(meta.seq, 1);
	free(blob);
}

static void assert_session(struct store *s, const char *id, const char *want)
{
	char *got = load_str(s, id);

	if (want == NULL) {
		ck_assert_msg(got == NULL, "session %s should be gone", id);
		return;
	}
	ck_assert_msg(got != NULL, "session %s missing", id);
	ck_assert_str_eq(got, want);
	free(got);
}

static void put_file(const char *dir, const char *name, const char *content)
{
	char path[PATH_MAX];
	FILE *f = fopen(path_in(path, dir, name), "w");

	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	ck_assert_int_eq(fclose(f), 0);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	return lstat(path_in(path, dir, name), &st) == 0;
}

/* Set a file's mtime (and atime) secs into the past. */
static void age_file(const char *dir, const char *name, double secs)
{
	char path[PATH_MAX];
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= (time_t)secs;
	t[1] = t[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, path_in(path, dir, name), t,
	                           AT_SYMLINK_NOFOLLOW), 0);
}

/* The minute between two sweeps of the file store's directory has
 * passed: its stamp goes. */
static void sweep_due_again(void)
{
	char path[PATH_MAX];

	ck_assert(unlink(path_in(path, sess_dir, ".swept")) == 0 || errno == ENOENT);
}

/* The entries of dir but the file store's sweep stamps. */
static int count_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	const struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strncmp(de->d_name, ".swept", 6) != 0)
			n++;
	closedir(d);
	return n;
}

/* The name of session id's temp file (".ID.XXXXXX.tmp") in dir, into
 * name (PATH_MAX bytes); false when there is none. */
static bool temp_name(const char *dir, const char *id, char *name)
{
	char prefix[PATH_MAX];
	DIR *d = opendir(dir);
	const struct dirent *de;
	bool found = false;

	ck_assert_ptr_nonnull(d);
	snprintf(prefix, sizeof(prefix), ".%s.", id);
	while (!found && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		found = strncmp(de->d_name, prefix, strlen(prefix)) == 0 && n > 4 &&
		        strcmp(de->d_name + n - 4, ".tmp") == 0;
		if (found)
			snprintf(name, PATH_MAX, "%s", de->d_name);
	}
	closedir(d);
	return found;
}

/* An fd of this process open on dir/name, or -1 when none is. */
static int fd_on(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat want, st;
	DIR *d = opendir("/proc/self/fd");
	const struct dirent *de;
	int fd = -1;

	ck_assert_int_eq(stat(path_in(path, dir, name), &want), 0);
	ck_assert_ptr_nonnull(d);
	while (fd < 0 && (de = readdir(d)) != NULL) {
		int n = atoi(de->d_name);

		if (de->d_name[0] != '.' && n != dirfd(d) && fstat(n, &st) == 0 &&
		    st.st_dev == want.st_dev && st.st_ino == want.st_ino)
			fd = n;
	}
	closedir(d);
	return fd;
}

static unsigned file_mode(const char *path)
{
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- common cases, once per backend ---- */

START_TEST(test_load_missing_is_not_found)
{
	struct store *s = backends[_i].open();

	assert_session(s, "nope", NULL);
	store_close(s);
}
END_TEST

START_TEST(test_save_load_replace)
{
	static const uint8_t bin[] = { 0, 1, 2, 0xff, 0, 'x' };
	struct store *s = backends[_i].open();
	uint8_t *blob;
	size_t len;
	bool found;

	save_str(s, "a", "old");
	assert_session(s, "a", "old");
	save_str(s, "a", "new content");
	assert_session(s, "a", "new content");

	ck_assert_int_eq(store_save(s, "bin", bin, sizeof(bin), false, ERR), 0);
	ck_assert_int_eq(store_load(s, "bin", &blob, &len, &found, ERR), 0);
	ck_assert(found);
	ck_assert_uint_eq(len, sizeof(bin));
	ck_assert_mem_eq(blob, bin, sizeof(bin));
	free(blob);

	/* an empty session is found, with a non-NULL blob */
	ck_assert_int_eq(store_save(s, "empty", NULL, 0, false, ERR), 0);
	ck_assert_int_eq(store_load(s, "empty", &blob, &len, &found, ERR), 0);
	ck_assert(found);
	ck_assert_ptr_nonnull(blob);
	ck_assert_uint_eq(len, 0);
	free(blob);
	store_close(s);
}
END_TEST

START_TEST(test_del_one)
{
	struct store *s = backends[_i].open();
	unsigned removed = 99;

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 1);
	assert_session(s, "a", NULL);
	assert_session(s, "b", "2");
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 0);
	store_close(s);
}
END_TEST

START_TEST(test_del_all)
{
	struct store *s = backends[_i].open();
	struct session_info *v;
	unsigned removed = 99;
	size_t n = 99;

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	save_str(s, "c", "3");
	ck_assert_int_eq(store_del(s, "all", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 3);
	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	ck_assert_int_eq(store_del(s, "all", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 0);
	store_close(s);
}
END_TEST

START_TEST(test_list_sorted_with_sizes)
{
	static const struct { const char *id, *v; } want[] = {
		{ "B", "" }, { "a", "1" }, { "b", "22" }, { "c-1", "333" },
	};
	struct store *s = backends[_i].open();
	struct session_info *v;
	size_t i, n;

	save_str(s, "c-1", "333");
	save_str(s, "a", "1");
	save_str(s, "b", "22");
	save_str(s, "B", "");
	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 4);
	for (i = 0; i < n; i++) {
		ck_assert_str_eq(v[i].id, want[i].id);
		ck_assert_uint_eq(v[i].size, strlen(want[i].v) + backends[_i].listed_extra);
		ck_assert_int_gt(v[i].mtime.tv_sec, 0);
	}
	free(v);
	store_close(s);
}
END_TEST

START_TEST(test_lock_busy_times_out)
{
	struct store *s = backends[_i].open();
	struct store_lock lk1, lk2, lk3;
	struct timespec t0;
	double ms;

	ck_assert_msg(store_lock(s, "a", -1, &lk1, ERR) == STORE_LOCKED, "%s", err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(store_lock(s, "a", 100, &lk2, ERR), STORE_LOCK_BUSY);
	ms = ms_since(&t0);
	ck_assert_str_eq(err, "another call is using it");
	ck_assert_msg(ms >= 90 && ms < 2000, "waited %.1f ms", ms);
	/* timeout 0 is a single try */
	ck_assert_int_eq(store_lock(s, "a", 0, &lk2, ERR), STORE_LOCK_BUSY);
	/* other ids are independent */
	ck_assert_msg(store_lock(s, "b", 0, &lk3, ERR) == 0, "%s", err);
	store_unlock(s, &lk1);
	ck_assert_msg(store_lock(s, "a", 0, &lk2, ERR) == 0, "%s", err);
	store_unlock(s, &lk2);
	store_unlock(s, &lk3);
	store_close(s);
}
END_TEST

struct releaser {
	struct store *s;
	struct store_lock *lk;
};

static void *release_later(void *arg)
{
	struct releaser *r = arg;
	struct timespec ts = { 0, 100 * 1000000L };

	nanosleep(&ts, NULL);
	store_unlock(r->s, r->lk);
	return NULL;
}

START_TEST(test_lock_waits_for_release)
{
	static const long timeouts[] = { -1, 5000 };
	struct store *s = backends[_i].open();
	struct store_lock held, lk;
	struct releaser r = { s, &held };
	struct timespec t0;
	pthread_t th;
	size_t k;
	double ms;

	for (k = 0; k < sizeof(timeouts) / sizeof(timeouts[0]); k++) {
		ck_assert_msg(store_lock(s, "a", -1, &held, ERR) == 0, "%s", err);
		ck_assert_int_eq(pthread_create(&th, NULL, release_later, &r), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ck_assert_msg(store_lock(s, "a", timeouts[k], &lk, ERR) == 0,
		              "%s", err);
		ms = ms_since(&t0);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
		ck_assert_msg(ms >= 50, "got the lock after %.1f ms", ms);
		store_unlock(s, &lk);
	}
	store_close(s);
}
END_TEST

START_TEST(test_invalid_ids_rejected)
{
	char long_id[STORE_ID_MAX + 2];
	const char *bad[] = {
		"", long_id, "a/b", ".x", "..", ".", "caf\xc3\xa9", "a b",
		"a\nb", "../etc",
	};
	struct store *s = backends[_i].open();
	struct store_lock lk;
	unsigned removed;
	uint8_t *blob;
	size_t k, len;
	bool found;

	memset(long_id, 'a', STORE_ID_MAX + 1);
	long_id[STORE_ID_MAX + 1] = '\0';
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(store_load(s, bad[k], &blob, &len, &found, ERR), -1);
		ck_assert_msg(strncmp(err, "invalid session id '", 20) == 0, "%s", err);
		ck_assert_int_eq(store_save(s, bad[k], (const uint8_t *)"x", 1, false, ERR),
		                 -1);
		ck_assert_int_eq(store_del(s, bad[k], &removed, ERR), -1);
		ck_assert_int_eq(store_lock(s, bad[k], 0, &lk, ERR), STORE_LOCK_FAILED);
		ck_assert_msg(strncmp(err, "invalid session id '", 20) == 0, "%s", err);
	}
	/* the longest valid id works */
	long_id[STORE_ID_MAX] = '\0';
	save_str(s, long_id, "x");
	assert_session(s, long_id, "x");
	save_str(s, "A-Z_0.9..", "y");
	assert_session(s, "A-Z_0.9..", "y");
	store_close(s);
}
END_TEST

/* ---- session ids ---- */

START_TEST(test_id_message_escapes_and_caps)
{
	char long_id[300];

	ck_assert(!store_id_valid("x/y", ERR));
	ck_assert_str_eq(err, "invalid session id 'x/y': use 1-128 characters "
	                 "from [A-Za-z0-9._-], not starting with '.'");
	ck_assert(!store_id_valid("caf\xc3\xa9\n'", ERR));
	ck_assert_msg(strncmp(err, "invalid session id 'caf\\xc3\\xa9\\x0a\\x27':",
	                      39) == 0, "%s", err);
	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	ck_assert(!store_id_valid(long_id, ERR));
	ck_assert_msg(strstr(err, "aaa...': use") != NULL, "%s", err);
	ck_assert_uint_lt(strlen(err), 200);
	/* a short buffer is cut, not overrun; NULL err is allowed */
	ck_assert(!store_id_valid("", err, 10));
	ck_assert_uint_eq(strlen(err), 9);
	ck_assert(!store_id_valid(".x", NULL, 0));
	ck_assert(store_id_valid("ok", NULL, 0));
}
END_TEST

/* ---- FileStore ---- */

START_TEST(test_dir_created_0700_with_parents)
{
	char dir[PATH_MAX], p[PATH_MAX];
	struct store *s;

	path_in(dir, tmp_dir, "x/y/sessions");
	s = store_file_open(dir, 0, ERR);
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_uint_eq(file_mode(dir), 0700);
	ck_assert_uint_eq(file_mode(path_in(p, tmp_dir, "x")), 0700);
	ck_assert_uint_eq(file_mode(path_in(p, tmp_dir, "x/y")), 0700);
	store_close(s);
	/* an existing private directory is fine */
	s = store_file_open(dir, 0, ERR);
	ck_assert_msg(s != NULL, "%s", err);
	store_close(s);
}
END_TEST

START_TEST(test_default_dir_under_tmpdir)
{
	char top[PATH_MAX], sub[PATH_MAX], name[32];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct store *s;

	snprintf(name, sizeof(name), "dolsot-%u", (unsigned)geteuid());
	path_in(top, tmp_dir, name);
	path_in(sub, top, "sessions");
	setenv("TMPDIR", tmp_dir, 1);
	s = store_file_open(NULL, 0, ERR);
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_uint_eq(file_mode(top), 0700);
	ck_assert_uint_eq(file_mode(sub), 0700);
	save_str(s, "a", "1");
	ck_assert(exists(sub, "a.pkl"));
	store_close(s);
	/* the top level is checked too */
	ck_assert_int_eq(chmod(top, 0775), 0);
	ck_assert_ptr_null(store_file_open(NULL, 0, ERR));
	ck_assert_msg(strstr(err, "group or others") != NULL, "%s", err);
	if (saved != NULL)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
}
END_TEST

START_TEST(test_refuses_symlinked_dir)
{
	char real[PATH_MAX], link[PATH_MAX];

	path_in(real, tmp_dir, "real");
	ck_assert_int_eq(mkdir(real, 0700), 0);
	ck_assert_int_eq(symlink(real, sess_dir), 0);
	errno = 0;
	ck_assert_ptr_null(store_file_open(sess_dir, 0, ERR));
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_msg(strstr(err, "refusing session directory") != NULL &&
	              strstr(err, "symbolic link") != NULL, "%s", err);
	/* a trailing slash must not make O_NOFOLLOW follow the link */
	ck_assert_ptr_null(store_file_open(path_in(link, tmp_dir, "s//"), 0, ERR));
	ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
	ck_assert_int_eq(count_entries(real), 0);
}
END_TEST

START_TEST(test_refuses_group_other_write)
{
	static const mode_t modes[] = { 0770, 0707, 0720, 0702, 0775, 0777 };
	size_t k;

	ck_assert_int_eq(mkdir(sess_dir, 0700), 0);
	for (k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		ck_assert_int_eq(chmod(sess_dir, modes[k]), 0);
		ck_assert_ptr_null(store_file_open(sess_dir, 0, ERR));
		ck_assert_msg(strstr(err, "lets group or others write") != NULL,
		              "%s", err);
		ck_assert_int_eq(count_entries(sess_dir), 0);
	}
}
END_TEST

/* A host's `mkdir -p` makes 0755: read and enter only, so it is used, and
 * what is made in it stays closed. */
START_TEST(test_accepts_group_other_read)
{
	static const mode_t modes[] = { 0755, 0750, 0701 };
	struct store *st;

	ck_assert_int_eq(mkdir(sess_dir, 0700), 0);
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		ck_assert_int_eq(chmod(sess_dir, modes[k]), 0);
		st = store_file_open(sess_dir, 0, ERR);
		ck_assert_msg(st != NULL, "mode %04o: %s", (unsigned)modes[k], err);
		store_close(st);
	}
}
END_TEST

START_TEST(test_refuses_dir_of_other_uid)
{
	if (geteuid() != 0) {
		fprintf(stderr, "check_store: skipped test_refuses_dir_of_other_uid: "
		        "needs root to chown\n");
		return;
	}
	ck_assert_int_eq(mkdir(sess_dir, 0700), 0);
	ck_assert_int_eq(chown(sess_dir, 65534, 65534), 0);
	ck_assert_ptr_null(store_file_open(sess_dir, 0, ERR));
	ck_assert_msg(strstr(err, "owned by uid 65534") != NULL, "%s", err);
	ck_assert_int_eq(count_entries(sess_dir), 0);
}
END_TEST

START_TEST(test_refuses_regular_file)
{
	char sub[PATH_MAX];

	put_file(tmp_dir, "s", "not a dir");
	ck_assert_ptr_null(store_file_open(sess_dir, 0, ERR));
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_msg(strstr(err, "not a directory") != NULL, "%s", err);
	/* a regular file as a parent */
	ck_assert_ptr_null(store_file_open(path_in(sub, sess_dir, "x"), 0, ERR));
	ck_assert_msg(strstr(err, "cannot create session directory") != NULL &&
	              strstr(err, "Not a directory") != NULL, "%s", err);
}
END_TEST

START_TEST(test_refuses_negative_ttl)
{
	ck_assert_ptr_null(store_file_open(sess_dir, -1, ERR));
	ck_assert_msg(strstr(err, "ttl") != NULL, "%s", err);
	ck_assert(!exists(tmp_dir, "s"));
}
END_TEST

START_TEST(test_save_is_atomic)
{
	struct store *s = open_file();
	char path[PATH_MAX], buf[64] = "";
	FILE *f;

	save_str(s, "a", "old");
	save_str(s, "a", "new content");
	f = fopen(path_in(path, sess_dir, "a.pkl"), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "new content");
	ck_assert_uint_eq(file_mode(path), 0600);
	ck_assert_int_eq(count_entries(sess_dir), 1);
	store_close(s);
}
END_TEST

struct save_report {
	int ret, errnum;
	char err[STORE_ERR_MAX];
};

/* A write that fails half way (RLIMIT_FSIZE) keeps the old session. */
START_TEST(test_failed_save_keeps_old_and_cleans_up)
{
	struct store *s = open_file();
	struct save_report rep;
	uint8_t big[100];
	int fds[2], status;
	pid_t pid;

	save_str(s, "a", "old");
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 10, 10 };

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		memset(&rep, 0, sizeof(rep));
		rep.ret = store_save(s, "a", big, sizeof(big), false, rep.err, sizeof(rep.err));
		rep.errnum = errno;
		store_close(s);
		_exit(write(fds[1], &rep, sizeof(rep)) == sizeof(rep) ? 0 : 1);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &rep, sizeof(rep)), sizeof(rep));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(rep.ret, -1);
	ck_assert_int_eq(rep.errnum, EFBIG);
	ck_assert_str_eq(rep.err, "cannot save session 'a': write: File too large");
	assert_session(s, "a", "old");
	ck_assert_int_eq(count_entries(sess_dir), 1);
	store_close(s);
}
END_TEST

START_TEST(test_load_refuses_non_regular)
{
	struct store *s = open_file();
	char path[PATH_MAX], target[PATH_MAX];
	struct session_info *v;
	uint8_t *blob;
	size_t len, n;
	bool found;

	ck_assert_int_eq(mkfifo(path_in(path, sess_dir, "f.pkl"), 0600), 0);
	ck_assert_int_eq(store_load(s, "f", &blob, &len, &found, ERR), -1);
	ck_assert_str_eq(err, "cannot load session 'f': f.pkl is not a regular file");
	put_file(tmp_dir, "target", "secret");
	ck_assert_int_eq(symlink(path_in(target, tmp_dir, "target"),
	                         path_in(path, sess_dir, "l.pkl")), 0);
	ck_assert_int_eq(store_load(s, "l", &blob, &len, &found, ERR), -1);
	ck_assert_str_eq(err, "cannot load session 'l': l.pkl is a symbolic link");
	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	store_close(s);
}
END_TEST

START_TEST(test_ttl_reaps_old_keeps_fresh)
{
	struct store *s = open_file_ttl(1);
	struct session_info *v;
	struct store_lock lk;
	size_t n;

	save_str(s, "old", "1");
	save_str(s, "fresh", "2");
	ck_assert_int_eq(store_lock(s, "held", -1, &lk, ERR), 0);
	age_file(sess_dir, "old.pkl", 2 * DAY);
	age_file(sess_dir, "held.lock", 2 * DAY);
	put_file(sess_dir, "idle.lock", "");
	age_file(sess_dir, "idle.lock", 2 * DAY);
	put_file(sess_dir, ".old.AbC123.tmp", "killed save");
	age_file(sess_dir, ".old.AbC123.tmp", 2 * HOUR);
	put_file(sess_dir, ".mid.QwErTy.tmp", "slow save");
	age_file(sess_dir, ".mid.QwErTy.tmp", HOUR / 2);
	put_file(sess_dir, "notes.txt", "not ours");
	age_file(sess_dir, "notes.txt", 30 * DAY);
	put_file(sess_dir, "x.pkl.bak", "not ours");
	age_file(sess_dir, "x.pkl.bak", 30 * DAY);

	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].id, "fresh");
	free(v);
	ck_assert(!exists(sess_dir, "old.pkl"));
	ck_assert(exists(sess_dir, "fresh.pkl"));
	ck_assert(!exists(sess_dir, ".old.AbC123.tmp"));
	ck_assert(exists(sess_dir, ".mid.QwErTy.tmp"));
	ck_assert(!exists(sess_dir, "idle.lock"));
	ck_assert(exists(sess_dir, "held.lock"));
	ck_assert(exists(sess_dir, "notes.txt"));
	ck_assert(exists(sess_dir, "x.pkl.bak"));
	store_unlock(s, &lk);
	store_close(s);
}
END_TEST

/* A save killed half-way leaves its temp file; the next call that locks the
 * session removes it at once, whatever its age, and touches no other's. */
START_TEST(test_lock_removes_killed_saves)
{
	struct store *s = open_file();
	struct store_lock lk;

	save_str(s, "t", "old");
	put_file(sess_dir, ".t.AbC123.tmp", "half a sess");
	put_file(sess_dir, ".u.AbC123.tmp", "another's save in flight");
	ck_assert_msg(store_lock(s, "t", 0, &lk, ERR) == 0, "%s", err);
	ck_assert(!exists(sess_dir, ".t.AbC123.tmp"));
	ck_assert(exists(sess_dir, ".u.AbC123.tmp"));
	assert_session(s, "t", "old");
	store_unlock(s, &lk);
	store_close(s);
}
END_TEST

enum op { OP_LOAD, OP_SAVE, OP_DEL, OP_LIST, OP_LOCK, OP_N };

static void run_op(struct store *s, enum op op)
{
	struct session_info *v = NULL;
	struct store_lock lk;
	unsigned removed;
	size_t n;

	switch (op) {
	case OP_LOAD:
		free(load_str(s, "other"));
		break;
	case OP_SAVE:
		save_str(s, "other", "x");
		break;
	case OP_DEL:
		ck_assert_int_eq(store_del(s, "other", &removed, ERR), 0);
		break;
	case OP_LIST:
		ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
		free(v);
		break;
	case OP_LOCK:
		ck_assert_int_eq(store_lock(s, "other", 0, &lk, ERR), 0);
		store_unlock(s, &lk);
		break;
	case OP_N:
	default:
		ck_abort();
	}
}

START_TEST(test_ttl_reaps_on_every_operation_once_a_sweep_is_due)
{
	struct store *s = open_file_ttl(1);
	int op;

	for (op = 0; op < OP_N; op++) {
		save_str(s, "old", "1");
		age_file(sess_dir, "old.pkl", 2 * DAY);
		put_file(sess_dir, ".x.aaaaaa.tmp", "");
		age_file(sess_dir, ".x.aaaaaa.tmp", 2 * HOUR);
		sweep_due_again();
		run_op(s, (enum op)op);
		ck_assert_msg(!exists(sess_dir, "old.pkl"), "op %d kept it", op);
		ck_assert_msg(!exists(sess_dir, ".x.aaaaaa.tmp"), "op %d", op);
	}
	store_close(s);
}
END_TEST

START_TEST(test_ttl_fractional_days)
{
	struct store *s = open_file_ttl(0.5);
	struct session_info *v;
	size_t n;

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	age_file(sess_dir, "a.pkl", 13 * HOUR);
	age_file(sess_dir, "b.pkl", 11 * HOUR);
	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].id, "b");
	free(v);
	store_close(s);
}
END_TEST

START_TEST(test_ttl_zero_never_reaps_sessions)
{
	struct store *s = open_file_ttl(0);

	save_str(s, "old", "1");
	age_file(sess_dir, "old.pkl", 1000 * DAY);
	put_file(sess_dir, "idle.lock", "");
	age_file(sess_dir, "idle.lock", 1000 * DAY);
	/* a killed save's temp file goes after an hour whatever the TTL */
	put_file(sess_dir, ".old.AbC123.tmp", "");
	age_file(sess_dir, ".old.AbC123.tmp", 2 * HOUR);
	sweep_due_again();
	assert_session(s, "old", "1");
	ck_assert(exists(sess_dir, "idle.lock"));
	ck_assert(!exists(sess_dir, ".old.AbC123.tmp"));
	store_close(s);
}
END_TEST

/* Issue 35: the sweep of --reset all removes what unlocked sessions left
 * behind (a killed save's temp file, a lock file without a session) and
 * never a session, locked or not. */
START_TEST(test_sweep_keeps_every_session)
{
	struct store *s = open_file();
	struct store_lock lk;

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	ck_assert_int_eq(store_lock(s, "a", 0, &lk, ERR), 0);
	put_file(sess_dir, ".b.AbC123.tmp", "killed save");
	put_file(sess_dir, "c.lock", "");
	ck_assert_msg(store_sweep(s, ERR) == 0, "%s", err);
	store_unlock(s, &lk);
	assert_session(s, "a", "1");
	assert_session(s, "b", "2");
	ck_assert(!exists(sess_dir, ".b.AbC123.tmp"));
	ck_assert(!exists(sess_dir, "c.lock"));
	store_close(s);
}
END_TEST

START_TEST(test_del_all_leaves_foreign_files)
{
	struct store *s = open_file();
	struct store_lock lk;
	unsigned removed;
	char path[PATH_MAX];

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	ck_assert_int_eq(store_lock(s, "a", 0, &lk, ERR), 0);
	store_unlock(s, &lk);
	ck_assert(exists(sess_dir, "a.lock"));
	put_file(sess_dir, ".a.Qw12er.tmp", "");
	put_file(sess_dir, "notes.txt", "");
	put_file(sess_dir, "x.pkl.bak", "");
	put_file(sess_dir, ".hidden", "");
	put_file(sess_dir, "bad name.pkl", "");
	put_file(sess_dir, ".a.tmp", "");
	ck_assert_int_eq(mkdir(path_in(path, sess_dir, "c.pkl"), 0700), 0);

	ck_assert_int_eq(store_del(s, "all", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 2);
	ck_assert(!exists(sess_dir, "a.pkl"));
	ck_assert(!exists(sess_dir, "b.pkl"));
	ck_assert(!exists(sess_dir, "a.lock"));
	ck_assert(!exists(sess_dir, ".a.Qw12er.tmp"));
	ck_assert_int_eq(count_entries(sess_dir), 6);
	ck_assert(exists(sess_dir, "notes.txt"));
	ck_assert(exists(sess_dir, "x.pkl.bak"));
	ck_assert(exists(sess_dir, ".hidden"));
	ck_assert(exists(sess_dir, "bad name.pkl"));
	ck_assert(exists(sess_dir, ".a.tmp"));
	ck_assert(exists(sess_dir, "c.pkl"));
	store_close(s);
}
END_TEST

START_TEST(test_del_removes_lock_file_only_when_free)
{
	struct store *s = open_file();
	struct store_lock lk;
	unsigned removed;

	save_str(s, "a", "1");
	ck_assert_int_eq(store_lock(s, "a", 0, &lk, ERR), 0);
	store_unlock(s, &lk);
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert(!exists(sess_dir, "a.lock"));

	save_str(s, "b", "1");
	ck_assert_int_eq(store_lock(s, "b", 0, &lk, ERR), 0);
	ck_assert_int_eq(store_del(s, "b", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert(!exists(sess_dir, "b.pkl"));
	ck_assert(exists(sess_dir, "b.lock"));
	store_unlock(s, &lk);
	store_close(s);
}
END_TEST

START_TEST(test_list_skips_foreign_names)
{
	struct store *s = open_file();
	struct session_info *v;
	char path[PATH_MAX];
	size_t n;

	save_str(s, "ok", "1");
	put_file(sess_dir, ".hidden.pkl", "");
	put_file(sess_dir, "bad name.pkl", "");
	put_file(sess_dir, "x.pkl.bak", "");
	ck_assert_int_eq(mkdir(path_in(path, sess_dir, "d.pkl"), 0700), 0);
	ck_assert_int_eq(store_list(s, &v, &n, ERR), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].id, "ok");
	ck_assert_uint_eq(v[0].size, 1);
	free(v);
	store_close(s);
}
END_TEST

/* The lock is held by another process. */
START_TEST(test_lock_busy_across_processes)
{
	struct store *s = open_file();
	int ready[2], release[2], status, fd;
	struct store_lock lk;
	char c;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(release), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		close(release[1]);
		if (store_lock(s, "a", -1, &lk, ERR) != STORE_LOCKED ||
		    write(ready[1], "x", 1) != 1)
			_exit(1);
		/* hold the lock until the parent closes its end */
		while (read(release[0], &c, 1) > 0)
			;
		store_unlock(s, &lk);
		store_close(s);
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(store_lock(s, "a", 50, &lk, ERR), STORE_LOCK_BUSY);
	ck_assert_str_eq(err, "another call is using it");
	close(release[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready[0]);
	ck_assert_msg(store_lock(s, "a", 0, &lk, ERR) == 0, "%s", err);
	fd = fd_on(sess_dir, "a.lock");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	store_unlock(s, &lk);
	ck_assert_ptr_null(lk.priv);
	/* No session "a": its holder took the lock file with it. */
	ck_assert(!exists(sess_dir, "a.lock"));
	store_close(s);
}
END_TEST

/* In a child: add 1 to session "n" rounds times under its lock; exit code. */
static int bump_counter(struct store *s, int rounds)
{
	char e[STORE_ERR_MAX], buf[32];
	struct store_lock lk;
	uint8_t *blob;
	size_t len;
	bool found;
	int n;

	while (rounds-- > 0) {
		if (store_lock(s, "n", -1, &lk, e, sizeof(e)) != STORE_LOCKED)
			return 1;
		if (store_load(s, "n", &blob, &len, &found, e, sizeof(e)) < 0 || !found ||
		    len >= sizeof(buf))
			return 2;
		memcpy(buf, blob, len);
		buf[len] = '\0';
		free(blob);
		n = snprintf(buf, sizeof(buf), "%d", atoi(buf) + 1);
		if (store_save(s, "n", (const uint8_t *)buf, (size_t)n, false, e, sizeof(e)) < 0)
			return 3;
		store_unlock(s, &lk);
	}
	return 0;
}
/* Read-modify-write under the lock from several processes loses nothing. */
START_TEST(test_lock_serializes_processes)
{
	enum { PROCS = 4, ROUNDS = 20 };
	struct store *s = open_file();
	pid_t pids[PROCS];
	char *got;
	int i, status;

	save_str(s, "n", "0");
	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			status = bump_counter(s, ROUNDS);
			store_close(s);
			_exit(status);
		}
	}
	for (i = 0; i < PROCS; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "child %d status %#x", i, status);
	}
	got = load_str(s, "n");
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(atoi(got), (intmax_t)PROCS * ROUNDS);
	free(got);
	store_close(s);
}
END_TEST

/* ---- sessions as fds (store.c), once per backend and way ---- */

/* _i picks the backend (_i / 2) and whether the save is forced into a
 * memfd (_i % 2), as under --max-file-size. */
#define BLOB_WAYS (2 * NBACKENDS)

static void write_str(int fd, const char *v)
{
	ck_assert_int_eq(write(fd, v, strlen(v)), (ssize_t)strlen(v));
}

/* The whole content of fd, NUL-terminated (from offset 0). */
static char *read_fd(int fd, size_t len)
{
	char *buf = calloc(1, len + 1);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, len, 0), (ssize_t)len);
	return buf;
}

static void begin(struct store *s, const char *id, bool memfd, struct store_save *sv)
{
	ck_assert_msg(store_save_begin(s, id, memfd, 0, sv, ERR) == 0, "begin: %s", err);
	ck_assert_int_ge(sv->fd, 0);
	ck_assert(fcntl(sv->fd, F_GETFD) & FD_CLOEXEC);
}

START_TEST(test_blob_fd_round_trip)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;
	size_t len;
	bool found;
	int fd;
	char *got;

	ck_assert_int_eq(store_open_blob(s, "a", &fd, &len, &found, ERR), 0);
	ck_assert(!found);
	ck_assert_int_eq(fd, -1);
	begin(s, "a", _i % 2, &sv);
	write_str(sv.fd, "written by a worker");
	ck_assert_msg(store_save_commit(s, &sv, 19, ERR) == 0, "commit: %s", err);
	ck_assert_int_eq(sv.fd, -1);
	store_save_abort(s, &sv);   /* after a commit: nothing left to drop */
	assert_signed(s, "a", "written by a worker");
	ck_assert_int_eq(store_open_blob(s, "a", &fd, &len, &found, ERR), 0);
	ck_assert(found);
	ck_assert_uint_eq(len, 19);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	got = read_fd(fd, len);
	ck_assert_str_eq(got, "written by a worker");
	free(got);
	close(fd);
	store_close(s);
}
END_TEST

START_TEST(test_blob_abort_keeps_old)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;

	save_str(s, "a", "old");
	begin(s, "a", _i % 2, &sv);
	write_str(sv.fd, "half");
	store_save_abort(s, &sv);
	ck_assert_int_eq(sv.fd, -1);
	assert_session(s, "a", "old");
	if (_i / 2 == 0)
		ck_assert_int_eq(count_entries(sess_dir), 1);   /* no temp file */
	store_close(s);
}
END_TEST

/* A writer that stopped short (or wrote on) saves nothing. */
START_TEST(test_blob_commit_checks_length)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;

	save_str(s, "a", "old");
	begin(s, "a", _i % 2, &sv);
	write_str(sv.fd, "abc");
	ck_assert_int_eq(store_save_commit(s, &sv, 5, ERR), -1);
	ck_assert_str_eq(err, "cannot save session 'a': write: Input/output error");
	ck_assert_int_eq(sv.fd, -1);
	assert_session(s, "a", "old");
	if (_i / 2 == 0)
		ck_assert_int_eq(count_entries(sess_dir), 1);
	store_close(s);
}
END_TEST

START_TEST(test_blob_save_fail_words_it)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;

	save_str(s, "a", "old");
	begin(s, "a", _i % 2, &sv);
	ck_assert_int_eq(store_save_fail(s, &sv, "write", ENOSPC, ERR), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_str_eq(err, "cannot save session 'a': write: No space left on device");
	assert_session(s, "a", "old");
	if (_i / 2 == 0)
		ck_assert_int_eq(count_entries(sess_dir), 1);
	store_close(s);
}
END_TEST

START_TEST(test_blob_refuses_invalid_id)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;
	size_t len;
	bool found;
	int fd;

	ck_assert_int_eq(store_open_blob(s, "../x", &fd, &len, &found, ERR), -1);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(store_save_begin(s, "../x", _i % 2, 0, &sv, ERR), -1);
	ck_assert_int_eq(sv.fd, -1);
	store_close(s);
}
END_TEST

/* The FileStore's save fd is its own 0600 temp file, renamed into place. */
START_TEST(test_blob_file_save_is_a_temp_file)
{
	struct store *s = keyed(open_file());
	struct store_save sv;
	char path[PATH_MAX], tmp[PATH_MAX];

	begin(s, "a", false, &sv);
	ck_assert(temp_name(sess_dir, "a", tmp));
	ck_assert_int_eq(fd_on(sess_dir, tmp), sv.fd);
	ck_assert_uint_eq(file_mode(path_in(path, sess_dir, tmp)), 0600);
	ck_assert(!exists(sess_dir, "a.pkl"));
	write_str(sv.fd, "new");
	ck_assert_int_eq(store_save_commit(s, &sv, 3, ERR), 0);
	ck_assert_uint_eq(file_mode(path_in(path, sess_dir, "a.pkl")), 0600);
	ck_assert_int_eq(count_entries(sess_dir), 1);
	assert_signed(s, "a", "new");
	store_close(s);
}
END_TEST

/* A session file is never handed out: the worker gets a memfd of its
 * own with the verified copy, without its trailer; writing to it, or
 * reopening it, cannot reach the store. */
START_TEST(test_blob_file_open_is_a_verified_copy)
{
	struct store *s = keyed(open_file());
	struct store_save sv;
	struct stat a, b;
	char path[PATH_MAX];
	size_t len;
	bool found;
	int fd;

	begin(s, "a", false, &sv);
	write_str(sv.fd, "state");
	ck_assert_msg(store_save_commit(s, &sv, 5, ERR) == 0, "commit: %s", err);
	ck_assert_int_eq(store_open_blob(s, "a", &fd, &len, &found, ERR), 0);
	ck_assert(found);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq((int)a.st_size, 5);
	ck_assert_int_eq(stat(path_in(path, sess_dir, "a.pkl"), &b), 0);
	ck_assert(a.st_ino != b.st_ino || a.st_dev != b.st_dev);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ck_assert_int_eq(pwrite(fd, "XXXXX", 5, 0), 5);
	close(fd);
	assert_signed(s, "a", "state");
	store_close(s);
}
END_TEST

/* A save in progress (the worker writes the temp file at the end of a call)
 * is kept however long the call runs, as long as its session is locked. */
START_TEST(test_reap_keeps_a_locked_sessions_old_temp_file)
{
	struct store *s = keyed(open_file()), *other = open_file();
	struct store_save sv;
	struct store_lock lk;
	char name[PATH_MAX];
	struct session_info *v;
	size_t n;

	ck_assert_int_eq(store_lock(s, "slow", -1, &lk, ERR), 0);
	begin(s, "slow", false, &sv);
	ck_assert(temp_name(sess_dir, "slow", name));
	age_file(sess_dir, name, 2 * HOUR);
	ck_assert_int_eq(store_list(other, &v, &n, ERR), 0);   /* reaps */
	free(v);
	ck_assert(exists(sess_dir, name));
	write_str(sv.fd, "late");
	ck_assert_msg(store_save_commit(s, &sv, 4, ERR) == 0, "commit: %s", err);
	store_unlock(s, &lk);
	assert_signed(other, "slow", "late");
	/* Once its session is free, an old temp file is a killed save's. */
	put_file(sess_dir, ".slow.AbC123.tmp", "killed save");
	age_file(sess_dir, ".slow.AbC123.tmp", 2 * HOUR);
	ck_assert_int_eq(store_list(other, &v, &n, ERR), 0);
	free(v);
	ck_assert(!exists(sess_dir, ".slow.AbC123.tmp"));
	store_close(other);
	store_close(s);
}
END_TEST


/* The origin the client records: sandboxed through save and through a
 * commit, cleared by an unsandboxed one, gone with the session. */
START_TEST(test_origin_follows_the_last_writer)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;
	unsigned removed;
	bool sb;

	ck_assert_int_eq(store_origin(s, "a", &sb, ERR), 0);
	ck_assert(!sb);
	ck_assert_int_eq(store_save(s, "a", (const uint8_t *)"x", 1, true, ERR), 0);
	ck_assert_int_eq(store_origin(s, "a", &sb, ERR), 0);
	ck_assert(sb);
	begin(s, "a", _i % 2, &sv);
	write_str(sv.fd, "yy");
	sv.sandboxed = false;
	ck_assert_msg(store_save_commit(s, &sv, 2, ERR) == 0, "commit: %s", err);
	ck_assert_int_eq(store_origin(s, "a", &sb, ERR), 0);
	ck_assert(!sb);
	begin(s, "a", _i % 2, &sv);
	write_str(sv.fd, "zzz");
	sv.sandboxed = true;
	ck_assert_msg(store_save_commit(s, &sv, 3, ERR) == 0, "commit: %s", err);
	ck_assert_int_eq(store_origin(s, "a", &sb, ERR), 0);
	ck_assert(sb);
	assert_signed(s, "a", "zzz");
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	ck_assert_int_eq(store_origin(s, "a", &sb, ERR), 0);
	ck_assert(!sb);
	ck_assert_int_eq(store_save(s, "b", (const uint8_t *)"x", 1, true, ERR), 0);
	ck_assert_int_eq(store_del(s, "all", &removed, ERR), 0);
	ck_assert_int_eq(store_origin(s, "b", &sb, ERR), 0);
	ck_assert(!sb);
	if (_i / 2 == 0)
		ck_assert(!exists(sess_dir, "b.sandboxed"));
	store_close(s);
}
END_TEST

/* A bounded save: the memfd cannot grow past the bound, and a commit over
 * it is refused with the old session kept and no temp file left. */
START_TEST(test_bounded_save_refuses_more)
{
	struct store *s = keyed(backends[_i / 2].open());
	struct store_save sv;
	char big[64];

	memset(big, 'b', sizeof(big));
	save_str(s, "a", "old");
	ck_assert_int_eq(store_save_begin(s, "a", _i % 2, 16, &sv, ERR), 0);
	if (_i % 2) {
		ck_assert_int_eq(pwrite(sv.fd, big, sizeof(big), 0), -1);
		ck_assert_int_eq(errno, EPERM);
	}
	ck_assert_int_eq(pwrite(sv.fd, big, 10, 0), 10);
	if (_i % 2)
		ck_assert_int_eq(ftruncate(sv.fd, 17), -1);
	ck_assert_int_eq(store_save_commit(s, &sv, 17, ERR), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_msg(strstr(err, "over the maximum session size of 16 bytes"), "%s", err);
	assert_session(s, "a", "old");
	if (_i / 2 == 0)
		ck_assert_int_eq(count_entries(sess_dir), 1);   /* a.pkl alone */
	store_close(s);
}
END_TEST

/* issue 21: an expired session a call holds is not reaped by another
 * process's sweep (it would delete the save the call is about to make);
 * once free, it is, with its lock file. */
START_TEST(test_reap_spares_an_expired_session_a_call_holds)
{
	struct store *s = open_file(), *other = open_file_ttl(1);
	struct session_info *v;
	struct store_lock lk;
	size_t n;

	save_str(s, "a", "1");
	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	age_file(sess_dir, "a.pkl", 2 * DAY);
	ck_assert_int_eq(store_list(other, &v, &n, ERR), 0);   /* reaps */
	free(v);
	ck_assert(exists(sess_dir, "a.pkl"));
	store_unlock(s, &lk);
	ck_assert_int_eq(store_list(other, &v, &n, ERR), 0);
	free(v);
	ck_assert_uint_eq(n, 0);
	ck_assert(!exists(sess_dir, "a.pkl"));
	ck_assert(!exists(sess_dir, "a.lock"));
	store_close(other);
	store_close(s);
}
END_TEST

/* issue 21: deleting every session skips a locked one and its save in
 * progress, which then commits; a free one goes with its killed save's
 * temp file. */
START_TEST(test_del_all_keeps_a_locked_session_and_its_save)
{
	struct store *s = keyed(open_file()), *other = keyed(open_file());
	struct store_save sv;
	struct store_lock lk;
	char name[PATH_MAX];
	unsigned removed;

	save_str(s, "a", "1");
	save_str(s, "b", "2");
	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	begin(s, "a", false, &sv);
	ck_assert(temp_name(sess_dir, "a", name));
	put_file(sess_dir, ".b.AbC123.tmp", "killed save");
	ck_assert_msg(store_del(other, "all", &removed, ERR) == 0, "%s", err);
	ck_assert_uint_eq(removed, 1);
	ck_assert(exists(sess_dir, "a.pkl"));
	ck_assert(exists(sess_dir, name));
	ck_assert(!exists(sess_dir, "b.pkl"));
	ck_assert(!exists(sess_dir, ".b.AbC123.tmp"));
	ck_assert(!exists(sess_dir, "b.lock"));
	write_str(sv.fd, "22");
	ck_assert_msg(store_save_commit(s, &sv, 2, ERR) == 0, "commit: %s", err);
	store_unlock(s, &lk);
	assert_signed(other, "a", "22");
	store_close(other);
	store_close(s);
}
END_TEST

/* issue 21: --reset ID deletes under the lock; the unlock takes the lock
 * file with it.  A session that stays keeps its lock file. */
START_TEST(test_unlock_of_a_deleted_session_removes_its_lock_file)
{
	struct store *s = open_file();
	struct store_lock lk;
	unsigned removed;

	save_str(s, "a", "1");
	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	ck_assert_uint_eq(removed, 1);
	ck_assert(exists(sess_dir, "a.lock"));
	store_unlock(s, &lk);
	ck_assert(!exists(sess_dir, "a.lock"));
	ck_assert_int_eq(count_entries(sess_dir), 0);
	ck_assert_int_eq(store_lock(s, "b", -1, &lk, ERR), 0);
	save_str(s, "b", "2");
	store_unlock(s, &lk);
	ck_assert(exists(sess_dir, "b.lock"));
	store_close(s);
}
END_TEST

/* ---- mem_server: the lock table and the incarnation fence ---- */

/* One request to sm on a fresh socketpair; *client is our end, *srv the
 * server's.  Returns what mem_server_handle said (keep watching srv). */
static bool mem_ask(struct mem_server *sm, uint16_t type, uint64_t a, const char *id,
                    const char *lock, int fd, int *client, int *srv)
{
	uint8_t payload[512];
	struct wire_msg m = { .type = type, .a = a };
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	m.len = 0;
	ck_assert_int_eq(wire_put(payload, &m.len, "id", id), 0);
	if (lock)
		ck_assert_int_eq(wire_put(payload, &m.len, "lock", lock), 0);
	m.payload = payload;
	if (fd >= 0) {
		m.fds[0] = fd;
		m.nfds = 1;
	}
	*client = sv[0];
	*srv = sv[1];
	return mem_server_handle(sm, sv[1], &m);
}

/* The answer on client, released; its type, and a and b into *a and *b. */
static uint16_t mem_answer(int client, uint64_t *a, uint64_t *b, char *text, size_t len)
{
	struct wire_msg m;

	ck_assert_int_eq(wire_recv(client, &m), 1);
	if (a)
		*a = m.a;
	if (b)
		*b = m.b;
	if (text)
		snprintf(text, len, "%.*s", (int)m.len, m.len ? (const char *)m.payload : "");
	wire_msg_release(&m);
	return m.type;
}

static bool has_answer(int client)
{
	char c;

	return recv(client, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

/* Room for the fds of a full lock table and as many again. */
static void raise_nofile(void)
{
	struct rlimit rl;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 4 * MEM_SERVER_MAX_LOCKS + 64) {
		rl.rlim_cur = rl.rlim_max;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	if (rl.rlim_cur < 4 * MEM_SERVER_MAX_LOCKS + 64)
		ck_abort_msg("RLIMIT_NOFILE %lu too low for the test", (unsigned long)rl.rlim_cur);
}

/* issue 21: past the bound, a lock request is answered busy and leaves
 * no entry; once the connections close, the whole table is free again. */
START_TEST(test_mem_lock_table_bound_rejects_cleanly)
{
	static int cl[MEM_SERVER_MAX_LOCKS], sv[MEM_SERVER_MAX_LOCKS];
	struct mem_server *sm = mem_server_new(-1);
	char text[STORE_ERR_MAX];
	uint64_t busy;
	int c, sfd;

	raise_nofile();
	ck_assert_ptr_nonnull(sm);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < MEM_SERVER_MAX_LOCKS; i++)
			ck_assert_msg(mem_ask(sm, WIRE_MEM_LOCK, 0, "x", NULL, -1, &cl[i], &sv[i]),
			              "round %d: lock %d refused", round, i);
		ck_assert_int_eq(mem_answer(cl[0], NULL, NULL, NULL, 0), WIRE_MEM_LOCKED);
		ck_assert(!has_answer(cl[1]));   /* waiting */
		for (int extra = 0; extra < 5; extra++) {
			ck_assert(!mem_ask(sm, WIRE_MEM_LOCK, 0, extra ? "y" : "x", NULL, -1, &c, &sfd));
			ck_assert_int_eq(mem_answer(c, &busy, NULL, text, sizeof(text)), WIRE_MEM_ERR);
			ck_assert_uint_eq(busy, 1);
			ck_assert_msg(strncmp(text, "the memory store already has 1024 calls", 39) == 0,
			              "%s", text);
			close(c);
			close(sfd);
		}
		/* Every connection goes, holder last: nothing stays behind. */
		for (int i = MEM_SERVER_MAX_LOCKS; i-- > 0;) {
			mem_server_closed(sm, sv[i]);
			close(sv[i]);
			close(cl[i]);
		}
	}
	ck_assert(mem_ask(sm, WIRE_MEM_LOCK, 1, "x", NULL, -1, &c, &sfd));
	ck_assert_int_eq(mem_answer(c, NULL, NULL, NULL, 0), WIRE_MEM_LOCKED);
	/* A lock that must not wait is answered busy at once, with no entry. */
	{
		int c2, s2;

		ck_assert(!mem_ask(sm, WIRE_MEM_LOCK, 1, "x", NULL, -1, &c2, &s2));
		ck_assert_int_eq(mem_answer(c2, &busy, NULL, text, sizeof(text)), WIRE_MEM_ERR);
		ck_assert_uint_eq(busy, 1);
		ck_assert_str_eq(text, "another call is using it");
		close(c2);
		close(s2);
	}
	mem_server_closed(sm, sfd);
	close(sfd);
	close(c);
	mem_server_free(sm);
}
END_TEST

static int memfd_of(const char *v)
{
	int fd = memfd_create("t", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	write_str(fd, v);
	return fd;
}

/* Send one request that is answered at once; its answer's type. */
static uint16_t mem_once(struct mem_server *sm, uint16_t type, uint64_t a, const char *id,
                         const char *lock, const char *blob, uint64_t *ra, char *text,
                         size_t len)
{
	int c, srv, fd = blob ? memfd_of(blob) : -1;
	uint16_t t;

	ck_assert(!mem_ask(sm, type, a, id, lock, fd, &c, &srv));
	t = mem_answer(c, ra, NULL, text, len);
	if (fd >= 0)
		close(fd);
	close(c);
	close(srv);
	return t;
}

/* issue 21: a save must name a lock held in this incarnation; the next
 * incarnation refuses the old one's lock and says the session is gone,
 * from the ids the first kept on disk, until it is reset. */
START_TEST(test_mem_incarnation_fences_saves_and_names_lost_sessions)
{
	char lock[64], text[STORE_ERR_MAX], when[64];
	struct mem_server *one, *two;
	uint64_t inc, token, a;
	int c, srv, dfd;

	ck_assert_int_eq(mkdir(sess_dir, 0700), 0);
	dfd = open(sess_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	one = mem_server_new(dfd);
	ck_assert_ptr_nonnull(one);
	ck_assert(mem_ask(one, WIRE_MEM_LOCK, 0, "x", NULL, -1, &c, &srv));
	ck_assert_int_eq(mem_answer(c, &inc, &token, NULL, 0), WIRE_MEM_LOCKED);
	snprintf(lock, sizeof(lock), "%016llx:%llu", (unsigned long long)inc,
	         (unsigned long long)token);
	ck_assert_int_eq(mem_once(one, WIRE_MEM_SAVE, 0, "x", NULL, "v1", NULL, text,
	                          sizeof(text)), WIRE_MEM_ERR);
	ck_assert_str_eq(text, "cannot save session 'x': the call does not hold its lock");
	ck_assert_int_eq(mem_once(one, WIRE_MEM_SAVE, 0, "x", lock, "v1", NULL, NULL, 0),
	                 WIRE_MEM_OK);
	ck_assert(exists(sess_dir, MEM_SERVER_IDS_FILE));

	/* The server dies with the lock held; another takes its place. */
	two = mem_server_new(dfd);
	ck_assert_ptr_nonnull(two);
	ck_assert_int_eq(mem_once(two, WIRE_MEM_SAVE, 0, "x", lock, "v2", NULL, text,
	                          sizeof(text)), WIRE_MEM_ERR);
	ck_assert_msg(strstr(text, "the memory store was restarted at ") &&
	              strstr(text, "while this call held session 'x', so the cell's result "
	                     "is not saved"), "%s", text);
	ck_assert_int_eq(mem_once(two, WIRE_MEM_LOAD, 0, "x", NULL, NULL, NULL, text,
	                          sizeof(text)), WIRE_MEM_ERR);
	ck_assert_msg(strncmp(text, "session 'x' is gone: the memory store was restarted at ",
	                      55) == 0, "%s", text);
	ck_assert_msg(strstr(text, "'dolsot --reset x' starts it anew"), "%s", text);
	snprintf(when, sizeof(when), "%.25s", text + 55);
	ck_assert_msg(when[4] == '-' && strcmp(when + 19, "+00:00") == 0, "%s", when);
	/* A third incarnation still remembers it, lost at the same time. */
	mem_server_free(two);
	two = mem_server_new(dfd);
	ck_assert_int_eq(mem_once(two, WIRE_MEM_LOAD, 0, "x", NULL, NULL, NULL, text,
	                          sizeof(text)), WIRE_MEM_ERR);
	ck_assert_msg(strstr(text, when), "%s vs %s", text, when);
	/* --reset x forgets it: x starts anew. */
	{
		int c2, s2;
		uint64_t i2, t2;
		char lock2[64];

		ck_assert(mem_ask(two, WIRE_MEM_LOCK, 0, "x", NULL, -1, &c2, &s2));
		ck_assert_int_eq(mem_answer(c2, &i2, &t2, NULL, 0), WIRE_MEM_LOCKED);
		ck_assert_uint_ne(i2, inc);
		snprintf(lock2, sizeof(lock2), "%016llx:%llu", (unsigned long long)i2,
		         (unsigned long long)t2);
		ck_assert_int_eq(mem_once(two, WIRE_MEM_DEL, 0, "x", lock2, NULL, &a, NULL, 0),
		                 WIRE_MEM_OK);
		ck_assert_uint_eq(a, 0);
		ck_assert_int_eq(mem_once(two, WIRE_MEM_LOAD, 0, "x", lock2, NULL, &a, NULL, 0),
		                 WIRE_MEM_BLOB);
		ck_assert_uint_eq(a, 0);
		ck_assert_int_eq(mem_once(two, WIRE_MEM_SAVE, 0, "x", lock2, "v3", NULL, NULL, 0),
		                 WIRE_MEM_OK);
		mem_server_closed(two, s2);
		close(s2);
		close(c2);
	}
	mem_server_free(two);
	mem_server_closed(one, srv);
	close(srv);
	close(c);
	mem_server_free(one);
	close(dfd);
}
END_TEST

/* ---- signed sessions and forks, on every backend ---- */

/* id's blob through the fd door: its text, or NULL with err set. */
static char *open_str(struct store *s, const char *id)
{
	size_t len;
	bool found;
	int fd;
	char *got;

	if (store_open_blob(s, id, &fd, &len, &found, ERR) < 0) {
		ck_assert_int_eq(fd, -1);
		ck_assert(!found);
		return NULL;
	}
	ck_assert(found);
	got = read_fd(fd, len);
	close(fd);
	return got;
}

static void commit_str(struct store *s, const char *id, const char *v, bool sandboxed)
{
	struct store_save sv;

	begin(s, id, false, &sv);
	write_str(sv.fd, v);
	sv.sandboxed = sandboxed;
	ck_assert_msg(store_save_commit(s, &sv, strlen(v), ERR) == 0, "commit: %s", err);
}

static void assert_refused(struct store *s, const char *id, const char *why)
{
	char want[256];

	ck_assert_ptr_null(open_str(s, id));
	ck_assert_msg(strstr(err, why), "%s: %s", id, err);
	snprintf(want, sizeof(want), "session '%s' cannot be loaded: ", id);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	snprintf(want, sizeof(want), "; run 'dolsot --reset %s' to start it afresh", id);
	ck_assert_msg(strstr(err, want), "%s", err);
}

/* A session as a dolsot before signing wrote it: no trailer. */
#define UNSIGNED "DLSS\002 a session of before signing, with no trailer at all."

/* A changed byte anywhere, the bytes under another id, another key, no
 * signature at all: each refused before anything is handed on. */
START_TEST(test_signature_refusals)
{
	struct store *s = keyed(backends[_i].open());
	uint8_t *blob;
	size_t len;
	bool found;
	char *got;

	commit_str(s, "a", "pickle bytes", false);
	got = open_str(s, "a");
	ck_assert_str_eq(got, "pickle bytes");
	free(got);
	ck_assert_int_eq(store_load(s, "a", &blob, &len, &found, ERR), 0);
	/* under another id */
	ck_assert_int_eq(store_save(s, "b", blob, len, false, ERR), 0);
	assert_refused(s, "b", "its signature does not match");
	/* each byte changed in turn, the trailer's included */
	for (size_t i = 0; i < len; i++) {
		blob[i] ^= 0x20;
		ck_assert_int_eq(store_save(s, "c", blob, len, false, ERR), 0);
		assert_refused(s, "c", i + 8 < len ? "its signature does not match"
		                                     : "it carries no signature");
		blob[i] ^= 0x20;
	}
	/* cut short, through its magic or below any trailer */
	ck_assert_int_eq(store_save(s, "c", blob, len - 1, false, ERR), 0);
	assert_refused(s, "c", "it is truncated (its stored bytes end before the end of its "
	               "signature)");
	ck_assert_int_eq(store_save(s, "c", blob, SIGN_TRAILER_V1 - 1, false, ERR), 0);
	assert_refused(s, "c", "it is truncated");
	/* written before signing */
	save_str(s, "old", UNSIGNED);
	assert_refused(s, "old", "it carries no signature (it was written before dolsot "
	               "signed sessions");
	/* another key */
	ck_assert_int_eq(store_sign_with(s, TEST_KEY " but another", ERR), 0);
	assert_refused(s, "a", "signed with another key");
	free(blob);
	store_close(s);
}
END_TEST

/* A store nobody keyed hands out nothing and takes nothing. */
START_TEST(test_unkeyed_store_refuses)
{
	struct store *s = backends[_i].open();
	struct store_save sv;
	size_t len;
	bool found;
	int fd;

	save_str(s, "a", "x");
	ck_assert_int_eq(store_open_blob(s, "a", &fd, &len, &found, ERR), -1);
	ck_assert_str_eq(err, "session 'a': this store has no session key");
	begin(s, "a", false, &sv);
	write_str(sv.fd, "y");
	ck_assert_int_eq(store_save_commit(s, &sv, 1, ERR), -1);
	assert_session(s, "a", "x");
	store_close(s);
}
END_TEST

START_TEST(test_fork_copies_and_signs_for_the_new_id)
{
	struct store *s = keyed(backends[_i].open());
	size_t len;
	bool sb;
	char *got;

	commit_str(s, "src", "the state", true);
	ck_assert_msg(store_fork(s, "src", "dst", false, &len, ERR) == 0, "fork: %s", err);
	ck_assert_uint_eq(len, 9);
	got = open_str(s, "dst");
	ck_assert_str_eq(got, "the state");
	free(got);
	assert_signed(s, "dst", "the state");
	assert_signed(s, "src", "the state");
	/* The origin travels: a sandboxed call's bytes stay marked. */
	ck_assert_int_eq(store_origin(s, "dst", &sb, ERR), 0);
	ck_assert(sb);
	/* An existing destination: only when asked. */
	commit_str(s, "dst", "moved on", false);
	ck_assert_int_eq(store_fork(s, "src", "dst", false, &len, ERR), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_msg(strstr(err, "'dst' already exists (add --replace"), "%s", err);
	assert_signed(s, "dst", "moved on");
	ck_assert_int_eq(store_fork(s, "src", "dst", true, &len, ERR), 0);
	assert_signed(s, "dst", "the state");
	/* No source; a source that does not verify. */
	ck_assert_int_eq(store_fork(s, "none", "new", false, &len, ERR), -1);
	ck_assert_str_eq(err, "cannot fork session 'none': there is no such session");
	save_str(s, "bad", UNSIGNED);
	ck_assert_int_eq(store_fork(s, "bad", "new", false, &len, ERR), -1);
	ck_assert_msg(strstr(err, "session 'bad' cannot be loaded: it carries no signature"),
	              "%s", err);
	assert_session(s, "new", NULL);
	ck_assert_int_eq(store_fork(s, "src", "../x", false, &len, ERR), -1);
	store_close(s);
}
END_TEST

/* A small file's text, NUL-terminated. */
static char *read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *text = calloc(1, 256);
	ssize_t n;

	ck_assert_msg(fd >= 0 && text, "%s: %s", path, strerror(errno));
	n = read(fd, text, 255);
	ck_assert_int_ge(n, 0);
	close(fd);
	return text;
}

/* The stored bytes of sess_dir/ID.pkl, replaced as a writer of the
 * directory would. */
static void put_pkl(const char *id, const uint8_t *b, size_t n)
{
	char path[PATH_MAX], name[STORE_ID_MAX + 8];
	int fd;

	snprintf(name, sizeof(name), "%s.pkl", id);
	fd = open(path_in(path, sess_dir, name), O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	close(fd);
}

/* Every commit is numbered, one past the last, and FileStore records the
 * number in ID.lock; an earlier save put back is refused, one signed
 * before saves were numbered too, and a reset starts the count over. */
START_TEST(test_an_earlier_save_put_back_is_refused)
{
	struct store *s = keyed(open_file());
	struct store_lock lk;
	char path[PATH_MAX], *text;
	uint8_t *old, *now;
	size_t n_old, n_now;
	bool found;
	unsigned removed;

	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	commit_str(s, "a", "one", false);
	ck_assert_int_eq(store_load(s, "a", &old, &n_old, &found, ERR), 0);
	commit_str(s, "a", "two", false);
	text = read_file(path_in(path, sess_dir, "a.lock"));
	ck_assert_str_eq(text, "00000000000000000002\n");
	free(text);
	ck_assert_int_eq(store_load(s, "a", &now, &n_now, &found, ERR), 0);
	put_pkl("a", old, n_old);
	assert_refused(s, "a", "it is an earlier save (number 1) than the one the store last "
	               "committed (number 2), put back by someone who can write the store");
	/* Signed the old way (no counter): as early as can be. */
	put_pkl("a", (const uint8_t *)UNSIGNED, strlen(UNSIGNED));
	assert_refused(s, "a", "it carries no signature");
	/* The latest one loads, and the next save goes on from it. */
	put_pkl("a", now, n_now);
	text = open_str(s, "a");
	ck_assert_str_eq(text, "two");
	free(text);
	commit_str(s, "a", "three", false);
	text = read_file(path_in(path, sess_dir, "a.lock"));
	ck_assert_str_eq(text, "00000000000000000003\n");
	free(text);
	/* Reset: the count goes with the session. */
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	store_unlock(s, &lk);
	ck_assert(!exists(sess_dir, "a.lock"));
	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	commit_str(s, "a", "anew", false);
	text = read_file(path_in(path, sess_dir, "a.lock"));
	ck_assert_str_eq(text, "00000000000000000001\n");
	free(text);
	store_unlock(s, &lk);
	free(old);
	free(now);
	store_close(s);
}
END_TEST

/* Who wrote a session: its signature and the store's record together; a
 * record that says "unsandboxed" of bytes signed as a sandboxed call's is
 * the record changed. */
START_TEST(test_the_signed_origin_outvotes_the_record)
{
	static const struct {
		bool signed_sb, record_sb;
		enum store_origin want;
	} cases[] = {
		{ false, false, STORE_ORIGIN_HOST },
		{ true, true, STORE_ORIGIN_SANDBOXED },
		{ false, true, STORE_ORIGIN_SANDBOXED },
		{ true, false, STORE_ORIGIN_DISPUTED },
	};
	struct store *s = keyed(backends[_i].open());
	struct store_lock lk;

	ck_assert_int_eq(store_lock(s, "a", -1, &lk, ERR), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		enum store_origin origin;
		uint8_t *blob, *rec;
		size_t len, rec_len;
		bool found;
		int fd;

		commit_str(s, "a", "bytes", cases[i].signed_sb);
		ck_assert_int_eq(store_load(s, "a", &blob, &len, &found, ERR), 0);
		/* The record rewritten, the signed bytes kept. */
		ck_assert_int_eq(store_save(s, "a", blob, len, cases[i].record_sb, ERR), 0);
		free(blob);
		ck_assert_msg(store_open_blob_rec(s, "a", &fd, &len, &found, &rec, &rec_len,
		                                  &origin, STORE_UNITS_UNREAD, ERR) == 0, "%s", err);
		close(fd);
		ck_assert_msg(origin == cases[i].want, "case %zu: %d", i, (int)origin);
	}
	store_unlock(s, &lk);
	store_close(s);
}
END_TEST

/* ---- the lock's three outcomes, over every backend (issue 41) ---- */

/* The warm server's memory store for mem_client.c: mem_server's table
 * behind a socket in the store's directory, served by a process of its own
 * until stop is written.  A process, not a thread: a test forks racers,
 * and under AddressSanitizer (gcc 12's has no fork handlers for its
 * allocator) a child forked while another thread allocates finds the
 * allocator's lock held forever, and its first malloc hangs. */
#define HOST_FDS 512   /* lock connections stay: a hundred racers hold some */
struct mem_host {
	int listen_fd, stop[2];
	pid_t pid;
	bool running;
};

static struct mem_host host;
static struct redis_test lock_rd = { .pid = -1 };

/* One connection's turn: false when it is done (closed, or its lock gone). */
static bool host_serve(struct mem_server *sm, int fd)
{
	struct wire_msg m;

	if (wire_recv(fd, &m) != 1) {
		mem_server_closed(sm, fd);
		close(fd);
		return false;
	}
	(void)mem_server_handle(sm, fd, &m);
	wire_msg_release(&m);
	return true;
}

static __attribute__((noreturn)) void host_loop(const struct mem_host *h)
{
	struct mem_server *sm = mem_server_new(-1);
	struct pollfd p[HOST_FDS] = { { h->stop[0], POLLIN, 0 }, { h->listen_fd, POLLIN, 0 } };
	size_t n = 2;

	if (!sm)
		_exit(1);
	while (poll(p, n, -1) >= 0 && !p[0].revents) {
		for (size_t i = n; i-- > 2;)
			if (p[i].revents && !host_serve(sm, p[i].fd))
				p[i] = p[--n];
		if ((p[1].revents & POLLIN) && n < HOST_FDS) {
			int fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				p[n++] = (struct pollfd){ fd, POLLIN, 0 };
		}
	}
	_exit(0);
}

static void host_stop(void)
{
	int status;

	if (!host.running)
		return;
	ck_assert_int_eq(write(host.stop[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(host.pid, &status, 0), host.pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(host.stop[0]);
	close(host.stop[1]);
	host.running = false;
}

static struct store *open_mem_client(void)
{
	struct store *dir = open_file(), *s;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	pid_t test_pid;

	warm_proto_socket_path(store_home(dir), addr.sun_path, sizeof(addr.sun_path));
	host.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(host.listen_fd, 0);
	ck_assert_int_eq(bind(host.listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ck_assert_int_eq(listen(host.listen_fd, 128), 0);
	ck_assert_int_eq(pipe2(host.stop, O_CLOEXEC), 0);
	test_pid = getpid();
	host.pid = fork();
	ck_assert_int_ge(host.pid, 0);
	if (host.pid == 0) {
		/* It ends with the test, whatever ends the test. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != test_pid)
			_exit(1);
		host_loop(&host);
	}
	close(host.listen_fd);
	host.running = true;
	s = mem_client_open(dir, ERR);
	ck_assert_msg(s != NULL, "mem_client_open: %s", err);
	return s;
}

/* No server: its socket goes with it. */
static void fail_mem_client(struct store *s)
{
	char path[PATH_MAX];

	host_stop();
	warm_proto_socket_path(store_home(s), path, sizeof(path));
	ck_assert_int_eq(unlink(path), 0);
}

static struct store *open_redis(void)
{
	struct store *s;

	path_in(lock_rd.dir, tmp_dir, "redis");
	ck_assert_int_eq(mkdir(lock_rd.dir, 0700), 0);
	lock_rd.port = 0;
	redis_test_start(&lock_rd, NULL, NULL);
	s = store_open(STORE_KIND_REDIS, lock_rd.url, sess_dir, 0, 5, ERR);
	ck_assert_msg(s != NULL, "store_open redis: %s", err);
	return s;
}

static void fail_redis(struct store *s)
{
	(void)s;
	redis_test_stop(&lock_rd);
}

/* A helper whose lock answers as the files busy and fail in tmp_dir say. */
static struct store *open_cmd(void)
{
	char helper[PATH_MAX], spec[PATH_MAX + 8], text[3 * PATH_MAX];
	struct store *s;

	snprintf(text, sizeof(text),
	         "#!/bin/sh\n[ \"$1\" = lock ] || exit 0\n[ -e %s/busy ] && exit 1\n"
	         "[ -e %s/fail ] && { echo the helper broke >&2; exit 3; }\necho locked\n",
	         tmp_dir, tmp_dir);
	write_script(helper, "helper", text);
	snprintf(spec, sizeof(spec), "cmd:%s", helper);
	s = store_open(STORE_KIND_CMD, spec, sess_dir, 0, 5, ERR);
	ck_assert_msg(s != NULL, "store_open cmd: %s", err);
	return s;
}

static void touch_in_tmp(const char *name)
{
	char path[PATH_MAX];
	int fd = open(path_in(path, tmp_dir, name), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void busy_cmd(void)
{
	touch_in_tmp("busy");
}

static void fail_cmd(struct store *s)
{
	char path[PATH_MAX];

	(void)s;
	ck_assert_int_eq(unlink(path_in(path, tmp_dir, "busy")), 0);
	touch_in_tmp("fail");
}

/* The lock file is a directory. */
static void fail_file(struct store *s)
{
	char path[PATH_MAX];

	(void)s;
	ck_assert_int_eq(mkdir(path_in(path, sess_dir, "a.lock"), 0700), 0);
}

struct lock_backend {
	const char *name;
	struct store *(*open)(void);
	void (*make_busy)(void);        /* NULL: the test holds "a" itself */
	const char *busy_has;           /* in the busy reason */
	void (*make_fail)(struct store *s);     /* NULL: only an invalid id fails */
	const char *fail_has;           /* in the failure's reason */
	bool fails_gone;                /* it fails as STORE_LOCK_GONE: its server is */
};

static const struct lock_backend lock_backends[] = {
	{ "file", open_file, NULL, STORE_BUSY_WHY, fail_file, "open a.lock: Is a directory",
	  false },
	{ "mem", open_mem, NULL, STORE_BUSY_WHY, NULL, "invalid session id", false },
	{ "memory", open_mem_client, NULL, STORE_BUSY_WHY, fail_mem_client,
	  "the memory store is gone: no warm server runs", true },
	{ "redis", open_redis, NULL, STORE_BUSY_WHY " (its lock on redis://127.0.0.1:",
	  fail_redis, ": cannot connect: ", false },
	{ "cmd", open_cmd, busy_cmd, STORE_BUSY_WHY " (its lock in store helper '",
	  fail_cmd, "the helper broke", false },
};

/* Locked, busy (at once and after a wait) and failed (the memory store:
 * gone, with its server), each with its reason, and nothing held unless
 * locked. */
START_TEST(test_lock_three_outcomes)
{
	const struct lock_backend *b = &lock_backends[_i];
	struct store *s = b->open();
	struct store_lock held = { NULL }, lk;

	ck_assert_msg(store_lock(s, "a", 0, &held, ERR) == STORE_LOCKED, "%s: %s", b->name, err);
	ck_assert_ptr_nonnull(held.priv);
	if (b->make_busy) {
		store_unlock(s, &held);
		b->make_busy();
	}
	for (long ms = 0; ms <= 50; ms += 50) {
		err[0] = '\0';
		lk.priv = &lk;
		ck_assert_msg(store_lock(s, "a", ms, &lk, ERR) == STORE_LOCK_BUSY, "%s: %s",
		              b->name, err);
		ck_assert_ptr_null(lk.priv);
		ck_assert_msg(strncmp(err, b->busy_has, strlen(b->busy_has)) == 0, "%s: %s",
		              b->name, err);
	}
	store_unlock(s, &held);
	if (b->make_fail)
		b->make_fail(s);
	lk.priv = &lk;
	ck_assert_int_eq(store_lock(s, b->make_fail ? "a" : "../a", 0, &lk, ERR),
	                 b->fails_gone ? STORE_LOCK_GONE : STORE_LOCK_FAILED);
	ck_assert_ptr_null(lk.priv);
	ck_assert_msg(strstr(err, b->fail_has) && !strstr(err, "busy"), "%s: %s", b->name, err);
	store_close(s);
	host_stop();
	redis_test_stop(&lock_rd);
}
END_TEST

/* ---- version 4 sessions: a head and units (units.h) ---- */

static const char *const ABC[] = { "unit a", "unit b", "unit c" };

/* Commit a v4 blob of id naming units[0..n), packed as packed says (NULL:
 * all), through a save of the way memfd; the commit's result. */
static size_t write_units(struct store *s, const char *id, const char *const *units,
                          size_t n, const bool *packed, bool memfd, uint64_t max,
                          struct store_save *sv)
{
	size_t len;
	uint8_t *b = units_blob("the index", units, n, packed, &len);

	ck_assert_msg(store_save_begin(s, id, memfd, max, sv, ERR) == 0, "begin: %s", err);
	ck_assert_int_eq(write(sv->fd, b, len), (ssize_t)len);
	if (fd_grow_sealed(sv->fd))
		ck_assert_int_eq(ftruncate(sv->fd, (off_t)len), 0);
	free(b);
	return len;
}

/* id's lock, as a call takes it before it saves (Redis refuses a save
 * without it). */
static void lock_id(struct store *s, const char *id, struct store_lock *lk)
{
	ck_assert_msg(store_lock(s, id, 5000, lk, ERR) == STORE_LOCKED, "lock %s: %s", id, err);
}

static int commit_units_held(struct store *s, const char *id, const char *const *units,
                             size_t n, const bool *packed, bool memfd, uint64_t max)
{
	struct store_save sv;
	size_t len = write_units(s, id, units, n, packed, memfd, max, &sv);

	return store_save_commit(s, &sv, len, ERR);
}

/* The same under id's lock. */
static int commit_units(struct store *s, const char *id, const char *const *units,
                        size_t n, const bool *packed, bool memfd, uint64_t max)
{
	struct store_lock lk;
	int ret;

	lock_id(s, id, &lk);
	ret = commit_units_held(s, id, units, n, packed, memfd, max);
	store_unlock(s, &lk);
	return ret;
}

/* The path of the unit text in the FileStore's objects. */
static char *unit_path(char *buf, const char *text)
{
	char hex[UNITS_HEX_LEN + 1];
	int n;

	units_blob_hex(text, hex);
	n = snprintf(buf, PATH_MAX, "%s/objects/%.2s/%s", sess_dir, hex, hex + 2);
	ck_assert(n > 0 && n < PATH_MAX);
	return buf;
}

static bool unit_stored(const char *text)
{
	char path[PATH_MAX];
	struct stat st;

	return lstat(unit_path(path, text), &st) == 0 && S_ISREG(st.st_mode);
}

/* How many units the FileStore keeps (temp files aside). */
static int count_units(void)
{
	char objs[PATH_MAX], sub[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(path_in(objs, sess_dir, "objects"));
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n += count_entries(path_in(sub, objs, e->d_name));
	closedir(d);
	return n;
}

/* id's blob through the fd door, packed or not: its bytes and length. */
static uint8_t *open_units(struct store *s, const char *id, bool pack, size_t *len)
{
	enum store_origin origin;
	uint8_t *rec, *got;
	size_t rec_len;
	bool found;
	int fd;

	ck_assert_msg(store_open_blob_rec(s, id, &fd, len, &found, &rec, &rec_len, &origin,
	                                  pack ? STORE_UNITS_PACKED : STORE_UNITS_UNREAD, ERR) == 0,
	              "open %s: %s", id, err);
	ck_assert(found);
	got = (uint8_t *)read_fd(fd, *len);
	close(fd);
	free(rec);
	return got;
}

/* The bytes id's store keeps for it, trailer cut: the head on a store
 * with units. */
static size_t stored_len(struct store *s, const char *id)
{
	uint8_t *blob;
	size_t len;
	bool found;

	ck_assert_int_eq(store_load(s, id, &blob, &len, &found, ERR), 0);
	ck_assert(found);
	free(blob);
	return len - SIGN_TRAILER;
}

static size_t head_len_of(const char *const *units, size_t n)
{
	bool none[8] = { false };
	size_t len;

	free(units_blob("the index", units, n, none, &len));
	return len;
}

/* The FileStore's units, as the units cases see a store's. */
static void drop_file_unit(const char *text)
{
	char path[PATH_MAX];

	ck_assert_int_eq(unlink(unit_path(path, text)), 0);
}

static struct store *open_file_again(void)
{
	return store_file_open(sess_dir, 0, ERR);
}

/* The Redis store's: keys "dolsot:unit:HEX" of the test's redis-server. */
static struct store *open_redis_again(void)
{
	return store_open(STORE_KIND_REDIS, lock_rd.url, sess_dir, 0, 5, ERR);
}

static void redis_unit_key(char *buf, size_t len, const char *text)
{
	char hex[UNITS_HEX_LEN + 1];

	units_blob_hex(text, hex);
	snprintf(buf, len, "dolsot:unit:%s", hex);
}

static bool redis_unit_stored(const char *text)
{
	char key[128], got[32];

	redis_unit_key(key, sizeof(key), text);
	return strcmp(redis_test_query(&lock_rd, got, sizeof(got), NULL, "EXISTS %s", key),
	              "1") == 0;
}

static void drop_redis_unit(const char *text)
{
	char key[128], got[32];

	redis_unit_key(key, sizeof(key), text);
	ck_assert_str_eq(redis_test_query(&lock_rd, got, sizeof(got), NULL, "DEL %s", key), "1");
}

/* How many keys of the test's redis-server match pattern (SCAN). */
static int count_redis_keys(const char *pattern)
{
	redisContext *c = redis_test_conn(&lock_rd, NULL);
	char cursor[32] = "0";
	int n = 0;

	ck_assert_msg(c && !c->err, "cannot reach the test's redis-server");
	do {
		redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);

		ck_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		n += (int)r->element[1]->elements;
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	redisFree(c);
	return n;
}

static int count_redis_units(void)
{
	return count_redis_keys("dolsot:unit:*");
}

/* The memory store's: the units of the test's server (open_mem_client's
 * host), as another client of it sees them. */
static struct store *open_mem_again(void)
{
	struct store *s = mem_client_open(open_file_again(), ERR);

	ck_assert_msg(s != NULL, "mem_client_open: %s", err);
	return s;
}

static int count_mem_units(void)
{
	struct store *s = open_mem_again();
	uint8_t *v;
	size_t n;

	ck_assert_msg(s->ops->obj_list(s, &v, &n, ERR) == 0, "%s", err);
	free(v);
	store_close(s);
	return (int)n;
}

static void mem_unit_hash(const char *text, uint8_t hash[UNITS_HASH_LEN])
{
	char hex[UNITS_HEX_LEN + 1];

	units_blob_hex(text, hex);
	ck_assert_int_eq(units_unhex(hex, UNITS_HEX_LEN, hash), 0);
}

static bool mem_unit_stored(const char *text)
{
	struct store *s = open_mem_again();
	uint8_t hash[UNITS_HASH_LEN];
	bool has;

	mem_unit_hash(text, hash);
	ck_assert_msg(s->ops->obj_has(s, hash, &has, ERR) == 0, "%s", err);
	store_close(s);
	return has;
}

/* Removed as a collector would: under the exclusive units lock. */
static void drop_mem_unit(const char *text)
{
	struct store *s = open_mem_again();
	uint8_t hash[UNITS_HASH_LEN];

	mem_unit_hash(text, hash);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_EXCLUSIVE, ERR), 0);
	ck_assert_msg(s->ops->obj_del(s, hash, ERR) == 0, "%s", err);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_RELEASE, ERR), 0);
	store_close(s);
}

/* A store with units, as the units cases drive it. */
struct units_backend {
	const char *name;
	struct store *(*open)(void);
	struct store *(*open_again)(void);  /* another client of it (a racer's) */
	int (*count)(void);
	bool (*stored)(const char *text);
	void (*drop)(const char *text);
};

static const struct units_backend units_backends[] = {
	{ "file", open_file, open_file_again, count_units, unit_stored, drop_file_unit },
	{ "redis", open_redis, open_redis_again, count_redis_units, redis_unit_stored,
	  drop_redis_unit },
	{ "memory", open_mem_client, open_mem_again, count_mem_units, mem_unit_stored,
	  drop_mem_unit },
};

#define NUNITS_BACKENDS ((int)(sizeof(units_backends) / sizeof(units_backends[0])))

/* A whole v4 blob in, the same back out: on a store with units when the
 * load asks for the pack, and always on one of whole blobs. */
START_TEST(test_units_commit_and_load)
{
	int b = _i / 2;   /* every backend of backends[], then redis */
	const struct units_backend *ub = b == 0 ? &units_backends[0]
	                                 : b == NBACKENDS ? &units_backends[1] : NULL;
	struct store *s = keyed(ub ? ub->open() : backends[b].open());
	bool units = b == NBACKENDS || backends[b].units;
	size_t len, whole_len, head = head_len_of(ABC, 3);
	uint8_t *whole = units_blob("the index", ABC, 3, NULL, &whole_len), *got;

	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, _i % 2, 0) == 0, "%s", err);
	got = open_units(s, "a", true, &len);
	ck_assert_uint_eq(len, whole_len);
	ck_assert_mem_eq(got, whole, len);
	free(got);
	got = open_units(s, "a", false, &len);
	ck_assert_uint_eq(len, units ? head : whole_len);
	ck_assert_mem_eq(got, whole, len);
	free(got);
	ck_assert_uint_eq(stored_len(s, "a"), units ? head : whole_len);
	if (ub) {   /* a store whose units the test can count */
		char path[PATH_MAX], objs[PATH_MAX];

		ck_assert_int_eq(ub->count(), 3);
		if (b == 0) {
			ck_assert_uint_eq(file_mode(unit_path(path, "unit a")), 0600);
			ck_assert_uint_eq(file_mode(path_in(objs, sess_dir, "objects")), 0700);
		}
		/* A unit gone: the pack leaves it out, the worker says so. */
		ub->drop("unit b");
		got = open_units(s, "a", true, &len);
		ck_assert_uint_eq(len, whole_len - UNITS_REF_LEN - UNITS_INLINE_MAX);
		free(got);
	}
	free(whole);
	store_close(s);
}
END_TEST

/* A symlink planted as the objects directory (or one of its HH) is never
 * followed: the commit is refused and nothing lands where it points. */
START_TEST(test_units_symlinked_objects_refused)
{
	struct store *s = keyed(open_file());
	char objs[PATH_MAX], elsewhere[PATH_MAX], path[PATH_MAX];

	save_str(s, "keep", "x");   /* makes the directory */
	ck_assert_int_eq(mkdir(path_in(elsewhere, tmp_dir, "elsewhere"), 0700), 0);
	ck_assert_int_eq(symlink(elsewhere, path_in(objs, sess_dir, "objects")), 0);
	ck_assert_int_eq(commit_units(s, "a", ABC, 3, NULL, false, 0), -1);
	ck_assert_msg(strstr(err, "cannot save session 'a': "), "%s", err);
	ck_assert_int_eq(count_entries(elsewhere), 0);
	/* One level down. */
	ck_assert_int_eq(unlink(objs), 0);
	ck_assert_int_eq(mkdir(objs, 0700), 0);
	unit_path(path, "unit a");
	path[strlen(objs) + 3] = '\0';
	ck_assert_int_eq(symlink(elsewhere, path), 0);
	ck_assert_int_eq(commit_units(s, "a", ABC, 3, NULL, false, 0), -1);
	ck_assert_int_eq(count_entries(elsewhere), 0);
	assert_session(s, "a", NULL);
	store_close(s);
}
END_TEST

/* A unit under UNITS_INLINE_MAX stays with the head, signed with it: no
 * file of its own, so a new value of it leaves no garbage. */
START_TEST(test_units_small_stay_with_the_head)
{
	static const char *const first[] = { "small:x", "unit a" };
	static const char *const then[] = { "small:y", "unit a" };
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	size_t len, whole_len, head = head_len_of(first, 2);
	uint8_t *whole = units_blob("the index", first, 2, NULL, &whole_len), *got;

	ck_assert_msg(commit_units(s, "a", first, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(ub->count(), 1);
	ck_assert(ub->stored("unit a") && !ub->stored("small:x"));
	got = open_units(s, "a", false, &len);
	ck_assert_uint_eq(len, head + UNITS_REF_LEN + strlen("small:x"));
	free(got);
	got = open_units(s, "a", true, &len);
	ck_assert_uint_eq(len, whole_len);
	free(got);
	ck_assert_msg(commit_units(s, "a", then, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(ub->count(), 1);
	free(whole);
	store_close(s);
}
END_TEST

/* A unit of STAMP_MIN bytes or more is stored with its stamp (stamp.h),
 * which matches the file as stored and stops matching once the file is
 * changed in any way; the stamp goes with its unit.  A smaller unit has
 * none. */
START_TEST(test_units_large_get_a_stamp)
{
	struct store *s = keyed(open_file());
	char *big = malloc(STAMP_MIN + 2), path[PATH_MAX], stamp[PATH_MAX + 8], *text;
	const char *units[] = { NULL, "unit a" };
	struct stat st;
	unsigned removed;

	ck_assert_ptr_nonnull(big);
	memset(big, 'x', STAMP_MIN + 1);
	big[STAMP_MIN + 1] = '\0';
	units[0] = big;
	ck_assert_msg(commit_units(s, "a", units, 2, NULL, false, 0) == 0, "%s", err);
	snprintf(stamp, sizeof(stamp), "%s" STAMP_SUFFIX, unit_path(path, big));
	text = read_file(stamp);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg(stamp_matches(text, strlen(text), &st), "stamp %s", text);
	ck_assert_int_eq(chmod(path, 0600), 0);   /* moves the change time, not the bytes */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(!stamp_matches(text, strlen(text), &st));
	free(text);
	snprintf(stamp, sizeof(stamp), "%s" STAMP_SUFFIX, unit_path(path, "unit a"));
	ck_assert_int_eq(access(stamp, F_OK), -1);
	ck_assert_int_eq(store_del(s, "a", &removed, ERR), 0);
	snprintf(stamp, sizeof(stamp), "%s" STAMP_SUFFIX, unit_path(path, big));
	ck_assert_int_eq(access(stamp, F_OK), -1);
	ck_assert_int_eq(count_units(), 0);
	free(big);
	store_close(s);
}
END_TEST

START_TEST(test_units_dir_names_the_objects)
{
	struct store *file = keyed(open_file()), *mem = keyed(open_mem());
	char buf[PATH_MAX], want[PATH_MAX];

	ck_assert_int_eq(store_units_dir(file, buf, sizeof(buf), ERR), 1);
	ck_assert_str_eq(buf, path_in(want, sess_dir, "objects"));
	ck_assert(!exists(sess_dir, "objects"));   /* the first put makes it */
	ck_assert_int_eq(mkdir(want, 0755), 0);
	ck_assert_int_eq(store_units_dir(file, buf, sizeof(buf), ERR), -1);
	ck_assert_str_eq(err, "cannot open the store's objects directory: it is not a private "
	                      "directory of ours");
	ck_assert_int_eq(store_units_dir(mem, buf, sizeof(buf), ERR), 1);   /* none to read */
	ck_assert_str_eq(buf, "");
	store_close(file);
	store_close(mem);
}
END_TEST

/* Each unit kept once whoever names it; a session's reset takes only
 * what no other head names; a commit drops what its previous head alone
 * named; the last head gone takes the rest. */
START_TEST(test_units_shared_and_collected)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	static const char *const ab[] = { "unit a", "unit b" }, *const bc[] = { "unit b", "unit c" },
	                         *const c[] = { "unit c" };
	unsigned n;

	ck_assert_msg(commit_units(s, "one", ab, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_msg(commit_units(s, "two", bc, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(ub->count(), 3);
	ck_assert_int_eq(store_del(s, "one", &n, ERR), 0);
	ck_assert(!ub->stored("unit a"));
	ck_assert(ub->stored("unit b") && ub->stored("unit c"));
	/* Only c now, packed by nobody: the store has it. */
	ck_assert_msg(commit_units(s, "two", c, 1, (bool[]){ false }, false, 0) == 0, "%s",
	              err);
	ck_assert(!ub->stored("unit b"));
	ck_assert(ub->stored("unit c"));
	ck_assert_int_eq(store_del(s, "two", &n, ERR), 0);
	ck_assert_int_eq(ub->count(), 0);
	ck_assert_ptr_null(store_take_notice(s));
	store_close(s);
}
END_TEST

/* Deleting every session keeps a locked one, and the units it names. */
START_TEST(test_units_del_all_keeps_a_locked_sessions_units)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open()), *other = keyed(ub->open_again());
	static const char *const ab[] = { "unit a", "unit b" }, *const bc[] = { "unit b", "unit c" };
	struct store_lock lk;
	unsigned n;

	ck_assert_msg(commit_units(s, "one", ab, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_msg(commit_units(s, "two", bc, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(store_lock(other, "two", 0, &lk, ERR), STORE_LOCKED);
	ck_assert_int_eq(store_del(s, "all", &n, ERR), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(!ub->stored("unit a"));
	ck_assert(ub->stored("unit b") && ub->stored("unit c"));
	store_unlock(other, &lk);
	store_close(other);
	store_close(s);
}
END_TEST

/* --fork copies the head: the units are not copied, and stay while any
 * head names them. */
START_TEST(test_units_fork_copies_no_unit)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	struct store_lock lk;
	char path[PATH_MAX];
	struct stat before, after;
	size_t len, n_listed;
	unsigned n;
	uint8_t *got, *whole = units_blob("the index", ABC, 3, NULL, &len);

	ck_assert_msg(commit_units(s, "src", ABC, 3, NULL, false, 0) == 0, "%s", err);
	if (_i == 0)
		ck_assert_int_eq(lstat(unit_path(path, "unit a"), &before), 0);
	lock_id(s, "dst", &lk);
	ck_assert_msg(store_fork(s, "src", "dst", false, &len, ERR) == 0, "fork: %s", err);
	ck_assert_uint_eq(len, head_len_of(ABC, 3));
	ck_assert_int_eq(ub->count(), 3);
	if (_i == 0) {
		ck_assert_int_eq(lstat(path, &after), 0);
		ck_assert_uint_eq(before.st_ino, after.st_ino);
		ck_assert_uint_eq(after.st_nlink, 1);
	} else if (_i == 1) {
		ck_assert_int_eq(count_redis_keys("dolsot:session:*"), 2);   /* two heads */
	} else {
		struct session_info *info;

		ck_assert_int_eq(store_list(s, &info, &n_listed, ERR), 0);   /* two heads */
		ck_assert_uint_eq(n_listed, 2);
		free(info);
	}
	ck_assert_int_eq(store_del(s, "src", &n, ERR), 0);
	ck_assert_int_eq(ub->count(), 3);
	got = open_units(s, "dst", true, &len);
	ck_assert_mem_eq(got, whole, len);
	free(got);
	/* Forked over by a session naming fewer: the rest goes. */
	ck_assert_msg(commit_units(s, "small", ABC, 1, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(store_fork(s, "small", "dst", true, &len, ERR), 0);
	store_unlock(s, &lk);
	ck_assert_int_eq(ub->count(), 1);
	free(whole);
	store_close(s);
}
END_TEST

/* A pack entry whose bytes are not its hash's: refused, the old session
 * kept, nothing of it stored. */
START_TEST(test_units_bad_hash_refused)
{
	struct store *s = keyed(units_backends[_i].open());
	struct store_save sv;
	struct store_lock lk;
	char hex[UNITS_HEX_LEN + 1], want[STORE_ERR_MAX];
	size_t len, mlen;
	uint8_t *b = units_blob("the index", ABC, 3, NULL, &len), *got;
	uint8_t *mine = units_blob("the index", ABC, 1, NULL, &mlen);

	ck_assert_msg(commit_units(s, "a", ABC, 1, NULL, false, 0) == 0, "%s", err);
	b[len - 1] ^= 1;   /* the last unit's last byte */
	lock_id(s, "a", &lk);
	begin(s, "a", false, &sv);
	ck_assert_int_eq(write(sv.fd, b, len), (ssize_t)len);
	ck_assert_int_eq(store_save_commit(s, &sv, len, ERR), -1);
	store_unlock(s, &lk);
	ck_assert_msg(strstr(err, "its bytes do not match its hash; the previous session is "
	                     "kept"), "%s", err);
	got = open_units(s, "a", true, &len);
	ck_assert_uint_eq(len, mlen);
	ck_assert_mem_eq(got, mine, len);
	free(got);
	/* A head naming a unit nobody packed nor stored. */
	ck_assert_int_eq(commit_units(s, "a", (const char *const[]){ "unit a", "unit z" }, 2,
	                              (bool[]){ true, false }, false, 0), -1);
	units_blob_hex("unit z", hex);
	snprintf(want, sizeof(want), "cannot save session 'a': unit %s missing; the previous "
	         "session is kept", hex);
	ck_assert_str_eq(err, want);
	got = open_units(s, "a", true, &len);
	ck_assert_mem_eq(got, mine, len);
	free(got);
	free(b);
	free(mine);
	store_close(s);
}
END_TEST

/* A store of whole blobs takes a v4 blob only with every unit. */
START_TEST(test_units_whole_store_wants_every_unit)
{
	struct store *s = keyed(open_cmd_whole());
	char hex[UNITS_HEX_LEN + 1], want[STORE_ERR_MAX];

	ck_assert_int_eq(commit_units(s, "a", ABC, 3, (bool[]){ true, false, true }, _i, 0),
	                 -1);
	units_blob_hex("unit b", hex);
	snprintf(want, sizeof(want), "cannot save session 'a': unit %s missing (this store "
	         "keeps whole sessions: the save must hold every unit); the previous session "
	         "is kept", hex);
	ck_assert_str_eq(err, want);
	assert_session(s, "a", NULL);
	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, _i, 0) == 0, "%s", err);
	store_close(s);
}
END_TEST

/* DOLSOT_MAX_SESSION_SIZE bounds the head and its units, whether packed
 * or already stored. */
START_TEST(test_units_size_is_head_and_refs)
{
	struct store *s = keyed(units_backends[_i].open());
	size_t head = head_len_of(ABC, 3), units = (size_t)UNITS_INLINE_MAX * 3;
	bool none[3] = { false, false, false };
	char want[STORE_ERR_MAX];

	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, false, 0) == 0, "%s", err);
	ck_assert_msg(commit_units(s, "a", ABC, 3, none, false, head + units) == 0, "%s", err);
	ck_assert_int_eq(commit_units(s, "a", ABC, 3, none, false, head + units - 1), -1);
	snprintf(want, sizeof(want), "cannot save session 'a': it is %zu bytes, over the "
	         "maximum session size of %zu bytes (DOLSOT_MAX_SESSION_SIZE); the previous "
	         "session is kept", head + units, head + units - 1);
	ck_assert_str_eq(err, want);
	store_close(s);
}
END_TEST

/* --list: a session's size is its stored bytes and its units'; the
 * objects directory is no session; a sweep keeps what heads name and
 * removes what none does. */
START_TEST(test_units_list_and_sweep)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	struct session_info *info;
	size_t n;
	uint8_t h[UNITS_HASH_LEN];

	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(store_list(s, &info, &n, ERR), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(info[0].id, "a");
	ck_assert_uint_eq(info[0].size, stored_len(s, "a") + SIGN_TRAILER + 3 * UNITS_INLINE_MAX);
	free(info);
	sha256_bytes("an orphan", 9, h);
	ck_assert_int_eq(s->ops->obj_put(s, h, (const uint8_t *)"an orphan", 9, ERR), 0);
	ck_assert_int_eq(ub->count(), 4);
	ck_assert_int_eq(store_sweep(s, ERR), 0);
	ck_assert_int_eq(ub->count(), 3);
	ck_assert(!ub->stored("an orphan"));
	store_close(s);
}
END_TEST

/* A head that cannot be read stops collecting, and the store says so. */
START_TEST(test_units_damaged_head_stops_collecting)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	struct store_lock lk;
	uint8_t h[UNITS_HASH_LEN];
	char *notice;

	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, false, 0) == 0, "%s", err);
	lock_id(s, "bad", &lk);
	save_str(s, "bad", "DLSS\004 cut short");
	store_unlock(s, &lk);
	sha256_bytes("an orphan", 9, h);
	ck_assert_int_eq(s->ops->obj_put(s, h, (const uint8_t *)"an orphan", 9, ERR), 0);
	ck_assert_int_eq(store_sweep(s, ERR), 0);
	ck_assert_int_eq(ub->count(), 4);
	notice = store_take_notice(s);
	ck_assert_ptr_nonnull(notice);
	ck_assert_msg(strstr(notice, "unused units not removed: session 'bad' has a damaged "
	                     "head"), "%s", notice);
	free(notice);
	store_close(s);
}
END_TEST

/* TTL reaping takes the expired session's units with it. */
START_TEST(test_units_reaped_with_their_session)
{
	struct store *s = keyed(open_file_ttl(1.0));
	struct store_lock lk;

	ck_assert_msg(commit_units(s, "old", ABC, 2, NULL, false, 0) == 0, "%s", err);
	ck_assert_msg(commit_units(s, "new", ABC + 1, 2, NULL, false, 0) == 0, "%s", err);
	age_file(sess_dir, "old.pkl", 2 * DAY);
	sweep_due_again();
	ck_assert_int_eq(store_lock(s, "new", 1000, &lk, ERR), STORE_LOCKED);
	store_unlock(s, &lk);
	assert_session(s, "old", NULL);
	ck_assert(!unit_stored("unit a"));
	ck_assert(unit_stored("unit b") && unit_stored("unit c"));
	store_close(s);
}
END_TEST

/* A full disk (RLIMIT_FSIZE below a unit's size): the commit is refused,
 * the old session kept. */
START_TEST(test_units_disk_full_keeps_the_old_session)
{
	struct store *s = keyed(open_file());
	struct store_save sv;
	struct rlimit old, small;
	char big[4096 + 1];
	const char *units[] = { "unit a", big };
	size_t len, mlen;
	uint8_t *got, *mine = units_blob("the index", ABC, 1, NULL, &mlen);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_msg(commit_units(s, "a", ABC, 1, NULL, false, 0) == 0, "%s", err);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = 2048;
	signal(SIGXFSZ, SIG_IGN);
	len = write_units(s, "a", units, 2, NULL, false, 0, &sv);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
	ck_assert_int_eq(store_save_commit(s, &sv, len, ERR), -1);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_msg(strstr(err, "File too large; the previous session is kept"), "%s", err);
	got = open_units(s, "a", true, &len);
	ck_assert_uint_eq(len, mlen);
	ck_assert_mem_eq(got, mine, len);
	free(got);
	free(mine);
	store_close(s);
}
END_TEST

#define RACERS 100
#define RACE_ROUNDS 3

/* One racer: its session's commits, each naming a unit all racers share,
 * one of its own kept from round to round (packed only first) and a new
 * one of its own.  Exits 0 when every commit went through. */
static void race_commits(const struct units_backend *ub, int i)
{
	struct store *s = ub->open_again();
	char id[32], mine[32], fresh[32], shared[32];
	const char *units[3] = { shared, mine, fresh };
	struct store_lock lk;
	int bad = s == NULL || store_sign_with(s, TEST_KEY, ERR) < 0;

	snprintf(id, sizeof(id), "racer-%d", i);
	snprintf(mine, sizeof(mine), "kept by %d", i);
	for (int r = 0; r < RACE_ROUNDS && !bad; r++) {
		snprintf(shared, sizeof(shared), "shared %d", r);
		snprintf(fresh, sizeof(fresh), "new %d %d", i, r);
		bad = store_lock(s, id, -1, &lk, ERR) != STORE_LOCKED ||
		      commit_units_held(s, id, units, 3, (bool[]){ true, r == 0, true }, false,
		                        0) < 0;
		if (!bad || lk.priv)
			store_unlock(s, &lk);
	}
	if (bad)
		fprintf(stderr, "racer %d: %s\n", i, err);
	store_close(s);
	_exit(bad);
}

/* A helper that keeps units holds them as files (the example's
 * DIR/.units/HEX) and the head, marked as one; the same helper behind a
 * wrapper that no longer says "units" refuses the head rather than hand
 * a worker a session whose units look lost. */
START_TEST(test_cmd_units_kept_by_the_helper)
{
	struct store *s = keyed(open_cmd_units());
	char path[PATH_MAX], hex[UNITS_HEX_LEN + 1], line[12] = "";
	uint8_t *blob;
	size_t len;
	bool found;
	FILE *f;

	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, false, 0) == 0, "%s", err);
	for (int i = 0; i < 3; i++) {
		units_blob_hex(ABC[i], hex);
		snprintf(path, sizeof(path), "%s/h/.units/%s", tmp_dir, hex);
		ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
	}
	f = fopen(path_in(path, tmp_dir, "h/a"), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_str_eq(line, "dolsot:2:u\n");
	ck_assert_uint_eq(stored_len(s, "a"), head_len_of(ABC, 3));
	store_close(s);
	s = keyed(open_cmd_whole());
	ck_assert_int_eq(store_load(s, "a", &blob, &len, &found, ERR), -1);
	ck_assert_msg(strstr(err, "did not answer \"units\" to \"capabilities\""), "%s", err);
	store_close(s);
}
END_TEST

/* The helper's units lock keeps two hosts (two local directories) apart:
 * collecting waits for a commit on the other, and the other way. */
START_TEST(test_cmd_units_lock_across_hosts)
{
	char other[PATH_MAX], lockdir[PATH_MAX];
	struct store *a = open_cmd_units(), *b;

	b = open_example_at(true, path_in(other, tmp_dir, "s2"), 0.3);
	ck_assert_msg(a->ops->obj_lock(a, STORE_GC_SHARED, ERR) == 0, "%s", err);
	ck_assert_int_eq(b->ops->obj_lock(b, STORE_GC_EXCLUSIVE, ERR), -1);
	ck_assert_msg(strstr(err, "units lock of store helper") && strstr(err, "is busy"),
	              "%s", err);
	ck_assert_msg(a->ops->obj_lock(a, STORE_GC_RELEASE, ERR) == 0, "%s", err);
	ck_assert_msg(b->ops->obj_lock(b, STORE_GC_EXCLUSIVE, ERR) == 0, "%s", err);
	store_close(a);
	a = open_example_at(true, sess_dir, 0.3);
	ck_assert_int_eq(a->ops->obj_lock(a, STORE_GC_SHARED, ERR), -1);
	ck_assert_msg(b->ops->obj_lock(b, STORE_GC_RELEASE, ERR) == 0, "%s", err);
	ck_assert_msg(a->ops->obj_lock(a, STORE_GC_SHARED, ERR) == 0, "%s", err);
	ck_assert_msg(a->ops->obj_lock(a, STORE_GC_RELEASE, ERR) == 0, "%s", err);
	ck_assert_int_eq(count_entries(path_in(lockdir, tmp_dir, "h/.units-lock")), 0);
	store_close(a);
	store_close(b);
}
END_TEST

/* Collecting over and over while a hundred processes commit: every unit
 * each head names is there after. */
START_TEST(test_units_collecting_races_commits)
{
	const struct units_backend *ub = &units_backends[_i];
	struct store *s = keyed(ub->open());
	struct session_info *info;
	pid_t pids[RACERS];
	int status, left = RACERS, failed = 0;
	size_t n;

	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			race_commits(ub, i);
	}
	while (left > 0) {
		ck_assert_msg(store_sweep(s, ERR) == 0, "%s", err);
		for (int i = 0; i < RACERS; i++)
			if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
				pids[i] = 0;
				left--;
			}
	}
	ck_assert_int_eq(failed, 0);
	ck_assert_ptr_null(store_take_notice(s));
	ck_assert_int_eq(store_list(s, &info, &n, ERR), 0);
	ck_assert_uint_eq(n, RACERS);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		uint8_t *got = open_units(s, info[i].id, true, &len);
		struct units_head h;

		ck_assert_int_eq(units_parse(got, len, &h, err, UNITS_ERR_MAX), 0);
		ck_assert_uint_eq(h.nrefs, 3);
		ck_assert_msg(h.npack == 3, "%s lost a unit", info[i].id);
		free(got);
	}
	free(info);
	ck_assert_int_eq(store_sweep(s, ERR), 0);
	ck_assert_int_eq(ub->count(), RACERS * 2 + 1);
	store_close(s);
}
END_TEST

/* A server-side script run by hand on the test's redis-server. */
static void redis_eval(const char *script, const char *key)
{
	redisContext *c = redis_test_conn(&lock_rd, NULL);
	redisReply *r;

	ck_assert_msg(c && !c->err, "cannot reach the test's redis-server");
	r = redisCommand(c, "EVAL %s 1 %s", script, key);
	ck_assert_msg(r && r->type != REDIS_REPLY_ERROR, "%s", r ? r->str : c->errstr);
	freeReplyObject(r);
	redisFree(c);
}

/* A shared holder that died 300 ms before its hold ends. */
static const char dead_commit[] =
	"local t = redis.call('time') "
	"redis.call('zadd', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000) + 300, 'dead') "
	"return 1";
static const char dead_collector[] = "return redis.call('set', KEYS[1], 'dead', 'PX', 300)";

/* A holder of the Redis store's units lock that was killed wedges
 * nothing: its hold ends DOLSOT_REDIS_LOCK_MS after its last command
 * (planted here with 300 ms left).  A collector's holds a commit back
 * until then; a commit's holds collecting back. */
START_TEST(test_units_redis_lock_expires)
{
	struct store *s = keyed(open_redis());
	struct timespec until;
	unsigned n;

	redis_eval(dead_collector, "dolsot:units:gc");
	deadline_in_ms(&until, 250);
	ck_assert_msg(commit_units(s, "a", ABC, 3, NULL, false, 0) == 0, "%s", err);
	ck_assert(deadline_left(&until) <= 0);
	ck_assert_int_eq(count_redis_units(), 3);
	redis_eval(dead_commit, "dolsot:units:commits");
	deadline_in_ms(&until, 250);
	ck_assert_int_eq(store_del(s, "a", &n, ERR), 0);
	ck_assert(deadline_left(&until) <= 0);
	ck_assert_ptr_null(store_take_notice(s));
	ck_assert_int_eq(count_redis_units(), 0);
	ck_assert_int_eq(count_redis_keys("dolsot:units:*"), 0);   /* no lock left behind */
	store_close(s);
}
END_TEST

/* A commit whose hold on the units ended (its process paused past it, a
 * collector ran) is refused, its units checked or its head written: a
 * head never names a unit a collector may have removed. */
START_TEST(test_units_redis_lost_hold_refuses)
{
	struct store *s = keyed(open_redis());
	struct store_lock lk;
	uint8_t h[UNITS_HASH_LEN], other[UNITS_HASH_LEN];
	bool has;

	sha256_bytes("unit a", 6, h);
	sha256_bytes("unit b", 6, other);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_SHARED, ERR), 0);
	ck_assert_msg(s->ops->obj_put(s, h, (const uint8_t *)"unit a", 6, ERR) == 0, "%s", err);
	redis_eval("return redis.call('del', KEYS[1])", "dolsot:units:commits");
	ck_assert_int_eq(s->ops->obj_has(s, other, &has, ERR), -1);
	ck_assert_msg(strstr(err, "the store's units lock was lost"), "%s", err);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_RELEASE, ERR), 0);
	/* Lost between the check and the head. */
	lock_id(s, "a", &lk);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_SHARED, ERR), 0);
	ck_assert_msg(s->ops->obj_has(s, h, &has, ERR) == 0 && has, "%s", err);
	redis_eval("return redis.call('del', KEYS[1])", "dolsot:units:commits");
	ck_assert_int_eq(store_save(s, "a", (const uint8_t *)"x", 1, false, ERR), -1);
	ck_assert_msg(strstr(err, "its hold on the store's units expired"), "%s", err);
	ck_assert_int_eq(s->ops->obj_lock(s, STORE_GC_RELEASE, ERR), 0);
	assert_session(s, "a", NULL);
	store_unlock(s, &lk);
	store_close(s);
}
END_TEST

/* ---- the unit cache (unitcache.h), over a real directory ---- */

#define CACHED_UNIT 4096

/* Unit i of the cache tests: CACHED_UNIT bytes of i, its hash into hash. */
static uint8_t *cache_unit(int i, uint8_t hash[32])
{
	static uint8_t bytes[CACHED_UNIT];

	memset(bytes, i, sizeof(bytes));
	sha256_bytes(bytes, sizeof(bytes), hash);
	return bytes;
}

/* The path of hash's copy in the cache under home (suffix: "" or ".ok"). */
static char *cache_copy(const char *home, const uint8_t hash[32], const char *suffix)
{
	static char path[PATH_MAX];
	char hex[UNITS_HEX_LEN + 1];

	units_hex(hash, hex);
	snprintf(path, sizeof(path), "%s/unit-cache/objects/%.2s/%s%s", home, hex, hex + 2,
	         suffix);
	return path;
}

/* Unit i's last use set to t seconds after the epoch (its stamp's mtime). */
static void used_at(const char *home, int i, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	uint8_t hash[32];

	cache_unit(i, hash);
	ck_assert_int_eq(utimensat(AT_FDCWD, cache_copy(home, hash, ".ok"), ts, 0), 0);
}

static bool cached(const char *home, int i)
{
	uint8_t hash[32];
	struct stat st;

	cache_unit(i, hash);
	return stat(cache_copy(home, hash, ""), &st) == 0;
}

/* A call of its own (its cache object) that puts unit i and ends. */
static void put_one(int home, int i, uint64_t bound)
{
	struct unitcache *c = unitcache_new(home, bound);
	uint8_t hash[32], *bytes = cache_unit(i, hash);

	ck_assert_msg(unitcache_put(c, hash, bytes, CACHED_UNIT, ERR) == 0, "%s", err);
	ck_assert_msg(unitcache_end(c, ERR) == 0, "%s", err);
	unitcache_free(c);
}

/* Least recently used first, never a unit a running call needs (its
 * record), nor one the cutting call put; a dead call's record goes. */
START_TEST(test_unitcache_evicts_by_last_use_around_running_calls)
{
	int home = open(tmp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t bound = 2 * CACHED_UNIT, sizes[1] = { CACHED_UNIT };
	struct unitcache *running = unitcache_new(home, bound);
	char dead[PATH_MAX];
	uint8_t hash[32];
	size_t *missing, nmissing;
	int fd;

	ck_assert_int_ge(home, 0);
	put_one(home, 1, bound);
	put_one(home, 2, bound);
	used_at(tmp_dir, 1, 1000);
	used_at(tmp_dir, 2, 2000);
	put_one(home, 3, bound);        /* 1 is the least recently used */
	ck_assert(!cached(tmp_dir, 1) && cached(tmp_dir, 2) && cached(tmp_dir, 3));
	cache_unit(2, hash);            /* a running call needs 2, the oldest now */
	used_at(tmp_dir, 2, 1000);
	used_at(tmp_dir, 3, 2000);
	ck_assert_msg(unitcache_want(running, hash, sizes, 1, &missing, &nmissing, ERR) == 0,
	              "%s", err);
	ck_assert_uint_eq(nmissing, 0);
	free(missing);
	unitcache_filled(running);
	used_at(tmp_dir, 2, 1000);      /* want marked it used */
	put_one(home, 4, bound);
	ck_assert(cached(tmp_dir, 2) && !cached(tmp_dir, 3) && cached(tmp_dir, 4));
	ck_assert_msg(unitcache_end(running, ERR) == 0, "%s", err);
	unitcache_free(running);
	/* A record nobody holds (its call was killed) protects nothing. */
	fd = open(path_in(dead, tmp_dir, "unit-cache/calls/dead"),
	          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, hash, 32), 32);
	close(fd);
	used_at(tmp_dir, 2, 1000);
	put_one(home, 5, bound);
	ck_assert(!cached(tmp_dir, 2) && cached(tmp_dir, 4) && cached(tmp_dir, 5));
	ck_assert(!exists(tmp_dir, "unit-cache/calls/dead"));
	close(home);
}
END_TEST

/* A copy is used when its stamp holds, or its bytes hash to its name
 * (then stamped again); one changed or cut short is removed and wanted. */
START_TEST(test_unitcache_checks_each_copy)
{
	int home = open(tmp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct unitcache *c = unitcache_new(home, 1 << 20);
	uint8_t hashes[3 * 32], *bytes;
	uint64_t sizes[3] = { CACHED_UNIT, CACHED_UNIT, CACHED_UNIT };
	size_t *missing, nmissing;
	int fd;

	for (int i = 0; i < 3; i++) {
		bytes = cache_unit(i + 1, hashes + 32 * i);
		ck_assert_msg(unitcache_put(c, hashes + 32 * i, bytes, CACHED_UNIT, ERR) == 0, "%s",
		              err);
	}
	ck_assert_int_eq(unlink(cache_copy(tmp_dir, hashes + 32, ".ok")), 0);
	fd = open(cache_copy(tmp_dir, hashes + 64, ""), O_WRONLY | O_CLOEXEC);
	ck_assert_int_eq(pwrite(fd, "x", 1, 100), 1);
	close(fd);
	ck_assert_msg(unitcache_want(c, hashes, sizes, 3, &missing, &nmissing, ERR) == 0, "%s",
	              err);
	ck_assert_uint_eq(nmissing, 1);
	ck_assert_uint_eq(missing[0], 2);
	free(missing);
	unitcache_filled(c);
	ck_assert(access(cache_copy(tmp_dir, hashes + 32, ".ok"), F_OK) == 0);
	ck_assert(access(cache_copy(tmp_dir, hashes + 64, ""), F_OK) < 0);
	ck_assert_msg(unitcache_end(c, ERR) == 0, "%s", err);
	unitcache_free(c);
	close(home);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *su = suite_create("store");
	TCase *tc;

	tc = tcase_create("common");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_load_missing_is_not_found, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_save_load_replace, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_del_one, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_del_all, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_list_sorted_with_sizes, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_lock_busy_times_out, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_lock_waits_for_release, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_invalid_ids_rejected, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_lock_three_outcomes, 0,
	                    (int)(sizeof(lock_backends) / sizeof(lock_backends[0])));
	suite_add_tcase(su, tc);

	tc = tcase_create("blob");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_blob_fd_round_trip, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_signature_refusals, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_unkeyed_store_refuses, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_fork_copies_and_signs_for_the_new_id, 0, NBACKENDS);
	tcase_add_test(tc, test_an_earlier_save_put_back_is_refused);
	tcase_add_loop_test(tc, test_the_signed_origin_outvotes_the_record, 0, NBACKENDS);
	tcase_add_loop_test(tc, test_blob_abort_keeps_old, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_blob_commit_checks_length, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_blob_save_fail_words_it, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_blob_refuses_invalid_id, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_origin_follows_the_last_writer, 0, BLOB_WAYS);
	tcase_add_loop_test(tc, test_bounded_save_refuses_more, 0, BLOB_WAYS);
	tcase_add_test(tc, test_blob_file_save_is_a_temp_file);
	tcase_add_test(tc, test_blob_file_open_is_a_verified_copy);
	tcase_add_test(tc, test_reap_keeps_a_locked_sessions_old_temp_file);
	suite_add_tcase(su, tc);

	tc = tcase_create("units");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_units_commit_and_load, 0, BLOB_WAYS + 2);
	tcase_add_test(tc, test_units_dir_names_the_objects);
	tcase_add_test(tc, test_units_large_get_a_stamp);
	tcase_add_loop_test(tc, test_units_small_stay_with_the_head, 0, NUNITS_BACKENDS);
	tcase_add_test(tc, test_units_symlinked_objects_refused);
	tcase_add_loop_test(tc, test_units_shared_and_collected, 0, NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_fork_copies_no_unit, 0, NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_del_all_keeps_a_locked_sessions_units, 0,
	                    NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_bad_hash_refused, 0, NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_whole_store_wants_every_unit, 0, 2);
	tcase_add_loop_test(tc, test_units_size_is_head_and_refs, 0, NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_list_and_sweep, 0, NUNITS_BACKENDS);
	tcase_add_loop_test(tc, test_units_damaged_head_stops_collecting, 0, NUNITS_BACKENDS);
	tcase_add_test(tc, test_units_reaped_with_their_session);
	tcase_add_test(tc, test_units_disk_full_keeps_the_old_session);
	tcase_add_loop_test(tc, test_units_collecting_races_commits, 0, NUNITS_BACKENDS);
	tcase_add_test(tc, test_units_redis_lock_expires);
	tcase_add_test(tc, test_units_redis_lost_hold_refuses);
	tcase_add_test(tc, test_cmd_units_kept_by_the_helper);
	tcase_add_test(tc, test_cmd_units_lock_across_hosts);
	suite_add_tcase(su, tc);

	tc = tcase_create("id");
	tcase_add_test(tc, test_id_message_escapes_and_caps);
	suite_add_tcase(su, tc);

	tc = tcase_create("file");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_dir_created_0700_with_parents);
	tcase_add_test(tc, test_default_dir_under_tmpdir);
	tcase_add_test(tc, test_refuses_symlinked_dir);
	tcase_add_test(tc, test_refuses_group_other_write);
	tcase_add_test(tc, test_accepts_group_other_read);
	tcase_add_test(tc, test_refuses_dir_of_other_uid);
	tcase_add_test(tc, test_refuses_regular_file);
	tcase_add_test(tc, test_refuses_negative_ttl);
	tcase_add_test(tc, test_save_is_atomic);
	tcase_add_test(tc, test_failed_save_keeps_old_and_cleans_up);
	tcase_add_test(tc, test_load_refuses_non_regular);
	tcase_add_test(tc, test_ttl_reaps_old_keeps_fresh);
	tcase_add_test(tc, test_lock_removes_killed_saves);
	tcase_add_test(tc, test_ttl_reaps_on_every_operation_once_a_sweep_is_due);
	tcase_add_test(tc, test_ttl_fractional_days);
	tcase_add_test(tc, test_ttl_zero_never_reaps_sessions);
	tcase_add_test(tc, test_del_all_leaves_foreign_files);
	tcase_add_test(tc, test_sweep_keeps_every_session);
	tcase_add_test(tc, test_del_removes_lock_file_only_when_free);
	tcase_add_test(tc, test_list_skips_foreign_names);
	tcase_add_test(tc, test_lock_busy_across_processes);
	tcase_add_test(tc, test_lock_serializes_processes);
	tcase_add_test(tc, test_reap_spares_an_expired_session_a_call_holds);
	tcase_add_test(tc, test_del_all_keeps_a_locked_session_and_its_save);
	tcase_add_test(tc, test_unlock_of_a_deleted_session_removes_its_lock_file);
	suite_add_tcase(su, tc);

	tc = tcase_create("unitcache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unitcache_evicts_by_last_use_around_running_calls);
	tcase_add_test(tc, test_unitcache_checks_each_copy);
	suite_add_tcase(su, tc);

	tc = tcase_create("mem_server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_mem_lock_table_bound_rejects_cleanly);
	tcase_add_test(tc, test_mem_incarnation_fences_saves_and_names_lost_sessions);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int failed;

	umask(022);
	if (snprintf(base_dir, sizeof(base_dir), "%s/check_store.XXXXXX",
	             tmp && *tmp ? tmp : "/tmp") >= (int)sizeof(base_dir) ||
	    mkdtemp(base_dir) == NULL) {
		perror("check_store: mkdtemp");
		return 1;
	}
	failed = ck_run(store_suite());
	rm_rf(base_dir);
	return failed != 0 ? 1 : 0;
}
