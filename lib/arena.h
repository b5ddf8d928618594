/* SPDX-License-Identifier: MIT */
/*
 * arena.h - the bootstrap arena (arena.c).
 *
 * Allocations made while the next allocator is not known yet: dlsym's own
 * calloc, and any thread that allocates while another one resolves.  Each
 * block has its usable size in the word before it; blocks are never reused
 * (a free is counted, the memory stays).  Lock-free: a bump pointer.
 */
#ifndef MSTAT_LIB_ARENA_H
#define MSTAT_LIB_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/next.h"
#include "lib/pool.h"
#include "lib/state.h"

#define MSTAT_ARENA_SIZE (64u * 1024u)
#define MSTAT_ARENA_ALIGN 16u

extern unsigned char mstat_arena[MSTAT_ARENA_SIZE] MSTAT_HIDDEN;

/* Whether `p` is an arena block. */
static inline bool
mstat_arena_has(const void *p)
{
	return (uintptr_t)p - (uintptr_t)mstat_arena < MSTAT_ARENA_SIZE;
}

/* An arena block's header word is its size, marked as the library's own
 * (MSTAT_OWN_MARK): free()'s inline path need not test for the arena;
 * the path it leaves to does. */
static inline size_t
mstat_arena_usable(const void *p)
{
	return mstat_header_word(p) & ~MSTAT_OWN_MARK;
}

/* A zeroed block of `n` bytes aligned to `align` (a power of two),
 * counted, or NULL with errno ENOMEM when the arena is used up. */
void *mstat_arena_alloc(size_t n, size_t align) MSTAT_HIDDEN;

/* realloc of arena block `old`: the next allocator gets a copy. */
void *mstat_arena_realloc(void *old, size_t n) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_ARENA_H */
