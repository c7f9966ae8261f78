/*
 * check_output.c - capture caps and the rendering of a result.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "output.h"

/* Render r and return what went to stdout and stderr. */
static void render(const struct result *r, char **out, char **err)
{
	size_t on, en;
	FILE *fo = open_memstream(out, &on), *fe = open_memstream(err, &en);

	ck_assert_int_eq(output_render(r, fo, fe), 0);
	fclose(fo);
	fclose(fe);
}

START_TEST(capture_counts_code_points)
{
	struct capture c;

	capture_init(&c, 6);
	capture_feed(&c, "h\xc3\xa9llo", 6);   /* h é l l o: 5 chars, 6 bytes */
	ck_assert_uint_eq(c.len, 4);             /* the head: 3 chars */
	ck_assert(memcmp(c.data, "h\xc3\xa9l", 4) == 0);
	ck_assert_uint_eq(c.chars, 3);
	ck_assert_uint_eq(c.total, 6);
	ck_assert(!c.truncated);
	capture_feed(&c, "more", 4);
	ck_assert(c.truncated);                  /* 9 chars of 6 */
	ck_assert_uint_eq(c.total, 10);
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_str_eq(c.data, "h\xc3\xa9l\n[output truncated: kept the first 3 and the "
	                 "last 3 chars; cut 3 bytes (3 chars) here]\nore");
	ck_assert_uint_eq(c.chars, 6);
	ck_assert_uint_eq(c.cut_chars, 3);
	ck_assert_uint_eq(c.cut_bytes, 3);
	capture_release(&c);
}
END_TEST

START_TEST(capture_within_the_cap_is_whole)
{
	struct capture c;

	capture_init(&c, 6);
	capture_feed(&c, "abc", 3);
	capture_feed(&c, "de\xc3", 3);
	capture_feed(&c, "\xa9", 1);
	ck_assert(!c.truncated);
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_str_eq(c.data, "abcde\xc3\xa9");
	ck_assert_uint_eq(c.chars, 6);
	ck_assert_int_eq(capture_finish(&c), 0);   /* again: nothing */
	ck_assert_str_eq(c.data, "abcde\xc3\xa9");
	capture_release(&c);
}
END_TEST

/* The head ends and the tail starts at a line break when one is near. */
START_TEST(capture_cuts_at_line_breaks)
{
	struct capture c;
	char line[16];

	capture_init(&c, 40);
	for (int i = 0; i < 100; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);

		capture_feed(&c, line, (size_t)n);
	}
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_str_eq(c.data, "line 0\nline 1\n[output truncated: kept the first 14 and the "
	                 "last 16 chars; cut 760 bytes (760 chars) here]\nline 98\nline 99\n");
	ck_assert_uint_eq(c.head_chars + c.tail_chars, c.chars);
	ck_assert_uint_eq(c.head_len, 14);
	capture_release(&c);
}
END_TEST

/* A tail never starts inside a char, however the window fell. */
START_TEST(capture_tail_starts_at_a_char)
{
	struct capture c;

	for (size_t chunk = 1; chunk < 9; chunk++) {
		capture_init(&c, 10);
		for (int i = 0; i < 200; i++)
			for (size_t off = 0; off < 3; off += chunk)
				capture_feed(&c, "\xe2\x82\xac" + off, chunk < 3 - off ? chunk : 3 - off);
		ck_assert_int_eq(capture_finish(&c), 0);
		ck_assert_uint_eq(c.head_chars, 5);
		ck_assert_uint_eq(c.tail_chars, 5);
		ck_assert_uint_eq(c.cut_bytes, 190 * 3);
		ck_assert_uint_eq(c.cut_chars, 190);
		ck_assert(memcmp(c.data + c.len - 15, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
		                 "\xe2\x82\xac\xe2\x82\xac", 15) == 0);
		ck_assert((unsigned char)c.data[c.len - 16] == '\n');
		capture_release(&c);
	}
}
END_TEST

