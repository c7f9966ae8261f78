/*
 * check_unitcache.c - this machine's copy of a Redis or helper store's
 * units (store/unitcache.h, issue 36: a call costs what it changes),
 * through the real binary, a real redis-server on 127.0.0.1 (one per
 * case, in its directory) and the real example helper.
 *
 * What the store is asked is watched where it is answered: Redis's
 * INFO commandstats counts the MGETs that read units, the helper's
 * wrapper logs each verb it is run with.  A warm cache fetches nothing; an
 * emptied one fetches again; a damaged copy (a byte changed, cut short,
 * gone, its stamp gone) is never used over the store's; a unit the cache
 * cannot keep is handed to the call with its head; a cache of size 0 is
 * none; the bound holds after a call, but never against a running
 * call's units; a unit the cell does not reach is not opened (inotify
 * watches its file); a cache directory that is not private is refused
 * and the call goes on without it; a sandboxed call still gets its units
 * with its head.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"
#include "redis_helper.h"
#include "sha256.h"
#include "units.h"

#define CALL_TIMEOUT "120"
#define UNITS_MAX 64
#define WAIT_SECONDS 120.0
#define POLL_US 20000

static struct cli_test fx;
static struct redis_test rd = { .pid = -1 };
static char store_env[4600], helper_dir[4400], helper_log[4400];

static void setup(void)
{
	cli_test_begin(&fx, cli_usual_env);
	cli_test_add_env(&fx, "DOLSOT_TIMEOUT=" CALL_TIMEOUT);
	rd.pid = -1;
	snprintf(helper_dir, sizeof(helper_dir), "%s/helper-store", fx.tmp);
	snprintf(helper_log, sizeof(helper_log), "%s/helper.log", fx.tmp);
}

static void teardown(void)
{
	/* The server stops through the store: Redis must still answer. */
	cli_test_end(&fx);
	redis_test_stop(&rd);
}

/* The store is the test's redis-server (with extra, another entry of the
 * environment, or NULL), the warm server started in the warm run. */
