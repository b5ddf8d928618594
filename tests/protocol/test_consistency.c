/* SPDX-License-Identifier: MIT */
/*
 * test_consistency.c - snapshots taken from outside while writers run.
 *
 *  - consistency: one section bumps two counters; no snapshot of two writer
 *    processes of two threads each shows them unequal;
 *  - causal cut: objects allocated by one thread are freed by another; no
 *    snapshot counts more frees than allocations in any class;
 *  - two readers in two processes at once are serialised (no two snapshots
 *    share an epoch) and both see exact results.
 *
 * Every test runs in both writer modes.  MSTAT_TEST_SECTIONS scales the
 * work (the stress suite sets it high).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "reader.h"
#include "sizeclass.h"

static unsigned long
sections(unsigned long dflt)
{
	const char *s = getenv("MSTAT_TEST_SECTIONS");
	return s && *s ? strtoul(s, NULL, 10) : dflt;
}

/* The writer's `pairs` section: a free of 2^40 + 1 bytes (the huge class)
 * and an allocation of 2^40 (class 144), always together. */
static void
check_pairs(const struct mstat_snapshot *s)
{
	const struct mstat_counts *f = &s->classes[MSTAT_HUGE_CLASS];
	const struct mstat_counts *a = &s->classes[MSTAT_HUGE_CLASS - 1];

	if (f->free_count != a->alloc_count ||
	    f->free_bytes != a->alloc_bytes + a->alloc_count)
		fail_msg("torn snapshot at epoch %llu: %llu frees, %llu allocs",
			 (unsigned long long)s->epoch,
			 (unsigned long long)f->free_count,
			 (unsigned long long)a->alloc_count);
}

static void
check_causal(const struct mstat_snapshot *s)
{
	for (unsigned c = TEST_FIRST_CLASS; c < MSTAT_CLASS_COUNT; c++)
		if (s->classes[c].free_count > s->classes[c].alloc_count ||
		    s->classes[c].free_bytes > s->classes[c].alloc_bytes)
			fail_msg("acausal snapshot at epoch %llu: class %u has "
				 "%llu frees of %llu allocs",
				 (unsigned long long)s->epoch, c,
				 (unsigned long long)s->classes[c].free_count,
				 (unsigned long long)s->classes[c].alloc_count);
}

static void
two_processes_never_show_a_torn_section(void **state)
{
	const char *mode = *state;
	char n[32];
	snprintf(n, sizeof(n), "%lu", sections(250000));
	const char *args[] = { "pairs", "2", n, NULL };
	struct writer w[2];
	struct mstat_reader *rs[2];
	struct mstat_snapshot snaps[2];
	int rcs[2];
	unsigned long taken = 0, moving = 0;
	uint64_t last[2] = { 0, 0 };

	for (int i = 0; i < 2; i++) {
		writer_start(&w[i], mode, 0, args);
		rs[i] = w[i].r;
	}
	writer_go(&w[0]);
	writer_go(&w[1]);
	/* As fast as it can, both targets per tick, as mstat-top does. */
	while (!(writer_poll_done(&w[0]) && writer_poll_done(&w[1]))) {
		mstat_reader_snapshot_many(rs, 2, snaps, rcs, 10000);
		for (int i = 0; i < 2; i++) {
			if (rcs[i] == -EAGAIN)
				continue;
			if (rcs[i] != 0)
				fail_msg("%s", mstat_reader_error(rs[i]));
			check_pairs(&snaps[i]);
			taken++;
			uint64_t a = snaps[i].classes[MSTAT_HUGE_CLASS - 1].alloc_count;
			moving += a != last[i] && a != 2 * strtoul(n, NULL, 10);
			last[i] = a;
		}
	}
	for (int i = 0; i < 2; i++) {
		snapshot_ok(w[i].r, &snaps[i]);
		check_pairs(&snaps[i]);
		expect_truth(&snaps[i], &w[i]);
		writer_finish(&w[i]);
	}
	print_message("# %s: %lu snapshots, %lu of them mid-run\n", mode, taken,
		      moving);
	/* Not vacuous: the reader did cut through running writers. */
	assert_true(moving >= 10);
}

