/* SPDX-License-Identifier: MIT */
/*
 * unsized.h - blocks the next allocator cannot size yet (unsized.c).
 *
 * tcmalloc's malloc_usable_size() returns 0 until its own initializer has
 * run, yet its malloc works before that (a constructor that runs earlier,
 * a program's .preinit_array).  The same block would then be counted with
 * 0 bytes when made and its real size when freed, and live bytes would
 * never return to 0.  Such a block is counted with its requested size and
 * remembered here, and its free is counted with the same size.  The table
 * is consulted only while it holds something.  If it is full, the block is
 * counted with 0 bytes, unremembered.
 *
 * The sizes to count a block with, inline: the interposer's paths for
 * allocators other than glibc take them on every call.
 */
#ifndef MSTAT_LIB_UNSIZED_H
#define MSTAT_LIB_UNSIZED_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/next.h"
#include "lib/state.h"

/* Remembers live block `p`, counted with its `requested` size: that size,
 * or 0 if the table is full. */
size_t mstat_unsized_note(void *p, size_t requested) MSTAT_HIDDEN;

/* If `p` is remembered: the size it was counted with, into *size. */
bool mstat_unsized_find(void *p, size_t *size) MSTAT_HIDDEN;

/* If `p` was remembered: forgets it, and the size it was counted with into
 * *size. */
bool mstat_unsized_forget(void *p, size_t *size) MSTAT_HIDDEN;

/* Whether any block is remembered: the table is looked at only then. */
static inline bool
mstat_unsized_any(void)
{
	return UNLIKELY(atomic_load_explicit(&mstat_next.unsized_live,
					     memory_order_relaxed) != 0);
}

/* The size to count a live block with, at its free.  With glibc's header
 * no block is ever unsized (its usable size is never 0). */
static inline size_t
mstat_freed_size(void *p)
{
	size_t size;

	if (mstat_next_header())
		return mstat_glibc_usable(p);
	if (mstat_unsized_any() && mstat_unsized_forget(p, &size))
		return size;
	return mstat_next_ask(p);
}

/* The size to count a new block with. */
static inline size_t
mstat_new_size(void *p, size_t requested)
{
	size_t u;

	if (mstat_next_header())
		return mstat_glibc_usable(p);
	if (UNLIKELY(mstat_thread.sizing))
		u = 0; /* made inside the next malloc_usable_size() */
	else
		u = mstat_next_ask(p);
	return u != 0 ? u : mstat_unsized_note(p, requested);
}

#endif /* MSTAT_LIB_UNSIZED_H */
