/* SPDX-License-Identifier: MIT */
/*
 * countdown.h - the sampling countdown and the weight of a sample, pure:
 * no thread-local state, no segment, no clock.  lib/profile.c keeps one
 * countdown per thread and asks the segment for the interval in effect;
 * tests/profile/test_estimator.c drives the same functions with seeded
 * random numbers over known allocations.
 *
 * Allocations are sampled per byte, as a Poisson process: a thread counts
 * down the bytes it is asked for from an exponential draw, and the
 * allocation that takes the countdown below zero is sampled.  The draw's
 * mean is the interval in effect when it is drawn.  When the countdown
 * runs out, the next one is drawn afresh (the bytes the sampled
 * allocation had left over count for nothing: the process is memoryless,
 * so the bytes after the allocation meet a fresh draw either way).
 *
 * Whatever happened before, the countdown that runs at the start of an
 * allocation of n bytes is an exponential draw of the mean it was drawn
 * from (conditioned on having lasted this long, it is still one: memoryless),
 * so the allocation is sampled with probability p = 1 - exp(-n / mean),
 * with that mean, not with the interval in effect when it runs out.  A
 * sample of a block counted with u bytes therefore stands for u / p bytes:
 * summed over the samples, an unbiased estimate of the bytes allocated,
 * whatever the interval did meanwhile (docs/design.md, "Heap profile").
 */
#ifndef MSTAT_LIB_COUNTDOWN_H
#define MSTAT_LIB_COUNTDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/layout.h"

/* While sampling is off, a thread looks again at the interval after this
 * many bytes: a countdown that is no draw, and samples nothing. */
#define MSTAT_RECHECK_BYTES (UINT64_C(64) << 20)
/* The largest weight of one sample, in bytes or in MSTAT_OBJECT_UNITS
 * (2^56): a bound for the conversion, far above any a block can have
 * (its counted bytes, or 256, over a probability of at least
 * 1 - exp(-1 / 2^40)). */
#define MSTAT_WEIGHT_MAX (UINT64_C(1) << 56)

struct mstat_countdown {
	/* xorshift64* state; 0 until its owner seeds it (lib/profile.c: at
	 * its thread's first draw, and at its first in a fork child). */
	uint64_t rng;
	/* The mean the running countdown was drawn from; 0 when it was no
	 * draw (none yet, or a look again while sampling is off). */
	uint64_t mean;
};

/* The fast path's step (writer.h, mstat_sample_due()): `n` bytes off the
 * countdown *left; true when that takes it below zero.  Unsigned
 * arithmetic: a huge `n` wraps, and such a block fails anyway. */
static inline __attribute__((always_inline)) bool
mstat_countdown_due(int64_t *left, size_t n)
{
	int64_t l = (int64_t)((uint64_t)*left - n);

	*left = l;
	return __builtin_expect(l < 0, 0);
}

/* The countdown *left ran out on an allocation of `n` bytes, `mean` being
 * the interval in effect now (0: off).  Draws the next countdown into
 * *left, and returns the mean interval the allocation is sampled at: the
 * running countdown's, or, if it was no draw, `mean`'s, for a fresh draw
 * against `n` (as at a thread's first allocation); 0 if it is not
 * sampled. */
uint64_t mstat_countdown_expired(struct mstat_countdown *c, int64_t *left,
				 uint64_t n, uint64_t mean)
	__attribute__((visibility("hidden")));

/* What a sample stands for (shm/layout.h, struct mstat_shm_stack). */
struct mstat_weight {
	uint64_t bytes;   /* counted / p, rounded */
	uint64_t objects; /* MSTAT_OBJECT_UNITS / p, rounded */
};

/* What a sample stands for, p being the probability 1 - exp(-requested /
 * interval) that an allocation of `requested` bytes (what its countdown
 * counted) was sampled at that mean interval: `counted` bytes (the size
 * the counters count the block with) over p, and one block over p, each
 * at most MSTAT_WEIGHT_MAX (`counted` bytes and one block for an interval
 * of 0, at which nothing is sampled).  Each from the sample's own size:
 * the blocks of a call site are sampled with probabilities as different
 * as their sizes. */
struct mstat_weight mstat_countdown_weight(uint64_t requested, uint64_t counted,
					   uint64_t interval)
	__attribute__((visibility("hidden")));

#endif /* MSTAT_LIB_COUNTDOWN_H */
