/* SPDX-License-Identifier: MIT */
/*
 * test_sites.c - call sites from a made-up profile: the stacks of one
 * allocating call summed, the two orders, and growth against a baseline
 * (sites.h).  Sampling is off in these profiles, so values are the raw
 * counts and every result is exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sites.h"

/* A stack whose allocating call returns to `pc`, called from `caller`. */
static struct mstat_profile_stack
stack(uint64_t pc, uint64_t caller, uint64_t allocs, uint64_t bytes,
      uint64_t frees, uint64_t freed)
{
	struct mstat_profile_stack s = { .allocs = allocs, .alloc_bytes = bytes,
					 .frees = frees, .free_bytes = freed,
					 .depth = 2 };
	s.frames[0] = pc;
	s.frames[1] = caller;
	return s;
}

static struct mstat_site *
sum(struct mstat_profile_stack *st, uint32_t n, size_t *m)
{
	struct mstat_profile p = { .nstacks = n, .stacks = st };
	struct mstat_site *all;

	assert_int_equal(mstat_sites_sum(&p, &all, m), 0);
	return all;
}

static const struct mstat_site *
find(const struct mstat_site *s, size_t n, uint64_t pc)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].pc == pc)
			return &s[i];
	fail_msg("no site 0x%llx", (unsigned long long)pc);
	return NULL;
}

static void
test_sum_and_order(void **state)
{
	(void)state;
	struct mstat_profile_stack st[] = {
		stack(0x300, 0x20, 3, 300, 0, 0),     /* site 0x300: two callers */
		stack(0x100, 0x10, 5, 500, 5, 500),   /* all freed */
		stack(0x300, 0x10, 10, 1000, 4, 400), /* the heavier */
		stack(0x200, 0x10, 2, 2000, 0, 0),
	};
	size_t m;
	struct mstat_site *all = sum(st, 4, &m);

	assert_int_equal(m, 3);
	/* By pc. */
	assert_true(all[0].pc == 0x100 && all[1].pc == 0x200 && all[2].pc == 0x300);
	const struct mstat_site *s = &all[2];
	assert_true(s->alloc_objects == 13 && s->alloc_bytes == 1300);
	assert_true(s->live_objects == 9 && s->live_bytes == 900);
	/* The caller shown is that of its stack holding the most. */
	assert_true(s->caller_pc == 0x10 && all[0].caller_pc == 0x10);
	mstat_sites_sort(all, m, MSTAT_SITES_BY_LIVE);
	assert_true(all[0].pc == 0x200 && all[1].pc == 0x300 && all[2].pc == 0x100);
	assert_true(all[0].live_bytes == 2000 && all[2].live_bytes == 0);
	free(all);
}

static void
test_growth(void **state)
{
	(void)state;
	/* At the baseline: 0x100 holds 1000, 0x200 holds 500; 0x300 is not
	 * there yet. */
	struct mstat_profile_stack before[] = {
		stack(0x100, 0x10, 10, 1000, 0, 0),
		stack(0x200, 0x10, 5, 500, 0, 0),
	};
	size_t m;
	struct mstat_site *all = sum(before, 2, &m);
	struct mstat_sites_base *b = mstat_sites_base_new(all, m);
	assert_non_null(b);
	free(all);

	/* Later: 0x100 holds 1000 more, 0x200 freed 300, 0x300 new with 200
	 * (the largest live site is not the one that grew most). */
	struct mstat_profile_stack after[] = {
		stack(0x100, 0x10, 20, 2000, 0, 0),
		stack(0x200, 0x10, 5, 500, 3, 300),
		stack(0x300, 0x20, 2, 200, 0, 0),
		stack(0x300, 0x30, 1, 2500, 0, 0),
	};
	all = sum(after, 4, &m);
	assert_int_equal(m, 3);
	mstat_sites_growth(b, all, m);
	const struct mstat_site *s1 = find(all, m, 0x100), *s2 = find(all, m, 0x200),
				*s3 = find(all, m, 0x300);
	assert_true(s1->growth_bytes == 1000 && s1->growth_objects == 10);
	assert_true(s2->growth_bytes == -300 && s2->growth_objects == -3);
	assert_true(s3->growth_bytes == 2700 && s3->growth_objects == 3);

	mstat_sites_sort(all, m, MSTAT_SITES_BY_GROWTH);
	assert_true(all[0].pc == 0x300 && all[1].pc == 0x100 && all[2].pc == 0x200);
	mstat_sites_sort(all, m, MSTAT_SITES_BY_LIVE);
	assert_true(all[0].pc == 0x300 && all[1].pc == 0x100 && all[2].pc == 0x200);

	/* A new baseline now: no growth anywhere, in any order. */
	mstat_sites_sort(all, m, MSTAT_SITES_BY_LIVE);
	struct mstat_site *by_pc = sum(after, 4, &m);
	mstat_sites_base_free(b);
	b = mstat_sites_base_new(by_pc, m);
	assert_non_null(b);
	mstat_sites_growth(b, all, m);
	for (size_t i = 0; i < m; i++)
		assert_true(all[i].growth_bytes == 0 && all[i].growth_objects == 0);
	/* Equal growth: ordered by pc. */
	mstat_sites_sort(all, m, MSTAT_SITES_BY_GROWTH);
	assert_true(all[0].pc == 0x100 && all[1].pc == 0x200 && all[2].pc == 0x300);
	mstat_sites_base_free(b);
	free(by_pc);
	free(all);
}

static void
test_empty(void **state)
{
	(void)state;
	size_t m;
	struct mstat_site *all = sum(NULL, 0, &m);
	struct mstat_sites_base *b = mstat_sites_base_new(all, 0);

	assert_int_equal(m, 0);
	assert_non_null(b);
	/* A site after an empty baseline grew by all it holds. */
	struct mstat_profile_stack st[] = { stack(0x100, 0x10, 4, 64, 1, 16) };
	struct mstat_site *later = sum(st, 1, &m);
	mstat_sites_growth(b, later, m);
	assert_true(later[0].growth_bytes == 48 && later[0].growth_objects == 3);
	mstat_sites_base_free(b);
	free(later);
	free(all);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sum_and_order),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
