/*
 * check_crash.c - SIGKILL at random points of a save never leaves a
 * session half written (issue 36).  On every store (FileStore with its
 * units as files, the warm server's memory store, a real redis-server,
 * the example cmd: helper), ROUNDS rounds each start a call moving the
 * session from state K to K+1 (x, a 1000-item list and a big bytes value
 * that all say K+1), and SIGKILL one of: the dolsot client, the worker,
 * the warm server, and on Redis redis-server itself (restarted at once on
 * its port and directory; it keeps its data in an append-only file
 * written on every command), after a random delay in [0, the call's
 * usual duration].  Then a plain call must see state K or K+1 whole, with
 * no dropped or missing value, and exit 0; on FileStore every ref of the
 * head must be a unit file.
 *
 * The memory store lives in its server: killing the server loses its
 * sessions by design, so after that kill the session may also be gone
 * (then it starts again at 0), never half there.
 *
 * Seeded random: DOLSOT_CRASH_SEED repeats a run (the seed is printed
 * first and in every failure); DOLSOT_CRASH_ROUNDS changes the rounds.
 * Each store is a TCase of its own, the cmd: helper's two of half the
 * rounds each (`make check` runs them at once).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"
#include "redis_helper.h"
#include "units.h"

#define ROUNDS 300
#define BIG_LEN 3000000
#define LST_LEN 1000
#define TIMING_CALLS 5
/* How often /proc is read for a worker to appear or end (the only sign of
 * it): often enough for a worker that lives about 40 ms, rarely enough to
 * leave the call the CPU. */
#define POLL_NS 500000L

enum victim { V_CLIENT, V_WORKER, V_SERVER, V_REDIS, NVICTIMS };
static const char *const victim_name[] = { "client", "worker", "server", "redis-server" };

struct crash_store {
	const char *name;
	const char *const *env;
	bool redis, cmd, memory;
	unsigned victims;       /* 1 << enum victim, for each it may kill */
};

#define ALL_BUT_REDIS ((1u << V_CLIENT) | (1u << V_WORKER) | (1u << V_SERVER))

static char redis_store[4600], cmd_store[9000];
static const char *const file_env[] = { "DOLSOT_STORE=file", NULL };
static const char *const memory_env[] = { "DOLSOT_STORE=memory", NULL };
/* A lock its client could not release while redis-server was down
 * expires soon (DOLSOT_REDIS_LOCK_MS), not after 30 s. */
static const char *const redis_env[] = { redis_store, "DOLSOT_REDIS_LOCK_MS=400", NULL };
static const char *const cmd_env[] = { cmd_store, NULL };
/*
 * Beside these, a TCase each: the cmd: helper's client killed
 * (a_helper_save_cut_by_a_killed_client_is_never_committed) and the memory
 * store's server killed (a_call_after_the_memory_server_was_killed_runs).
 */
static const struct crash_store stores[] = {
	{ "file", file_env, false, false, false, ALL_BUT_REDIS },
	{ "memory", memory_env, false, false, true, ALL_BUT_REDIS & ~(1u << V_SERVER) },
	{ "redis", redis_env, true, false, false, ALL_BUT_REDIS | (1u << V_REDIS) },
	{ "cmd", cmd_env, false, true, false, ALL_BUT_REDIS & ~(1u << V_CLIENT) },
};
static const struct crash_store cmd_client_killed = {
	"cmd", cmd_env, false, true, false, 1u << V_CLIENT };
static const struct crash_store memory_server_killed = {
	"memory", memory_env, false, false, true, 1u << V_SERVER };

/* redis-server keeps every command in its append-only file at once, so a
 * SIGKILL loses nothing it acknowledged. */
static const char *const redis_keeps[] = { "--appendonly", "yes", "--appendfsync", "always",
                                           NULL };

static struct cli_test fx;
static struct redis_test rd = { .pid = -1 };
static unsigned seed;
static const struct crash_store *in_use;   /* the store the case runs on */

