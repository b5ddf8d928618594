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

#include "tests/protocol/harness.h"
#include "shm/reader.h"
#include "shm/sizeclass.h"

static unsigned long
sections(unsigned long dflt)
{
	const char *s = getenv("MSTAT_TEST_SECTIONS");
	return s && *s ? strtoul(s, NULL, 10) : dflt;
}

/* The `handoff` writer allocates and frees test sizes, one per class.
 * Counters wrap at 2^64 (these sizes reach it in the stress suite), so
 * bytes are checked against counts modulo 2^64 and order on counts. */
static void
check_causal(const struct mstat_snapshot *s)
{
	static const uint64_t sizes[] = {
		(UINT64_C(1) << 36) + 1, UINT64_C(1) << 38, UINT64_C(1) << 40,
		(UINT64_C(1) << 40) + 1,
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const struct mstat_counts *k = &s->classes[mstat_size_class(sizes[i])];
		if (k->free_count > k->alloc_count ||
		    k->alloc_bytes != k->alloc_count * sizes[i] ||
		    k->free_bytes != k->free_count * sizes[i])
			fail_msg("acausal or torn snapshot at epoch %llu: size "
				 "%llu has %llu frees of %llu allocs",
				 (unsigned long long)s->epoch,
				 (unsigned long long)sizes[i],
				 (unsigned long long)k->free_count,
				 (unsigned long long)k->alloc_count);
	}
}

/* Snapshots of running `pairs` writers: each must be whole.  The writers
 * run at least their minimum and on until the reader has cut through them
 * `mid_run` times, so the test is never vacuous however the machine is
 * loaded.  Returns the snapshots taken. */
static unsigned long
read_pairs_until(struct writer *w, size_t n, unsigned long min_sections,
		 unsigned long mid_run)
{
	struct mstat_reader *rs[2];
	struct mstat_snapshot snaps[2];
	struct mstat_snapshot *outs[2] = { &snaps[0], &snaps[1] };
	int rcs[2];
	unsigned long taken = 0, moving = 0;
	uint64_t last[2] = { 0, 0 };
	bool stopped = false;

	assert_true(n <= 2);
	for (size_t i = 0; i < n; i++) {
		rs[i] = w[i].r;
		writer_go(&w[i]);
	}
	for (;;) {
		bool done = true, enough = true;
		for (size_t i = 0; i < n; i++)
			done &= writer_poll_done(&w[i]);
		if (done)
			break;
		mstat_reader_snapshot_many(rs, n, outs, rcs, 10000);
		for (size_t i = 0; i < n; i++) {
			if (rcs[i] == -EAGAIN || rcs[i] == -EBUSY)
				continue;
			if (rcs[i] != 0)
				fail_msg("%s", mstat_reader_error(rs[i]));
			check_pairs(&snaps[i]);
			taken++;
			uint64_t a = snaps[i].classes[MSTAT_HUGE_CLASS - 1].alloc_count;
			moving += !stopped && a != last[i];
			last[i] = a;
			enough &= a >= min_sections;
		}
		if (!stopped && enough && moving >= mid_run) {
			for (size_t i = 0; i < n; i++)
				writer_stop(&w[i]);
			stopped = true;
		}
	}
	return taken;
}

static void
two_processes_never_show_a_torn_section(void **state)
{
	const char *mode = *state;
	unsigned long per_thread = sections(250000);
	char n[32];
	snprintf(n, sizeof(n), "%lu", per_thread);
	const char *args[] = { "pairs", "2", n, NULL };
	struct writer w[2];
	struct mstat_snapshot s;

	/* 2 processes x 2 threads x 250000: 10^6 sections at least. */
	for (int i = 0; i < 2; i++)
		writer_start(&w[i], mode, 0, args);
	unsigned long taken = read_pairs_until(w, 2, 2 * per_thread, 1000);
	for (int i = 0; i < 2; i++) {
		snapshot_ok(w[i].r, &s);
		check_pairs(&s);
		expect_truth(&s, &w[i]);
		writer_finish(&w[i]);
	}
	print_message("# %s: %lu snapshots\n", mode, taken);
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
		if (rc == -EAGAIN || rc == -EBUSY)
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

/* A reader process: snapshots as fast as it can, each whole and each at a
 * later epoch than the last, and writes every epoch to `out`.  When the
 * final count arrives on `ctl`, its last snapshot must show exactly that.
 * Exits 0 if all was well. */
static void
reader_process(pid_t target, int ctl, int out)
{
	struct mstat_reader *r;
	struct mstat_snapshot s;
	char err[256];
	uint64_t last = 0, final = 0;
	bool ending = false;

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
		if (write(out, &s.epoch, sizeof(s.epoch)) != sizeof(s.epoch))
			_exit(14);
		if (ending)
			_exit(a->alloc_count == final ? 0 : 15);
		ending = read(ctl, &final, sizeof(final)) == sizeof(final);
	}
}

static void
drain(int fd, uint64_t **epochs, size_t *count, size_t *cap)
{
	uint64_t e;

	while (read(fd, &e, sizeof(e)) == sizeof(e)) {
		if (*count == *cap)
			*epochs = realloc(*epochs, (*cap *= 2) * sizeof(**epochs));
		(*epochs)[(*count)++] = e;
	}
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
	int out[2][2], ctl[2][2];
	size_t cap = 1 << 16, count = 0, seen[2] = { 0, 0 };
	uint64_t *epochs = malloc(cap * sizeof(*epochs));

	writer_start(&w, mode, 0, args);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe2(out[i], O_CLOEXEC), 0);
		assert_int_equal(pipe2(ctl[i], O_CLOEXEC | O_NONBLOCK), 0);
		readers[i] = fork();
		assert_true(readers[i] >= 0);
		if (readers[i] == 0)
			reader_process(w.pid, ctl[i][0], out[i][1]);
		close(out[i][1]);
		close(ctl[i][0]);
		fcntl(out[i][0], F_SETFL, O_NONBLOCK);
	}
	writer_go(&w);

	/* A third reader, this process, paces the run: the writer stops once
	 * it did its minimum and both readers took 200 snapshots. */
	for (;;) {
		for (int i = 0; i < 2; i++) {
			size_t before = count;
			drain(out[i][0], &epochs, &count, &cap);
			seen[i] += count - before;
		}
		snapshot_ok(w.r, &s);
		if (s.classes[MSTAT_HUGE_CLASS - 1].alloc_count >= 2 * per_thread &&
		    seen[0] >= 200 && seen[1] >= 200)
			break;
	}
	writer_stop(&w);
	writer_wait_done(&w);
	uint64_t final = w.truth[MSTAT_HUGE_CLASS - 1][0];
	for (int i = 0; i < 2; i++) {
		int status;
		assert_int_equal(write(ctl[i][1], &final, sizeof(final)),
				 sizeof(final));
		fcntl(out[i][0], F_SETFL, 0);
		drain(out[i][0], &epochs, &count, &cap);
		assert_int_equal(waitpid(readers[i], &status, 0), readers[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		close(out[i][0]);
		close(ctl[i][1]);
	}
	/* Serialised: no two snapshots of the three readers at one epoch
	 * (this process's own epochs are not collected; its reads are
	 * serialised by the same lock). */
	qsort(epochs, count, sizeof(*epochs), cmp_u64);
	for (size_t i = 1; i < count; i++)
		if (epochs[i] == epochs[i - 1])
			fail_msg("two snapshots cut at epoch %llu",
				 (unsigned long long)epochs[i]);
	free(epochs);

	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
	print_message("# %s: %zu snapshots by two reader processes\n", mode, count);
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
