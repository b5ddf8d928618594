/* SPDX-License-Identifier: MIT */
/*
 * test_truncate.c - no reader crashes on a segment truncated under it.
 *
 *  - the guard: a load from a page a truncation took away fails the
 *    guarded call with -EFAULT, again and again; a host program's own
 *    SIGBUS handler, installed before the first read or after it, still
 *    gets every SIGBUS that is not a guarded read's;
 *  - the public reader API: a writer's segment truncated at each step of
 *    a read (to its control page, and to nothing) makes
 *    mstat_reader_snapshot() return -EFAULT with a reason, never die; so
 *    does one truncated before the read begins (-EPROTO, by fstat).
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

#include "shm/guard.h"
#include "tests/protocol/harness.h"
#include "shm/reader.h"

/* ---- the guard, and a host's own handler ---- */

struct touch {
	volatile const unsigned char *p;
	unsigned sum;
};

static void
touch_page(void *arg)
{
	struct touch *t = arg;
	t->sum += t->p[0];
}

/* The host's handler: it jumps out of a fault of its own. */
static sigjmp_buf host_jump;
static volatile int host_faults;

static void
host_handler(int sig)
{
	(void)sig;
	host_faults++;
	siglongjmp(host_jump, 1);
}

static void
install_host_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = host_handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGBUS, &sa, NULL), 0);
}

/* A fault outside any guarded read: the host's handler must see it. */
static void
host_fault(const volatile unsigned char *p)
{
	int before = host_faults;

	if (!sigsetjmp(host_jump, 1))
		(void)p[0];
	assert_int_equal(host_faults, before + 1);
}

static void
guard_turns_sigbus_into_efault_and_chains(void **state)
{
	char path[] = "/tmp/mstat-guard-XXXXXX";
	int fd = mkstemp(path);
	long pg = sysconf(_SC_PAGESIZE);
	(void)state;

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 2 * pg), 0);
	unsigned char *m = mmap(NULL, 2 * (size_t)pg, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);

	install_host_handler(); /* before the first guarded read */
	struct touch t = { m + pg, 0 };
	assert_int_equal(mstat_guard_run(touch_page, &t), 0);
	/* Someone shrinks the file under the mapping. */
	assert_int_equal(ftruncate(fd, pg), 0);
	assert_int_equal(mstat_guard_run(touch_page, &t), -EFAULT);
	assert_int_equal(mstat_guard_run(touch_page, &t), -EFAULT); /* again */
	host_fault(m + pg);

	install_host_handler(); /* over ours, after it was installed */
	host_fault(m + pg);
	assert_int_equal(mstat_guard_run(touch_page, &t), -EFAULT); /* ours back */
	host_fault(m + pg);                                   /* and chained */
	t.p = m;
	assert_int_equal(mstat_guard_run(touch_page, &t), 0);
	signal(SIGBUS, SIG_DFL);
	munmap(m, 2 * (size_t)pg);
	close(fd);
}

/* ---- the public API ---- */

struct cut {
	const char *shm_name;
	pid_t writer;
	enum mstat_read_step at;
	unsigned visit;  /* the how-many-th visit of `at` cuts */
	off_t to;
	unsigned seen;
	int done;
};

static void
cut_at(enum mstat_read_step s, void *arg)
{
	struct cut *c = arg;

	if (s != c->at || c->done || c->seen++ != c->visit)
		return;
	/* The writer stopped first: a slot it reserved after the cut
	 * (fallocate) would give the file a size again, and the reader's
	 * reads and stores pages to land in. */
	int st;
	assert_int_equal(kill(c->writer, SIGSTOP), 0);
	assert_int_equal(waitpid(c->writer, &st, WUNTRACED), c->writer);
	assert_true(WIFSTOPPED(st));
	int fd = shm_open(c->shm_name, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, c->to), 0);
	close(fd);
	c->done = 1;
}

/* The writer's segment is cut: it would fault counting.  Kill it. */
static void
end_writer(struct writer *w, const char *shm_name)
{
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
	close(w->to);
	close(w->from);
	mstat_reader_close(w->r);
	w->r = NULL;
	shm_unlink(shm_name);
}

static void
public_api_survives_truncation_at_every_step(void **state)
{
	static const struct {
		enum mstat_read_step at;
		unsigned visit;
	} steps[] = {
		{ MSTAT_STEP_LOCKED, 0 },    { MSTAT_STEP_BASE_READ, 0 },
		{ MSTAT_STEP_ROTATED, 0 },   { MSTAT_STEP_HANDSHAKE, 0 },
		{ MSTAT_STEP_HANDSHAKE, 1 }, { MSTAT_STEP_SUMMED, 0 },
	};
	const off_t sizes[] = { MSTAT_PAGE, 0 };
	const char *args[] = { "pairs", "1", "1000", NULL };
	(void)state;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		for (size_t k = 0; k < 2; k++) {
			struct writer w;
			struct mstat_snapshot s;
			char name[64];

			writer_start(&w, "membarrier", 0, args);
			writer_go(&w);
			snprintf(name, sizeof(name), "%s",
				 mstat_reader_info(w.r)->shm_name);
			/* Whole, before the cut, and once the counting thread
			 * has its slot: the handshake visits two. */
			do
				snapshot_ok(w.r, &s);
			while (s.slots_used < 2 && usleep(1000) == 0);
			struct cut c = { name, w.pid, steps[i].at,
					 steps[i].visit, sizes[k], 0, 0 };
			mstat_reader_set_step_hook(cut_at, &c);
			int rc = mstat_reader_snapshot(w.r, &s);
			mstat_reader_set_step_hook(NULL, NULL);
			assert_true(c.done);
			/* Summed, only the control page is left to write:
			 * cut to it, the snapshot is whole. */
			int want = steps[i].at == MSTAT_STEP_SUMMED && sizes[k]
					   ? 0 : -EFAULT;
			if (rc != want)
				fail_msg("cut to %lld at step %d: %d (%s)",
					 (long long)sizes[k], (int)steps[i].at,
					 rc, mstat_reader_error(w.r));
			if (want)
				assert_non_null(strstr(mstat_reader_error(w.r),
						       "truncated while being read"));
			/* Refused from now on, by its size. */
			assert_int_equal(mstat_reader_snapshot(w.r, &s), -EPROTO);
			end_writer(&w, name);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guard_turns_sigbus_into_efault_and_chains),
		cmocka_unit_test(public_api_survives_truncation_at_every_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