struct crash_run {
	const struct crash_store *sc;
	unsigned rng;
	long state;             /* K: the state the session is in */
	double usual;           /* seconds an unkilled call takes */
	double worker_usual;    /* and its worker lives */
	int tried[NVICTIMS];    /* rounds that chose each victim */
	int kills[NVICTIMS];    /* kills made (the victim was there), by victim */
	int gone;               /* memory sessions lost with their server */
	int stale_locks;        /* helper locks of killed clients removed */
};

/* One of the victims the store's case may kill, at random. */
static enum victim pick_victim(struct crash_run *cr)
{
	enum victim among[NVICTIMS] = { V_CLIENT };
	int n = 0;

	for (int v = 0; v < NVICTIMS; v++)
		if (cr->sc->victims & (1u << v))
			among[n++] = (enum victim)v;
	ck_assert_int_gt(n, 0);
	return among[rand_r(&cr->rng) % (unsigned)n];
}

static void setup(void)
{
	const char *s = getenv("DOLSOT_CRASH_SEED");

	seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	printf("check_crash: DOLSOT_CRASH_SEED=%u\n", seed);
	cli_test_begin(&fx, cli_usual_env);
	cli_test_add_env(&fx, "DOLSOT_STORE");
	cli_test_add_env(&fx, "DOLSOT_SERVER=auto");
}

static void teardown(void)
{
	struct cli_run r;

	/* The server of the case's store kind: cli_test_end stops the file
	 * store's. */
	if (fx.tmp && in_use) {
		cli_test_run(&fx, &r, fx.tmp, in_use->env, (const char *const[]){
			"dolsot", "--server-stop", NULL });
		cli_run_release(&r);
	}
	cli_test_end(&fx);
	redis_test_stop(&rd);
}

static int rounds(void)
{
	const char *s = getenv("DOLSOT_CRASH_ROUNDS");

	return s ? atoi(s) : ROUNDS;
}

