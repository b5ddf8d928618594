/* SPDX-License-Identifier: MIT */
/* guard.c - SIGBUS from a truncated segment, as an error; see guard.h. */
#include "shm/guard.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* A signal handler has no argument through which to find its thread's
 * jump buffer: set only around fn() in mstat_guard_run(), in the thread
 * that runs it.  initial-exec: reading it in a handler must not allocate.
 * (Not in the library mstat-attach injects, whose TLS cannot be
 * initial-exec, lib/state.h: it never reads a segment.) */
#if defined(MSTAT_ATTACH) && MSTAT_ATTACH
#define GUARD_TLS_MODEL
#else
#define GUARD_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif
static _Thread_local sigjmp_buf *bus_jump GUARD_TLS_MODEL;

/* The handler that was there before ours; under install_lock. */
static struct sigaction previous;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void
on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	if (bus_jump)
		siglongjmp(*bus_jump, 1);
	/* Not a read of ours: what would have happened without us. */
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, ctx);
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	} else {
		/* Returning re-runs the faulting access, which now gets the
		 * default action.  A SIGBUS sent by kill() does not come back:
		 * send it again. */
		signal(sig, SIG_DFL);
		if (si->si_code <= 0)
			raise(sig);
	}
}

/* Ours is the installed handler, or becomes it. */
static int
install(void)
{
	struct sigaction cur, sa;
	int rc = 0;

	pthread_mutex_lock(&install_lock);
	if (sigaction(SIGBUS, NULL, &cur) < 0) {
		rc = -errno;
	} else if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigbus) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &previous) < 0)
			rc = -errno;
	}
	pthread_mutex_unlock(&install_lock);
	return rc;
}

int
mstat_guard_run(void (*fn)(void *), void *arg)
{
	sigjmp_buf env, *outer = bus_jump;
	int rc;

	if (!outer && (rc = install()) < 0)
		return rc;
	/* sigsetjmp(.., 1) saves the signal mask, so the jump out of the
	 * handler unblocks SIGBUS again. */
	if (sigsetjmp(env, 1)) {
		bus_jump = outer;
		return -EFAULT;
	}
	bus_jump = &env;
	fn(arg);
	bus_jump = outer;
	return 0;
}
