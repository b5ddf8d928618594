/* SPDX-License-Identifier: MIT */
/*
 * profile.h - the sampled heap profile, the target's side.
 *
 * Allocations are sampled per byte, as a Poisson process of mean
 * interval R bytes (MSTAT_SAMPLE_BYTES, 512 KiB by default, 0 off; a
 * reader may change it through the header's `sample_request`): a block
 * of n bytes is sampled with probability 1 - exp(-n/R), R the mean its
 * thread's countdown was drawn from, and weighs its counted bytes over
 * that (countdown.h).  The fast path is the countdown in the thread's
 * line (writer.h, mstat_sample_due()); when it goes below zero the
 * interposer calls here, out of line:
 *
 *	if (mstat_profile_begin(n)) {
 *		q = the plain path's block, counted with `size` bytes;
 *		p = q, or a block >= size where a free can tell it may
 *		    be sampled (below);
 *		if (q && p && (e = mstat_profile_note(p, n, size))) {
 *			q's bytes to p, q freed, uncounted;
 *			mstat_profile_record(e, caller);
 *		} else {
 *			q stays; mstat_profile_cancel(), or, the table
 *			being full, mstat_profile_record(NULL, caller);
 *		}
 *	}
 *
 * So sampling changes no count: the call was counted as the plain path
 * counts it, and the free of the sampled block is counted with the same
 * size, which the live table keeps (and malloc_usable_size() gives).
 *
 * A free tells by its block's size or address whether it may be a
 * sampled one before it calls mstat_profile_freed(): with glibc's chunk
 * header, a sampled block is larger than a page, or one of the pool's
 * (pool.h), whose header word reads as larger still, a size the frees
 * of smaller chunks read from the header anyway; with another allocator,
 * a sampled block is page-aligned (the next allocator's), and a free
 * tests `(p & 4095) == 0`.
 *
 * Everything here runs inside malloc: it never allocates, never takes a
 * lock a free could wait on, and a thread inside it samples nothing more
 * (libunwind may allocate).  Stacks are taken with libunwind's
 * unw_backtrace(), never glibc's backtrace(), which can allocate and take
 * loader locks.
 */
#ifndef MSTAT_LIB_PROFILE_H
#define MSTAT_LIB_PROFILE_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/writer.h"

/* The thread's countdown went below zero on an allocation of `n` bytes:
 * draws the next one, and says whether this allocation is sampled.  True
 * opens the thread's sampling (no sample inside it); record or cancel
 * closes it. */
bool mstat_profile_begin(size_t n) MSTAT_HIDDEN;

/* A live sampled block, as the live table (lib/profile.c) remembers it. */
struct mstat_sample;

/* Sampled block `p`, `requested` bytes asked, counted with `counted`
 * bytes: remembered with its weight, before it is counted and before it
 * is the program's.  NULL if the table has no room. */
struct mstat_sample *mstat_profile_note(void *p, size_t requested,
					size_t counted) MSTAT_HIDDEN;

/* The stack of sampled block `e` (NULL: not remembered), taken from the
 * code that returns to `caller` (the frames above it are the library's
 * and are left out); closes the sampling. */
void mstat_profile_record(struct mstat_sample *e, const void *caller) MSTAT_HIDDEN;

/* Whether `caller`, the code a sampled allocation returns to, is the
 * dynamic loader's: its allocations are not sampled (cancel them).  It
 * allocates as it grows a thread's thread-local storage, from inside
 * __tls_get_addr(), and until it is done the storage is half made: the
 * unwinder, whose own thread-local storage it is, would read it, and
 * glibc abort or the process fault. */
bool mstat_profile_loader(const void *caller) MSTAT_HIDDEN;

/* The sampled allocation failed, or is not sampled. */
void mstat_profile_cancel(void) MSTAT_HIDDEN;

/* `p` is being freed (or reallocated), while it is still live: if it
 * was sampled, its free is recorded, it is forgotten, and *counted is
 * the size its allocation was counted with.  True if it was. */
bool mstat_profile_freed(void *p, size_t *counted) MSTAT_HIDDEN;

/* Whether `p` is a live sampled block; if so, and `counted` is not
 * NULL, the size its allocation was counted with. */
bool mstat_profile_owns(const void *p, size_t *counted) MSTAT_HIDDEN;

/* With an allocator other than glibc, a sampled block is page-aligned. */
#define MSTAT_SAMPLE_ALIGN 4096u
static inline bool
mstat_sample_aligned(const void *p)
{
	return ((uintptr_t)p & (MSTAT_SAMPLE_ALIGN - 1)) == 0;
}

/*
 * A block where a sampled one may be (page-aligned; glibc's blocks
 * larger than a page) that was not sampled is common: the allocator
 * hands a freed sampled block out again, often to the same hot loop.  So
 * such a block is looked up only if a counting filter says it may be
 * sampled: per bucket of addresses, the live sampled blocks in it.  One
 * load of a process-local table; a block whose bucket is 0 is not
 * sampled.  Relaxed: the increment for a sampled block precedes its
 * return to the program, whose own synchronisation orders it before the
 * free that loads it; other blocks of the bucket only add to the count
 * while they live.
 */
#define MSTAT_SAMPLE_FILTER 16384u
extern _Atomic uint16_t mstat_sample_filter[MSTAT_SAMPLE_FILTER] MSTAT_HIDDEN;

static inline unsigned
mstat_sample_bucket(const void *p)
{
	return (unsigned)((((uintptr_t)p >> 12) * UINT64_C(0x9e3779b97f4a7c15)) >> 50);
}

/* `p` may be a live sampled block (false: it is not). */
static inline bool
mstat_sample_maybe(const void *p)
{
	return atomic_load_explicit(&mstat_sample_filter[mstat_sample_bucket(p)],
				    memory_order_relaxed) != 0;
}

#endif /* MSTAT_LIB_PROFILE_H */
