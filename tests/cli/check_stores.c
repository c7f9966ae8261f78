/*
 * check_stores.c - where sessions live (issue 13): the same calls over
 * the FileStore, a Redis server and a store helper (cmd:), and what each
 * remote store does when things go wrong.
 *
 * Real parts only: every Redis case starts its own redis-server on
 * 127.0.0.1 on a free port, in the test's directory, and stops it after
 * (a system Redis is never touched); the helper is examples/dolsot-store-dir,
 * run for real (keeping units, or whole blobs behind a wrapper), or a
 * small script of the test's.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"
#include "redis_helper.h"

#define CALL_TIMEOUT "120"

static struct cli_test fx;

/* CMD_STORE's helper keeps units; CMD_WHOLE_STORE's is the same behind a
 * wrapper that refuses "capabilities", as a helper older than units does. */
enum kind { FILE_STORE, REDIS_STORE, CMD_STORE, CMD_WHOLE_STORE };
static const char *const kind_names[] = { "file", "redis", "cmd", "cmd-whole" };
#define NKINDS 4

/* The test's redis-server. */
static struct redis_test rd = { .pid = -1 };

static char store_env[4600], helper_dir[4400];

#define rd_start(extra, password) redis_test_start(&rd, (extra), (password))
#define rd_stop() redis_test_stop(&rd)
#define rd_conn(password) redis_test_conn(&rd, (password))
#define rd_query(buf, len, password, fmt, arg) \
	redis_test_query(&rd, (buf), (len), (password), (fmt), (arg))

static void begin(void)
{
	cli_test_begin(&fx, cli_usual_env);
	cli_test_add_env(&fx, "DOLSOT_TIMEOUT=" CALL_TIMEOUT);
	rd.pid = -1;
	rd.port = 0;
	snprintf(rd.dir, sizeof(rd.dir), "%s/redis", fx.tmp);
	ck_assert_int_eq(mkdir(rd.dir, 0700), 0);
	snprintf(helper_dir, sizeof(helper_dir), "%s/helper-store", fx.tmp);
}

/*
 * A script in the test's directory running before (shell lines, with the
 * helper's arguments in $@) and then the example helper; its path (one of
 * cli_path's buffers).
 */
static char *wrap_helper(const char *name, const char *before)
{
	char cwd[4096], text[9000];
	char *path = cli_path(fx.tmp, name);

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(text, sizeof(text), "#!/bin/sh\n%sexec %s/examples/dolsot-store-dir \"$@\"\n",
	         before, cwd);
	cli_write_file(path, text);
	ck_assert_int_eq(chmod(path, 0700), 0);
	return path;
}

/* Sessions in store k, the warm server started if this is the warm run. */
static void use_store(enum kind k, const char *const *redis_extra)
{
	char err[4096];

	switch (k) {
	case REDIS_STORE:
		rd_start(redis_extra, NULL);
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=%s", rd.url);
		break;
	case CMD_STORE:
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s/examples/dolsot-store-dir %s",
		         getcwd(err, sizeof(err)), helper_dir);
		break;
	case CMD_WHOLE_STORE:
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s %s",
		         wrap_helper("old-helper", "[ \"$2\" = capabilities ] && exit 2\n"),
		         helper_dir);
		break;
	case FILE_STORE:
	default:
		snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=file");
		break;
	}
	cli_test_add_env(&fx, store_env);
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void setup(void)
{
	begin();
}

static void teardown(void)
{
	/* The server stops through the store: Redis must still answer. */
	cli_test_end(&fx);
	rd_stop();
}

static void cell(struct cli_run *r, const char *session, const char *code)
{
	cli_test_cell(&fx, r, session, code);
}

static void cell_ok(const char *session, const char *code, const char *want_out)
{
	struct cli_run r;

	cell(&r, session, code);
	ck_code(&r, 0);
	if (want_out)
		ck_out(&r, want_out);
	cli_run_release(&r);
}

static void run_ok(struct cli_run *r, const char *const *argv)
{
	cli_test_run(&fx, r, fx.tmp, NULL, argv);
	ck_code(r, 0);
}

