/* SPDX-License-Identifier: MIT */
/* arena.c - the bootstrap arena; see arena.h. */
#include "lib/arena.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "lib/unsized.h"
#include "lib/writer.h"

alignas(4096) unsigned char mstat_arena[MSTAT_ARENA_SIZE];
/* Bytes handed out from the start: a bump pointer. */
static _Atomic size_t used_bytes;

MSTAT_START_TEXT void *
mstat_arena_alloc(size_t n, size_t align)
{
	size_t used = atomic_load_explicit(&used_bytes, memory_order_relaxed);
	size_t start, size;

	if (align < MSTAT_ARENA_ALIGN)
		align = MSTAT_ARENA_ALIGN;
	if (n > MSTAT_ARENA_SIZE || align > MSTAT_ARENA_SIZE / 4)
		goto full;
	size = (n + MSTAT_ARENA_ALIGN - 1) & ~(size_t)(MSTAT_ARENA_ALIGN - 1);
	do {
		start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
		if (start + size > MSTAT_ARENA_SIZE)
			goto full;
		/* Relaxed: a block is used only by the thread that took it. */
	} while (!atomic_compare_exchange_weak_explicit(
		&used_bytes, &used, start + size, memory_order_relaxed,
		memory_order_relaxed));
	((size_t *)(mstat_arena + start))[-1] = size | MSTAT_OWN_MARK;
	void *p = mstat_arena + start;
	mstat_count(MSTAT_OP_ALLOC, 0, size, n);
	return p;
full:
	errno = ENOMEM;
	return NULL;
}

void *
mstat_arena_realloc(void *old, size_t n)
{
	size_t old_size = mstat_arena_usable(old);
	void *p;

	if (n == 0) {
		mstat_count(MSTAT_OP_FREE, old_size, 0, 0);
		return NULL;
	}
	p = mstat_next_ready() ? mstat_next.malloc(n)
			       : mstat_arena_alloc(n, MSTAT_ARENA_ALIGN);
	if (!p)
		return NULL;
	memcpy(p, old, n < old_size ? n : old_size);
	if (!mstat_arena_has(p)) /* an arena block counted itself */
		mstat_count(MSTAT_OP_REALLOC, old_size, mstat_new_size(p, n), n);
	else
		mstat_count(MSTAT_OP_FREE, old_size, 0, 0);
	return p;
}
