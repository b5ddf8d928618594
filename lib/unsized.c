/* SPDX-License-Identifier: MIT */
/* unsized.c - blocks the next allocator cannot size yet; see unsized.h. */
#include "lib/unsized.h"

#define UNSIZED_MAX 1024u           /* a power of two */
#define UNSIZED_GONE ((void *)1)    /* a forgotten entry */

/*
 * Open addressing from a hash of the pointer, probing linearly.  An entry
 * goes NULL -> block -> GONE -> another block ...; it never becomes NULL
 * again, so a lookup may stop at the first NULL: a block is never stored
 * past one.  The table stays consulted while one block is remembered (a
 * block tcmalloc made before its initializer, kept for good, is usual), so
 * a lookup for a block that is not in it must cost one load, not a scan.
 */
static struct {
	_Atomic(void *) p;
	size_t size;
} unsized[UNSIZED_MAX];

static inline unsigned
unsized_hash(const void *p)
{
	return (unsigned)((((uintptr_t)p >> 4) * UINT64_C(0x9e3779b97f4a7c15)) >> 54) &
	       (UNSIZED_MAX - 1);
}

size_t
mstat_unsized_note(void *p, size_t requested)
{
	unsigned h = unsized_hash(p);

	for (unsigned i = 0; i < UNSIZED_MAX; i++) {
		unsigned k = (h + i) & (UNSIZED_MAX - 1);
		void *cur = atomic_load_explicit(&unsized[k].p, memory_order_relaxed);
		/* The CAS acquires: pairs with the release in mstat_unsized_forget(),
		 * so the entry's old size was read before it is reused. */
		if ((cur != NULL && cur != UNSIZED_GONE) ||
		    !atomic_compare_exchange_strong_explicit(
			    &unsized[k].p, &cur, p, memory_order_acquire,
			    memory_order_relaxed))
			continue;
		unsized[k].size = requested;
		/* Relaxed: the block reaches a freeing thread only through the
		 * program's own synchronisation, which orders this too. */
		atomic_fetch_add_explicit(&mstat_next.unsized_live, 1,
					  memory_order_relaxed);
		return requested;
	}
	return 0;
}

/* The entry holding p, or -1. */
static int
unsized_slot(const void *p)
{
	unsigned h = unsized_hash(p);

	for (unsigned i = 0; i < UNSIZED_MAX; i++) {
		unsigned k = (h + i) & (UNSIZED_MAX - 1);
		void *cur = atomic_load_explicit(&unsized[k].p, memory_order_relaxed);
		if (cur == p)
			return (int)k;
		if (cur == NULL)
			break;
	}
	return -1;
}

bool
mstat_unsized_find(void *p, size_t *size)
{
	int k = unsized_slot(p);

	if (k < 0)
		return false;
	*size = unsized[k].size;
	return true;
}

bool
mstat_unsized_forget(void *p, size_t *size)
{
	int k = unsized_slot(p);

	if (k < 0)
		return false;
	*size = unsized[k].size;
	/* Release: the size is read before the entry is reused; pairs with the
	 * acquire CAS in mstat_unsized_note(). */
	atomic_store_explicit(&unsized[k].p, UNSIZED_GONE, memory_order_release);
	atomic_fetch_sub_explicit(&mstat_next.unsized_live, 1, memory_order_relaxed);
	return true;
}
