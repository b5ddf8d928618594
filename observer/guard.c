/* SPDX-License-Identifier: MIT */
/*
 * guard.c - surviving a segment truncated under its mapping.
 *
 * The reader fstat()s a segment before every read, but a segment shrunk
 * between that check and a load raises SIGBUS.  mstat_top_guarded() runs
 * the reads with a handler that jumps back out, so the observer drops that
 * target instead of dying.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "top.h"

/*
 * The one variable at file scope: a signal handler has no argument through
 * which to find its thread's jump buffer.  Set only around fn() in
 * mstat_top_guarded(), in the thread that runs it; NULL elsewhere, where a
 * SIGBUS is not ours and kills the process as it would have.
 */
static _Thread_local sigjmp_buf *bus_jump;

static void
on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	(void)ctx;
	if (bus_jump)
		siglongjmp(*bus_jump, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

int
mstat_top_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) < 0 ? -errno : 0;
}

int
mstat_top_guarded(void (*fn)(void *), void *arg)
{
	sigjmp_buf env;

	/* sigsetjmp(.., 1) saves the signal mask, so the jump out of the
	 * handler unblocks SIGBUS again. */
	if (sigsetjmp(env, 1)) {
		bus_jump = NULL;
		return -EFAULT;
	}
	bus_jump = &env;
	fn(arg);
	bus_jump = NULL;
	return 0;
}
