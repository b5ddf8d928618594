/* SPDX-License-Identifier: MIT */
/*
 * shadow.h - in an attached process, which blocks were made since the
 * attach: a tag byte per 16 bytes of address space (glibc's blocks are
 * 16-aligned, and no two start in the same 16 bytes), set by the
 * library's allocation and taken back by its free, in a map of leaves
 * made as the heap reaches new parts of the address space (shadow.c).
 *
 * A free reads the tag of its block: 0, a block the library did not make
 * (made before the attach, or by a caller that reached glibc's malloc
 * directly), counted in the prior row; a class, a block counted there
 * when it was made.  A tag never changes what a block is or where it
 * goes: every block is glibc's, whoever frees it, so a wrong tag (a block
 * freed by a pointer to glibc's free taken before the attach, its address
 * then made again by glibc's malloc) can only move a free between the
 * prior row and the class rows.  It cannot make a class count a free its
 * allocation did not: a free is counted in a class only if the block's
 * tag is that class, and a tag is set by one counted allocation and
 * cleared by one free.
 *
 * Each tag is written by the thread that holds its block (the
 * allocation that made it, the free that ends it), so relaxed loads and
 * stores suffice: the program's own synchronisation hands a block from
 * its allocation to its free.
 */
#ifndef MSTAT_LIB_SHADOW_H
#define MSTAT_LIB_SHADOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/state.h"

/* Tags: 0, none; 1 + the class of a block counted there; and these. */
#define MSTAT_TAG_NONE 0u
#define MSTAT_TAG_OWN 0xfdu     /* the library's own block: never counted */
#define MSTAT_TAG_SAMPLED 0xfeu /* counted, and in the profile's live table */
_Static_assert(MSTAT_CLASS_COUNT + 1 < MSTAT_TAG_OWN, "a tag for every class");

/* The map: a byte per 2^4 bytes; a leaf covers 2^22 such granules (64
 * MiB of address space, 4 MiB of map, its pages made as they are
 * written), the top level 2^21 leaves (the 47 bits of user addresses).
 * An address above those has no tag, and cannot be given one. */
#define MSTAT_SHADOW_GRANULE 4u
#define MSTAT_SHADOW_LEAF_BITS 22u
#define MSTAT_SHADOW_TOP_BITS 21u
#define MSTAT_SHADOW_LEAF_BYTES ((size_t)1 << MSTAT_SHADOW_LEAF_BITS)

extern _Atomic(_Atomic unsigned char *) *mstat_shadow_top MSTAT_HIDDEN;

/* Reserves the top level (16 MiB of address space, pages as used);
 * false if it cannot be. */
bool mstat_shadow_init(void) MSTAT_HIDDEN;

/* The leaf covering granule `g`, made if `make`; NULL if there is none
 * (not made, or no memory for it). */
_Atomic unsigned char *mstat_shadow_leaf_make(uintptr_t g) MSTAT_HIDDEN;

static inline _Atomic unsigned char *
mstat_shadow_byte(const void *p, bool make)
{
	uintptr_t g = (uintptr_t)p >> MSTAT_SHADOW_GRANULE;

	if (UNLIKELY(g >> (MSTAT_SHADOW_LEAF_BITS + MSTAT_SHADOW_TOP_BITS)))
		return NULL;
	/* Acquire: pairs with the release that installs a leaf
	 * (shadow.c): its zeroed pages before its address. */
	_Atomic unsigned char *leaf = atomic_load_explicit(
		&mstat_shadow_top[g >> MSTAT_SHADOW_LEAF_BITS], memory_order_acquire);
	if (UNLIKELY(!leaf)) {
		if (!make)
			return NULL;
		leaf = mstat_shadow_leaf_make(g);
		if (!leaf)
			return NULL;
	}
	return leaf + (g & (MSTAT_SHADOW_LEAF_BYTES - 1));
}

/* Tags block `p`; false if it cannot be (no leaf): the caller then counts
 * nothing of it. */
static inline bool
mstat_shadow_set(const void *p, unsigned tag)
{
	_Atomic unsigned char *b = mstat_shadow_byte(p, true);

	if (UNLIKELY(!b))
		return false;
	atomic_store_explicit(b, (unsigned char)tag, memory_order_relaxed);
	return true;
}

/* The tag of live block `p`, left as it is. */
static inline unsigned
mstat_shadow_get(const void *p)
{
	_Atomic unsigned char *b = mstat_shadow_byte(p, false);

	return b ? atomic_load_explicit(b, memory_order_relaxed) : MSTAT_TAG_NONE;
}

/* The tag of block `p`, which is on its way out (freed, or handed to
 * realloc), cleared. */
static inline unsigned
mstat_shadow_take(const void *p)
{
	_Atomic unsigned char *b = mstat_shadow_byte(p, false);
	unsigned tag;

	if (!b)
		return MSTAT_TAG_NONE;
	tag = atomic_load_explicit(b, memory_order_relaxed);
	if (tag != MSTAT_TAG_NONE)
		atomic_store_explicit(b, MSTAT_TAG_NONE, memory_order_relaxed);
	return tag;
}

#endif /* MSTAT_LIB_SHADOW_H */
