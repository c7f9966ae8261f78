/*
 * pidcg.c - per-call pids and memory cgroups (see pidcg.h).
 *
 * The hierarchy is found the way the kernel shows it: /proc/self/cgroup
 * gives our cgroup's path inside each hierarchy, /proc/self/mountinfo where
 * that hierarchy is mounted (and which part of it, for a container that
 * sees only a subtree).
 */
#include "pidcg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* True when the list, words separated by sep, has the word. */
static bool has_in(const char *list, char sep, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, sep) ? strchr(p, sep) + 1 : NULL)
		if (strncmp(p, word, n) == 0 &&
		    (p[n] == sep || p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

/* True when the comma-separated list has the word. */
static bool has_word(const char *list, const char *word)
{
	return has_in(list, ',', word);
}

/* Our path in the v1 hierarchy of controller (v1 true) or in the v2 one. */
static int own_cgroup(bool v1, const char *controller, char *rel, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	int ret = -1;

	if (!f)
		return -1;
	while (ret < 0 && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, ":")] = '\0';
		if (v1 ? !has_word(c1 + 1, controller) : (strcmp(line, "0") != 0 || c1[1] != '\0'))
			continue;
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		snprintf(rel, len, "%s", c2 + 1);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* Mount point and mounted root of the hierarchy, from mountinfo. */
static int hierarchy_mount(bool v1, const char *controller, char *mnt, size_t mlen,
                           char *root, size_t rlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	int ret = -1;

	if (!f)
		return -1;
	while (ret < 0 && fgets(line, sizeof(line), f)) {
		char r[4096], m[4096], type[64], opts[1024];
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", type, opts) != 2)
			continue;
		if (v1 ? strcmp(type, "cgroup") != 0 || !has_word(opts, controller)
		       : strcmp(type, "cgroup2") != 0)
			continue;
		snprintf(mnt, mlen, "%s", m);
		snprintf(root, rlen, "%s", r);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* The directory of our own cgroup in a hierarchy with the controller (v1
 * first; the v2 one is a candidate whether or not it is enabled there). */
static int own_dir(const char *controller, char *dir, size_t len, bool *is_v1,
                   size_t *mnt_len)
{
	char rel[4096], mnt[4096], root[4096];

	for (int v1 = 1; v1 >= 0; v1--) {
		const char *tail;

		if (own_cgroup(v1, controller, rel, sizeof(rel)) < 0 ||
		    hierarchy_mount(v1, controller, mnt, sizeof(mnt), root, sizeof(root)) < 0)
			continue;
		*is_v1 = v1;
		*mnt_len = strlen(mnt);
		tail = rel;
		if (strcmp(root, "/") != 0) {
			size_t n = strlen(root);

			if (strncmp(rel, root, n) != 0)
				continue;
			tail = rel + n;
		}
		if (snprintf(dir, len, "%s%s", mnt, strcmp(tail, "/") == 0 ? "" : tail) >= (int)len)
			continue;
		return 0;
	}
	errno = ENOENT;
	return -1;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PIDCG_PATH_MAX + 32];
	int fd, saved;
	ssize_t w;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	w = write(fd, text, strlen(text));
	saved = errno;
	close(fd);
	errno = saved;
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

/* The first line of dir/name, into buf ("" when it cannot be read). */
static void read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PIDCG_PATH_MAX + 32];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
}

/* Whether the v2 cgroup at dir gives its children the controller, and we
 * may make a child there and move a process of ours into it (the writer of
 * cgroup.procs needs the common ancestor's: for a cgroup above ours, that
 * is its own). */
static bool v2_usable(const char *dir, const char *controller, const char *also)
{
	char line[1024], procs[PIDCG_PATH_MAX + 32];

	read_line(dir, "cgroup.subtree_control", line, sizeof(line));
	if (!has_in(line, ' ', controller) || (also && !has_in(line, ' ', also)))
		return false;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	return access(dir, W_OK) == 0 && access(procs, W_OK) == 0;
}

/*
 * On cgroup v2 a controller works in a cgroup only when its parent lists it
 * in cgroup.subtree_control, and a cgroup with processes in it (ours) may
 * not list one.  So the call's cgroup goes below the nearest cgroup, ours or
 * one above it up to the top we see, that gives its children the
 * controller (and also, when given) and that we may use: ours when it is
 * a delegated one, else a sibling of ours or of an ancestor (for root, the
 * slice above a service or session, say).  dir is cut to that cgroup.
 */
static int v2_parent(char *dir, size_t top, const char *controller, const char *also)
{
	for (;;) {
		char *slash;

		if (v2_usable(dir, controller, also))
			return 0;
		slash = strrchr(dir, '/');
		if (strlen(dir) <= top || !slash || (size_t)(slash - dir) < top)
			return -1;
		*slash = '\0';
	}
}

/* A new cgroup for the controller (and on v2 also, when given; NULL for
 * none) below ours or, on v2, near it (see v2_parent), into path. */
static int make_dir(const char *controller, const char *also, char *path, size_t pathlen,
                    bool *v1, char *err, size_t errlen)
{
	char dir[PIDCG_PATH_MAX], own[PIDCG_PATH_MAX];
	struct timespec t;
	size_t top;

	if (own_dir(controller, dir, sizeof(dir), v1, &top) < 0) {
		snprintf(err, errlen, "no cgroup hierarchy with the %s controller is mounted",
		         controller);
		return -1;
	}
	snprintf(own, sizeof(own), "%s", dir);
	if (!*v1 && v2_parent(dir, top, controller, also) < 0) {
		snprintf(err, errlen, "no cgroup at or above %s that we may use gives its "
		         "children the %s%s%s controller (cgroup.subtree_control)", own,
		         controller, also ? " and " : "", also ? also : "");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (snprintf(path, pathlen, "%s/dolsot-%s%d-%ld", dir, controller[0] == 'm' ? "m" : "",
	             (int)getpid(), (long)(t.tv_nsec ^ t.tv_sec)) >= (int)pathlen) {
		snprintf(err, errlen, "the cgroup path is too long");
		return -1;
	}
	if (mkdir(path, 0755) < 0) {
		snprintf(err, errlen, "cannot make the %s cgroup %s: %s", controller, path,
		         strerror(errno));
		return -1;
	}
	return 0;
}

int pidcg_create(uint64_t max, bool with_memory, char *path, size_t pathlen,
                 char *err, size_t errlen)
{
	char num[32];
	bool v1;

	/* On v2 the memory limit must go into this same cgroup: look for a
	 * place with both first. */
	if ((!with_memory || make_dir("pids", "memory", path, pathlen, &v1, err, errlen) < 0) &&
	    make_dir("pids", NULL, path, pathlen, &v1, err, errlen) < 0)
		return -1;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)max);
	if (write_file(path, "pids.max", num) < 0) {
		snprintf(err, errlen, "cannot set %s/pids.max: %s", path, strerror(errno));
		rmdir(path);
		return -1;
	}
	return 0;
}

/* Set a memory limit of bytes, and no swap, in the cgroup at dir. */
static int set_memory(const char *dir, bool v1, uint64_t bytes, char *err, size_t errlen)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)bytes);
	if (write_file(dir, v1 ? "memory.limit_in_bytes" : "memory.max", num) < 0) {
		snprintf(err, errlen, "cannot set the memory limit of %s: %s", dir,
		         strerror(errno));
		return -1;
	}
	/* Without swap accounting the files are missing: then swap is not
	 * counted, and not limited. */
	if (v1)
		write_file(dir, "memory.memsw.limit_in_bytes", num);
	else
		write_file(dir, "memory.swap.max", "0");
	return 0;
}

