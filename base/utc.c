/*
 * utc.c - a wall-clock time as text (utc.h).
 */
#include "utc.h"

void utc_text(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (len == 0)
		return;
	if (!gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%S+00:00", &tm) == 0)
		buf[0] = '\0';
}
