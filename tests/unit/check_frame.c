/*
 * check_frame.c - the frame suite: round trips, one case per rejection rule,
 * and a replay of every input under tests/regress/frame/ (run from the repo
 * root).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ck_run.h"
#include "frame.h"

#define REGRESS_DIR "tests/regress/frame"

/* The tag numbers of frame.c, written out again to pin the wire format. */
enum {
	T_CODE = 0x0101, T_SESSION = 0x0102, T_OLD_REQ_BLOB = 0x0103,
	T_TOOLBOX = 0x0104, T_MAX_OUTPUT = 0x0105, T_BUDGET_NS = 0x0106,
	T_REQ_FLAGS = 0x0107, T_TY_BIN = 0x0108, T_OLD_MEMORY = 0x0109,
	T_OLD_RECURSION_LIMIT = 0x010d, T_BINDS = 0x010e, T_PIDS_CGROUP = 0x010f,
	T_LIMITS = 0x0111,
	T_REQ_BLOB_LEN = 0x0122,
	T_EXIT_CODE = 0x0201, T_RES_FLAGS = 0x0202, T_VALUE = 0x0203,
	T_ERROR = 0x0204, T_HELD = 0x0205, T_DROPPED = 0x0206,
	T_WARNINGS = 0x0207, T_OLD_RES_BLOB = 0x0208, T_LIMIT = 0x0209,
	T_RES_BLOB_LEN = 0x020a, T_SAVE_ERRNO = 0x020b, T_KEPT = 0x020c,
};

/* A hand-built frame, so tests can write what the encoder never would. */
struct raw {
	uint8_t *p;
	size_t len;
};

static void raw_put(struct raw *r, const void *data, size_t len)
{
	r->p = realloc(r->p, r->len + len + 1);
	ck_assert_ptr_nonnull(r->p);
	if (len)
		memcpy(r->p + r->len, data, len);
	r->len += len;
}

static void raw_le(struct raw *r, uint64_t v, int n)
{
	uint8_t b[8];

	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	raw_put(r, b, (size_t)n);
}

static void raw_set_le(struct raw *r, size_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		r->p[at + i] = (uint8_t)(v >> (8 * i));
}

static struct raw raw_begin(uint32_t kind)
{
	struct raw r = { NULL, 0 };

	raw_put(&r, FRAME_MAGIC, 4);
	raw_le(&r, kind, 4);
	raw_le(&r, 0, 8);
	return r;
}

static void raw_field(struct raw *r, uint16_t tag, const void *data,
                      size_t len)
{
	raw_le(r, tag, 2);
	raw_le(r, len, 8);
	raw_put(r, data, len);
}

static void raw_str(struct raw *r, uint16_t tag, const char *s)
{
	raw_field(r, tag, s, strlen(s));
}

static void raw_u64(struct raw *r, uint16_t tag, uint64_t v)
{
	raw_le(r, tag, 2);
	raw_le(r, 8, 8);
	raw_le(r, v, 8);
}

/* Patch the body length to match what was written. */
static void raw_end(struct raw *r)
{
	raw_set_le(r, 8, r->len - FRAME_HEADER_LEN);
}

static struct raw raw_min_request(void)
{
	struct raw r = raw_begin(FRAME_REQUEST);

	raw_str(&r, T_CODE, "x = 1");
	raw_str(&r, T_SESSION, "s1");
	return r;
}

static struct raw raw_min_result(void)
{
	struct raw r = raw_begin(FRAME_RESULT);

	raw_u64(&r, T_EXIT_CODE, 0);
	raw_u64(&r, T_RES_FLAGS, RES_OK);
	return r;
}

/* Decoding from an exact-size heap copy lets valgrind see any overread. */
static int decode_req(const uint8_t *p, size_t len, struct request *out,
                      char *err, size_t errlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, p, len);
	rc = frame_decode_request(copy, len, out, err, errlen);
	free(copy);
	return rc;
}

static int decode_res(const uint8_t *p, size_t len, struct worker_result *out,
                      char *err, size_t errlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, p, len);
	rc = frame_decode_result(copy, len, out, err, errlen);
	free(copy);
	return rc;
}

static void assert_message(const char *err, const char *want)
{
	ck_assert_msg(strstr(err, want) != NULL,
		      "message \"%s\" lacks \"%s\"", err, want);
	ck_assert_msg(!strchr(err, '\n'), "message \"%s\" has a newline", err);
}

static void reject_req(struct raw *r, const char *want)
{
	struct request out;
	char err[256] = "";

	ck_assert_int_eq(decode_req(r->p, r->len, &out, err, sizeof(err)), -1);
	assert_message(err, want);
	free(r->p);
}

static void reject_res(struct raw *r, const char *want)
{
	struct worker_result out;
	char err[256] = "";

	ck_assert_int_eq(decode_res(r->p, r->len, &out, err, sizeof(err)), -1);
	assert_message(err, want);
	free(r->p);
}

/* A minimal request with one more field, tag holding data[0..len), must be
 * refused with want in the message. */
static void reject_field(uint16_t tag, const void *data, size_t len, const char *want)
{
	struct raw r = raw_min_request();

	raw_field(&r, tag, data, len);
	raw_end(&r);
	reject_req(&r, want);
}

