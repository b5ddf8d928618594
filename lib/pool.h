/* SPDX-License-Identifier: MIT */
/*
 * pool.h - the blocks sampled objects move to, with glibc's chunk
 * header (sampled.h); and the library's own blocks (own.h).
 *
 * A sampled block must be one a free can tell from the others without a
 * lookup on its inline path.  With glibc's header, a free reads the word
 * before the block anyway: a pool block's says MSTAT_OWN_MARK, which
 * sends the free out of line, where mstat_pool_has() tells it by address.
 * Packed together, a program's live sampled objects share their pages
 * and cache lines as its other objects do; alone in a block past a page
 * each, they cost python3 5 % of its time at a 64 KiB interval
 * (docs/performance.md, "The heap profile").
 *
 * Everything here is lock-free and allocates nothing: a slot is taken
 * and given back by one atomic operation, safe in a signal handler that
 * interrupts its own thread inside the pool.
 */
#ifndef MSTAT_LIB_POOL_H
#define MSTAT_LIB_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/writer.h"

/*
 * The word before a block of the library's own (the pool's, the
 * bootstrap arena's): its size with the top bit set.  glibc's header
 * decode (next.h, mstat_glibc_chunk()) reads it as a chunk far too large
 * for the inline paths, so they need no test of their own for it.
 */
#define MSTAT_OWN_MARK ((size_t)1 << 63)

/* The largest block the pool holds: the largest of glibc's chunks up to
 * a page holds 4088 bytes. */
#define MSTAT_POOL_MAX 4088u

/*
 * The library's own blocks: what glibc or libunwind allocate for the
 * library's sake (own.h), in a part of the pool of its own, classes of
 * 32 B to 32 KiB.  A free tells them by address, on
 * any allocator, and counts nothing; their header word is marked as the
 * sample pool's are, so that glibc's inline free path leaves them to the
 * out-of-line one.  Slots are reused: a thread's blocks go back as it
 * exits.
 */
#define MSTAT_POOL_OWN_MAX 32760u

/* A block of at least `size` bytes (at most MSTAT_POOL_OWN_MAX), 16-
 * aligned, uninitialised, in the own part; its class full, one of the
 * next class up; NULL if none, or the pool could not be mapped. */
void *mstat_pool_own_alloc(size_t size) MSTAT_HIDDEN;

/* A block of at least `size` bytes (at most MSTAT_POOL_MAX), 16-aligned,
 * uninitialised; NULL if its class is full or the pool could not be
 * mapped. */
void *mstat_pool_alloc(size_t size) MSTAT_HIDDEN;

/* The pool's addresses: MSTAT_POOL_SIZE bytes from mstat_pool_base,
 * once that is above MSTAT_POOL_NONE (pool.c): 8 sample parts, then 11
 * own parts, from MSTAT_POOL_OWN_OFFSET.  Here for mstat_pool_has(),
 * which a free of a large block asks. */
#define MSTAT_POOL_PART_BYTES ((size_t)2 << 20)
#define MSTAT_POOL_PART_TAIL 4096u /* a page past the last slot's 8-byte overhang */
#define MSTAT_POOL_OWN_OFFSET ((size_t)8 * (MSTAT_POOL_PART_BYTES + MSTAT_POOL_PART_TAIL))
#define MSTAT_POOL_SIZE ((size_t)19 * (MSTAT_POOL_PART_BYTES + MSTAT_POOL_PART_TAIL))
#define MSTAT_POOL_NONE 1 /* 0: not mapped yet; 1: could not be */
extern _Atomic uintptr_t mstat_pool_base MSTAT_HIDDEN;

/* Whether `p` lies in the pool, a sampled block's part or the own one
 * (the caller knows it is a block).  Relaxed: see mstat_pool_base in
 * pool.c. */
static inline bool
mstat_pool_has(const void *p)
{
	uintptr_t b = atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);

	return b > MSTAT_POOL_NONE && (uintptr_t)p - b < MSTAT_POOL_SIZE;
}

/* Whether `p`, in the pool, is one of the library's own blocks. */
static inline bool
mstat_pool_own(const void *p)
{
	uintptr_t b = atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);

	return (uintptr_t)p - b >= MSTAT_POOL_OWN_OFFSET;
}

/* The bytes block `p` of the pool holds. */
size_t mstat_pool_usable(const void *p) MSTAT_HIDDEN;

/* Block `p` of the pool (either part), no longer used, may be taken
 * again; a `p` that is not a block's start is ignored. */
void mstat_pool_free(void *p) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_POOL_H */
