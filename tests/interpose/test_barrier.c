/* SPDX-License-Identifier: MIT */
/*
 * test_barrier.c - the library registers for membarrier(2) while the
 * process has one thread.
 *
 * Registered once a second thread runs, the kernel waits for an RCU grace
 * period (synchronize_rcu(), 13 ms on the machine of docs/performance.md)
 * before it returns: a process that made its segment on its second thread
 * paid that for the global registration, and one that forked or exited
 * with threads alive paid it again for the private one.  Linked with the
 * library, whose constructor has run before main(), this process asks the
 * kernel which registrations it holds (MEMBARRIER_CMD_GET_REGISTRATIONS,
 * Linux 6.3) before it starts a thread, and expects both.  Skipped where
 * the kernel cannot say, where membarrier is refused, and in fenced mode.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/layout.h"
#include <mstatshm.h>

#define GET_REGISTRATIONS (1 << 9) /* MEMBARRIER_CMD_GET_REGISTRATIONS */

static long got; /* the registrations main() found */
static int got_errno;

static void
test_registered_at_start(void **state)
{
	(void)state;
	if (got < 0 && got_errno == EINVAL)
		skip(); /* a kernel before 6.3 */
	assert_true(got >= 0);
	assert_true(got & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
	assert_true(got & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

int
main(void)
{
	/* First, before anything here allocates. */
	got = syscall(SYS_membarrier, GET_REGISTRATIONS, 0, 0);
	got_errno = errno;

	const char *mode = getenv("MSTAT_MODE");
	bool fenced = mode && *mode ? strcmp(mode, "fenced") == 0
				    : MSTAT_DEFAULT_MODE == MSTAT_MODE_FENCED;

	/* Refused outright (a seccomp profile), or not used: nothing to
	 * register. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) < 0 || fenced)
		return 77;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registered_at_start),
	};
	/* Linked (the call keeps it so): its constructor has run. */
	if (!mstat_self_enabled())
		return 77;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
