/*
 * fuzz_json.c - libFuzzer harness for what --json and the text contract's
 * image files read from the worker's answer: the displays, diagnostics and
 * error items (output_json.c), base64 image payloads (display_files.c),
 * and any bytes of the cell's streams made valid UTF-8.
 *
 * Byte 0 picks which field of a result the rest fills (all of them, for
 * values past 6); the result is rendered as JSON, which must come out as
 * one object jansson reads back, in valid UTF-8.  Every display's image
 * payload is decoded, which must stay within n / 4 * 3 bytes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display_files.h"
#include "fuzz.h"
#include "output_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct owned copy(const uint8_t *p, size_t n)
{
	struct owned o = { malloc(n + 1), n };

	CHECK(o.p);
	memcpy(o.p, p, n);
	o.p[n] = '\0';
	return o;
}

static void check_utf8(const uint8_t *p, size_t n)
{
	char *again = malloc(n * 3 + 1);
	size_t m;

	CHECK(again);
	m = output_json_utf8_clean((const char *)p, n, again);
	CHECK(m == n && memcmp(again, p, n) == 0);
	free(again);
}

static void decode_images(const struct owned *displays)
{
	struct span rest = { (const uint8_t *)displays->p, displays->len, displays->p != NULL };
	struct display_view d;

	while (output_json_displays_next(&rest, &d) > 0) {
		CHECK(d.n <= DISPLAY_MAX_MIMES);
		for (size_t i = 0; i < d.n; i++) {
			size_t cap = d.data[i].len / 4 * 3;
			uint8_t *out = malloc(cap + 1);
			long got;

			CHECK(out);
			got = display_files_base64_decode(d.data[i].p, d.data[i].len, out);
			CHECK(got <= (long)cap);
			free(out);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result r;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	json_t *back;
	uint8_t which;

	if (size < 1)
		return 0;
	which = data[0];
	data++;
	size--;
	result_init(&r, 0);
	r.session = "fuzz";
	if (which == 0 || which > 6)
		r.displays = copy(data, size);
	if (which == 1 || which > 6)
		r.diagnostics = copy(data, size);
	if (which == 2 || which > 6) {
		r.error_info = copy(data, size);
		r.error = strdup("E: x");
	}
	if (which == 3 || which > 6) {
		free(r.error);
		r.error = (char *)copy(data, size).p;
		r.hints = copy(data, size);
	}
	if (which == 4 || which > 6) {
		capture_feed(&r.out, data, size);
		r.value = (char *)copy(data, size).p;
		r.value_len = size;
	}
	if (which == 5 || which > 6) {
		r.truncated = copy(data, size);
		r.warnings = (char *)copy(data, size).p;
		r.held = (char *)copy(data, size).p;
		r.dropped = (char *)copy(data, size).p;
		r.kept = (char *)copy(data, size).p;
		r.saved = true;
	}
	if (which == 6 || which > 6)
		r.describe_json = copy(data, size);
	decode_images(&r.displays);
	f = open_memstream(&text, &len);
	CHECK(f);
	CHECK(output_json_run(&r, f) == 0);
	if (which == 6) {
		struct limits l = { { 0 } };

		CHECK(output_json_describe(&r, &l, 1.0, f) == 0);
	}
	CHECK(fclose(f) == 0);
	check_utf8((const uint8_t *)text, len);
	back = json_loadb(text, len, JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, NULL);
	CHECK(json_is_object(back));
	json_decref(back);
	free(text);
	result_release(&r);
	return 0;
}
