/* SPDX-License-Identifier: MIT */
/*
 * shared.c - every count that cannot go to a slot of the thread's own:
 * the shared slot (slot 0) and the counts kept before the segment exists
 * (`early`), under the shared lock, a process-local lock readers never
 * take; and the counts of signal handlers that cannot wait for their own
 * thread, deferred.  See shared.h.
 */
#include "lib/shared.h"

#include <string.h>
#include <unistd.h>

#include "shm/clock.h"
#include "lib/rows.h"
#include "lib/start.h"
#include "lib/stop.h"

/* When the segment is made, unless MSTAT_EAGER=1: at the first count after
 * this much of the process's life, or once it has counted this much, or
 * when a second thread counts (publish_due()). */
#define PUBLISH_AFTER_NS (10u * 1000u * 1000u)
#define PUBLISH_AFTER_COUNTS 4096u
#define PUBLISH_AFTER_BYTES (1u << 20)

/* Deferred counts that found their thread's ring full; see defer(). */
static _Atomic bool spilled MSTAT_STARTUP;
static _Atomic uint64_t spill[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];

static bool publish_due(uint64_t bytes);

/* Slot 0, of the segment: counted into under the lock. */
static inline struct mstat_shm_slot *
shared_slot(void)
{
	return mstat_segment_slot(&mstat_proc.seg, MSTAT_SHARED_SLOT);
}

static MSTAT_START_TEXT void
count_early(enum mstat_op op, uint64_t freed, uint64_t size, uint64_t requested)
{
	mstat_rows_count(mstat_proc.early, &mstat_proc.early_requested, op, freed,
			 size, requested);
}

MSTAT_START_TEXT uint32_t
mstat_shared_tid(void)
{
	if (!mstat_thread.tid)
		mstat_thread.tid = (uint32_t)gettid();
	return mstat_thread.tid;
}

/*
 * A count from a signal handler whose thread is inside one of our critical
 * sections (holding shared_lock, adding to `forking`) must neither wait
 * for that thread nor write what it is half-way through writing.  It goes
 * into the thread's ring, and the thread takes it out before it lets go of
 * what it holds, into the section or the rows it was adding to: visible
 * to readers with the count the handler interrupted.  A handler that
 * interrupts this one appends too: the entry is taken by a
 * compare-and-swap, which no signal splits, and every handler ends before
 * the code it interrupted goes on.
 *
 * Should a thread's ring be full (more than MSTAT_DEFERRED_MAX counts in
 * handlers within one such section), the count goes to spill, added
 * atomically, and the next holder of shared_lock takes it out.  That is
 * exact too, but two threads doing so at once may have a reader see half
 * of one count until then.
 */
MSTAT_START_TEXT bool
mstat_shared_must_defer(void)
{
	return mstat_thread.in_forking ||
	       mstat_ownlock_mine(&mstat_proc.shared_lock, mstat_shared_tid());
}

static void
defer(enum mstat_op op, uint64_t freed, uint64_t size, uint64_t requested)
{
	unsigned i = atomic_load_explicit(&mstat_thread.deferred_in,
					  memory_order_relaxed);

	do {
		if (i - atomic_load_explicit(&mstat_thread.deferred_out,
					     memory_order_relaxed) >= MSTAT_DEFERRED_MAX) {
			struct mstat_adds x;
			mstat_adds_of(&x, op, freed, size, requested);
			for (unsigned k = 0; k < x.n; k++)
				atomic_fetch_add_explicit(&spill[x.a[k].row][x.a[k].k],
							  x.a[k].v, memory_order_relaxed);
			/* Release: pairs with the acquire exchange in
			 * take_spill(); the adds are before it. */
			atomic_store_explicit(&spilled, true, memory_order_release);
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&mstat_thread.deferred_in, &i,
							i + 1, memory_order_relaxed,
							memory_order_relaxed));
	mstat_thread.deferred[i % MSTAT_DEFERRED_MAX] =
		(struct mstat_deferred){ freed, size, requested, op };
}

/* Takes the oldest deferred count of this thread into *d; false if none. */
static bool
take_deferred(struct mstat_deferred *d)
{
	unsigned out = atomic_load_explicit(&mstat_thread.deferred_out,
					    memory_order_relaxed);

	if (out == atomic_load_explicit(&mstat_thread.deferred_in, memory_order_relaxed))
		return false;
	/* The handlers that put entries up to `in` have returned: their
	 * stores are before this, for the compiler too. */
	atomic_signal_fence(memory_order_acquire);
	*d = mstat_thread.deferred[out % MSTAT_DEFERRED_MAX];
	/* Copied before the entry is given back to a handler. */
	atomic_signal_fence(memory_order_release);
	atomic_store_explicit(&mstat_thread.deferred_out, out + 1, memory_order_relaxed);
	return true;
}

