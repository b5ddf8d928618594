/* SPDX-License-Identifier: MIT */
/*
 * test_stall.c - a writer stuck inside an update section cannot hang a
 * reader.
 *
 *  - stopped (SIGSTOP) inside a section: reads return -EAGAIN within their
 *    wait budget and name the slot; a tick over it and a healthy target
 *    serves the healthy one; after SIGCONT the next read is exact;
 *  - killed (SIGKILL) inside a section: the owner lock is gone, so reads
 *    wait for nothing: they return at once, every time, with the final
 *    counts, the state `killed` and the one update cut short counted in
 *    `cut`.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/protocol/harness.h"
#include "shm/reader.h"

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A read of a stuck target: -EAGAIN naming the slot, and no hang. */
static void
expect_stalled(struct writer *w)
{
	struct mstat_snapshot s;
	double t0 = now_ms();

	mstat_reader_set_wait_budget(w->r, 2000);
	assert_int_equal(mstat_reader_snapshot(w->r, &s), -EAGAIN);
	assert_non_null(strstr(mstat_reader_error(w->r), "slot 1 (tid "));
	print_message("# stalled read returned after %.1f ms: %s\n",
		      now_ms() - t0, mstat_reader_error(w->r));
}

static void
stopped_writer_stalls_reads_until_continued(void **state)
{
	const char *mode = *state;
	const char *stall_args[] = { "stall", NULL };
	const char *pairs_args[] = { "pairs", "1", "1000", NULL };
	struct writer w, healthy;
	struct mstat_snapshot s, snaps[2];
	int status, rcs[2];

	writer_start(&w, mode, 0, stall_args);
	writer_start(&healthy, mode, 0, pairs_args);
	writer_go(&w);
	assert_int_equal(waitpid(w.pid, &status, WUNTRACED), w.pid);
	assert_true(WIFSTOPPED(status)); /* inside its section */

	expect_stalled(&w);
	expect_stalled(&w); /* the catching-up read stalls the same way */

	/* One tick over both: the stuck target costs the tick one wait
	 * budget, and the healthy one is read. */
	writer_go(&healthy);
	struct mstat_reader *rs[2] = { w.r, healthy.r };
	struct mstat_snapshot *outs[2] = { &snaps[0], &snaps[1] };
	mstat_reader_snapshot_many(rs, 2, outs, rcs, 2000);
	assert_int_equal(rcs[0], -EAGAIN);
	assert_int_equal(rcs[1], 0);
	writer_stop(&healthy);
	writer_wait_done(&healthy);
	snapshot_ok(healthy.r, &s);
	expect_truth(&s, &healthy);
	writer_finish(&healthy);

	/* Continued, it finishes its section; the next read is exact. */
	kill(w.pid, SIGCONT);
	writer_wait_done(&w);
	mstat_reader_set_wait_budget(w.r, 10000);
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
}

static void
killed_writer_never_hangs_reads(void **state)
{
	const char *mode = *state;
	const char *args[] = { "spin", NULL };
	struct writer w;
	struct mstat_snapshot s;
	char shm_name[64];

	writer_start(&w, mode, 0, args);
	strcpy(shm_name, mstat_reader_info(w.r)->shm_name);
	writer_go(&w);
	/* Wait until it sits inside its section: its word, not a read that
	 * fails, since a read can also catch it inside the count before
	 * (memcheck's pace makes that likely), and a kill there cuts that
	 * count instead. */
	writer_expect(&w, "inside");
	mstat_reader_set_wait_budget(w.r, 1000);
	assert_int_equal(mstat_reader_snapshot(w.r, &s), -EAGAIN);
	kill(w.pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(w.pid, &status, 0), w.pid);
	close(w.to);
	close(w.from);

	/* The reader that had it open, and a new one: neither waits. */
	struct mstat_reader *r;
	char err[256];
	assert_int_equal(mstat_reader_open_name(&r, shm_name, err, sizeof(err)), 0);
	struct mstat_reader *readers[2] = { w.r, r };
	for (int i = 0; i < 4; i++) {
		struct mstat_reader *x = readers[i % 2];
		double t0 = now_ms();
		mstat_reader_set_wait_budget(x, 2000);
		assert_int_equal(mstat_reader_snapshot(x, &s), 0);
		assert_true(now_ms() - t0 < 1000);
		assert_int_equal(s.state, MSTAT_KILLED);
		assert_int_equal(s.cut, 1);
		/* Its counts before the section (two before the library's
		 * constructor, one after), whole. */
		unsigned c = TEST_FIRST_CLASS;
		assert_int_equal(s.classes[c].alloc_count, 2);
		assert_int_equal(s.classes[c].alloc_bytes, 2 * ((UINT64_C(1) << 36) + 1));
		assert_int_equal(s.classes[c].free_count, 1);
	}
	print_message("# dead writer: final reads, state killed, 1 update cut\n");
	mstat_reader_close(r);
	mstat_reader_close(w.r);
	w.r = NULL;
	shm_unlink(shm_name);
}

int
main(void)
{
	void *fenced = (void *)harness_modes[0];
	void *membarrier = (void *)harness_modes[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(stopped_writer_stalls_reads_until_continued, fenced),
		cmocka_unit_test_prestate(stopped_writer_stalls_reads_until_continued, membarrier),
		cmocka_unit_test_prestate(killed_writer_never_hangs_reads, fenced),
		cmocka_unit_test_prestate(killed_writer_never_hangs_reads, membarrier),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