/* Runs, keeps, lists and forgets sessions the same way on every store. */
START_TEST(sessions_live_in_every_store)
{
	struct cli_run r;
	char buf[256];

	use_store((enum kind)_i, NULL);
	/* pad: a unit of its own (x is kept with the head: units.h). */
	cell_ok("a", "x = 1; pad = 'p' * 5000", NULL);
	cell_ok("a", "x += 1; print(x)", "2\n");
	cell_ok("b", "y = 'b'", NULL);
	run_ok(&r, (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_assert_msg(strncmp(r.out, "a\t", 2) == 0 && cli_has(r.out, "\nb\t"),
	              "%s list:\n%s", kind_names[_i], r.out);
	cli_run_release(&r);
	if (_i == REDIS_STORE) {
		ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "EXISTS %s",
		                          "dolsot:session:a"), "1");
		ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "HGET %s sandboxed",
		                          "dolsot:session:a"), "0");
	}
	if (_i == CMD_STORE || _i == CMD_WHOLE_STORE) {
		size_t len;
		char *blob = cli_read_file(cli_path(helper_dir, "a"), &len);
		const char *line = _i == CMD_STORE ? "dolsot:2:u\n" : "dolsot:1:u\n";

		ck_assert_msg(len > 11 && memcmp(blob, line, 11) == 0,
		              "the helper's blob lacks its origin line %s", line);
		free(blob);
		ck_assert(cli_exists(cli_path(helper_dir, ".units")) == (_i == CMD_STORE));
	}
	run_ok(&r, (const char *const[]){ "dolsot", "--reset", "a", NULL });
	ck_out(&r, "reset a: removed 1 session(s)\n");
	cli_run_release(&r);
	cell(&r, "a", "print(x)");
	ck_code(&r, 1);
	ck_err_has(&r, "NameError");
	cli_run_release(&r);
	run_ok(&r, (const char *const[]){ "dolsot", "--reset", "all", NULL });
	ck_out(&r, "reset all: removed 2 session(s)\n");
	cli_run_release(&r);
	run_ok(&r, (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_out(&r, "");
	ck_err(&r, "(no sessions)\n");
	cli_run_release(&r);
}
END_TEST

/* One increment from a child process, with its own cache directory. */
static void increments(const char *cache_dir, int n)
{
	char env[4500];
	const char *extra[] = { env, NULL };
	int failed = 0;

	snprintf(env, sizeof(env), "DOLSOT_CACHE_DIR=%s", cache_dir);
	for (int i = 0; i < n; i++) {
		struct cli_run r;

		cli_test_run(&fx, &r, fx.tmp, extra, (const char *const[]){
			"dolsot", "--session", "count",
			"try:\n    n += 1\nexcept NameError:\n    n = 1", NULL });
		if (r.code != 0) {
			fprintf(stderr, "increment: exit %d: %s\n", r.code, r.err);
			failed++;
		}
		cli_run_release(&r);
	}
	_exit(failed ? 1 : 0);
}

/* Two hosts (two cache directories) sharing one store: 20 increments, 10
 * from each at once, end at exactly 20. */
START_TEST(concurrent_increments_from_two_hosts_all_count)
{
	pid_t kids[2];
	int status;
	struct cli_run r;

	static const enum kind shared[] = { REDIS_STORE, CMD_STORE, CMD_WHOLE_STORE };

	use_store(shared[_i], NULL);
	/* Hosts sharing a store share its session key. */
	cli_test_add_env(&fx, "DOLSOT_SESSION_KEY="
	                 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
	for (int k = 0; k < 2; k++) {
		char *dir = cli_path(fx.tmp, k ? "host2" : "host1");

		ck_assert_int_eq(mkdir(dir, 0700), 0);
		kids[k] = fork();
		ck_assert_int_ge(kids[k], 0);
		if (kids[k] == 0)
			increments(dir, 10);
	}
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(waitpid(kids[k], &status, 0), kids[k]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "host %d: an increment failed", k + 1);
	}
	for (int k = 0; k < 2; k++) {
		char env[4500];
		const char *extra[] = { env, NULL };

		snprintf(env, sizeof(env), "DOLSOT_CACHE_DIR=%s",
		         cli_path(fx.tmp, k ? "host2" : "host1"));
		cli_test_run(&fx, &r, fx.tmp, extra, (const char *const[]){
			"dolsot", "--server-stop", NULL });
		cli_run_release(&r);
	}
	cell_ok("count", "print(n)", "20\n");
}
END_TEST

/* The name of the one unit of the helper's over min bytes, into hex. */
static void big_unit(size_t min, char hex[65])
{
	DIR *d = opendir(cli_path(helper_dir, ".units"));
	struct dirent *e;
	int found = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strlen(e->d_name) == 64 &&
		    stat(cli_path(cli_path(helper_dir, ".units"), e->d_name), &st) == 0 &&
		    (size_t)st.st_size > min) {
			snprintf(hex, 65, "%s", e->d_name);
			found++;
		}
	}
	closedir(d);
	ck_assert_int_eq(found, 1);
}

/* How many units the helper keeps. */
static int count_helper_units(void)
{
	DIR *d = opendir(cli_path(helper_dir, ".units"));
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		n += strlen(e->d_name) == 64;
	closedir(d);
	return n;
}

/* A helper that keeps units is handed a 20 MB value once: a later call
 * that leaves it as it is rewrites only the head (the helper's log of its
 * verbs says which it was asked), and the value is there after. */
