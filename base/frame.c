/*
 * frame.c - encode and decode the parent<->worker frames of frame.h.
 *
 * Both directions are driven by one field table per kind, so a tag, its name
 * in messages and the struct member it fills are written down once.
 *
 * The decoder MUST treat every byte as hostile: lengths are compared against
 * what is left before any addition, so no header can wrap a size_t.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "le.h"

#define FIELD_HEADER_LEN 10	/* tag u16 + len u64 */
#define SCALAR_LEN 8

/*
 * Tag numbers.  Request tags live in 0x01xx and result tags in 0x02xx, so a
 * frame of one kind whose header was mislabelled as the other still fails on
 * its first field.  Numbers are part of the wire format: never reuse one.
 */
enum frame_tag {
	FT_REQ_CODE = 0x0101,
	FT_REQ_SESSION = 0x0102,
	/* 0x0103 was the inline session blob: retired. */
	FT_TOOLBOX = 0x0104,		/* module NUL alias; may repeat */
	FT_REQ_MAX_OUTPUT = 0x0105,
	FT_REQ_BUDGET_NS = 0x0106,
	FT_REQ_FLAGS = 0x0107,
	FT_REQ_TY_BIN = 0x0108,
	/* 0x0109-0x010d were the five limits, one field each: retired. */
	FT_REQ_BINDS = 0x010e,		/* host NUL path NUL mode NUL, repeated */
	FT_REQ_PIDS_CGROUP = 0x010f,
	FT_REQ_MEM_CGROUP = 0x0110,
	FT_REQ_LIMITS = 0x0111,		/* name NUL value u64, per limit set */
	FT_REQ_CHECKD = 0x0112,
	FT_REQ_ENV = 0x0120,		/* NAME=VALUE entries, NUL-separated */
	FT_REQ_CWD = 0x0121,
	FT_REQ_BLOB_LEN = 0x0122,
	FT_REQ_DESCRIBE = 0x0130,
	FT_REQ_UNITS = 0x0131,
	FT_REQ_TOOLS = 0x0132,		/* the host tools' declarations (JSON) */		/* where the session's units are (session.py) */

	FT_RES_EXIT_CODE = 0x0201,	/* u64, two's complement of int64 */
	FT_RES_FLAGS = 0x0202,
	FT_RES_VALUE = 0x0203,
	FT_RES_ERROR = 0x0204,
	FT_RES_HELD = 0x0205,
	FT_RES_DROPPED = 0x0206,
	FT_RES_WARNINGS = 0x0207,
	/* 0x0208 was the inline session blob: retired. */
	FT_RES_LIMIT = 0x0209,
	FT_RES_BLOB_LEN = 0x020a,
	FT_RES_SAVE_ERRNO = 0x020b,
	FT_RES_COUNT = 0x0220,
	FT_RES_ERROR_INFO = 0x0221,
	FT_RES_HINTS = 0x0222,
	FT_RES_DIAGNOSTICS = 0x0223,
	FT_RES_DISPLAYS = 0x0224,
	FT_RES_TIMINGS = 0x0225,
	FT_RES_TRUNCATED = 0x0226,
	FT_RES_DESCRIBE = 0x0227,
	FT_RES_DESCRIBE_JSON = 0x0228,
	FT_RES_KEPT = 0x020c,
};

enum field_type {
	FIELD_BYTES,		/* struct span at off */
	FIELD_BINDS,		/* struct span at off, checked as binds */
	FIELD_U64,		/* uint64_t at off */
	FIELD_I64,		/* int64_t at off */
	FIELD_TOOLBOX,		/* struct request's toolbox array */
	FIELD_LIMITS,		/* struct limits at off, keyed by limit_name */
};

struct field_desc {
	uint16_t tag;
	enum field_type type;
	bool required;
	size_t off;
	const char *name;
};

struct kind_desc {
	enum frame_kind kind;
	const char *name;
	const struct field_desc *fields;
	size_t n_fields;
};

