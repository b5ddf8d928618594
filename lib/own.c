/* SPDX-License-Identifier: MIT */
/* own.c - the library's own work, and its own blocks; see own.h. */
#include "lib/own.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/slots.h"

/*
 * Signals wait while the thread does the library's own work: a handler
 * that ran then would find own_depth set, and its allocations would be
 * taken for the library's, uncounted at both ends.  All of them wait but
 * those the kernel raises for the instruction running (a fault, a trap, a
 * bad system call), which cannot wait: a fault with its signal blocked
 * kills the process, and what the library's own work may take for one
 * (the reader's SIGBUS guard, shm/guard.h) must find its handler.
 * pthread_sigmask() leaves glibc's own signals (cancellation, setxid)
 * unblocked, as it must.
 */
static MSTAT_START_TEXT void
hold_signals(sigset_t *old)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t held;

	sigfillset(&held);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&held, faults[i]);
	pthread_sigmask(SIG_BLOCK, &held, old);
}

MSTAT_START_TEXT void
mstat_own_begin(void)
{
	/* The outermost: no handler runs from here to its end, so none
	 * sees the depth set, and none can nest in between. */
	if (atomic_load_explicit(&mstat_thread.own_depth, memory_order_relaxed) == 0)
		hold_signals(&mstat_thread.own_mask);
	atomic_fetch_add_explicit(&mstat_thread.own_depth, 1, memory_order_relaxed);
	/* A signal handler (of a fault) sees the depth before `fast` goes. */
	atomic_signal_fence(memory_order_seq_cst);
	mstat_thread.fast = NULL;
}

MSTAT_START_TEXT void
mstat_own_end(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (atomic_fetch_sub_explicit(&mstat_thread.own_depth, 1,
				      memory_order_relaxed) == 1) {
		mstat_slots_set(mstat_thread.own);
		/* The signals that waited are delivered here, their handlers
		 * counting as the program's. */
		pthread_sigmask(SIG_SETMASK, &mstat_thread.own_mask, NULL);
	}
}

void *
mstat_own_alloc(size_t n, bool zero)
{
	void *p = mstat_pool_own_alloc(n);

	if (p && zero)
		memset(p, 0, n);
	return p;
}

void *
mstat_own_realloc(void *old, size_t n)
{
	size_t have = mstat_pool_usable(old);
	void *p;

	if (n == 0) { /* as glibc's: frees, gives NULL */
		mstat_pool_free(old);
		return NULL;
	}
	if (n <= have)
		return old;
	if (!(p = mstat_pool_own_alloc(n)) && !(p = malloc(n)))
		return NULL;
	memcpy(p, old, have);
	mstat_pool_free(old);
	return p;
}

void *
mstat_own_realloc_into(void *old, size_t n)
{
	void *p = n ? mstat_pool_own_alloc(n) : NULL;

	if (!p)
		return NULL;
	size_t have = malloc_usable_size(old);
	memcpy(p, old, have < n ? have : n);
	free(old);
	return p;
}
