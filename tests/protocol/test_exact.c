/* SPDX-License-Identifier: MIT */
/*
 * test_exact.c - when writers stop, a snapshot is the exact ground truth:
 * counts made before the library's constructor, threads that exited (their
 * slots reused by later threads), threads beyond the slot capacity (the
 * shared slot), in both writer modes and at several capacities.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/protocol/harness.h"

static void
exact_with(const char *mode, unsigned slots, const char *waves,
	   const char *threads, const char *ops)
{
	const char *args[] = { "exact", waves, threads, ops, NULL };
	struct writer w;
	struct mstat_snapshot s;

	writer_start(&w, mode, slots, args);
	writer_go(&w);
	while (!writer_poll_done(&w))
		mstat_reader_snapshot(w.r, &s); /* read while it runs, too */
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	/* Every worker gave its slot back; the main thread may hold one for
	 * its own mallocs (printf, thread arrays) once malloc is counted. */
	assert_true(s.threads <= 1);
	assert_true(s.slots_used <= (slots ? slots : 128));
	if (slots && (unsigned)atoi(threads) >= slots)
		assert_true(s.overflowed > 0);
	print_message("# %s, %u slots: %u slots used, %u threads overflowed\n",
		      mode, slots, s.slots_used, s.overflowed);
	writer_finish(&w);
}

static void
exited_and_overflowing_threads_lose_nothing(void **state)
{
	const char *mode = *state;

	/* 3 waves of 12 threads: 3 slots of their own for 12 at a time. */
	exact_with(mode, 4, "3", "12", "20000");
	/* The smallest segment: every thread on the shared slot. */
	exact_with(mode, 2, "2", "4", "20000");
	/* The default capacity: every thread has a slot. */
	exact_with(mode, 0, "4", "8", "20000");
}

int
main(void)
{
	void *fenced = (void *)harness_modes[0];
	void *membarrier = (void *)harness_modes[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(exited_and_overflowing_threads_lose_nothing, fenced),
		cmocka_unit_test_prestate(exited_and_overflowing_threads_lose_nothing, membarrier),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
