/* SPDX-License-Identifier: MIT */
/* own.c - the library's own work, and its own blocks; see own.h. */
#include "own.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

MSTAT_START_TEXT void
mstat_own_begin(void)
{
	atomic_fetch_add_explicit(&mstat_thread.own_depth, 1, memory_order_relaxed);
	/* A signal handler sees the depth before `fast` goes. */
	atomic_signal_fence(memory_order_seq_cst);
	mstat_thread.fast = NULL;
}

MSTAT_START_TEXT void
mstat_own_end(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (atomic_fetch_sub_explicit(&mstat_thread.own_depth, 1,
				      memory_order_relaxed) == 1)
		mstat_slots_set(mstat_thread.own);
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
mstat_realloc_to_own(void *old, size_t n)
{
	void *p = n ? mstat_pool_own_alloc(n) : NULL;

	if (!p)
		return NULL;
	size_t have = malloc_usable_size(old);
	memcpy(p, old, have < n ? have : n);
	free(old);
	return p;
}