static void assert_span(struct span got, struct span want)
{
	ck_assert_int_eq(got.present, want.present);
	ck_assert_uint_eq(got.len, want.len);
	if (want.len)
		ck_assert_int_eq(memcmp(got.p, want.p, want.len), 0);
}

static struct span span_bytes(const void *p, size_t len)
{
	struct span s = { p, len, true };

	return s;
}

static struct request *new_request(const char *code, const char *session)
{
	struct request *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->code = span_str(code);
	r->session = span_str(session);
	return r;
}

/* Encode r, decode it back, and compare every field. */
static void request_round_trip(const struct request *r)
{
	struct frame_buf buf = { 0 };
	struct request *out = malloc(sizeof(*out));
	char err[256] = "";

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(frame_encode_request(&buf, r), 0);
	ck_assert_uint_eq(frame_total_len(buf.data, buf.len), buf.len);
	ck_assert_msg(frame_decode_request(buf.data, buf.len, out, err,
					   sizeof(err)) == 0, "%s", err);
	assert_span(out->code, r->code);
	assert_span(out->session, r->session);
	ck_assert_uint_eq(out->blob_len, r->blob_len);
	assert_span(out->env, r->env);
	assert_span(out->cwd, r->cwd);
	ck_assert_uint_eq(out->n_toolboxes, r->n_toolboxes);
	for (size_t i = 0; i < r->n_toolboxes; i++) {
		assert_span(out->toolboxes[i].module, r->toolboxes[i].module);
		assert_span(out->toolboxes[i].alias, r->toolboxes[i].alias);
	}
	ck_assert_uint_eq(out->max_output, r->max_output);
	ck_assert_uint_eq(out->budget_ns, r->budget_ns);
	ck_assert_uint_eq(out->flags, r->flags);
	assert_span(out->ty_bin, r->ty_bin);
	for (int k = 0; k < LIMIT_COUNT; k++)
		ck_assert_uint_eq(out->limits.v[k], r->limits.v[k]);
	assert_span(out->binds, r->binds);
	assert_span(out->pids_cgroup, r->pids_cgroup);
	assert_span(out->mem_cgroup, r->mem_cgroup);
	free(out);
	frame_buf_release(&buf);
}

static void result_round_trip(const struct worker_result *res)
{
	struct frame_buf buf = { 0 };
	struct worker_result out;
	char err[256] = "";

	ck_assert_int_eq(frame_encode_result(&buf, res), 0);
	ck_assert_uint_eq(frame_total_len(buf.data, buf.len), buf.len);
	ck_assert_msg(frame_decode_result(buf.data, buf.len, &out, err,
					  sizeof(err)) == 0, "%s", err);
	ck_assert(out.exit_code == res->exit_code);
	ck_assert_uint_eq(out.flags, res->flags);
	assert_span(out.value, res->value);
	assert_span(out.error, res->error);
	assert_span(out.held, res->held);
	assert_span(out.dropped, res->dropped);
	assert_span(out.warnings, res->warnings);
	ck_assert_uint_eq(out.blob_len, res->blob_len);
	ck_assert_uint_eq(out.save_errno, res->save_errno);
	assert_span(out.limit, res->limit);
	assert_span(out.kept, res->kept);
	frame_buf_release(&buf);
}

/* ---- round trips ---- */

START_TEST(request_round_trips_all_fields)
{
	struct request *r = new_request("print(1)\n2 + 2", "alpha");

	r->blob_len = 13;
	r->toolboxes[0].module = span_str("mytools");
	r->toolboxes[0].alias = span_str("mt");
	r->n_toolboxes = 1;
	r->max_output = 4096;
	r->budget_ns = 30ull * 1000000000ull;
	r->flags = REQ_TYPECHECK | REQ_CARRY | REQ_SANDBOX | REQ_SESSION;
	r->env = span_bytes((const uint8_t *)"A=1\0PATH=/bin\0", 15);
	r->cwd = span_str("/home/agent/work");
	r->ty_bin = span_str("/usr/bin/mypy");
	r->limits.v[LIMIT_MEMORY] = 256u << 20;
	r->limits.v[LIMIT_MAX_PROCS] = 20;
	r->limits.v[LIMIT_MAX_FILE_SIZE] = 1u << 20;
	r->limits.v[LIMIT_CPU_SECONDS] = 3;
	r->limits.v[LIMIT_RECURSION] = 100;
	r->binds = span_bytes("/h\0/v\0ro\0/a\0/b\0overlay\0", 23);
	r->pids_cgroup = span_str("/sys/fs/cgroup/pids/dolsot-1");
	r->mem_cgroup = span_str("/sys/fs/cgroup/memory/dolsot-m1");
	request_round_trip(r);
	free(r);
}
END_TEST

/* Each limit alone, the largest value, and none: only what is set is sent,
 * as one field of name NUL value entries. */
