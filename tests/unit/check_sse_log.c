/*
 * check_sse_log.c - mcp/sse_log.c: an SSE stream's replay log numbers its
 * events from 1, keeps the newest SSE_LOG_EVENTS and SSE_LOG_BYTES of
 * them, replays exactly those after an id, and tells an id whose
 * following events are gone from one never given.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "sse_log.h"

struct replayed {
	uint64_t first, last;
	size_t n;
	char text[64];              /* the last event's */
};

static void take(void *ctx, const struct sse_event *e)
{
	struct replayed *r = ctx;

	if (r->n == 0)
		r->first = e->seq;
	ck_assert_uint_eq(e->seq, r->n ? r->last + 1 : e->seq);
	r->last = e->seq;
	r->n++;
	snprintf(r->text, sizeof(r->text), "%.*s", (int)e->len, e->data);
}

START_TEST(replays_the_events_after_an_id)
{
	struct sse_log l;
	struct replayed r = { 0 };
	char line[32];

	sse_log_init(&l);
	for (int i = 1; i <= 5; i++) {
		snprintf(line, sizeof(line), "event %d", i);
		ck_assert_uint_eq(sse_log_add(&l, line, strlen(line)), (uint64_t)i);
	}
	ck_assert_int_eq(sse_log_after(&l, 2, take, &r), SSE_LOG_OK);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_uint_eq(r.first, 3);
	ck_assert_str_eq(r.text, "event 5");
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(sse_log_after(&l, 5, take, &r), SSE_LOG_OK);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(sse_log_after(&l, 0, take, &r), SSE_LOG_UNKNOWN);
	ck_assert_int_eq(sse_log_after(&l, 6, take, &r), SSE_LOG_UNKNOWN);
	ck_assert_int_eq(sse_log_after(&l, 3, NULL, NULL), SSE_LOG_OK);
	ck_assert_uint_eq(r.n, 0);
	sse_log_release(&l);
}
END_TEST

START_TEST(keeps_at_most_its_cap_of_events)
{
	struct sse_log l;
	struct replayed r = { 0 };
	uint64_t total = SSE_LOG_EVENTS + 10;

	sse_log_init(&l);
	for (uint64_t i = 1; i <= total; i++)
		ck_assert_uint_eq(sse_log_add(&l, "x", 1), i);
	ck_assert_uint_eq(l.n, SSE_LOG_EVENTS);
	/* The oldest kept is 11: after 10 all are there, after 9 not. */
	ck_assert_int_eq(sse_log_after(&l, 9, take, &r), SSE_LOG_GONE);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(sse_log_after(&l, 10, take, &r), SSE_LOG_OK);
	ck_assert_uint_eq(r.n, SSE_LOG_EVENTS);
	ck_assert_uint_eq(r.first, 11);
	ck_assert_uint_eq(r.last, total);
	sse_log_release(&l);
}
END_TEST

START_TEST(keeps_at_most_its_cap_of_bytes)
{
	struct sse_log l;
	size_t big = SSE_LOG_BYTES / 4 + 1;
	char *data = malloc(SSE_LOG_BYTES + 1);
	struct replayed r = { 0 };

	ck_assert_ptr_nonnull(data);
	memset(data, 'b', SSE_LOG_BYTES + 1);
	sse_log_init(&l);
	for (int i = 0; i < 4; i++)
		sse_log_add(&l, data, big);
	/* Four of a quarter and a byte pass the cap: the first is gone. */
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_le(l.bytes, SSE_LOG_BYTES);
	ck_assert_int_eq(sse_log_after(&l, 1, take, &r), SSE_LOG_OK);
	ck_assert_uint_eq(r.n, 3);
	/* One larger than the cap is kept alone, the newest. */
	ck_assert_uint_eq(sse_log_add(&l, data, SSE_LOG_BYTES + 1), 5);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_int_eq(sse_log_after(&l, 3, take, &r), SSE_LOG_GONE);
	ck_assert_int_eq(sse_log_after(&l, 4, NULL, NULL), SSE_LOG_OK);
	sse_log_release(&l);
	free(data);
}
END_TEST

static Suite *sse_log_suite(void)
{
	Suite *s = suite_create("sse_log");
	TCase *tc = tcase_create("log");

	tcase_add_test(tc, replays_the_events_after_an_id);
	tcase_add_test(tc, keeps_at_most_its_cap_of_events);
	tcase_add_test(tc, keeps_at_most_its_cap_of_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(sse_log_suite());
}
