/* SPDX-License-Identifier: MIT */
/*
 * own.h - the library's own work, and its own blocks (own.c): what the
 * library allocates for itself is never counted, by whomever it is freed.
 */
#ifndef MSTAT_LIB_OWN_H
#define MSTAT_LIB_OWN_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/pool.h"
#include "lib/state.h"

/*
 * The library's own work: while a thread does it (loads libunwind, takes
 * its first stack, gives itself a slot, opens its reader of itself,
 * registers its handlers), what glibc and libunwind allocate for it is
 * the library's, not the program's, and neither that allocation nor its
 * free, whenever and by whomever, is counted (mstat_own_alloc()).
 * Nests.  The thread's `fast` slot is NULL meanwhile: its allocations
 * leave the inline paths for the ones that look at this.  Its signals
 * wait, but for faults (own.c), and their handlers run once the work is
 * done, allocating as the program: two system calls, at the outermost
 * begin and end.
 */
void mstat_own_begin(void) MSTAT_HIDDEN;
void mstat_own_end(void) MSTAT_HIDDEN;

static inline __attribute__((always_inline)) bool
mstat_own_work(void)
{
	/* Relaxed: this thread's, and its signal handlers'. */
	return atomic_load_explicit(&mstat_thread.own_depth,
				    memory_order_relaxed) != 0;
}

/*
 * While this thread does the library's own work, what it allocates is a
 * block of the pool's own part, uncounted, as its free will be: a free
 * tells it by its address, whoever frees it, on any allocator.  NULL (too
 * large, the pool full or not mapped): the caller goes on as for any
 * block, counted.
 */
void *mstat_own_alloc(size_t n, bool zero) MSTAT_HIDDEN;

/* Whether live block `p` is the library's own. */
static inline bool
mstat_own_block(const void *p)
{
	return mstat_pool_has(p) && mstat_pool_own(p);
}

/* realloc of own block `old`, by anyone (glibc growing a thread's TLS
 * vector it made in the library's work): it stays the library's, unless
 * the own part cannot hold it; then a block of the program's, counted as
 * allocated, as the old one never was. */
void *mstat_own_realloc(void *old, size_t n) MSTAT_HIDDEN;

/* realloc of `old`, a block of the program's, in the library's own
 * work: its free counted, and an own block in its place; NULL if none
 * can be had (the caller reallocates as for any block). */
void *mstat_own_realloc_into(void *old, size_t n) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_OWN_H */
