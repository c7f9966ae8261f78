/*
 * output_json.h - rendering a call's result as one JSON object (--json),
 * and the JSON forms of --describe, --list-sessions and --reset.  The
 * object's shape is schema/result.schema.json; dolsot(1) documents it.
 */
#ifndef DOLSOT_OUTPUT_JSON_H
#define DOLSOT_OUTPUT_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "frame.h"
#include "output.h"
#include "rlimits.h"
#include "store.h"
#include "stream.h"

/*
 * Each renders one object and a newline to out and flushes.  Returns 0, or
 * -1 with errno set (ENOMEM, or the write's).
 */
int output_json_run(const struct result *r, FILE *out);
/* --json-stream's line for one chunk of output (stream.h):
 * {"stream":"stdout","seq":1,"text":"...","dropped":0}. */
int output_json_chunk(const struct stream_chunk *c, FILE *out);
/* The worker's description (r->describe_json) with the limits in force. */
int output_json_describe(const struct result *r, const struct limits *l, double timeout,
                         FILE *out);
int output_json_sessions(const struct session_info *info, size_t n, FILE *out);
/* --reset's counts: sessions removed, and the text contract's images with
 * them; for "all", kept_in_use lists kept ("a, b" or NULL: none). */
int output_json_reset(const char *target, unsigned removed, unsigned images,
                      const char *kept, FILE *out);

/* The "limits:" line that ends --describe's text. */
void output_describe_limits(const struct limits *l, double timeout, FILE *out);

/*
 * Copy in[0..n) to out, each byte that is not part of valid UTF-8 (an
 * overlong form, a surrogate, past U+10FFFF, cut short) replaced by
 * U+FFFD.  out must hold 3 * n bytes; returns the bytes written.
 */
size_t output_json_utf8_clean(const char *in, size_t n, char *out);

/* s[0..n) (any bytes; NULL: "") as a JSON string, cleaned so; a new
 * reference, NULL only when memory ran out. */
json_t *output_json_string(const char *s, size_t n);

/* One display of a result's displays items (frame.h): its MIME forms. */
#define DISPLAY_MAX_MIMES 8
struct display_view {
	unsigned width, height;     /* 0 when not an image */
	size_t n;
	struct span mime[DISPLAY_MAX_MIMES];
	struct span data[DISPLAY_MAX_MIMES];
};

/* The next display of *rest: 1 with *d filled, 0 at the end, -1 when the
 * items are malformed (the rest is then ignored).  Spans point into rest. */
int output_json_displays_next(struct span *rest, struct display_view *d);

#endif
