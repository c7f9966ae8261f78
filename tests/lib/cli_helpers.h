/*
 * cli_helpers.h - run the real dolsot binary as a subprocess and collect
 * stdout, stderr and the exit status separately (never through a shell).
 */
#ifndef DOLSOT_CLI_HELPERS_H
#define DOLSOT_CLI_HELPERS_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

struct cli_run {
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
	int status;             /* raw wait status */
	int code;               /* exit code, or 128 + signal */
	double seconds;
	long maxrss_kb;         /* peak RSS of dolsot and the children it reaped */
};

struct cli_opts {
	const char *stdin_data; /* NULL: /dev/null */
	size_t stdin_len;       /* 0 with stdin_data: strlen */
	const char *const *env; /* "NAME=VALUE" sets, "NAME" unsets; NULL-terminated */
	const char *cwd;        /* NULL: inherit */
	double timeout;         /* seconds before the test kills it; 0 = 120 */
	bool close_stdin;       /* start it with fd 0 closed */
	bool drop;              /* run as uid and gid (from root) */
	uid_t uid;
	gid_t gid;
	const char *const *wrapper; /* run the binary under this command
	                               (NULL-terminated argv, e.g. valgrind) */
	const char *prog;       /* run this program instead of dolsot */
};

/* The monotonic clock, in seconds. */
double cli_now(void);

/* Absolute path of the binary under test ($DOLSOT_BIN or ./dolsot). */
const char *cli_bin(void);

/*
 * Copy the binary under test into a new directory every user can reach
 * (the checkout may sit in a private one) and test that copy from now on.
 * Returns the directory, for cli_rmtree at the end.
 */
char *cli_bin_shared_copy(void);

/* Run argv (argv[0] is ignored and replaced by the binary, or o->prog). */
void cli_run(struct cli_run *r, const struct cli_opts *o, const char *const *argv);

/* Start argv as cli_run would, with every stream on /dev/null, and return
 * at once: the caller signals and reaps the pid. */
pid_t cli_spawn(const struct cli_opts *o, const char *const *argv);
/* cli_spawn with its stdout on a pipe whose read end goes into *out (the
 * caller reads and closes it, and reaps the pid); stdin and stderr on
 * /dev/null. */
pid_t cli_spawn_reading(const struct cli_opts *o, const char *const *argv, int *out);
void cli_run_release(struct cli_run *r);

/*
 * One CLI test's world: a private directory, a store inside it, and the
 * environment every call of the test gets (DOLSOT_CACHE_DIR first, then the
 * suite's own entries: "NAME=VALUE" sets, "NAME" unsets).
 */
#define CLI_TEST_ENV_MAX 24
struct cli_test {
	char *tmp;              /* NULL outside a test */
	char store[4200];
	char store_env[4300];   /* "DOLSOT_CACHE_DIR=<store>" */
	const char *env[CLI_TEST_ENV_MAX];
};

/* The entries of the usual CLI suite: the settings a caller's environment
 * could change unset, and no type gate (it has a suite of its own, and a
 * checker on the machine must not change what a cell does). */
extern const char *const cli_usual_env[];

/* Make t's directory and store and set its environment to the store and
 * entries (NULL-terminated).  If the test process exits early (a failed
 * check), t is ended then. */
void cli_test_begin(struct cli_test *t, const char *const *entries);

/* cli_test_begin with the usual entries, then in a warm run the server
 * started (cli_test_warm): the setup of a CLI suite that needs nothing
 * more.  A failed --server-start fails the test. */
void cli_test_begin_usual(struct cli_test *t);

/* cli_test_begin for the warm server's suites: the usual entries, the
 * server on, its idle time and the store kind the defaults. */
void cli_test_begin_server(struct cli_test *t);

/* Append one entry (kept by the caller) to t's environment. */
void cli_test_add_env(struct cli_test *t, const char *entry);

/* In the warm run of a suite (DOLSOT_TEST_WARM set), start the store's
 * server before the test; returns its --server-start run's exit code, 0
 * when not warm, with its stderr in err. */
int cli_test_warm(const struct cli_test *t, char *err, size_t errlen);

/* Stop the store's server, unmount what cli_test_tmpfs mounted and remove
 * the directory; again is harmless. */
void cli_test_end(struct cli_test *t);

/* Mount a tmpfs (mount options opts) on dir, made if missing, in a mount
 * namespace of this test process's own; false, having printed a SKIP
 * line, when it cannot.  cli_test_end unmounts it, after stopping the
 * server of a store the test put there. */