START_TEST(capture_uncapped_keeps_all)
{
	struct capture c;
	char big[100000];

	memset(big, 'q', sizeof(big));
	capture_init(&c, 0);
	for (int i = 0; i < 10; i++)
		capture_feed(&c, big, sizeof(big));
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_uint_eq(c.len, 1000000);
	ck_assert(!c.truncated);
	capture_release(&c);
}
END_TEST

START_TEST(capture_memory_is_bounded)
{
	struct capture c;
	char big[65536];

	memset(big, 'q', sizeof(big));
	capture_init(&c, 1000);
	for (int i = 0; i < 1000; i++)
		capture_feed(&c, big, sizeof(big));
	ck_assert_uint_le(c.alloc, 8192);
	ck_assert_uint_le(c.rest_alloc, 8192);
	ck_assert_uint_eq(c.total, 65536000);
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_uint_eq(c.chars, 1000);
	ck_assert_uint_eq(c.cut_bytes, 65536000 - 1000);
	capture_release(&c);
}
END_TEST

/* Invalid UTF-8 must not dodge the cap: a byte that continues no
 * character (0x80-0xbf after no lead byte) counts as one. */
START_TEST(capture_continuation_bytes_are_capped)
{
	struct capture c;
	char junk[65536];

	memset(junk, 0x80, sizeof(junk));
	capture_init(&c, 100);
	for (int i = 0; i < 100; i++)
		capture_feed(&c, junk, sizeof(junk));
	ck_assert(c.truncated);
	ck_assert_uint_eq(c.len, 50);
	ck_assert_uint_le(c.alloc, 8192);
	ck_assert_uint_le(c.rest_alloc, 8192);
	ck_assert_uint_eq(c.chars, 50);
	ck_assert_int_eq(capture_finish(&c), 0);
	ck_assert_uint_eq(c.chars, 100);
	capture_release(&c);
	/* A 4-byte lead owns three continuation bytes, not more. */
	capture_init(&c, 4);
	capture_feed(&c, "\xf0\x80\x80\x80\x80\x80", 6);
	ck_assert_uint_eq(c.len, 5);
	ck_assert_uint_eq(c.chars, 2);
	ck_assert(!c.truncated);
	capture_release(&c);
}
END_TEST

START_TEST(render_success)
{
	struct result r;
	char *out, *err;

	result_init(&r, 100);
	capture_feed(&r.out, "hello", 5);
	r.value = strdup("42");
	r.value_len = 2;
	r.saved = true;
	r.held = strdup("a\nb");
	render(&r, &out, &err);
	ck_assert_str_eq(out, "hello\n42\n");
	ck_assert_str_eq(err, "session now holds: a, b\n");
	free(out);
	free(err);
	result_release(&r);
}
END_TEST

START_TEST(render_kept_unloaded_names_after_the_held_ones)
{
	struct result r;
	char *out, *err;

	result_init(&r, 100);
	r.saved = true;
	r.held = strdup("a\nb");
	r.kept = strdup("k\tModuleNotFoundError: No module named 'tb'\nl\tOSError: x");
	render(&r, &out, &err);
	ck_assert_str_eq(err, "session now holds: a, b; kept unloaded: k, l\n");
	free(out);
	free(err);
	free(r.held);
	r.held = strdup("");
	render(&r, &out, &err);
	ck_assert_str_eq(err, "session now holds: (nothing); kept unloaded: k, l\n");
	free(out);
	free(err);
	result_release(&r);
}
END_TEST

START_TEST(render_failure_order)
{
	struct result r;
	char *out, *err;

	result_init(&r, 100);
	r.session = "s";
	capture_feed(&r.err, "cell said", 9);
	r.error = strdup("ValueError: bad (line 3)");
	r.saved = true;
	r.held = strdup("");
	r.dropped = strdup("g\tTypeError: no\nh\tTypeError: nope");
	r.save_error = strdup("disk full");
	render(&r, &out, &err);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(err, "cell said\nValueError: bad (line 3)\n"
	                      "session now holds: (nothing)\n"
	                      "warning: dropped unpicklable names (gone next call): "
	                      "g (TypeError: no), h (TypeError: nope)\n"
	                      "warning: session 's' not saved: disk full\n");
	free(out);
	free(err);
	result_release(&r);
}
END_TEST

