/*
 * check_chunks.c - call/stream.c: a call's captures tapped into bounded
 * chunks (coalesced, a flood's older bytes dropped and counted, whole
 * UTF-8 characters, a sequence over both streams), the captures unchanged.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "output.h"
#include "stream.h"

#define MAX_SEEN 16

struct seen {
	int n;
	char name[MAX_SEEN][8];
	char *text[MAX_SEEN];
	size_t len[MAX_SEEN];
	unsigned long long seq[MAX_SEEN], dropped[MAX_SEEN];
};

static void sink(void *ctx, const struct stream_chunk *c)
{
	struct seen *s = ctx;

	ck_assert_int_lt(s->n, MAX_SEEN);
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", c->name);
	s->text[s->n] = strndup(c->text, c->len);
	s->len[s->n] = c->len;
	s->seq[s->n] = c->seq;
	s->dropped[s->n] = c->dropped;
	s->n++;
}

static void seen_release(struct seen *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->text[i]);
}

/* Interval 1000 s: after the first round nothing goes out until the
 * flush, so what a round holds is all that was fed meanwhile. */
START_TEST(the_first_chunk_goes_at_once_then_rounds_coalesce)
{
	struct result r;
	struct stream st;
	struct seen s = { 0 };

	result_init(&r, 100);
	stream_attach(&st, &r.out, &r.err, 1000, sink, &s);
	capture_feed(&r.out, "a", 1);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.text[0], "a");
	capture_feed(&r.out, "b", 1);
	capture_feed(&r.err, "E", 1);
	capture_feed(&r.out, "c", 1);
	ck_assert_int_eq(s.n, 1);
	/* A poll loop may wait until the round is due, no longer. */
	ck_assert_int_gt(capture_tap_wait(&r.out, -1), 0);
	ck_assert_int_le(capture_tap_wait(&r.out, -1), 1000 * 1000 + 1);
	ck_assert_int_eq(capture_tap_wait(&r.out, 5), 5);
	capture_tap_tick(&r.out);
	ck_assert_int_eq(s.n, 1);
	stream_flush(&st);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.name[1], "stdout");
	ck_assert_str_eq(s.text[1], "bc");
	ck_assert_str_eq(s.name[2], "stderr");
	ck_assert_str_eq(s.text[2], "E");
	ck_assert_uint_eq(s.seq[0], 1);
	ck_assert_uint_eq(s.seq[2], 3);
	/* Nothing pending: a poll waits as it would. */
	ck_assert_int_eq(capture_tap_wait(&r.out, -1), -1);
	capture_finish(&r.out);
	ck_assert_str_eq(r.out.data, "abc");
	seen_release(&s);
	result_release(&r);
}
END_TEST

/* A flood keeps the newest STREAM_CHUNK_MAX bytes from a char on, and
 * counts the rest; the capture keeps its own head and tail. */
START_TEST(a_flood_keeps_its_newest_bytes_from_a_char)
{
	struct result r;
	struct stream st;
	struct seen s = { 0 };
	char *euros = malloc(9000);

	for (int i = 0; i < 3000; i++)
		memcpy(euros + 3 * i, "\xe2\x82\xac", 3);
	result_init(&r, 10);
	stream_attach(&st, &r.out, &r.err, 1000, sink, &s);
	capture_feed(&r.out, "x", 1);
	capture_feed(&r.out, euros, 9000);
	stream_flush(&st);
	ck_assert_int_eq(s.n, 2);
	/* 8192 newest bytes start 1 byte into a char: 2 more are dropped. */
	ck_assert_uint_eq(s.len[1], 8190);
	ck_assert_uint_eq(s.dropped[1], 810);
	ck_assert(memcmp(s.text[1], "\xe2\x82\xac", 3) == 0);
	ck_assert_uint_eq(s.len[1] + s.dropped[1], 9000);
	capture_finish(&r.out);
	ck_assert_uint_eq(r.out.head_chars, 5);
	ck_assert_uint_eq(r.out.tail_chars, 5);
	free(euros);
	seen_release(&s);
	result_release(&r);
}
END_TEST

/* A char split between reads waits for its end; the flush sends it all. */
START_TEST(a_split_char_waits_for_its_end)
{
	struct result r;
	struct stream st;
	struct seen s = { 0 };

	result_init(&r, 0);
	stream_attach(&st, &r.out, &r.err, 0, sink, &s);
	capture_feed(&r.out, "\xe2\x82", 2);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(capture_tap_wait(&r.out, -1), -1);   /* nothing ready */
	capture_feed(&r.out, "\xac!", 2);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.text[0], "\xe2\x82\xac!");
	capture_feed(&r.out, "\xe2", 1);
	stream_flush(&st);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.text[1], "\xe2");
	seen_release(&s);
	result_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chunks");
	TCase *tc = tcase_create("chunks");

	tcase_add_test(tc, the_first_chunk_goes_at_once_then_rounds_coalesce);
	tcase_add_test(tc, a_flood_keeps_its_newest_bytes_from_a_char);
	tcase_add_test(tc, a_split_char_waits_for_its_end);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
