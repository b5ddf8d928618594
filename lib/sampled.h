/* SPDX-License-Identifier: MIT */
/*
 * sampled.h - the interposer's sampled blocks (sampled.c): moved where a
 * free can tell them, remembered in the profile's live table (profile.h),
 * freed and reallocated with the size their allocation was counted with.
 * The tests a free or a realloc makes are inline.
 */
#ifndef MSTAT_LIB_SAMPLED_H
#define MSTAT_LIB_SAMPLED_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/next.h"
#include "lib/pool.h"
#include "lib/profile.h"
#include "lib/state.h"

/*
 * With glibc's header, every sampled block is larger than a page, or the
 * pool's (pool.h), whose header word reads as larger still:
 * mstat_sampled() leaves the large ones where glibc made them, and moves
 * every other one.  A free or realloc of a block up to a page, most of
 * them, then needs no test for a sample but this size's, which the chunk
 * rows' inline path does not even make.
 */
#define MSTAT_SAMPLE_IN_PLACE 4096u
_Static_assert(MSTAT_CHUNK_USABLE(MSTAT_SAMPLE_IN_PLACE / 16) <= MSTAT_POOL_MAX,
	       "the pool holds every block that mstat_sampled() moves");

/* Block `p` of glibc's, of `usable` bytes, is on its way out (freed, or
 * handed to realloc): if it is a sampled one, it leaves the live table.
 * The size its allocation was counted with: `usable` but for a block
 * that mstat_sampled() moved. */
static inline size_t
mstat_sample_leaving(void *p, size_t usable)
{
	size_t counted;

	if (UNLIKELY(usable > MSTAT_SAMPLE_IN_PLACE) &&
	    UNLIKELY(mstat_sample_maybe(p)) && mstat_profile_freed(p, &counted))
		return counted;
	return usable;
}

/*
 * Whether live block `p` (not NULL, not the arena's) is where a sampled
 * block may be: with glibc's header, the pool's (its header word reads as
 * a chunk larger still) or larger than a page (MSTAT_SAMPLE_IN_PLACE;
 * moved, such a block would be copied, and a realloc of a large buffer
 * made twice: once moved, once again at its next realloc, which glibc
 * would have made in place or with mremap); with another allocator,
 * page-aligned.  mstat_sampled() leaves a block there in place and moves
 * any other one.
 */
static inline bool
mstat_sample_place(const void *p)
{
	return mstat_next_header() ? mstat_glibc_usable(p) > MSTAT_SAMPLE_IN_PLACE
				   : mstat_sample_aligned(p);
}

/* Whether such a block may be a sampled one, to be looked up in the live
 * table (profile.h): a pool address always is, even one that is no live
 * block, which the callers then refuse. */
static inline bool
mstat_may_be_sampled(const void *p)
{
	return mstat_pool_has(p) ||
	       (mstat_sample_place(p) && mstat_sample_maybe(p));
}

/*
 * Block `q` of `n` bytes, asked with alignment `align` (0: malloc's), just
 * made and counted by the plain path, becomes a sampled one (profile.h):
 * unless mstat_sample_place(), moved to a block of the pool's or of the
 * next allocator's, with q's first `copy` bytes (or zeroed, if `zero`).
 * It is remembered with the size q was counted with, which its free is
 * counted with and malloc_usable_size() says: the plain block's, whatever
 * sampling does.
 * If it cannot be (no block to move it to, no room in the live table), q
 * stays as it is.
 */
void *mstat_sampled(void *q, size_t n, size_t align, size_t copy, bool zero,
		    const void *caller) MSTAT_HIDDEN;

/* The free of sampled block `p`, whose allocation was counted with `size`
 * bytes: as any free does, with that size. */
void mstat_sampled_free(void *p, size_t size) MSTAT_HIDDEN;

/*
 * realloc whose new block is to be sampled (`sample`: mstat_profile_begin()
 * said so), or whose old one may have been.  A sampled block that was
 * moved is never handed to the next realloc, which could keep it in
 * place, no longer sampled, and counted with a size its allocation was
 * not: it is freed after a plain allocation and a copy, counted as one
 * realloc, in one section with glibc's header, as mstat_malloc_realloc_plain()
 * counts.  Old is live and this thread's; if no new block can be had, it
 * stays so.  One left in place (glibc's large blocks) goes to
 * mstat_malloc_realloc_plain(), as any block, which takes it out of the live
 * table.
 */
void *mstat_sampled_realloc(void *old, size_t n, bool sample,
			    const void *caller) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_SAMPLED_H */
