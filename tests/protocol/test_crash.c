/* SPDX-License-Identifier: MIT */
/*
 * test_crash.c - readers killed anywhere leave nothing to repair.
 *
 *  - a reader is SIGKILLed at every step of a read (the step hook of
 *    shm/reader.h), and so is the reader after it, for every pair of
 *    steps: whatever the first left half done, the second catches up or
 *    dies too; the next reader's snapshot is whole and the final one exact;
 *  - readers looping snapshots are SIGKILLed at random moments;
 *  - as many readers as there are generations but one die after rotating
 *    while one writer section spans them all: the next reader must catch
 *    up (wait for that section) before it reads its base, the generation
 *    that section is still writing.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/protocol/harness.h"
#include "shm/reader.h"
#include "shm/sizeclass.h"

struct kill_point {
	enum mstat_read_step step;
	unsigned nth; /* the nth time the step is reached in one read */
};

static const struct kill_point points[] = {
	{ MSTAT_STEP_LOCKED, 0 },    { MSTAT_STEP_CAUGHT_UP, 0 },
	{ MSTAT_STEP_BASE_READ, 0 }, { MSTAT_STEP_ROTATED, 0 },
	{ MSTAT_STEP_HANDSHAKE, 0 }, { MSTAT_STEP_HANDSHAKE, 1 },
	{ MSTAT_STEP_HANDSHAKE, 2 }, { MSTAT_STEP_SUMMED, 0 },
	{ MSTAT_STEP_SYNCED, 0 },
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

static struct kill_point armed;
static unsigned reached[MSTAT_STEP_COUNT];

static void
kill_at(enum mstat_read_step s, void *arg)
{
	(void)arg;
	if (s == armed.step && reached[s]++ == armed.nth)
		raise(SIGKILL);
}

/* Forks a reader of `pid` that dies at `kp` if its read gets there, and
 * says whether it died.  With `retry`, a read that finds a stalled slot is
 * tried again until it ends; without, the reader reads once (a read that
 * needs no catching up never reaches CAUGHT_UP; one that finds a stalled
 * slot stops before BASE_READ). */
static bool
reader_killed_at(pid_t pid, struct kill_point kp, bool retry)
{
	pid_t child = fork();
	int status;

	assert_true(child >= 0);
	if (child == 0) {
		struct mstat_reader *r;
		struct mstat_snapshot s;
		int rc;
		if (mstat_reader_open_pid(&r, pid, NULL, 0) < 0)
			_exit(10);
		if (!retry)
			mstat_reader_set_wait_budget(r, 1000);
		armed = kp;
		mstat_reader_set_step_hook(kill_at, NULL);
		while ((rc = mstat_reader_snapshot(r, &s)) == -EAGAIN && retry)
			memset(reached, 0, sizeof(reached));
		_exit(rc == 0 || !retry ? 0 : 11);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	if (WIFSIGNALED(status)) {
		assert_int_equal(WTERMSIG(status), SIGKILL);
		return true;
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return false;
}

static void
reader_killed_at_every_pair_of_steps(void **state)
{
	const char *mode = *state;
	const char *args[] = { "pairs", "2", "100000", NULL };
	struct writer w;
	struct mstat_snapshot s;
	unsigned kills[NPOINTS] = { 0 };
	uint64_t last_epoch = 0, last_allocs = 0;

	writer_start(&w, mode, 0, args);
	writer_go(&w);
	for (size_t i = 0; i < NPOINTS; i++) {
		for (size_t j = 0; j < NPOINTS; j++) {
			kills[i] += reader_killed_at(w.pid, points[i], true);
			kills[j] += reader_killed_at(w.pid, points[j], true);
			/* The next reader, in this process, is whole and goes
			 * forward from where the dead ones left. */
			snapshot_ok(w.r, &s);
			check_pairs(&s);
			assert_true(s.epoch > last_epoch);
			assert_true(s.classes[MSTAT_HUGE_CLASS - 1].alloc_count >=
				    last_allocs);
			last_epoch = s.epoch;
			last_allocs = s.classes[MSTAT_HUGE_CLASS - 1].alloc_count;
		}
	}
	/* Every step was died at, catching up included. */
	for (size_t i = 0; i < NPOINTS; i++)
		if (kills[i] == 0)
			fail_msg("no reader died at step %d #%u", (int)points[i].step,
				 points[i].nth);
	writer_stop(&w);
	writer_wait_done(&w);
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
}

static void
readers_killed_at_random_moments(void **state)
{
	const char *mode = *state;
	const char *args[] = { "pairs", "2", "100000", NULL };
	struct writer w;
	struct mstat_snapshot s;
	unsigned seed = 12345;

	writer_start(&w, mode, 0, args);
	writer_go(&w);
	for (int i = 0; i < 200; i++) {
		pid_t child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			struct mstat_reader *r;
			if (mstat_reader_open_pid(&r, w.pid, NULL, 0) < 0)
				_exit(10);
			for (;;)
				mstat_reader_snapshot(r, &s);
		}
		struct timespec ts = { 0, (long)(rand_r(&seed) % 3000) * 1000 };
		nanosleep(&ts, NULL);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		snapshot_ok(w.r, &s);
		check_pairs(&s);
	}
	writer_stop(&w);
	writer_wait_done(&w);
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
}

static struct writer *resumed;

/* At BASE_READ: let the stopped writer finish its section now. */
static void
resume_writer_at_base(enum mstat_read_step s, void *arg)
{
	(void)arg;
	if (s != MSTAT_STEP_BASE_READ || !resumed)
		return;
	kill(resumed->pid, SIGCONT);
	writer_wait_done(resumed);
	resumed = NULL;
}

static void
catching_up_waits_for_a_dead_readers_writers(void **state)
{
	const char *mode = *state;
	const char *args[] = { "stall", NULL };
	const struct kill_point rotated = { MSTAT_STEP_ROTATED, 0 };
	struct writer w;
	struct mstat_snapshot s;
	int status, rc;

	/* The writer stops inside a section, half written, at epoch 0. */
	writer_start(&w, mode, 0, args);
	writer_go(&w);
	assert_int_equal(waitpid(w.pid, &status, WUNTRACED), w.pid);
	assert_true(WIFSTOPPED(status));
	/* MSTAT_GENS - 1 readers rotate and die before their handshake
	 * ends (each one after the first, catching up, cannot pass the
	 * stopped writer). */
	for (unsigned i = 0; i + 1 < MSTAT_GENS; i++)
		reader_killed_at(w.pid, rotated, false);
	/* One more read: if it read its base, generation (epoch + 1) % 4,
	 * without catching up, that base is the stopped section's
	 * generation; the section ends right after (the hook), and the
	 * snapshot would hold half of it. */
	resumed = &w;
	mstat_reader_set_step_hook(resume_writer_at_base, NULL);
	mstat_reader_set_wait_budget(w.r, 1000);
	rc = mstat_reader_snapshot(w.r, &s);
	mstat_reader_set_step_hook(NULL, NULL);
	if (rc == 0)
		expect_truth(&s, &w);
	else
		assert_int_equal(rc, -EAGAIN); /* caught up: it waited */
	if (resumed) {
		kill(w.pid, SIGCONT);
		writer_wait_done(&w);
	}
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	writer_finish(&w);
}

int
main(void)
{
	void *fenced = (void *)harness_modes[0];
	void *membarrier = (void *)harness_modes[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(reader_killed_at_every_pair_of_steps, fenced),
		cmocka_unit_test_prestate(reader_killed_at_every_pair_of_steps, membarrier),
		cmocka_unit_test_prestate(readers_killed_at_random_moments, fenced),
		cmocka_unit_test_prestate(readers_killed_at_random_moments, membarrier),
		cmocka_unit_test_prestate(catching_up_waits_for_a_dead_readers_writers, fenced),
		cmocka_unit_test_prestate(catching_up_waits_for_a_dead_readers_writers, membarrier),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
