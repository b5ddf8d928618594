/* SPDX-License-Identifier: MIT */
/*
 * countdown.c - exponential draws, the decision when a countdown runs
 * out, and a sample's weight; see countdown.h.  Its own logarithm and
 * exponential: a process that never samples does not load libm for them.
 */
#include "lib/countdown.h"

#include "lib/writer.h"

static uint64_t
next_random(struct mstat_countdown *c)
{
	if (c->rng == 0) /* unseeded: any state but the one it never leaves */
		c->rng = UINT64_C(0x9e3779b97f4a7c15);
	/* xorshift64* */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * UINT64_C(2685821657736338717);
}

/* The natural logarithm of a normal, positive x: its exponent, and the
 * series of atanh for its mantissa brought within [1/sqrt 2, sqrt 2]
 * (error below 1e-8). */
static double
ln(double x)
{
	union {
		double d;
		uint64_t u;
	} v = { x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;

	v.u = (v.u & UINT64_C(0x000fffffffffffff)) | UINT64_C(0x3ff0000000000000);
	double m = v.d; /* in [1, 2) */
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	double t = (m - 1) / (m + 1), t2 = t * t; /* |t| < 0.1716 */
	double r = 2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 +
				t2 * (1.0 / 9 + t2 / 11)))));
	return e * 0.6931471805599453 + r;
}

/* 1 - exp(-x) for x >= 0, to about 1e-15 relative: its series for a
 * small x (where 1 - exp(-x) would lose the digits that matter), else
 * exp(-x) = 2^-k exp(-r), x = k ln 2 + r, |r| <= ln 2 / 2, and the series
 * of exp(-r). */
static double
one_minus_exp(double x)
{
	if (x < 0.0625) /* the next term is below x^10 / 10! < 1e-18 x */
		return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5 *
		       (1 - x / 6 * (1 - x / 7 * (1 - x / 8 * (1 - x / 9))))))));
	if (x > 40) /* exp(-40) < 2^-57 */
		return 1;
	int k = (int)(x * 1.4426950408889634 + 0.5); /* 0..58 */
	double r = x - k * 0.6931471805599453, e = 1, term = 1;
	for (int i = 1; i <= 13; i++) { /* |r|^14 / 14! < 1e-17 */
		term *= -r / i;
		e += term;
	}
	union {
		double d;
		uint64_t u;
	} two = { .u = (uint64_t)(1023 - k) << 52 }; /* 2^-k */
	return 1 - e * two.d;
}

/* An exponential variate of mean `mean`: the bytes to the next sample. */
static MSTAT_START_TEXT int64_t
draw(struct mstat_countdown *c, uint64_t mean)
{
	/* u in (0, 1] */
	double u = ((double)(next_random(c) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double d = -ln(u) * (double)mean;

	return d >= (double)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)d;
}

MSTAT_START_TEXT uint64_t
mstat_countdown_expired(struct mstat_countdown *c, int64_t *left, uint64_t n,
			uint64_t mean)
{
	uint64_t was = c->mean;

	c->mean = mean;
	if (mean == 0) {
		/* Off: a look again later.  A countdown that was drawn ran
		 * out here all the same, and samples this allocation. */
		*left = (int64_t)MSTAT_RECHECK_BYTES;
		return was;
	}
	if (was == 0) {
		/* No draw ran (a thread's first allocation, or the look
		 * again while off): this allocation meets a fresh one, which
		 * it counts down like any other. */
		int64_t d = draw(c, mean);
		if ((uint64_t)d >= n) {
			*left = d - (int64_t)n;
			return 0;
		}
	}
	*left = draw(c, mean);
	return was ? was : mean;
}

/* x rounded to a whole number, at most MSTAT_WEIGHT_MAX: x may be +inf,
 * never NaN. */
static uint64_t
bounded(double x)
{
	double w = x + 0.5;

	return w >= (double)MSTAT_WEIGHT_MAX ? MSTAT_WEIGHT_MAX : (uint64_t)w;
}

struct mstat_weight
mstat_countdown_weight(uint64_t requested, uint64_t counted, uint64_t interval)
{
	if (interval == 0) /* nothing is sampled at 0: a bound, not a use */
		return (struct mstat_weight){ counted, MSTAT_OBJECT_UNITS };
	double p = one_minus_exp((double)requested / (double)interval);
	/* p > 0 unless nothing was asked (never sampled: a countdown runs
	 * out on a byte). */
	if (!(p > 0))
		return (struct mstat_weight){ MSTAT_WEIGHT_MAX, MSTAT_WEIGHT_MAX };
	return (struct mstat_weight){ bounded((double)counted / p),
				      bounded(MSTAT_OBJECT_UNITS / p) };
}
