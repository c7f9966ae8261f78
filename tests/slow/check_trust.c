/*
 * check_trust.c - what crosses the sandbox's boundary through dolsot itself:
 * sessions a sandboxed call wrote, the store and its server's socket, the
 * warm server's memory, mounts over code, and the disk a session takes.
 * Each case runs the real binary as root and as an unprivileged user the
 * suite creates (dolsot-test), on the cold path and on the warm one.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_helpers.h"
#include "sandbox_ids.h"

static char *tmp;               /* per-test directory */
static char work[4400];         /* the calls' cwd: tmp/work */
static char store_env[4300];

static char *path_in(const char *rel)
{
	return cli_path(tmp, rel);
}

static void make_dir(const char *rel)
{
	cli_mkdir_own(path_in(rel));
}

/* Run dolsot as the mode's user, in work, with extra env entries, under
 * wrapper (NULL: none). */
static void run_full(struct cli_run *r, const char *const *extra_env,
                     const char *const *wrapper, const char *const *argv)
{
	const char *env[40];
	size_t n = 0;
	static const char *const unset[] = {
		"DOLSOT_TIMEOUT", "DOLSOT_MAX_OUTPUT", "DOLSOT_SESSION_TTL_DAYS", "PYTHONPATH",
		"VIRTUAL_ENV", "DOLSOT_SANDBOX", "DOLSOT_MEMORY", "DOLSOT_MAX_PROCS",
		"DOLSOT_MAX_FILE_SIZE", "DOLSOT_CPU_SECONDS", "DOLSOT_RECURSION_LIMIT",
		"DOLSOT_STORE", "DOLSOT_SERVER_IDLE", "DOLSOT_MAX_SESSION_SIZE",
		"DOLSOT_TRUST_SANDBOXED", "DOLSOT_ALLOW_RW_CODE_MOUNTS", "DOLSOT_TYPECHECK=0",
		NULL,
	};

	env[n++] = store_env;
	env[n++] = cli_mode.warm ? "DOLSOT_SERVER=auto" : "DOLSOT_SERVER=off";
	for (size_t i = 0; unset[i]; i++)
		env[n++] = unset[i];
	for (size_t i = 0; extra_env && extra_env[i]; i++)
		env[n++] = extra_env[i];
	env[n] = NULL;
	cli_run(r, &(struct cli_opts){ .env = env, .cwd = work, .timeout = 120,
	                               .drop = cli_mode.as_user && geteuid() == 0,
	                               .uid = cli_mode.uid, .gid = cli_mode.gid,
	                               .wrapper = wrapper }, argv);
}

#define RUN(r, ...) run_full((r), NULL, NULL, (const char *const[]){ "dolsot", __VA_ARGS__, NULL })
#define RUN_ENV(r, env, ...) run_full((r), (env), NULL, \
	(const char *const[]){ "dolsot", __VA_ARGS__, NULL })

static void server_cmd(const char *const *argv)
{
	struct cli_run r;

	run_full(&r, NULL, NULL, argv);
	if (strcmp(argv[1], "--server-start") == 0)
		ck_assert_msg(r.code == 0, "--server-start: exit %d: %s", r.code, r.err);
	cli_run_release(&r);
}

static void cleanup(void)
{
	if (!tmp)
		return;
	for (int i = 0; i < 5; i++) {
		struct stat st;

		server_cmd((const char *const[]){ "dolsot", "--server-stop", NULL });
		cli_rmtree(tmp);
		if (lstat(tmp, &st) < 0)
			break;
		usleep(200 * 1000);
	}
	free(tmp);
	tmp = NULL;
}

/* Each case, in the way cli_mode says (cli_modes_add). */
static void setup(void)
{
	tmp = cli_tempdir();
	cli_own(tmp);
	snprintf(work, sizeof(work), "%s/work", tmp);
	make_dir("work");
	snprintf(store_env, sizeof(store_env), "DOLSOT_CACHE_DIR=%s/store", tmp);
	atexit(cleanup);
	if (cli_mode.warm) {
		server_cmd((const char *const[]){ "dolsot", "--server-start", NULL });
		server_cmd((const char *const[]){ "dolsot", "--server-start", "--sandbox", NULL });
	}
}