static const struct field_desc request_fields[] = {
	{ FT_REQ_CODE, FIELD_BYTES, true,
	  offsetof(struct request, code), "code" },
	{ FT_REQ_SESSION, FIELD_BYTES, true,
	  offsetof(struct request, session), "session" },
	{ FT_REQ_BLOB_LEN, FIELD_U64, false,
	  offsetof(struct request, blob_len), "blob_len" },
	{ FT_TOOLBOX, FIELD_TOOLBOX, false, 0, "toolbox" },
	{ FT_REQ_MAX_OUTPUT, FIELD_U64, false,
	  offsetof(struct request, max_output), "max_output" },
	{ FT_REQ_BUDGET_NS, FIELD_U64, false,
	  offsetof(struct request, budget_ns), "budget_ns" },
	{ FT_REQ_FLAGS, FIELD_U64, false,
	  offsetof(struct request, flags), "flags" },
	{ FT_REQ_ENV, FIELD_BYTES, false,
	  offsetof(struct request, env), "env" },
	{ FT_REQ_CWD, FIELD_BYTES, false,
	  offsetof(struct request, cwd), "cwd" },
	{ FT_REQ_TY_BIN, FIELD_BYTES, false,
	  offsetof(struct request, ty_bin), "ty_bin" },
	{ FT_REQ_LIMITS, FIELD_LIMITS, false,
	  offsetof(struct request, limits), "limits" },
	{ FT_REQ_BINDS, FIELD_BINDS, false,
	  offsetof(struct request, binds), "binds" },
	{ FT_REQ_PIDS_CGROUP, FIELD_BYTES, false,
	  offsetof(struct request, pids_cgroup), "pids_cgroup" },
	{ FT_REQ_MEM_CGROUP, FIELD_BYTES, false,
	  offsetof(struct request, mem_cgroup), "mem_cgroup" },
	{ FT_REQ_DESCRIBE, FIELD_BYTES, false,
	  offsetof(struct request, describe), "describe" },
	{ FT_REQ_CHECKD, FIELD_BYTES, false,
	  offsetof(struct request, checkd), "checkd" },
	{ FT_REQ_UNITS, FIELD_BYTES, false,
	  offsetof(struct request, units), "units" },
	{ FT_REQ_TOOLS, FIELD_BYTES, false,
	  offsetof(struct request, tools), "tools" },
};

static const struct field_desc result_fields[] = {
	{ FT_RES_EXIT_CODE, FIELD_I64, true,
	  offsetof(struct worker_result, exit_code), "exit_code" },
	{ FT_RES_FLAGS, FIELD_U64, true,
	  offsetof(struct worker_result, flags), "flags" },
	{ FT_RES_VALUE, FIELD_BYTES, false,
	  offsetof(struct worker_result, value), "value" },
	{ FT_RES_ERROR, FIELD_BYTES, false,
	  offsetof(struct worker_result, error), "error" },
	{ FT_RES_HELD, FIELD_BYTES, false,
	  offsetof(struct worker_result, held), "held" },
	{ FT_RES_DROPPED, FIELD_BYTES, false,
	  offsetof(struct worker_result, dropped), "dropped" },
	{ FT_RES_WARNINGS, FIELD_BYTES, false,
	  offsetof(struct worker_result, warnings), "warnings" },
	{ FT_RES_BLOB_LEN, FIELD_U64, false,
	  offsetof(struct worker_result, blob_len), "blob_len" },
	{ FT_RES_SAVE_ERRNO, FIELD_U64, false,
	  offsetof(struct worker_result, save_errno), "save_errno" },
	{ FT_RES_LIMIT, FIELD_BYTES, false,
	  offsetof(struct worker_result, limit), "limit" },
	{ FT_RES_COUNT, FIELD_U64, false,
	  offsetof(struct worker_result, count), "count" },
	{ FT_RES_ERROR_INFO, FIELD_BYTES, false,
	  offsetof(struct worker_result, error_info), "error_info" },
	{ FT_RES_HINTS, FIELD_BYTES, false,
	  offsetof(struct worker_result, hints), "hints" },
	{ FT_RES_DIAGNOSTICS, FIELD_BYTES, false,
	  offsetof(struct worker_result, diagnostics), "diagnostics" },
	{ FT_RES_DISPLAYS, FIELD_BYTES, false,
	  offsetof(struct worker_result, displays), "displays" },
	{ FT_RES_TIMINGS, FIELD_BYTES, false,
	  offsetof(struct worker_result, timings), "timings" },
	{ FT_RES_TRUNCATED, FIELD_BYTES, false,
	  offsetof(struct worker_result, truncated), "truncated" },
	{ FT_RES_DESCRIBE, FIELD_BYTES, false,
	  offsetof(struct worker_result, describe), "describe" },
	{ FT_RES_DESCRIBE_JSON, FIELD_BYTES, false,
	  offsetof(struct worker_result, describe_json), "describe_json" },
	{ FT_RES_KEPT, FIELD_BYTES, false,
	  offsetof(struct worker_result, kept), "kept" },
};

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

