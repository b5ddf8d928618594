/* SPDX-License-Identifier: MIT */
/*
 * test_arena.c - the bootstrap arena, white-box.
 *
 * While the next allocator is being resolved (dlsym may call calloc, and
 * another thread may allocate meanwhile), allocations come from a static
 * arena.  That window is too short to hit from outside, so this program
 * links the library's archive and opens the window itself: it sets the
 * resolution state, allocates, and closes it again.  The arena's blocks
 * must be counted like any other, be aligned and zeroed, be recognised by
 * free, realloc and malloc_usable_size, and move to the next allocator on
 * realloc.  A full arena fails with ENOMEM rather than crashing.
 */
#include <errno.h>
#include <malloc.h>
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
#include "tests/interpose/window.h"
#include "lib/writer.h"

static struct truth t;
static struct mstat_snapshot s0, s1;

static void
test_arena_while_resolving(void **state)
{
	int ready_state = atomic_load(&mstat_next.state);

	(void)state;
	assert_true(ready_state >= MSTAT_NEXT_ASK);
	truth_clear(&t);
	assert_int_equal(self_snapshot(&s0), 0);

	/* Another thread is resolving: never waited for, the arena serves. */
	window_open(MSTAT_NEXT_RESOLVING);
	unsigned char *a = malloc(100);
	unsigned char *b = calloc(10, 10);
	void *c = NULL;
	int rc = posix_memalign(&c, 256, 50);
	void *d = aligned_alloc(64, 64);
	void *e = memalign(128, 1);
	window_close(ready_state);

	/* This thread is inside dlsym: the same. */
	mstat_thread.resolving = true;
	window_open(MSTAT_NEXT_NONE);
	void *f = malloc(24);
	window_close(ready_state);
	mstat_thread.resolving = false;

	assert_int_equal(rc, 0);
	void *all[] = { a, b, c, d, e, f };
	for (int i = 0; i < 6; i++) {
		assert_true(mstat_arena_has(all[i]));
		assert_int_equal((uintptr_t)all[i] % 16, 0);
	}
	assert_int_equal((uintptr_t)c % 256, 0);
	assert_int_equal((uintptr_t)d % 64, 0);
	assert_int_equal((uintptr_t)e % 128, 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(malloc_usable_size(a), 112);
	assert_int_equal(malloc_usable_size(c), 64);
	truth_alloc(&t, a, 100);
	truth_alloc(&t, b, 100);
	truth_alloc(&t, c, 50);
	truth_alloc(&t, d, 64);
	truth_alloc(&t, e, 1);
	truth_alloc(&t, f, 24);

	/* realloc moves an arena block to the next allocator, contents kept. */
	memset(a, 7, 100);
	size_t old = malloc_usable_size(a);
	unsigned char *g = realloc(a, 5000);
	assert_non_null(g);
	assert_false(mstat_arena_has(g));
	for (int i = 0; i < 100; i++)
		assert_int_equal(g[i], 7);
	truth_free(&t, old);
	truth_alloc(&t, g, 5000);
	/* realloc(arena block, 0) frees it, as glibc's does. */
	old = malloc_usable_size(f);
	assert_null(realloc(f, 0));
	truth_free(&t, old);

	truth_free_p(&t, b);
	truth_free_p(&t, c);
	truth_free_p(&t, d);
	truth_free_p(&t, e);
	truth_free_p(&t, g);
	assert_int_equal(self_snapshot(&s1), 0);
	assert_int_equal(truth_check(&s0, &s1, &t), 0);
}

static void
test_arena_full(void **state)
{
	int ready_state = atomic_load(&mstat_next.state);

	(void)state;
	window_open(MSTAT_NEXT_RESOLVING);
	errno = 0;
	void *p = malloc(MSTAT_ARENA_SIZE);
	int e = errno;
	void *q = malloc(16); /* small ones still fit */
	window_close(ready_state);
	assert_null(p);
	assert_int_equal(e, ENOMEM);
	assert_non_null(q);
	free(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena_while_resolving),
		cmocka_unit_test(test_arena_full),
	};

	skip_under_valgrind();
	if (!mstat_self_enabled()) {
		fprintf(stderr, "not counting: %s\n", mstat_self_status());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
