/* SPDX-License-Identifier: MIT */
/*
 * test_estimator.c - the heap profile's estimates, tested as a
 * statistician would: the sampler's own code (lib/countdown.h: the fast
 * path's step, the draws, the decision when a countdown runs out, a
 * sample's weight) runs over known sequences of allocations, 1000 times
 * each with seeded random numbers, into a stack entry kept as
 * lib/profile.c keeps it (an allocation adds the bytes and the objects it
 * stands for, its free the very same), which the observer's estimator
 * (core/pprof.h, mstat_pprof_unbias(): pprof's values and the sites
 * view's) turns into bytes and objects.  Over the runs, the estimates
 * must average the truth, within 2%, and spread as sampling says they
 * must, within 10% of the standard deviation derived here.
 *
 * What sampling says.  Block j asks for n_j bytes (what the countdown
 * counts) and is counted with u_j (its usable size, what the profile
 * reports).  Let m_j be the mean the countdown running at its start was
 * drawn from, a function of the past.  Conditioned on the past, that
 * countdown is still an exponential draw of mean m_j (memoryless), so
 * block j is sampled with probability p_j = 1 - exp(-n_j / m_j), and if
 * it is, it weighs u_j / p_j.  Its term X_j of the estimate has
 * E[X_j | past] = u_j: the estimate is unbiased, whatever the interval
 * does; and the X_j - u_j are martingale differences, so that
 *
 *	Var(sum X_j) = sum E[u_j^2 (1 - p_j) / p_j],
 *
 * each block's binomial variance, scaled by its weight.  Its objects are
 * the same with u_j = 1: a sample stands for 1 / p_j of them, whatever
 * the sizes of the stack's other blocks, a variance of (1 - p_j) / p_j
 * per block.  At one interval
 * the p_j are fixed; when it changes, the m_j depend on where each
 * countdown ran out, so the test takes each run's own sum of
 * u_j^2 (1 - p_j) / p_j, with the m_j it tracks from the semantics
 * (countdown.h: the mean in effect when the running countdown was
 * drawn), and averages it over the runs.  The live bytes estimate sums
 * the terms of the blocks not freed (a free takes back exactly what its
 * allocation added), with their variance.  A block allocated while a
 * countdown that is no draw runs (sampling off) is not sampled at all:
 * the sequences keep such blocks out of what they hold live.
 *
 * Bounds.  Over R = 1000 runs the mean's standard error is sd/sqrt(R):
 * at most 0.3% of the truth here (each sequence has 128 samples or more:
 * sd <= 1/sqrt(128) of it), so 2% is at least 7 standard errors.  The
 * sample standard deviation's relative standard error is about
 * sqrt((2 + kurtosis) / (4 R)), 2.3% for these near-normal estimates,
 * so 10% is more than 4 of them.  A sampler right in its law passes with
 * any seeds but about one in 10^5; the seeds are fixed, so the result is
 * the same at every run.  And each of these mistakes fails it (each was
 * made and seen to fail): a sample weighed at the interval in effect when
 * its countdown ran out, not the one it was drawn from ("rates", by far);
 * the probability taken from the usable size ("small", 11% low); the
 * estimate taken from all samples at the interval in effect, as format
 * 5.0's readers do ("rates"); samples averaged per stack and unbiased
 * at their average size, as Go's scaleHeapSample() does for a stack of
 * many sizes ("mixed", 4% low); a stack's objects taken as its bytes
 * over the average sample's, as format 6.0's readers do ("two sizes",
 * 98% low, "spread", 42%).
 *
 * Objects are held to the same bounds.  Their standard deviation is that
 * of the small blocks, rarely sampled, that make most of them: the
 * sequences that check them run at intervals where it is at most 5% of
 * the truth ("two sizes" at the default interval: 20%), so that 2% is
 * still 12 standard errors of the mean; check() refuses a sequence where
 * it is not 5.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/countdown.h"
#include "core/pprof.h"

#define RUNS 1000
#define KIB 1024u
#define MIB (1024u * 1024u)

/* glibc's usable size of a block of n bytes: its chunk (n + 8 rounded up
 * to 16, at least 32) less the header's 8. */