struct span *frame_result_text(struct worker_result *r, size_t i, const char **name)
{
	for (size_t f = 0; f < N_ELEMS(result_fields); f++) {
		if (result_fields[f].type != FIELD_BYTES || i-- > 0)
			continue;
		*name = result_fields[f].name;
		return (struct span *)((char *)r + result_fields[f].off);
	}
	return NULL;
}

static const struct kind_desc request_kind = {
	FRAME_REQUEST, "request", request_fields, N_ELEMS(request_fields),
};

static const struct kind_desc result_kind = {
	FRAME_RESULT, "result", result_fields, N_ELEMS(result_fields),
};

/* Converting an out-of-range uint64_t to int64_t is implementation-defined. */
static int64_t u64_to_i64(uint64_t v)
{
	if (v <= INT64_MAX)
		return (int64_t)v;
	return -(int64_t)(~v) - 1;
}

static const struct span *field_span(const void *obj,
                                     const struct field_desc *f)
{
	return (const struct span *)((const char *)obj + f->off);
}

static uint64_t field_scalar(const void *obj, const struct field_desc *f)
{
	const char *p = (const char *)obj + f->off;

	if (f->type == FIELD_I64)
		return (uint64_t)*(const int64_t *)p;
	return *(const uint64_t *)p;
}

static const struct limits *field_limits(const void *obj,
                                         const struct field_desc *f)
{
	return (const struct limits *)((const char *)obj + f->off);
}

/* Bytes of the limits field: name NUL value for each limit set. */
static uint64_t limits_len(const struct limits *l)
{
	uint64_t n = 0;

	for (int k = 0; k < LIMIT_COUNT; k++)
		if (l->v[k])
			n += strlen(limit_name((enum limit_kind)k)) + 1 + SCALAR_LEN;
	return n;
}

/* ---- lists of NUL-terminated items ---- */

bool span_next_item(struct span *rest, struct span *item)
{
	const uint8_t *nul;

	if (!rest->present || rest->len == 0)
		return false;
	nul = memchr(rest->p, '\0', rest->len);
	if (!nul)
		return false;
	*item = (struct span){ rest->p, (size_t)(nul - rest->p), true };
	rest->p = nul + 1;
	rest->len -= item->len + 1;
	return true;
}

static bool span_is(struct span s, const char *text)
{
	return s.len == strlen(text) && memcmp(s.p, text, s.len) == 0;
}

/* NULL when p[0..len) is a valid list of binds, else why not. */
static const char *binds_problem(const uint8_t *p, size_t len)
{
	struct span rest = { p, len, true }, item;
	size_t n = 0;

	if (len && p[len - 1] != '\0')
		return "does not end with a nul";
	while (span_next_item(&rest, &item)) {
		if (n % 3 == 2) {
			if (!span_is(item, "ro") && !span_is(item, "rw") &&
			    !span_is(item, "overlay"))
				return "has a mode other than ro, rw or overlay";
		} else if (item.len == 0 || item.p[0] != '/') {
			return "has a path that is not absolute";
		}
		n++;
	}
	if (n % 3)
		return "does not hold whole host, path, mode triples";
	return NULL;
}

/* ---- encoding ---- */

static int toolbox_part_ok(struct span s)
{
	return s.len > 0 && s.p && !memchr(s.p, '\0', s.len);
}