static void use_redis(const char *extra)
{
	char err[4096];

	redis_test_start_in(&rd, fx.tmp, NULL, NULL);
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=%s", rd.url);
	cli_test_add_env(&fx, store_env);
	if (extra)
		cli_test_add_env(&fx, extra);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

/* The store is the example helper, behind a wrapper that logs each verb
 * and its argument to helper_log. */
static void use_helper(void)
{
	char cwd[4096], text[9000], err[4096];
	char *path = cli_path(fx.tmp, "logging-helper");

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(text, sizeof(text), "#!/bin/sh\necho \"$2 $3\" >>%s\n"
	         "exec %s/examples/dolsot-store-dir \"$@\"\n", helper_log, cwd);
	cli_write_file(path, text);
	ck_assert_int_eq(chmod(path, 0700), 0);
	cli_write_file(helper_log, "");
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s %s", path, helper_dir);
	cli_test_add_env(&fx, store_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

/* A cell that must exit 0 with this stdout (NULL: any) and no warning. */
static void cell_ok(const char *session, const char *code, const char *want_out)
{
	struct cli_run r;

	cli_test_cell(&fx, &r, session, code);
	ck_code(&r, 0);
	ck_err_lacks(&r, "warning");
	if (want_out)
		ck_out(&r, want_out);
	cli_run_release(&r);
}

/* How many MGETs the server has answered (the units a load read). */
static long long mgets(void)
{
	redisContext *c = redis_test_conn(&rd, NULL);
	redisReply *rep = redisCommand(c, "INFO commandstats");
	const char *at;
	long long n = 0;

	ck_assert(rep && rep->type == REDIS_REPLY_STRING);
	at = strstr(rep->str, "cmdstat_mget:calls=");
	if (at)
		n = atoll(at + strlen("cmdstat_mget:calls="));
	freeReplyObject(rep);
	redisFree(c);
	return n;
}

/* How many times the helper was run with verb (and an argument). */
static int logged(const char *verb)
{
	return cli_count_lines(helper_log, verb);
}

/* ---- the cache's files ---- */

struct unit_files {
	struct cli_unit_file f[UNITS_MAX];
	int n;
};

static char *cache_dir(void)
{
	return cli_path(fx.store, "unit-cache");
}

/* The path of unit hex's copy (suffix "" or ".ok": its stamp). */
static char *copy_path(const char *hex, const char *suffix)
{
	static char path[4600];

	snprintf(path, sizeof(path), "%s/unit-cache/objects/%.2s/%s%s", fx.store, hex, hex + 2,
	         suffix);
	return path;
}

/* Every unit copy in the cache. */
static void list_copies(struct unit_files *u)
{
	u->n = cli_list_units(cli_path(cache_dir(), "objects"), u->f, UNITS_MAX);
}

static off_t copies_size(void)
{
	struct unit_files u;
	off_t total = 0;

	list_copies(&u);
	for (int i = 0; i < u.n; i++)
		total += u.f[i].size;
	return total;
}

/* The one copy whose size is in [min, max), into hex. */
static void copy_sized(off_t min, off_t max, char *hex)
{
	struct unit_files u;
	int found = 0;

	list_copies(&u);
	for (int i = 0; i < u.n; i++)
		if (u.f[i].size >= min && u.f[i].size < max) {
			memcpy(hex, u.f[i].hex, sizeof(u.f[i].hex));
			found++;
		}
	ck_assert_msg(found == 1, "%d copies of %lld to %lld bytes", found, (long long)min,
	              (long long)max);
}

/* Unit hex's copy is there, hashes to its name, and has its stamp. */
static void ck_sound(const char *hex)
{
	char got[UNITS_HEX_LEN + 1];
	uint8_t sum[32];
	size_t len;
	char *bytes = cli_read_file(copy_path(hex, ""), &len);

	ck_assert_msg(bytes != NULL, "no copy of %s", hex);
	sha256_bytes(bytes, len, sum);
	units_hex(sum, got);
	ck_assert_str_eq(got, hex);
	ck_assert_msg(cli_exists(copy_path(hex, ".ok")), "no stamp beside %s", hex);
	free(bytes);
}

/* A 3 MiB array (one part: a unit of its own, with a stamp), a 16 KiB
 * value (a unit under the stamps' size on a FileStore) and a small one
 * (kept with the head). */
static const char seed_code[] =
	"import numpy as np\n"
	"a = np.arange(3 << 20, dtype=np.uint8)\n"
	"b = bytes(range(256)) * 64\n"
	"n = 1\n";
static const char values_code[] = "print(len(a), int(a[1000]), len(b), b[1:3], n)";
static const char values_out[] = "3145728 232 16384 b'\\x01\\x02' 1\n";

/* A warm cache fetches nothing: a call that changes n and one that reads
 * every value ask the server for no unit.  An emptied cache (rm -rf) is
 * filled again by the next call, which then is the only one to fetch. */
START_TEST(redis_a_warm_cache_fetches_no_unit)
{
	struct unit_files u;
	long long before;
	char hex[UNITS_HEX_LEN + 1];

	use_redis(NULL);
	cell_ok("s", seed_code, NULL);
	list_copies(&u);
	ck_assert_int_eq(u.n, 2);   /* a's part and b; a's own unit and n stay with the head */
	copy_sized(1 << 20, 4 << 20, hex);
	ck_sound(hex);
	before = mgets();
	cell_ok("s", "n += 1", "");
	cell_ok("s", "n -= 1", "");
	cell_ok("s", values_code, values_out);
	ck_assert_int_eq(mgets(), before);
	cli_rmtree(cache_dir());
	cell_ok("s", values_code, values_out);
	ck_assert_int_gt(mgets(), before);
	ck_sound(hex);
	before = mgets();
	cell_ok("s", values_code, values_out);
	ck_assert_int_eq(mgets(), before);
}
END_TEST

enum damage { FLIPPED_PART, FLIPPED_SMALL, CUT_SHORT, REMOVED, NO_STAMP, DAMAGES };
static const char *const damage_names[] = { "a part's byte changed", "a small unit's byte "
	"changed", "cut short", "removed", "its stamp removed" };

static void flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	unsigned char c;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c ^= 0xff;
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* A damaged copy is never used over the store's: the call sees the
 * stored values, and the copy is sound again after it.  Every damage but
 * a lost stamp (the copy still hashes to its name, and is stamped again)
 * costs a fetch. */
START_TEST(redis_a_damaged_copy_is_fetched_again)
{
	char part[UNITS_HEX_LEN + 1], small[UNITS_HEX_LEN + 1];
	const char *victim;
	long long before;

	use_redis(NULL);
	cell_ok("s", seed_code, NULL);
	copy_sized(1 << 20, 4 << 20, part);
	copy_sized(4096, 1 << 20, small);
	victim = _i == FLIPPED_SMALL ? small : part;
	switch ((enum damage)_i) {
	case FLIPPED_PART:
	case FLIPPED_SMALL:
		flip_byte(copy_path(victim, ""), 1000);
		break;
	case CUT_SHORT:
		ck_assert_int_eq(truncate(copy_path(victim, ""), 4096), 0);
		break;
	case REMOVED:
		ck_assert_int_eq(unlink(copy_path(victim, "")), 0);
		break;
	case NO_STAMP:
	case DAMAGES:
	default:
		ck_assert_int_eq(unlink(copy_path(victim, ".ok")), 0);
		break;
	}
	before = mgets();
	cell_ok("s", values_code, values_out);
	if (_i == NO_STAMP)
		ck_assert_msg(mgets() == before, "%s: fetched", damage_names[_i]);
	else
		ck_assert_msg(mgets() > before, "%s: not fetched", damage_names[_i]);
	ck_sound(part);
	ck_sound(small);
}
END_TEST

/* A unit whose copy the cache cannot keep (its HH directory is no longer
 * private) is handed to the call with its head instead, and the call
 * says so; the other units are read from the cache. */
START_TEST(redis_a_unit_the_cache_cannot_keep_is_handed_to_the_call)
{
	char part[UNITS_HEX_LEN + 1], hh[8];
	struct cli_run r;

	use_redis(NULL);
	cell_ok("s", seed_code, NULL);
	copy_sized(1 << 20, 4 << 20, part);
	ck_assert_int_eq(unlink(copy_path(part, ".ok")), 0);
	ck_assert_int_eq(unlink(copy_path(part, "")), 0);
	snprintf(hh, sizeof(hh), "%.2s", part);
	ck_assert_int_eq(chmod(cli_path(cli_path(cache_dir(), "objects"), hh), 0755), 0);
	cli_test_cell(&fx, &r, "s", values_code);
	ck_code(&r, 0);
	ck_out(&r, values_out);
	ck_err_has(&r, "; what it could not keep is handed to this call, and fetched again by "
	           "the next\n");
	cli_run_release(&r);
	ck_assert(!cli_exists(copy_path(part, "")));
}
END_TEST

/* DOLSOT_UNIT_CACHE_SIZE=0: no cache is made, and every call is handed
 * every unit again, as before there was one. */
START_TEST(redis_no_cache_when_its_size_is_0)
{
	long long before;

	use_redis("DOLSOT_UNIT_CACHE_SIZE=0");
	cell_ok("s", seed_code, NULL);
	before = mgets();
	cell_ok("s", "n += 1", "");
	ck_assert_int_gt(mgets(), before);
	before = mgets();
	cell_ok("s", values_code, "3145728 232 16384 b'\\x01\\x02' 2\n");
	ck_assert_int_gt(mgets(), before);
	ck_assert(!cli_exists(cache_dir()));
}
END_TEST

/* A malformed size is a usage error naming the variable. */
START_TEST(a_malformed_cache_size_is_a_usage_error)
{
	struct cli_run r;

	use_redis(NULL);
	cli_test_add_env(&fx, "DOLSOT_UNIT_CACHE_SIZE=2X");
	cli_test_cell(&fx, &r, "s", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_UNIT_CACHE_SIZE is not valid: expected a size like 2G");
	cli_run_release(&r);
}
END_TEST

/* Each session holds one 3 MiB array of its own value. */
static const char *array_of(double v)
{
	static char code[200];

	snprintf(code, sizeof(code), "import numpy as np\nx = np.full(3 << 17, %.1f)", v);
	return code;
}

/* Wait until path exists. */
static void wait_for_file(const char *path)
{
	double t0 = cli_now();

	while (!cli_exists(path)) {
		ck_assert_msg(cli_now() - t0 < WAIT_SECONDS, "%s never appeared", path);
		usleep(POLL_US);
	}
}

/* DOLSOT_UNIT_CACHE_SIZE=4M holds one session's 3 MiB array: a call on
 * another session evicts the first one's (used least recently), never its
 * own.  While a call on A runs, a call on B that adds to the cache evicts
 * nothing A's call needs, though the cache is then over its bound; once
 * A's call ends, its own cut brings the cache back under the bound. */
START_TEST(redis_eviction_keeps_the_bound_and_a_running_calls_units)
{
	char a_part[UNITS_HEX_LEN + 1], b_part[UNITS_HEX_LEN + 1], code[600];
	char *started = strdup(cli_path(fx.tmp, "started")), *go = strdup(cli_path(fx.tmp, "go"));
	char *out = strdup(cli_path(fx.tmp, "a.out")), *res;
	pid_t a_call;
	int status;

	use_redis("DOLSOT_UNIT_CACHE_SIZE=4M");
	cell_ok("a", array_of(1), NULL);
	copy_sized(1 << 20, 4 << 20, a_part);
	cell_ok("b", array_of(2), NULL);
	ck_assert(!cli_exists(copy_path(a_part, "")));
	copy_sized(1 << 20, 4 << 20, b_part);
	ck_assert_int_le(copies_size(), 4 << 20);
	snprintf(code, sizeof(code), "import os, time\nopen(%s%s%s, 'w').close()\n"
	         "while not os.path.exists(%s%s%s):\n    time.sleep(0.01)\nprint(x[0])",
	         "'", started, "'", "'", go, "'");
	a_call = cli_test_cell_async(&fx, "a", code, out);
	wait_for_file(started);
	ck_assert_msg(cli_exists(copy_path(a_part, "")), "a's call did not fetch its part");
	cell_ok("b", "y = np.full(3 << 17, 3.0)", "");
	ck_assert_msg(cli_exists(copy_path(a_part, "")), "a running call's unit was evicted");
	ck_assert_int_gt(copies_size(), 4 << 20);
	cli_write_file(go, "");
	ck_assert_int_eq(waitpid(a_call, &status, 0), a_call);
	res = cli_read_file(out, NULL);
	ck_assert_msg(strncmp(res, "0\n1.0\n", 6) == 0, "a's call: %s", res);
	free(res);
	ck_assert_int_le(copies_size(), 4 << 20);
	ck_assert(cli_exists(copy_path(a_part, "")));
	free(started);
	free(go);
	free(out);
}
END_TEST

/* Whether the watch fd saw name opened (events read without waiting: a
 * call's opens are queued before it returns). */
static bool opened(int watch, const char *name)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool seen = false;
	ssize_t n;

	while ((n = read(watch, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)(void *)p;

			seen = seen || (e->len && strcmp(e->name, name) == 0);
			p += sizeof(*e) + e->len;
		}
	ck_assert_msg(n < 0 && errno == EAGAIN, "inotify: %s", strerror(errno));
	return seen;
}

/* Lazy loading works from the cache as from a FileStore's objects: a call
 * whose cell does not reach a value never opens its unit's copy (the
 * client checks it by its stamp, which it reads, beside it), and one
 * whose cell does, opens it. */
START_TEST(redis_a_unit_the_cell_does_not_reach_is_not_read)
{
	char hex[UNITS_HEX_LEN + 1], hh[8];
	int watch;

	use_redis(NULL);
	cell_ok("s", "big = bytes(range(256)) * (8 << 10)\nn = 1", NULL);
	copy_sized(1 << 20, 4 << 20, hex);
	snprintf(hh, sizeof(hh), "%.2s", hex);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(watch, 0);
	ck_assert_int_ge(inotify_add_watch(watch, cli_path(cli_path(cache_dir(), "objects"), hh),
	                                   IN_OPEN), 0);
	cell_ok("s", "n += 1\nprint(n)", "2\n");
	ck_assert_msg(!opened(watch, hex + 2), "a unit the cell does not reach was opened");
	cell_ok("s", "print(len(big), big[-1])", "2097152 255\n");
	ck_assert_msg(opened(watch, hex + 2), "the unit the cell reaches was not opened");
	close(watch);
}
END_TEST

/* A helper is asked for no unit by a call on a warm cache, and for just
 * the one unit whose copy went missing. */
START_TEST(helper_is_asked_only_for_units_the_cache_lacks)
{
	char hex[UNITS_HEX_LEN + 1], loaded[100];

	use_helper();
	/* big's 20,480,000 bytes are parts: three of 4 MiB, the last the rest. */
	cell_ok("s", "big = bytes(range(256)) * 80000\ns = bytes(range(256)) * 64\nn = 1",
	        NULL);
	copy_sized(7 << 20, 8 << 20, hex);
	cli_write_file(helper_log, "");
	cell_ok("s", "n += 1\nprint(len(big), len(s), n)", "20480000 16384 2\n");
	ck_assert_int_eq(logged("unit-load"), 0);
	ck_assert_int_eq(unlink(copy_path(hex, "")), 0);
	cell_ok("s", "print(len(big), n)", "20480000 2\n");
	snprintf(loaded, sizeof(loaded), "unit-load %s", hex);
	ck_assert_int_eq(logged("unit-load"), 1);
	ck_assert_int_eq(logged(loaded), 1);
	ck_sound(hex);
}
END_TEST

enum refusal { SYMLINKED, OPEN_MODE, REFUSALS };

/* A cache directory that is a symlink, or that others may enter, is
 * refused: the call says so and goes on with its units handed to it, and
 * nothing is written through the symlink. */
START_TEST(a_cache_dir_that_is_not_private_is_refused)
{
	char *elsewhere = strdup(cli_path(fx.tmp, "elsewhere"));
	struct cli_run r;
	DIR *d;
	int entries = 0;

	use_redis(NULL);
	cell_ok("s", seed_code, NULL);
	cli_rmtree(cache_dir());
	ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
	if (_i == SYMLINKED)
		ck_assert_int_eq(symlink(elsewhere, cache_dir()), 0);
	else
		ck_assert_int_eq(mkdir(cache_dir(), 0755), 0);
	cli_test_cell(&fx, &r, "s", values_code);
	ck_code(&r, 0);
	ck_out(&r, values_out);
	ck_err_has(&r, _i == SYMLINKED ? "it is a symbolic link or not a directory"
	                               : "it is not a private directory of ours");
	ck_err_has(&r, "; every call of this store is handed every unit of its session\n");
	cli_run_release(&r);
	d = opendir(elsewhere);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));)
		entries += e->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(entries, 0);
	free(elsewhere);
}
END_TEST

/* A sandboxed call never reads the cache: its units come with its head,
 * fetched from the store. */
START_TEST(redis_a_sandboxed_call_is_handed_its_units)
{
	struct cli_run r;
	long long before;

	if (!cli_userns_probe(false)) {
		printf("SKIP: %s: user namespaces are not available here\n", __func__);
		return;
	}
	use_redis("DOLSOT_TRUST_SANDBOXED=1");
	cell_ok("s", seed_code, NULL);
	before = mgets();
	cli_test_run(&fx, &r, fx.tmp, NULL, (const char *const[]){
		"dolsot", "--sandbox", "--session", "s", values_code, NULL });
	ck_code(&r, 0);
	ck_out(&r, values_out);
	cli_run_release(&r);
	ck_assert_int_gt(mgets(), before);
}
END_TEST

static Suite *unitcache_suite(void)
{
	Suite *s = suite_create("unitcache");
	TCase *redis = tcase_create("redis"), *helper = tcase_create("helper");

	tcase_add_checked_fixture(redis, setup, teardown);
	tcase_add_checked_fixture(helper, setup, teardown);
	tcase_set_timeout(redis, 600);
	tcase_set_timeout(helper, 600);
	tcase_add_test(redis, redis_a_warm_cache_fetches_no_unit);
	tcase_add_loop_test(redis, redis_a_damaged_copy_is_fetched_again, 0, DAMAGES);
	tcase_add_test(redis, redis_a_unit_the_cache_cannot_keep_is_handed_to_the_call);
	tcase_add_test(redis, redis_no_cache_when_its_size_is_0);
	tcase_add_test(redis, a_malformed_cache_size_is_a_usage_error);
	tcase_add_test(redis, redis_eviction_keeps_the_bound_and_a_running_calls_units);
	tcase_add_test(redis, redis_a_unit_the_cell_does_not_reach_is_not_read);
	tcase_add_loop_test(redis, a_cache_dir_that_is_not_private_is_refused, 0, REFUSALS);
	tcase_add_test(redis, redis_a_sandboxed_call_is_handed_its_units);
	tcase_add_test(helper, helper_is_asked_only_for_units_the_cache_lacks);
	suite_add_tcase(s, redis);
	suite_add_tcase(s, helper);
	return s;
}

int main(void)
{
	return ck_run(unitcache_suite());
}