static uint64_t
usable(uint64_t n)
{
	uint64_t chunk = (n + 8 + 15) & ~UINT64_C(15);

	return (chunk < 32 ? 32 : chunk) - 8;
}

/* One run: a thread's countdown, the stack entry its samples go to, the
 * truth and the variance the semantics give. */
struct run {
	struct mstat_countdown c;
	int64_t left;
	uint64_t mean;  /* the running countdown's, as the test tracks it */
	struct mstat_profile_stack st;
	uint64_t samples;
	double truth_alloc, truth_live; /* bytes allocated, kept */
	double var_alloc, var_live;
	/* The same of objects: each block is one, and its term of the
	 * estimate 1 / p_j when sampled, a variance of (1 - p_j) / p_j. */
	double objects_alloc, objects_live;
	double var_objects_alloc, var_objects_live;
	/* The last (n, m) and its variance factor (1 - p) / p. */
	uint64_t last_n, last_m;
	double last_f;
};

static uint64_t
splitmix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static void
run_start(struct run *r, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	r->c.rng = splitmix(seed) | 1;
}

/* (1 - p) / p for a block of n bytes under a countdown of mean m, from
 * libm (not the code under test). */
static double
var_factor(struct run *r, uint64_t n, uint64_t m)
{
	if (n != r->last_n || m != r->last_m) {
		double p = -expm1(-(double)n / (double)m);
		r->last_n = n;
		r->last_m = m;
		r->last_f = (1 - p) / p;
	}
	return r->last_f;
}

/* Whether the usable size, rather than the requested one, goes into the
 * probability: the mistake the "small" sequence is there to catch. */
static bool weigh_by_usable;

/* An allocation of n bytes, counted with u, at interval `interval` in
 * effect (0: off), as lib/profile.c makes it: the fast path's step, and
 * when it runs out, the decision and the weight; kept live or freed at
 * once.  Every block kept must have had a chance of being sampled. */
static void
allocate(struct run *r, uint64_t n, uint64_t u, uint64_t interval, bool keep)
{
	/* The mean this block meets: the running countdown's, or, where
	 * that was no draw, a fresh one's if the countdown runs out in it. */
	uint64_t m = r->mean ? r->mean : (r->left < (int64_t)n ? interval : 0);
	uint64_t at = 0;
	struct mstat_weight w;

	if (mstat_countdown_due(&r->left, n)) {
		at = mstat_countdown_expired(&r->c, &r->left, n, interval);
		r->mean = interval;
	}
	if ((m == 0 && keep) || (at != 0 && at != m))
		fail_msg("a block kept unexposed, or sampled at %llu, not %llu",
			 (unsigned long long)at, (unsigned long long)m);
	double f = m ? var_factor(r, n, m) : 0;
	double v = (double)u * (double)u * f;
	r->truth_alloc += (double)u;
	r->var_alloc += v;
	r->objects_alloc += 1;
	r->var_objects_alloc += f;
	if (keep) {
		r->truth_live += (double)u;
		r->var_live += v;
		r->objects_live += 1;
		r->var_objects_live += f;
	}
	if (!at)
		return;
	w = mstat_countdown_weight(weigh_by_usable ? u : n, u, at);
	r->samples++;
	r->st.allocs++;
	r->st.alloc_bytes += u;
	r->st.alloc_objects += w.objects;
	r->st.alloc_weight += w.bytes;
	if (!keep) {
		r->st.frees++;
		r->st.free_bytes += u;
		r->st.free_objects += w.objects;
		r->st.free_weight += w.bytes;
	}
}

