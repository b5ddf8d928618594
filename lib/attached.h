/* SPDX-License-Identifier: MIT */
/*
 * attached.h - malloc and its family in a process the library was
 * injected into (mstat-attach): what the loaded objects' slots lead to
 * once patched (patch.h).
 *
 * Each behaves as glibc's function of the same name, which it calls:
 * the next allocator must be glibc's, with its chunk header (next.h),
 * or the attach is refused.  Every block is glibc's as glibc made it:
 * nothing is moved (a sampled block stays where it is), nothing comes
 * from the library's pools, so a block may be freed through any pointer
 * to glibc's free, taken before the attach or not, and stay sound
 * (shadow.h says what such a free miscounts).  What each call counts:
 *   - an allocation: its block, tagged with its class (shadow.h);
 *   - a free, or the old block of a realloc: as allocated, if its tag
 *     says it was counted; else in the prior row, how many and how many
 *     bytes (MSTAT_OP_PRIOR_FREE, _PRIOR_REALLOC): a block made before
 *     the attach, or by a caller that reached glibc directly;
 *   - a realloc: one update, as in libmstatshm;
 *   - the library's own work (own.h): its blocks tagged as its own, never
 *     counted, by whomever they are freed.
 * Sampled blocks are tagged so, and found in the profile's live table
 * when they go (profile.h).
 */
#ifndef MSTAT_LIB_ATTACHED_H
#define MSTAT_LIB_ATTACHED_H

#include <stddef.h>

#include "lib/state.h"

void *mstat_attached_malloc(size_t n) MSTAT_HIDDEN;
void mstat_attached_free(void *p) MSTAT_HIDDEN;
void *mstat_attached_calloc(size_t n, size_t size) MSTAT_HIDDEN;
void *mstat_attached_realloc(void *old, size_t n) MSTAT_HIDDEN;
void *mstat_attached_reallocarray(void *old, size_t n, size_t size) MSTAT_HIDDEN;
int mstat_attached_posix_memalign(void **out, size_t align, size_t n) MSTAT_HIDDEN;
void *mstat_attached_aligned_alloc(size_t align, size_t n) MSTAT_HIDDEN;
void *mstat_attached_memalign(size_t align, size_t n) MSTAT_HIDDEN;
void *mstat_attached_valloc(size_t n) MSTAT_HIDDEN;
void *mstat_attached_pvalloc(size_t n) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_ATTACHED_H */
