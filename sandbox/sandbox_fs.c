/*
 * sandbox_fs.c - build the sandbox's root file system and pivot into it.
 *
 * Order matters:
 *  1. Every source is cloned (open_tree) or opened while the host's tree is
 *     still in view, because the new root is mounted over /tmp, where
 *     sources (toolboxes, --mount paths) may live.  Cloning whole trees with
 *     AT_RECURSIVE also keeps mounts the kernel locked for us intact, and
 *     mount_setattr(AT_RECURSIVE) makes every submount read-only, which a
 *     read-only remount of a bind would not.
 *  2. A tmpfs is mounted on /tmp and the tree is built inside it: mount
 *     points, the clones moved into place, /proc (mounted here, while the
 *     host's /proc is still visible, which the kernel requires in a user
 *     namespace), tmpfs mounts, overlays, a few files of /etc.
 *  3. pivot_root(".", ".") stacks the old root on the new one, and a lazy
 *     unmount of "." drops it; then the root tmpfs is made read-only.
 *
 * MUST: no mount point is ever made inside a host bind (that would create
 * it on the host); the caller's binds are checked against the system ones
 * and against each other first.
 */
#include "sandbox_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox_ids.h"

#define STAGE "/tmp"              /* where the new root is built */
#define OVL_DIR "/.dolsot-overlay" /* upper layers, unmounted before the pivot */
#define MASK_DIR "/.dolsot-mask"   /* the empty file masks are bound from, likewise */

static const char *const system_dirs[] = { SANDBOX_SYSTEM_DIRS };

/* Single host entries made visible read-only when they exist. */
static const char *const system_files[] = {
	"/etc/ld.so.cache",       /* where the dynamic linker finds libraries */
	"/etc/alternatives",      /* Debian's links for BLAS and others */
	"/etc/localtime",
	"/etc/matplotlibrc",      /* Debian's matplotlib reads its defaults here */
	"/etc/fonts",             /* fontconfig, which matplotlib's text uses */
};

static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/urandom" };

/* Kernel settings and machine-wide controls: read-only (as runc and crun
 * make them), so no write reaches the host or the sandbox's own net
 * namespace's settings. */
static const char *const proc_ro[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
};

/* Files that tell about the host or its kernel, or are of no use to a cell:
 * an empty read-only file over them (runc's masked paths, plus the boot's
 * command line and id). */
static const char *const proc_masked[] = {
	"/proc/cmdline", "/proc/sys/kernel/random/boot_id", "/proc/kcore",
	"/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
	"/proc/timer_stats", "/proc/kallsyms", "/proc/kmsg", "/proc/config.gz",
};

/* Directories of the same kind: an empty read-only tmpfs over them. */
static const char *const proc_masked_dirs[] = {
	"/proc/acpi", "/proc/scsi", "/proc/asound", "/proc/driver",
};

/* Paths no caller bind may touch: they hold the system binds. */
static const char *const reserved[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	"/dev", "/proc",
};

enum src_kind { SRC_NONE, SRC_TREE, SRC_LINK, SRC_DIRFD };

/* A source, taken while the host's tree is in view. */
struct source {
	const char *path;        /* where it goes inside */
	enum src_kind kind;
	int fd;                  /* SRC_TREE: detached clone; SRC_DIRFD: O_PATH */
	bool is_dir;
	char link[PATH_MAX];     /* SRC_LINK: the link's text */
	enum mount_mode mode;
	bool callers;            /* one of cfg's binds (idmapped for root) */
};

struct sandbox_fs {
	const struct sandbox_cfg *cfg;
	struct source *src;
	size_t n_src;
	char *err;
	size_t errlen;
	bool clone_overlays;     /* lower layers as detached clones, to idmap */
	char tmp_opts[96];       /* tmpfs options with the size, per use */
	char shm_opts[96];
	char ovl_opts[96];
};

static int fail(struct sandbox_fs *f, const char *what, const char *path)
{
	int saved = errno;

	snprintf(f->err, f->errlen, "%s %s: %s", what, path, strerror(saved));
	errno = saved;
	return -1;
}

/* STAGE + path into buf. */
static const char *staged(char *buf, size_t len, const char *path)
{
	snprintf(buf, len, STAGE "%s", strcmp(path, "/") == 0 ? "" : path);
	return buf;
}