static void teardown(void) { cleanup(); }

#define NEED_WARM() do { \
	if (!cli_mode.warm) \
		return;   /* a server case: the warm fixtures run it */ \
} while (0)

/* How many calls the warm server ran warm. */
static long warm_calls(void)
{
	struct cli_run r;
	long n = -1;
	const char *p;

	RUN(&r, "--server-status");
	p = strstr(r.out, "calls ");
	if (p)
		sscanf(p, "calls %ld warm", &n);
	cli_run_release(&r);
	return n;
}

/* ---- sessions a sandboxed call wrote ---- */

/* A sandboxed cell leaves an object whose unpickling creates tmp/pwned,
 * and an environment that would run code in the next process started. */
static void poison(const char *const *env)
{
	char code[8192];
	struct cli_run r;

	snprintf(code, sizeof(code),
	         "import os\n"
	         "class P:\n"
	         "    def __reduce__(self):\n"
	         "        return (os.system, ('touch %s',))\n"
	         "p = P()\n"
	         "os.environ['LD_PRELOAD'] = '/nonexistent/trust-preload.so'\n"
	         "os.environ['BASH_FUNC_echo%%%%'] = '() { touch %s; }'\n"
	         "os.chdir('/tmp')\n",
	         path_in("pwned"), path_in("bashfunc"));
	RUN_ENV(&r, env, "--session", "s", "--sandbox", code);
	ck_code(&r, 0);
	ck_err_has(&r, "session now holds: P, os, p");
	cli_run_release(&r);
}

START_TEST(sandboxed_session_is_refused_without_the_sandbox)
{
	char code[4400];
	struct cli_run r;

	NEED_USERNS();
	poison(NULL);
	snprintf(code, sizeof(code), "open('%s', 'w').write('ran')", path_in("ran"));
	RUN(&r, "--session", "s", code);
	ck_code(&r, 1);
	ck_assert_str_eq(r.out, "");
	ck_err_has(&r, "dolsot: session 's' was last written by a sandboxed call");
	ck_err_has(&r, "run it with --sandbox");
	ck_err_has(&r, "'dolsot --reset s'");
	ck_err_has(&r, "DOLSOT_TRUST_SANDBOXED=1");
	cli_run_release(&r);
	/* Nothing of it ran: not the pickle, not the carried environment, not
	 * the cell. */
	ck_assert(!cli_exists(path_in("pwned")));
	ck_assert(!cli_exists(path_in("bashfunc")));
	ck_assert(!cli_exists(path_in("ran")));
	/* With the sandbox it loads, carried environment and all. */
	RUN(&r, "--session", "s", "--sandbox",
	    "import os; (os.environ.get('LD_PRELOAD'), 'BASH_FUNC_echo%%' in os.environ)");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "('/nonexistent/trust-preload.so', True)\n");
	cli_run_release(&r);
	ck_assert(!cli_exists(path_in("pwned")));
}
END_TEST

START_TEST(the_opt_in_loads_it_and_reset_forgets_it)
{
	static const char *const trust[] = { "DOLSOT_TRUST_SANDBOXED=1", NULL };
	struct cli_run r;

	NEED_USERNS();
	poison(NULL);
	RUN_ENV(&r, trust, "--session", "s", "import os; os.environ.get('LD_PRELOAD')");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "'/nonexistent/trust-preload.so'\n");
	cli_run_release(&r);
	ck_assert(cli_exists(path_in("pwned")));   /* the opt-in really loaded it */
	/* Saved by an unsandboxed call now: no longer refused. */
	RUN(&r, "--session", "s", "1 + 1");
	ck_code(&r, 0);
	cli_run_release(&r);

	poison(NULL);
	RUN(&r, "--reset", "s");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN(&r, "--session", "s", "'p' in dir()");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "False\n");
	cli_run_release(&r);
	ck_assert(!cli_exists(path_in("store/s.sandboxed")));
	poison(NULL);
	RUN(&r, "--reset", "all");
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert(!cli_exists(path_in("store/s.sandboxed")));
	RUN(&r, "--session", "s", "2");
	ck_code(&r, 0);
	cli_run_release(&r);
}
END_TEST

