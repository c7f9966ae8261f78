/*
 * fuzz_store.c - libFuzzer harness for the FileStore's reading of its
 * directory: entry classification (store_name.c) and the listing, loading
 * and wiping built on it (store_file.c).
 *
 * The input is a list of file names separated by '/' or NUL (the only
 * bytes a name cannot hold).  Every name is classified and must map back
 * to the name dolsot itself would give that file; then the names are
 * created in a private directory (on /dev/shm when it exists), and
 * --list-sessions, loading and --reset all must see exactly the sessions
 * among them and leave every name that is not ours alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "store.h"
#include "store_file.h"
#include "store_name.h"

#define MAX_NAMES 24
#define NAME_MAX_LEN 255

static char dir[256];
static int dirfd_ = -1;

static void remove_all(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	CHECK(d != NULL);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			CHECK(unlinkat(dirfd_, e->d_name, 0) == 0);
	closedir(d);
}

static void drop_dir(void)
{
	if (dirfd_ >= 0) {
		remove_all();
		close(dirfd_);
		rmdir(dir);
	}
}

static void make_dir(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(dir, sizeof(dir), "%s/dolsot-fuzz-store-XXXXXX", base);
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0700) == 0);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dirfd_ >= 0);
	atexit(drop_dir);
}

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A name we classify as ours is exactly the name we would have made. */
static enum store_name_kind classify(const char *name, char *id)
{
	enum store_name_kind k = store_name_kind(name, id);
	char want[STORE_NAME_MAX + 8];
	size_t n = strlen(name), idn;

	if (k == STORE_NAME_OTHER)
		return k;
	CHECK(store_id_valid(id, NULL, 0));
	idn = strlen(id);
	switch (k) {
	case STORE_NAME_SESSION:
		snprintf(want, sizeof(want), "%s.pkl", id);
		CHECK(strcmp(name, want) == 0);
		break;
	case STORE_NAME_LOCK:
		snprintf(want, sizeof(want), "%s.lock", id);
		CHECK(strcmp(name, want) == 0);
		break;
	case STORE_NAME_TEMP:
		CHECK(n == 1 + idn + 1 + STORE_TEMP_RAND_LEN + 4);
		CHECK(name[0] == '.' && memcmp(name + 1, id, idn) == 0 && name[1 + idn] == '.');
		for (size_t i = 0; i < STORE_TEMP_RAND_LEN; i++)
			CHECK(alnum(name[2 + idn + i]));
		CHECK(strcmp(name + n - 4, ".tmp") == 0);
		break;
	case STORE_NAME_OTHER:
	default:
		break;
	}
	return k;
}

/* Each valid id's own names classify back to it. */
static void check_round_trip(const char *id)
{
	char name[STORE_NAME_MAX + 8], got[STORE_ID_MAX + 1];

	if (!store_id_valid(id, NULL, 0))
		return;
	snprintf(name, sizeof(name), "%s.pkl", id);
	CHECK(store_name_kind(name, got) == STORE_NAME_SESSION && strcmp(got, id) == 0);
	snprintf(name, sizeof(name), "%s.lock", id);
	CHECK(store_name_kind(name, got) == STORE_NAME_LOCK && strcmp(got, id) == 0);
	snprintf(name, sizeof(name), ".%s.Ab3dE9.tmp", id);
	CHECK(store_name_kind(name, got) == STORE_NAME_TEMP && strcmp(got, id) == 0);
}

struct entry {
	char name[NAME_MAX_LEN + 1];
	char id[STORE_ID_MAX + 1];
	enum store_name_kind kind;
	size_t size;
};

static size_t split_names(const uint8_t *data, size_t size, struct entry *v)
{
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= size && n < MAX_NAMES; i++) {
		size_t len;
		bool dup = false;

		if (i < size && data[i] != '/' && data[i] != '\0')
			continue;
		len = i - start > NAME_MAX_LEN ? NAME_MAX_LEN : i - start;
		memcpy(v[n].name, data + start, len);
		v[n].name[len] = '\0';
		start = i + 1;
		if (len == 0 || strcmp(v[n].name, ".") == 0 || strcmp(v[n].name, "..") == 0)
			continue;
		for (size_t j = 0; j < n; j++)
			dup |= strcmp(v[j].name, v[n].name) == 0;
		if (!dup)
			n++;
	}
	return n;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->id, ((const struct entry *)b)->id);
}

static void check_store(struct entry *v, size_t n)
{
	char err[STORE_ERR_MAX];
	struct session_info *info;
	struct entry sessions[MAX_NAMES];
	size_t n_info, n_sessions = 0, n_other = 0;
	unsigned removed;
	struct store *st = store_file_open(dir, 0, err, sizeof(err));

	CHECK(st != NULL);
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == STORE_NAME_SESSION)
			sessions[n_sessions++] = v[i];
		n_other += v[i].kind == STORE_NAME_OTHER;
	}
	qsort(sessions, n_sessions, sizeof(*sessions), by_id);
	/* The file backend's own ops: the ids come from its directory. */
	CHECK(st->ops->list(st, &info, &n_info, err, sizeof(err)) == 0);
	CHECK(n_info == n_sessions);
	for (size_t i = 0; i < n_info; i++) {
		uint8_t *blob;
		size_t len;
		bool found;

		CHECK(strcmp(info[i].id, sessions[i].id) == 0);
		CHECK(info[i].size == sessions[i].size);
		CHECK(st->ops->load(st, info[i].id, &blob, &len, &found, err, sizeof(err)) == 0);
		CHECK(found && len == sessions[i].size);
		free(blob);
	}
	free(info);
	CHECK(st->ops->del(st, "all", &removed, err, sizeof(err)) == 0);
	CHECK(removed == n_sessions);
	store_close(st);
	/* Only what is not ours is left: sessions, saves and free locks went. */
	for (size_t i = 0; i < n; i++) {
		struct stat sb;
		int there = fstatat(dirfd_, v[i].name, &sb, AT_SYMLINK_NOFOLLOW) == 0;

		CHECK(there == (v[i].kind == STORE_NAME_OTHER));
	}
	(void)n_other;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct entry v[MAX_NAMES];
	size_t n;

	if (dirfd_ < 0)
		make_dir();
	n = split_names(data, size, v);
	for (size_t i = 0; i < n; i++) {
		int fd;

		v[i].kind = classify(v[i].name, v[i].id);
		check_round_trip(v[i].name);
		v[i].size = i;
		fd = openat(dirfd_, v[i].name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		CHECK(fd >= 0);
		CHECK(write(fd, "0123456789abcdefghijklmnopqrstuvwxyz", i) == (ssize_t)i);
		close(fd);
	}
	check_store(v, n);
	remove_all();
	return 0;
}
