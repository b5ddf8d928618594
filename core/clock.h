/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the time as the core and its programs count it, in
 * nanoseconds: CLOCK_MONOTONIC for intervals, ticks and deadlines;
 * CLOCK_REALTIME for what is shown or written (when a tick was, when a
 * process started or ended).
 */
#ifndef MSTAT_CORE_CLOCK_H
#define MSTAT_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
mstat_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC. */
static inline uint64_t
mstat_clock_mono_ns(void)
{
	return mstat_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME. */
static inline uint64_t
mstat_clock_wall_ns(void)
{
	return mstat_clock_ns(CLOCK_REALTIME);
}

#endif /* MSTAT_CORE_CLOCK_H */
