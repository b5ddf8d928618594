/* SPDX-License-Identifier: MIT */
/* lifetime.c - how long sampled blocks live; see lifetime.h. */
#include "core/lifetime.h"

#include <math.h>

/* Bucket b's ticks: [lo, 2 lo), but bucket 0's [0, 2). */
static double
lo_ticks(unsigned b)
{
	return b ? ldexp(1.0, (int)b) : 0.0;
}

/* The ticks a share `f` (0..1) into bucket b lies at: evenly on a log
 * scale, but in bucket 0, which begins at 0. */
static double
inside(unsigned b, double f)
{
	return b ? ldexp(exp2(f), (int)b) : 2.0 * f;
}

/* The share of bucket b below `ticks` (0..1). */
static double
below(unsigned b, double ticks)
{
	double lo = lo_ticks(b), hi = ldexp(1.0, (int)b + 1);

	if (ticks >= hi)
		return 1;
	if (ticks <= lo)
		return 0;
	return b ? log2(ticks / lo) : ticks / hi;
}

void
mstat_lifetime_add(struct mstat_lifetime *t, const struct mstat_profile_stack *s)
{
	for (unsigned b = 0; b < MSTAT_LIFETIMES; b++)
		t->freed[b] += s->lifetimes[b];
	if (s->born_n && (!t->born_n || s->born_min < t->born_min))
		t->born_min = s->born_min;
	t->born_sum += s->born_sum;
	t->born_n += s->born_n;
}

void
mstat_lifetime_merge(struct mstat_lifetime *into, const struct mstat_lifetime *t)
{
	for (unsigned b = 0; b < MSTAT_LIFETIMES; b++)
		into->freed[b] += t->freed[b];
	if (t->born_n && (!into->born_n || t->born_min < into->born_min))
		into->born_min = t->born_min;
	into->born_sum += t->born_sum;
	into->born_n += t->born_n;
}

double
mstat_lifetime_bound_ns(unsigned b, double ns_per_tick)
{
	return lo_ticks(b) * ns_per_tick;
}

/* Ticks of a birth word's units from `born` to the read, whose time part
 * wraps after 2^MSTAT_BIRTH_BITS units. */
static double
age_ticks(const struct mstat_profile *p, double born)
{
	const double wrap = ldexp(1.0, MSTAT_BIRTH_BITS);
	double now = (double)(((p->now_tick - p->tick0) >> MSTAT_BIRTH_SHIFT) &
			      ((UINT64_C(1) << MSTAT_BIRTH_BITS) - 1));
	double units = now - born;

	if (units < 0)
		units += wrap;
	return ldexp(units, MSTAT_BIRTH_SHIFT);
}

void
mstat_lifetime_summarise(const struct mstat_lifetime *t,
			 const struct mstat_profile *p, double alloc_bytes,
			 struct mstat_lifetime_summary *out)
{
	double rate = mstat_reader_profile_ns_per_tick(p), freed = 0;

	out->median_ns = out->short_share = out->live_age_ns = out->oldest_ns = NAN;
	out->ns_per_tick = rate;
	for (unsigned b = 0; b < MSTAT_LIFETIMES; b++)
		freed += (double)t->freed[b];
	if (rate > 0 && freed > 0) {
		double half = freed / 2, sum = 0, shortw = 0;
		double limit = MSTAT_SHORT_LIVED_NS / rate;
		for (unsigned b = 0; b < MSTAT_LIFETIMES; b++) {
			double w = (double)t->freed[b];
			if (w > 0 && isnan(out->median_ns) && sum + w >= half)
				out->median_ns = inside(b, (half - sum) / w) * rate;
			sum += w;
			shortw += w * below(b, limit);
		}
		if (alloc_bytes > 0)
			out->short_share = fmin(1.0, shortw / alloc_bytes);
	} else if (rate > 0 && alloc_bytes > 0) {
		out->short_share = 0;
	}
	if (rate > 0 && t->born_n) {
		out->live_age_ns = age_ticks(p, (double)t->born_sum /
						       (double)t->born_n) * rate;
		out->oldest_ns = age_ticks(p, (double)t->born_min) * rate;
	}
}
