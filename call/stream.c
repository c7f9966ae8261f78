/*
 * stream.c - a cell's output as it comes, in bounded chunks (stream.h).
 */
#include "stream.h"

#include <string.h>

#include "deadline.h"

static struct stream *of_tap(struct capture_tap *tap)
{
	return (struct stream *)(void *)tap;   /* tap is its first member */
}

/* Bytes at the end of p[0..n) that begin a char not complete yet. */
static size_t partial_tail(const char *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char b = (unsigned char)p[n - back];
		size_t want;

		if ((b & 0xc0) == 0x80)
			continue;
		want = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 1;
		return want > back ? back : 0;
	}
	return 0;
}

/* What of side may go out now: all of it at the end, else whole chars. */
static size_t ready(const struct stream_side *side, bool end)
{
	return end ? side->len : side->len - partial_tail(side->buf, side->len);
}

static void emit(struct stream *s, int which, bool end)
{
	struct stream_side *side = &s->side[which];
	size_t n = ready(side, end);
	struct stream_chunk c = { which ? "stderr" : "stdout", side->buf, n, 0, side->dropped };

	if (!n)
		return;
	c.seq = ++s->seq;
	s->sink(s->ctx, &c);
	memmove(side->buf, side->buf + n, side->len - n);
	side->len -= n;
	side->dropped = 0;
}

static void round_out(struct stream *s, bool end)
{
	if (!ready(&s->side[0], end) && !ready(&s->side[1], end))
		return;
	emit(s, 0, end);
	emit(s, 1, end);
	s->last = deadline_now();
}

/* Keep the newest STREAM_CHUNK_MAX bytes, starting at a char. */
static void side_add(struct stream_side *side, const char *buf, size_t n)
{
	size_t skip = 0;

	if (n >= STREAM_CHUNK_MAX) {
		side->dropped += side->len + (n - STREAM_CHUNK_MAX);
		buf += n - STREAM_CHUNK_MAX;
		n = STREAM_CHUNK_MAX;
		side->len = 0;
		skip = 1;
	} else if (side->len + n > STREAM_CHUNK_MAX) {
		size_t excess = side->len + n - STREAM_CHUNK_MAX;

		memmove(side->buf, side->buf + excess, side->len - excess);
		side->len -= excess;
		side->dropped += excess;
		skip = 1;
	}
	memcpy(side->buf + side->len, buf, n);
	side->len += n;
	if (!skip)
		return;
	while (skip <= 3 && skip <= side->len && ((unsigned char)side->buf[skip - 1] & 0xc0) == 0x80)
		skip++;
	skip--;
	memmove(side->buf, side->buf + skip, side->len - skip);
	side->len -= skip;
	side->dropped += skip;
}

static bool due(const struct stream *s, double now)
{
	return !s->last || now - s->last >= s->interval;
}

static void tap_feed(struct capture_tap *tap, const struct capture *c, const char *buf,
                     size_t n)
{
	struct stream *s = of_tap(tap);

	side_add(&s->side[c == s->err], buf, n);
	if (due(s, deadline_now()))
		round_out(s, false);
}

static int tap_wait_ms(struct capture_tap *tap, int ms)
{
	struct stream *s = of_tap(tap);
	double left;
	int wait;

	if (!ready(&s->side[0], false) && !ready(&s->side[1], false))
		return ms;
	left = s->last + s->interval - deadline_now();
	wait = left <= 0 ? 0 : (int)(left * 1000) + 1;
	return ms < 0 || wait < ms ? wait : ms;
}

static void tap_tick(struct capture_tap *tap)
{
	struct stream *s = of_tap(tap);

	if (due(s, deadline_now()))
		round_out(s, false);
}

void stream_attach(struct stream *s, struct capture *out, struct capture *err,
                   double interval, stream_sink_fn sink, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->tap = (struct capture_tap){ tap_feed, tap_wait_ms, tap_tick };
	s->out = out;
	s->err = err;
	s->interval = interval;
	s->sink = sink;
	s->ctx = ctx;
	out->tap = err->tap = &s->tap;
}

void stream_flush(struct stream *s)
{
	round_out(s, true);
}