bool cli_test_tmpfs(const char *dir, const char *opts);

/* Run argv in cwd (NULL: ours) with t's environment plus extra. */
void cli_test_run(const struct cli_test *t, struct cli_run *r, const char *cwd,
                  const char *const *extra, const char *const *argv);

/* Run `dolsot --session session code` in t's directory with its environment. */
void cli_test_cell(const struct cli_test *t, struct cli_run *r, const char *session,
                   const char *code);

/* cli_test_cell in a child process, so the test can act meanwhile: when
 * the call ends, its exit code and a newline, its stdout and its stderr
 * are written to out_path.  The caller reaps the pid. */
pid_t cli_test_cell_async(const struct cli_test *t, const char *session, const char *code,
                          const char *out_path);

/* How many lines of the file at path are word, or begin with word and a
 * space (a store helper's log of its verbs). */
int cli_count_lines(const char *path, const char *word);

/* A unit file of an objects directory (a FileStore's, or a unit cache's). */
struct cli_unit_file {
	char hex[65];
	ino_t ino;
	struct timespec mtime;
	off_t size;
};

/* The unit files of the objects directory objects (HH/REST; temp files
 * and stamps are not units), at most max of them into f (more fails the
 * test); how many.  A directory that is not there holds none. */
int cli_list_units(const char *objects, struct cli_unit_file *f, int max);

/* Convenience: run the binary with argv and the test's environment, which
 * a suite keeps in its struct cli_test named fx. */
#define CLI(r, ...) cli_run((r), &(struct cli_opts){ .env = fx.env }, \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })
/* The same in directory cwd (NULL: ours), with extra entries (or NULL). */
#define RUN_IN(r, cwd, extra, ...) cli_test_run(&fx, (r), (cwd), (extra), \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })

/* A fresh private directory; removed (recursively) by cli_rmtree. */
char *cli_tempdir(void);
void cli_rmtree(const char *path);

/* Write a file (mode 0644), creating it. */
void cli_write_file(const char *path, const char *text);
char *cli_read_file(const char *path, size_t *len);

/* dir/rel in one of 8 buffers used in turn (so a few can be in use at
 * once). */
char *cli_path(const char *dir, const char *rel);

/* True when path exists (lstat). */
bool cli_exists(const char *path);

/* The unit files of a FileStore at store (objects/HH/REST, REST the
 * other 62 hex digits of a hash; not stamps): the first max of their
 * names below objects ("HH/REST") into names (NULL: none); returns how
 * many there are, 0 without an objects directory. */
#define CLI_UNIT_NAME 80
int cli_store_units(const char *store, char names[][CLI_UNIT_NAME], int max);

/* True when pid names a live (not zombie) process. */
bool cli_pid_alive(pid_t pid);

/* Whether a process named comm is the warm server's, not a call's: the
 * server, its zygotes, their spares (workers forked ahead of a call) and
 * the spares' holders (base/holder.h), the warm type checker. */
bool cli_is_server_process(const char *comm);

/*
 * Processes a call may have left behind: live (not zombie) processes that
 * are children of this test or carry env_entry ("NAME=VALUE", e.g. the
 * test's DOLSOT_CACHE_DIR) in their initial environment, leaving out the
 * warm server and its zygotes, which outlive calls by design.  Returns how
 * many, and describes them ("pid comm" list) in desc.
 */
int cli_strays(const char *env_entry, char *desc, size_t desclen);

/* Live processes named comm with env_entry in their initial environment:
 * up to max pids into pids; returns how many there are. */
int cli_find_procs(const char *comm, const char *env_entry, pid_t *pids, int max);

/* The first child of pid (from /proc), or 0. */
pid_t cli_first_child(pid_t pid);

/* cli_strays() until it is 0 or seconds pass; returns the last count. */
int cli_wait_no_strays(const char *env_entry, double seconds, char *desc, size_t desclen);

/* The children of pid whose name starts with name ("": all), from /proc,
 * at most max into out; their count. */
size_t cli_children_named(pid_t pid, const char *name, pid_t *out, size_t max);

/* cli_children_named(), once there are want of them or seconds have
 * passed. */
size_t cli_children_settled(pid_t pid, const char *name, pid_t *out, size_t max,
                            size_t want, int seconds);

/* pid's resident memory (VmRSS) in kB, or -1. */
long cli_rss_kb(pid_t pid);

/* Open fds of pid (0 for this process), or -1. */
int cli_count_fds(pid_t pid);

