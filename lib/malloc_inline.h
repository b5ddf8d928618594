/* SPDX-License-Identifier: MIT */
/*
 * malloc_inline.h - the inline paths of malloc and free (malloc.c), which the
 * C++ operators (cxx.c) take too.
 *
 * They are for the common case: glibc behind the library, membarrier
 * mode, a thread with a slot of its own.  One load of the thread's `fast`
 * slot decides (state.h: it is NULL in every other case), the section's
 * own tests follow (nested, stopped), and the rest stays out of line,
 * declared here.
 */
#ifndef MSTAT_LIB_MALLOC_INLINE_H
#define MSTAT_LIB_MALLOC_INLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/next.h"
#include "lib/state.h"
#include "lib/writer.h"

/* malloc but for its inline path: another allocator, before resolution,
 * a thread without a `fast` slot, a section refused. */
void *mstat_malloc_slow(size_t n) MSTAT_HIDDEN;
/* malloc of a block to be sampled, made by `caller`. */
void *mstat_malloc_sampled(size_t n, const void *caller) MSTAT_HIDDEN;
/* The end of mstat_do_malloc() for a block past the size table or none:
 * counted in the section open on `slot`, generation `g`, which it
 * closes. */
void *mstat_malloc_header_large(struct mstat_shm_slot *slot, unsigned g,
				void *p, size_t n) MSTAT_HIDDEN;
/* free but for its inline path. */
void mstat_malloc_free_slow(void *p) MSTAT_HIDDEN;
/* The end of mstat_free_header() for a block past the size table, or of
 * the arena, the pool: counted and freed in the section open on `slot`,
 * generation `g`, which it closes. */
void mstat_malloc_free_header_large(struct mstat_shm_slot *slot, unsigned g, void *p)
	MSTAT_HIDDEN;
/* realloc of a block of the next allocator's that was not sampled, but
 * for realloc()'s inline path. */
void *mstat_malloc_realloc_plain(void *old, size_t n) MSTAT_HIDDEN;

/* Into an open section, with glibc's header: the allocation of `p`, if
 * it is a small chunk (mstat_glibc_chunk()); false if not. */
static inline __attribute__((always_inline)) bool
mstat_count_header_small(const struct mstat_section *sec, void *p,
			 size_t requested)
{
	size_t h;

	if (UNLIKELY(!mstat_glibc_chunk(p, &h)))
		return false;
	mstat_wsection_chunk(sec->slot, sec->g, h, MSTAT_CHUNK_ALLOCS);
	mstat_wsection_requested(sec->slot, sec->g, requested);
	return true;
}

/* The countdown is tested first: on the thread's line, like `fast`.
 * `caller`, for a sample, NULL for the caller of the function this is
 * inlined into: then its return address is loaded only for a sample. */
static inline __attribute__((always_inline)) void *
mstat_do_malloc(size_t n, const void *caller)
{
	struct mstat_shm_slot *slot = mstat_thread.fast;
	struct mstat_section sec;

	if (UNLIKELY(mstat_sample_due(n)))
		return mstat_malloc_sampled(n, caller ? caller
						       : __builtin_return_address(0));
	if (UNLIKELY(slot == NULL) ||
	    UNLIKELY(mstat_wsection_begin(slot, &mstat_writer_config.epoch, false,
					  &sec.g) != MSTAT_WS_OPEN))
		return mstat_malloc_slow(n);
	sec.slot = slot;
	void *p = mstat_next.malloc(n);
	if (LIKELY(p != NULL) && LIKELY(mstat_count_header_small(&sec, p, n))) {
		mstat_section_close(&sec);
		return p;
	}
	return mstat_malloc_header_large(slot, sec.g, p, n);
}

/* In open section `sec`, with glibc's header: the free of `p`, counted
 * while it is live, then freed; the section closed. */
static inline __attribute__((always_inline)) void
mstat_free_header(const struct mstat_section *sec, void *p)
{
	size_t h;

	if (UNLIKELY(!mstat_glibc_chunk(p, &h))) {
		mstat_malloc_free_header_large(sec->slot, sec->g, p);
		return;
	}
	mstat_wsection_chunk(sec->slot, sec->g, h, MSTAT_CHUNK_FREES);
	mstat_next.free(p);
	mstat_section_close(sec);
}

static inline __attribute__((always_inline)) void
mstat_do_free(void *p)
{
	struct mstat_shm_slot *slot = mstat_thread.fast;
	struct mstat_section sec;

	/* A sampled block is larger than a page (the fast path is glibc's,
	 * see MSTAT_SAMPLE_IN_PLACE): mstat_malloc_free_header_large() finds it. */
	if (UNLIKELY(slot == NULL) || UNLIKELY(p == NULL) ||
	    UNLIKELY(mstat_wsection_begin(slot, &mstat_writer_config.epoch, false,
					  &sec.g) != MSTAT_WS_OPEN)) {
		mstat_malloc_free_slow(p);
		return;
	}
	sec.slot = slot;
	/* Counted first: the size is read while the block is live. */
	mstat_free_header(&sec, p);
}

#endif /* MSTAT_LIB_MALLOC_INLINE_H */