/* Unsandboxed to sandboxed is fine, and then back is refused. */
START_TEST(unsandboxed_sessions_load_in_the_sandbox)
{
	struct cli_run r;

	NEED_USERNS();
	RUN(&r, "--session", "s", "x = 41");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN(&r, "--session", "s", "--sandbox", "x += 1; x");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "42\n");
	cli_run_release(&r);
	RUN(&r, "--session", "s", "x");
	ck_code(&r, 1);
	ck_err_has(&r, "was last written by a sandboxed call");
	cli_run_release(&r);
}
END_TEST

START_TEST(the_memory_store_refuses_them_too)
{
	static const char *const mem[] = { "DOLSOT_STORE=memory", NULL };
	struct cli_run r;

	NEED_USERNS();
	NEED_WARM();
	poison(mem);
	RUN_ENV(&r, mem, "--session", "s", "1");
	ck_code(&r, 1);
	ck_err_has(&r, "was last written by a sandboxed call");
	cli_run_release(&r);
	ck_assert(!cli_exists(path_in("pwned")));
	RUN_ENV(&r, mem, "--session", "s", "--sandbox", "'p' in dir()");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "True\n");
	cli_run_release(&r);
}
END_TEST

/* ---- the store and its server ---- */

static void usage(const char *spec, const char *why)
{
	struct cli_run r;

	RUN(&r, "--session", "s", "--mount", spec, "1");
	ck_code(&r, 2);
	ck_err_has(&r, why);
	cli_run_release(&r);
}

START_TEST(mounts_of_the_store_are_refused)
{
	char spec[5000];

	NEED_USERNS();
	if (!cli_exists(path_in("store"))) {   /* cold: not made yet */
		ck_assert_int_eq(mkdir(path_in("store"), 0700), 0);
		cli_own(path_in("store"));
	}
	snprintf(spec, sizeof(spec), "%s:/x:ro", path_in("store"));
	usage(spec, "overlaps the session store");
	snprintf(spec, sizeof(spec), "%s:/x:overlay", tmp);
	usage(spec, "overlaps the session store");
	usage("/:/host:ro", "overlaps the session store");
	ck_assert_int_eq(symlink(path_in("store"), path_in("link")), 0);
	snprintf(spec, sizeof(spec), "%s:/x", path_in("link"));
	usage(spec, "overlaps the session store");
	ck_assert(!cli_exists(path_in("store/s.pkl")));
}
END_TEST

/* The session key: the default file lies in the store (refused with it);
 * a key file named by DOLSOT_SESSION_KEY=/path, wherever it is, is refused
 * in every mode too, and so is any directory that holds it.  The key never
 * reaches the sandbox, so no cell can sign a session others would load. */