/* Refuse to send what the decoder would reject, so bugs show at the sender. */
static int check_request(const struct request *r)
{
	if (!r->code.present || !r->session.present)
		return -1;
	if (r->n_toolboxes > FRAME_MAX_TOOLBOXES)
		return -1;
	for (size_t i = 0; i < r->n_toolboxes; i++) {
		if (!toolbox_part_ok(r->toolboxes[i].module) ||
		    !toolbox_part_ok(r->toolboxes[i].alias))
			return -1;
	}
	if (r->binds.present && binds_problem(r->binds.p, r->binds.len))
		return -1;
	if (!(r->flags & REQ_SESSION) && r->blob_len)
		return -1;
	return 0;
}

static int check_result(const struct worker_result *res)
{
	bool save = res->flags & RES_SAVE;

	return save == (res->blob_len != 0) ? 0 : -1;
}

static size_t field_count(const void *obj, const struct field_desc *f)
{
	switch (f->type) {
	case FIELD_BYTES:
	case FIELD_BINDS:
		return field_span(obj, f)->present;
	case FIELD_TOOLBOX:
		return ((const struct request *)obj)->n_toolboxes;
	case FIELD_LIMITS:
		return limits_len(field_limits(obj, f)) != 0;
	case FIELD_U64:
	case FIELD_I64:
		/* An optional scalar of 0 is left out: absent decodes as 0. */
		return f->required || field_scalar(obj, f) != 0;
	default:
		abort();
	}
}

static uint64_t field_data_len(const void *obj, const struct field_desc *f,
                               size_t i)
{
	const struct toolbox_spec *tb;

	switch (f->type) {
	case FIELD_BYTES:
	case FIELD_BINDS:
		return field_span(obj, f)->len;
	case FIELD_TOOLBOX:
		tb = &((const struct request *)obj)->toolboxes[i];
		return (uint64_t)tb->module.len + 1 + tb->alias.len;
	case FIELD_LIMITS:
		return limits_len(field_limits(obj, f));
	case FIELD_U64:
	case FIELD_I64:
		return SCALAR_LEN;
	default:
		abort();
	}
}

/*
 * Every span is a size_t, so one can exceed FRAME_MAX only on its own; once
 * each is capped, a sum over a few hundred fields cannot wrap a uint64_t.
 */
static int frame_size(const void *obj, const struct kind_desc *k,
                      uint64_t *total)
{
	uint64_t sum = FRAME_HEADER_LEN;

	for (size_t fi = 0; fi < k->n_fields; fi++) {
		const struct field_desc *f = &k->fields[fi];
		size_t n = field_count(obj, f);

		for (size_t i = 0; i < n; i++) {
			uint64_t dl = field_data_len(obj, f, i);

			if (dl > FRAME_MAX)
				return -1;
			sum += FIELD_HEADER_LEN + dl;
		}
	}
	if (sum > FRAME_MAX)
		return -1;
	*total = sum;
	return 0;
}

static int buf_reserve(struct frame_buf *buf, uint64_t extra)
{
	size_t need, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - buf->len) {
		errno = ENOMEM;
		return -1;
	}
	need = buf->len + (size_t)extra;
	if (need <= buf->cap)
		return 0;
	cap = buf->cap > SIZE_MAX / 2 ? SIZE_MAX : buf->cap * 2;
	if (cap < need)
		cap = need;
	p = realloc(buf->data, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	buf->data = p;
	buf->cap = cap;
	return 0;
}

static uint8_t *put_field_header(uint8_t *w, uint16_t tag, uint64_t len)
{
	le_put_u16(w, tag);
	le_put_u64(w + 2, len);
	return w + FIELD_HEADER_LEN;
}

static uint8_t *put_bytes(uint8_t *w, struct span s)
{
	if (s.len)
		memcpy(w, s.p, s.len);
	return w + s.len;
}

static uint8_t *put_limits(uint8_t *w, const struct limits *l)
{
	for (int k = 0; k < LIMIT_COUNT; k++) {
		const char *name = limit_name((enum limit_kind)k);
		size_t n = strlen(name) + 1;

		if (!l->v[k])
			continue;
		memcpy(w, name, n);
		le_put_u64(w + n, l->v[k]);
		w += n + SCALAR_LEN;
	}
	return w;
}