START_TEST(helper_keeps_a_big_value_unit_once)
{
	char before[4600], hex[65], saved[80];
	char *log = strdup(cli_path(fx.tmp, "helper.log"));

	snprintf(before, sizeof(before), "echo \"$2 $3\" >>%s\n", log);
	cli_write_file(log, "");
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s %s",
	         wrap_helper("logging-helper", before), helper_dir);
	cli_test_add_env(&fx, store_env);
	{
		char err[4096];

		ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "%s", err);
	}
	/* 20,480,000 bytes: three parts of 4 MiB, the last the rest. */
	cell_ok("big", "big = bytes(range(256)) * 80000; n = 1", NULL);
	big_unit(7 << 20, hex);
	snprintf(saved, sizeof(saved), "unit-save %s", hex);
	ck_assert_int_eq(cli_count_lines(log, saved), 1);
	cli_write_file(log, "");
	cell_ok("big", "n += 1", NULL);
	ck_assert_int_eq(cli_count_lines(log, "save"), 1);
	/* Only n's unit is new: never a part of the 20 MB. */
	ck_assert_int_eq(cli_count_lines(log, saved), 0);
	ck_assert_int_le(cli_count_lines(log, "unit-save"), 1);
	{
		size_t len;
		char *head = cli_read_file(cli_path(helper_dir, "big"), &len);

		ck_assert_msg(len < 1 << 16, "the helper's session is %zu bytes, not a head", len);
		free(head);
	}
	cell_ok("big", "print(n, len(big), big[-1])", "2 20480000 255\n");
	free(log);
}
END_TEST

/* A call runs code in a child process so the test can act meanwhile. */
static pid_t cell_async(const char *session, const char *code, const char *out_path)
{
	return cli_test_cell_async(&fx, session, code, out_path);
}

static void wait_for_key(const char *key)
{
	char buf[64];
	double t0 = cli_now();

	while (strcmp(rd_query(buf, sizeof(buf), NULL, "EXISTS %s", key), "1") != 0) {
		ck_assert_msg(cli_now() - t0 < 120, "%s never appeared", key);
		usleep(20000);
	}
}

/* The server stops during a call and comes back: that call fails naming
 * the server and saves nothing; calls meanwhile fail the same way; after
 * the restart the stored state is the one before, and the dead call's
 * lock has expired by itself. */
START_TEST(redis_stopped_mid_call_and_restarted)
{
	const char *aof[] = { "--appendonly", "yes", "--appendfsync", "always", NULL };
	char *out = cli_path(fx.tmp, "slow.out"), *res;
	struct cli_run r;
	pid_t slow;
	int status;

	cli_test_add_env(&fx, "DOLSOT_REDIS_LOCK_MS=3000");
	use_store(REDIS_STORE, aof);
	cell_ok("s", "x = 1", NULL);
	slow = cell_async("s", "import time\ntime.sleep(4)\nx = 2", out);
	wait_for_key("dolsot:lock:s");
	usleep(500000);
	rd_stop();
	ck_assert_int_eq(waitpid(slow, &status, 0), slow);
	res = cli_read_file(out, NULL);
	ck_assert_msg(strncmp(res, "1\n", 2) == 0, "the call lost its server: %s", res);
	ck_assert_msg(cli_has(res, rd.url + strlen("redis://")), "names no server: %s", res);
	free(res);
	cell(&r, "s", "print(x)");
	ck_code(&r, 1);
	ck_err_has(&r, "cannot connect");
	ck_err_has(&r, rd.url);
	cli_run_release(&r);
	/* The warm server is this host's: it is looked at without Redis. */
	cli_test_run(&fx, &r, fx.tmp, NULL, (const char *const[]){
		"dolsot", "--server-status", NULL });
	ck_err_lacks(&r, "cannot connect");
	cli_run_release(&r);
	rd_start(aof, NULL);
	cell_ok("s", "print(x)", "1\n");
}
END_TEST

/* requirepass: no password and a wrong one are refused naming the server
 * (never echoing the password); the right one works. */