START_TEST(mounts_of_the_session_key_are_refused)
{
	char spec[5000], keyenv[4500];
	const char *const with_key[] = { keyenv, NULL };
	static const char *const modes[] = { "ro", "overlay", "rw" };
	struct cli_run r;

	NEED_USERNS();
	RUN(&r, "--session", "s", "1");   /* makes the store's .session.key */
	ck_code(&r, 0);
	cli_run_release(&r);
	ck_assert(cli_exists(path_in("store/.session.key")));
	snprintf(spec, sizeof(spec), "%s:/k:ro", path_in("store/.session.key"));
	usage(spec, "overlaps the session store");
	make_dir("keys");
	cli_write_file(path_in("keys/k"), "key-k: at least thirty-two bytes of it\n");
	ck_assert_int_eq(chmod(path_in("keys/k"), 0600), 0);
	cli_own(path_in("keys/k"));
	snprintf(keyenv, sizeof(keyenv), "DOLSOT_SESSION_KEY=%s", path_in("keys/k"));
	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++) {
		const char *what[] = { "keys/k", "keys" };

		for (size_t w = 0; w < 2; w++) {
			if (w == 0 && strcmp(modes[i], "overlay") == 0)
				continue;   /* an overlay takes directories only */
			snprintf(spec, sizeof(spec), "%s:/k:%s", path_in(what[w]), modes[i]);
			RUN_ENV(&r, with_key, "--session", "s", "--sandbox", "--mount", spec, "1");
			ck_code(&r, 2);
			ck_err_has(&r, "overlaps the session key (");
			ck_err_has(&r, "mount another path");
			cli_run_release(&r);
		}
	}
	/* Another name for the directory is the same directory. */
	ck_assert_int_eq(symlink(path_in("keys"), path_in("keylink")), 0);
	snprintf(spec, sizeof(spec), "%s:/k:ro", path_in("keylink"));
	RUN_ENV(&r, with_key, "--session", "s", "--sandbox", "--mount", spec, "1");
	ck_code(&r, 2);
	ck_err_has(&r, "overlaps the session key");
	cli_run_release(&r);
	/* The key itself works, and a mount elsewhere still does. */
	make_dir("data");
	snprintf(spec, sizeof(spec), "%s:/d:ro", path_in("data"));
	RUN_ENV(&r, with_key, "--session", "k", "--sandbox", "--mount", spec, "x = 1");
	ck_code(&r, 0);
	cli_run_release(&r);
}
END_TEST

/* A client in other namespaces (as a sandboxed cell reaching the socket
 * would be) is not served: its call runs on its own cold path. */