static uint8_t *put_field(uint8_t *w, const void *obj,
                          const struct field_desc *f, size_t i)
{
	const struct toolbox_spec *tb;

	w = put_field_header(w, f->tag, field_data_len(obj, f, i));
	switch (f->type) {
	case FIELD_BYTES:
	case FIELD_BINDS:
		return put_bytes(w, *field_span(obj, f));
	case FIELD_TOOLBOX:
		tb = &((const struct request *)obj)->toolboxes[i];
		w = put_bytes(w, tb->module);
		*w++ = '\0';
		return put_bytes(w, tb->alias);
	case FIELD_LIMITS:
		return put_limits(w, field_limits(obj, f));
	case FIELD_U64:
	case FIELD_I64:
		le_put_u64(w, field_scalar(obj, f));
		return w + SCALAR_LEN;
	default:
		abort();
	}
}

/* The size is known up front, so the buffer grows once and never partially. */
static int encode(struct frame_buf *buf, const void *obj,
                  const struct kind_desc *k)
{
	uint64_t total;
	uint8_t *w;

	if (frame_size(obj, k, &total) < 0) {
		errno = EMSGSIZE;
		return -1;
	}
	if (buf_reserve(buf, total) < 0)
		return -1;
	w = buf->data + buf->len;
	memcpy(w, FRAME_MAGIC, 4);
	le_put_u32(w + 4, k->kind);
	le_put_u64(w + 8, total - FRAME_HEADER_LEN);
	w += FRAME_HEADER_LEN;
	for (size_t fi = 0; fi < k->n_fields; fi++) {
		const struct field_desc *f = &k->fields[fi];
		size_t n = field_count(obj, f);

		for (size_t i = 0; i < n; i++)
			w = put_field(w, obj, f, i);
	}
	buf->len += (size_t)total;
	return 0;
}

/*
 * Besides the errnos of frame.h, EINVAL means r breaks a rule the decoder
 * enforces (missing code or session, bad toolbox, too many toolboxes).
 */
int frame_encode_request(struct frame_buf *buf, const struct request *r)
{
	if (check_request(r) < 0) {
		errno = EINVAL;
		return -1;
	}
	return encode(buf, r, &request_kind);
}

/* EINVAL: RES_SAVE without a blob length, or one without RES_SAVE. */
int frame_encode_result(struct frame_buf *buf, const struct worker_result *res)
{
	if (check_result(res) < 0) {
		errno = EINVAL;
		return -1;
	}
	return encode(buf, res, &result_kind);
}

/* ---- decoding ---- */

