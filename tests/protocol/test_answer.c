/* SPDX-License-Identifier: MIT */
/*
 * test_answer.c - the allocator's answer (shm/answer.h), (O) of
 * docs/design.md: a reader never takes half of one answer and half of
 * another.  A writer process writes answers whose seven figures are all
 * the same number, one more each time, as fast as it can; this process
 * reads them from the same shared page meanwhile: every answer it takes
 * has seven equal figures, and they never go back.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shm/answer.h"

#define READS 2000000

/* mstat_answer_write()'s stores, with the writer giving up its CPU
 * between any two of them. */
static void
write_slowly(struct mstat_shm_alloc *a, uint64_t v)
{
	_Atomic uint64_t *fig[] = { &a->answered, &a->answer_ns, &a->cost_ns,
				    &a->resident, &a->allocated, &a->metadata,
				    &a->retained };
	uint64_t odd = atomic_load_explicit(&a->seq, memory_order_relaxed) | 1;

	atomic_store_explicit(&a->seq, odd, memory_order_relaxed);
	for (size_t i = 0; i < sizeof(fig) / sizeof(fig[0]); i++) {
		atomic_store_explicit(fig[i], v, memory_order_release);
		sched_yield();
	}
	atomic_store_explicit(&a->seq, odd + 1, memory_order_release);
	sched_yield();
}

static void
answers_are_whole(void **state)
{
	bool slow = *state != NULL;
	struct mstat_shm_alloc *a = mmap(NULL, MSTAT_PAGE, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(a != MAP_FAILED);
	pid_t writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		for (uint64_t v = 1;; v++) {
			if (slow)
				write_slowly(a, v);
			else
				mstat_answer_write(a, &(struct mstat_alloc_figures){
					v, v, v, v, v, v, v });
			/* Back to back, but not so that a reader never
			 * finds an answer whole (a target answers at most
			 * every 100 ms). */
			if (v % 64 == 0)
				sched_yield();
		}
	}
	uint64_t last = 0, taken = 0, torn = 0;
	int reads = slow ? READS / 10 : READS;
	/* The writer forked may not have run yet on a busy machine: wait
	 * for its first whole answer, and read on past `reads` until some
	 * are taken (a reader that never takes one hangs: the timeout). */
	while (atomic_load_explicit(&a->seq, memory_order_relaxed) < 2)
		sched_yield();
	for (int i = 0; i < reads || taken < 100; i++) {
		struct mstat_alloc_figures f;
		if (slow && i % 16 == 0)
			sched_yield(); /* the writer's turn, on one CPU too */
		if (!mstat_answer_read(a, &f, 4))
			continue;
		taken++;
		torn += f.answer_ns != f.answered || f.cost_ns != f.answered ||
			f.resident != f.answered || f.allocated != f.answered ||
			f.metadata != f.answered || f.retained != f.answered;
		assert_true(f.answered >= last);
		last = f.answered;
	}
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	print_message("%llu answers taken of at least %d reads, up to %llu\n",
		      (unsigned long long)taken, reads, (unsigned long long)last);
	assert_int_equal(torn, 0);
	assert_true(taken > 0);
	/* A writer killed inside an answer leaves it odd or whole: a read
	 * then takes the last whole one, or none, never garbage. */
	struct mstat_alloc_figures f;
	if (mstat_answer_read(a, &f, 4))
		assert_true(f.answered == f.retained && f.answered >= last);
	munmap(a, MSTAT_PAGE);
}

int
main(void)
{
	static int slow = 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(answers_are_whole, NULL),
		cmocka_unit_test_prestate(answers_are_whole, &slow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
