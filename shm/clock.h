/* SPDX-License-Identifier: MIT */
/*
 * clock.h - a clock's time as one number, the one place a timespec is
 * turned into nanoseconds, for every layer: CLOCK_MONOTONIC for
 * intervals, ticks and deadlines; CLOCK_REALTIME for what is shown or
 * written (when a tick was, when a process started or ended); and the
 * CPU's tick counter, for the lifetimes of sampled blocks.
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

/*
 * A tick counter that every process of the machine reads alike: the
 * time-stamp counter on x86-64 (constant and shared by every CPU where
 * the kernel uses it as its clock), the virtual counter on aarch64,
 * CLOCK_MONOTONIC's nanoseconds elsewhere.  One instruction, where
 * CLOCK_MONOTONIC is twenty or so: the sampled path reads it twice per
 * block (lib/profile.c).  Its rate is not known here: a reader measures
 * it against CLOCK_MONOTONIC (shm/reader.h, struct mstat_profile).
 */
static inline uint64_t
mstat_clock_ticks(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return mstat_clock_mono_ns();
#endif
}

#endif /* MSTAT_SHM_CLOCK_H */
