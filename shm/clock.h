/* SPDX-License-Identifier: MIT */
/*
 * clock.h - a clock's time as one number, the one place a timespec is
 * turned into nanoseconds, for every layer: CLOCK_MONOTONIC for
 * intervals, ticks and deadlines; CLOCK_REALTIME for what is shown or
 * written (when a tick was, when a process started or ended).
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

/* CLOCK_MONOTONIC, in nanoseconds. */
static inline uint64_t
mstat_clock_mono_ns(void)
{
	return mstat_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME, in nanoseconds. */
static inline uint64_t
mstat_clock_wall_ns(void)
{
	return mstat_clock_ns(CLOCK_REALTIME);
}

#endif /* MSTAT_SHM_CLOCK_H */
