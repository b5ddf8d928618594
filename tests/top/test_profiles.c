/* SPDX-License-Identifier: MIT */
/*
 * test_profiles.c - a process's heap profile handed out by the core
 * (profiles.h): read through the handle, it is what a reader of the
 * process's own reads; a pid the core does not hold is refused with a
 * reason; a process gone since the last tick is left to the next; and
 * a handle taken before the process is killed reads the profile as it
 * ended, after the core has found it gone and removed its segment.
 *
 * A real target (MSTAT_TARGET, mode "sampled") sampling every allocation,
 * so that its profile has stacks, but where a sanitizer's malloc stands
 * in for the library's (MSTAT_SAMPLES=0), or memcheck's: none are
 * sampled there.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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

#include "core/core.h"
#include "core/profiles.h"
#include "shm/reader.h"

static pid_t
start(int *in)
{
	const char *exe = getenv("MSTAT_TARGET");
	int to[2], from[2];
	char line[8];

	assert_non_null(exe);
	assert_int_equal(pipe2(to, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		setenv("MSTAT_NAME", "profiles-test", 1);
		setenv("MSTAT_SAMPLE_BYTES", "1", 1);
		execl(exe, exe, "sampled", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	*in = to[1];
	assert_int_equal(read(from[0], line, 6), 6);
	close(from[0]);
	return pid;
}

/* a and b hold the same stacks with the same counts. */
static void
same_profile(const struct mstat_profile *a, const struct mstat_profile *b)
{
	assert_int_equal(a->nstacks, b->nstacks);
	assert_int_equal(a->nmodules, b->nmodules);
	for (uint32_t i = 0; i < a->nstacks; i++) {
		const struct mstat_profile_stack *x = &a->stacks[i], *y = &b->stacks[i];
		assert_int_equal(x->depth, y->depth);
		assert_memory_equal(x->frames, y->frames, x->depth * sizeof(x->frames[0]));
		assert_int_equal(x->allocs, y->allocs);
		assert_int_equal(x->frees, y->frees);
		assert_int_equal(x->alloc_weight, y->alloc_weight);
		assert_int_equal(x->free_weight, y->free_weight);
	}
}

static void
note(void *arg, const char *line)
{
	(void)arg;
	(void)line;
}

static void
test_handed_out(void **state)
{
	struct mstat_core *core;
	struct mstat_core_profile *h, *none;
	struct mstat_profile mine, theirs, after;
	struct mstat_reader *r;
	char err[256];
	int in;

	(void)state;
	pid_t pid = start(&in);
	struct mstat_core_options o = {
		.pids = &pid, .npids = 1, .interval_ms = 1000,
		.wait_budget_us = 100000, .linger_ns = 0, .note = note,
	};
	assert_int_equal(mstat_core_new(&core, &o), 0);
	rcu_register_thread();
	/* Before the core has seen it: nothing held. */
	assert_int_equal(mstat_core_profile_open(core, pid, &none, err,
						 sizeof(err)), -ENOENT);
	assert_null(none);
	char want[64];
	snprintf(want, sizeof(want), "no process %d counts", (int)pid);
	assert_non_null(strstr(err, want));
	mstat_core_tick(core);
	assert_int_equal(mstat_core_profile_open(core, pid, &h, err,
						 sizeof(err)), 0);
	assert_string_equal(mstat_core_profile_name(h), "profiles-test");
	assert_int_equal(mstat_core_profile_open(core, pid + 1000000, &none,
						 err, sizeof(err)), -ENOENT);

	/* What the process's own reader reads. */
	assert_int_equal(mstat_reader_open_pid(&r, pid, err, sizeof(err)), 0);
	assert_int_equal(mstat_reader_profile(r, &theirs), 0);
	mstat_reader_close(r);
	/* Nothing is sampled where another malloc stands in for the
	 * library's: a sanitizer's (MSTAT_SAMPLES=0), or memcheck's, which
	 * replaces malloc everywhere.  The handle is still checked. */
	const char *samples = getenv("MSTAT_SAMPLES");
	const char *preload = getenv("LD_PRELOAD");
	if ((!samples || strcmp(samples, "0") != 0) &&
	    !(preload && strstr(preload, "vgpreload")))
		assert_true(theirs.nstacks > 0);
	assert_int_equal(mstat_core_profile_read(h, &mine, err, sizeof(err)), 0);
	same_profile(&mine, &theirs);

	/* Killed: the core finds it gone and removes its segment; the
	 * handle still reads it, as it ended (nothing moved since). */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(in);
	/* Gone, and not read since: the next tick says what it is. */
	assert_int_equal(mstat_core_profile_open(core, pid, &none, err,
						 sizeof(err)), -ESTALE);
	assert_null(none);
	mstat_core_tick(core);
	assert_int_equal(mstat_core_profile_open(core, pid, &none, err,
						 sizeof(err)), -ENOENT);
	assert_int_equal(mstat_core_profile_read(h, &after, err, sizeof(err)), 0);
	same_profile(&after, &theirs);
	mstat_core_profile_close(h);

	mstat_reader_profile_release(&mine);
	mstat_reader_profile_release(&theirs);
	mstat_reader_profile_release(&after);
	mstat_core_free(core);
	rcu_unregister_thread();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handed_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