static void from_namespace(const char *const *wrapper, const char *ns)
{
	char code[256], want[128], self[128];
	ssize_t n;
	long before = warm_calls();
	struct cli_run r;

	snprintf(want, sizeof(want), "/proc/self/ns/%s", ns);
	n = readlink(want, self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(code, sizeof(code), "import os; os.readlink('/proc/self/ns/%s')", ns);
	run_full(&r, NULL, wrapper, (const char *const[]){ "dolsot", "--session", "n",
	                                                   code, NULL });
	ck_code(&r, 0);
	ck_assert_msg(!cli_has(r.out, self), "ran in the server's %s namespace: %s", ns, r.out);
	cli_run_release(&r);
	ck_assert_int_eq(warm_calls(), before);
}

START_TEST(clients_in_other_namespaces_are_not_served)
{
	NEED_WARM();
	NEED_USERNS();
	/* Our own calls are served warm. */
	{
		long before = warm_calls();
		struct cli_run r;

		RUN(&r, "--session", "n", "1");
		ck_code(&r, 0);
		cli_run_release(&r);
		ck_assert_int_eq(warm_calls(), before + 1);
	}
	from_namespace((const char *const[]){ "unshare", "-U", "-r", NULL }, "user");
	if (cli_mode.as_user) {
		from_namespace((const char *const[]){ "unshare", "-U", "-r", "-m", NULL }, "mnt");
		from_namespace((const char *const[]){ "unshare", "-U", "-r", "-p", "-f", NULL },
		               "pid");
	} else {
		from_namespace((const char *const[]){ "unshare", "-m", NULL }, "mnt");
		from_namespace((const char *const[]){ "unshare", "-p", "-f", NULL }, "pid");
	}
}
END_TEST

/* ---- the server's memory ---- */

START_TEST(a_sandboxed_zygote_holds_no_earlier_secret)
{
	static const char *const mem[] = { "DOLSOT_STORE=memory", NULL };
	char secret[128], hex[41], env_secret[200], code[4096], want[80];
	const char *const with_secret[] = { env_secret, "DOLSOT_STORE=memory", NULL };
	unsigned char raw[20];
	struct cli_run r;
	FILE *f;
	long before;

	NEED_WARM();
	NEED_USERNS();
	f = fopen("/dev/urandom", "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fread(raw, 1, sizeof(raw), f), sizeof(raw));
	fclose(f);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(secret, sizeof(secret), "S3CR3T-%s", hex);
	snprintf(env_secret, sizeof(env_secret), "TRUST_SECRET=%s", secret);
	/* An unsandboxed call whose environment and session hold it: the server
	 * now has both (its zygote key, its memory store). */
	server_cmd((const char *const[]){ "dolsot", "--server-start", NULL });
	RUN_ENV(&r, with_secret, "--session", "u", "import os; k = os.environ['TRUST_SECRET']");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* A sandboxed zygote made after that, and a warm call from it that
	 * scans its own memory for the secret (by its hash: the cell's text
	 * must not hold it). */
	run_full(&r, mem, NULL, (const char *const[]){ "dolsot", "--server-start", "--sandbox",
	                                               "--env", "TRUST_FRESH=1", NULL });
	ck_code(&r, 0);
	cli_run_release(&r);
	{
		char cmd[300];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "printf %%s '%s' | sha256sum", secret);
		p = popen(cmd, "r");
		ck_assert_ptr_nonnull(p);
		ck_assert_ptr_nonnull(fgets(want, 65, p));
		pclose(p);
	}
	/* Read in chunks (the 46 bytes kept from the last one let a match span
	 * two).  AddressSanitizer's shadow is terabytes of readable mappings
	 * holding no data of the program: under it, mappings over 4 GiB are
	 * skipped. */
	snprintf(code, sizeof(code),
	         "import re, hashlib\n"
	         "found, chunk, most = 0, 64 << 20, %s\n"
	         "pat = re.compile(rb'S3CR3T-[0-9a-f]{40}')\n"
	         "with open('/proc/self/maps') as f, open('/proc/self/mem', 'rb', 0) as m:\n"
	         "    for line in f:\n"
	         "        span, perms = line.split()[:2]\n"
	         "        if perms[0] != 'r': continue\n"
	         "        lo, hi = (int(x, 16) for x in span.split('-'))\n"
	         "        if hi - lo > most: continue\n"
	         "        tail = b''\n"
	         "        for at in range(lo, hi, chunk):\n"
	         "            try:\n"
	         "                m.seek(at); data = tail + m.read(min(chunk, hi - at))\n"
	         "            except (OSError, ValueError, OverflowError):\n"
	         "                break\n"
	         "            for hit in pat.finditer(data):\n"
	         "                found += hashlib.sha256(hit.group()).hexdigest() == '%s'\n"
	         "            tail = data[-46:]\n"
	         "        data = tail = b''\n"
	         "print('found', found)\n", SANITIZED ? "4 << 30" : "1 << 62", want);
	before = warm_calls();
	/* Reading every mapping is slow under AddressSanitizer. */
	run_full(&r, mem, NULL, (const char *const[]){ "dolsot", "--session", "s", "--sandbox",
	                                               "--env", "TRUST_FRESH=1", "--timeout",
	                                               SANITIZED ? "110" : "20", code, NULL });
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "found 0\n");
	cli_run_release(&r);
	ck_assert_int_eq(warm_calls(), before + 1);   /* it ran in the zygote */
}
END_TEST

/* ---- mounts over code ---- */

