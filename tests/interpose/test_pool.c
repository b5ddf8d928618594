/* SPDX-License-Identifier: MIT */
/*
 * test_pool.c - the sample pool (lib/pool.c): its blocks' sizes, headers
 * and alignment, a full class, refused addresses, and threads that take
 * and give back slots at once, none of them ever handed a slot another
 * still holds.  The same of the library's own part, whose full classes
 * spill to the next class up.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/pool.h"

static size_t
header(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* Every size gets a 16-aligned block of the pool, at least that large,
 * marked as the library's own with the size it holds, and its bytes are
 * its own: a neighbour's written in full leaves them alone. */
static void
test_sizes(void **state)
{
	(void)state;
	for (size_t n = 0; n <= MSTAT_POOL_MAX; n += n < 256 ? 1 : 61) {
		unsigned char *a = mstat_pool_alloc(n), *b = mstat_pool_alloc(n);
		assert_non_null(a);
		assert_non_null(b);
		assert_true(mstat_pool_has(a) && mstat_pool_has(b));
		assert_false(mstat_pool_own(a) || mstat_pool_own(b));
		assert_int_equal((uintptr_t)a % 16, 0);
		size_t h = header(a), cap = h & ~MSTAT_OWN_MARK;
		assert_true(h & MSTAT_OWN_MARK);
		assert_true(cap >= n);
		assert_true(cap < 2 * n + 32); /* the next class up, at most */
		assert_int_equal(header(b), h);
		assert_int_equal(mstat_pool_usable(a), cap);
		memset(a, 0xa5, cap);
		memset(b, 0x5a, cap);
		assert_int_equal(header(a), h);
		assert_int_equal(header(b), h);
		for (size_t i = 0; i < cap; i++)
			assert_int_equal(a[i], 0xa5);
		mstat_pool_free(a);
		mstat_pool_free(b);
	}
	assert_null(mstat_pool_alloc(MSTAT_POOL_MAX + 1));
	int local;
	void *heap = malloc(16);
	assert_false(mstat_pool_has(&local));
	assert_false(mstat_pool_has(heap));
	assert_false(mstat_pool_has(NULL));
	free(heap);
}

/* The largest class fills: then no block, until one is given back, whose
 * slot is the next one taken; an address that is no block's start does
 * not free one. */
static void
test_full_class(void **state)
{
	enum { MAX = 4096 };
	static unsigned char *p[MAX];
	size_t n = 0;

	(void)state;
	while (n < MAX && (p[n] = mstat_pool_alloc(MSTAT_POOL_MAX)) != NULL)
		n++;
	assert_true(n > 16 && n < MAX);
	for (size_t i = 1; i < n; i++)
		assert_ptr_not_equal(p[i], p[i - 1]);
	assert_null(mstat_pool_alloc(MSTAT_POOL_MAX - 1)); /* same class */
	mstat_pool_free(p[n / 2] + 16);
	mstat_pool_free(p[n / 2] - 8);
	assert_null(mstat_pool_alloc(MSTAT_POOL_MAX));
	mstat_pool_free(p[n / 2]);
	assert_ptr_equal(mstat_pool_alloc(MSTAT_POOL_MAX), p[n / 2]);
	assert_non_null(mstat_pool_alloc(100)); /* another class */
	for (size_t i = 0; i < n; i++)
		mstat_pool_free(p[i]);
	assert_non_null(mstat_pool_alloc(MSTAT_POOL_MAX));
}

/* The own part: every size up to MSTAT_POOL_OWN_MAX, marked, own, its
 * bytes its own; nothing larger. */