int pidcg_create_memory(uint64_t bytes, const char *pids_path, char *path,
                        size_t pathlen, char *err, size_t errlen)
{
	char probe[PIDCG_PATH_MAX + 32];
	struct stat st;
	bool v1;

	path[0] = '\0';
	/* A v2 pids cgroup is the call's only one there: limit it. */
	snprintf(probe, sizeof(probe), "%s/memory.max", pids_path ? pids_path : "");
	if (pids_path && pids_path[0] && stat(probe, &st) == 0) {
		snprintf(path, pathlen, "%s", pids_path);
		return set_memory(path, false, bytes, err, errlen);
	}
	if (make_dir("memory", NULL, path, pathlen, &v1, err, errlen) < 0) {
		path[0] = '\0';
		return -1;
	}
	/* A process is in one v2 cgroup: joining a second one would take the
	 * worker out of its pids cgroup. */
	snprintf(probe, sizeof(probe), "%s/cgroup.controllers", pids_path ? pids_path : "");
	if (!v1 && pids_path && pids_path[0] && stat(probe, &st) == 0) {
		snprintf(err, errlen, "the call's cgroup v2 pids cgroup %s has no memory "
		         "controller", pids_path);
		rmdir(path);
		path[0] = '\0';
		return -1;
	}
	if (set_memory(path, v1, bytes, err, errlen) < 0) {
		rmdir(path);
		path[0] = '\0';
		return -1;
	}
	return 0;
}

int pidcg_join(const char *path, char *err, size_t errlen)
{
	/*
	 * "0" means the writing thread or process itself.  Moving a whole
	 * process (cgroup.procs) takes a global lock whose write side waits
	 * for an RCU grace period, about 10 ms per call here; moving the
	 * calling thread through v1's "tasks" does not, and the worker has no
	 * other thread yet.  v2 has no "tasks" file.
	 */
	if (write_file(path, "tasks", "0") == 0)
		return 0;
	if (write_file(path, "cgroup.procs", "0") < 0) {
		snprintf(err, errlen, "cannot join the cgroup %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

bool pidcg_oom_killed(const char *path)
{
	static const char *const files[] = { "memory.oom_control", "memory.events" };

	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		char p[PIDCG_PATH_MAX + 32], line[128];
		unsigned long long n;
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", path, files[i]);
		if (!(f = fopen(p, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "oom_kill %llu", &n) == 1) {
				fclose(f);
				return n > 0;
			}
		}
		fclose(f);
	}
	return false;
}

void pidcg_remove(const char *path)
{
	/* The last tasks may still be on their way out of the cgroup. */
	for (int i = 0; i < 100; i++) {
		struct timespec pause = { 0, 1000000 };

		if (rmdir(path) == 0 || errno != EBUSY)
			return;
		nanosleep(&pause, NULL);
	}
}