/* The estimates of one run, as pprof's values and the sites view's. */
static void
estimate(const struct run *r, bool live, double *bytes, double *objects)
{
	struct mstat_profile p = { .weighted = true, .has_objects = true };

	mstat_pprof_unbias(&p, &r->st, live, objects, bytes);
}

/* Sums over the runs of one sequence. */
struct stats {
	const char *name;
	double truth, sum, sum2, var, samples;
	int n;
};

static void
add(struct stats *s, double truth, double got, double var, uint64_t samples)
{
	if (s->n)
		assert_true(truth == s->truth); /* the same truth every run */
	s->truth = truth;
	s->sum += got;
	s->sum2 += got * got;
	s->var += var;
	s->samples += (double)samples;
	s->n++;
}

/* The checks of the header: mean within 2% of the truth, standard
 * deviation within 10% of what sampling predicts. */
static void
check(const struct stats *s)
{
	double mean = s->sum / s->n;
	double sd = sqrt((s->sum2 - s->n * mean * mean) / (s->n - 1));
	double pred = sqrt(s->var / s->n);

	printf("%-22s truth %.0f  mean %+.2f%% (se %.2f%%)  sd %.2f%% "
	       "predicted %.2f%% (x%.3f)  %.0f samples a run\n",
	       s->name, s->truth, 100 * (mean / s->truth - 1),
	       100 * sd / sqrt(s->n) / s->truth, 100 * sd / s->truth,
	       100 * pred / s->truth, sd / pred, s->samples / s->n);
	/* The bounds mean something: 2% is many standard errors. */
	assert_true(pred / sqrt(s->n) < 0.004 * s->truth);
	if (fabs(mean - s->truth) > 0.02 * s->truth)
		fail_msg("%s: mean %.0f, truth %.0f: %+.2f%%", s->name, mean,
			 s->truth, 100 * (mean / s->truth - 1));
	if (fabs(sd / pred - 1) > 0.10)
		fail_msg("%s: standard deviation %.0f, sampling predicts %.0f",
			 s->name, sd, pred);
}

/* A 64 MiB leak of 4 KiB blocks at the default interval: 128 samples. */
static void
test_leak(void **state)
{
	struct stats live = { .name = "leak 4 KiB x 16384" }, objs = { .name = "  its objects" };
	struct run r;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, (uint64_t)i);
		for (int k = 0; k < 16384; k++)
			allocate(&r, 4096, usable(4096), MSTAT_SAMPLE_DEFAULT, true);
		double b, o;
		estimate(&r, true, &b, &o);
		add(&live, r.truth_live, b, r.var_live, r.samples);
		add(&objs, r.objects_live, o, r.var_objects_live, r.samples);
	}
	check(&live);
	check(&objs);
}

/* The usable size of 64 bytes is 72: the probability must be the 64
 * bytes' the countdown counted.  256 samples at 32 KiB. */
static void
test_small(void **state)
{
	struct stats live = { .name = "small 64 B x 131072" };
	struct run r;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, UINT64_C(1) << 32 | (uint64_t)i);
		for (int k = 0; k < 131072; k++)
			allocate(&r, 64, usable(64), 32 * KIB, true);
		double b, o;
		estimate(&r, true, &b, &o);
		add(&live, r.truth_live, b, r.var_live, r.samples);
	}
	check(&live);
}

/* One call site of every size, 16 B to 2 MiB (log-uniform), a third of
 * them freed: most of its bytes are in blocks sampled with probability
 * near 1, most of its blocks in small ones of weights near the
 * interval. */
