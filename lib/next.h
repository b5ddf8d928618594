/* SPDX-License-Identifier: MIT */
/*
 * next.h - the next allocator in the RTLD_NEXT chain (glibc, or jemalloc
 * or tcmalloc preloaded after this library), found on the first call
 * (next.c), and the sizes of its blocks.
 *
 * Asking the next allocator for malloc_usable_size() on both the
 * allocation and the free is what makes a straightforward interposer slow
 * (a call of about 2 ns each).  When the next allocator is glibc's, and a
 * self-test at resolution shows that its chunk header gives exactly what
 * its malloc_usable_size() returns for a live block, the size is read from
 * the header instead (mstat_glibc_usable()): the word before the block
 * holds the chunk size, with IS_MMAPPED in bit 1.  That is the computation
 * glibc's own musable() makes for an in-use chunk, so the count is the
 * same number, without the call.  Any other allocator, or a glibc whose
 * layout fails the self-test (for instance with memory tagging), is asked
 * through its malloc_usable_size().  Under valgrind, whose blocks have no
 * such header, sizes are asked too.
 *
 * The functions here are on the interposer's inline paths: inline.
 */
#ifndef MSTAT_LIB_NEXT_H
#define MSTAT_LIB_NEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/layout.h"
#include "shm/sizeclass.h"
#include "lib/state.h"

/* The word before block `p`: the allocator's header, outside the object
 * the compiler thinks malloc returned.  The address is made from an
 * integer, so object-size tracking (-Warray-bounds at -O3) does not call
 * the read out of bounds. */
static inline size_t
mstat_header_word(const void *p)
{
	return *(const size_t *)((uintptr_t)p - sizeof(size_t));
}

/* What glibc's malloc_usable_size() returns for an in-use chunk: its size
 * (low three bits are flags) less the header, 16 bytes for an mmapped
 * chunk (IS_MMAPPED, bit 1), 8 otherwise. */
static inline size_t
mstat_glibc_usable(const void *p)
{
	size_t h = mstat_header_word(p);

	return (h & ~(size_t)7) - 8 - ((h & 2) << 2);
}

/*
 * The header word of live block `p` of glibc's in *header, if it is one
 * of most blocks: a chunk below MSTAT_CHUNK_LIMIT, which is counted in its
 * chunk row (mstat_wsection_chunk()).  Its size is a multiple of 16, so
 * k = header >> 4 is the chunk size in 16-byte steps (the flags, bits
 * 0-2, fall off), its usable size is 16k - 8 (MSTAT_CHUNK_USABLE(k)),
 * which is in the same class as 16k (class bounds are multiples of 16),
 * and the class is the size table's entry k, mstat_small_class[k].  No
 * such chunk is mmapped: glibc maps whole pages.  Everything else
 * (mmapped chunks, with their 16-byte header; the library's own blocks,
 * MSTAT_OWN_MARK) is left to the general decode (false).
 * glibc_layout_holds() tries both decodes.
 */
static inline __attribute__((always_inline)) bool
mstat_glibc_chunk(const void *p, size_t *header)
{
	*header = mstat_header_word(p);
	return *header < MSTAT_CHUNK_LIMIT;
}

/* The class of any live block of glibc's, its usable size in *usable. */
static inline unsigned
mstat_glibc_class(const void *p, size_t *usable)
{
	size_t h;

	if (LIKELY(mstat_glibc_chunk(p, &h))) {
		*usable = MSTAT_CHUNK_USABLE(h >> 4);
		return mstat_small_class[h >> 4];
	}
	*usable = mstat_glibc_usable(p);
	return mstat_size_class(*usable);
}

/* Looks the next allocator up, unless another thread does (never waited
 * for); whether it is known now.  Called by mstat_next_ready() only. */
bool mstat_next_resolve(void) MSTAT_HIDDEN;

/* The loaded object (its link map) that holds code address `fn`, or NULL. */
const void *mstat_next_object_of(const void *fn) MSTAT_HIDDEN;

static inline int
mstat_next_state(void)
{
	/* Acquire: pairs with the release in mstat_next_resolve().  A plain
	 * load on x86. */
	return atomic_load_explicit(&mstat_next.state, memory_order_acquire);
}

static inline bool
mstat_next_ready(void)
{
	return LIKELY(mstat_next_state() >= MSTAT_NEXT_ASK) || mstat_next_resolve();
}

/* Whether sizes come from glibc's header; only once ready. */
static inline bool
mstat_next_header(void)
{
	return LIKELY(mstat_next_state() == MSTAT_NEXT_HEADER);
}

/* mstat_thread.sizing: set while this thread is inside the next
 * allocator's malloc_usable_size(), which may allocate (tcmalloc's does,
 * through operator new, on its first call): such a block is not sized by
 * asking again, which would recurse without end. */
static inline size_t
mstat_next_ask(void *p)
{
	mstat_thread.sizing = true;
	size_t u = mstat_next.usable(p);
	mstat_thread.sizing = false;
	return u;
}

/* The usable size of a live block of the next allocator. */
static inline size_t
mstat_next_usable(void *p)
{
	if (mstat_next_header())
		return mstat_glibc_usable(p);
	return mstat_next_ask(p);
}

#endif /* MSTAT_LIB_NEXT_H */
