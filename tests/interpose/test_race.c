/* SPDX-License-Identifier: MIT */
/*
 * test_race.c - the interposer's lock-free parts, under concurrency, in a
 * form the sanitizers can watch.
 *
 * ASan and TSan replace malloc themselves, so the interposer cannot run
 * in front of them.  This program is built from the library's sources
 * with the malloc family renamed (mstat_t_malloc, ...: meson.build): the
 * process's real malloc is the sanitizer's (or glibc's), and the renamed
 * functions forward to it through RTLD_NEXT like the real interposer.
 * Threads then race on:
 *   - resolving the next allocator (one thread resolves, the others are
 *     served by the arena, none waits);
 *   - the bootstrap arena's bump pointer (blocks never overlap);
 *   - the table of blocks the next allocator cannot size.
 * Every block is counted exactly, which the process's own snapshot shows.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/arena.h"
#include "tests/interpose/truth.h"
#include "lib/unsized.h"
#include "tests/interpose/window.h"
#include "lib/writer.h"

#define THREADS 4
#define BLOCKS 60 /* all of them fit the arena twice */

static pthread_barrier_t gate;
static int ready_state; /* what resolving found */
static unsigned char *blocks[THREADS][BLOCKS];
static size_t sizes[THREADS][BLOCKS];

static void *
allocate(void *arg)
{
	uintptr_t t = (uintptr_t)arg;

	pthread_barrier_wait(&gate);
	for (int i = 0; i < BLOCKS; i++) {
		size_t n = 1 + (t * 7 + (size_t)i * 13) % 90;
		unsigned char *p = mstat_t_malloc(n);
		if (p)
			memset(p, (int)(t * BLOCKS + (size_t)i) & 0xff, n);
		blocks[t][i] = p;
		sizes[t][i] = n;
	}
	return NULL;
}

/* Runs `allocate` on every thread at once, frees everything, and checks
 * that no block was overwritten by another's and that the counts of the
 * process (made only by the renamed functions) are exactly the blocks. */
static void
race(void)
{
	static struct mstat_snapshot s0, s1;
	pthread_t th[THREADS];
	uint64_t count = 0, bytes = 0;

	assert_int_equal(self_snapshot(&s0), 0);
	pthread_barrier_init(&gate, NULL, THREADS);
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, allocate, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&gate);
	for (int t = 0; t < THREADS; t++) {
		for (int i = 0; i < BLOCKS; i++) {
			unsigned char *p = blocks[t][i];
			assert_non_null(p);
			for (size_t k = 0; k < sizes[t][i]; k++)
				assert_int_equal(p[k], (t * BLOCKS + i) & 0xff);
			count++;
			bytes += mstat_t_malloc_usable_size(p);
			mstat_t_free(p);
		}
	}
	assert_int_equal(self_snapshot(&s1), 0);
	assert_int_equal(s1.total.alloc_count - s0.total.alloc_count, count);
	assert_int_equal(s1.total.alloc_bytes - s0.total.alloc_bytes, bytes);
	assert_int_equal(s1.total.free_count - s0.total.free_count, count);
	assert_int_equal(s1.total.free_bytes - s0.total.free_bytes, bytes);
}

static void
test_resolve_race(void **state)
{
	(void)state;
	assert_int_equal(atomic_load(&mstat_next.state), MSTAT_NEXT_NONE);
	race(); /* the first calls of all: one thread resolves */
	assert_true(atomic_load(&mstat_next.state) >= MSTAT_NEXT_ASK);
	ready_state = atomic_load(&mstat_next.state);
}

static void
test_arena_race(void **state)
{
	(void)state;
	window_open(MSTAT_NEXT_RESOLVING); /* all served by the arena */
	race();
	window_close(ready_state);
	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < BLOCKS; i++)
			assert_true(mstat_arena_has(blocks[t][i]));
}

static void *
unsized_churn(void *arg)
{
	uintptr_t t = (uintptr_t)arg;

	for (uintptr_t i = 1; i <= 20000; i++) {
		void *p = (void *)((t << 40) | (i << 4));
		size_t size;
		assert_int_equal(mstat_unsized_note(p, i), i);
		assert_true(mstat_unsized_find(p, &size));
		assert_int_equal(size, i);
		assert_true(mstat_unsized_forget(p, &size));
		assert_int_equal(size, i);
		assert_false(mstat_unsized_find(p, &size));
	}
	return NULL;
}

static void
test_unsized_table_race(void **state)
{
	pthread_t th[THREADS];

	(void)state;
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, unsized_churn, (void *)(t + 1));
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(atomic_load(&mstat_next.unsized_live), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_race),
		cmocka_unit_test(test_arena_race),
		cmocka_unit_test(test_unsized_table_race),
	};

	if (!mstat_self_enabled()) {
		fprintf(stderr, "not counting: %s\n", mstat_self_status());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