static void
test_mixed(void **state)
{
	enum { N = 20000 };
	static uint64_t size[N];
	struct stats live = { .name = "mixed 16 B..2 MiB" }, all = { .name = "  allocated" };
	struct run r;

	(void)state;
	for (int k = 0; k < N; k++) {
		double x = (double)(splitmix(UINT64_C(7) << 40 | (uint64_t)k) >> 11) /
			   9007199254740992.0;
		size[k] = (uint64_t)exp2(4 + 17 * x);
	}
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, UINT64_C(2) << 32 | (uint64_t)i);
		for (int k = 0; k < N; k++)
			allocate(&r, size[k], usable(size[k]), MSTAT_SAMPLE_DEFAULT,
				 k % 3 != 0);
		double b, o;
		estimate(&r, true, &b, &o);
		add(&live, r.truth_live, b, r.var_live, r.samples);
		estimate(&r, false, &b, &o);
		add(&all, r.truth_alloc, b, r.var_alloc, r.samples);
	}
	check(&live);
	check(&all);
}

/* The objects of one run, allocated and live, into `all` and `live`;
 * its bytes into `all_b` and `live_b`. */
static void
add_objects(const struct run *r, struct stats *all, struct stats *live,
	    struct stats *all_b, struct stats *live_b)
{
	double b, o;

	estimate(r, false, &b, &o);
	add(all, r->objects_alloc, o, r->var_objects_alloc, r->samples);
	add(all_b, r->truth_alloc, b, r->var_alloc, r->samples);
	estimate(r, true, &b, &o);
	add(live, r->objects_live, o, r->var_objects_live, r->samples);
	add(live_b, r->truth_live, b, r->var_live, r->samples);
}

/* One call site keeps 396,000 blocks of 32 B and 4,000 of 64 KiB, one
 * large block after each 99 small ones (400,000 objects, 274.8 MB asked
 * for: tests/profile/e2e.py objects runs it in a process).  Nearly every
 * large block is sampled and nearly every sample is of one, so the
 * average sample is near 64 KiB: objects taken as the bytes over it read
 * 1.2% of the truth.  Here a tenth of it, at 4 KiB, where its small
 * blocks' 310 samples a run measure their number to 5.6% (at the default
 * interval, the whole site's, to 20%: too loose a test), and where each
 * of the 1000 runs costs a tenth as much. */
static void
test_objects_two_sizes(void **state)
{
	struct stats all = { .name = "two sizes: objects" },
		     live = { .name = "  live objects" },
		     all_b = { .name = "  bytes" }, live_b = { .name = "  live bytes" };
	const uint64_t interval = 4 * KIB;
	struct run r;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, UINT64_C(5) << 32 | (uint64_t)i);
		for (int k = 0; k < 40000; k++) {
			uint64_t n = k % 100 == 99 ? 64 * KIB : 32;
			allocate(&r, n, usable(n), interval, true);
		}
		add_objects(&r, &all, &live, &all_b, &live_b);
	}
	check(&all);
	check(&live);
	check(&all_b);
	check(&live_b);
}

/* A call site of every size, 16 B to 2 MiB (log-uniform, as "mixed"), a
 * third of its blocks freed: objects allocated and live.  At 4 KiB, where
 * its small blocks are sampled often enough to measure their number to
 * 3%. */
static void
test_objects_spread(void **state)
{
	enum { N = 20000 };
	static uint64_t size[N];
	struct stats all = { .name = "spread: objects" },
		     live = { .name = "  live objects" },
		     all_b = { .name = "  bytes" }, live_b = { .name = "  live bytes" };
	const uint64_t interval = 4 * KIB;
	struct run r;

	(void)state;
	for (int k = 0; k < N; k++) {
		double x = (double)(splitmix(UINT64_C(8) << 40 | (uint64_t)k) >> 11) /
			   9007199254740992.0;
		size[k] = (uint64_t)exp2(4 + 17 * x);
	}
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, UINT64_C(6) << 32 | (uint64_t)i);
		for (int k = 0; k < N; k++)
			allocate(&r, size[k], usable(size[k]), interval, k % 3 != 0);
		add_objects(&r, &all, &live, &all_b, &live_b);
	}
	check(&all);
	check(&live);
	check(&all_b);
	check(&live_b);
}