static void ready(const struct crash_store *sc)
{
	char cwd[4096];
	struct cli_run r;

	in_use = sc;
	if (sc->redis) {
		redis_test_start_in(&rd, fx.tmp, redis_keeps, NULL);
		snprintf(redis_store, sizeof(redis_store), "DOLSOT_STORE=%s", rd.url);
	}
	if (sc->cmd)
		snprintf(cmd_store, sizeof(cmd_store), "DOLSOT_STORE=cmd:%s/examples/"
		         "dolsot-store-dir %s/helper-store", getcwd(cwd, sizeof(cwd)), fx.tmp);
	/* Up before the first call: with the memory store, the calls right
	 * after one that started it have twice found its session "gone: the
	 * memory store was restarted" (see the report of issue 36's tests). */
	cli_test_run(&fx, &r, fx.tmp, sc->env, (const char *const[]){ "dolsot", "--server-start",
	                                                              NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
}

/* The call moving the session from state k to k + 1. */
static void step_code(long k, char *code, size_t len)
{
	snprintf(code, len, "x = %ld\nbig = bytes([%ld]) * %d\nlst = [%ld] * %d", k + 1,
	         (k % 256 + 256) % 256, BIG_LEN, k + 1, LST_LEN);
}

static pid_t start_call(const struct crash_run *cr, const char *code)
{
	const char *env[CLI_TEST_ENV_MAX + 8];
	size_t n = 0;

	for (size_t i = 0; fx.env[i]; i++)
		env[n++] = fx.env[i];
	for (size_t i = 0; cr->sc->env[i]; i++)
		env[n++] = cr->sc->env[i];
	env[n] = NULL;
	return cli_spawn(&(struct cli_opts){ .env = env, .cwd = fx.tmp },
	                 (const char *const[]){ "dolsot", "--session", "c", code, NULL });
}

static int wait_call(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* A child of pid whose comm is name, or 0. */
static pid_t child_named(pid_t pid, const char *name)
{
	char path[64], *text, *p, *comm;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	text = cli_read_file(path, NULL);
	if (!text)
		return 0;
	for (p = text; *p && !found;) {
		pid_t c = (pid_t)strtol(p, &p, 10);

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)c);
		comm = c > 0 ? cli_read_file(path, NULL) : NULL;
		if (comm && strncmp(comm, name, strlen(name)) == 0 && comm[strlen(name)] == '\n')
			found = c;
		free(comm);
		while (*p == ' ')
			p++;
	}
	free(text);
	return found;
}

/* The call's worker: the warm server's, else the client's own child.
 * The child a client forks to run a cmd: helper is also "dolsot" until
 * it execs, and the helper protocol cannot survive a helper killed in its
 * lock's unlock: on cmd: only the warm worker is the worker. */
static pid_t find_worker(const struct crash_store *sc, pid_t client)
{
	pid_t pids[4];

	if (cli_find_procs("dolsot-worker", fx.store_env, pids, 4) > 0)
		return pids[0];
	return sc->cmd ? 0 : child_named(client, "dolsot");
}

/* The victim now (0: none); V_REDIS: the test's redis-server. */
static pid_t find_victim(const struct crash_store *sc, enum victim v, pid_t client)
{
	pid_t pids[4];

	switch (v) {
	case V_CLIENT:
		return client;
	case V_WORKER:
		return find_worker(sc, client);
	case V_SERVER:
		return cli_find_procs("dolsot-server", fx.store_env, pids, 4) > 0 ? pids[0] : 0;
	case V_REDIS:
		return rd.pid;
	default:
		return 0;
	}
}

/* SIGKILL pid, the victim v; returns whether it was there to kill. */
static bool kill_victim(struct crash_run *cr, enum victim v, pid_t pid)
{
	if (pid <= 0 || kill(pid, SIGKILL) < 0)
		return false;
	if (v == V_REDIS) {
		redis_test_stop(&rd);   /* reaps it */
		redis_test_start(&rd, redis_keeps, NULL);   /* the same port and directory */
	}
	cr->kills[v]++;
	return true;
}

static void nap(void)
{
	nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
}

/* The worker lives for a small part of a call, so its kill's delay counts
 * from its start: wait for it to appear (polling /proc, the only sign of
 * it) while the client runs; 0 when the client ended first (its status
 * into *status, *done set). */
static pid_t await_worker(const struct crash_store *sc, pid_t client, int *status,
                          bool *done)
{
	pid_t pid;

	while (!(pid = find_worker(sc, client))) {
		pid_t w = waitpid(client, status, WNOHANG);

		ck_assert_int_ge(w, 0);
		if (w == client) {
			*done = true;
			return 0;
		}
		nap();
	}
	return pid;
}

/* Sleep until t (CLOCK_MONOTONIC seconds): the kill's random point. */
static void until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		continue;
}

/* The example helper's locks (the session's, a directory its holder
 * removes, and the units lock's marks) stay when a killed client held them
 * (the helper protocol has no owner to check), and every later call would
 * be busy.  Removed as its operator would. */
static void release_helper_lock(struct crash_run *cr)
{
	char path[4500];
	pid_t pids[4];
	double give_up = cli_now() + 10;

	/* The killed client's helper may still be taking the lock: wait
	 * until no helper of this test runs (a script's comm is its name,
	 * cut to 15 bytes), nor a child of the client about to exec one (its
	 * comm is still the client's). */
	while (cli_find_procs("dolsot-store-di", fx.store_env, pids, 4) > 0 ||
	       cli_find_procs("dolsot", fx.store_env, pids, 4) > 0) {
		ck_assert_msg(cli_now() < give_up, "a helper of a killed client runs on");
		until(cli_now() + 0.01);
	}
	snprintf(path, sizeof(path), "%s/helper-store/.c.lock", fx.tmp);
	if (rmdir(path) == 0)
		cr->stale_locks++;
	else
		ck_assert_msg(errno == ENOENT, "rmdir %s: %s", path, strerror(errno));
	/* Its units lock too (the example's has no expiry either): the
	 * collector's directory and every shared holder's mark. */
	snprintf(path, sizeof(path), "rm -rf '%s/helper-store/.units-lock'", fx.tmp);
	ck_assert_int_eq(system(path), 0);
}


