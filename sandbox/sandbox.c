/*
 * sandbox.c - enter the namespaces, fork the sandbox's PID 1, and lock it
 * down (see sandbox.h).
 *
 * Why two processes: unshare(CLONE_NEWPID) does not move the caller, only
 * its next child, which becomes PID 1 of the new namespace.  The caller
 * stays behind as a plain waiter in the caller's process group, so
 * whoever supervises it (the dolsot parent, its deadline, its group kill)
 * keeps working unchanged, and when PID 1 dies the kernel kills everything
 * else in the namespace.
 *
 * The user namespace maps one uid and one gid (see sandbox_ids.h: the
 * caller's own, or for root an unused id); every capability the new
 * namespace grants is used for building the sandbox and dropped before the
 * filter is loaded.  The file system's sources are taken before the fork,
 * so a root caller's helper is gone before the sandbox has a process.
 */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_child.h"
#include "sandbox_filter.h"
#include "sandbox_fs.h"
#include "sandbox_ids.h"
#include "sandbox_init.h"

/* The cgroup namespace shows the call's cgroup (or the caller's) as "/". */
#define NS_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | \
                  CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

static int fail(char *err, size_t errlen, const char *what)
{
	int saved = errno;

	snprintf(err, errlen, "cannot create the sandbox: %s: %s", what, strerror(saved));
	errno = saved;
	return -1;
}

/* The outer process: wait for PID 1 and end the way it ended. */
static void supervise(pid_t child) __attribute__((noreturn));

static void supervise(pid_t child)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t one;
	int st, sig;

	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			_exit(127);
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	sig = WTERMSIG(st);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* The outer process of a sandbox that outlives its first call holds none
 * of that call's fds (its pipes would never see their end): 0-2 on
 * /dev/null, every other fd closed. */
static void let_go_of_fds(void)
{
	proc_child_close_fds(NULL, 0);
	if (proc_child_null_stdio() < 0)
		_exit(127);   /* it would hold the call's pipes: end the sandbox */
}

static int loopback_up(char *err, size_t errlen)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return fail(err, errlen, "socket");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		fail(err, errlen, "cannot read the flags of lo");
		close(s);
		return -1;
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		fail(err, errlen, "cannot bring up lo");
		close(s);
		return -1;
	}
	close(s);
	return 0;
}

/*
 * The arguments and environment this process was started with are still in
 * its memory, and /proc/self/cmdline and environ show them, even once
 * environ points elsewhere: zero both.  (On the cold path the arguments are
 * the dolsot command's, the cell's code among them; a fork of a warm server
 * holds that server's environment, from another call.)  The arguments then
 * read "dolsot".
 */
static int scrub_initial_args_env(char *err, size_t errlen)
{
	char buf[2048], *p;
	unsigned long arg_start = 0, arg_end = 0, start = 0, end = 0;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return fail(err, errlen, "cannot read /proc/self/stat");
	buf[n] = '\0';
	/* Fields 48 to 51, counted from the state (field 3) after the name. */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu %lu %lu", &arg_start, &arg_end, &start, &end) != 4 ||
	    end < start || arg_end < arg_start) {
		errno = EINVAL;
		return fail(err, errlen, "cannot find the arguments in /proc/self/stat");
	}
	memset((void *)start, 0, end - start);
	memset((void *)arg_start, 0, arg_end - arg_start);
	if (arg_end - arg_start > 6)
		memcpy((void *)arg_start, "dolsot", 6);
	return 0;
}

static int set_env(char *const *env, char *err, size_t errlen)
{
	if (clearenv() != 0)
		return fail(err, errlen, "clearenv");
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		char *name = eq ? strndup(*env, (size_t)(eq - *env)) : NULL;
		int rc = name ? setenv(name, eq + 1, 1) : -1;

		free(name);
		if (rc != 0)
			return fail(err, errlen, "setenv");
	}
	return scrub_initial_args_env(err, errlen);
}

static bool kept(const struct sandbox_cfg *cfg, int fd)
{
	for (size_t i = 0; i < cfg->n_keep_fds; i++)
		if (cfg->keep_fds[i] == fd)
			return true;
	return false;
}

/*
 * An fd inherited from the caller could reach outside (a directory fd for
 * openat, a file reopened through /proc/self/fd): point every one we were
 * not told to keep at /dev/null.  Not closed, so a number the caller's code
 * still holds can never be reused for something else.
 */