/* 1 MiB blocks allocated and freed, `bytes` of them. */
static void
churn(struct run *r, uint64_t bytes, uint64_t interval)
{
	for (uint64_t b = 0; b < bytes; b += MIB)
		allocate(r, MIB, usable(MIB), interval, false);
}

static void
leak(struct run *r, int blocks, uint64_t interval)
{
	for (int k = 0; k < blocks; k++)
		allocate(r, 4096, usable(4096), interval, true);
}

/* A leak of 4 KiB blocks while the interval changes: 512 KiB, then 32
 * KiB, then 16 KiB and 1 MiB in turn every 256 KiB allocated (a
 * countdown drawn at one runs out at the other, most times), then off
 * (blocks allocated and freed meanwhile), then 128 KiB again, once the 64
 * MiB a thread allocates before it looks again while off are done. */
static void
test_rates(void **state)
{
	struct stats live = { .name = "rates 512K..off..128K" },
		     objs = { .name = "  its objects" };
	struct run r;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		run_start(&r, UINT64_C(3) << 32 | (uint64_t)i);
		leak(&r, 4096, 512 * KIB);
		leak(&r, 4096, 32 * KIB);
		for (int k = 0; k < 128; k++)
			leak(&r, 64, k % 2 ? MIB : 16 * KIB);
		churn(&r, 96 * MIB, 0);
		churn(&r, 96 * MIB, 128 * KIB);
		leak(&r, 4096, 128 * KIB);
		double b, o;
		estimate(&r, true, &b, &o);
		add(&live, r.truth_live, b, r.var_live, r.samples);
		add(&objs, r.objects_live, o, r.var_objects_live, r.samples);
	}
	check(&live);
	check(&objs);
}

/* A countdown that was no draw (a thread's first, the look again while
 * sampling is off) samples the allocation that ends it as a fresh draw
 * would: with probability 1 - exp(-n / R), not always.  64 KiB at 512
 * KiB: 117.5 of 1000, standard deviation 10.2; the bound is 5 of them. */
static void
test_no_draw_is_no_sample(void **state)
{
	const uint64_t n = 64 * KIB, mean = MSTAT_SAMPLE_DEFAULT;
	const double p = -expm1(-(double)n / (double)mean);
	int first = 0, after_off = 0;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		struct run r;
		run_start(&r, UINT64_C(4) << 32 | (uint64_t)i);
		/* A thread's first allocation: left 0, no draw yet. */
		assert_true(mstat_countdown_due(&r.left, n));
		first += mstat_countdown_expired(&r.c, &r.left, n, mean) == mean;
		/* Off, then on: the look again runs out. */
		r.left = -1;
		(void)mstat_countdown_expired(&r.c, &r.left, n, 0);
		assert_int_equal(r.left, (int64_t)MSTAT_RECHECK_BYTES);
		r.left = -1;
		after_off += mstat_countdown_expired(&r.c, &r.left, n, mean) == mean;
	}
	double want = RUNS * p, sd = sqrt(RUNS * p * (1 - p));
	printf("first allocation sampled %d, after off %d, of %d (expected %.1f)\n",
	       first, after_off, RUNS, want);
	assert_true(fabs(first - want) <= 5 * sd);
	assert_true(fabs(after_off - want) <= 5 * sd);
}

/* The weight, against libm: within a byte, and the objects within one
 * MSTAT_OBJECT_UNITS, over sizes and intervals from the smallest to the
 * largest. */