START_TEST(render_truncation_marker)
{
	struct result r;
	char *out, *err;

	result_init(&r, 4);
	capture_feed(&r.out, "abcdefgh", 8);
	capture_finish(&r.out);
	r.value = strdup("1");
	r.value_len = 1;
	render(&r, &out, &err);
	ck_assert_str_eq(out, "ab\n[output truncated: kept the first 2 and the last 2 chars; "
	                 "cut 4 bytes (4 chars) here]\ngh\n1\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	result_release(&r);
}
END_TEST

/* Issue 35: the cell's stderr lines that start as dolsot's own do are
 * marked, wherever they are in it; dolsot's own lines after it are not. */
START_TEST(render_marks_cell_lines_that_look_like_dolsots)
{
	static const char cell[] =
		"dolsot: fake\n"
		"fine\n"
		"session now holds: everything\n"
		"warning: w\nhint: h\n"
		"dolsot worker: x\n"
		"[output truncated: kept 1 chars of 2 bytes]\n"
		"[error truncated: no]\n"
		"TimeoutError: cell killed after exceeding its 1s timeout\n"
		"SystemExit: 0: the cell ended the interpreter\n"
		"TimeoutError: a real one\n"
		"  dolsot: indented already\n"
		"dolsotish\n"
		"a dolsot: in the middle\n"
		"warning: no newline";
	struct result r;
	char *out, *err;

	result_init(&r, 0);
	capture_feed(&r.err, cell, sizeof(cell) - 1);
	r.saved = true;
	r.held = strdup("a");
	render(&r, &out, &err);
	ck_assert_str_eq(err,
		"  dolsot: fake\n"
		"fine\n"
		"  session now holds: everything\n"
		"  warning: w\n  hint: h\n"
		"  dolsot worker: x\n"
		"  [output truncated: kept 1 chars of 2 bytes]\n"
		"  [error truncated: no]\n"
		"  TimeoutError: cell killed after exceeding its 1s timeout\n"
		"  SystemExit: 0: the cell ended the interpreter\n"
		"TimeoutError: a real one\n"
		"  dolsot: indented already\n"
		"dolsotish\n"
		"a dolsot: in the middle\n"
		"  warning: no newline\n"
		"session now holds: a\n");
	free(out);
	free(err);
	result_release(&r);
	/* Cut by the cap: the marker that follows is dolsot's. */
	result_init(&r, 16);
	capture_feed(&r.err, "hint: abcdefgh\nhint: ijklmnopq", 30);
	capture_finish(&r.err);
	render(&r, &out, &err);
	ck_assert_str_eq(err, "  hint: ab\n[output truncated: kept the first 8 and the last "
	                 "8 chars; cut 14 bytes (14 chars) here]\njklmnopq");
	free(out);
	free(err);
	result_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("output");

	tcase_add_test(tc, capture_counts_code_points);
	tcase_add_test(tc, capture_within_the_cap_is_whole);
	tcase_add_test(tc, capture_cuts_at_line_breaks);
	tcase_add_test(tc, capture_tail_starts_at_a_char);
	tcase_add_test(tc, capture_uncapped_keeps_all);
	tcase_add_test(tc, capture_memory_is_bounded);
	tcase_add_test(tc, capture_continuation_bytes_are_capped);
	tcase_add_test(tc, render_success);
	tcase_add_test(tc, render_kept_unloaded_names_after_the_held_ones);
	tcase_add_test(tc, render_failure_order);
	tcase_add_test(tc, render_truncation_marker);
	tcase_add_test(tc, render_marks_cell_lines_that_look_like_dolsots);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