/* FileStore: every ref of the session's head is a unit file. */
static void ck_refs_present(const struct crash_run *cr, int round)
{
	struct units_head h;
	char err[256], hex[UNITS_HEX_LEN + 1], path[4600];
	size_t n;
	uint8_t *head = (uint8_t *)cli_read_session(fx.store, "c", &n);

	ck_assert_msg(head != NULL, "seed %u, %s round %d: no session file", seed, cr->sc->name,
	              round);
	ck_assert_msg(units_parse_head(head, n, &h, err, sizeof(err)) == 0,
	              "seed %u, %s round %d: %s", seed, cr->sc->name, round, err);
	for (uint32_t i = 0; i < h.nrefs; i++) {
		struct units_entry e;

		units_ref(&h, i, &e);
		if (units_inline(e.size))
			continue;   /* kept with the head, signed with it */
		units_hex(e.hash, hex);
		snprintf(path, sizeof(path), "%s/objects/%.2s/%s", fx.store, hex, hex + 2);
		ck_assert_msg(cli_exists(path), "seed %u, %s round %d: unit %s of the head is "
		              "missing", seed, cr->sc->name, round, hex);
	}
	free(head);
}

/*
 * The plain call after a round: state K or K + 1 whole, nothing dropped;
 * on the memory store after its server was killed, possibly no session.
 * Sets cr->state to what the session holds.
 */
static void ck_consistent(struct crash_run *cr, int round, enum victim v, bool killed)
{
	static const char check[] = "print(x, lst[0], len(lst), big[0], len(big))";
	long x, l0, ln, b0, bn;
	struct cli_run r;
	const char *env[CLI_TEST_ENV_MAX + 8];
	size_t n = 0;

	for (size_t i = 0; cr->sc->env[i]; i++)
		env[n++] = cr->sc->env[i];
	env[n] = NULL;
	cli_test_run(&fx, &r, fx.tmp, env, (const char *const[]){ "dolsot", "--session", "c",
	                                                          check, NULL });
	if (r.code == 1 && cli_has(r.err, "is gone: the memory store was restarted")) {
		ck_assert_msg(cr->sc->memory && v == V_SERVER && killed,
		              "seed %u, %s round %d (state %ld, %s killed): the session is gone: %s",
		              seed, cr->sc->name, round, cr->state, victim_name[v], r.err);
		cli_run_release(&r);
		cli_test_run(&fx, &r, fx.tmp, env, (const char *const[]){ "dolsot", "--reset", "c",
		                                                          NULL });
		ck_code(&r, 0);
		cli_run_release(&r);
		cr->gone++;
		cr->state = -1;
		return;
	}
	/* A Redis server killed and restarted says so; nothing else may warn. */
	ck_assert_msg(r.code == 0 && !cli_has(r.err, "dropped") && !cli_has(r.err, "missing") &&
	              !cli_has(r.err, "not saved") && (!cli_has(r.err, "warning") ||
	                                               (cr->sc->redis && v == V_REDIS)),
	              "seed %u, %s round %d (state %ld, %s %s): exit %d\nstdout: %s\nstderr: %s",
	              seed, cr->sc->name, round, cr->state, victim_name[v],
	              killed ? "killed" : "not found", r.code, r.out, r.err);
	ck_assert_msg(sscanf(r.out, "%ld %ld %ld %ld %ld", &x, &l0, &ln, &b0, &bn) == 5 &&
	              (x == cr->state || x == cr->state + 1) && l0 == x && ln == LST_LEN &&
	              b0 == ((x - 1) % 256 + 256) % 256 && bn == BIG_LEN,
	              "seed %u, %s round %d (state %ld, %s %s): inconsistent: %s", seed,
	              cr->sc->name, round, cr->state, victim_name[v], killed ? "killed" :
	              "not found", r.out);
	cr->state = x;
	cli_run_release(&r);
	if (!cr->sc->memory && !cr->sc->redis && !cr->sc->cmd)
		ck_refs_present(cr, round);
}

