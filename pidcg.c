/*
 * pidcg.c - a per-call pids cgroup (see pidcg.h).
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

/* True when the comma-separated list has the word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

/* Our path in the v1 pids hierarchy (v1 true) or in the v2 one. */
static int own_cgroup(bool v1, char *rel, size_t len)
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
		if (v1 ? !has_word(c1 + 1, "pids") : (strcmp(line, "0") != 0 || c1[1] != '\0'))
			continue;
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		snprintf(rel, len, "%s", c2 + 1);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* Mount point and mounted root of the hierarchy, from mountinfo. */
static int hierarchy_mount(bool v1, char *mnt, size_t mlen, char *root, size_t rlen)
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
		if (v1 ? strcmp(type, "cgroup") != 0 || !has_word(opts, "pids")
		       : strcmp(type, "cgroup2") != 0)
			continue;
		snprintf(mnt, mlen, "%s", m);
		snprintf(root, rlen, "%s", r);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* The directory of our own cgroup in a hierarchy with a pids controller. */
static int own_dir(char *dir, size_t len)
{
	char rel[4096], mnt[4096], root[4096];

	for (int v1 = 1; v1 >= 0; v1--) {
		const char *tail;

		if (own_cgroup(v1, rel, sizeof(rel)) < 0 ||
		    hierarchy_mount(v1, mnt, sizeof(mnt), root, sizeof(root)) < 0)
			continue;
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

int pidcg_create(uint64_t max, char *path, size_t pathlen, char *err,
                 size_t errlen)
{
	char dir[PIDCG_PATH_MAX], num[32];
	struct timespec t;

	if (own_dir(dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "no cgroup hierarchy with the pids controller is mounted");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (snprintf(path, pathlen, "%s/dolsot-%d-%ld", dir, (int)getpid(),
	             (long)(t.tv_nsec ^ t.tv_sec)) >= (int)pathlen) {
		snprintf(err, errlen, "the cgroup path is too long");
		return -1;
	}
	if (mkdir(path, 0755) < 0) {
		snprintf(err, errlen, "cannot make the pids cgroup %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)max);
	if (write_file(path, "pids.max", num) < 0) {
		snprintf(err, errlen, "cannot set %s/pids.max: %s", path, strerror(errno));
		rmdir(path);
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
		snprintf(err, errlen, "cannot join the pids cgroup %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
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