START_TEST(rw_mounts_over_code_are_refused)
{
	static const char *const optin[] = { "DOLSOT_ALLOW_RW_CODE_MOUNTS=1", NULL };
	char spec[5000], pp[4500];
	const char *const with_pp[] = { pp, NULL };
	struct cli_run r;

	NEED_USERNS();
	make_dir("work/tbx");
	cli_write_file(path_in("work/tbx/__init__.py"), "X = 1\n");
	cli_own(path_in("work/tbx/__init__.py"));
	make_dir("lib");
	make_dir("data");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s", path_in("lib"));

	snprintf(spec, sizeof(spec), "%s:/w:rw", work);
	usage(spec, "overlaps the current directory");
	usage(spec, "use :ro or :overlay, or set DOLSOT_ALLOW_RW_CODE_MOUNTS=1");
	snprintf(spec, sizeof(spec), "%s:/t:rw", path_in("work/tbx"));
	usage(spec, "overlaps the current directory");
	snprintf(spec, sizeof(spec), "%s:/l:rw", path_in("lib"));
	RUN_ENV(&r, with_pp, "--session", "s", "--mount", spec, "1");
	ck_code(&r, 2);
	ck_err_has(&r, "overlaps a PYTHONPATH entry");
	cli_run_release(&r);
	snprintf(spec, sizeof(spec), "/usr/lib/python3/dist-packages:/d:rw");
	usage(spec, "overlaps site-packages");

	/* Overlay and ro over the same paths work, and so does rw elsewhere. */
	snprintf(spec, sizeof(spec), "%s:/w:overlay", work);
	RUN(&r, "--session", "s", "--toolbox", "tbx:t", "--mount", spec,
	    "open('/w/tbx/__init__.py', 'w').write('X = 2'); t.X");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "1\n");
	cli_run_release(&r);
	snprintf(spec, sizeof(spec), "%s:/l:ro", path_in("lib"));
	RUN_ENV(&r, with_pp, "--session", "s", "--mount", spec, "1");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* A root caller's sandbox writes as SANDBOX_ROOT_ID on the host. */
	if (!cli_mode.as_user)
		ck_assert(chown(path_in("data"), SANDBOX_ROOT_ID, SANDBOX_ROOT_ID) == 0);
	snprintf(spec, sizeof(spec), "%s:/d:rw", path_in("data"));
	RUN(&r, "--session", "s", "--mount", spec, "open('/d/f', 'w').write('x')");
	ck_code(&r, 0);
	cli_run_release(&r);
	/* The documented opt-in. */
	snprintf(spec, sizeof(spec), "%s:/w:rw", work);
	RUN_ENV(&r, optin, "--session", "s", "--mount", spec, "1");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN(&r, "--session", "h", "--toolbox", "tbx:t", "t.X");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "1\n");   /* the overlay left the host's toolbox alone */
	cli_run_release(&r);
}
END_TEST

/* ---- disk ---- */

/* Largest regular file under dir (recursively), in bytes. */
static off_t largest_file(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	off_t most = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char p[4400];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			off_t sub = largest_file(p);

			most = sub > most ? sub : most;
		} else if (S_ISREG(st.st_mode) && st.st_size > most) {
			most = st.st_size;
		}
	}
	closedir(d);
	return most;
}

static void session_over_the_bound(bool sandbox)
{
	static const char *const small[] = { "DOLSOT_MAX_SESSION_SIZE=1M", NULL };
	struct cli_run r;

	if (sandbox)
		RUN_ENV(&r, small, "--session", "s", "--sandbox", "x = 1");
	else
		RUN_ENV(&r, small, "--session", "s", "x = 1");
	ck_code(&r, 0);
	cli_run_release(&r);
	if (sandbox)
		RUN_ENV(&r, small, "--session", "s", "--sandbox", "x = b'a' * (3 << 20)");
	else
		RUN_ENV(&r, small, "--session", "s", "x = b'a' * (3 << 20)");
	ck_code(&r, 1);
	ck_err_has(&r, "warning: session 's' not saved: cannot save session 's': it is ");
	ck_err_has(&r, "over the maximum session size of 1048576 bytes "
	           "(DOLSOT_MAX_SESSION_SIZE); the previous session is kept");
	cli_run_release(&r);
	if (sandbox)
		RUN(&r, "--session", "s", "--sandbox", "x");
	else
		RUN(&r, "--session", "s", "x");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "1\n");
	cli_run_release(&r);
	ck_assert_int_lt(largest_file(path_in("store")), 1 << 20);
}

START_TEST(sessions_over_the_maximum_size_are_not_saved)
{
	session_over_the_bound(false);
	if (cli_userns_available())
		session_over_the_bound(true);
}
END_TEST

/* A sandboxed cell writing 2 GiB straight into the fd its session is
 * saved through is stopped at the bound; nothing big reaches the store. */
