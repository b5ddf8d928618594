/* SPDX-License-Identifier: MIT */
/*
 * section.h - the writer's update section, inline.
 *
 * Contract: only one thread at a time writes a slot (its owner; for the
 * shared slot, whoever holds the process-local shared lock).  A section is
 *
 *	unsigned g;
 *	if (mstat_wsection_begin(slot, epoch_word, fenced, &g) ==
 *	    MSTAT_WS_OPEN) {
 *		mstat_wsection_count(slot, g, row, counter, bytes);  (any number)
 *		mstat_wsection_add(slot, g, row, counter, n);        (any number)
 *		mstat_wsection_requested(slot, g, n);                (any number)
 *		mstat_wsection_prior(slot, g, counter, n);           (any number)
 *		mstat_wsection_end(slot);
 *	}
 *
 * and readers see all of its adds or none of them.  No lock, no system
 * call, no locked instruction but (A) in fenced mode, no wait on readers.
 * The only value read from memory a reader can write is `epoch`, and it is
 * used only as `epoch % 4`, which is `g`.
 *
 * Sections do not nest: a section begun on a slot whose seq is odd (a
 * signal handler interrupting its own thread's section) is refused
 * before it writes anything.
 *
 * `epoch_word` is the writer's own, process-local word: the address of
 * the segment's `epoch`, with MSTAT_EPOCH_STOPPED (bit 0) set while a
 * fork or the exit drains the slots.  Then a section is entered and left
 * again at once, adding nothing; the writer that set the bit and then
 * waited for odd seqs to change knows that every section it did not see
 * has seen the bit.  It is loaded after (A) with the same order as (B),
 * which is what makes that true; see docs/design.md.  One word for both
 * costs every update one load and one test, where a stop flag of its own
 * took a second load and a second line.
 *
 * The ordered accesses (A), (B), (C), (V) are those of the table in
 * docs/design.md; the reader's side is in shm/reader.c.
 */
#ifndef MSTAT_SHM_SECTION_H
#define MSTAT_SHM_SECTION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/layout.h"
#include "shm/sizeclass.h"

/*
 * A single writer's add to a word of its own slot is one `add` to memory
 * on x86-64: never a locked one, and not the load, add and store that
 * gcc makes of a relaxed atomic load and store, two more instructions on
 * every count.  The word is loaded and stored once each, as with the
 * relaxed pair, so a reader sees its old value or its new one.
 * ThreadSanitizer sees only the C form, and gets it.
 */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define MSTAT_WSECTION_ADD_ASM 1
#endif

enum mstat_wsection {
	MSTAT_WS_OPEN,    /* entered: add, then end */
	MSTAT_WS_NESTED,  /* this thread is inside a section of the slot */
	MSTAT_WS_STOPPED, /* the drain bit was set: entered, left, nothing added */
};

/* Bit 0 of the epoch word: sections are stopped (a drain). */
#define MSTAT_EPOCH_STOPPED ((uintptr_t)1)

/* The epoch word for the segment's `epoch` at `epoch`, not stopped. */
static inline uintptr_t
mstat_epoch_word(_Atomic uint64_t *epoch)
{
	return (uintptr_t)epoch;
}

