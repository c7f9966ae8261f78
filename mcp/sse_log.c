/*
 * sse_log.c - one SSE stream's bounded replay log (sse_log.h): a queue of
 * events, the oldest dropped past the caps.
 */
#include "sse_log.h"

#include <stdlib.h>
#include <string.h>

void sse_log_init(struct sse_log *l)
{
	memset(l, 0, sizeof(*l));
	l->next = 1;
}

static void drop_oldest(struct sse_log *l)
{
	struct sse_event *e = l->oldest;

	l->oldest = e->next;
	if (!l->oldest)
		l->newest = NULL;
	l->bytes -= e->len;
	l->n--;
	free(e);
}

uint64_t sse_log_add(struct sse_log *l, const char *data, size_t n)
{
	struct sse_event *e = malloc(sizeof(*e) + n);

	if (!e)
		return 0;
	*e = (struct sse_event){ .seq = l->next, .len = n };
	memcpy(e->data, data, n);
	while (l->oldest && (l->n >= SSE_LOG_EVENTS || l->bytes + n > SSE_LOG_BYTES))
		drop_oldest(l);
	if (l->newest)
		l->newest->next = e;
	else
		l->oldest = e;
	l->newest = e;
	l->n++;
	l->bytes += n;
	return l->next++;
}

enum sse_log_from sse_log_after(const struct sse_log *l, uint64_t after,
                                void (*fn)(void *ctx, const struct sse_event *e), void *ctx)
{
	if (after == 0 || after >= l->next)
		return SSE_LOG_UNKNOWN;
	if (after + 1 < l->next - l->n)
		return SSE_LOG_GONE;
	for (const struct sse_event *e = l->oldest; fn && e; e = e->next)
		if (e->seq > after)
			fn(ctx, e);
	return SSE_LOG_OK;
}

void sse_log_release(struct sse_log *l)
{
	while (l->oldest)
		drop_oldest(l);
	sse_log_init(l);
}
