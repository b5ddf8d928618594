/* SPDX-License-Identifier: MIT */
/*
 * answer.h - the allocator's answer to a reader (layout.h, struct
 * mstat_shm_alloc): written by the target, lib/allocstats.c, and read by
 * shm/reader.c, both through here.
 *
 * A seqlock, (O) in docs/design.md: the one writer (the target, one
 * thread at a time) stores `seq` odd, then the figures, each with
 * release, then `seq` even with release; a reader loads `seq` with
 * acquire, the figures, each with acquire, and `seq` again: the same
 * even value, and the figures are one answer's.  A figure of a newer
 * answer read with acquire brings the odd store before it along, so
 * `seq` read after it is no longer the value read first.  No fence:
 * ThreadSanitizer sees every pair.  The reader never waits: it tries a few
 * times.  The figures are words a reader's process may scribble over
 * (the control page is mapped read-write): the target writes them and
 * never reads them back but `seq`, which it only makes odd and then one
 * more.
 */
#ifndef MSTAT_SHM_ANSWER_H
#define MSTAT_SHM_ANSWER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/layout.h"

struct mstat_alloc_figures {
	uint64_t answered;  /* the request it answers */
	uint64_t answer_ns; /* CLOCK_REALTIME it was made */
	uint64_t cost_ns;   /* the thread's CPU time it took */
	uint64_t resident, allocated, metadata, retained;
};

/* The target writes an answer. */
static inline void
mstat_answer_write(struct mstat_shm_alloc *a, const struct mstat_alloc_figures *f)
{
	/* Odd while it is written (a reader may have scribbled it odd
	 * already: it stays so until the end). */
	uint64_t odd = atomic_load_explicit(&a->seq, memory_order_relaxed) | 1;

	/* (O) odd, then the figures, each with release: a reader that
	 * loads one of them with acquire sees this odd store, and then a
	 * `seq` that is not the one it loaded first. */
	atomic_store_explicit(&a->seq, odd, memory_order_relaxed);
	atomic_store_explicit(&a->answered, f->answered, memory_order_release);
	atomic_store_explicit(&a->answer_ns, f->answer_ns, memory_order_release);
	atomic_store_explicit(&a->cost_ns, f->cost_ns, memory_order_release);
	atomic_store_explicit(&a->resident, f->resident, memory_order_release);
	atomic_store_explicit(&a->allocated, f->allocated, memory_order_release);
	atomic_store_explicit(&a->metadata, f->metadata, memory_order_release);
	atomic_store_explicit(&a->retained, f->retained, memory_order_release);
	/* (O) even, release: the figures before it; pairs with the reader's
	 * acquire load of seq. */
	atomic_store_explicit(&a->seq, odd + 1, memory_order_release);
}

/* A reader takes the last answer whole into *f: true, or false if there
 * is none, or it was being written at each of `tries` tries. */
static inline bool
mstat_answer_read(const struct mstat_shm_alloc *a, struct mstat_alloc_figures *f,
		  int tries)
{
	for (int i = 0; i < tries; i++) {
		/* (O) acquire: pairs with the target's release of seq even;
		 * the figures of that answer, at least, are seen. */
		uint64_t seq = atomic_load_explicit(&a->seq, memory_order_acquire);
		/* (O) acquire: a figure of a newer answer brings its odd
		 * `seq` along, for the load below; and none of these loads
		 * moves after that one. */
		f->answered = atomic_load_explicit(&a->answered, memory_order_acquire);
		f->answer_ns = atomic_load_explicit(&a->answer_ns, memory_order_acquire);
		f->cost_ns = atomic_load_explicit(&a->cost_ns, memory_order_acquire);
		f->resident = atomic_load_explicit(&a->resident, memory_order_acquire);
		f->allocated = atomic_load_explicit(&a->allocated, memory_order_acquire);
		f->metadata = atomic_load_explicit(&a->metadata, memory_order_acquire);
		f->retained = atomic_load_explicit(&a->retained, memory_order_acquire);
		if (seq != 0 && seq % 2 == 0 &&
		    atomic_load_explicit(&a->seq, memory_order_relaxed) == seq)
			return true;
	}
	return false;
}

#endif /* MSTAT_SHM_ANSWER_H */
