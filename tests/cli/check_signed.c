/*
 * check_signed.c - signed sessions and --fork, through the real binary, on
 * every store in stores[] (a store added to the factory gets one line).
 *
 * The tampering cases put a blob in the store whose unpickling creates a
 * file (made here with Debian's python3.11), then change it the ways an
 * attacker who can write to the store could: its bytes, its id, its key,
 * no signature at all.  Each is refused and the file never appears; the
 * same blob signed for its own id does create it, so the blob is live.
 * The bytes go in and out through the store's own operations (store.h),
 * as anyone who reaches the store would write them.  The Redis store is
 * a redis-server the case starts on a free port (redis_helper.h), the
 * helper store the example helper, examples/dolsot-store-dir, run for real:
 * as it is, keeping units, and behind a wrapper that refuses
 * "capabilities" (an older helper's answer), keeping whole blobs.
 *
 * What a writer without the key does to a shared store is done as another
 * local user (CLI_TEST_USER): redis-cli against the server, which has no
 * AUTH, and sh in the helper's directory, which it may write.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
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
#include "sign.h"
#include "store.h"

#define PY "/usr/bin/python3.11"
#define KEY_A "key-a: at least thirty-two bytes of it"
#define KEY_B "key-b: at least thirty-two bytes of it"
#define RACERS 6

struct store_case {
	const char *name;
	enum store_kind kind;
	const char *const *env;       /* what selects it for dolsot */
	char *spec;                   /* DOLSOT_STORE's value, for store_open */
};

static char redis_store[4600], cmd_store[9000], cmd_whole_store[9000];
static const char *const file_env[] = { "DOLSOT_STORE=file", NULL };
static const char *const memory_env[] = { "DOLSOT_STORE=memory", "DOLSOT_SERVER=auto", NULL };
static const char *const redis_env[] = { redis_store, NULL };
static const char *const cmd_env[] = { cmd_store, NULL };
static const char *const cmd_whole_env[] = { cmd_whole_store, NULL };

static const struct store_case stores[] = {
	{ "file", STORE_KIND_FILE, file_env, NULL },
	{ "memory", STORE_KIND_MEMORY, memory_env, NULL },
	{ "redis", STORE_KIND_REDIS, redis_env, redis_store + sizeof("DOLSOT_STORE=") - 1 },
	{ "cmd", STORE_KIND_CMD, cmd_env, cmd_store + sizeof("DOLSOT_STORE=") - 1 },
	{ "cmd-whole", STORE_KIND_CMD, cmd_whole_env,
	  cmd_whole_store + sizeof("DOLSOT_STORE=") - 1 },
};
#define NSTORES ((int)(sizeof(stores) / sizeof(*stores)))

/* The case's redis-server, started by its first use of the Redis store. */
static struct redis_test rd = { .pid = -1 };

static struct cli_test fx;

static void setup(void)
{
	char err[4096];

	cli_test_begin(&fx, cli_usual_env);
	cli_test_add_env(&fx, "DOLSOT_STORE");
	ck_assert_msg(cli_test_warm(&fx, err, sizeof(err)) == 0, "--server-start: %s", err);
}

static void teardown(void)
{
	cli_test_end(&fx);
	redis_test_stop(&rd);
}