/* Enter a section; on MSTAT_WS_OPEN, *g is the generation it writes to. */
static inline enum mstat_wsection
mstat_wsection_begin(struct mstat_shm_slot *slot, _Atomic uintptr_t *epoch_word,
		     bool fenced, unsigned *g)
{
	/* Only this thread stores `seq`: a relaxed load sees its last store. */
	uint64_t s = atomic_load_explicit(&slot->head.seq, memory_order_relaxed);
	uintptr_t w;
	uint64_t e;

	if (__builtin_expect(s & 1, 0))
		return MSTAT_WS_NESTED;
	if (fenced) {
		/* (A) odd seq, seq_cst (an xchg): ordered before (V) and (B)
		 * even though they are loads.  With the reader's seq_cst (D)
		 * and (E) this is Dekker's pattern: either (B) sees the new
		 * epoch or (E) sees this odd seq. */
		atomic_store_explicit(&slot->head.seq, s + 1, memory_order_seq_cst);
		/* (V) pairs with the seq_cst RMW that sets the stop bit before
		 * the drain's seq_cst loads of seq: Dekker again, as (B). */
		w = atomic_load_explicit(epoch_word, memory_order_seq_cst);
		if (__builtin_expect(w & MSTAT_EPOCH_STOPPED, 0))
			goto stopped;
		/* (B) pairs with (D); see (A). */
		e = atomic_load_explicit((_Atomic uint64_t *)w, memory_order_seq_cst);
	} else {
		/* (A') odd seq with only a compiler barrier after it.  The
		 * reader's membarrier (M) after (D), and the drainer's (M')
		 * after setting the stop bit, turn the barrier into a full
		 * fence on this CPU whenever it matters. */
		atomic_store_explicit(&slot->head.seq, s + 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		/* (V') after (A'): pairs with the stop bit's RMW and the
		 * membarrier after it, as (B') with (D)+(M). */
		w = atomic_load_explicit(epoch_word, memory_order_relaxed);
		if (__builtin_expect(w & MSTAT_EPOCH_STOPPED, 0))
			goto stopped;
		/* (B') pairs with (D)+(M); acquire, like (B), so that the adds
		 * below happen after (D) when it reads the new epoch: a base
		 * read before (D) never sees them.  A plain mov on x86. */
		e = atomic_load_explicit((_Atomic uint64_t *)w, memory_order_acquire);
	}
	/* `epoch` is reader-written: reduced before it indexes anything. */
	*g = MSTAT_GEN_OF(e);
	return MSTAT_WS_OPEN;
stopped:
	/* (C) of a section that added nothing. */
	atomic_store_explicit(&slot->head.seq, s + 2, memory_order_release);
	return MSTAT_WS_STOPPED;
}

/* The counters of generation `g` of `slot`. */
static inline _Atomic uint64_t *
mstat_wsection_gen(struct mstat_shm_slot *slot, unsigned g)
{
#define MSTAT_GEN_BYTES (MSTAT_GEN_COUNTERS(MSTAT_CLASS_COUNT) * sizeof(uint64_t))
	size_t at;

#ifdef MSTAT_WSECTION_ADD_ASM
	/* One imul: gcc makes three instructions of a multiply by this
	 * constant (146 rows of 32 bytes), on every count. */
	__asm__("imulq %2, %1, %0" : "=r"(at) : "rm"((size_t)g), "i"(MSTAT_GEN_BYTES));
#else
	at = (size_t)g * MSTAT_GEN_BYTES;
#endif
#undef MSTAT_GEN_BYTES
	return (_Atomic uint64_t *)((char *)slot->acc + at);
}

/* Counter `k` of class row `row` in generation `g` of `slot`. */
static inline _Atomic uint64_t *
mstat_wsection_counter(struct mstat_shm_slot *slot, unsigned g, unsigned row,
		       unsigned k)
{
	return mstat_wsection_gen(slot, g) + (size_t)row * MSTAT_ROW_COUNTERS + k;
}

/* Note that this slot writes class row `row`; readers sum only rows noted. */
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

/* Single writer: a plain add, never a locked one (see the top of this
 * file).  Published by (C). */
static inline void
mstat_wsection_bump(_Atomic uint64_t *c, uint64_t n)
{
#ifdef MSTAT_WSECTION_ADD_ASM
	__asm__ volatile("addq %1, %0" : "+m"(*(uint64_t *)c) : "er"(n));
#else
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
#endif
}

/* Add `n` to counter `k` of class row `row` in generation `g` (the row
 * must be noted with mstat_wsection_touch() if `n` may be its first). */
static inline void
mstat_wsection_add(struct mstat_shm_slot *slot, unsigned g, unsigned row,
		   unsigned k, uint64_t n)
{
	mstat_wsection_bump(mstat_wsection_counter(slot, g, row, k), n);
}

/* Add `n` requested bytes in generation `g`: on the line of `seq`. */
static inline void
mstat_wsection_requested(struct mstat_shm_slot *slot, unsigned g, uint64_t n)
{
	mstat_wsection_bump(&slot->head.requested[g], n);
}

/* Count one object of `bytes` in class row `row`: counter `k`
 * (ALLOC_COUNT or FREE_COUNT) and the bytes counter after it.  The row is
 * noted as touched when the count it adds to was 0, which is the first
 * count the slot ever makes in the row (and once per generation after):
 * the test is on a value loaded anyway, where a test of the bitmap would
 * cost a load of its own on every count. */
static inline __attribute__((always_inline)) void
mstat_wsection_count(struct mstat_shm_slot *slot, unsigned g, unsigned row,
		     unsigned k, uint64_t bytes)
{
	_Atomic uint64_t *c = mstat_wsection_counter(slot, g, row, k);
	uint64_t n = atomic_load_explicit(&c[0], memory_order_relaxed);

	atomic_store_explicit(&c[0], n + 1, memory_order_relaxed);
	mstat_wsection_bump(&c[1], bytes);
	if (__builtin_expect(n == 0, 0))
		mstat_wsection_touch(slot, row);
}

/*
 * Count one glibc chunk in its chunk row (layout.h): `header`, the chunk's
 * size word, below MSTAT_CHUNK_LIMIT (the caller tested); `which`,
 * MSTAT_CHUNK_ALLOCS or MSTAT_CHUNK_FREES.  The header's size is the
 * row's byte offset, its flag bits masked off: one `and` and one add,
 * where a class row took a table load, its bytes and a second add.  No
 * touched bit: readers sum every chunk row.
 */
static inline __attribute__((always_inline)) void
mstat_wsection_chunk(struct mstat_shm_slot *slot, unsigned g, size_t header,
		     unsigned which)
{
	char *rows = (char *)(mstat_wsection_gen(slot, g) +
			      MSTAT_CLASS_COUNT * MSTAT_ROW_COUNTERS);

	mstat_wsection_bump((_Atomic uint64_t *)(rows + (header & ~(size_t)15)) + which, 1);
}

/*
 * Add `n` to counter `k` of generation `g`'s prior row (layout.h),
 * and note the row: written only in an attached process, by the frees
 * and reallocs of blocks made before its attach.
 */
static inline void
mstat_wsection_prior(struct mstat_shm_slot *slot, unsigned g, unsigned k,
		     uint64_t n)
{
	mstat_wsection_bump(slot->acc + MSTAT_PRIOR_OFFSET(MSTAT_CLASS_COUNT, g) + k, n);
	mstat_wsection_touch(slot, MSTAT_PRIOR_TOUCHED);
}

_Static_assert(MSTAT_C_ALLOC_BYTES == MSTAT_C_ALLOC_COUNT + 1 &&
		       MSTAT_C_FREE_BYTES == MSTAT_C_FREE_COUNT + 1,
	       "each count is followed by its bytes");

static inline void
mstat_wsection_end(struct mstat_shm_slot *slot)
{
	/* (C) even seq, release: publishes every add of the section; pairs
	 * with the reader's acquire (E). */
#ifdef MSTAT_WSECTION_ADD_ASM
	/* An x86-64 store is a release store; the "memory" clobber keeps
	 * the compiler from moving any add of the section below it. */
	__asm__ volatile("addq $1, %0" : "+m"(*(uint64_t *)&slot->head.seq) : : "memory");
#else
	uint64_t s = atomic_load_explicit(&slot->head.seq, memory_order_relaxed);

	atomic_store_explicit(&slot->head.seq, s + 1, memory_order_release);
#endif
}

#endif /* MSTAT_SHM_SECTION_H */
