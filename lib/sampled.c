/* SPDX-License-Identifier: MIT */
/* sampled.c - the interposer's sampled blocks; see sampled.h. */
#include "lib/sampled.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arena.h"
#include "lib/malloc_inline.h"
#include "lib/own.h"
#include "lib/unsized.h"
#include "lib/writer.h"

/*
 * Where mstat_sampled() moves a block of `size` bytes, asked with
 * alignment `align` (0: malloc's), or NULL.  With glibc's header, the
 * pool's (pool.h); for an alignment past 16, or when the pool's class is
 * full, a block of glibc's just larger than MSTAT_SAMPLE_IN_PLACE,
 * anywhere in the heap (not on a page of its own: all of a program's
 * sampled objects would share a few cache sets).  Either is counted with the plain
 * block's size.  With another allocator, a page-aligned block.
 */
static void *
sample_block(size_t size, size_t align)
{
	void *p;

	if (!mstat_next_header())
		return mstat_next.memalign(MSTAT_SAMPLE_ALIGN, size);
	if (align <= 16 && (p = mstat_pool_alloc(size)) != NULL)
		return p;
	return align > 16 ? mstat_next.memalign(align, MSTAT_SAMPLE_IN_PLACE + 1)
			  : mstat_next.malloc(MSTAT_SAMPLE_IN_PLACE + 1);
}

/* Sampled block `p` (or one sample_block() made) given back, uncounted:
 * to the pool, or to the next allocator. */
static void
release_block(void *p)
{
	if (mstat_pool_has(p))
		mstat_pool_free(p);
	else
		mstat_next.free(p);
}

/* The size live block `q`, just made, was counted with; false if it is
 * remembered as unsized (or being sized), and is not to be moved. */
static bool
counted_size(void *q, size_t *size)
{
	if (mstat_next_header()) {
		*size = mstat_glibc_usable(q);
		return true;
	}
	if (mstat_thread.sizing ||
	    (mstat_unsized_any() && mstat_unsized_find(q, size)))
		return false;
	*size = mstat_next_ask(q);
	return *size != 0;
}

void *
mstat_sampled(void *q, size_t n, size_t align, size_t copy, bool zero,
	      const void *caller)
{
	struct mstat_sample *e;
	size_t size;
	void *p = q;

	/* A pool block here is an own one (own.h): not the program's.  The
	 * loader's blocks are not sampled (profile.h). */
	if (!q || mstat_arena_has(q) || mstat_pool_has(q) ||
	    mstat_profile_loader(caller) ||
	    !counted_size(q, &size) ||
	    (!mstat_sample_place(q) && !(p = sample_block(size, align)))) {
		mstat_profile_cancel();
		return q;
	}
	if (!(e = mstat_profile_note(p, n, size))) {
		if (p != q)
			release_block(p);
		mstat_profile_record(NULL, caller); /* dropped */
		return q;
	}
	if (p != q) {
		if (zero)
			memset(p, 0, size);
		else
			memcpy(p, q, copy < size ? copy : size);
		mstat_next.free(q);
	}
	mstat_profile_record(e, caller);
	return p;
}

void
mstat_sampled_free(void *p, size_t size)
{
	struct mstat_section sec;

	if (LIKELY(mstat_next_header())) {
		bool open = mstat_section_open(&sec);
		if (open)
			mstat_section_count(&sec, MSTAT_OP_FREE, size, 0, 0);
		else
			mstat_shared_count_unslotted(MSTAT_OP_FREE, size, 0, 0);
		release_block(p);
		if (open)
			mstat_section_close(&sec);
		return;
	}
	mstat_count(MSTAT_OP_FREE, size, 0, 0);
	mstat_next.free(p);
}

void *
mstat_sampled_realloc(void *old, size_t n, bool sample, const void *caller)
{
	size_t old_size, size, copy;
	void *p;

	if (mstat_own_block(old)) {
		if (sample)
			mstat_profile_cancel();
		return mstat_own_realloc(old, n);
	}
	if (UNLIKELY(mstat_own_work()) && (p = mstat_own_realloc_into(old, n)) != NULL) {
		if (sample)
			mstat_profile_cancel();
		return p;
	}
	bool owned = mstat_may_be_sampled(old) && mstat_profile_owns(old, &old_size);

	if (!owned && mstat_pool_has(old)) {
		/* A pool address that is no live sampled block: refused. */
		if (sample)
			mstat_profile_cancel();
		errno = EINVAL;
		return NULL;
	}
	if (!owned || (mstat_next_header() && old_size == mstat_glibc_usable(old))) {
		p = mstat_malloc_realloc_plain(old, n);
		return sample ? mstat_sampled(p, n, 0, n, false, caller) : p;
	}
	if (n == 0) { /* as glibc's: realloc(p, 0) frees p, gives NULL */
		free(old);
		return NULL;
	}
	copy = old_size; /* what malloc_usable_size() said of it */
	if (LIKELY(mstat_next_header())) {
		struct mstat_section sec;
		bool open = mstat_section_open(&sec);
		p = mstat_next.malloc(n);
		if (p) {
			unsigned c = mstat_glibc_class(p, &size);
			memcpy(p, old, n < copy ? n : copy);
			(void)mstat_profile_freed(old, &old_size);
			release_block(old);
			if (LIKELY(open))
				mstat_section_count_classes(&sec, MSTAT_OP_REALLOC,
							    mstat_size_class(old_size),
							    old_size, c, size, n);
			else
				mstat_shared_count_unslotted(MSTAT_OP_REALLOC, old_size,
							     size, n);
		}
		if (LIKELY(open))
			mstat_section_close(&sec);
	} else {
		p = mstat_next.malloc(n);
		if (p) {
			size = mstat_new_size(p, n);
			memcpy(p, old, n < copy ? n : copy);
			(void)mstat_profile_freed(old, &old_size);
			mstat_next.free(old);
			mstat_count(MSTAT_OP_REALLOC, old_size, size, n);
		}
	}
	return sample ? mstat_sampled(p, n, 0, n, false, caller) : p;
}