START_TEST(redis_password_required_and_wrong)
{
	const char *pass[] = { "--requirepass", "s3cret-pw", NULL };
	char env[300];
	const char *bad[] = { env, NULL };
	struct cli_run r;

	use_store(FILE_STORE, NULL);
	rd_start(pass, "s3cret-pw");
	snprintf(env, sizeof(env), "DOLSOT_STORE=redis://127.0.0.1:%d", rd.port);
	cli_test_run(&fx, &r, fx.tmp, bad, (const char *const[]){
		"dolsot", "--session", "p", "x = 1", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "redis://127.0.0.1:");
	ck_err_has(&r, "NOAUTH");
	cli_run_release(&r);
	snprintf(env, sizeof(env), "DOLSOT_STORE=redis://:wrong-pw@127.0.0.1:%d", rd.port);
	cli_test_run(&fx, &r, fx.tmp, bad, (const char *const[]){
		"dolsot", "--session", "p", "x = 1", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "authentication failed");
	ck_err_lacks(&r, "wrong-pw");
	cli_run_release(&r);
	snprintf(env, sizeof(env), "DOLSOT_STORE=redis://default:s3cret-pw@127.0.0.1:%d/3",
	         rd.port);
	cli_test_run(&fx, &r, fx.tmp, bad, (const char *const[]){
		"dolsot", "--session", "p", "x = 1", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	cli_test_run(&fx, &r, fx.tmp, bad, (const char *const[]){
		"dolsot", "--list-sessions", NULL });
	ck_code(&r, 0);
	ck_assert_msg(strncmp(r.out, "p\t", 2) == 0, "list: %s", r.out);
	cli_run_release(&r);
}
END_TEST

/* A lock that expires under a slow call (never renewed in time): another
 * call takes it, and the slow call's late save is refused. */
START_TEST(redis_lock_lost_under_a_slow_call_refuses_its_save)
{
	char *out = cli_path(fx.tmp, "slow.out"), *res;
	pid_t slow;
	int status;

	cli_test_add_env(&fx, "DOLSOT_REDIS_LOCK_MS=1000");
	cli_test_add_env(&fx, "DOLSOT_REDIS_RENEW_MS=3600000");
	use_store(REDIS_STORE, NULL);
	cell_ok("l", "x = 1", NULL);
	slow = cell_async("l", "import time\ntime.sleep(6)\nx = 2", out);
	wait_for_key("dolsot:lock:l");
	cell_ok("l", "x = 100", NULL);
	ck_assert_int_eq(waitpid(slow, &status, 0), slow);
	res = cli_read_file(out, NULL);
	ck_assert_msg(strncmp(res, "1\n", 2) == 0 && cli_has(res, "its lock was lost"),
	              "the late save: %s", res);
	free(res);
	cell_ok("l", "print(x)", "100\n");
}
END_TEST

/* A lock renewed while the call runs outlives its time to live. */
START_TEST(redis_lock_is_renewed_during_a_long_call)
{
	cli_test_add_env(&fx, "DOLSOT_REDIS_LOCK_MS=600");
	use_store(REDIS_STORE, NULL);
	cell_ok("r", "import time\ntime.sleep(3)\nx = 7", NULL);
	cell_ok("r", "print(x)", "7\n");
}
END_TEST

/* A session over the server's proto-max-bulk-len is refused saying so;
 * the stored one is kept. */
START_TEST(redis_bulk_limit_is_reported)
{
	const char *small[] = { "--proto-max-bulk-len", "1mb", NULL };
	struct cli_run r;

	use_store(REDIS_STORE, small);
	cell_ok("big", "x = 1", NULL);
	cell(&r, "big", "import os\nb = os.urandom(3_000_000)");
	ck_code(&r, 1);
	ck_err_has(&r, "proto-max-bulk-len of 1048576 bytes");
	cli_run_release(&r);
	cell_ok("big", "print(x, 'b' in dir())", "1 False\n");
}
END_TEST

/* 100 MB sessions go through. */
START_TEST(redis_holds_a_100_mb_session)
{
	use_store(REDIS_STORE, NULL);
	cell_ok("huge", "import os\nb = os.urandom(100 * 2**20)", NULL);
	cell_ok("huge", "print(len(b))", "104857600\n");
}
END_TEST

/* A field of the server's INFO stats, as a number. */
static long long rd_stat(const char *field)
{
	redisContext *c = rd_conn(NULL);
	redisReply *rep = redisCommand(c, "INFO stats");
	const char *at;
	long long v;

	ck_assert(rep && rep->type == REDIS_REPLY_STRING);
	at = strstr(rep->str, field);
	ck_assert_msg(at && at[strlen(field)] == ':', "INFO stats lacks %s", field);
	v = atoll(at + strlen(field) + 1);
	freeReplyObject(rep);
	redisFree(c);
	return v;
}

/* How many keys match pattern (SCAN). */
static int rd_count(const char *pattern)
{
	redisContext *c = rd_conn(NULL);
	char cursor[32] = "0";
	int n = 0;

	do {
		redisReply *rep = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);

		ck_assert(rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2);
		snprintf(cursor, sizeof(cursor), "%s", rep->element[0]->str);
		n += (int)rep->element[1]->elements;
		freeReplyObject(rep);
	} while (strcmp(cursor, "0") != 0);
	redisFree(c);
	return n;
}

/* A large value is a unit of its own: a later call that changes a small
 * value beside it (kept with the head) sends the server the head, never
 * the large one; --fork copies the head; --reset all leaves no unit. */
START_TEST(redis_units_a_call_sends_only_what_changed)
{
	char buf[64];
	struct cli_run r;
	long long sent;
	int units;

	/* The cells' own units are counted: no earlier state is kept. */
	cli_test_add_env(&fx, "DOLSOT_HISTORY=0");
	use_store(REDIS_STORE, NULL);
	cell_ok("u", "b = bytes(20 * 2**20)\nx = 1", NULL);
	ck_assert_int_lt(atoll(rd_query(buf, sizeof(buf), NULL, "HSTRLEN %s blob",
	                                "dolsot:session:u")), 65536);
	units = rd_count("dolsot:unit:*");
	ck_assert_int_eq(units, 1);   /* b; x stays with the head (units.h) */
	sent = rd_stat("total_net_input_bytes");
	cell_ok("u", "x = 2", NULL);
	sent = rd_stat("total_net_input_bytes") - sent;
	ck_assert_msg(sent < (1 << 20), "the call sent the server %lld bytes", sent);
	run_ok(&r, (const char *const[]){ "dolsot", "--session", "v", "--fork", "u",
	                                  "print(len(b), x)", NULL });
	ck_out(&r, "20971520 2\n");
	cli_run_release(&r);
	ck_assert_int_eq(rd_count("dolsot:unit:*"), units);
	run_ok(&r, (const char *const[]){ "dolsot", "--reset", "all", NULL });
	cli_run_release(&r);
	ck_assert_int_eq(rd_count("dolsot:unit:*"), 0);
	ck_assert_int_eq(rd_count("dolsot:units:*"), 0);
}
END_TEST

/* Keys live under DOLSOT_REDIS_PREFIX and expire with the session TTL;
 * --reset all removes only the prefix's sessions. */
START_TEST(redis_prefix_ttl_and_reset_all_scope)
{
	char buf[64];
	struct cli_run r;
	redisContext *c;
	redisReply *rep;
	long long ttl;

	cli_test_add_env(&fx, "DOLSOT_REDIS_PREFIX=t1:");
	cli_test_add_env(&fx, "DOLSOT_SESSION_TTL_DAYS=1");
	use_store(REDIS_STORE, NULL);
	c = rd_conn(NULL);
	rep = redisCommand(c, "HSET dolsot:session:other blob x saved 1 sandboxed 0");
	freeReplyObject(rep);
	rep = redisCommand(c, "SET unrelated 1");
	freeReplyObject(rep);
	redisFree(c);
	cell_ok("k", "x = 1", NULL);
	ttl = atoll(rd_query(buf, sizeof(buf), NULL, "PTTL %s", "t1:session:k"));
	ck_assert_msg(ttl > 86400000LL - 600000 && ttl <= 86400000LL, "pttl %lld", ttl);
	run_ok(&r, (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_assert_msg(strncmp(r.out, "k\t", 2) == 0 && !cli_has(r.out, "other"), "%s", r.out);
	cli_run_release(&r);
	run_ok(&r, (const char *const[]){ "dolsot", "--reset", "all", NULL });
	ck_out(&r, "reset all: removed 1 session(s)\n");
	cli_run_release(&r);
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "EXISTS %s", "dolsot:session:other"),
	                 "1");
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "EXISTS %s", "unrelated"), "1");
}
END_TEST

/* --reset TARGET with a short timeout. */
static void reset_quick(struct cli_run *r, const char *target)
{
	cli_test_run(&fx, r, fx.tmp, NULL, (const char *const[]){
		"dolsot", "--reset", target, "--timeout", "1", NULL });
}

/* issue 41: a Redis store that fails under --reset is a store error, said
 * with its reason, never "in use": with the server pausing writes (CLIENT
 * PAUSE WRITE: a list is answered, a lock's SET is not) --reset all and
 * --reset ID exit 1 naming the server, and every session stays.  A
 * session a running call holds is still kept as in use, and busy. */
START_TEST(redis_reset_says_a_failing_store_is_not_busy)
{
	static const char *const targets[] = { "all", "a" };
	char buf[64], go[4400], code[4600], *out = cli_path(fx.tmp, "held.out"), *res;
	struct cli_run r;
	pid_t held;
	int status;

	use_store(REDIS_STORE, NULL);
	cell_ok("a", "x = 1", NULL);
	cell_ok("b", "x = 2", NULL);
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "CLIENT PAUSE %s WRITE", "600000"),
	                 "OK");
	for (size_t i = 0; i < sizeof(targets) / sizeof(*targets); i++) {
		reset_quick(&r, targets[i]);
		ck_code(&r, 1);
		ck_out(&r, "");
		ck_err_has(&r, "dolsot: cannot lock session 'a': ");
		ck_err_has(&r, rd.url);
		ck_err_has(&r, ": lock: no answer within 1 s");
		ck_err_lacks(&r, "in use");
		ck_err_lacks(&r, "busy");
		cli_run_release(&r);
	}
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "CLIENT %s", "UNPAUSE"), "OK");
	cell_ok("a", "print(x)", "1\n");
	cell_ok("b", "print(x)", "2\n");
	/* Busy is still busy: a call holds "a" until the test makes go. */
	snprintf(go, sizeof(go), "%s/go", fx.tmp);
	snprintf(code, sizeof(code), "import os, time\nwhile not os.path.exists('%s'):\n"
	         "    time.sleep(0.01)\nx = 3", go);
	held = cell_async("a", code, out);
	wait_for_key("dolsot:lock:a");
	reset_quick(&r, "a");
	ck_code(&r, 1);
	ck_err_has(&r, "dolsot: session 'a' is busy: another call is using it (its lock on ");
	cli_run_release(&r);
	reset_quick(&r, "all");
	ck_code(&r, 0);
	ck_out(&r, "reset all: removed 1 session(s); kept, in use by a call: a\n");
	cli_run_release(&r);
	cli_write_file(go, "");
	ck_assert_int_eq(waitpid(held, &status, 0), held);
	res = cli_read_file(out, NULL);
	ck_assert_msg(strncmp(res, "0\n", 2) == 0, "the held call: %s", res);
	free(res);
	cell_ok("a", "print(x)", "3\n");
}
END_TEST

