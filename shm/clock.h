/* SPDX-License-Identifier: MIT */
/*
 * clock.h - a clock's time as one number, for shm/, lib/ and the
 * launcher: the one place a timespec is turned into nanoseconds.
 * Async-signal-safe (clock_gettime() is), allocates nothing.
 */
#ifndef MSTAT_SHM_CLOCK_H
#define MSTAT_SHM_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
mstat_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
mstat_clock_us(clockid_t clock)
{
	return mstat_clock_ns(clock) / 1000u;
}

#endif /* MSTAT_SHM_CLOCK_H */