START_TEST(request_round_trips_limits)
{
	struct request *r = new_request("1", "s");
	struct frame_buf buf = { 0 };

	request_round_trip(r);
	ck_assert_int_eq(frame_encode_request(&buf, r), 0);
	ck_assert_ptr_null(memmem(buf.data, buf.len, "\x11\x01", 2));
	frame_buf_release(&buf);
	for (int k = 0; k < LIMIT_COUNT; k++) {
		memset(&r->limits, 0, sizeof(r->limits));
		r->limits.v[k] = k == LIMIT_CPU_SECONDS ? UINT64_MAX : 7;
		request_round_trip(r);
	}
	memset(&r->limits, 0, sizeof(r->limits));
	r->limits.v[LIMIT_MAX_PROCS] = 5;
	ck_assert_int_eq(frame_encode_request(&buf, r), 0);
	/* header, code, session, then: tag, length, "max-procs" NUL, 5 */
	ck_assert_uint_eq(buf.len, FRAME_HEADER_LEN + 3 * 10 + 1 + 1 + 10 + 8);
	ck_assert_int_eq(memcmp(buf.data + buf.len - 28, "\x11\x01\x12\0\0\0\0\0\0\0"
	                        "max-procs\0\x05\0\0\0\0\0\0\0", 28), 0);
	frame_buf_release(&buf);
	free(r);
}
END_TEST

START_TEST(rejects_malformed_limits)
{
	reject_field(T_LIMITS, "", 0, "field limits at offset 43 is empty");
	reject_field(T_LIMITS, "memory", 6, "has a name without a nul");
	reject_field(T_LIMITS, "memory\0\1\0\0\0", 11, "limit memory has 4 value bytes, want 8");
	reject_field(T_LIMITS, "memory\0\1\0\0\0\0\0\0\0max-procs", 24, "has a name without a nul");
	reject_field(T_LIMITS, "memory\0\0\0\0\0\0\0\0\0", 15, "limit memory is 0");
	reject_field(T_LIMITS, "memory\0\1\0\0\0\0\0\0\0memory\0\2\0\0\0\0\0\0\0", 30,
	              "repeats limit memory");
}
END_TEST

/* Only rlimits.c's names are keys; the option's dashes are part of them. */
START_TEST(rejects_unknown_limit)
{
	reject_field(T_LIMITS, "swap\0\1\0\0\0\0\0\0\0", 13, "names an unknown limit");
	reject_field(T_LIMITS, "max_procs\0\1\0\0\0\0\0\0\0", 18, "names an unknown limit");
	reject_field(T_LIMITS, "\0\1\0\0\0\0\0\0\0", 9, "names an unknown limit");
	reject_field(T_LIMITS, "Memory\0\1\0\0\0\0\0\0\0", 15, "names an unknown limit");
}
END_TEST

/* The limits were five fields of their own once; their tags are retired. */
START_TEST(rejects_retired_limit_tags)
{
	struct raw r = raw_min_request(), t = raw_min_request();

	raw_u64(&r, T_OLD_MEMORY, 1 << 30);
	raw_end(&r);
	reject_req(&r, "unknown tag 0x0109");
	raw_u64(&t, T_OLD_RECURSION_LIMIT, 100);
	raw_end(&t);
	reject_req(&t, "unknown tag 0x010d");
}
END_TEST