START_TEST(redis_ttl_zero_never_expires)
{
	char buf[64];

	cli_test_add_env(&fx, "DOLSOT_SESSION_TTL_DAYS=0");
	use_store(REDIS_STORE, NULL);
	cell_ok("k", "x = 1", NULL);
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "PTTL %s", "dolsot:session:k"), "-1");
}
END_TEST

/* Malformed store values are usage errors, before anything runs. */
START_TEST(malformed_store_values_are_usage_errors)
{
	static const char *const bad[] = {
		"bogus", "redis://", "redis://h:0", "redis://h:70000", "redis://h/x",
		"redis://user@h", "redis://u:@h", "redis://h junk", "rediss://h:6380",
		"cmd:", "cmd:   ", "redis://[zz]:1",
	};
	struct cli_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cli_test_run(&fx, &r, fx.tmp, NULL, (const char *const[]){
			"dolsot", "--store", bad[i], "--session", "m", "x = 1", NULL });
		ck_assert_msg(r.code == 2 && cli_has(r.err, "--store="),
		              "%s: exit %d: %s", bad[i], r.code, r.err);
		cli_run_release(&r);
	}
	cli_test_run(&fx, &r, fx.tmp, (const char *const[]){ "DOLSOT_STORE=rediss://h", NULL },
	             (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_code(&r, 2);
	ck_err_has(&r, "TLS");
	cli_run_release(&r);
	cli_test_run(&fx, &r, fx.tmp, (const char *const[]){ "DOLSOT_STORE=redis://h",
	             "DOLSOT_REDIS_LOCK_MS=soon", NULL },
	             (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_REDIS_LOCK_MS");
	cli_run_release(&r);
}
END_TEST

/* A helper of the test's: body is the case statement's arms. */
static void use_helper(const char *body)
{
	char path[4500], text[4096];

	snprintf(path, sizeof(path), "%s/helper", fx.tmp);
	snprintf(text, sizeof(text), "#!/bin/sh\ncase $1 in\n%s\n*) exit 0 ;;\nesac\n", body);
	cli_write_file(path, text);
	ck_assert_int_eq(chmod(path, 0755), 0);
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s", path);
	cli_test_add_env(&fx, store_env);
}

/* Output that breaks the protocol is an error naming the helper. */
START_TEST(helper_output_errors)
{
	struct cli_run r;

	use_helper("list) echo 'a 12 yesterday' ;;\n"
	           "delete) echo lots ;;\n"
	           "load) echo oops; exit 1 ;;");
	cli_test_run(&fx, &r, fx.tmp, NULL, (const char *const[]){ "dolsot", "--list-sessions", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "store helper '");
	ck_err_has(&r, "list: line 1: LAST_USED");
	cli_run_release(&r);
	/* (--reset all lists first, and that list is broken here.) */
	cli_test_run(&fx, &r, fx.tmp, NULL, (const char *const[]){ "dolsot", "--reset", "h", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "(delete h): its output is not a count");
	cli_run_release(&r);
	cell(&r, "h", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "(load h): exit status 1 with output");
	cli_run_release(&r);
}
END_TEST

/* Words of capabilities that break the protocol are an error naming the
 * helper (unit-list's are parsed by store_cmd_parse.c, fuzzed and replayed
 * in tests/regress); a save needs no unit-list at all. */
START_TEST(helper_units_output_errors)
{
	struct cli_run r;

	use_helper("capabilities) printf 'units\\001\\n' ;;");
	cell(&r, "h", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "(capabilities): its output is not words of printable ASCII");
	cli_run_release(&r);
	use_helper("capabilities) echo units ;;\n"
	           "load) exit 1 ;;\n"
	           "unit-list) echo nothex ;;");
	/* A commit lists the helper's units only for a unit its head names that
	 * it neither sends nor named before: never for a save like this one,
	 * which succeeds without the broken listing (it used to be refused). */
	cell(&r, "h", "x = 'x' * 5000");   /* a unit of its own (units.h) */
	ck_code(&r, 0);
	ck_err(&r, "session now holds: x\n");
	cli_run_release(&r);
}
END_TEST

/* A helper that keeps units but has no units lock: this host's lock
 * alone keeps collecting off saves, and what a save drops is collected. */
START_TEST(helper_with_units_and_no_units_lock)
{
	char *helper = wrap_helper("units-only", "[ \"$2\" = capabilities ] && "
	                           "{ echo units; exit 0; }\n");
	size_t len;
	char *text;

	cli_test_add_env(&fx, "DOLSOT_HISTORY=0");   /* its units are the cells' */
	snprintf(store_env, sizeof(store_env), "DOLSOT_STORE=cmd:%s %s", helper, helper_dir);
	cli_test_add_env(&fx, store_env);
	/* Values of 4 KiB or more, each a unit of its own (units.h). */
	cell_ok("a", "v = 'one' * 2000; w = b'w' * 5000", NULL);
	text = cli_read_file(cli_path(helper_dir, "a"), &len);
	ck_assert(text && len > 11 && memcmp(text, "dolsot:2:u\n", 11) == 0);
	free(text);
	ck_assert_int_eq(count_helper_units(), 2);
	cell_ok("a", "v = 'two' * 2000", NULL);
	ck_assert_int_eq(count_helper_units(), 2);
	cell_ok("a", "print(v[:3], len(w))", "two 5000\n");
	ck_assert(!cli_exists(cli_path(helper_dir, ".units-lock")));
}
END_TEST

START_TEST(helper_that_hangs_is_killed_at_the_timeout)
{
	struct cli_run r;
	char desc[1024];

	use_helper("load) sleep 1000 ;;");
	cli_test_run(&fx, &r, fx.tmp, (const char *const[]){ "DOLSOT_TIMEOUT=2", NULL },
	             (const char *const[]){ "dolsot", "--session", "h", "x = 1", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "(load h): killed after 2 s");
	cli_run_release(&r);
	ck_assert_msg(cli_wait_no_strays(fx.store_env, 30, desc, sizeof(desc)) == 0,
	              "left behind: %s", desc);
}
END_TEST

START_TEST(helper_that_crashes_is_an_error)
{
	struct cli_run r;

	use_helper("save) kill -SEGV $$ ;;\nload) exit 1 ;;");
	cell(&r, "h", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "(save h): killed by signal 11");
	cli_run_release(&r);
	use_helper("load) echo 'broken: it went wrong' >&2; exit 3 ;;");
	cell(&r, "h", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "(load h): exit status 3: broken: it went wrong");
	cli_run_release(&r);
}
END_TEST

/* A helper without lock/unlock still works (the calls of one machine are
 * serialized by its own lock); a missing program is named. */
START_TEST(helper_without_locks_and_a_missing_helper)
{
	struct cli_run r;
	char arms[4096];

	snprintf(arms, sizeof(arms),
	         "load) [ -f %s/s ] || exit 1; cat %s/s ;;\n"
	         "save) cat > %s/s ;;", fx.tmp, fx.tmp, fx.tmp);
	use_helper(arms);
	cell_ok("s", "x = 5", NULL);
	cell_ok("s", "print(x)", "5\n");
	cli_test_run(&fx, &r, fx.tmp, (const char *const[]){
	             "DOLSOT_STORE=cmd:/nonexistent/helper", NULL },
	             (const char *const[]){ "dolsot", "--session", "s", "x = 1", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "store helper '/nonexistent/helper' failed");
	ck_err_has(&r, "exit status 127");
	cli_run_release(&r);
}
END_TEST

/* Issue 35: a server that may evict dolsot's keys is refused at connect,
 * naming the setting and the fix; nothing is written to it.  volatile-*
 * too: a lock key always has a time to live. */
START_TEST(redis_evicting_policy_is_refused)
{
	const char *lru[] = { "--maxmemory-policy", "allkeys-lru", NULL };
	char buf[64];
	struct cli_run r;

	use_store(REDIS_STORE, lru);
	cell(&r, "e", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "maxmemory-policy is allkeys-lru");
	ck_err_has(&r, "CONFIG SET maxmemory-policy noeviction");
	ck_err_has(&r, rd.url);
	cli_run_release(&r);
	ck_assert_str_eq(rd_query(buf, sizeof(buf), NULL, "DBSIZE%s", ""), "0");
	rd_query(buf, sizeof(buf), NULL, "CONFIG SET maxmemory-policy %s", "volatile-lru");
	cell(&r, "e", "x = 1");
	ck_code(&r, 1);
	ck_err_has(&r, "maxmemory-policy is volatile-lru");
	cli_run_release(&r);
	rd_query(buf, sizeof(buf), NULL, "CONFIG SET maxmemory-policy %s", "noeviction");
	cell_ok("e", "x = 1", NULL);
}
END_TEST

/* noeviction with persistence: calls go on, and nothing is said of the
 * server. */
START_TEST(redis_noeviction_with_persistence_is_quiet)
{
	struct cli_run r;

	use_store(REDIS_STORE, NULL);
	for (int i = 0; i < 2; i++) {
		cell(&r, "q", "x = 1");
		ck_code(&r, 0);
		ck_err_lacks(&r, "warning");
		ck_err_lacks(&r, "maxmemory");
		cli_run_release(&r);
	}
}
END_TEST

/* A server with neither RDB save points nor AOF: said once per server
 * run (the first call), not at every call. */
START_TEST(redis_without_persistence_is_warned_once)
{
	const char *bare[] = { "--save", "", "--appendonly", "no", NULL };
	struct cli_run r;

	use_store(REDIS_STORE, bare);
	cell(&r, "w", "x = 1");
	ck_code(&r, 0);
	ck_err_has(&r, "keeps nothing on disk (no RDB save points, appendonly no)");
	ck_err_has(&r, rd.url);
	cli_run_release(&r);
	cell(&r, "w", "print(x)");
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	ck_err_lacks(&r, "keeps nothing on disk");
	cli_run_release(&r);
}
END_TEST

/* A server restarted without persistence: the next call says its
 * sessions are gone, instead of starting one empty in silence; once. */
START_TEST(redis_restart_is_said_at_the_next_call)
{
	const char *bare[] = { "--save", "", "--appendonly", "no", NULL };
	struct cli_run r;

	use_store(REDIS_STORE, bare);
	cell_ok("s", "x = 1", NULL);
	cell_ok("s", "print(x)", "1\n");
	rd_stop();
	rd_start(bare, NULL);   /* the same port */
	cell(&r, "s", "print('x' in dir())");
	ck_code(&r, 0);
	ck_out(&r, "False\n");
	ck_err_has(&r, "restarted since this host's last call (its run_id changed)");
	ck_err_has(&r, "sessions saved before are gone");
	cli_run_release(&r);
	cell(&r, "s", "x = 2");
	ck_code(&r, 0);
	ck_err_lacks(&r, "restarted");
	cli_run_release(&r);
}
END_TEST

/* A client killed (SIGKILL) with a long cell in flight: a retry of the
 * same session gets it as soon as that cell is gone, not when the lock
 * expires (30 s), and finds the state before the killed call. */
START_TEST(redis_killed_client_releases_its_lock)
{
	char *mark = cli_path(fx.tmp, "cell.pid"), code[4600], *pidtext;
	struct cli_run r;
	pid_t pid, cell_pid;
	double t0;

	use_store(REDIS_STORE, NULL);
	cell_ok("k", "x = 1", NULL);
	snprintf(code, sizeof(code), "import os, time\nx = 2\n"
	         "open('%s.tmp', 'w').write(str(os.getpid()))\n"
	         "os.rename('%s.tmp', '%s')\ntime.sleep(300)", mark, mark, mark);
	pid = cli_spawn(&(struct cli_opts){ .env = fx.env, .cwd = fx.tmp },
	                (const char *const[]){ "dolsot", "--session", "k", code, NULL });
	t0 = cli_now();
	while (!cli_exists(mark)) {
		ck_assert_msg(cli_now() - t0 < 120, "the long cell never started");
		usleep(20000);
	}
	pidtext = cli_read_file(mark, NULL);
	cell_pid = (pid_t)atoi(pidtext);
	free(pidtext);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	t0 = cli_now();
	cell(&r, "k", "print(x)");
	ck_code(&r, 0);
	ck_out(&r, "1\n");
	ck_assert_msg(cli_now() - t0 < 10, "the retry waited %.1f s for the lock",
	              cli_now() - t0);
	cli_run_release(&r);
	ck_assert_msg(!cli_pid_alive(cell_pid), "the killed call's cell still runs");
}
END_TEST

static Suite *stores_suite(void)
{
	Suite *s = suite_create("stores");
	TCase *every = tcase_create("every store"), *redis = tcase_create("redis"),
	      *helper = tcase_create("helper"), *health = tcase_create("redis health"),
	      *killed = tcase_create("redis killed client");
	TCase *all[] = { every, redis, health, killed, helper, NULL };

	for (size_t i = 0; all[i]; i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 600);
	}
	tcase_add_loop_test(every, sessions_live_in_every_store, 0, NKINDS);
	tcase_add_loop_test(every, concurrent_increments_from_two_hosts_all_count, 0, 3);
	tcase_add_test(every, malformed_store_values_are_usage_errors);
	tcase_add_test(redis, redis_stopped_mid_call_and_restarted);
	tcase_add_test(redis, redis_password_required_and_wrong);
	tcase_add_test(redis, redis_lock_lost_under_a_slow_call_refuses_its_save);
	tcase_add_test(redis, redis_lock_is_renewed_during_a_long_call);
	tcase_add_test(redis, redis_bulk_limit_is_reported);
	tcase_add_test(redis, redis_holds_a_100_mb_session);
	tcase_add_test(redis, redis_units_a_call_sends_only_what_changed);
	tcase_add_test(redis, redis_prefix_ttl_and_reset_all_scope);
	tcase_add_test(redis, redis_ttl_zero_never_expires);
	tcase_add_test(redis, redis_reset_says_a_failing_store_is_not_busy);
	tcase_add_test(health, redis_evicting_policy_is_refused);
	tcase_add_test(health, redis_noeviction_with_persistence_is_quiet);
	tcase_add_test(health, redis_without_persistence_is_warned_once);
	tcase_add_test(health, redis_restart_is_said_at_the_next_call);
	tcase_add_test(killed, redis_killed_client_releases_its_lock);
	tcase_add_test(helper, helper_output_errors);
	tcase_add_test(helper, helper_that_hangs_is_killed_at_the_timeout);
	tcase_add_test(helper, helper_that_crashes_is_an_error);
	tcase_add_test(helper, helper_without_locks_and_a_missing_helper);
	tcase_add_test(helper, helper_keeps_a_big_value_unit_once);
	tcase_add_test(helper, helper_units_output_errors);
	tcase_add_test(helper, helper_with_units_and_no_units_lock);
	suite_add_tcase(s, every);
	suite_add_tcase(s, redis);
	suite_add_tcase(s, health);
	suite_add_tcase(s, killed);
	suite_add_tcase(s, helper);
	return s;
}

int main(void)
{
	return ck_run(stores_suite());
}