/* Make sc reachable: its redis-server up, its helper's directory named. */
static void ready(const struct store_case *sc)
{
	char cwd[4096];

	if (sc->kind == STORE_KIND_REDIS && rd.pid <= 0) {
		redis_test_start_in(&rd, fx.tmp, NULL, NULL);
		snprintf(redis_store, sizeof(redis_store), "DOLSOT_STORE=%s", rd.url);
	}
	if (sc->kind == STORE_KIND_CMD && sc->env == cmd_env)
		snprintf(cmd_store, sizeof(cmd_store), "DOLSOT_STORE=cmd:%s/examples/"
		         "dolsot-store-dir %s/helper-store", getcwd(cwd, sizeof(cwd)), fx.tmp);
	if (sc->kind == STORE_KIND_CMD && sc->env == cmd_whole_env) {
		char text[5000], wrapper[4200], tmp[4300];

		/* Not cli_path's (its buffers go round, and the case holds some);
		 * written whole, then renamed: forked cases run it meanwhile. */
		snprintf(wrapper, sizeof(wrapper), "%s/old-helper", fx.tmp);
		snprintf(tmp, sizeof(tmp), "%s.%d", wrapper, (int)getpid());
		snprintf(text, sizeof(text), "#!/bin/sh\n[ \"$2\" = capabilities ] && exit 2\n"
		         "exec %s/examples/dolsot-store-dir \"$@\"\n", getcwd(cwd, sizeof(cwd)));
		cli_write_file(tmp, text);
		ck_assert_int_eq(chmod(tmp, 0755), 0);
		ck_assert_int_eq(rename(tmp, wrapper), 0);
		snprintf(cmd_whole_store, sizeof(cmd_whole_store), "DOLSOT_STORE=cmd:%s "
		         "%s/helper-store", wrapper, fx.tmp);
	}
}