/* Under shared_lock: the spilled counts, zeroed there, into the section
 * open on `slot` (its generation `gen`), or into `acc` if slot is NULL. */
static void
take_spill(struct mstat_shm_slot *slot, unsigned g, mstat_rows acc)
{
	if (!atomic_load_explicit(&spilled, memory_order_relaxed) ||
	    /* Acquire: pairs with the release in defer(). */
	    !atomic_exchange_explicit(&spilled, false, memory_order_acquire))
		return;
	for (unsigned row = 0; row < MSTAT_ROWS(MSTAT_CLASS_COUNT); row++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++) {
			uint64_t v = atomic_exchange_explicit(&spill[row][k], 0,
							      memory_order_relaxed);
			if (!v)
				continue;
			if (!slot) {
				acc[row][k] += v;
				continue;
			}
			mstat_rows_put_one(slot, g, row, k, v);
		}
}

/*
 * The same, for a holder of shared_lock.  Not while mstat_shared_count_deferred() is
 * taking on this thread: a signal handler that interrupts it half-way
 * through a take (the entry read, `out` not yet moved on), and counts
 * with the lock free, would take that entry too and count it twice.
 * mstat_shared_count_deferred() takes what is left, including what handlers deferred
 * meanwhile.
 */
static bool
take_deferred_held(struct mstat_deferred *d)
{
	return !mstat_thread.draining && take_deferred(d);
}

/* Under shared_lock, before the segment exists: this thread's deferred
 * counts into `early`.  Whether the segment is due (publish_due()). */
MSTAT_START_TEXT bool
mstat_shared_take_early(void)
{
	struct mstat_deferred d;
	bool due = false;

	while (take_deferred_held(&d)) {
		count_early(d.op, d.freed, d.size, d.requested);
		due |= publish_due(mstat_op_allocs(d.op) ? d.size : 0);
	}
	take_spill(NULL, 0, mstat_proc.early);
	return due;
}

MSTAT_START_TEXT void
mstat_shared_lock(void)
{
	mstat_ownlock_lock(&mstat_proc.shared_lock, mstat_shared_tid());
}

/* Lets go of shared_lock; counts deferred after the holder took them out
 * (a handler between that and this) are counted as any other. */
MSTAT_START_TEXT void
mstat_shared_unlock(void)
{
	mstat_ownlock_unlock(&mstat_proc.shared_lock);
	mstat_shared_count_deferred();
}

