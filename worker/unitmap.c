/*
 * unitmap.c - large units mapped, not read (unitmap.h).
 */
#include "unitmap.h"

#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "pagemap.h"
#include "sha256.h"
#include "stamp.h"
#include "units.h"

#define PM_ENTRIES 4096                 /* pagemap entries read at a time */

struct region {
	PyObject_HEAD
	uint8_t *base;
	size_t len;             /* bytes the buffer holds */
	size_t span;            /* bytes mapped: len rounded up to a page */
	size_t nparts;
	size_t *ends;           /* each file's end, as an offset from base */
	bool readonly;
	PyObject *tag;
	struct region *next;    /* the live regions, for region_of */
};

static struct region *regions;

/* What went wrong mapping one file, raised once the GIL is back. */
struct map_fail {
	int err;                /* an errno; EBADMSG: the bytes are not the unit's */
	char path[PATH_MAX];
};

static size_t page_size(void)
{
	long n = sysconf(_SC_PAGESIZE);

	return n > 0 ? (size_t)n : 4096;
}

/* Whether the file's stamp says its bytes were checked (stamp.h). */
static bool stamped(const char *path, const struct stat *st)
{
	char name[PATH_MAX], text[STAMP_TEXT_MAX];
	ssize_t n = -1;
	int fd;

	if (snprintf(name, sizeof(name), "%s" STAMP_SUFFIX, path) >= (int)sizeof(name))
		return false;
	fd = open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	do
		n = pread(fd, text, sizeof(text), 0);
	while (n < 0 && errno == EINTR);
	close(fd);
	return n > 0 && stamp_matches(text, (size_t)n, st);
}

/* Map the open unit file fd (path, size bytes, named hash) at, checked:
 * 0, an errno, or EBADMSG when its bytes are not the unit's. */
static int map_fd(int fd, const char *path, const uint8_t *hash, size_t size, uint8_t *at,
                  int prot)
{
	uint8_t got[SHA256_LEN];
	struct stat st;

	if (fstat(fd, &st) < 0)
		return errno;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size != size)
		return EBADMSG;
	if (mmap(at, size, prot, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
		return errno;
	if (stamped(path, &st))
		return 0;
	sha256_bytes(at, size, got);
	return memcmp(got, hash, SHA256_LEN) ? EBADMSG : 0;
}

/* Map the unit file path at, checked; -1 with f. */
static int map_one(const char *path, const uint8_t *hash, size_t size, uint8_t *at,
                   int prot, struct map_fail *f)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	snprintf(f->path, sizeof(f->path), "%s", path);
	f->err = fd < 0 ? errno : map_fd(fd, path, hash, size, at, prot);
	if (fd >= 0)
		close(fd);
	return f->err ? -1 : 0;
}

/* A unit's file below the objects directory: "HH/REST" of its hex. */
#define UNIT_NAME_LEN (UNITS_HEX_LEN + 2)
static const char *unit_name(const uint8_t *hash, char name[UNIT_NAME_LEN])
{
	char hex[UNITS_HEX_LEN + 1];

	units_hex(hash, hex);
	snprintf(name, UNIT_NAME_LEN, "%.2s/%s", hex, hex + 2);
	return name;
}

struct part {
	uint8_t hash[UNITS_HASH_LEN];
	size_t size;
};

/* Map parts[0..n) back to back from head bytes into a fresh reservation
 * of span bytes, whose other pages are PROT_NONE, or zeroed and writable
 * when rest_rw; NULL with f. */
static uint8_t *map_parts(const char *dir, const struct part *parts, size_t n, size_t head,
                          size_t span, bool writable, bool rest_rw, struct map_fail *f)
{
	int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
	uint8_t *base = mmap(NULL, span, rest_rw ? PROT_READ | PROT_WRITE : PROT_NONE,
	                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t off = head;

	if (base == MAP_FAILED) {
		f->err = errno;
		snprintf(f->path, sizeof(f->path), "%s", dir);
		return NULL;
	}
	for (size_t i = 0; i < n; off += parts[i++].size) {
		char name[UNIT_NAME_LEN], path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, unit_name(parts[i].hash, name));
		if (map_one(path, parts[i].hash, parts[i].size, base + off, prot, f) < 0) {
			munmap(base, span);
			return NULL;
		}
	}
	return base;
}

/* The refs argument as parts (PyMem); NULL with an exception. */
static struct part *parse_parts(PyObject *refs, size_t *n, size_t *total)
{
	PyObject *seq = PySequence_Fast(refs, "refs must be a sequence");
	size_t page = page_size();
	struct part *parts = NULL;
	Py_ssize_t count;