/* dolsot ARGS... on store sc, with extra entries too (may be NULL). */
static void run_on(const struct store_case *sc, struct cli_run *r, const char *const *extra,
                   const char *const *args)
{
	const char *env[16], *argv[16];
	size_t n = 0, a = 0;

	ready(sc);
	for (size_t i = 0; sc->env[i]; i++)
		env[n++] = sc->env[i];
	for (size_t i = 0; extra && extra[i]; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	argv[a++] = "dolsot";
	while (*args)
		argv[a++] = *args++;
	argv[a] = NULL;
	cli_test_run(&fx, r, fx.tmp, env, argv);
}

#define RUN(sc, r, ...) run_on((sc), (r), NULL, (const char *const[]){ __VA_ARGS__, NULL })

static void ok(const struct store_case *sc, const char *id, const char *code,
               const char *out)
{
	struct cli_run r;

	RUN(sc, &r, "--session", id, code);
	ck_code(&r, 0);
	if (out)
		ck_out(&r, out);
	cli_run_release(&r);
}

/* The store sc, opened as dolsot opens it (its server is up for memory). */
static struct store *open_store(const struct store_case *sc)
{
	char err[STORE_ERR_MAX];
	struct store *st;

	ready(sc);
	st = store_open(sc->kind, sc->spec, fx.store, 0, 30, err, sizeof(err));
	ck_assert_msg(st != NULL, "%s: %s", sc->name, err);
	return st;
}

static void put_raw(const struct store_case *sc, const char *id, const uint8_t *b, size_t n)
{
	char err[STORE_ERR_MAX];
	struct store *st = open_store(sc);
	struct store_lock lk;

	/* The memory store takes a save only from the holder of the lock. */
	ck_assert_msg(store_lock(st, id, -1, &lk, err, sizeof(err)) == STORE_LOCKED, "%s", err);
	ck_assert_msg(store_save(st, id, b, n, false, err, sizeof(err)) == 0, "%s", err);
	store_unlock(st, &lk);
	store_close(st);
}

static uint8_t *get_raw(const struct store_case *sc, const char *id, size_t *n)
{
	char err[STORE_ERR_MAX];
	struct store *st = open_store(sc);
	uint8_t *b = NULL;
	bool found;

	ck_assert_msg(store_load(st, id, &b, n, &found, err, sizeof(err)) == 0 && found,
	              "%s: %s", id, err);
	store_close(st);
	return b;
}

/* blob followed by its trailer for id under key (NULL: the store's key
 * file, which dolsot made), malloc'd, *n bytes. */
static uint8_t *signed_blob(const char *key, const char *id, const uint8_t *blob, size_t len,
                            size_t *n)
{
	char err[SIGN_ERR_MAX];
	struct sign_key k;
	uint8_t *out = malloc(len + SIGN_TRAILER);
	int dfd = open(fx.store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert(out && dfd >= 0);
	ck_assert_msg(sign_key_open(key, dfd, &k, err, sizeof(err)) == 0, "%s", err);
	close(dfd);
	memcpy(out, blob, len);
	sign_trailer(&k, id, blob, len, &(struct sign_meta){ 1000, false }, out + len);
	*n = len + SIGN_TRAILER;
	return out;
}

/* A session blob whose loading creates the file mark. */
static uint8_t *evil_blob(const char *mark, size_t *n)
{
	char cmd[9000], *path = cli_path(fx.tmp, "evil.blob");
	uint8_t *b;

	snprintf(cmd, sizeof(cmd), PY " -c '"
	         "import _pickle, sys\n"
	         "class E:\n"
	         "    def __reduce__(self):\n"
	         "        return (open, (sys.argv[1], \"w\"))\n"
	         "body = _pickle.dumps(E(), protocol=5)\n"
	         "index = _pickle.dumps({\"units\": [((\"evil\",), len(body))], \"carry\": [],"
	         " \"count\": 1}, protocol=5)\n"
	         "open(sys.argv[2], \"wb\").write(b\"DLSS\\x02\" + len(index).to_bytes(8, "
	         "\"little\") + index + body)\n' '%s' '%s'", mark, path);
	ck_assert_int_eq(system(cmd), 0);
	b = (uint8_t *)cli_read_file(path, n);
	ck_assert_ptr_nonnull(b);
	return b;
}

static void ck_refused(const struct cli_run *r, const char *id, const char *why)
{
	char want[256];

	ck_code(r, 1);
	ck_out(r, "");
	snprintf(want, sizeof(want), "dolsot: session '%s' cannot be loaded: ", id);
	ck_err_has(r, want);
	ck_err_has(r, why);
	snprintf(want, sizeof(want), "; run 'dolsot --reset %s' to start it afresh\n", id);
	ck_err_has(r, want);
	ck_assert_msg(strchr(r->err, '\n') == r->err + r->err_len - 1, "one line: %s", r->err);
}

/* Run a cell in id; it must be refused for why, and mark never made. */
static void ck_refused_unrun(const struct store_case *sc, const char *id, const char *why,
                             const char *mark)
{
	struct cli_run r;

	RUN(sc, &r, "--session", id, "print('ran')");
	ck_refused(&r, id, why);
	cli_run_release(&r);
	ck_assert_msg(!cli_exists(mark), "%s: %s: the blob was unpickled", sc->name, id);
}

START_TEST(tampered_moved_rekeyed_and_unsigned_blobs_never_load)
{
	const struct store_case *sc = &stores[_i];
	char *mark = cli_path(fx.tmp, "pwned");
	uint8_t *evil, *good, *b;
	size_t n_evil, n_good, n;
	struct cli_run r;

	evil = evil_blob(mark, &n_evil);
	ok(sc, "t", "x = 1", NULL);   /* makes the key file, and a session */
	good = get_raw(sc, "t", &n_good);
	/* A byte flipped in a real session. */
	good[n_good / 2] ^= 1;
	put_raw(sc, "t", good, n_good);
	ck_refused_unrun(sc, "t", "its signature does not match", mark);
	/* The evil bytes under t's real signature. */
	b = malloc(n_evil + SIGN_TRAILER);
	memcpy(b, evil, n_evil);
	memcpy(b + n_evil, good + n_good - SIGN_TRAILER, SIGN_TRAILER);
	put_raw(sc, "t", b, n_evil + SIGN_TRAILER);
	free(b);
	ck_refused_unrun(sc, "t", "its signature does not match", mark);
	/* Signed with the store's key, but for another session, then moved. */
	b = signed_blob(NULL, "other", evil, n_evil, &n);
	put_raw(sc, "t", b, n);
	free(b);
	ck_refused_unrun(sc, "t", "copied from another session", mark);
	/* Signed for t, with another key. */
	b = signed_blob(KEY_B, "t", evil, n_evil, &n);
	put_raw(sc, "t", b, n);
	free(b);
	ck_refused_unrun(sc, "t", "signed with another key", mark);
	/* Written before sessions were signed. */
	put_raw(sc, "t", evil, n_evil);
	ck_refused_unrun(sc, "t", "it carries no signature (it was written before dolsot "
	                 "signed sessions", mark);
	/* A fork of it is refused as well, and makes nothing. */
	RUN(sc, &r, "--session", "copy", "--fork", "t");
	ck_refused(&r, "t", "it carries no signature");
	cli_run_release(&r);
	RUN(sc, &r, "--list-sessions");
	ck_assert_msg(!cli_has(r.out, "copy\t"), "%s", r.out);
	cli_run_release(&r);
	/* The reset it names starts t afresh. */
	RUN(sc, &r, "--reset", "t");
	ck_code(&r, 0);
	cli_run_release(&r);
	ok(sc, "t", "'x' in globals()", "False\n");
	ck_assert(!cli_exists(mark));
	/* Control: the same blob, signed for its own id, does run its code. */
	b = signed_blob(NULL, "t", evil, n_evil, &n);
	put_raw(sc, "t", b, n);
	free(b);
	RUN(sc, &r, "--session", "t", "1");
	cli_run_release(&r);
	ck_assert_msg(cli_exists(mark), "%s: the control blob did not run", sc->name);
	free(evil);
	free(good);
}
END_TEST

/* DOLSOT_SESSION_KEY: the key itself, or a key file by path; the store's
 * own key file otherwise.  A session is read back only under its key, and
 * the key never reaches the cell. */
START_TEST(session_key_from_the_environment)
{
	const struct store_case *sc = &stores[_i];
	const char *with_a[] = { "DOLSOT_SESSION_KEY=" KEY_A, NULL };
	char keyfile[4400], keyenv[4500];
	const char *with_file[] = { keyenv, NULL };
	struct cli_run r;

	run_on(sc, &r, with_a, (const char *const[]){ "--session", "k", "import os\n"
	       "x = 5\nprint(os.environ.get('DOLSOT_SESSION_KEY'))", NULL });
	ck_code(&r, 0);
	ck_out(&r, "None\n");
	cli_run_release(&r);
	run_on(sc, &r, with_a, (const char *const[]){ "--session", "k", "x", NULL });
	ck_out(&r, "5\n");
	cli_run_release(&r);
	/* Without it, the store's own key file: another key (made by this
	 * call when no warm server made it before, and then no reset is
	 * suggested: see a_key_file_made_anew_says_so_and_keeps_the_sessions). */
	RUN(sc, &r, "--session", "k", "x");
	ck_code(&r, 1);
	ck_err_has(&r, "dolsot: session 'k' cannot be loaded: ");
	ck_err_has(&r, "signed with another key");
	cli_run_release(&r);
	/* The same key in a file named by path. */
	snprintf(keyfile, sizeof(keyfile), "%s/key", fx.tmp);
	cli_write_file(keyfile, KEY_A "\n");
	snprintf(keyenv, sizeof(keyenv), "DOLSOT_SESSION_KEY=%s", keyfile);
	run_on(sc, &r, with_file, (const char *const[]){ "--session", "k", "x", NULL });
	ck_code(&r, 1);   /* cli_write_file made it 0644 */
	ck_err_has(&r, "grants group or other permissions (mode 644): make it 0600");
	cli_run_release(&r);
	ck_assert_int_eq(chmod(keyfile, 0600), 0);
	run_on(sc, &r, with_file, (const char *const[]){ "--session", "k", "x", NULL });
	ck_code(&r, 0);
	ck_out(&r, "5\n");
	cli_run_release(&r);
	/* A key too short to be one is a usage error, never echoed. */
	run_on(sc, &r, (const char *const[]){ "DOLSOT_SESSION_KEY=hunter2", NULL },
	       (const char *const[]){ "--session", "k", "x", NULL });
	ck_code(&r, 2);
	ck_err(&r, "dolsot: DOLSOT_SESSION_KEY is not valid: expected a key of 32 to 1024 "
	           "bytes, or the absolute path of a key file\n");
	cli_run_release(&r);
}
END_TEST

/* The key file: 0600, made once, even by first calls racing. */
START_TEST(key_file_made_once_by_racing_first_calls)
{
	const struct store_case *sc = &stores[0];
	char *key = cli_path(fx.store, SIGN_KEY_FILE), id[16];
	pid_t kids[RACERS];
	struct stat st;
	struct cli_run r;

	for (int i = 0; i < RACERS; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			snprintf(id, sizeof(id), "r%d", i);
			RUN(sc, &r, "--session", id, "v = 7");
			_exit(r.code);
		}
	}
	for (int i = 0; i < RACERS; i++) {
		int status;

		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "racer %d", i);
	}
	ck_assert_int_eq(lstat(key, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq((int)st.st_size, 65);
	for (int i = 0; i < RACERS; i++) {
		snprintf(id, sizeof(id), "r%d", i);
		ok(sc, id, "v", "7\n");
	}
}
END_TEST

START_TEST(fork_copies_and_the_source_stays)
{
	const struct store_case *sc = &stores[_i];
	struct cli_run r;

	ok(sc, "src", "x = [1]\ndef f():\n    return len(x)", NULL);
	RUN(sc, &r, "--session", "dst", "--fork", "src");
	ck_code(&r, 0);
	ck_out(&r, "forked src into dst\n");
	ck_err(&r, "");
	cli_run_release(&r);
	ok(sc, "dst", "x.append(2)\nx, f()", "([1, 2], 2)\n");
	ok(sc, "src", "x, f()", "([1], 1)\n");
	/* An existing destination: refused, and left as it was. */
	RUN(sc, &r, "--session", "dst", "--fork", "src");
	ck_code(&r, 1);
	ck_err(&r, "dolsot: cannot fork session 'src' into 'dst': 'dst' already exists (add "
	           "--replace to start it over from 'src', or pick another id)\n");
	cli_run_release(&r);
	ok(sc, "dst", "x", "[1, 2]\n");
	/* --replace, with a cell run on the copy in the same call. */
	RUN(sc, &r, "--session", "dst", "--fork", "src", "--replace", "x.append(3)\nx");
	ck_code(&r, 0);
	ck_out(&r, "[1, 3]\n");
	cli_run_release(&r);
	ok(sc, "src", "x", "[1]\n");
	/* No source. */
	RUN(sc, &r, "--session", "new", "--fork", "nosuch", "1");
	ck_code(&r, 1);
	ck_err(&r, "dolsot: cannot fork session 'nosuch': there is no such session\n");
	cli_run_release(&r);
	RUN(sc, &r, "--list-sessions");
	ck_out(&r, r.out);
	ck_assert(!cli_has(r.out, "new\t"));
	cli_run_release(&r);
}
END_TEST

START_TEST(fork_usage_errors)
{
	static const struct {
		const char *argv[8];
		const char *err;
	} cases[] = {
		{ { "--session", "a", "--fork", "a", NULL },
		  "dolsot: --fork a: a session cannot be forked into itself\n" },
		{ { "--session", "a", "--fork", "all", NULL },
		  "dolsot: --fork all: 'all' is not a session; name the session to copy\n" },
		{ { "--session", "a", "--fork", "../x", NULL }, NULL },
		{ { "--session", "a", "--replace", "1", NULL },
		  "dolsot: --replace goes with --fork SRC\n" },
		{ { "--reset", "a", "--fork", "b", NULL },
		  "dolsot: --fork and --replace belong to running code in a session\n" },
		{ { "--fork", "b", "1", NULL }, NULL },
		{ { "--json", "--session", "a", "--fork", "b", NULL },
		  "dolsot: --json needs code to run: --fork alone prints one line\n" },
	};
	struct cli_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		run_on(&stores[0], &r, NULL, cases[i].argv);
		ck_code(&r, 2);
		if (cases[i].err)
			ck_err(&r, cases[i].err);
		cli_run_release(&r);
	}
	ck_assert(!cli_exists(cli_path(fx.store, "a.pkl")));
}
END_TEST

/* Two forks between the same sessions in opposite directions, at once:
 * both locks are taken in the order of the ids, so neither waits for the
 * other forever (each would time out as busy otherwise). */
START_TEST(opposite_forks_do_not_deadlock)
{
	const struct store_case *sc = &stores[_i];
	pid_t kids[2];

	ok(sc, "a", "n = 'a'", NULL);
	ok(sc, "b", "n = 'b'", NULL);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			struct cli_run r;

			for (int k = 0; k < 4; k++) {
				run_on(sc, &r, (const char *const[]){ "DOLSOT_TIMEOUT=60", NULL },
				       (const char *const[]){ "--session", i ? "a" : "b", "--fork",
				                              i ? "b" : "a", "--replace",
				                              "import time; time.sleep(0.2)", NULL });
				if (r.code != 0)
					_exit(10 + k);
				cli_run_release(&r);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++) {
		int status;

		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork %d: %d", i,
		              status);
	}
}
END_TEST