static void
test_weight_is_exact(void **state)
{
	const uint64_t sizes[] = { 1, 16, 64, 1000, 4096, 65536, 1 << 20, 1 << 30 };
	const uint64_t means[] = { 1, 4096, 32 * KIB, MSTAT_SAMPLE_DEFAULT, 16 * MIB,
				   MSTAT_SAMPLE_MAX };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t k = 0; k < sizeof(means) / sizeof(means[0]); k++) {
			uint64_t n = sizes[i], u = usable(n), m = means[k];
			double inv_p = 1 / -expm1(-(double)n / (double)m);
			double want = (double)u * inv_p, objs = MSTAT_OBJECT_UNITS * inv_p;
			struct mstat_weight got = mstat_countdown_weight(n, u, m);
			if (fabs((double)got.bytes - want) > 1 + want * 1e-12 ||
			    fabs((double)got.objects - objs) > 1 + objs * 1e-12)
				fail_msg("weight of %llu bytes at %llu: %llu bytes, "
					 "%llu/%u objects, not %.1f, %.1f",
					 (unsigned long long)n, (unsigned long long)m,
					 (unsigned long long)got.bytes,
					 (unsigned long long)got.objects,
					 MSTAT_OBJECT_UNITS, want, objs);
		}
	/* Bounded, and a total function. */
	struct mstat_weight w = mstat_countdown_weight(0, 24, 4096);
	assert_true(w.bytes == MSTAT_WEIGHT_MAX && w.objects == MSTAT_WEIGHT_MAX);
	w = mstat_countdown_weight(0, 0, 4096);
	assert_true(w.bytes == MSTAT_WEIGHT_MAX && w.objects == MSTAT_WEIGHT_MAX);
	w = mstat_countdown_weight(100, 104, 0);
	assert_true(w.bytes == 104 && w.objects == MSTAT_OBJECT_UNITS);
	w = mstat_countdown_weight(1, UINT64_MAX, MSTAT_SAMPLE_MAX);
	assert_int_equal(w.bytes, MSTAT_WEIGHT_MAX);
	assert_true(w.objects < MSTAT_WEIGHT_MAX &&
		    fabs((double)w.objects - MSTAT_OBJECT_UNITS * (double)MSTAT_SAMPLE_MAX) <
			    (double)MSTAT_OBJECT_UNITS);
}

/* The estimator takes what a segment holds, which its writer may not have
 * written: whatever the sums (the reader's rules hold: frees at most
 * allocations, bytes, objects and weights alike), its estimates are
 * finite and not negative, with objects (6.1), with weights alone (6.0),
 * or with neither (5.0, any interval). */
static void
test_unbias_is_total(void **state)
{
	const uint64_t v[] = { 0, 1, 2, 4096, UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX };
	const size_t nv = sizeof(v) / sizeof(v[0]);

	(void)state;
	for (size_t a = 0; a < nv; a++)
		for (size_t b = 0; b < nv; b++)
			for (size_t w = 0; w < nv; w++)
				for (size_t f = 0; f < 3; f++) {
					struct mstat_profile_stack st = {
						.allocs = v[a], .alloc_bytes = v[b],
						.alloc_objects = v[w], .alloc_weight = v[w],
						.frees = v[a] / (f + 1),
						.free_bytes = v[b] / (f + 1),
						.free_objects = v[w] / (f + 1),
						.free_weight = v[w] / (f + 1), .depth = 1,
					};
					for (int k = 0; k < 5; k++) {
						struct mstat_profile p = {
							.weighted = k <= 1,
							.has_objects = k == 0,
							.sample_bytes = v[(size_t)(k % 4) * 2],
						};
						double o[2], by[2];
						mstat_pprof_unbias(&p, &st, false, &o[0], &by[0]);
						mstat_pprof_unbias(&p, &st, true, &o[1], &by[1]);
						for (int i = 0; i < 2; i++)
							assert_true(isfinite(o[i]) && o[i] >= 0 &&
								    isfinite(by[i]) && by[i] >= 0);
					}
				}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weight_is_exact),
		cmocka_unit_test(test_unbias_is_total),
		cmocka_unit_test(test_no_draw_is_no_sample),
		cmocka_unit_test(test_leak),
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_objects_two_sizes),
		cmocka_unit_test(test_objects_spread),
		cmocka_unit_test(test_rates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
