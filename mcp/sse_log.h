/*
 * sse_log.h - one SSE stream's replay log for `dolsot mcp --http`'s
 * resumability: the stream's events (JSON-RPC lines) numbered 1, 2, ...,
 * the newest SSE_LOG_EVENTS of them and at most SSE_LOG_BYTES of their
 * bytes (besides the newest, always kept), so that a client that lost the
 * stream gets those after the last one it saw (its Last-Event-ID).
 */
#ifndef DOLSOT_SSE_LOG_H
#define DOLSOT_SSE_LOG_H

#include <stddef.h>
#include <stdint.h>

#define SSE_LOG_EVENTS 1024
#define SSE_LOG_BYTES ((size_t)512 << 10)

struct sse_event {
	struct sse_event *next;     /* the one after it */
	uint64_t seq;
	size_t len;
	char data[];
};

struct sse_log {
	struct sse_event *oldest, *newest;
	size_t n, bytes;
	uint64_t next;              /* the seq the next event gets (from 1) */
};

enum sse_log_from {
	SSE_LOG_OK,                 /* the events after it are all kept */
	SSE_LOG_GONE,               /* some after it are no longer kept */
	SSE_LOG_UNKNOWN,            /* never given (0, or not yet) */
};

void sse_log_init(struct sse_log *l);
/* Log data's n bytes as the next event: its seq, or 0 (out of memory,
 * nothing logged).  Drops the oldest past the caps. */
uint64_t sse_log_add(struct sse_log *l, const char *data, size_t n);
/* Call fn (NULL: none, only the answer) with each event after seq
 * `after`, oldest first, when the log still holds them all (SSE_LOG_OK);
 * else call it with none. */
enum sse_log_from sse_log_after(const struct sse_log *l, uint64_t after,
                                void (*fn)(void *ctx, const struct sse_event *e), void *ctx);
void sse_log_release(struct sse_log *l);

#endif
