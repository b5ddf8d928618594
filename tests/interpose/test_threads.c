/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c - 10,000 short-lived threads lose nothing.
 *
 * Threads run in batches; each allocates, reallocates and frees blocks in
 * classes nothing else in the process uses, and hands one block to the
 * main thread, which frees it after the join (a free in another thread
 * than the allocation).  When all are done, the counts in those classes
 * are exactly the tally: nothing of an exited thread is lost, and slots
 * given back are reused (slots_used stays within the slot count).  Run
 * again with MSTAT_SLOTS=3 so that most threads share the overflow slot.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/interpose/truth.h"

#define THREADS 10000
#define BATCH 40

static struct truth t;

/* Between 64 KiB and 120 KiB: below glibc's mmap threshold, in classes
 * that thread creation and the test harness never allocate in. */
static size_t
size_for(uintptr_t i, int k)
{
	return 65536 + ((i * 7 + (uintptr_t)k * 13) % 50) * 1200;
}

static void *
worker(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	void *a = malloc(size_for(i, 0));
	void *b = calloc(1, size_for(i, 1));
	void *c = malloc(size_for(i, 2));

	truth_alloc(&t, a, size_for(i, 0));
	truth_alloc(&t, b, size_for(i, 1));
	truth_alloc(&t, c, size_for(i, 2));
	size_t old = malloc_usable_size(b);
	b = realloc(b, size_for(i, 3));
	truth_free(&t, old);
	truth_alloc(&t, b, size_for(i, 3));
	truth_free_p(&t, a);
	truth_free_p(&t, b);
	return c; /* freed by the main thread */
}

static void
test_short_lived_threads(void **state)
{
	static struct mstat_snapshot s0, s1;
	pthread_t th[BATCH];

	(void)state;
	truth_clear(&t);
	/* This thread takes its slot as it counts once the segment is made
	 * (the snapshot makes it, and counts nothing of its own): before the
	 * first snapshot, which then counts it among the threads. */
	assert_true(mstat_self_enabled());
	free(malloc(1));
	assert_int_equal(self_snapshot(&s0), 0);
	for (uintptr_t n = 0; n < THREADS; n += BATCH) {
		for (uintptr_t k = 0; k < BATCH; k++)
			assert_int_equal(pthread_create(&th[k], NULL, worker,
							(void *)(n + k)), 0);
		for (uintptr_t k = 0; k < BATCH; k++) {
			void *c;
			assert_int_equal(pthread_join(th[k], &c), 0);
			truth_free_p(&t, c);
		}
	}
	assert_int_equal(self_snapshot(&s1), 0);
	assert_int_equal(truth_check_classes(&s0, &s1, &t, 1), 0);
	/* Exited threads gave their slots back. */
	assert_int_equal(s1.threads, s0.threads);
	const char *slots = getenv("MSTAT_SLOTS");
	if (slots) {
		assert_true(s1.slots_used <= (uint32_t)atoi(slots));
		assert_true(s1.overflowed > s0.overflowed);
	} else {
		assert_true(s1.slots_used <= BATCH + 2);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_lived_threads),
	};
	skip_under_valgrind();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
