/*
 * warm_proto.c - the warm path's protocol: socket, exe identity, the
 * zygote key in both directions.  The decoders read what other processes
 * of the same user wrote; they are fuzzed by fuzz/fuzz_warm_key.c.
 */
#include "warm_proto.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "le.h"
#include "wire.h"

#define COUNT(a) (sizeof(a) / sizeof(*(a)))
#define PRELOAD "preload"
#define PRELOAD_TAG PRELOAD "="
#define PRELOAD_TAG_LEN (sizeof(PRELOAD_TAG) - 1)

static int warm_proto_connect_flags(int dirfd, int flags);

/* The bytes of our own NT_GNU_BUILD_ID note: the first object
 * dl_iterate_phdr reports is the program itself. */
struct build_note {
	const uint8_t *id;
	size_t len;
};

static int find_build_note(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build_note *b = data;

	(void)size;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
			size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
			const uint8_t *d = p + sizeof(*n) + name;

			if (d + desc > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(p + sizeof(*n), "GNU", 4) == 0 && n->n_descsz > 0) {
				b->id = d;
				b->len = n->n_descsz;
				return 1;
			}
			p = d + desc;
		}
	}
	return 1;   /* only the program itself */
}

/* Without a build id (linked with --build-id=none): the file's identity. */
static uint64_t file_identity(void)
{
	struct stat st;
	uint8_t parts[5 * 8];
	int fd, got;

	/* open+fstat, not stat: tools such as valgrind show the program they
	 * run through an open of /proc/self/exe, while stat sees the tool. */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = fstat(fd, &st);
	close(fd);
	if (got < 0)
		return 0;
	le_put_u64(parts, st.st_dev);
	le_put_u64(parts + 8, st.st_ino);
	le_put_u64(parts + 16, (uint64_t)st.st_size);
	le_put_u64(parts + 24, (uint64_t)st.st_mtim.tv_sec);
	le_put_u64(parts + 32, (uint64_t)st.st_mtim.tv_nsec);
	return le_fnv(LE_FNV_BASIS, parts, sizeof(parts));
}

/*
 * The build's identity is its content: the linker's build id (a hash of
 * the linked bytes, -Wl,--build-id=sha1) read from our own mapped note,
 * so a byte-identical copy at another path is the same build (issue 21).
 * It costs a walk of our program headers, once per process.
 */
uint64_t warm_proto_exe_id(void)
{
	static uint64_t id;
	struct build_note b = { NULL, 0 };

	if (id)
		return id;
	dl_iterate_phdr(find_build_note, &b);
	id = b.id ? le_fnv(LE_FNV_BASIS, b.id, b.len) : file_identity();
	return id;
}

void warm_proto_socket_path(int dirfd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d/" WARM_SOCKET, dirfd);
}

int warm_proto_connect(int dirfd)
{
	return warm_proto_connect_flags(dirfd, 0);
}

int warm_proto_connect_nonblock(int dirfd)
{
	return warm_proto_connect_flags(dirfd, SOCK_NONBLOCK);
}

static int warm_proto_connect_flags(int dirfd, int flags)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0), e;

	if (fd < 0)
		return -1;
	warm_proto_socket_path(dirfd, addr.sun_path, sizeof(addr.sun_path));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int warm_key_encode(const struct warm_key *k, uint8_t *buf, size_t *len)
{
	*len = 0;
	if (wire_put(buf, len, "cwd", k->cwd) < 0 ||
	    wire_put(buf, len, "pythonpath", k->pythonpath) < 0 ||
	    wire_put(buf, len, "venv", k->venv) < 0)
		return -1;
	for (size_t i = 0; i < k->n_modules; i++)
		if (wire_put(buf, len, "toolbox", k->modules[i]) < 0)
			return -1;
	for (size_t i = 0; i < k->n_env; i++)
		if (wire_put(buf, len, "env", k->env[i]) < 0)
			return -1;
	for (size_t i = 0; i < k->n_preload; i++)
		if (wire_put(buf, len, PRELOAD, k->preload[i]) < 0)
			return -1;
	return 0;
}

void warm_key_decode(const uint8_t *payload, size_t len, struct warm_key *k)
{
	size_t pos = 0;
	const char *v;

	memset(k, 0, sizeof(*k));
	k->cwd = wire_next(payload, len, "cwd", &pos);
	pos = 0;
	k->pythonpath = wire_next(payload, len, "pythonpath", &pos);
	pos = 0;
	k->venv = wire_next(payload, len, "venv", &pos);
	pos = 0;
	while (k->n_modules < COUNT(k->modules) &&
	       (v = wire_next(payload, len, "toolbox", &pos)))
		k->modules[k->n_modules++] = v;
	pos = 0;
	while (k->n_env < COUNT(k->env) && (v = wire_next(payload, len, "env", &pos)))
		k->env[k->n_env++] = v;
	pos = 0;
	while (k->n_preload < COUNT(k->preload) &&
	       (v = wire_next(payload, len, PRELOAD, &pos)))
		k->preload[k->n_preload++] = v;
	if (!k->cwd)
		k->cwd = "/";
	if (!k->pythonpath)
		k->pythonpath = "";
	if (!k->venv)
		k->venv = "";
}

