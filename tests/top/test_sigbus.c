/* SPDX-License-Identifier: MIT */
/*
 * test_sigbus.c - a segment truncated while the sampler reads it: the tick
 * survives the SIGBUS, drops that target with a reason, and goes on
 * reading the others.
 *
 * Two real targets (MSTAT_TARGET, mode "fixed").  The reader's step hook
 * truncates one segment to its control page right after the
 * reader has checked its size and read the base, so the handshake's next
 * load of a slot faults: exactly the window the reader's fstat() cannot
 * close.
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

#include "shm/reader.h"
#include "core/core.h"
#include "core/sampler.h" /* the core's targets, looked at */

struct target {
	pid_t pid;
	int in;
};

static void
start(struct target *t)
{
	const char *exe = getenv("MSTAT_TARGET");
	int to[2], from[2];
	char line[8];

	assert_non_null(exe);
	assert_int_equal(pipe2(to, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from, O_CLOEXEC), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		setenv("MSTAT_NAME", "sigbus-test", 1);
		execl(exe, exe, "fixed", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	t->in = to[1];
	assert_int_equal(read(from[0], line, 6), 6);
	close(from[0]);
}

/* Its segment is cut: it would fault counting its own exit.  Kill it and
 * remove the segment it leaves. */
static void
stop(struct target *t, const char *shm_name)
{
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
	close(t->in);
	shm_unlink(shm_name);
}

struct cut {
	const char *shm_name; /* the segment to truncate */
	int done;
};

static void
truncate_now(enum mstat_read_step s, void *arg)
{
	struct cut *c = arg;

	if (s != MSTAT_STEP_BASE_READ || c->done)
		return;
	int fd = shm_open(c->shm_name, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, MSTAT_PAGE), 0);
	close(fd);
	c->done = 1;
}

struct notes {
	char text[4][256];
	int n;
};

static void
keep_note(void *arg, const char *line)
{
	struct notes *n = arg;

	if (n->n < 4)
		snprintf(n->text[n->n++], sizeof(n->text[0]), "%s", line);
}

static void
test_truncated_while_read(void **state)
{
	struct target a, b;
	struct notes notes = { 0 };
	struct mstat_core *core;
	(void)state;

	start(&a);
	start(&b);
	pid_t pids[2] = { a.pid, b.pid };
	struct mstat_core_options o = {
		.pids = pids, .npids = 2, .interval_ms = 1000,
		/* Its own /dev/shm, where the targets are: the notes are then
		 * this test's only, not also one of other namespaces left
		 * unread without openat2 (memcheck has none). */
		.namespaces = { .own = true },
		.wait_budget_us = 100000, .linger_ns = 1000000000u,
		.note = keep_note, .note_arg = &notes,
	};
	assert_int_equal(mstat_core_new(&core, &o), 0);
	rcu_register_thread();
	mstat_core_tick(core); /* attaches both, reads both */
	/* The tick reads targets in list order: the first one's base is
	 * read first, and the hook cuts it then.  Call it "cut". */
	struct mstat_core_target *t;
	char name_cut[64] = "", name_kept[64] = "";
	pid_t kept = 0;
	int n = 0;
	cds_list_for_each_entry(t, &core->targets, node) {
		assert_non_null(t->sample);
		assert_int_equal(t->sample->live, MSTAT_LIVE_RUNNING);
		snprintf(n ? name_kept : name_cut, sizeof(name_cut), "%s",
			 t->shm_name);
		if (n++)
			kept = t->pid;
	}
	assert_int_equal(n, 2);

	/* Cut its segment in the middle of the next read. */
	struct cut c = { name_cut, 0 };
	mstat_reader_set_step_hook(truncate_now, &c);
	mstat_core_tick(core);
	mstat_reader_set_step_hook(NULL, NULL);
	assert_int_equal(c.done, 1);

	/* It is dropped, with a reason; the other is still there and read
	 * again on the next tick. */
	n = 0;
	cds_list_for_each_entry(t, &core->targets, node) {
		n++;
		assert_int_equal(t->pid, kept);
	}
	assert_int_equal(n, 1);
	assert_int_equal(notes.n, 1);
	assert_non_null(strstr(notes.text[0], "truncated while being read"));
	mstat_core_tick(core);
	t = cds_list_first_entry(&core->targets, struct mstat_core_target, node);
	assert_int_equal(t->sample->live, MSTAT_LIVE_RUNNING);
	assert_true(t->sample->have_snap);

	mstat_core_free(core);
	rcu_unregister_thread();
	stop(&a, a.pid == kept ? name_kept : name_cut);
	stop(&b, b.pid == kept ? name_kept : name_cut);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_while_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