/* Stores the exiting thread's flags in the header (under shared_lock). */
static void
exit_flags(uint32_t f)
{
	/* (Y) relaxed: read only once this process is gone (a final read).
	 * In program order with the section's own stores, for the compiler
	 * too: what a death finds there is what this thread had done. */
	atomic_signal_fence(memory_order_seq_cst);
	mstat_proc.exit_flags = f;
	atomic_store_explicit(&mstat_proc.seg.hdr->exit_flags, f, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

/*
 * Under shared_lock, once the exit has begun, in the exiting thread: a
 * section on the shared slot that the exit's stop bit does not refuse
 * (its epoch word is mstat_proc.exit_word; a fork's drain still stops it),
 * with everything other threads have counted into `early` since the
 * exit began added in first, in the same section.  BUSY in the header
 * until mstat_shared_exit_end(): a death in between, which can only be a
 * signal's (this thread calls exit_group() after its last count), is
 * told apart from the end of the exit.  False if a fork drains (wait for
 * it and try again), or the slot is inside an update this thread
 * interrupted.
 */
static MSTAT_START_TEXT enum mstat_wsection
exit_section(unsigned *g)
{
	struct mstat_shm_slot *slot = shared_slot();

	exit_flags(mstat_proc.exit_flags | MSTAT_EXIT_BUSY);
	enum mstat_wsection w = mstat_wsection_begin(slot, &mstat_proc.exit_word,
						     mstat_writer_config.fenced, g);
	if (w != MSTAT_WS_OPEN) {
		exit_flags(mstat_proc.exit_flags & ~MSTAT_EXIT_BUSY);
		return w;
	}
	if (mstat_proc.late) {
		mstat_proc.early[MSTAT_CLASS_COUNT][MSTAT_T_REQUESTED_BYTES] +=
			mstat_proc.early_requested;
		mstat_proc.early_requested = 0;
		mstat_rows_put(slot, *g, mstat_proc.early);
		memset(mstat_proc.early, 0, sizeof(mstat_proc.early));
		mstat_proc.late = false;
	}
	return MSTAT_WS_OPEN;
}

/* Ends exit_section()'s section, `done`: the exit has run to its end. */
MSTAT_START_TEXT void
mstat_shared_exit_end(bool done)
{
	mstat_wsection_end(shared_slot());
	exit_flags((mstat_proc.exit_flags & ~MSTAT_EXIT_BUSY) |
		   (done ? MSTAT_EXIT_DONE : 0));
}

MSTAT_START_TEXT enum mstat_shared
mstat_shared_open(unsigned *g)
{
	for (;;) {
		mstat_shared_lock();
		if (!atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed)) {
			if (!mstat_proc.disabled)
				return MSTAT_INTO_EARLY;
			break;
		}
		/* Set by retire() under this lock: from then on no thread but
		 * the exiting one begins a section on the shared slot. */
		if (atomic_load_explicit(&mstat_writer_config.stop,
					 memory_order_relaxed) & MSTAT_STOP_EXIT) {
			if (!mstat_thread.exiting)
				return MSTAT_INTO_LATE;
			enum mstat_wsection w = exit_section(g);
			if (w == MSTAT_WS_OPEN)
				return MSTAT_INTO_EXIT;
			mstat_ownlock_unlock(&mstat_proc.shared_lock);
			if (w == MSTAT_WS_NESTED || !mstat_stop_wait())
				return MSTAT_INTO_NONE;
			continue;
		}
		if (mstat_wsection_begin(shared_slot(),
					 &mstat_writer_config.epoch,
					 mstat_writer_config.fenced, g) == MSTAT_WS_OPEN)
			return MSTAT_INTO_SLOT;
		/* Never wait for a fork holding shared_lock: the forking
		 * thread may need it in its parent handler. */
		mstat_ownlock_unlock(&mstat_proc.shared_lock);
		if (!mstat_stop_wait())
			return MSTAT_INTO_NONE;
	}
	mstat_ownlock_unlock(&mstat_proc.shared_lock);
	return MSTAT_INTO_NONE;
}

/* Ends what mstat_shared_open() began, with the counts this thread's handlers
 * deferred meanwhile.  Returns whether the segment is due (publish_due()). */
MSTAT_START_TEXT bool
mstat_shared_close(enum mstat_shared s, unsigned g)
{
	struct mstat_deferred d;
	bool due = false;

	/* A handler meanwhile found the lock ours and deferred: taken here,
	 * into the same section or rows. */
	if (s == MSTAT_INTO_EARLY) {
		due = mstat_shared_take_early();
	} else if (s == MSTAT_INTO_LATE) {
		while (take_deferred_held(&d))
			count_early(d.op, d.freed, d.size, d.requested);
		take_spill(NULL, 0, mstat_proc.early);
		mstat_proc.late = true;
	} else if (s == MSTAT_INTO_SLOT || s == MSTAT_INTO_EXIT) {
		struct mstat_section sec = {
			shared_slot(), g
		};
		while (take_deferred_held(&d))
			mstat_section_count(&sec, d.op, d.freed, d.size, d.requested);
		take_spill(sec.slot, g, NULL);
		if (s == MSTAT_INTO_EXIT)
			mstat_shared_exit_end(false);
		else
			mstat_wsection_end(sec.slot);
	} else {
		return false;
	}
	mstat_shared_unlock();
	return due;
}

/*
 * Under shared_lock, after an early count of `bytes` allocated: whether
 * the process is worth a segment now.  A process that lives 10 ms, counts
 * 4096 times, allocates 1 MiB or runs a second thread will be watched;
 * one that does none of that (a shell's `true`, `sed` on a small file)
 * ends before any observer could see it, and never pays for a segment:
 * its counts stay in process memory.
 *
 * The clock is the coarse one, read on every count before the segment
 * exists: a read of the vDSO's last tick (4 ms here), 5 ns where
 * CLOCK_MONOTONIC takes 23, and a shell counts a thousand times as it
 * starts (docs/performance.md, "Starting a process").  Enough for a 10 ms
 * rule, and for the waits below.
 */
static MSTAT_START_TEXT bool
publish_due(uint64_t bytes)
{
	if (!mstat_thread.counted_early) {
		mstat_thread.counted_early = true;
		mstat_proc.early_threads++;
	}
	mstat_proc.early_counts++;
	mstat_proc.early_bytes += bytes;
	return mstat_proc.early_threads > 1 ||
	       mstat_proc.early_counts >= PUBLISH_AFTER_COUNTS ||
	       mstat_proc.early_bytes >= PUBLISH_AFTER_BYTES ||
	       mstat_clock_ns(CLOCK_MONOTONIC_COARSE) - mstat_proc.born_ns >=
		       PUBLISH_AFTER_NS;
}

/* Around the forking thread's adds to `forking`: a handler's count
 * meanwhile is deferred, then counted (into `forking` too). */
static void
forking_begin(void)
{
	mstat_thread.in_forking = true;
	atomic_signal_fence(memory_order_seq_cst);
}

static void
forking_end(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	mstat_thread.in_forking = false;
	mstat_shared_count_deferred();
}

/* Adds rows kept in process memory where this thread counts. */
void
mstat_shared_count_rows(mstat_rows acc)
{
	struct mstat_section sec;
	unsigned g = 0;
	enum mstat_shared s;

	if (mstat_section_open(&sec)) {
		mstat_rows_put(sec.slot, sec.g, acc);
		mstat_section_close(&sec);
		return;
	}
	if (mstat_thread.forking) {
		forking_begin();
		mstat_rows_add(mstat_proc.forking, acc);
		forking_end();
		return;
	}
	s = mstat_shared_open(&g);
	if (s == MSTAT_INTO_SLOT || s == MSTAT_INTO_EXIT)
		mstat_rows_put(shared_slot(), g, acc);
	else if (s == MSTAT_INTO_EARLY || s == MSTAT_INTO_LATE)
		mstat_rows_add(mstat_proc.early, acc);
	if (mstat_shared_close(s, g))
		mstat_start_publish();
}

MSTAT_START_TEXT void
mstat_shared_count_unslotted(enum mstat_op op, uint64_t freed, uint64_t size,
			     uint64_t requested)
{
	unsigned g = 0;
	enum mstat_shared s;

	if (mstat_proc.disabled)
		return;
	if (mstat_thread.forking ? mstat_thread.in_forking : mstat_shared_must_defer()) {
		/* A signal handler, and its thread is in our way. */
		defer(op, freed, size, requested);
		return;
	}
	if (mstat_thread.forking) {
		forking_begin();
		uint64_t *req = &mstat_proc.forking[MSTAT_CLASS_COUNT]
						   [MSTAT_T_REQUESTED_BYTES];
		mstat_rows_count(mstat_proc.forking, req, op, freed, size,
				 requested);
		forking_end();
		return;
	}
	bool due = false;
	s = mstat_shared_open(&g);
	if (s == MSTAT_INTO_SLOT || s == MSTAT_INTO_EXIT) {
		struct mstat_section sec = {
			shared_slot(), g
		};
		mstat_section_count(&sec, op, freed, size, requested);
	} else if (s == MSTAT_INTO_EARLY) {
		count_early(op, freed, size, requested);
		due = publish_due(mstat_op_allocs(op) ? size : 0);
	} else if (s == MSTAT_INTO_LATE) {
		count_early(op, freed, size, requested);
	}
	if (mstat_shared_close(s, g) || due)
		mstat_start_publish();
}

/* Counts what this thread's handlers deferred while it held what it has
 * just let go of, wherever it counts now; and any spill, through the
 * shared slot (not while forking: the shared slot is stopped, by this
 * very thread, and the spill waits for a later holder). */
MSTAT_START_TEXT void
mstat_shared_count_deferred(void)
{
	struct mstat_deferred d;

	if (mstat_thread.draining)
		return; /* the taker below goes on */
	mstat_thread.draining = true;
	do {
		while (take_deferred(&d))
			mstat_count(d.op, d.freed, d.size, d.requested);
		if (atomic_load_explicit(&spilled, memory_order_relaxed) &&
		    !mstat_thread.forking && !mstat_proc.disabled) {
			unsigned g = 0;
			enum mstat_shared s = mstat_shared_open(&g);
			if (mstat_shared_close(s, g))
				mstat_start_publish();
		}
		/* Deferred while the lock was held above: the holder left them
		 * (take_deferred_held()).  No handler defers once it is free.
		 * Relaxed, as in take_deferred(): only this thread and its
		 * handlers touch the ring, and a handler ends before the code
		 * it interrupted goes on. */
	} while (atomic_load_explicit(&mstat_thread.deferred_out, memory_order_relaxed) !=
		 atomic_load_explicit(&mstat_thread.deferred_in, memory_order_relaxed));
	mstat_thread.draining = false;
}