	if (!seq)
		return NULL;
	count = PySequence_Fast_GET_SIZE(seq);
	parts = count > 0 ? PyMem_Calloc((size_t)count, sizeof(*parts)) : NULL;
	if (!parts) {
		count > 0 ? PyErr_NoMemory() : PyErr_SetString(PyExc_ValueError, "no refs");
		goto fail;
	}
	*total = 0;
	for (Py_ssize_t i = 0; i < count; i++) {
		const char *h;
		Py_ssize_t hlen;
		unsigned long long size;

		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#K", &h, &hlen, &size))
			goto fail;
		if (hlen != UNITS_HASH_LEN || size == 0 || size > SIZE_MAX - *total ||
		    (i + 1 < count && size % page)) {
			PyErr_SetString(PyExc_ValueError, "refs cannot be mapped back to back");
			goto fail;
		}
		memcpy(parts[i].hash, h, UNITS_HASH_LEN);
		parts[i].size = (size_t)size;
		*total += (size_t)size;
	}
	Py_DECREF(seq);
	*n = (size_t)count;
	return parts;
fail:
	PyMem_Free(parts);
	Py_DECREF(seq);
	return NULL;
}

static PyTypeObject region_type;

static PyObject *raise_map_fail(const struct map_fail *f)
{
	const char *slash = strrchr(f->path, '/');

	if (f->err == EBADMSG) {   /* .../HH/REST: the unit's hex is HH + REST */
		char hex[UNITS_HEX_LEN + 1] = "";

		if (slash && slash - f->path >= 2)
			snprintf(hex, sizeof(hex), "%.2s%s", slash - 2, slash + 1);
		return PyErr_Format(PyExc_ValueError, "%s", hex);
	}
	errno = f->err;
	return PyErr_SetFromErrnoWithFilename(PyExc_OSError, f->path);
}

static PyObject *m_map_units(PyObject *self, PyObject *args)
{
	const char *dir;
	PyObject *refs;
	int writable;
	struct part *parts;
	struct map_fail f = { 0, "" };
	struct region *r;
	size_t n = 0, total = 0, span, page = page_size();
	uint8_t *base;

	(void)self;
	if (!PyArg_ParseTuple(args, "sOp", &dir, &refs, &writable))
		return NULL;
	parts = parse_parts(refs, &n, &total);
	if (!parts)
		return NULL;
	span = (total + page - 1) / page * page;
	Py_BEGIN_ALLOW_THREADS
	base = map_parts(dir, parts, n, 0, span, writable, false, &f);
	Py_END_ALLOW_THREADS
	if (!base) {
		PyMem_Free(parts);
		return raise_map_fail(&f);
	}
	r = PyObject_New(struct region, &region_type);
	if (!r || !(r->ends = PyMem_Calloc(n, sizeof(*r->ends)))) {
		munmap(base, span);
		PyMem_Free(parts);
		if (r)
			PyObject_Free(r);
		return r ? PyErr_NoMemory() : NULL;
	}
	for (size_t i = 0, off = 0; i < n; i++)
		r->ends[i] = off += parts[i].size;
	PyMem_Free(parts);
	r->base = base;
	r->len = total;
	r->span = span;
	r->nparts = n;
	r->readonly = !writable;
	r->tag = Py_NewRef(Py_None);
	r->next = regions;
	regions = r;
	return (PyObject *)r;
}

static void region_dealloc(PyObject *o)
{
	struct region *r = (struct region *)o, **p = &regions;

	while (*p && *p != r)
		p = &(*p)->next;
	if (*p)
		*p = r->next;
	munmap(r->base, r->span);
	PyMem_Free(r->ends);
	Py_XDECREF(r->tag);
	PyObject_Free(o);
}

static int region_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
	struct region *r = (struct region *)o;

	return PyBuffer_FillInfo(view, o, r->base, (Py_ssize_t)r->len, r->readonly, flags);
}

/* Whether a pagemap entry is a page of ours: copied on write (or swapped
 * out after), no longer the file's. */
static bool written(uint64_t e)
{
	return (e & (PM_PRESENT | PM_SWAPPED)) && !(e & PM_FILE);
}

/* Mark in dirty[] the parts with a written page, reading pagemap from fd
 * into entries[PM_ENTRIES]. */
