/*
 * user_dir.c - where a user's files go without DOLSOT_CACHE_DIR
 * (user_dir.h).
 *
 * A candidate is usable when opening it with O_NOFOLLOW gives a directory
 * owned by geteuid() with no group or other bits, and (for a fallback) the
 * directory it is made in is ours and open to no other writer, so that
 * nobody else can have made it first or swap it later.  store_file.c
 * checks the directory again when it opens it.
 */
#include "user_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHY_MAX 128

static struct {
	bool chosen;
	bool fits;              /* path holds the whole name */
	char path[PATH_MAX];
	char note[3 * PATH_MAX];
} ud;

/* Why path (made 0700 when missing) is not a private directory of ours;
 * "" when it is. */
static void check_private(const char *path, char *why, size_t len)
{
	struct stat st;
	int fd;

	why[0] = '\0';
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		snprintf(why, len, "mkdir: %s", strerror(errno));
		return;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s", errno == ELOOP ? "it is a symbolic link"
		         : errno == ENOTDIR ? "not a directory" : strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0)
		snprintf(why, len, "fstat: %s", strerror(errno));
	else if (st.st_uid != geteuid())
		snprintf(why, len, "owned by uid %u, not %u", (unsigned)st.st_uid,
		         (unsigned)geteuid());
	else if (st.st_mode & 077)
		snprintf(why, len, "mode %04o gives group or others access",
		         (unsigned)(st.st_mode & 07777));
	close(fd);
}

/* dir is ours, a directory and writable by nobody else (closed: nobody
 * else may even look in it). */
static bool ours(const char *dir, bool closed)
{
	struct stat st;

	return dir && dir[0] == '/' && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && !(st.st_mode & (closed ? 077 : 022));
}

/* dir/name into ud.path when it fits and is a private directory of ours. */
static bool try_in(const char *dir, const char *name)
{
	char why[WHY_MAX];
	int n = snprintf(ud.path, sizeof(ud.path), "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof(ud.path))
		return false;
	check_private(ud.path, why, sizeof(why));
	return why[0] == '\0';
}

static const char *home_dir(void)
{
	const char *home = getenv("HOME");
	const struct passwd *pw;

	if (home && home[0] == '/')
		return home;
	pw = getpwuid(geteuid());
	return pw ? pw->pw_dir : NULL;
}

/* dir/name into *next (PATH_MAX bytes), made 0700 when missing: true when
 * it is ours and writable by nobody else. */
static bool step_in(const char *dir, const char *name, char *next)
{
	int n = snprintf(next, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX || (mkdir(next, 0700) < 0 && errno != EEXIST))
		return false;
	return ours(next, false);
}

/* $HOME/.cache/dolsot/store: ~/.cache/dolsot is the type gate's too
 * (its mypy cache), which may make it readable by others. */
static bool try_home(void)
{
	const char *home = home_dir();
	char cache[PATH_MAX], mine[PATH_MAX];

	return ours(home, false) && step_in(home, ".cache", cache) &&
	       step_in(cache, "dolsot", mine) && try_in(mine, "store");
}

/* The first name (in byte order) of a private directory of ours in tmp
 * named prefix + 6 characters, into ud.path.  Nobody else can make a
 * directory that is ours, so an earlier call's mkdtemp is found again. */
static bool find_temp(const char *tmp, const char *prefix)
{
	char best[NAME_MAX + 1] = "";
	size_t plen = strlen(prefix);
	const struct dirent *e;
	DIR *d = opendir(tmp);

	if (!d)
		return false;
	while ((e = readdir(d)) != NULL)
		if (strlen(e->d_name) == plen + 6 && strncmp(e->d_name, prefix, plen) == 0 &&
		    (!best[0] || strcmp(e->d_name, best) < 0) && try_in(tmp, e->d_name))
			snprintf(best, sizeof(best), "%s", e->d_name);
	closedir(d);
	return best[0] && try_in(tmp, best);
}

/* A directory of our own under tmp: one an earlier call made, or a new
 * one by mkdtemp, which nobody can have made first. */
static bool try_temp(const char *tmp)
{
	char prefix[64];
	int n;

	snprintf(prefix, sizeof(prefix), "dolsot-%u.", (unsigned)geteuid());
	if (find_temp(tmp, prefix))
		return true;
	n = snprintf(ud.path, sizeof(ud.path), "%s/%sXXXXXX", tmp, prefix);
	return n > 0 && (size_t)n < sizeof(ud.path) && mkdtemp(ud.path) != NULL;
}

/* The default is not ours (why): the first fallback that is. */
static void fall_back(const char *tmp, const char *def, const char *why)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	const char *kept = "sessions and images are kept in";

	if ((ours(rt, true) && try_in(rt, "dolsot")) || try_home()) {
		snprintf(ud.note, sizeof(ud.note), "the default directory %s is not usable "
		         "(%s); %s %s instead", def, why, kept, ud.path);
		return;
	}
	if (try_temp(tmp)) {
		snprintf(ud.note, sizeof(ud.note), "the default directory %s is not usable "
		         "(%s) and neither is $XDG_RUNTIME_DIR nor $HOME/.cache; %s %s, made "
		         "by mkdtemp: set DOLSOT_CACHE_DIR to a directory of yours",
		         def, why, kept, ud.path);
		return;
	}
	snprintf(ud.path, sizeof(ud.path), "%s", def);   /* opening it says why not */
}

static void choose(void)
{
	const char *tmp = getenv("TMPDIR");
	char def[PATH_MAX], why[WHY_MAX];
	int n;

	ud.chosen = true;
	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	n = snprintf(def, sizeof(def), "%s/dolsot-%u", tmp, (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sizeof(def))
		return;   /* ud.fits stays false */
	ud.fits = true;
	check_private(def, why, sizeof(why));
	if (why[0] == '\0')
		snprintf(ud.path, sizeof(ud.path), "%s", def);
	else
		fall_back(tmp, def, why);
}

int user_dir_path(char *buf, size_t len)
{
	if (!ud.chosen)
		choose();
	if (!ud.fits || strlen(ud.path) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, ud.path, strlen(ud.path) + 1);
	return 0;
}

const char *user_dir_note(void)
{
	if (!ud.chosen)
		choose();
	return ud.note[0] ? ud.note : NULL;
}