START_TEST(decoder_takes_limits_in_any_order)
{
	struct raw r = raw_min_request();
	struct request out;
	char err[256] = "";

	raw_field(&r, T_LIMITS, "recursion-limit\0\x64\0\0\0\0\0\0\0"
	          "memory\0\0\0\0\x40\0\0\0\0", 39);
	raw_end(&r);
	ck_assert_msg(decode_req(r.p, r.len, &out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(out.limits.v[LIMIT_RECURSION], 100);
	ck_assert_uint_eq(out.limits.v[LIMIT_MEMORY], 1ull << 30);
	ck_assert_uint_eq(out.limits.v[LIMIT_MAX_PROCS], 0);
	free(r.p);
}
END_TEST

START_TEST(request_round_trips_empty_binds)
{
	struct request *r = new_request("1", "s");

	r->binds = span_bytes("", 0);
	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(list_items_are_walked_in_order)
{
	struct span rest = span_bytes("A=1\0\0B=2\0C", 10), item;

	ck_assert(span_next_item(&rest, &item));
	ck_assert_uint_eq(item.len, 3);
	ck_assert_int_eq(memcmp(item.p, "A=1", 3), 0);
	ck_assert(span_next_item(&rest, &item));
	ck_assert_uint_eq(item.len, 0);
	ck_assert(span_next_item(&rest, &item));
	ck_assert_int_eq(memcmp(item.p, "B=2", 3), 0);
	ck_assert(!span_next_item(&rest, &item));   /* "C" lacks its nul */
}
END_TEST

START_TEST(encoder_refuses_invalid_binds)
{
	struct request *r = new_request("1", "s");
	struct frame_buf buf = { 0 };

	r->binds = span_bytes("/h\0/v\0rx\0", 10);
	ck_assert_int_eq(frame_encode_request(&buf, r), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(buf.data);
	free(r);
}
END_TEST

START_TEST(request_round_trips_empty_code)
{
	struct request *r = new_request("", "s");

	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(request_round_trips_binary_code)
{
	static const uint8_t code[] = { 'a', 0, 'b', 0, 0, 0xff, 0x80, '\n' };
	struct request *r = new_request("", "s");

	r->code = span_bytes(code, sizeof(code));
	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(request_round_trips_zero_and_max_toolboxes)
{
	struct request *r = new_request("1", "s");
	char names[FRAME_MAX_TOOLBOXES][2][24];

	request_round_trip(r);
	for (unsigned i = 0; i < FRAME_MAX_TOOLBOXES; i++) {
		snprintf(names[i][0], sizeof(names[i][0]), "pkg.mod%u", i);
		snprintf(names[i][1], sizeof(names[i][1]), "m%u", i);
		r->toolboxes[i].module = span_str(names[i][0]);
		r->toolboxes[i].alias = span_str(names[i][1]);
	}
	r->n_toolboxes = FRAME_MAX_TOOLBOXES;
	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(request_round_trips_absent_and_empty_blob)
{
	struct request *r = new_request("1", "s");

	request_round_trip(r);
	r->flags = REQ_SESSION;   /* a session file of 0 bytes: still a session */
	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(request_round_trips_4gb_blob_length)
{
	struct request *r = new_request("1", "s");

	r->flags = REQ_SESSION;
	r->blob_len = (uint64_t)5 << 32;   /* the bytes are not in the frame */
	request_round_trip(r);
	free(r);
}
END_TEST

START_TEST(result_round_trips_all_fields)
{
	struct worker_result res = {
		.exit_code = 3, .flags = RES_OK | RES_SAVE,
		.value = span_str("[1, 2]"), .error = span_str(""),
		.held = span_str("a\nb"), .dropped = span_str("f\tfile"),
		.warnings = span_str("warning: x"), .blob_len = 5, .save_errno = 28,
		.limit = span_str("memory"), .kept = span_str("t\tModuleNotFoundError: tb"),
	};

	result_round_trip(&res);
}
END_TEST

START_TEST(result_round_trips_negative_exit_codes)
{
	static const int64_t codes[] = { -1, INT64_MIN, INT64_MAX, 124, 0 };
	struct worker_result res = { .flags = RES_OK };

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		res.exit_code = codes[i];
		result_round_trip(&res);
	}
}
END_TEST

START_TEST(result_round_trips_absent_blob)
{
	struct worker_result res = { .exit_code = 1 };

	result_round_trip(&res);
}
END_TEST

START_TEST(result_round_trips_4gb_blob_length)
{
	struct worker_result res = { .flags = RES_OK | RES_SAVE, .blob_len = (uint64_t)5 << 32 };

	result_round_trip(&res);
}
END_TEST

START_TEST(encoder_writes_scalars_and_skips_absent_fields)
{
	struct worker_result res = { .exit_code = -2 };
	struct frame_buf buf = { 0 };

	ck_assert_int_eq(frame_encode_result(&buf, &res), 0);
	/* header + exit_code + flags, nothing else */
	ck_assert_uint_eq(buf.len, FRAME_HEADER_LEN + 2 * (10 + 8));
	ck_assert_int_eq(memcmp(buf.data, "DLF1\x02\0\0\0", 8), 0);
	ck_assert_int_eq(buf.data[16], 0x01);
	ck_assert_int_eq(buf.data[17], 0x02);
	ck_assert_int_eq(buf.data[26], 0xfe);
	ck_assert_int_eq(buf.data[33], 0xff);
	frame_buf_release(&buf);
	ck_assert_ptr_null(buf.data);
	frame_buf_release(&buf);
}
END_TEST

START_TEST(decoder_accepts_fields_in_any_order)
{
	struct raw r = raw_begin(FRAME_REQUEST);
	struct request out;
	char err[256] = "";

	raw_u64(&r, T_REQ_FLAGS, REQ_CARRY);
	raw_str(&r, T_TY_BIN, "mypy");
	raw_field(&r, T_TOOLBOX, "mod\0m", 5);
	raw_str(&r, T_SESSION, "s");
	raw_str(&r, T_CODE, "c");
	raw_end(&r);
	ck_assert_msg(decode_req(r.p, r.len, &out, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(out.flags, REQ_CARRY);
	/* decode_req freed the bytes; the round trip checks the content. */
	ck_assert(out.ty_bin.present && out.ty_bin.len == 4);
	ck_assert_uint_eq(out.n_toolboxes, 1);
	ck_assert_uint_eq(out.toolboxes[0].module.len, 3);
	ck_assert_uint_eq(out.max_output, 0);
	free(r.p);
}
END_TEST

/* ---- encoder refusals ---- */

START_TEST(encoder_refuses_invalid_request)
{
	struct request *r = new_request("1", "s");
	struct frame_buf buf = { 0 };

	r->session.present = false;
	errno = 0;
	ck_assert_int_eq(frame_encode_request(&buf, r), -1);
	ck_assert_int_eq(errno, EINVAL);
	r->session = span_str("s");
	r->n_toolboxes = FRAME_MAX_TOOLBOXES + 1;
	ck_assert_int_eq(frame_encode_request(&buf, r), -1);
	ck_assert_int_eq(errno, EINVAL);
	r->n_toolboxes = 1;
	r->toolboxes[0].module = span_bytes("a\0b", 3);
	r->toolboxes[0].alias = span_str("x");
	ck_assert_int_eq(frame_encode_request(&buf, r), -1);
	ck_assert_int_eq(errno, EINVAL);
	r->toolboxes[0].module = span_str("m");
	r->toolboxes[0].alias = span_str("");
	ck_assert_int_eq(frame_encode_request(&buf, r), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(buf.len, 0);
	frame_buf_release(&buf);
	free(r);
}
END_TEST

START_TEST(encoder_refuses_save_flag_blob_mismatch)
{
	struct worker_result res = { .flags = RES_SAVE };
	struct frame_buf buf = { 0 };

	ck_assert_int_eq(frame_encode_result(&buf, &res), -1);
	ck_assert_int_eq(errno, EINVAL);
	res.flags = RES_OK;
	res.blob_len = 1;
	ck_assert_int_eq(frame_encode_result(&buf, &res), -1);
	ck_assert_int_eq(errno, EINVAL);
	frame_buf_release(&buf);
}
END_TEST

/* The encoder sizes the frame before it touches the bytes. */
START_TEST(encoder_refuses_frame_over_max)
{
	struct worker_result res = { .flags = RES_OK };
	struct frame_buf buf = { 0 };
	static const uint8_t tiny[1];

	if (SIZE_MAX < FRAME_MAX)
		return;
	res.value = span_bytes(tiny, (size_t)FRAME_MAX);
	ck_assert_int_eq(frame_encode_result(&buf, &res), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	res.value = span_bytes(tiny, (size_t)(FRAME_MAX / 2));
	res.error = span_bytes(tiny, (size_t)(FRAME_MAX / 2));
	ck_assert_int_eq(frame_encode_result(&buf, &res), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	ck_assert_uint_eq(buf.len, 0);
	frame_buf_release(&buf);
}
END_TEST

/* ---- decoder rejections, one rule each ---- */

START_TEST(rejects_bad_magic)
{
	struct raw r = raw_min_request();

	raw_end(&r);
	r.p[3] = '2';
	reject_req(&r, "bad magic");
}
END_TEST

START_TEST(rejects_wrong_kind)
{
	struct raw r = raw_min_request();
	struct raw s = raw_min_result();

	raw_end(&r);
	raw_end(&s);
	reject_res(&r, "wrong kind: expected result (2), got request (1)");
	reject_req(&s, "wrong kind: expected request (1), got result (2)");
}
END_TEST

START_TEST(rejects_unknown_kind)
{
	struct raw r = raw_begin(7);

	reject_req(&r, "got unknown (7)");
}
END_TEST

START_TEST(rejects_result_tag_in_request_frame)
{
	struct raw r = raw_min_request();

	raw_u64(&r, T_EXIT_CODE, 0);
	raw_end(&r);
	reject_req(&r, "unknown tag 0x0201 in request frame");
}
END_TEST

START_TEST(rejects_request_tag_in_result_frame)
{
	struct raw r = raw_min_result();

	raw_str(&r, T_CODE, "x");
	raw_end(&r);
	reject_res(&r, "unknown tag 0x0101 in result frame");
}
END_TEST

START_TEST(rejects_unknown_tag)
{
	struct raw r = raw_min_request();

	raw_str(&r, 0x0199, "?");
	raw_end(&r);
	reject_req(&r, "unknown tag 0x0199");
}
END_TEST

START_TEST(rejects_truncated_header)
{
	struct raw r = raw_min_request();

	r.len = 5;
	reject_req(&r, "truncated header: 5 of 16 bytes");
}
END_TEST

START_TEST(rejects_truncated_body)
{
	struct raw r = raw_min_request();

	raw_set_le(&r, 8, 1200);
	reject_req(&r, "truncated frame: header says 1200 body bytes, 27 present");
}
END_TEST

START_TEST(rejects_trailing_bytes)
{
	struct raw r = raw_min_request();

	raw_end(&r);
	raw_put(&r, "xyz", 3);
	reject_req(&r, "trailing bytes: 3 after");
}
END_TEST

START_TEST(rejects_header_over_frame_max)
{
	uint8_t hdr[FRAME_HEADER_LEN] = "DLF1\x01";
	struct raw r = { NULL, 0 };
	uint64_t body = FRAME_MAX - FRAME_HEADER_LEN + 1;

	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(body >> (8 * i));
	raw_put(&r, hdr, sizeof(hdr));
	reject_req(&r, "frame too large: header says 4294967281 body bytes");
	ck_assert_uint_eq(frame_total_len(hdr, sizeof(hdr)), 0);
	r.p = NULL;
	r.len = 0;
	memset(hdr + 8, 0xff, 8);
	raw_put(&r, hdr, sizeof(hdr));
	reject_req(&r, "frame too large");
}
END_TEST

START_TEST(rejects_truncated_field_header)
{
	struct raw r = raw_min_request();

	raw_le(&r, T_BUDGET_NS, 2);
	raw_le(&r, 8, 4);
	raw_end(&r);
	reject_req(&r, "truncated field header at offset 43: 6 of 10 bytes");
}
END_TEST

START_TEST(rejects_field_overrunning_body)
{
	struct raw r = raw_min_request();

	raw_le(&r, T_TY_BIN, 2);
	raw_le(&r, 100, 8);
	raw_put(&r, "abc", 3);
	raw_end(&r);
	reject_req(&r, "truncated field ty_bin at offset 43: says 100 bytes, 3 left");
}
END_TEST

/* pos + 10 + len must not wrap around to look in bounds. */
START_TEST(rejects_field_length_that_would_overflow)
{
	static const uint64_t lens[] = {
		UINT64_MAX, UINT64_MAX - 9, UINT64_MAX - 42, (uint64_t)SIZE_MAX,
		FRAME_MAX,
	};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct raw r = raw_min_request();

		raw_le(&r, T_TY_BIN, 2);
		raw_le(&r, lens[i], 8);
		raw_put(&r, "abc", 3);
		raw_end(&r);
		reject_req(&r, "truncated field ty_bin");
	}
}
END_TEST

START_TEST(rejects_repeated_field)
{
	struct raw r = raw_min_request();
	struct raw s = raw_min_result();

	raw_str(&r, T_CODE, "again");
	raw_end(&r);
	reject_req(&r, "repeated field code at offset 43");
	raw_u64(&s, T_RES_FLAGS, 0);
	raw_end(&s);
	reject_res(&s, "repeated field flags");
}
END_TEST

START_TEST(rejects_missing_code)
{
	struct raw r = raw_begin(FRAME_REQUEST);

	raw_str(&r, T_SESSION, "s");
	raw_end(&r);
	reject_req(&r, "missing required field code in request frame");
}
END_TEST

START_TEST(rejects_missing_session)
{
	struct raw r = raw_begin(FRAME_REQUEST);

	raw_str(&r, T_CODE, "c");
	raw_end(&r);
	reject_req(&r, "missing required field session");
}
END_TEST

START_TEST(rejects_missing_exit_code)
{
	struct raw r = raw_begin(FRAME_RESULT);

	raw_u64(&r, T_RES_FLAGS, 0);
	raw_end(&r);
	reject_res(&r, "missing required field exit_code in result frame");
}
END_TEST

START_TEST(rejects_missing_result_flags)
{
	struct raw r = raw_begin(FRAME_RESULT);

	raw_u64(&r, T_EXIT_CODE, 0);
	raw_end(&r);
	reject_res(&r, "missing required field flags");
}
END_TEST

START_TEST(rejects_empty_frame)
{
	struct raw r = raw_begin(FRAME_REQUEST);

	reject_req(&r, "missing required field code");
}
END_TEST

START_TEST(rejects_too_many_toolboxes)
{
	struct raw r = raw_min_request();

	for (int i = 0; i <= FRAME_MAX_TOOLBOXES; i++)
		raw_field(&r, T_TOOLBOX, "m\0a", 3);
	raw_end(&r);
	reject_req(&r, "too many toolboxes: more than 256");
}
END_TEST

START_TEST(rejects_toolbox_without_nul)
{
	struct raw r = raw_min_request();
	struct raw s = raw_min_request();

	raw_str(&r, T_TOOLBOX, "module");
	raw_end(&r);
	reject_req(&r, "has no nul separator");
	raw_field(&s, T_TOOLBOX, "", 0);
	raw_end(&s);
	reject_req(&s, "has no nul separator");
}
END_TEST

START_TEST(rejects_toolbox_with_two_nuls)
{
	struct raw r = raw_min_request();

	raw_field(&r, T_TOOLBOX, "m\0a\0", 4);
	raw_end(&r);
	reject_req(&r, "has more than one nul");
}
END_TEST

START_TEST(rejects_toolbox_with_empty_side)
{
	struct raw r = raw_min_request();
	struct raw s = raw_min_request();
	struct raw t = raw_min_request();

	raw_field(&r, T_TOOLBOX, "\0a", 2);
	raw_end(&r);
	reject_req(&r, "has an empty module");
	raw_field(&s, T_TOOLBOX, "m\0", 2);
	raw_end(&s);
	reject_req(&s, "has an empty alias");
	raw_field(&t, T_TOOLBOX, "\0", 1);
	raw_end(&t);
	reject_req(&t, "has an empty module");
}
END_TEST

START_TEST(rejects_scalar_of_wrong_length)
{
	static const size_t lens[] = { 0, 4, 7, 9, 16 };
	static const uint8_t zeros[16];

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct raw r = raw_min_request();
		struct raw s = raw_begin(FRAME_RESULT);

		raw_field(&r, T_MAX_OUTPUT, zeros, lens[i]);
		raw_end(&r);
		reject_req(&r, "field max_output at offset 43 has length");
		raw_field(&s, T_EXIT_CODE, zeros, lens[i]);
		raw_u64(&s, T_RES_FLAGS, 0);
		raw_end(&s);
		reject_res(&s, "field exit_code at offset 16 has length");
	}
}
END_TEST

START_TEST(rejects_malformed_binds)
{
	reject_field(T_BINDS, "/h\0/v\0ro", 8, "field binds at offset 43 does not end with a nul");
	reject_field(T_BINDS, "/h\0/v\0", 6, "does not hold whole host, path, mode triples");
	reject_field(T_BINDS, "/h\0/v\0rw\0/x\0", 12, "does not hold whole");
	reject_field(T_BINDS, "h\0/v\0ro\0", 8, "has a path that is not absolute");
	reject_field(T_BINDS, "/h\0\0ro\0", 7, "has a path that is not absolute");
	reject_field(T_BINDS, "/h\0/v\0RO\0", 9, "has a mode other than ro, rw or overlay");
	reject_field(T_BINDS, "/h\0/v\0overlayx\0", 15, "has a mode other");
}
END_TEST

START_TEST(rejects_save_flag_without_blob)
{
	struct raw r = raw_begin(FRAME_RESULT);

	raw_u64(&r, T_EXIT_CODE, 0);
	raw_u64(&r, T_RES_FLAGS, RES_OK | RES_SAVE);
	raw_end(&r);
	reject_res(&r, "result has the save flag but no blob length");
}
END_TEST

START_TEST(rejects_blob_without_save_flag)
{
	struct raw r = raw_min_result();

	raw_u64(&r, T_RES_BLOB_LEN, 5);
	raw_end(&r);
	reject_res(&r, "result has a blob length but no save flag");
}
END_TEST

START_TEST(rejects_blob_length_without_session_flag)
{
	struct raw r = raw_min_request();

	raw_u64(&r, T_REQ_BLOB_LEN, 5);
	raw_end(&r);
	reject_req(&r, "request has a session length but no session flag");
}
END_TEST

/* The inline blob fields are gone; an old frame carrying one is refused. */
START_TEST(rejects_retired_inline_blob_tags)
{
	struct raw r = raw_min_request(), s = raw_min_result();

	raw_str(&r, T_OLD_REQ_BLOB, "state");
	raw_end(&r);
	reject_req(&r, "unknown tag 0x0103");
	raw_str(&s, T_OLD_RES_BLOB, "state");
	raw_end(&s);
	reject_res(&s, "unknown tag 0x0208");
}
END_TEST

START_TEST(rejects_every_truncation_of_a_valid_frame)
{
	struct request *r = new_request("x = 1", "s");
	struct worker_result res = {
		.exit_code = 1, .flags = RES_SAVE, .value = span_str("1"),
		.blob_len = 1,
	};
	struct frame_buf rb = { 0 }, sb = { 0 };
	struct request *out = malloc(sizeof(*out));
	struct worker_result rout;
	char err[256];
	int rc;

	ck_assert_ptr_nonnull(out);
	r->toolboxes[0].module = span_str("mytools");
	r->toolboxes[0].alias = span_str("mt");
	r->n_toolboxes = 1;
	ck_assert_int_eq(frame_encode_request(&rb, r), 0);
	ck_assert_int_eq(frame_encode_result(&sb, &res), 0);
	for (size_t n = 0; n < rb.len; n++) {
		err[0] = '\0';
		rc = decode_req(rb.data, n, out, err, sizeof(err));
		ck_assert_int_eq(rc, -1);
		ck_assert_msg(err[0] != '\0', "no message at prefix %zu", n);
	}
	for (size_t n = 0; n < sb.len; n++) {
		err[0] = '\0';
		rc = decode_res(sb.data, n, &rout, err, sizeof(err));
		ck_assert_int_eq(rc, -1);
		ck_assert_msg(err[0] != '\0', "no message at prefix %zu", n);
	}
	ck_assert_int_eq(decode_req(rb.data, rb.len, out, err, sizeof(err)), 0);
	frame_buf_release(&rb);
	frame_buf_release(&sb);
	free(out);
	free(r);
}
END_TEST

START_TEST(decoder_tolerates_missing_or_tiny_err_buffer)
{
	struct raw r = raw_begin(FRAME_REQUEST);
	struct request out;
	char err[4] = "zzz";

	ck_assert_int_eq(frame_decode_request(r.p, r.len, &out, NULL, 0), -1);
	ck_assert_int_eq(frame_decode_request(r.p, r.len, &out, err, 1), -1);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(frame_decode_request(r.p, r.len, &out, err,
					      sizeof(err)), -1);
	ck_assert_str_eq(err, "mis");
	free(r.p);
}
END_TEST

/* ---- frame_total_len, span_str ---- */

START_TEST(total_len_reads_valid_headers)
{
	struct raw r = raw_min_result();
	uint8_t hdr[FRAME_HEADER_LEN] = "DLF1\x01";
	uint64_t body = FRAME_MAX - FRAME_HEADER_LEN;

	raw_end(&r);
	ck_assert_uint_eq(frame_total_len(r.p, r.len), r.len);
	ck_assert_uint_eq(frame_total_len(r.p, FRAME_HEADER_LEN), r.len);
	ck_assert_uint_eq(frame_total_len(hdr, sizeof(hdr)), FRAME_HEADER_LEN);
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(body >> (8 * i));
	ck_assert_uint_eq(frame_total_len(hdr, sizeof(hdr)), FRAME_MAX);
	free(r.p);
}
END_TEST

START_TEST(total_len_rejects_bad_headers)
{
	struct raw r = raw_min_request();

	raw_end(&r);
	ck_assert_uint_eq(frame_total_len(r.p, FRAME_HEADER_LEN - 1), 0);
	ck_assert_uint_eq(frame_total_len(r.p, 0), 0);
	r.p[4] = 3;
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	r.p[4] = 0;
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	r.p[4] = FRAME_REQUEST;
	r.p[7] = 1;
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	r.p[7] = 0;
	r.p[0] = 'd';
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	r.p[0] = 'D';
	raw_set_le(&r, 8, UINT64_MAX);
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	raw_set_le(&r, 8, UINT64_MAX - FRAME_HEADER_LEN + 1);
	ck_assert_uint_eq(frame_total_len(r.p, r.len), 0);
	free(r.p);
}
END_TEST

START_TEST(span_str_covers_string)
{
	struct span s = span_str("abc");
	struct span e = span_str("");
	struct span n = span_str(NULL);

	ck_assert(s.present);
	ck_assert_uint_eq(s.len, 3);
	ck_assert(e.present);
	ck_assert_uint_eq(e.len, 0);
	ck_assert(!n.present);
}
END_TEST

/* ---- regressions: inputs the fuzzer once crashed on ---- */

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *p;

	ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	*len = (size_t)st.st_size;
	p = malloc(*len ? *len : 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, *len, f), *len);
	fclose(f);
	return p;
}

static void replay(const char *path)
{
	struct request *req = malloc(sizeof(*req));
	struct worker_result res;
	char err[256];
	size_t len;
	uint8_t *p = read_file(path, &len);

	ck_assert_ptr_nonnull(req);
	frame_decode_request(p, len, req, err, sizeof(err));
	frame_decode_result(p, len, &res, err, sizeof(err));
	free(req);
	free(p);
}

START_TEST(regress_inputs_decode_without_crashing)
{
	DIR *dir = opendir(REGRESS_DIR);
	struct dirent *de;
	char path[512];

	if (!dir && errno == ENOENT)
		return;
	ck_assert_msg(dir != NULL, "opendir %s: %s", REGRESS_DIR,
		      strerror(errno));
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", REGRESS_DIR, de->d_name);
		replay(path);
	}
	closedir(dir);
}
END_TEST

static Suite *frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *rt = tcase_create("round_trip");
	TCase *rej = tcase_create("reject");
	TCase *misc = tcase_create("misc");

	tcase_set_timeout(rt, 60);
	tcase_add_test(rt, request_round_trips_all_fields);
	tcase_add_test(rt, request_round_trips_empty_code);
	tcase_add_test(rt, request_round_trips_binary_code);
	tcase_add_test(rt, request_round_trips_zero_and_max_toolboxes);
	tcase_add_test(rt, request_round_trips_absent_and_empty_blob);
	tcase_add_test(rt, request_round_trips_4gb_blob_length);
	tcase_add_test(rt, request_round_trips_empty_binds);
	tcase_add_test(rt, request_round_trips_limits);
	tcase_add_test(rt, decoder_takes_limits_in_any_order);
	tcase_add_test(rt, list_items_are_walked_in_order);
	tcase_add_test(rt, encoder_refuses_invalid_binds);
	tcase_add_test(rt, result_round_trips_all_fields);
	tcase_add_test(rt, result_round_trips_negative_exit_codes);
	tcase_add_test(rt, result_round_trips_absent_blob);
	tcase_add_test(rt, result_round_trips_4gb_blob_length);
	tcase_add_test(rt, encoder_writes_scalars_and_skips_absent_fields);
	tcase_add_test(rt, decoder_accepts_fields_in_any_order);
	tcase_add_test(rt, encoder_refuses_invalid_request);
	tcase_add_test(rt, encoder_refuses_save_flag_blob_mismatch);
	tcase_add_test(rt, encoder_refuses_frame_over_max);
	suite_add_tcase(s, rt);

	tcase_add_test(rej, rejects_bad_magic);
	tcase_add_test(rej, rejects_wrong_kind);
	tcase_add_test(rej, rejects_unknown_kind);
	tcase_add_test(rej, rejects_result_tag_in_request_frame);
	tcase_add_test(rej, rejects_request_tag_in_result_frame);
	tcase_add_test(rej, rejects_unknown_tag);
	tcase_add_test(rej, rejects_truncated_header);
	tcase_add_test(rej, rejects_truncated_body);
	tcase_add_test(rej, rejects_trailing_bytes);
	tcase_add_test(rej, rejects_header_over_frame_max);
	tcase_add_test(rej, rejects_truncated_field_header);
	tcase_add_test(rej, rejects_field_overrunning_body);
	tcase_add_test(rej, rejects_field_length_that_would_overflow);
	tcase_add_test(rej, rejects_repeated_field);
	tcase_add_test(rej, rejects_missing_code);
	tcase_add_test(rej, rejects_missing_session);
	tcase_add_test(rej, rejects_missing_exit_code);
	tcase_add_test(rej, rejects_missing_result_flags);
	tcase_add_test(rej, rejects_empty_frame);
	tcase_add_test(rej, rejects_too_many_toolboxes);
	tcase_add_test(rej, rejects_toolbox_without_nul);
	tcase_add_test(rej, rejects_toolbox_with_two_nuls);
	tcase_add_test(rej, rejects_toolbox_with_empty_side);
	tcase_add_test(rej, rejects_scalar_of_wrong_length);
	tcase_add_test(rej, rejects_malformed_binds);
	tcase_add_test(rej, rejects_malformed_limits);
	tcase_add_test(rej, rejects_unknown_limit);
	tcase_add_test(rej, rejects_retired_limit_tags);
	tcase_add_test(rej, rejects_save_flag_without_blob);
	tcase_add_test(rej, rejects_blob_without_save_flag);
	tcase_add_test(rej, rejects_blob_length_without_session_flag);
	tcase_add_test(rej, rejects_retired_inline_blob_tags);
	tcase_add_test(rej, rejects_every_truncation_of_a_valid_frame);
	tcase_add_test(rej, decoder_tolerates_missing_or_tiny_err_buffer);
	suite_add_tcase(s, rej);

	tcase_add_test(misc, total_len_reads_valid_headers);
	tcase_add_test(misc, total_len_rejects_bad_headers);
	tcase_add_test(misc, span_str_covers_string);
	tcase_add_test(misc, regress_inputs_decode_without_crashing);
	suite_add_tcase(s, misc);
	return s;
}

int main(void)
{
	return ck_run(frame_suite());
}