static int mark_written(const struct region *r, int fd, uint64_t *entries, bool *dirty)
{
	size_t page = page_size(), pages = r->span / page, first = (uintptr_t)r->base / page;
	size_t part = 0;

	for (size_t at = 0; at < pages; at += PM_ENTRIES) {
		size_t want = pages - at < PM_ENTRIES ? pages - at : PM_ENTRIES;

		if (fd_pread_exact(fd, entries, want * sizeof(*entries),
		                   (uint64_t)(first + at) * sizeof(*entries)) < 0)
			return -1;
		for (size_t k = 0; k < want; k++) {
			size_t off = (at + k) * page;

			while (part + 1 < r->nparts && off >= r->ends[part])
				part++;
			if (written(entries[k]))
				dirty[part] = true;
		}
	}
	return 0;
}

static PyObject *region_dirty(PyObject *o, PyObject *noargs)
{
	struct region *r = (struct region *)o;
	bool *dirty = PyMem_Calloc(r->nparts, sizeof(*dirty));
	PyObject *out = NULL;
	uint64_t *entries;
	int fd, ok = -1;

	(void)noargs;
	if (!dirty)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	entries = malloc(PM_ENTRIES * sizeof(*entries));
	fd = entries ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		ok = mark_written(r, fd, entries, dirty);
		close(fd);
	}
	free(entries);
	Py_END_ALLOW_THREADS
	if (ok < 0) {   /* no pagemap here (a sandbox's /proc): the caller hashes all */
		PyMem_Free(dirty);
		Py_RETURN_NONE;
	}
	out = PyTuple_New((Py_ssize_t)r->nparts);
	for (size_t i = 0; out && i < r->nparts; i++)
		PyTuple_SET_ITEM(out, (Py_ssize_t)i, PyBool_FromLong(dirty[i]));
	PyMem_Free(dirty);
	return out;
}

static PyObject *m_region_of(PyObject *self, PyObject *arg)
{
	Py_buffer view;
	const uint8_t *p;
	size_t n;

	(void)self;
	if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
		return NULL;
	p = view.buf;
	n = (size_t)view.len;
	PyBuffer_Release(&view);
	for (struct region *r = regions; r; r = r->next)
		if (p >= r->base && n <= r->len && (size_t)(p - r->base) <= r->len - n)
			return Py_BuildValue("(On)", (PyObject *)r, (Py_ssize_t)(p - r->base));
	Py_RETURN_NONE;
}

/* The bytes objects map_bytes made: their memory is no allocator's, so
 * that the last reference to one must never reach PyObject_Free.  Each
 * holds one reference of this list's own; release_bytes() unmaps those
 * no one else holds any more, without deallocating them. */
struct mapped_bytes {
	PyObject *obj;
	PyObject *tag;          /* whatever the caller keeps with it */
	uint8_t *base;
	size_t span;
	struct mapped_bytes *next;
};

static struct mapped_bytes *mapped;