/* ---- a writer without the key ---- */

/* The helper store's directory (where examples/dolsot-store-dir keeps
 * its files). */
static char *helper_dir(void)
{
	return cli_path(fx.tmp, "helper-store");
}

/* Run prog argv as another local user (none: the case skips), stdin
 * holding in (n bytes; NULL: none); it must exit 0. */
static bool as_other_user(const char *prog, const char *const *argv, const void *in,
                          size_t n)
{
	struct cli_opts o = { .prog = prog, .drop = true, .stdin_data = in, .stdin_len = n };
	struct cli_run r;

	if (geteuid() != 0 || !cli_local_user(CLI_TEST_USER, &o.uid, &o.gid)) {
		printf("SKIP: no other local user to write the store as\n");
		return false;
	}
	cli_run(&r, &o, argv);
	ck_assert_msg(r.code == 0, "%s: exit %d: %s%s", prog, r.code, r.out, r.err);
	cli_run_release(&r);
	return true;
}

/* Let the other user reach the helper's directory and write in it, as on
 * a shared export. */
static void share_helper_dir(void)
{
	ck_assert_int_eq(chmod(fx.tmp, 0711), 0);
	ck_assert_int_eq(chmod(helper_dir(), 0777), 0);
}

/* redis-cli ARGS... against the case's server, as the other user. */
static bool redis_as_other(const void *in, size_t n, const char *const *args)
{
	char port[16];
	const char *argv[16] = { "redis-cli", "-h", "127.0.0.1", "-p", port };
	size_t a = 5;

	snprintf(port, sizeof(port), "%d", rd.port);
	while (*args)
		argv[a++] = *args++;
	argv[a] = NULL;
	return as_other_user("/usr/bin/redis-cli", argv, in, n);
}

