/*
 * deadline.h - time left until a point on CLOCK_MONOTONIC.
 *
 * Every file that waits for something with a time limit counts it here: a
 * deadline is a struct timespec on CLOCK_MONOTONIC, set once and compared
 * against the clock as often as needed.
 */
#ifndef DOLSOT_DEADLINE_H
#define DOLSOT_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* The longest single poll(): a timeout of up to a year in ms is no int,
 * so a waiter wakes at least hourly and looks at the clock again. */
#define DEADLINE_POLL_MAX_MS 3600000

/* *d = now + seconds, now + ms, now + ns. */
void deadline_in(struct timespec *d, double seconds);
void deadline_in_ms(struct timespec *d, long ms);
void deadline_in_ns(struct timespec *d, uint64_t ns);

/* Seconds until d (negative once it has passed). */
double deadline_left(const struct timespec *d);

/* Nanoseconds until d, 0 once it has passed. */
long long deadline_ns_left(const struct timespec *d);

/* A poll() timeout for left seconds (> 0): rounded up to the next ms, at
 * most DEADLINE_POLL_MAX_MS. */
int deadline_poll_ms(double left);

/* The sooner of two poll() timeouts in ms, -1 meaning none. */
int deadline_poll_min(int a, int b);

/* The monotonic clock in seconds, for measuring durations. */
double deadline_now(void);

#endif