bool sandbox_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int mkdir_p(struct sandbox_fs *f, const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return fail(f, "cannot make", path);
	}
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return fail(f, "cannot make", buf);
			*p = c;
			if (!c)
				return 0;
		}
	}
}

/* An empty file (with its directories) to mount a file on. */
static int make_file(struct sandbox_fs *f, const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir_p(f, dir) < 0)
			return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return fail(f, "cannot make", path);
	close(fd);
	return 0;
}

static int write_file(struct sandbox_fs *f, const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	size_t n = strlen(text);

	if (fd < 0)
		return fail(f, "cannot write", path);
	if (write(fd, text, n) != (ssize_t)n) {
		fail(f, "cannot write", path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static unsigned bind_attrs(enum mount_mode mode, bool device)
{
	if (device)
		return MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
	if (mode == MOUNT_RW)
		return MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	return MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
}

/* Take one host entry: a symbolic link is copied when copy_links, a tree is
 * cloned with attrs, an overlay's lower directory is kept open.  A missing
 * optional entry is skipped. */
static int take(struct sandbox_fs *f, const char *host, const char *path,
                enum mount_mode mode, bool copy_links, bool optional,
                bool device)
{
	struct source *s = &f->src[f->n_src];
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->path = path;
	s->mode = mode;
	s->fd = -1;
	if (lstat(host, &st) < 0) {
		if (optional && errno == ENOENT)
			return 0;
		return fail(f, "cannot find", host);
	}
	if (copy_links && S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(host, s->link, sizeof(s->link) - 1);

		if (n < 0)
			return fail(f, "cannot read the link", host);
		s->link[n] = '\0';
		s->kind = SRC_LINK;
		f->n_src++;
		return 0;
	}
	if (stat(host, &st) < 0)
		return fail(f, "cannot find", host);
	s->is_dir = S_ISDIR(st.st_mode);
	if (mode == MOUNT_OVERLAY && !f->clone_overlays) {
		s->fd = open(host, O_PATH | O_DIRECTORY | O_CLOEXEC);
		s->kind = SRC_DIRFD;
	} else if (mode == MOUNT_OVERLAY) {
		/* Read-only below: the overlay writes to its upper layer. */
		struct mount_attr a = { .attr_set = bind_attrs(MOUNT_RO, false) };

		s->fd = open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		                  AT_RECURSIVE);
		s->kind = SRC_DIRFD;
		if (s->fd >= 0 && mount_setattr(s->fd, "", AT_EMPTY_PATH | AT_RECURSIVE,
		                                &a, sizeof(a)) < 0) {
			fail(f, "cannot restrict the mount of", host);
			close(s->fd);
			return -1;
		}
	} else {
		struct mount_attr a = { .attr_set = bind_attrs(mode, device) };

		s->fd = open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		                  AT_RECURSIVE);
		s->kind = SRC_TREE;
		if (s->fd >= 0 && mount_setattr(s->fd, "", AT_EMPTY_PATH | AT_RECURSIVE,
		                                &a, sizeof(a)) < 0) {
			fail(f, "cannot restrict the mount of", host);
			close(s->fd);
			return -1;
		}
	}
	if (s->fd < 0)
		return fail(f, "cannot open", host);
	f->n_src++;
	return 0;
}

static int check_bind_path(struct sandbox_fs *f, size_t i)
{
	const char *p = f->cfg->binds[i].path;

	for (size_t r = 0; r < sizeof(reserved) / sizeof(*reserved); r++) {
		if (sandbox_path_under(p, reserved[r]) ||
		    sandbox_path_under(reserved[r], p)) {
			snprintf(f->err, f->errlen, "cannot bind %s: it overlaps the system path %s",
			         p, reserved[r]);
			return -1;
		}
	}
	if (strcmp(p, "/tmp") == 0 || strcmp(p, "/") == 0) {
		snprintf(f->err, f->errlen, "cannot bind %s: it would hide the sandbox's own", p);
		return -1;
	}
	for (size_t j = 0; j < i; j++) {
		const char *q = f->cfg->binds[j].path;

		if (sandbox_path_under(p, q) || sandbox_path_under(q, p)) {
			snprintf(f->err, f->errlen, "cannot bind %s: it overlaps %s", p, q);
			return -1;
		}
	}
	return 0;
}

static int take_all(struct sandbox_fs *f)
{
	const struct sandbox_cfg *c = f->cfg;

	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(*system_dirs); i++)
		if (take(f, system_dirs[i], system_dirs[i], MOUNT_RO, true, true, false) < 0)
			return -1;
	for (size_t i = 0; i < sizeof(system_files) / sizeof(*system_files); i++)
		if (take(f, system_files[i], system_files[i], MOUNT_RO, true, true, false) < 0)
			return -1;
	for (size_t i = 0; i < sizeof(devices) / sizeof(*devices); i++)
		if (take(f, devices[i], devices[i], MOUNT_RW, false, false, true) < 0)
			return -1;
	for (size_t i = 0; i < c->n_binds; i++) {
		if (check_bind_path(f, i) < 0 ||
		    take(f, c->binds[i].host, c->binds[i].path, c->binds[i].mode, false,
		         false, false) < 0)
			return -1;
		f->src[f->n_src - 1].callers = true;
	}
	return 0;
}