static void
frees_never_precede_their_allocations(void **state)
{
	const char *mode = *state;
	char n[32];
	snprintf(n, sizeof(n), "%lu", sections(200000));
	const char *args[] = { "handoff", "2", n, NULL };
	struct writer w;
	struct mstat_snapshot s;
	unsigned long taken = 0;

	writer_start(&w, mode, 0, args);
	writer_go(&w);
	while (!writer_poll_done(&w)) {
		int rc = mstat_reader_snapshot(w.r, &s);
		if (rc == -EAGAIN)
			continue;
		if (rc != 0)
			fail_msg("%s", mstat_reader_error(w.r));
		check_causal(&s);
		taken++;
	}
	snapshot_ok(w.r, &s);
	check_causal(&s);
	expect_truth(&s, &w);
	writer_finish(&w);
	print_message("# %s: %lu snapshots\n", mode, taken);
	assert_true(taken >= 10);
}

/* A reader process: snapshots until the target's work is all counted,
 * writes each epoch it saw to `fd`, exits 0 if all was well. */
static void
reader_process(pid_t target, uint64_t final_allocs, int fd)
{
	struct mstat_reader *r;
	struct mstat_snapshot s;
	char err[256];
	uint64_t last = 0;

	if (mstat_reader_open_pid(&r, target, err, sizeof(err)) < 0)
		_exit(10);
	for (;;) {
		int rc = mstat_reader_snapshot(r, &s);
		if (rc == -EAGAIN || rc == -EBUSY)
			continue;
		if (rc != 0)
			_exit(11);
		const struct mstat_counts *f = &s.classes[MSTAT_HUGE_CLASS];
		const struct mstat_counts *a = &s.classes[MSTAT_HUGE_CLASS - 1];
		if (f->free_count != a->alloc_count)
			_exit(12); /* torn */
		if (s.epoch <= last)
			_exit(13); /* epochs go forward */
		last = s.epoch;
		if (write(fd, &s.epoch, sizeof(s.epoch)) != sizeof(s.epoch))
			_exit(14);
		if (a->alloc_count == final_allocs)
			break;
		if (a->alloc_count > final_allocs)
			_exit(15);
	}
	mstat_reader_close(r);
	_exit(0);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void
two_reader_processes_are_serialised_and_exact(void **state)
{
	const char *mode = *state;
	unsigned long per_thread = sections(100000);
	char n[32];
	snprintf(n, sizeof(n), "%lu", per_thread);
	const char *args[] = { "pairs", "2", n, NULL };
	struct writer w;
	struct mstat_snapshot s;
	pid_t readers[2];
	int fds[2][2];

	writer_start(&w, mode, 0, args);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe2(fds[i], O_CLOEXEC), 0);
		readers[i] = fork();
		assert_true(readers[i] >= 0);
		if (readers[i] == 0) {
			close(fds[i][0]);
			reader_process(w.pid, 2 * per_thread, fds[i][1]);
		}
		close(fds[i][1]);
	}
	writer_go(&w);

	/* Collect both readers' epochs: each must be distinct. */
	size_t cap = 1 << 16, count = 0;
	uint64_t *epochs = malloc(cap * sizeof(*epochs));
	for (int i = 0; i < 2; i++) {
		uint64_t e;
		while (read(fds[i][0], &e, sizeof(e)) == sizeof(e)) {
			if (count == cap)
				epochs = realloc(epochs, (cap *= 2) * sizeof(*epochs));
			epochs[count++] = e;
		}
		close(fds[i][0]);
		int status;
		assert_int_equal(waitpid(readers[i], &status, 0), readers[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	qsort(epochs, count, sizeof(*epochs), cmp_u64);
	for (size_t i = 1; i < count; i++)
		if (epochs[i] == epochs[i - 1])
			fail_msg("two snapshots cut at epoch %llu",
				 (unsigned long long)epochs[i]);
	free(epochs);

	writer_wait_done(&w);
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
	print_message("# %s: %zu snapshots by two readers\n", mode, count);
}

int
main(void)
{
	void *fenced = (void *)harness_modes[0];
	void *membarrier = (void *)harness_modes[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(two_processes_never_show_a_torn_section, fenced),
		cmocka_unit_test_prestate(two_processes_never_show_a_torn_section, membarrier),
		cmocka_unit_test_prestate(frees_never_precede_their_allocations, fenced),
		cmocka_unit_test_prestate(frees_never_precede_their_allocations, membarrier),
		cmocka_unit_test_prestate(two_reader_processes_are_serialised_and_exact, fenced),
		cmocka_unit_test_prestate(two_reader_processes_are_serialised_and_exact, membarrier),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
