/*
 * fuzz_output.c - libFuzzer harness for output.c: capturing a cell's
 * streams under the cap, and rendering a result.
 *
 * Bytes 0-1 pick the cap (0-1023 chars, 0 meaning none), byte 2 the size
 * of the chunks the stream arrives in; the rest is the stream.  The
 * capture must keep a prefix of the stream, count chars as the UTF-8
 * rules of output.h say, and never hold more than 4 bytes per char.  The
 * stream, cut in pieces, also fills the text fields of a result, which
 * must render without error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "output.h"

/* Chars in buf[0..n) by the rule of output.h, counted independently. */
static uint64_t count_chars(const uint8_t *buf, size_t n)
{
	uint64_t chars = 0;
	unsigned need = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t b = buf[i];

		if ((b & 0xc0) == 0x80 && need) {
			need--;
			continue;
		}
		chars++;
		need = b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 && b < 0xf0 ? 2 :
		       b >= 0xc0 && b < 0xe0 ? 1 : 0;
	}
	return chars;
}

static void fuzz_capture(uint64_t cap, size_t chunk, const uint8_t *s, size_t n,
                         struct capture *c)
{
	capture_init(c, cap);
	for (size_t off = 0; off < n; off += chunk) {
		size_t k = n - off < chunk ? n - off : chunk;

		CHECK(capture_feed(c, s + off, k) == 0);
		CHECK(c->total == off + k);
		CHECK(c->len <= c->total);
		CHECK(c->len == 0 || memcmp(c->data, s, c->len) == 0);
		CHECK(c->data == NULL || c->data[c->len] == '\0');
		if (!c->head_full)
			CHECK(c->chars == count_chars(s, c->len));
		if (cap) {
			CHECK(c->chars <= cap / 2);
			CHECK(c->len <= 4 * cap);
			CHECK(c->alloc <= 4096 || c->alloc <= 2 * (4 * cap + 1));
			CHECK(c->rest_alloc <= 4096 || c->rest_alloc <= 4 * (4 * cap + 4));
		}
		CHECK(!c->truncated || c->head_full);
	}
	CHECK(capture_finish(c) == 0);
	CHECK(c->len >= c->head_len + c->mark_len);
	if (!c->truncated)
		CHECK(c->len == n && (n == 0 || memcmp(c->data, s, n) == 0));
	else
		CHECK(c->chars <= cap && c->cut_bytes + c->len - c->mark_len == n &&
		      c->chars == c->head_chars + c->tail_chars &&
		      count_chars(s, n) == c->chars + c->cut_chars &&
		      memcmp(c->data, s, c->head_len) == 0 &&
		      memcmp(c->data + c->head_len + c->mark_len,
		             s + n - (c->len - c->head_len - c->mark_len),
		             c->len - c->head_len - c->mark_len) == 0);
	if (!cap)
		CHECK(c->len == n && !c->truncated);
}

/* A NUL-terminated copy of s[0..n), or NULL when none is set. */
static char *field(const uint8_t *s, size_t n, bool none)
{
	char *p;

	if (none)
		return NULL;
	p = malloc(n + 1);
	CHECK(p != NULL);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static void fuzz_render(const uint8_t *s, size_t n, uint8_t flags)
{
	struct result r;
	size_t cut = n / 6, outlen = 0, errlen = 0;
	char *out = NULL, *err = NULL;
	FILE *fo, *fe;

	result_init(&r, flags & 1 ? 7 : 0);
	CHECK(capture_feed(&r.out, s, cut) == 0);
	CHECK(capture_feed(&r.err, s + cut, cut) == 0);
	CHECK(capture_finish(&r.out) == 0 && capture_finish(&r.err) == 0);
	r.value = field(s + 2 * cut, cut / 2, flags & 2);
	r.value_len = r.value ? cut / 2 : 0;
	r.error = field(s + 2 * cut + cut / 2, cut / 2, flags & 4);
	r.held = field(s + 3 * cut, cut, flags & 8);
	r.dropped = field(s + 4 * cut, cut, flags & 16);
	r.warnings = field(s + 5 * cut, cut / 2, flags & 32);
	r.save_error = field(s + 5 * cut + cut / 2, n - 5 * cut - cut / 2, flags & 64);
	r.saved = flags & 128;
	r.session = "fuzz";
	fo = open_memstream(&out, &outlen);
	fe = open_memstream(&err, &errlen);
	CHECK(fo && fe);
	CHECK(output_render(&r, fo, fe) == 0);
	fclose(fo);
	fclose(fe);
	/* stdout starts with what was kept of the cell's stdout. */
	CHECK(outlen >= r.out.len && memcmp(out, r.out.data ? r.out.data : "", r.out.len) == 0);
	free(out);
	free(err);
	result_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct capture c;
	uint64_t cap;
	size_t chunk;

	if (size < 3)
		return 0;
	cap = (uint64_t)(data[0] | (data[1] << 8)) % 1024;
	chunk = data[2] ? data[2] : 1;
	fuzz_capture(cap, chunk, data + 3, size - 3, &c);
	capture_release(&c);
	fuzz_render(data + 3, size - 3, data[0]);
	return 0;
}