static int mount_tmpfs(struct sandbox_fs *f, const char *path, const char *opts)
{
	if (mkdir_p(f, path) < 0)
		return -1;
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return fail(f, "cannot mount a tmpfs on", path);
	return 0;
}

/* Lower from the kept directory fd, upper and work on the staging tmpfs. */
static int place_overlay(struct sandbox_fs *f, const struct source *s, const char *at,
                         int n)
{
	char upper[PATH_MAX], work[PATH_MAX], opts[3 * PATH_MAX];

	snprintf(upper, sizeof(upper), STAGE OVL_DIR "/%d/upper", n);
	snprintf(work, sizeof(work), STAGE OVL_DIR "/%d/work", n);
	if (mkdir_p(f, upper) < 0 || mkdir_p(f, work) < 0 || mkdir_p(f, at) < 0)
		return -1;
	/* /proc/self/fd/N: no escaping of commas or colons in the host path. */
	snprintf(opts, sizeof(opts), "lowerdir=/proc/self/fd/%d,upperdir=%s,workdir=%s",
	         s->fd, upper, work);
	if (mount("overlay", at, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		return fail(f, "cannot mount an overlay on", s->path);
	return 0;
}

static int place(struct sandbox_fs *f, const struct source *s, int *n_overlays)
{
	char at[PATH_MAX];

	staged(at, sizeof(at), s->path);
	switch (s->kind) {
	case SRC_LINK:
		if (symlink(s->link, at) < 0 && errno != EEXIST)
			return fail(f, "cannot make the link", s->path);
		return 0;
	case SRC_DIRFD:
		if (*n_overlays == 0 && mount_tmpfs(f, STAGE OVL_DIR, f->ovl_opts) < 0)
			return -1;
		return place_overlay(f, s, at, (*n_overlays)++);
	case SRC_TREE:
		if ((s->is_dir ? mkdir_p(f, at) : make_file(f, at)) < 0)
			return -1;
		if (move_mount(s->fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return fail(f, "cannot mount", s->path);
		return 0;
	case SRC_NONE:
	default:
		return 0;
	}
}

static int write_etc(struct sandbox_fs *f)
{
	char text[512];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();

	snprintf(text, sizeof(text), "%s:x:%u:%u:dolsot sandbox:/tmp:/bin/sh\n%s"
	         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	         uid ? "dolsot" : "root", uid, gid,
	         uid ? "root:x:0:0:root:/root:/usr/sbin/nologin\n" : "");
	if (write_file(f, STAGE "/etc/passwd", text) < 0)
		return -1;
	snprintf(text, sizeof(text), "%s:x:%u:\n%snogroup:x:65534:\n",
	         gid ? "dolsot" : "root", gid, gid ? "root:x:0:\n" : "");
	if (write_file(f, STAGE "/etc/group", text) < 0 ||
	    write_file(f, STAGE "/etc/hosts", "127.0.0.1\tlocalhost dolsot\n::1\tlocalhost\n") < 0 ||
	    write_file(f, STAGE "/etc/hostname", "dolsot\n") < 0)
		return -1;
	return write_file(f, STAGE "/etc/nsswitch.conf",
	                  "passwd: files\ngroup: files\nhosts: files\n");
}

static int make_dev(struct sandbox_fs *f)
{
	static const char *const links[][2] = {
		{ "/proc/self/fd", STAGE "/dev/fd" },
		{ "/proc/self/fd/0", STAGE "/dev/stdin" },
		{ "/proc/self/fd/1", STAGE "/dev/stdout" },
		{ "/proc/self/fd/2", STAGE "/dev/stderr" },
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return fail(f, "cannot make the link", links[i][1]);
	return mount_tmpfs(f, STAGE "/dev/shm", f->shm_opts);
}

/* A clone of the staged path, with attrs, moved back over it. */
static int remount_clone(struct sandbox_fs *f, const char *at, unsigned attrs)
{
	struct mount_attr a = { .attr_set = attrs };
	int fd = open_tree(AT_FDCWD, at, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (fd < 0)
		return fail(f, "cannot clone", at);
	if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0 ||
	    move_mount(fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		fail(f, "cannot make read-only", at);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The private /proc, less what a container runtime hides (see proc_ro and
 * proc_masked); entries this kernel lacks are skipped. */
static int mask_proc(struct sandbox_fs *f)
{
	const unsigned ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	                    MOUNT_ATTR_NOEXEC;
	const char *empty = STAGE MASK_DIR "/empty";
	char at[PATH_MAX];
	struct stat st;

	/* The binds keep the tmpfs alive once it is detached. */
	if (mount_tmpfs(f, STAGE MASK_DIR, "size=4k,mode=0555") < 0 ||
	    make_file(f, empty) < 0 || chmod(empty, 0444) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(proc_masked) / sizeof(*proc_masked); i++) {
		staged(at, sizeof(at), proc_masked[i]);
		if (lstat(at, &st) < 0 || S_ISDIR(st.st_mode))
			continue;
		if (mount(empty, at, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID |
		          MS_NODEV | MS_NOEXEC, NULL) < 0)
			return fail(f, "cannot hide", proc_masked[i]);
	}
	if (umount2(STAGE MASK_DIR, MNT_DETACH) < 0 || rmdir(STAGE MASK_DIR) < 0)
		return fail(f, "cannot remove", MASK_DIR);
	for (size_t i = 0; i < sizeof(proc_masked_dirs) / sizeof(*proc_masked_dirs); i++) {
		staged(at, sizeof(at), proc_masked_dirs[i]);
		if (lstat(at, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (mount("tmpfs", at, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		          "size=0,mode=0555") < 0)
			return fail(f, "cannot hide", proc_masked_dirs[i]);
	}
	for (size_t i = 0; i < sizeof(proc_ro) / sizeof(*proc_ro); i++) {
		staged(at, sizeof(at), proc_ro[i]);
		if (lstat(at, &st) < 0)
			continue;
		if (remount_clone(f, at, ro) < 0)
			return -1;
	}
	return 0;
}

/* The caller's directory: made on the root when no bind provides it. */
static int make_cwd(struct sandbox_fs *f)
{
	const char *cwd = f->cfg->cwd;
	char at[PATH_MAX];

	if (!cwd || cwd[0] != '/')
		return 0;
	for (size_t i = 0; i < f->cfg->n_binds; i++)
		if (sandbox_path_under(cwd, f->cfg->binds[i].path))
			return 0;
	for (size_t r = 0; r < sizeof(reserved) / sizeof(*reserved); r++)
		if (sandbox_path_under(cwd, reserved[r]))
			return 0;
	return mkdir_p(f, staged(at, sizeof(at), cwd));
}

static int build(struct sandbox_fs *f)
{
	int n_overlays = 0;

	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m") < 0)
		return fail(f, "cannot mount the root tmpfs on", STAGE);
	if (mkdir_p(f, STAGE "/etc") < 0 || mkdir_p(f, STAGE "/dev") < 0 ||
	    mkdir_p(f, STAGE "/proc") < 0)
		return -1;
	if (mount("proc", STAGE "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(f, "cannot mount", "/proc");
	if (mount_tmpfs(f, STAGE "/tmp", f->tmp_opts) < 0 || make_dev(f) < 0 ||
	    write_etc(f) < 0)
		return -1;
	for (size_t i = 0; i < f->n_src; i++)
		if (place(f, &f->src[i], &n_overlays) < 0)
			return -1;
	if (mask_proc(f) < 0)
		return -1;
	if (make_cwd(f) < 0)
		return -1;
	/* The overlays hold their upper layers; the staging mount can go. */
	if (n_overlays && (umount2(STAGE OVL_DIR, MNT_DETACH) < 0 ||
	                   rmdir(STAGE OVL_DIR) < 0))
		return fail(f, "cannot remove", OVL_DIR);
	return 0;
}

static int pivot(struct sandbox_fs *f)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };

	if (chdir(STAGE) < 0)
		return fail(f, "cannot enter", STAGE);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return fail(f, "cannot pivot_root into", STAGE);
	if (umount2(".", MNT_DETACH) < 0)
		return fail(f, "cannot detach the host's", "/");
	if (chdir("/") < 0)
		return fail(f, "cannot enter", "/");
	if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof(ro)) < 0)
		return fail(f, "cannot make read-only", "/");
	if (!f->cfg->cwd || chdir(f->cfg->cwd) < 0)
		if (chdir("/tmp") < 0)
			return fail(f, "cannot enter", "/tmp");
	return 0;
}

/* tmpfs options: the default size, or less under --memory. */
static void tmpfs_opts(char *buf, size_t len, const char *mode, uint64_t dflt,
                       uint64_t cap)
{
	snprintf(buf, len, "%s%ssize=%llu", mode, *mode ? "," : "",
	         (unsigned long long)(cap && cap < dflt ? cap : dflt));
}

static int take_callers(struct sandbox_fs *f, struct sandbox_ids *ids)
{
	int *fds = calloc(f->n_src + 1, sizeof(*fds));
	size_t n = 0;
	int ret;

	if (!fds) {
		snprintf(f->err, f->errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < f->n_src; i++)
		if (f->src[i].callers && f->src[i].fd >= 0 && f->src[i].mode != MOUNT_RW)
			fds[n++] = f->src[i].fd;
	ret = sandbox_ids_idmap(ids, fds, n, f->err, f->errlen);
	free(fds);
	return ret;
}

struct sandbox_fs *sandbox_fs_take(const struct sandbox_cfg *cfg,
                                   struct sandbox_ids *ids, char *err,
                                   size_t errlen)
{
	size_t max = sizeof(system_dirs) / sizeof(*system_dirs) +
	             sizeof(system_files) / sizeof(*system_files) +
	             sizeof(devices) / sizeof(*devices) + cfg->n_binds;
	struct sandbox_fs *f = calloc(1, sizeof(*f));

	if (f)
		f->src = calloc(max, sizeof(*f->src));
	if (!f || !f->src) {
		free(f);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->cfg = cfg;
	f->err = err;
	f->errlen = errlen;
	f->clone_overlays = ids->helper;
	tmpfs_opts(f->tmp_opts, sizeof(f->tmp_opts), "mode=1777", SANDBOX_TMP_SIZE,
	           cfg->tmpfs_size);
	tmpfs_opts(f->shm_opts, sizeof(f->shm_opts), "mode=1777", SANDBOX_SHM_SIZE,
	           cfg->tmpfs_size);
	tmpfs_opts(f->ovl_opts, sizeof(f->ovl_opts), "", SANDBOX_OVERLAY_SIZE,
	           cfg->tmpfs_size);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fail(f, "cannot make private the mounts of", "/");
		goto fail;
	}
	if (take_all(f) < 0 || take_callers(f, ids) < 0)
		goto fail;
	return f;
fail:
	sandbox_fs_free(f);
	return NULL;
}

int sandbox_fs_build(struct sandbox_fs *f, char *err, size_t errlen)
{
	f->err = err;
	f->errlen = errlen;
	return build(f) < 0 || pivot(f) < 0 ? -1 : 0;
}

void sandbox_fs_free(struct sandbox_fs *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_src; i++)
		if (f->src[i].fd >= 0)
			close(f->src[i].fd);
	free(f->src);
	free(f);
}
