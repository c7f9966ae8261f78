/*
 * fuzz_frame.c - libFuzzer harness for frame.c.
 *
 * Every input goes to both decoders.  Whatever decodes is encoded again and
 * decoded a second time: the two decodings must agree field by field, and a
 * second encoding must reproduce the first byte for byte (the encoder's
 * output is canonical).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"

static void check_span(struct span a, struct span b)
{
	CHECK(a.present == b.present);
	CHECK(a.len == b.len);
	CHECK(a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static void check_requests(const struct request *a, const struct request *b)
{
	check_span(a->code, b->code);
	check_span(a->session, b->session);
	CHECK(a->blob_len == b->blob_len);
	check_span(a->env, b->env);
	check_span(a->cwd, b->cwd);
	check_span(a->ty_bin, b->ty_bin);
	CHECK(a->n_toolboxes == b->n_toolboxes);
	for (size_t i = 0; i < a->n_toolboxes; i++) {
		check_span(a->toolboxes[i].module, b->toolboxes[i].module);
		check_span(a->toolboxes[i].alias, b->toolboxes[i].alias);
	}
	CHECK(a->max_output == b->max_output);
	CHECK(a->budget_ns == b->budget_ns);
	CHECK(a->flags == b->flags);
	for (int k = 0; k < LIMIT_COUNT; k++)
		CHECK(a->limits.v[k] == b->limits.v[k]);
	check_span(a->binds, b->binds);
	check_span(a->pids_cgroup, b->pids_cgroup);
	check_span(a->mem_cgroup, b->mem_cgroup);
}

static void check_results(const struct worker_result *a,
                          const struct worker_result *b)
{
	CHECK(a->exit_code == b->exit_code);
	CHECK(a->flags == b->flags);
	check_span(a->value, b->value);
	check_span(a->error, b->error);
	check_span(a->held, b->held);
	check_span(a->dropped, b->dropped);
	check_span(a->warnings, b->warnings);
	CHECK(a->blob_len == b->blob_len);
	CHECK(a->save_errno == b->save_errno);
	check_span(a->limit, b->limit);
}

static void check_same_bytes(const struct frame_buf *a,
                             const struct frame_buf *b)
{
	CHECK(a->len == b->len);
	CHECK(memcmp(a->data, b->data, a->len) == 0);
}

static void fuzz_request(const uint8_t *data, size_t size,
                         struct request *first, struct request *second)
{
	struct frame_buf enc = { 0 }, again = { 0 };
	char err[256];

	if (frame_decode_request(data, size, first, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		return;
	}
	CHECK(frame_total_len(data, size) == size);
	CHECK(frame_encode_request(&enc, first) == 0);
	CHECK(frame_decode_request(enc.data, enc.len, second, err,
				   sizeof(err)) == 0);
	check_requests(first, second);
	CHECK(frame_encode_request(&again, second) == 0);
	check_same_bytes(&enc, &again);
	frame_buf_release(&enc);
	frame_buf_release(&again);
}

static void fuzz_result(const uint8_t *data, size_t size)
{
	struct worker_result first, second;
	struct frame_buf enc = { 0 }, again = { 0 };
	char err[256];

	if (frame_decode_result(data, size, &first, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		return;
	}
	CHECK(frame_total_len(data, size) == size);
	CHECK(frame_encode_result(&enc, &first) == 0);
	CHECK(frame_decode_result(enc.data, enc.len, &second, err,
				  sizeof(err)) == 0);
	check_results(&first, &second);
	CHECK(frame_encode_result(&again, &second) == 0);
	check_same_bytes(&enc, &again);
	frame_buf_release(&enc);
	frame_buf_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* About 12 KB each, so on the heap where ASan watches the bounds. */
	struct request *first = malloc(sizeof(*first));
	struct request *second = malloc(sizeof(*second));

	CHECK(first && second);
	fuzz_request(data, size, first, second);
	fuzz_result(data, size);
	free(first);
	free(second);
	return 0;
}
