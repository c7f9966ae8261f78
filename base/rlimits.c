/*
 * rlimits.c - names of the limits, and the rlimits that enforce them.
 *
 * --memory is RLIMIT_DATA, not RLIMIT_AS: libraries such as OpenBLAS reserve
 * large address ranges they never touch (thread stacks, per-thread malloc
 * arenas), which RLIMIT_AS would count and RLIMIT_DATA does not.  Either
 * way malloc fails before the kernel's OOM killer steps in, so Python raises
 * MemoryError and the call can still answer.
 */
#include "rlimits.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const struct {
	const char *name;
	const char *env;
	bool size;
} kinds[LIMIT_COUNT] = {
	[LIMIT_MEMORY] = { "memory", "DOLSOT_MEMORY", true },
	[LIMIT_MAX_PROCS] = { "max-procs", "DOLSOT_MAX_PROCS", false },
	[LIMIT_MAX_FILE_SIZE] = { "max-file-size", "DOLSOT_MAX_FILE_SIZE", true },
	[LIMIT_CPU_SECONDS] = { "cpu-seconds", "DOLSOT_CPU_SECONDS", false },
	[LIMIT_RECURSION] = { "recursion-limit", "DOLSOT_RECURSION_LIMIT", false },
};

const char *limit_name(enum limit_kind k)
{
	return kinds[k].name;
}

bool limit_by_name(const char *name, size_t len, enum limit_kind *k)
{
	for (int i = 0; i < LIMIT_COUNT; i++) {
		if (strlen(kinds[i].name) == len && memcmp(kinds[i].name, name, len) == 0) {
			*k = (enum limit_kind)i;
			return true;
		}
	}
	return false;
}

const char *limit_env(enum limit_kind k)
{
	return kinds[k].env;
}

bool limit_is_size(enum limit_kind k)
{
	return kinds[k].size;
}

int limit_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMG";
	size_t n = strspn(s, "0123456789");
	const char *u = s[n] ? strchr(units, s[n] & ~0x20) : NULL;
	unsigned shift = u && *u ? 10 * (unsigned)(1 + (u - units)) : 0;
	uint64_t v = 0;

	if (n == 0 || (s[n] && (!shift || s[n + 1])))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT64_MAX >> shift)
		return -1;
	*out = v << shift;
	return 0;
}

void limit_format(enum limit_kind k, uint64_t v, char *buf, size_t len)
{
	static const char units[] = "GMK";

	if (kinds[k].size && v) {
		for (int i = 0; i < 3; i++) {
			uint64_t unit = (uint64_t)1 << (10 * (3 - i));

			if (v % unit == 0) {
				snprintf(buf, len, "%llu%c", (unsigned long long)(v / unit),
				         units[i]);
				return;
			}
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

void limits_describe(const struct limits *l, char *buf, size_t len)
{
	size_t o = 0;

	if (len)
		buf[0] = '\0';
	for (int k = 0; k < LIMIT_COUNT && o < len; k++) {
		char v[32];

		if (!l->v[k])
			continue;
		limit_format((enum limit_kind)k, l->v[k], v, sizeof(v));
		o += (size_t)snprintf(buf + o, len - o, "%s--%s %s", o ? ", " : "",
		                      kinds[k].name, v);
	}
}

static int fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, strerror(errno));
	return -1;
}

/* Soft and hard both at v, or at the current hard limit when that is lower
 * (an unprivileged process cannot raise it, and lower is stricter anyway). */
static int set_limit(int resource, rlim_t soft, rlim_t hard)
{
	struct rlimit now, want;

	if (getrlimit(resource, &now) < 0)
		return -1;
	want.rlim_max = hard < now.rlim_max ? hard : now.rlim_max;
	want.rlim_cur = soft < want.rlim_max ? soft : want.rlim_max;
	return setrlimit(resource, &want);
}

/* Tasks (threads included) whose real uid is ours: what RLIMIT_NPROC counts. */
static int count_user_tasks(uint64_t *out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	uid_t me = getuid();
	uint64_t n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], line[256];
		unsigned long uid = (unsigned long)-1, threads = 0;
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;   /* gone meanwhile */
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "Uid:", 4) == 0)
				uid = strtoul(line + 4, NULL, 10);
			else if (strncmp(line, "Threads:", 8) == 0)
				threads = strtoul(line + 8, NULL, 10);
		}
		fclose(f);
		if (uid == (unsigned long)me)
			n += threads ? threads : 1;
	}
	closedir(d);
	*out = n;
	return 0;
}

static int apply_procs(uint64_t max, enum procs_count procs, char *err,
                       size_t errlen)
{
	uint64_t base = 0;

	switch (procs) {
	case PROCS_BY_CGROUP:
		return 0;
	case PROCS_BY_USERNS:
		/* The count starts at the user namespace; the sandbox's outer
		 * process is in it but is not the cell's. */
		base = 1;
		break;
	case PROCS_BY_USER:
		/* Every process of the user counts: allow max - 1 more than now
		 * (the worker itself is among those counted). */
		if (count_user_tasks(&base) < 0)
			return fail(err, errlen, "cannot count processes in /proc");
		base = base ? base - 1 : 0;
		break;
	default:
		return 0;
	}
	if (set_limit(RLIMIT_NPROC, (rlim_t)(base + max), (rlim_t)(base + max)) < 0)
		return fail(err, errlen, "setrlimit(RLIMIT_NPROC)");
	return 0;
}

int limits_apply(const struct limits *l, enum procs_count procs, char *err,
                 size_t errlen)
{
	const uint64_t *v = l->v;

	if (v[LIMIT_MEMORY] && set_limit(RLIMIT_DATA, v[LIMIT_MEMORY], v[LIMIT_MEMORY]) < 0)
		return fail(err, errlen, "setrlimit(RLIMIT_DATA)");
	if (v[LIMIT_MAX_FILE_SIZE]) {
		/* Ignored, a write past the limit fails with EFBIG, which Python
		 * raises as OSError instead of the process being killed. */
		if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
			return fail(err, errlen, "signal(SIGXFSZ)");
		if (set_limit(RLIMIT_FSIZE, v[LIMIT_MAX_FILE_SIZE],
		              v[LIMIT_MAX_FILE_SIZE]) < 0)
			return fail(err, errlen, "setrlimit(RLIMIT_FSIZE)");
	}
	/* SIGXCPU at the limit (the worker reports it), SIGKILL a second later
	 * in case the cell ignores SIGXCPU. */
	if (v[LIMIT_CPU_SECONDS] && set_limit(RLIMIT_CPU, v[LIMIT_CPU_SECONDS],
	                                      v[LIMIT_CPU_SECONDS] + 1) < 0)
		return fail(err, errlen, "setrlimit(RLIMIT_CPU)");
	if (v[LIMIT_MAX_PROCS])
		return apply_procs(v[LIMIT_MAX_PROCS], procs, err, errlen);
	return 0;
}
