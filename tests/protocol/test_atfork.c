/* SPDX-License-Identifier: MIT */
/*
 * test_atfork.c - fork handlers of other libraries that allocate.
 *
 * Handlers registered before libmstatshm's (here, from a constructor that
 * runs before the library's) run after its prepare handler in the parent
 * and before its child handler in the child.  What they count must land
 * in the right process: a child handler's counts in the child only (never
 * in the parent's segment, which the child shares until it has its own);
 * a parent handler's in the parent only; a prepare handler's in both (the
 * child inherits those objects).  Run a second time with MSTAT_SLOTS=2 and
 * fork from a thread with no slot of its own: a prepare handler that
 * allocates there must not deadlock.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <mstatshm.h>
#include "shm/sizeclass.h"

#define SIZE_PREPARE ((UINT64_C(1) << 37) + 1)
#define SIZE_PARENT ((UINT64_C(1) << 38) + 1)
#define SIZE_CHILD ((UINT64_C(1) << 39) + 1)

static void
alloc_n(uint64_t size, int n)
{
	for (int i = 0; i < n; i++)
		mstat_record_alloc(size, size);
}

static void on_prepare(void) { alloc_n(SIZE_PREPARE, 10); }
static void on_parent(void) { alloc_n(SIZE_PARENT, 20); }
static void on_child(void) { alloc_n(SIZE_CHILD, 30); }

__attribute__((constructor(101))) static void
register_before_the_library(void)
{
	pthread_atfork(on_prepare, on_parent, on_child);
}

static uint64_t
allocs(const struct mstat_snapshot *s, uint64_t size)
{
	return s->classes[mstat_size_class(size)].alloc_count;
}

/* A child's end: it unlinks its segment (the library's exit handler
 * would, but exit() from a child forked off another thread runs leak
 * checks that see the thread-less parent's memory as lost) and _exits. */
static void
child_exit(int code)
{
	struct mstat_reader *r;

	if (mstat_reader_open_pid(&r, getpid(), NULL, 0) == 0)
		shm_unlink(mstat_reader_info(r)->shm_name);
	_exit(code);
}

/* Forks; the child checks its own counts and exits 0 if right. */
static void *
fork_and_check(void *unused)
{
	struct mstat_snapshot before, after, mine;
	int status;

	(void)unused;
	/* The thread counts before it forks: it holds a slot, or (in the
	 * second run) finds none and uses the shared one. */
	mstat_record_alloc(64, 64);
	assert_int_equal(mstat_self_snapshot(&before), 0);
	fflush(NULL);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		if (mstat_self_snapshot(&mine) != 0)
			child_exit(10);
		/* Inherited: the parent's live objects, prepare's included;
		 * its own: what its child handler counted. */
		if (allocs(&mine, SIZE_PREPARE) != allocs(&before, SIZE_PREPARE) + 10)
			child_exit(11);
		if (allocs(&mine, SIZE_PARENT) != allocs(&before, SIZE_PARENT))
			child_exit(12);
		if (allocs(&mine, SIZE_CHILD) != 30)
			child_exit(13);
		child_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(mstat_self_snapshot(&after), 0);
	assert_int_equal(allocs(&after, SIZE_PREPARE), allocs(&before, SIZE_PREPARE) + 10);
	assert_int_equal(allocs(&after, SIZE_PARENT), allocs(&before, SIZE_PARENT) + 20);
	assert_int_equal(allocs(&after, SIZE_CHILD), 0); /* never the child's */
	return NULL;
}

static void
handlers_count_in_the_right_process(void **state)
{
	(void)state;
	assert_true(mstat_self_enabled()); /* the segment, from here */
	mstat_record_alloc(64, 64); /* this thread takes a slot, if any */
	for (int i = 0; i < 3; i++)
		fork_and_check(NULL);
}

static void
fork_from_a_thread_without_a_slot(void **state)
{
	pthread_t t;
	struct mstat_snapshot s;

	(void)state;
	assert_true(mstat_self_enabled()); /* the segment, from here */
	mstat_record_alloc(64, 64); /* main takes the only thread slot */
	assert_int_equal(pthread_create(&t, NULL, fork_and_check, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(mstat_self_snapshot(&s), 0);
	assert_true(s.overflowed >= 1);
}

int
main(void)
{
	const struct CMUnitTest own_slot[] = {
		cmocka_unit_test(handlers_count_in_the_right_process),
	};
	const struct CMUnitTest no_slot[] = {
		cmocka_unit_test(fork_from_a_thread_without_a_slot),
	};
	const char *slots = getenv("MSTAT_SLOTS");
	if (slots && strcmp(slots, "2") == 0)
		return cmocka_run_group_tests(no_slot, NULL, NULL);
	return cmocka_run_group_tests(own_slot, NULL, NULL);
}