/*
 * A sandboxed call leaves an object whose unpickling touches mark; the
 * store's record of who wrote it is then rewritten to "an unsandboxed
 * call" by someone without the key (on Redis and the helper's directory,
 * another local user).  The signature says otherwise, so an unsandboxed
 * call refuses it, saying so, and nothing of it runs on the host; the
 * opt-in loads it (the mark appears: the bytes are live).
 */
START_TEST(a_rewritten_sandbox_mark_is_refused_outside_the_sandbox)
{
	static const struct store_case *const on[] = { &stores[0], &stores[2], &stores[3],
	                                               &stores[4] };
	const struct store_case *sc = on[_i];
	static const char *const trust[] = { "DOLSOT_TRUST_SANDBOXED=1", NULL };
	static const char unmark[] = "sed '1s/^dolsot:\\([12]\\):s$/dolsot:\\1:u/' \"$1/s\" > "
	                             "\"$1/.s.new\" && mv -f \"$1/.s.new\" \"$1/s\"";
	char *mark = cli_path(fx.tmp, "pwned"), code[8192];
	struct cli_run r;
	bool flipped = true;

	if (!cli_userns_probe(false)) {
		printf("SKIP: %s: user namespaces are not available here\n", __func__);
		return;
	}
	snprintf(code, sizeof(code), "import os\n"
	         "class P:\n"
	         "    def __reduce__(self):\n"
	         "        return (os.system, ('touch %s',))\n"
	         "p = P()\n", mark);
	RUN(sc, &r, "--session", "s", "--sandbox", code);
	ck_code(&r, 0);
	cli_run_release(&r);
	if (sc->kind == STORE_KIND_FILE) {
		ck_assert_int_eq(unlink(cli_path(fx.store, "s.sandboxed")), 0);
	} else if (sc->kind == STORE_KIND_REDIS) {
		flipped = redis_as_other(NULL, 0, (const char *const[]){
			"HSET", "dolsot:session:s", "sandboxed", "0", NULL });
	} else {
		share_helper_dir();
		flipped = as_other_user("/bin/sh", (const char *const[]){ "sh", "-c", unmark,
		                                                          "sh", helper_dir(),
		                                                          NULL }, NULL, 0);
		if (flipped) {
			char *text = cli_read_file(cli_path(helper_dir(), "s"), NULL);

			ck_assert(text && strncmp(text, "dolsot:", 7) == 0 &&
			          strncmp(text + 8, ":u\n", 3) == 0);
			free(text);
		}
	}
	if (!flipped)
		return;
	RUN(sc, &r, "--session", "s", "print('ran')");
	ck_code(&r, 1);
	ck_out(&r, "");
	ck_err_has(&r, "dolsot: session 's' was last written by a sandboxed call (so says "
	           "its signature, though the store's record of it says otherwise: someone "
	           "without the session key changed that record)");
	ck_err_has(&r, "run it with --sandbox");
	cli_run_release(&r);
	ck_assert_msg(!cli_exists(mark), "%s: the sandboxed call's pickle ran on the host",
	              sc->name);
	/* Control: the opt-in loads it on the host, and the pickle runs. */
	run_on(sc, &r, trust, (const char *const[]){ "--session", "s", "1", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert_msg(cli_exists(mark), "%s: the control did not run the pickle", sc->name);
}
END_TEST

/*
 * An earlier signed save of the same session, put back where the store
 * records a later one (FileStore's directory, by whoever can write it;
 * Redis's hash field, by another local user), is refused: its counter is
 * below the one recorded.
 */
START_TEST(an_earlier_save_put_back_is_refused)
{
	static const struct store_case *const on[] = { &stores[0], &stores[2] };
	const struct store_case *sc = on[_i];
	uint8_t *old;
	size_t n;
	struct cli_run r;

	ok(sc, "s", "x = 1", NULL);
	old = get_raw(sc, "s", &n);
	ok(sc, "s", "x = 2", NULL);
	if (sc->kind == STORE_KIND_FILE) {
		FILE *f = fopen(cli_path(fx.store, "s.pkl"), "wb");

		ck_assert(f && fwrite(old, 1, n, f) == n && fclose(f) == 0);
	} else if (!redis_as_other(old, n, (const char *const[]){
	                   "-x", "HSET", "dolsot:session:s", "blob", NULL })) {
		free(old);
		return;
	}
	free(old);
	RUN(sc, &r, "--session", "s", "x");
	ck_refused(&r, "s", "it is an earlier save (number 1) than the one the store last "
	           "committed (number 2), put back by someone who can write the store");
	cli_run_release(&r);
}
END_TEST

/* The store's key file gone, a new one is made: a session signed with the
 * old one is refused saying so, never with a --reset that would destroy
 * it, and loads again once the old key is back. */
START_TEST(a_key_file_made_anew_says_so_and_keeps_the_sessions)
{
	const struct store_case *sc = &stores[0];
	char *key = cli_path(fx.store, SIGN_KEY_FILE), *text, want[4600];
	struct cli_run r;

	ok(sc, "s", "x = 1", NULL);
	/* Saved an hour ago. */
	ck_assert_int_eq(utimensat(AT_FDCWD, cli_path(fx.store, "s.pkl"), (const struct timespec[])
	                 { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } }, 0), 0);
	text = cli_read_file(key, NULL);
	ck_assert_int_eq(unlink(key), 0);
	snprintf(want, sizeof(want), "dolsot: session 's' cannot be loaded: it was signed with "
	         "another key than the session key file %s, which is newer than the session: "
	         "that file was made by this call, as none was there, at ", key);
	RUN(sc, &r, "--session", "s", "x");
	ck_code(&r, 1);
	ck_err_has(&r, want);
	ck_err_has(&r, "the session is kept as it is, and loads again under the key it was "
	           "signed with: put that key back in that file, or name it with "
	           "DOLSOT_SESSION_KEY\n");
	ck_err_lacks(&r, "--reset");
	cli_run_release(&r);
	/* Later calls still say it, the key being newer than the session. */
	RUN(sc, &r, "--session", "s", "x");
	ck_code(&r, 1);
	ck_err_has(&r, "which is newer than the session: that file was made at ");
	ck_err_lacks(&r, "--reset");
	cli_run_release(&r);
	/* The old key back, it loads. */
	ck_assert_int_eq(unlink(key), 0);
	cli_write_file(key, text);
	ck_assert_int_eq(chmod(key, 0600), 0);
	ok(sc, "s", "x", "1\n");
	free(text);
}
END_TEST

/* A helper's file cut short, through the trailer's magic or below any
 * trailer, is said to be truncated, not unsigned: a head whose units the
 * helper keeps (2), or a whole blob (1). */
START_TEST(a_truncated_helper_blob_says_so)
{
	const struct store_case *sc = &stores[3 + _i];
	const char *line = _i ? "dolsot:1:u\n" : "dolsot:2:u\n";
	char *path, *text;
	size_t n;
	struct cli_run r;
	FILE *f;

	ok(sc, "s", "x = 1", NULL);
	path = cli_path(helper_dir(), "s");
	text = cli_read_file(path, &n);
	ck_assert(n > 11 + SIGN_TRAILER && strncmp(text, line, 11) == 0);
	for (int i = 0; i < 2; i++) {
		size_t keep = i == 0 ? n - 3 : 11 + 20;

		f = fopen(path, "wb");
		ck_assert(f && fwrite(text, 1, keep, f) == keep && fclose(f) == 0);
		RUN(sc, &r, "--session", "s", "x");
		ck_refused(&r, "s", "it is truncated (its stored bytes end before the end of its "
		           "signature)");
		ck_err_lacks(&r, "written before dolsot signed sessions");
		cli_run_release(&r);
	}
	free(text);
}
END_TEST

static Suite *signed_suite(void)
{
	Suite *s = suite_create("signed");
	TCase *tc = tcase_create("signed");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, tampered_moved_rekeyed_and_unsigned_blobs_never_load, 0,
	                    NSTORES);
	tcase_add_loop_test(tc, session_key_from_the_environment, 0, NSTORES);
	tcase_add_test(tc, key_file_made_once_by_racing_first_calls);
	tcase_add_loop_test(tc, fork_copies_and_the_source_stays, 0, NSTORES);
	tcase_add_test(tc, fork_usage_errors);
	tcase_add_loop_test(tc, opposite_forks_do_not_deadlock, 0, NSTORES);
	tcase_add_loop_test(tc, a_rewritten_sandbox_mark_is_refused_outside_the_sandbox, 0, 4);
	tcase_add_loop_test(tc, an_earlier_save_put_back_is_refused, 0, 2);
	tcase_add_test(tc, a_key_file_made_anew_says_so_and_keeps_the_sessions);
	tcase_add_loop_test(tc, a_truncated_helper_blob_says_so, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(signed_suite());
}