static PyObject *m_map_bytes(PyObject *self, PyObject *args)
{
	const char *dir;
	PyObject *refs, *tag;
	struct part *parts;
	struct map_fail f = { 0, "" };
	struct mapped_bytes *m;
	size_t n = 0, total = 0, span, page = page_size(), head = offsetof(PyBytesObject, ob_sval);
	PyBytesObject *op;
	uint8_t *base;

	(void)self;
	if (!PyArg_ParseTuple(args, "sOO", &dir, &refs, &tag))
		return NULL;
	parts = parse_parts(refs, &n, &total);
	if (!parts)
		return NULL;
	if (total > (size_t)PY_SSIZE_T_MAX - page * 2) {
		PyMem_Free(parts);
		return PyErr_NoMemory();
	}
	/* The header on the first page, ending where the pages of the parts
	 * begin; the body's NUL after them, in the part's last page past its
	 * end (zeroes) or in the zeroed page after it. */
	span = page + (total + 1 + page - 1) / page * page;
	m = PyMem_Calloc(1, sizeof(*m));
	if (!m) {
		PyMem_Free(parts);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	base = map_parts(dir, parts, n, page, span, true, true, &f);
	Py_END_ALLOW_THREADS
	PyMem_Free(parts);
	if (!base) {
		PyMem_Free(m);
		return raise_map_fail(&f);
	}
	op = (PyBytesObject *)(void *)(base + page - head);
	PyObject_InitVar((PyVarObject *)op, &PyBytes_Type, (Py_ssize_t)total);
	/* "not hashed yet", as PyBytes_FromStringAndSize leaves it: the field
	 * is deprecated to read, but bytes' hash still caches in it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	op->ob_shash = -1;
#pragma GCC diagnostic pop
	*m = (struct mapped_bytes){ (PyObject *)op, Py_NewRef(tag), base, span, mapped };
	mapped = m;
	return Py_NewRef((PyObject *)op);
}

static PyObject *m_release_bytes(PyObject *self, PyObject *noargs)
{
	struct mapped_bytes **p = &mapped;
	long released = 0;

	(void)self;
	(void)noargs;
	while (*p) {
		struct mapped_bytes *m = *p;

		if (Py_REFCNT(m->obj) > 1) {
			p = &m->next;
			continue;
		}
		*p = m->next;
		munmap(m->base, m->span);
		Py_DECREF(m->tag);
		PyMem_Free(m);
		released++;
	}
	return PyLong_FromLong(released);
}

static PyObject *m_bytes_tag(PyObject *self, PyObject *obj)
{
	(void)self;
	for (const struct mapped_bytes *m = mapped; m; m = m->next)
		if (m->obj == obj)
			return Py_NewRef(m->tag);
	Py_RETURN_NONE;
}

static PyBufferProcs region_as_buffer = { region_getbuffer, NULL };

static PyMemberDef region_members[] = {
	{ "tag", T_OBJECT, offsetof(struct region, tag), 0,
	  "Whatever the caller keeps with the region." },
	{ "nbytes", T_PYSSIZET, offsetof(struct region, len), READONLY,
	  "The bytes the buffer holds." },
	{ NULL, 0, 0, 0, NULL },
};

static PyMethodDef region_methods[] = {
	{ "dirty", region_dirty, METH_NOARGS,
	  "Per mapped file, whether the cell wrote to it; None if unknown." },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject region_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_dolsot.Region",
	.tp_basicsize = sizeof(struct region),
	.tp_dealloc = region_dealloc,
	.tp_as_buffer = &region_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Unit files mapped back to back, copy on write (unitmap.h).",
	.tp_members = region_members,
	.tp_methods = region_methods,
};

/* Whether the unit file of (hash, size) is in dirfd with that size. */
static bool unit_file_present(int dirfd, const char *hash, unsigned long long size)
{
	char name[UNIT_NAME_LEN];
	struct stat st;

	return fstatat(dirfd, unit_name((const uint8_t *)hash, name), &st,
	               AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && (unsigned long long)st.st_size == size;
}

/* units_present(dir, refs): whether every (hash, size) of refs is a file
 * of that size in dir, as one stat each (none read). */
static PyObject *m_units_present(PyObject *self, PyObject *args)
{
	const char *dir;
	PyObject *refs, *seq;
	bool all = true;
	int dirfd;

	(void)self;
	if (!PyArg_ParseTuple(args, "sO", &dir, &refs) ||
	    !(seq = PySequence_Fast(refs, "refs must be a sequence")))
		return NULL;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		all = false;
	for (Py_ssize_t i = 0; all && i < PySequence_Fast_GET_SIZE(seq); i++) {
		const char *hash;
		Py_ssize_t hlen;
		unsigned long long size;

		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#K", &hash, &hlen, &size)) {
			fd_close(&dirfd);
			Py_DECREF(seq);
			return NULL;
		}
		all = hlen == UNITS_HASH_LEN && unit_file_present(dirfd, hash, size);
	}
	fd_close(&dirfd);
	Py_DECREF(seq);
	return PyBool_FromLong(all);
}

static PyMethodDef unitmap_methods[] = {
	{ "map_units", m_map_units, METH_VARARGS,
	  "Map unit files back to back, checked; see unitmap.h." },
	{ "region_of", m_region_of, METH_O,
	  "The Region a buffer lies in and its offset there, or None." },
	{ "map_bytes", m_map_bytes, METH_VARARGS,
	  "A bytes object whose body is unit files mapped back to back." },
	{ "release_bytes", m_release_bytes, METH_NOARGS,
	  "Unmap the mapped bytes objects no one holds; how many." },
	{ "units_present", m_units_present, METH_VARARGS,
	  "Whether every (hash, size) ref is a unit file of that size in a directory." },
	{ "bytes_tag", m_bytes_tag, METH_O,
	  "The tag map_bytes kept with a bytes object it made, or None." },
	{ NULL, NULL, 0, NULL },
};

int unitmap_add(PyObject *m)
{
	if (PyType_Ready(&region_type) < 0)
		return -1;
	Py_INCREF(&region_type);
	if (PyModule_AddObject(m, "Region", (PyObject *)&region_type) < 0) {
		Py_DECREF(&region_type);
		return -1;
	}
	return PyModule_AddFunctions(m, unitmap_methods);
}
