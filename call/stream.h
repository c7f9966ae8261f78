/*
 * stream.h - a cell's output while it runs (--json-stream, the MCP
 * server's progress notifications): what each of a call's two captures is
 * fed, coalesced into chunks handed to a sink, at most one round of chunks
 * per interval and at most STREAM_CHUNK_MAX bytes a chunk (a flood's older
 * bytes are left out and counted), whole UTF-8 characters only.  It only
 * reads what the captures are fed: the call's result is the same with or
 * without it.
 */
#ifndef DOLSOT_STREAM_H
#define DOLSOT_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"

#define STREAM_CHUNK_MAX 8192

struct stream_chunk {
	const char *name;            /* "stdout" or "stderr" */
	const char *text;            /* bytes as the cell wrote them */
	size_t len;
	uint64_t seq;                /* 1, 2, ... over both streams */
	uint64_t dropped;            /* bytes of this stream left out before text */
};

typedef void (*stream_sink_fn)(void *ctx, const struct stream_chunk *chunk);

struct stream_side {
	char buf[STREAM_CHUNK_MAX];
	size_t len;
	uint64_t dropped;
};

struct stream {
	struct capture_tap tap;      /* first: the captures call it */
	const struct capture *out, *err;
	struct stream_side side[2];  /* stdout's, stderr's */
	double interval;             /* seconds between rounds of chunks */
	double last;                 /* when the last round went out; 0: never */
	uint64_t seq;
	stream_sink_fn sink;
	void *ctx;
};

/* Tap out and err (a call's captures) for s, whose chunks go to sink. */
void stream_attach(struct stream *s, struct capture *out, struct capture *err,
                   double interval, stream_sink_fn sink, void *ctx);

/* Hand the sink all that is pending, after the call's last byte was read. */
void stream_flush(struct stream *s);

#endif
