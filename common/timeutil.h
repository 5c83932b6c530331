/*
 * Clock readings in the units the programs keep time in.  Header-only
 * (static inline): called in every main loop iteration.
 */
#ifndef EMBER_TIMEUTIL_H
#define EMBER_TIMEUTIL_H

#include <stdint.h>
#include <time.h>

static inline uint64_t timeutil__now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall clock, for timestamps that leave the process (meters, task starts). */
static inline uint64_t timeutil__unix_ms(void)
{
	return timeutil__now_ns(CLOCK_REALTIME) / 1000000;
}

/* Monotonic, for deadlines and intervals. */
static inline uint64_t timeutil__mono_ms(void)
{
	return timeutil__now_ns(CLOCK_MONOTONIC) / 1000000;
}

#endif
