/* SPDX-License-Identifier: MIT */
/*
 * lifetime.h - how long sampled blocks live, from a profile's lifetime
 * buckets and births (shm/layout.h; shm/reader.h reads them per stack).
 *
 * A freed sample's lifetime is in bucket b when it lived [2^b, 2^(b+1))
 * ticks of the profile's counter, weighed as the sample is (the bytes it
 * stands for).  In nanoseconds a bucket is those ticks at the counter's
 * rate, which the reader measured (mstat_reader_profile_ns_per_tick()); within
 * a bucket, lifetimes are taken as spread evenly on a log scale, which
 * places a median or a threshold inside one.  A live sample's age is
 * from its birth word to the read.
 */
#ifndef MSTAT_CORE_LIFETIME_H
#define MSTAT_CORE_LIFETIME_H

#include <stdint.h>

#include "shm/reader.h"

/* A short-lived block is freed within a millisecond: what a pool, an
 * arena or a buffer on the stack could have held instead. */
#define MSTAT_SHORT_LIVED_NS 1e6

/* Lifetimes summed over stacks (a call site's). */
struct mstat_lifetime {
	uint64_t freed[MSTAT_LIFETIMES]; /* weights freed, by bucket */
	uint64_t born_n, born_sum, born_min; /* its live samples' births */
};

/* What they say, NAN where nothing does (nothing freed, no live sample
 * with a birth, the counter's rate not measured). */
struct mstat_lifetime_summary {
	double median_ns;    /* the median lifetime of the bytes freed */
	double short_share;  /* of the bytes allocated, those freed within
			      * MSTAT_SHORT_LIVED_NS: 0..1 */
	double live_age_ns;  /* the mean age of its live samples */
	double oldest_ns;    /* and the oldest's */
	double ns_per_tick;  /* the counter's rate, 0 if not measured: the
			      * buckets' bounds */
};

/* Adds stack `s`'s lifetimes to *t. */
void mstat_lifetime_add(struct mstat_lifetime *t,
			const struct mstat_profile_stack *s);

/* *t summed into *into. */
void mstat_lifetime_merge(struct mstat_lifetime *into,
			  const struct mstat_lifetime *t);

/* What *t says, read in profile `p`, of a site that allocated
 * `alloc_bytes` (estimated). */
void mstat_lifetime_summarise(const struct mstat_lifetime *t,
			      const struct mstat_profile *p, double alloc_bytes,
			      struct mstat_lifetime_summary *out);

/* The lower bound of bucket b in nanoseconds, at `ns_per_tick` (0 for
 * bucket 0). */
double mstat_lifetime_bound_ns(unsigned b, double ns_per_tick);

#endif /* MSTAT_CORE_LIFETIME_H */