/* A timing step failed (status): run it again for its stderr, and fail. */
static void ck_step(const struct crash_run *cr, const char *code, int step, int status)
{
	struct cli_run r;

	cli_test_run(&fx, &r, fx.tmp, cr->sc->env, (const char *const[]){
		"dolsot", "--session", "c", code, NULL });
	ck_abort_msg("%s: step %d: status %d; again: exit %d, stderr: %s", cr->sc->name, step,
	             status, r.code, r.err);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Seed state 0, then time TIMING_CALLS unkilled steps: their median is
 * the usual duration, and of their workers' lives the worker's. */
static void start_state(struct crash_run *cr)
{
	double took[TIMING_CALLS] = { 0 }, lived[TIMING_CALLS] = { 0 };
	char code[256];

	cr->state = -1;
	for (int i = 0; i < TIMING_CALLS + 1; i++) {
		double t0 = cli_now(), w0;
		int status = 0;
		bool done = false;
		pid_t client, worker;

		step_code(cr->state, code, sizeof(code));
		client = start_call(cr, code);
		worker = await_worker(cr->sc, client, &status, &done);
		w0 = cli_now();
		while (worker && cli_pid_alive(worker))
			nap();
		if (i > 0)   /* the first starts the server */
			lived[i - 1] = cli_now() - w0;
		if (!done)
			status = wait_call(client);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			ck_step(cr, code, i, status);
		if (i > 0)
			took[i - 1] = cli_now() - t0;
		cr->state++;
	}
	qsort(took, TIMING_CALLS, sizeof(*took), by_value);
	qsort(lived, TIMING_CALLS, sizeof(*lived), by_value);
	cr->usual = took[TIMING_CALLS / 2];
	cr->worker_usual = lived[TIMING_CALLS / 2];
}

/* A cmd: helper's rounds are slow (a shell script per store operation):
 * they run as SHARDS TCases ("cmd", "cmd-2"; "cmd-client", "cmd-client-2")
 * of a share of the rounds each, which make check runs at once; their
 * rounds add up to rounds(). */
#define SHARDS 2

static void crash_rounds(const struct crash_store *sc, unsigned index, int shards)
{
	struct crash_run cr = { .sc = sc };
	int total = (rounds() + shards - 1) / shards;
	double t0 = cli_now();
	char code[256];

	cr.rng = seed + index;
	ready(cr.sc);
	start_state(&cr);
	for (int round = 0; round < total; round++) {
		enum victim v = pick_victim(&cr);
		double delay = (v == V_WORKER ? cr.worker_usual : cr.usual) *
		               (double)rand_r(&cr.rng) / (double)RAND_MAX;
		double start;
		pid_t client, target;
		bool killed, done;
		int status;

		step_code(cr.state, code, sizeof(code));
		start = cli_now();
		client = start_call(&cr, code);
		done = false;
		cr.tried[v]++;
		target = v == V_WORKER ? await_worker(cr.sc, client, &status, &done) : 0;
		if (target)
			start = cli_now();
		until(start + delay);
		if (v != V_WORKER)
			target = find_victim(cr.sc, v, client);
		killed = kill_victim(&cr, v, target);
		if (!done)
			wait_call(client);
		if (cr.sc->cmd && v == V_CLIENT && killed)
			release_helper_lock(&cr);
		ck_consistent(&cr, round, v, killed);
		if (cr.state < 0) {   /* the memory store's session went with its server */
			step_code(-1, code, sizeof(code));
			ck_assert_int_eq(wait_call(start_call(&cr, code)), 0);
			cr.state = 0;
		}
	}
	printf("%s: %d rounds in %.1f s (a call %.3f s, its worker %.3f s); killed (of rounds that chose it): "
	       "client %d/%d, worker %d/%d, server %d/%d, redis-server %d/%d; memory sessions "
	       "gone with the server %d; stale helper locks removed %d\n", cr.sc->name, total, cli_now() - t0, cr.usual, cr.worker_usual,
	       cr.kills[V_CLIENT], cr.tried[V_CLIENT], cr.kills[V_WORKER], cr.tried[V_WORKER],
	       cr.kills[V_SERVER], cr.tried[V_SERVER], cr.kills[V_REDIS], cr.tried[V_REDIS],
	       cr.gone, cr.stale_locks);
	redis_test_stop(&rd);
	ck_no_strays();
}

/* _i: the store's index times SHARDS, plus the shard. */
START_TEST(sigkill_anywhere_in_a_save_leaves_a_whole_state)
{
	const struct crash_store *sc = &stores[_i / SHARDS];

	crash_rounds(sc, (unsigned)_i, sc->cmd ? SHARDS : 1);
}
END_TEST

/*
 * A cmd: helper's client killed while it streams a save: the cut blob
 * must never be committed (examples/dolsot-store-dir once saved with `cat
 * > tmp && mv tmp ID`, so a killed client's closed pipe looked like a
 * whole blob, and the next call refused the session: neither state K nor
 * K + 1 was left).
 */
START_TEST(a_helper_save_cut_by_a_killed_client_is_never_committed)
{
	crash_rounds(&cmd_client_killed, 99 + (unsigned)_i, SHARDS);
}
END_TEST

/*
 * The memory store's server killed during a call: the next call
 * (DOLSOT_SERVER=auto) starts a new server and says the session is gone
 * (which the rounds accept after that kill).  It once failed with "cannot
 * lock session 'c': the warm server failed": a SIGKILLed server's
 * listening socket takes connections until the kernel has closed its
 * last fd, so the client saw one listen, and its lock's connection was
 * reset unanswered as the socket closed; such a lock now starts a server
 * anew and asks it (repl.c's lock_one).
 */
START_TEST(a_call_after_the_memory_server_was_killed_runs)
{
	crash_rounds(&memory_server_killed, 98, 1);
}
END_TEST

/* A shard's TCase name: the store's, then "-2" and on; kept for good
 * (check names TCases by pointer). */
static const char *shard_name(const char *name, int k)
{
	char *full;

	if (k == 0)
		return name;
	if (asprintf(&full, "%s-%d", name, k + 1) < 0)
		abort();
	return full;
}

static Suite *crash_suite(void)
{
	Suite *s = suite_create("crash");

	for (int i = 0; i < (int)(sizeof(stores) / sizeof(*stores)); i++)
		for (int k = 0; k < (stores[i].cmd ? SHARDS : 1); k++) {
			TCase *tc = tcase_create(shard_name(stores[i].name, k));

			tcase_add_checked_fixture(tc, setup, teardown);
			tcase_set_timeout(tc, 900);
			tcase_add_loop_test(tc, sigkill_anywhere_in_a_save_leaves_a_whole_state,
			                    i * SHARDS + k, i * SHARDS + k + 1);
			suite_add_tcase(s, tc);
		}
	for (int k = 0; k < SHARDS; k++) {
		TCase *cut = tcase_create(shard_name("cmd-client", k));

		tcase_add_checked_fixture(cut, setup, teardown);
		tcase_set_timeout(cut, 900);
		tcase_add_loop_test(cut, a_helper_save_cut_by_a_killed_client_is_never_committed,
		                    k, k + 1);
		suite_add_tcase(s, cut);
	}
	TCase *killed = tcase_create("memory-server");

	tcase_add_checked_fixture(killed, setup, teardown);
	tcase_set_timeout(killed, 900);
	tcase_add_test(killed, a_call_after_the_memory_server_was_killed_runs);
	suite_add_tcase(s, killed);
	return s;
}

int main(void)
{
	return ck_run(crash_suite());
}
