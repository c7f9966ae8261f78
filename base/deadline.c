/*
 * deadline.c - time left until a point on CLOCK_MONOTONIC.
 */
#include "deadline.h"

#define NS 1000000000L

static void add_ns(struct timespec *d, time_t sec, long nsec)
{
	clock_gettime(CLOCK_MONOTONIC, d);
	d->tv_sec += sec;
	d->tv_nsec += nsec;
	if (d->tv_nsec >= NS) {
		d->tv_sec++;
		d->tv_nsec -= NS;
	}
}

void deadline_in(struct timespec *d, double seconds)
{
	double whole = (double)(long long)seconds;

	add_ns(d, (time_t)whole, (long)((seconds - whole) * 1e9));
}

void deadline_in_ms(struct timespec *d, long ms)
{
	add_ns(d, ms / 1000, (ms % 1000) * 1000000L);
}

void deadline_in_ns(struct timespec *d, uint64_t ns)
{
	add_ns(d, (time_t)(ns / (uint64_t)NS), (long)(ns % (uint64_t)NS));
}

double deadline_left(const struct timespec *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(d->tv_sec - now.tv_sec) + (double)(d->tv_nsec - now.tv_nsec) / 1e9;
}

long long deadline_ns_left(const struct timespec *d)
{
	struct timespec now;
	long long left;

	clock_gettime(CLOCK_MONOTONIC, &now);
	left = (long long)(d->tv_sec - now.tv_sec) * NS + (d->tv_nsec - now.tv_nsec);
	return left > 0 ? left : 0;
}

int deadline_poll_ms(double left)
{
	return left > DEADLINE_POLL_MAX_MS / 1000.0 ? DEADLINE_POLL_MAX_MS
	                                            : (int)(left * 1000) + 1;
}

int deadline_poll_min(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

double deadline_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