struct decoder {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	const struct kind_desc *k;
	void *out;
	uint32_t seen;		/* bit i: k->fields[i] was decoded */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct decoder *d, const char *fmt, ...)
{
	va_list ap;

	if (!d->err || !d->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(d->err, d->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case FRAME_REQUEST:
		return "request";
	case FRAME_RESULT:
		return "result";
	default:
		return "unknown";
	}
}

static int decode_header(struct decoder *d)
{
	uint32_t kind;
	uint64_t body, have;

	if (d->len < FRAME_HEADER_LEN)
		return fail(d, "truncated header: %zu of %d bytes", d->len,
			    FRAME_HEADER_LEN);
	if (memcmp(d->buf, FRAME_MAGIC, 4) != 0)
		return fail(d, "bad magic: not a dolsot frame");
	kind = le_get_u32(d->buf + 4);
	if (kind != d->k->kind)
		return fail(d, "wrong kind: expected %s (%u), got %s (%"
			    PRIu32 ")", d->k->name, (unsigned)d->k->kind,
			    kind_name(kind), kind);
	body = le_get_u64(d->buf + 8);
	if (body > FRAME_MAX - FRAME_HEADER_LEN)
		return fail(d, "frame too large: header says %" PRIu64
			    " body bytes, limit is %" PRIu64, body,
			    FRAME_MAX - FRAME_HEADER_LEN);
	have = d->len - FRAME_HEADER_LEN;
	if (body > have)
		return fail(d, "truncated frame: header says %" PRIu64
			    " body bytes, %" PRIu64 " present", body, have);
	if (body < have)
		return fail(d, "trailing bytes: %" PRIu64 " after the %" PRIu64
			    "-byte body", have - body, body);
	d->pos = FRAME_HEADER_LEN;
	return 0;
}

static int find_field(const struct kind_desc *k, uint16_t tag)
{
	for (size_t i = 0; i < k->n_fields; i++)
		if (k->fields[i].tag == tag)
			return (int)i;
	return -1;
}

static struct span span_at(const uint8_t *p, size_t len)
{
	struct span s = { p, len, true };

	return s;
}

static int decode_toolbox(struct decoder *d, const uint8_t *p, size_t len,
                          size_t at)
{
	struct request *r = d->out;
	const uint8_t *nul = memchr(p, '\0', len);
	size_t mlen;

	if (r->n_toolboxes == FRAME_MAX_TOOLBOXES)
		return fail(d, "too many toolboxes: more than %d at offset %zu",
			    FRAME_MAX_TOOLBOXES, at);
	if (!nul)
		return fail(d, "toolbox field at offset %zu has no nul separator",
			    at);
	mlen = (size_t)(nul - p);
	if (memchr(nul + 1, '\0', len - mlen - 1))
		return fail(d, "toolbox field at offset %zu has more than one nul",
			    at);
	if (mlen == 0 || mlen == len - 1)
		return fail(d, "toolbox field at offset %zu has an empty %s", at,
			    mlen == 0 ? "module" : "alias");
	r->toolboxes[r->n_toolboxes].module = span_at(p, mlen);
	r->toolboxes[r->n_toolboxes].alias = span_at(nul + 1, len - mlen - 1);
	r->n_toolboxes++;
	return 0;
}

/* Entries "name NUL value(u64)": every name a limit's, none twice, no
 * value 0, nothing left over, at least one. */
static int decode_limits(struct decoder *d, struct limits *l, const uint8_t *p,
                         size_t len, size_t at)
{
	size_t pos = 0;

	if (len == 0)
		return fail(d, "field limits at offset %zu is empty", at);
	while (pos < len) {
		const uint8_t *nul = memchr(p + pos, '\0', len - pos);
		size_t nlen;
		enum limit_kind k;

		if (!nul)
			return fail(d, "field limits at offset %zu has a name without a nul",
				    at);
		nlen = (size_t)(nul - (p + pos));
		if (!limit_by_name((const char *)p + pos, nlen, &k))
			return fail(d, "field limits at offset %zu names an unknown limit "
				    "(%zu bytes at %zu)", at, nlen, pos);
		pos += nlen + 1;
		if (len - pos < SCALAR_LEN)
			return fail(d, "field limits at offset %zu: limit %s has %zu "
				    "value bytes, want %d", at, limit_name(k), len - pos,
				    SCALAR_LEN);
		if (l->v[k])
			return fail(d, "field limits at offset %zu repeats limit %s", at,
				    limit_name(k));
		l->v[k] = le_get_u64(p + pos);
		if (!l->v[k])
			return fail(d, "field limits at offset %zu: limit %s is 0", at,
				    limit_name(k));
		pos += SCALAR_LEN;
	}
	return 0;
}

static int store_field(struct decoder *d, const struct field_desc *f,
                       const uint8_t *p, size_t len, size_t at)
{
	char *dst = (char *)d->out + f->off;
	const char *why;

	if ((f->type == FIELD_U64 || f->type == FIELD_I64) && len != SCALAR_LEN)
		return fail(d, "field %s at offset %zu has length %zu, want %d",
			    f->name, at, len, SCALAR_LEN);
	switch (f->type) {
	case FIELD_BINDS:
		if ((why = binds_problem(p, len)))
			return fail(d, "field %s at offset %zu %s", f->name, at, why);
		/* fall through */
	case FIELD_BYTES:
		*(struct span *)dst = span_at(p, len);
		return 0;
	case FIELD_TOOLBOX:
		return decode_toolbox(d, p, len, at);
	case FIELD_LIMITS:
		return decode_limits(d, (struct limits *)dst, p, len, at);
	case FIELD_U64:
		*(uint64_t *)dst = le_get_u64(p);
		return 0;
	case FIELD_I64:
		*(int64_t *)dst = u64_to_i64(le_get_u64(p));
		return 0;
	default:
		abort();
	}
}

static int decode_field(struct decoder *d)
{
	size_t at = d->pos, left = d->len - d->pos;
	const struct field_desc *f;
	uint16_t tag;
	uint64_t flen;
	int fi;

	if (left < FIELD_HEADER_LEN)
		return fail(d, "truncated field header at offset %zu: %zu of %d "
			    "bytes", at, left, FIELD_HEADER_LEN);
	tag = le_get_u16(d->buf + at);
	flen = le_get_u64(d->buf + at + 2);
	left -= FIELD_HEADER_LEN;
	fi = find_field(d->k, tag);
	if (fi < 0)
		return fail(d, "unknown tag 0x%04x in %s frame at offset %zu",
			    tag, d->k->name, at);
	f = &d->k->fields[fi];
	if (flen > left)
		return fail(d, "truncated field %s at offset %zu: says %" PRIu64
			    " bytes, %zu left", f->name, at, flen, left);
	if (f->type != FIELD_TOOLBOX && (d->seen & (1u << fi)))
		return fail(d, "repeated field %s at offset %zu", f->name, at);
	d->seen |= 1u << fi;
	d->pos += FIELD_HEADER_LEN + (size_t)flen;
	return store_field(d, f, d->buf + at + FIELD_HEADER_LEN, (size_t)flen,
			   at);
}

static int check_required(struct decoder *d)
{
	for (size_t i = 0; i < d->k->n_fields; i++) {
		if (d->k->fields[i].required && !(d->seen & (1u << i)))
			return fail(d, "missing required field %s in %s frame",
				    d->k->fields[i].name, d->k->name);
	}
	return 0;
}

static int decode(struct decoder *d)
{
	if (decode_header(d) < 0)
		return -1;
	while (d->pos < d->len) {
		if (decode_field(d) < 0)
			return -1;
	}
	return check_required(d);
}

/* *out is zeroed first; after -1 its contents are meaningless. */
int frame_decode_request(const uint8_t *buf, size_t len, struct request *out,
                         char *err, size_t errlen)
{
	struct decoder d = { buf, len, 0, &request_kind, out, 0, err, errlen };

	memset(out, 0, sizeof(*out));
	if (decode(&d) < 0)
		return -1;
	if (!(out->flags & REQ_SESSION) && out->blob_len)
		return fail(&d, "request has a session length but no session flag");
	return 0;
}

/* As frame_decode_request(), plus the RES_SAVE iff blob length rule. */
int frame_decode_result(const uint8_t *buf, size_t len,
                        struct worker_result *out, char *err, size_t errlen)
{
	struct decoder d = { buf, len, 0, &result_kind, out, 0, err, errlen };
	bool save;

	memset(out, 0, sizeof(*out));
	if (decode(&d) < 0)
		return -1;
	save = out->flags & RES_SAVE;
	if (save && !out->blob_len)
		return fail(&d, "result has the save flag but no blob length");
	if (!save && out->blob_len)
		return fail(&d, "result has a blob length but no save flag");
	return 0;
}

/* Checks the header only; the body may still be malformed. */
uint64_t frame_total_len(const uint8_t *hdr, size_t len)
{
	uint32_t kind;
	uint64_t body;

	if (len < FRAME_HEADER_LEN || memcmp(hdr, FRAME_MAGIC, 4) != 0)
		return 0;
	kind = le_get_u32(hdr + 4);
	if (kind != FRAME_REQUEST && kind != FRAME_RESULT)
		return 0;
	body = le_get_u64(hdr + 8);
	if (body > FRAME_MAX - FRAME_HEADER_LEN)
		return 0;
	return FRAME_HEADER_LEN + body;
}

/* A NULL s gives an absent span, so optional C strings map straight across. */
struct span span_str(const char *s)
{
	struct span sp = { (const uint8_t *)s, s ? strlen(s) : 0, s != NULL };

	return sp;
}

/* Frees the bytes and leaves buf empty: reusable, and safe to release twice. */
void frame_buf_release(struct frame_buf *buf)
{
	free(buf->data);
	buf->data = NULL;
	buf->len = 0;
	buf->cap = 0;
}
