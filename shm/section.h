/* SPDX-License-Identifier: MIT */
/*
 * section.h - the writer's update section, inline.
 *
 * Contract: only one thread at a time writes a slot (its owner; for the
 * shared slot, whoever holds the process-local shared lock).  A section is
 *
 *	if (mstat_wsection_begin(slot, epoch, stop, fenced, &gen) ==
 *	    MSTAT_WS_OPEN) {
 *		mstat_wsection_count(slot, gen, row, counter, bytes);  (any number)
 *		mstat_wsection_add(gen, row, counter, n);              (any number)
 *		mstat_wsection_end(slot);
 *	}
 *
 * and readers see all of its adds or none of them.  No lock, no system
 * call, no locked instruction but (A) in fenced mode, no wait on readers.
 * The only value read from memory a reader can write is `epoch`, and it is
 * used only as `epoch % 3`.
 *
 * Sections do not nest: a section begun on a slot whose seq is odd (a
 * signal handler interrupting its own thread's section) is refused
 * before it writes anything.  `stop` is the writer's own, process-local
 * word: while it is set (a fork or the exit drains the slots) a section
 * is entered and left again at once, adding nothing; the writer that set
 * it and then waited for odd seqs to change knows that every section it
 * did not see has seen `stop`.  It is loaded after (A) with the same
 * order as (B), which is what makes that true; see docs/design.md.
 *
 * The ordered accesses (A), (B), (C), (V) are those of the table in
 * docs/design.md; the reader's side is in shm/reader.c.
 */
#ifndef MSTAT_SHM_SECTION_H
#define MSTAT_SHM_SECTION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

enum mstat_wsection {
	MSTAT_WS_OPEN,    /* entered: add, then end */
	MSTAT_WS_NESTED,  /* this thread is inside a section of the slot */
	MSTAT_WS_STOPPED, /* `stop` was set: entered, left, nothing added */
};

/* Enter a section; on MSTAT_WS_OPEN, *gen is the base of the generation
 * it writes to. */
static inline enum mstat_wsection
mstat_wsection_begin(struct mstat_shm_slot *slot, _Atomic uint64_t *epoch,
		     const _Atomic unsigned char *stop, bool fenced,
		     _Atomic uint64_t **gen)
{
	/* Only this thread stores `seq`: a relaxed load sees its last store. */
	uint64_t s = atomic_load_explicit(&slot->head.seq, memory_order_relaxed);
	uint64_t e;
	unsigned char stopped;

	if (__builtin_expect(s & 1, 0))
		return MSTAT_WS_NESTED;
	if (fenced) {
		/* (A) odd seq, seq_cst (an xchg): ordered before (B) even
		 * though (B) is a load.  With the reader's seq_cst (D) and (E)
		 * this is Dekker's pattern: either (B) sees the new epoch or
		 * (E) sees this odd seq. */
		atomic_store_explicit(&slot->head.seq, s + 1, memory_order_seq_cst);
		/* (B) pairs with (D); see (A). */
		e = atomic_load_explicit(epoch, memory_order_seq_cst);
		/* (V) pairs with the seq_cst store of `stop` before the
		 * drain's seq_cst loads of seq: Dekker again, as (B). */
		stopped = atomic_load_explicit(stop, memory_order_seq_cst);
	} else {
		/* (A') odd seq with only a compiler barrier after it.  The
		 * reader's membarrier (M) after (D) turns the barrier into a
		 * full fence on this CPU whenever it matters. */
		atomic_store_explicit(&slot->head.seq, s + 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		/* (B') pairs with (D)+(M); acquire, like (B), so that the adds
		 * below happen after (D) when it reads the new epoch: a base
		 * read before (D) never sees them.  A plain mov on x86. */
		e = atomic_load_explicit(epoch, memory_order_acquire);
		/* (V') after (B'), so after (A'): pairs with the store of
		 * `stop` and the membarrier after it, as (B') with (D)+(M). */
		stopped = atomic_load_explicit(stop, memory_order_relaxed);
	}
	if (__builtin_expect(stopped != 0, 0)) {
		/* (C) of a section that added nothing. */
		atomic_store_explicit(&slot->head.seq, s + 2, memory_order_release);
		return MSTAT_WS_STOPPED;
	}
	/* `epoch` is reader-written: reduce it before it indexes anything. */
	*gen = slot->acc + (e % MSTAT_GENS) * MSTAT_ROW_COUNTERS;
	return MSTAT_WS_OPEN;
}

/* Note that this slot writes row `row`; readers sum only rows noted. */
static inline void
mstat_wsection_touch(struct mstat_shm_slot *slot, unsigned row)
{
	_Atomic uint64_t *w = &slot->head.touched[row >> 6];
	uint64_t bit = UINT64_C(1) << (row & 63);
	uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

	/* Single writer; published to readers by (C) like the counters. */
	if (!(v & bit))
		atomic_store_explicit(w, v | bit, memory_order_relaxed);
}

/* Add `n` to counter `k` of row `row` in the generation `gen`. */
static inline void
mstat_wsection_add(_Atomic uint64_t *gen, unsigned row, unsigned k, uint64_t n)
{
	_Atomic uint64_t *c = gen + (uint64_t)row * MSTAT_ROW_STRIDE + k;

	/* Single writer: a plain load and store, never a locked add.
	 * Published by (C). */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Count one object of `bytes` in row `row`: counter `k` (ALLOC_COUNT or
 * FREE_COUNT) and the bytes counter after it.  The row is noted as
 * touched when the count it adds to was 0, which is the first count the
 * slot ever makes in the row (and once per generation after): the test
 * is on a value loaded anyway, where a test of the bitmap would cost a
 * load of its own on every count. */
static inline void
mstat_wsection_count(struct mstat_shm_slot *slot, _Atomic uint64_t *gen,
		     unsigned row, unsigned k, uint64_t bytes)
{
	_Atomic uint64_t *c = gen + (uint64_t)row * MSTAT_ROW_STRIDE + k;
	uint64_t n = atomic_load_explicit(&c[0], memory_order_relaxed);

	atomic_store_explicit(&c[0], n + 1, memory_order_relaxed);
	atomic_store_explicit(&c[1], atomic_load_explicit(&c[1], memory_order_relaxed) +
					     bytes, memory_order_relaxed);
	if (__builtin_expect(n == 0, 0))
		mstat_wsection_touch(slot, row);
}

_Static_assert(MSTAT_C_ALLOC_BYTES == MSTAT_C_ALLOC_COUNT + 1 &&
		       MSTAT_C_FREE_BYTES == MSTAT_C_FREE_COUNT + 1,
	       "each count is followed by its bytes");

static inline void
mstat_wsection_end(struct mstat_shm_slot *slot)
{
	uint64_t s = atomic_load_explicit(&slot->head.seq, memory_order_relaxed);

	/* (C) even seq, release: publishes every add of the section; pairs
	 * with the reader's acquire (E). */
	atomic_store_explicit(&slot->head.seq, s + 1, memory_order_release);
}

#endif /* MSTAT_SHM_SECTION_H */
