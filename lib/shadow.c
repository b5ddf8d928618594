/* SPDX-License-Identifier: MIT */
/* shadow.c - the map of blocks made since the attach; see shadow.h. */
#include "lib/shadow.h"

#include <sys/mman.h>

_Atomic(_Atomic unsigned char *) *mstat_shadow_top;

/* Anonymous memory whose pages exist once written; a read of one never
 * written is of the zero page. */
static void *
reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

bool
mstat_shadow_init(void)
{
	if (!mstat_shadow_top)
		mstat_shadow_top = reserve(sizeof(*mstat_shadow_top)
					   << MSTAT_SHADOW_TOP_BITS);
	return mstat_shadow_top != NULL;
}

/*
 * A leaf is made where an allocation first lands in its 64 MiB of
 * address space: glibc's main heap, each thread arena (64 MiB, aligned
 * to it), each region of mmapped blocks.  A system call on the
 * allocation path, that once; two threads making the same leaf keep the
 * first one installed.
 */
_Atomic unsigned char *
mstat_shadow_leaf_make(uintptr_t g)
{
	_Atomic(_Atomic unsigned char *) *slot =
		&mstat_shadow_top[g >> MSTAT_SHADOW_LEAF_BITS];
	_Atomic unsigned char *leaf = reserve(MSTAT_SHADOW_LEAF_BYTES), *cur = NULL;

	if (!leaf)
		return NULL;
	/* Release: pairs with the acquire load in mstat_shadow_byte(); the
	 * leaf is mapped before its address is seen.  Acquire on failure:
	 * the winner's leaf is used. */
	if (!atomic_compare_exchange_strong_explicit(slot, &cur, leaf,
						     memory_order_release,
						     memory_order_acquire)) {
		munmap((void *)leaf, MSTAT_SHADOW_LEAF_BYTES);
		return cur;
	}
	return leaf;
}