/* The entry at off (NUL-terminated inside payload) is a preload entry. */
static bool is_preload(const uint8_t *payload, size_t len, size_t off)
{
	return len - off > PRELOAD_TAG_LEN &&
	       memcmp(payload + off, PRELOAD_TAG, PRELOAD_TAG_LEN) == 0;
}

/* The length of the entry at off, its NUL included; 0 when the payload
 * ends before the entry does. */
static size_t entry_len(const uint8_t *payload, size_t len, size_t off)
{
	size_t n = strnlen((const char *)payload + off, len - off);

	return n < len - off ? n + 1 : 0;
}

long warm_key_base_len(const uint8_t *payload, size_t len)
{
	size_t off = 0, base = len;

	while (off < len) {
		size_t n = entry_len(payload, len, off);

		if (!n)
			break;   /* an unterminated tail: not an entry (wire_next agrees) */
		if (is_preload(payload, len, off)) {
			if (base == len)
				base = off;
		} else if (base != len) {
			return -1;
		}
		off += n;
	}
	return (long)base;
}

/* The next preload entry's module at or after *off, or NULL. */
static const char *next_preload(const uint8_t *payload, size_t len, size_t *off)
{
	while (*off < len) {
		size_t at = *off, n = entry_len(payload, len, at);

		if (!n)
			return NULL;
		*off += n;
		if (is_preload(payload, len, at))
			return (const char *)payload + at + PRELOAD_TAG_LEN;
	}
	return NULL;
}

bool warm_key_within(const uint8_t *have, size_t have_len, const uint8_t *want,
                     size_t want_len, size_t *n_have)
{
	long hb = warm_key_base_len(have, have_len), wb = warm_key_base_len(want, want_len);
	size_t hp, wp;
	const char *h, *w = NULL, *prev = NULL;

	*n_have = 0;
	if (hb < 0 || wb < 0 || hb != wb || memcmp(have, want, (size_t)hb) != 0)
		return false;
	hp = wp = (size_t)hb;
	/* A merge of two sorted lists: each of have's is found in want's. */
	while ((h = next_preload(have, have_len, &hp))) {
		if (prev && strcmp(prev, h) >= 0)
			return false;
		prev = h;
		while ((w = next_preload(want, want_len, &wp)) && strcmp(w, h) < 0)
			;
		if (!w || strcmp(w, h) != 0)
			return false;
		(*n_have)++;
	}
	return true;
}

size_t warm_key_covered(const uint8_t *want, size_t want_len, const uint8_t *ready,
                        size_t ready_len)
{
	long base = warm_key_base_len(want, want_len);
	size_t wp, rp = 0, n = 0;
	const char *w, *r = wire_next(ready, ready_len, WARM_READY_MODULE, &rp);

	if (base < 0)
		return 0;
	wp = (size_t)base;
	while ((w = next_preload(want, want_len, &wp))) {
		while (r && strcmp(r, w) < 0)
			r = wire_next(ready, ready_len, WARM_READY_MODULE, &rp);
		if (!r)
			break;
		n += strcmp(r, w) == 0;
	}
	return n;
}

size_t warm_key_drop(uint8_t *payload, size_t len,
                     bool (*drop)(const char *name, void *ctx), void *ctx)
{
	long base = warm_key_base_len(payload, len);
	size_t from, to;

	if (base < 0)
		return len;
	from = to = (size_t)base;
	while (from < len) {
		size_t n = entry_len(payload, len, from);

		if (!n)
			break;
		if (!drop((const char *)payload + from + PRELOAD_TAG_LEN, ctx)) {
			memmove(payload + to, payload + from, n);
			to += n;
		}
		from += n;
	}
	memmove(payload + to, payload + from, len - from);   /* an unterminated tail */
	return to + (len - from);
}

/* A whole decimal number, optionally negative, that fits a long long. */
static int parse_ll(const char *s, const char *end, long long *out)
{
	char *stop;

	if (s == end || !((*s >= '0' && *s <= '9') || (*s == '-' && s + 1 < end)))
		return -1;
	errno = 0;
	*out = strtoll(s, &stop, 10);
	return errno == 0 && stop == end ? 0 : -1;
}

int warm_key_file(const char *entry, char *path, size_t pathlen,
                  long long *mtime_ns, long long *size)
{
	const char *end = entry + strlen(entry);
	const char *t2 = strrchr(entry, '\t'), *t1;

	/* From the right: the numbers have no tabs, a path may. */
	if (!t2 || t2 == entry)
		return -1;
	for (t1 = t2 - 1; t1 > entry && *t1 != '\t'; t1--)
		;
	if (*t1 != '\t' || t1 == entry || (size_t)(t1 - entry) >= pathlen)
		return -1;
	if (parse_ll(t1 + 1, t2, mtime_ns) < 0 || parse_ll(t2 + 1, end, size) < 0)
		return -1;
	memcpy(path, entry, (size_t)(t1 - entry));
	path[t1 - entry] = '\0';
	return 0;
}