static void
test_own_sizes(void **state)
{
	(void)state;
	for (size_t n = 0; n <= MSTAT_POOL_OWN_MAX; n += n < 256 ? 1 : 509) {
		unsigned char *a = mstat_pool_own_alloc(n), *b = mstat_pool_own_alloc(n);
		assert_non_null(a);
		assert_non_null(b);
		assert_true(mstat_pool_has(a) && mstat_pool_own(a));
		assert_true(mstat_pool_has(b) && mstat_pool_own(b));
		assert_int_equal((uintptr_t)a % 16, 0);
		size_t h = header(a), cap = h & ~MSTAT_OWN_MARK;
		assert_true(h & MSTAT_OWN_MARK);
		assert_true(cap >= n && cap < 2 * n + 32);
		assert_int_equal(mstat_pool_usable(a), cap);
		memset(a, 0xa5, cap);
		memset(b, 0x5a, cap);
		for (size_t i = 0; i < cap; i++)
			assert_int_equal(a[i], 0xa5);
		mstat_pool_free(a);
		mstat_pool_free(b);
	}
	assert_null(mstat_pool_own_alloc(MSTAT_POOL_OWN_MAX + 1));
	assert_false(mstat_pool_own(mstat_pool_alloc(100)));
}

/* The largest own class fills (64 slots of 32 KiB); the next to last
 * spills into it, and then is full too; a block given back is taken
 * again. */
static void
test_own_full(void **state)
{
	enum { MAX = 512 };
	static unsigned char *p[MAX];
	size_t n = 0, m = 0;

	(void)state;
	while (n < MAX && (p[n] = mstat_pool_own_alloc(MSTAT_POOL_OWN_MAX)) != NULL)
		n++;
	assert_int_equal(n, 64);
	assert_null(mstat_pool_own_alloc(MSTAT_POOL_OWN_MAX));
	mstat_pool_free(p[7]);
	assert_ptr_equal(mstat_pool_own_alloc(MSTAT_POOL_OWN_MAX - 100), p[7]);
	mstat_pool_free(p[7]);
	/* 16 KiB blocks: 128 of their own, then the free 32 KiB slot. */
	while (m < MAX - n && (p[n + m] = mstat_pool_own_alloc(16000)) != NULL)
		m++;
	assert_int_equal(m, 129);
	assert_int_equal(mstat_pool_usable(p[n + m - 1]), MSTAT_POOL_OWN_MAX);
	for (size_t i = 0; i < n + m; i++)
		if (i != 7)
			mstat_pool_free(p[i]);
	assert_non_null(mstat_pool_own_alloc(16000));
}

/*
 * Threads take blocks, stamp every byte with their own mark, keep a few,
 * check the stamp is intact and give them back, in a random order of
 * sizes.  A slot handed to two threads at once shows as a stamp
 * overwritten (or, under ThreadSanitizer, as a race).
 */
#define THREADS 4
#define ROUNDS 20000
#define KEEP 48

static pthread_barrier_t gate;

static void *
churn(void *arg)
{
	unsigned char mark = (unsigned char)(uintptr_t)arg;
	unsigned char *held[KEEP] = { 0 };
	size_t len[KEEP] = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15u * (mark + 1u);
	uintptr_t bad = 0;

	pthread_barrier_wait(&gate);
	for (int r = 0; r < ROUNDS; r++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned k = (unsigned)(x % KEEP);
		if (held[k]) {
			for (size_t i = 0; i < len[k]; i++)
				bad |= held[k][i] != mark;
			mstat_pool_free(held[k]);
		}
		len[k] = (x >> 8) % 600;
		held[k] = mstat_pool_alloc(len[k]);
		if (!held[k])
			return (void *)1; /* never full here */
		memset(held[k], mark, len[k]);
	}
	for (unsigned k = 0; k < KEEP; k++) {
		for (size_t i = 0; i < len[k]; i++)
			bad |= held[k][i] != mark;
		mstat_pool_free(held[k]);
	}
	return (void *)bad;
}

static void
test_threads(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	pthread_barrier_init(&gate, NULL, THREADS);
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		assert_null(bad);
	}
	pthread_barrier_destroy(&gate);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_full_class),
		cmocka_unit_test(test_own_sizes),
		cmocka_unit_test(test_own_full),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