static int neutralize_fds(const struct sandbox_cfg *cfg, char *err, size_t errlen)
{
	int fds[1024], n = 0, null;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return fail(err, errlen, "cannot list /proc/self/fd");
	while ((e = readdir(d)) && n < (int)(sizeof(fds) / sizeof(*fds))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd > 2 &&
		    fd != dirfd(d) && !kept(cfg, fd))
			fds[n++] = fd;
	}
	closedir(d);
	if (!n)
		return 0;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return fail(err, errlen, "cannot open /dev/null");
	for (int i = 0; i < n; i++) {
		int flags = fcntl(fds[i], F_GETFD);

		if (flags >= 0 && dup3(null, fds[i], flags & FD_CLOEXEC ? O_CLOEXEC : 0) < 0) {
			fail(err, errlen, "dup3");
			close(null);
			return -1;
		}
	}
	close(null);
	return 0;
}

static int drop_caps(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];

	/* The bounding set first: dropping from it needs CAP_SETPCAP. */
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return fail(err, errlen, "prctl(PR_CAPBSET_DROP)");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	memset(none, 0, sizeof(none));
	if (syscall(SYS_capset, &h, none) < 0)
		return fail(err, errlen, "capset");
	return 0;
}

/* Wrap a reason of sandbox_fs or sandbox_filter as the others are worded. */
static int fs_fail(char *err, size_t errlen)
{
	char why[SANDBOX_ERR_MAX];

	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, errlen, "cannot create the sandbox: %s", why);
	return -1;
}

/* PID 1 of the new namespaces: build and lock down the sandbox. */
static int inside(const struct sandbox_cfg *cfg, struct sandbox_fs *fs,
                  char *err, size_t errlen)
{
	int rc;

	/* The outer process is this one's only link to the call's supervisor. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_PDEATHSIG)");
	rc = sandbox_fs_build(fs, err, errlen);
	sandbox_fs_free(fs);
	if (rc < 0)
		return fs_fail(err, errlen);
	if (sethostname("dolsot", 6) < 0)
		return fail(err, errlen, "sethostname");
	if (loopback_up(err, errlen) < 0 || set_env(cfg->env, err, errlen) < 0 ||
	    neutralize_fds(cfg, err, errlen) < 0 || drop_caps(err, errlen) < 0)
		return -1;
	if (sandbox_filter_load(err, errlen) < 0)
		return fs_fail(err, errlen);
	return 0;
}

/* With an init (sandbox_init.h): PID 1, built and locked down, stays the
 * init, and its child goes on, in a process group of its own.  What that
 * child starts stays below it (it is a subreaper), as it would below PID 1
 * without an init. */
static int below_init(int report, char *err, size_t errlen)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail(err, errlen, "fork");
	if (pid > 0)
		sandbox_init_main(report);
	close(report);
	/* Its own process group, so that it can be killed with what it
	 * started and the init stay. */
	if (setpgid(0, 0) < 0)
		return fail(err, errlen, "setpgid");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_PDEATHSIG)");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER)");
	return 0;
}

int sandbox_enter(const struct sandbox_cfg *cfg, char *err, size_t errlen)
{
	struct sandbox_ids ids;
	struct sandbox_fs *fs;
	pid_t pid;

	/* A process that changed its uids (a server that drops root for each
	 * call) is not dumpable, so its /proc files belong to root and it
	 * could not write its own uid_map.  It is about to give up every
	 * privilege anyway. */
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1 &&
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_DUMPABLE)");
	if (sandbox_ids_start(&ids, err, errlen) < 0)
		return -1;
	if (unshare(NS_FLAGS) < 0) {
		int saved = errno;

		sandbox_ids_end(&ids);
		snprintf(err, errlen, "cannot create the sandbox: the kernel refused new "
		         "namespaces (unshare: %s); user namespaces may be disabled or "
		         "exhausted (see /proc/sys/user/max_user_namespaces); the cell "
		         "was not run", strerror(saved));
		return -1;
	}
	if (sandbox_ids_map(&ids, err, errlen) < 0) {
		sandbox_ids_end(&ids);
		return -1;
	}
	fs = sandbox_fs_take(cfg, &ids, err, errlen);
	sandbox_ids_end(&ids);
	if (!fs)
		return fs_fail(err, errlen);
	if (sandbox_ids_become(&ids, err, errlen) < 0) {
		sandbox_fs_free(fs);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sandbox_fs_free(fs);
		return fail(err, errlen, "fork");
	}
	if (pid > 0) {
		sandbox_fs_free(fs);
		if (cfg->init_fd > 2)
			let_go_of_fds();
		supervise(pid);
	}
	if (inside(cfg, fs, err, errlen) < 0)
		return -1;
	return cfg->init_fd > 2 ? below_init(cfg->init_fd, err, errlen) : 0;
}