START_TEST(a_sandboxed_cell_cannot_fill_the_disk_through_its_save)
{
	static const char *const bound[] = { "DOLSOT_MAX_SESSION_SIZE=64M", NULL };
	struct cli_run r;

	NEED_USERNS();
	RUN_ENV(&r, bound, "--session", "s", "--sandbox", "x = 1");
	ck_code(&r, 0);
	cli_run_release(&r);
	RUN_ENV(&r, bound, "--session", "s", "--sandbox",
	        "import os\n"
	        "fds = [int(f) for f in os.listdir('/proc/self/fd')\n"
	        "       if os.path.exists('/proc/self/fd/' + f)\n"
	        "       and ('dolsot-save' in os.readlink('/proc/self/fd/' + f)\n"
	        "            or os.readlink('/proc/self/fd/' + f).endswith('.tmp'))]\n"
	        "chunk = b'z' * (16 << 20)\n"
	        "done, why = 0, None\n"
	        "for fd in fds:\n"
	        "    try:\n"
	        "        while done < (2 << 30):\n"
	        "            done += os.write(fd, chunk)\n"
	        "    except OSError as e:\n"
	        "        why = e.errno\n"
	        "del chunk\n"
	        "print(len(fds), done <= (64 << 20), why)\n"
	        "x = 2");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "1 True 1\n");   /* EPERM at the sealed bound */
	cli_run_release(&r);
	RUN(&r, "--session", "s", "--sandbox", "x");
	ck_code(&r, 0);
	ck_assert_str_eq(r.out, "2\n");
	cli_run_release(&r);
	ck_assert_int_lt(largest_file(path_in("store")), 1 << 20);
}
END_TEST

START_TEST(a_bad_maximum_is_a_usage_error)
{
	static const char *const bad[] = { "DOLSOT_MAX_SESSION_SIZE=lots", NULL };
	static const char *const bad2[] = { "DOLSOT_TRUST_SANDBOXED=yes", NULL };
	static const char *const bad3[] = { "DOLSOT_ALLOW_RW_CODE_MOUNTS=2", NULL };
	struct cli_run r;

	RUN_ENV(&r, bad, "--session", "s", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_MAX_SESSION_SIZE='lots' is not valid");
	cli_run_release(&r);
	RUN_ENV(&r, bad2, "--session", "s", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_TRUST_SANDBOXED='yes' is not valid");
	cli_run_release(&r);
	RUN_ENV(&r, bad3, "--session", "s", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "DOLSOT_ALLOW_RW_CODE_MOUNTS='2' is not valid");
	cli_run_release(&r);
}
END_TEST

/* ---- the suite ---- */

static void add_cases(TCase *tc)
{
	tcase_add_test(tc, sandboxed_session_is_refused_without_the_sandbox);
	tcase_add_test(tc, the_opt_in_loads_it_and_reset_forgets_it);
	tcase_add_test(tc, unsandboxed_sessions_load_in_the_sandbox);
	tcase_add_test(tc, the_memory_store_refuses_them_too);
	tcase_add_test(tc, mounts_of_the_store_are_refused);
	tcase_add_test(tc, mounts_of_the_session_key_are_refused);
	tcase_add_test(tc, clients_in_other_namespaces_are_not_served);
	tcase_add_test(tc, a_sandboxed_zygote_holds_no_earlier_secret);
	tcase_add_test(tc, rw_mounts_over_code_are_refused);
	tcase_add_test(tc, sessions_over_the_maximum_size_are_not_saved);
	tcase_add_test(tc, a_sandboxed_cell_cannot_fill_the_disk_through_its_save);
	tcase_add_test(tc, a_bad_maximum_is_a_usage_error);
}

int main(void)
{
	Suite *s = suite_create("trust");
	int failed;
	char *bin_dir = cli_bin_shared_copy();

	cli_modes_add(s, add_cases, setup, teardown, 240);
	failed = ck_run(s);
	cli_rmtree(bin_dir);
	free(bin_dir);
	return failed ? 1 : 0;
}
