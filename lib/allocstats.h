/* SPDX-License-Identifier: MIT */
/*
 * allocstats.h - what the library tells readers of the allocator behind
 * it (shm/layout.h, struct mstat_shm_alloc): which allocator serves the
 * process's malloc, where the library's pool is, and, when a reader asks,
 * the allocator's own figures.
 *
 * Readers tell glibc's heap from the rest of a process's memory from
 * outside (core/memory.h); jemalloc's and tcmalloc's memory looks like
 * any other mapping there, and their statistics are in-process only.  So
 * a reader asks (the segment's `request`), and the process answers at
 * its next sampling decision, the slow path a thread takes once per
 * MSTAT_SAMPLE_BYTES allocated on average (profile.c calls
 * mstat_allocstats_poll()), never on an allocation's fast path: jemalloc's
 * mallctl("epoch") and "stats.*", or tcmalloc's
 * MallocExtension_GetNumericProperty().  At most one answer per request,
 * and at most one every MSTAT_ALLOCSTATS_GAP_NS, by one thread at a time.
 * An idle process answers at its next sample, or never: readers show the
 * last answer, with its time (docs/memory.md).
 *
 * The allocator is asked from inside the program's malloc, before the
 * block is allocated, by a thread that is not inside the allocator:
 * what it takes is what any of its own allocations takes.  A signal
 * handler that allocates while its thread is inside jemalloc or tcmalloc
 * could find it holding a lock the question needs; such a handler risks
 * that in those allocators already, which are not async-signal-safe.
 */
#ifndef MSTAT_LIB_ALLOCSTATS_H
#define MSTAT_LIB_ALLOCSTATS_H

#include "shm/layout.h"
#include "lib/segment.h"
#include "lib/state.h"

/* Answers closer together than this wait for a later sampling decision. */
#define MSTAT_ALLOCSTATS_GAP_NS UINT64_C(100000000)

/* A segment is being made: the allocator, and its pool's geometry, into
 * its header `h`, before it is published (start.c). */
void mstat_allocstats_made(struct mstat_shm_header *h) MSTAT_HIDDEN;

/* A thread's countdown ran out (profile.c), outside any sample and the
 * library's own work, with a segment: the pool's address, if it moved,
 * and the allocator's figures, if a reader asked for them. */
void mstat_allocstats_poll(const struct mstat_segment *seg) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_ALLOCSTATS_H */