/*
 * True when two session files hold the same values and carried state: the
 * same magic, and the same bytes after their index (magic, u64 LE length,
 * index), which holds the cell counter and so changes with every saved
 * call, and before their signature, which covers the index.  A version 4
 * head's refs name the values by their hashes.
 */
bool cli_same_session_values(const char *a, size_t na, const char *b, size_t nb);

/*
 * Signed sessions (sign.h), for tests that put a blob of their own in a
 * FileStore: cli_put_session writes blob (len bytes) as store/ID.pkl with
 * the trailer dolsot would add, under the store's key file (made, as
 * dolsot makes it, when missing); cli_read_session is the file's blob
 * without its trailer (malloc'd, *len its size; NULL when missing).
 */
void cli_put_session(const char *store, const char *id, const void *blob, size_t len);
char *cli_read_session(const char *store, const char *id, size_t *len);

/* True when haystack contains needle. */
bool cli_has(const char *haystack, const char *needle);

/* The hint line after a TimeoutError (repl.c) of a call of SECS seconds. */
#define TIMEOUT_HINT_LINE(secs) "hint: the call ran for its whole " secs " and was killed; the " \
	"session was rolled back to before it, so every name it held is unaffected and " \
	"nothing this cell assigned was kept: do less per cell, or pass a larger --timeout\n"

/* Whether this test program is built with AddressSanitizer (as the binary
 * it tests is, in `make asan`). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* Checks of a struct cli_run, for Check tests; long outputs are cut. */
#define ck_code(r, want) ck_assert_msg((r)->code == (want), \
	"exit %d, want %d\nstdout: %.2000s\nstderr: %.2000s", (r)->code, (want), (r)->out, \
	(r)->err)
#define ck_out(r, want) ck_assert_msg(strcmp((r)->out, (want)) == 0, \
	"stdout %.2000s, want %s\nstderr: %.2000s", (r)->out, (want), (r)->err)
#define ck_err(r, want) ck_assert_msg(strcmp((r)->err, (want)) == 0, \
	"stderr:\n%.2000s\nwant:\n%s", (r)->err, (want))
#define ck_err_has(r, s) ck_assert_msg(cli_has((r)->err, (s)), \
	"stderr lacks '%s':\n%.2000s", (s), (r)->err)
#define ck_err_lacks(r, s) ck_assert_msg(!cli_has((r)->err, (s)), \
	"stderr has '%s':\n%.2000s", (s), (r)->err)
#define ck_out_has(r, s) ck_assert_msg(cli_has((r)->out, (s)), \
	"stdout lacks '%s':\n%.2000s\nstderr: %.2000s", (s), (r)->out, (r)->err)

/*
 * Suites that run every case four ways: as root and as an ordinary user
 * (CLI_TEST_USER, made with useradd when missing; dolsot is run as it with
 * cli_opts.drop), each on the cold path and the warm one.  cli_modes_add()
 * adds a TCase per way that can run here (all four as root; the user's two,
 * as ourselves, otherwise), each with the suite's cases, and runs setup
 * with cli_mode saying which way the case runs.
 */
#define CLI_TEST_USER "dolsot-test"

/* The local user name (made with useradd when missing, as root, with no
 * home): its ids; false when there is none. */
bool cli_local_user(const char *name, uid_t *uid, gid_t *gid);

struct cli_modes {
	bool as_user;                /* this case runs dolsot as the test user */
	bool warm;                   /* this case runs with the warm server up */
	uid_t uid;                   /* the test user's ids */
	gid_t gid;
	bool userns_root, userns_user;   /* whether each can make a user namespace */
};
extern struct cli_modes cli_mode;

void cli_modes_add(Suite *s, void (*add_cases)(TCase *), void (*setup)(void),
                   void (*teardown)(void), double timeout);

/* Whether we (drop: the test user of cli_mode) can make a user namespace
 * now, probed in a child. */
bool cli_userns_probe(bool drop);

/* Whether this case's caller can make a user namespace (a sandbox). */
bool cli_userns_available(void);

/* Give a path the test made (as root) to the test user, in its cases. */
void cli_own(const char *path);

/* mkdir path (0755; a failure fails the test), owned as cli_own says. */
void cli_mkdir_own(const char *path);

#define NEED_USERNS() do { \
	if (!cli_userns_available()) { \
		printf("SKIP: %s: user namespaces are not available here\n", __func__); \
		return; \
	} \
} while (0)

#endif
