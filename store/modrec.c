/*
 * modrec.c - reading a session blob's module record (modrec.h).
 */
#include "modrec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fdio.h"
#include "le.h"

static const char magic_v3[] = "DLSS\003";
static const char magic_v4[] = "DLSS\004";   /* the record where v3 has it (units.h) */
#define MAGIC_LEN 5
#define INDEX_HEAD 8    /* the index's length */
#define RECORD_HEAD 4   /* the record's length */

/* Exactly len bytes at off, or -1: EINVAL when the blob ends first or
 * off is past any blob, else what pread said. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	if (fd_pread_exact(fd, buf, len, off) == 0)
		return 0;
	if (errno == ENODATA || errno == EOVERFLOW)
		errno = EINVAL;
	return -1;
}

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

/* A dotted identifier: parts of [A-Za-z_][A-Za-z0-9_]*, none empty. */
static bool module_name(const char *s)
{
	bool start = true;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s == '.' && !start)
			start = true;
		else if (start ? ident_start(*s) : ident_char(*s))
			start = false;
		else
			return false;
	}
	return !start;
}

/* r->text, len bytes of newline-terminated names, split and checked. */
static int split_names(struct modrec *r, size_t len)
{
	char *line = r->text;

	r->text[len] = '\0';
	if (memchr(r->text, '\0', len))
		return -1;
	while (line < r->text + len) {
		char *nl = memchr(line, '\n', (size_t)(r->text + len - line));

		if (!nl || r->n == MODREC_MAX_MODULES)
			return -1;
		*nl = '\0';
		if (!module_name(line) || (r->n && strcmp(r->names[r->n - 1], line) >= 0))
			return -1;
		r->names[r->n++] = line;
		line = nl + 1;
	}
	return 0;
}

int modrec_read(int fd, struct modrec *r)
{
	uint8_t head[MAGIC_LEN + INDEX_HEAD], size[RECORD_HEAD];
	uint64_t at;
	uint32_t len;

	r->n = 0;
	r->text[0] = '\0';
	if (read_at(fd, head, MAGIC_LEN, 0) < 0)
		return errno == EINVAL ? 0 : -1;   /* shorter than any magic */
	if (memcmp(head, magic_v3, MAGIC_LEN) != 0 && memcmp(head, magic_v4, MAGIC_LEN) != 0)
		return 0;
	if (read_at(fd, head + MAGIC_LEN, INDEX_HEAD, MAGIC_LEN) < 0)
		return -1;
	at = le_get_u64(head + MAGIC_LEN);
	if (at > (uint64_t)INT64_MAX - sizeof(head)) {
		errno = EINVAL;
		return -1;
	}
	at += sizeof(head);
	if (read_at(fd, size, sizeof(size), at) < 0)
		return -1;
	len = le_get_u32(size);
	if (len > MODREC_MAX_BYTES) {
		errno = EINVAL;
		return -1;
	}
	if (read_at(fd, r->text, len, at + RECORD_HEAD) < 0)
		return -1;
	if (split_names(r, len) < 0) {
		r->n = 0;
		errno = EINVAL;
		return -1;
	}
	return 1;
}
