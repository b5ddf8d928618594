/* SPDX-License-Identifier: MIT */
/*
 * slots.c - each thread's slot: claimed at its first count (a free slot
 * with pages, or the next one given its pages), given back as it exits,
 * and the slot pointers on its line that the inline paths load (state.h:
 * `fast`, `slot`, `own`; `fast` cleared while it does the library's own
 * work).  See slots.h.
 */
#include "lib/own.h"
#include "lib/slots.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "lib/stop.h"

/* Set by the interposer (mstat_slots_header_sizes()): `fast` may be
 * handed out.  Relaxed: a thread that misses it takes the slow path,
 * which looks again. */
static _Atomic bool header_sizes MSTAT_STARTUP;

static struct {
	/* Slots 0 .. reserved - 1 have pages (slot 0 from creation).  One
	 * thread at a time reserves the next; (S) release/acquire. */
	_Atomic uint32_t reserved;
	_Atomic bool reserving;
	_Atomic bool reserve_failed; /* /dev/shm is full: no more slots */
	bool have_key;
	pthread_key_t exit_key;  /* its destructor gives a thread's slot back */
	/* (H) slot i is owned by a live thread; process-local. */
	_Atomic unsigned char busy[MSTAT_SLOTS_MAX];
} slots;

MSTAT_START_TEXT void
mstat_slots_set(struct mstat_shm_slot *s)
{
	struct mstat_shm_slot *inline_slot = mstat_writer_config.fenced ? NULL : s;

	mstat_thread.own = s;
	mstat_thread.slot = inline_slot;
	mstat_thread.fast =
		atomic_load_explicit(&header_sizes, memory_order_relaxed) &&
				!mstat_own_work()
			? inline_slot
			: NULL;
}

MSTAT_START_TEXT void
mstat_slots_header_sizes(bool yes)
{
	atomic_store_explicit(&header_sizes, yes, memory_order_relaxed);
}

static void
take_slot(uint32_t i)
{
	struct mstat_shm_slot *s = mstat_segment_slot(&mstat_proc.seg, i);

	atomic_store_explicit(&s->head.tid, (uint32_t)gettid(), memory_order_relaxed);
	atomic_fetch_add_explicit(&mstat_proc.seg.hdr->threads, 1, memory_order_relaxed);
	/* May allocate (keys past the first 32): the library's own block,
	 * freed as the thread exits. */
	if (slots.have_key) {
		mstat_own_begin();
		pthread_setspecific(slots.exit_key, (void *)1);
		mstat_own_end();
	}
	mstat_thread.slot_index = i;
	mstat_thread.state = MSTAT_THREAD_OWN;
	mstat_slots_set(s);
}

/* Gives slot `n`, the next without pages, its pages; false if another
 * thread is doing so now, or they cannot be had. */
static bool
reserve_slot(uint32_t n)
{
	if (atomic_exchange_explicit(&slots.reserving, true, memory_order_acquire))
		return false;
	bool ok = n == atomic_load_explicit(&slots.reserved, memory_order_relaxed) &&
		  mstat_segment_reserve(&mstat_proc.seg, n) == 0;
	if (ok) {
		atomic_store_explicit(&slots.busy[n], 1, memory_order_relaxed);
		/* (F) seq_cst, before this thread's first section in the
		 * slot: pairs with the reader's load of slots_used after its
		 * rotation (D).  Only the reserving thread raises it. */
		atomic_store_explicit(&mstat_proc.seg.hdr->slots_used, n + 1,
				      memory_order_seq_cst);
		/* (S) release: the slot's pages and busy flag before the
		 * count that lets other threads scan it. */
		atomic_store_explicit(&slots.reserved, n + 1, memory_order_release);
	} else if (n == atomic_load_explicit(&slots.reserved, memory_order_relaxed)) {
		atomic_store_explicit(&slots.reserve_failed, true, memory_order_relaxed);
	}
	atomic_store_explicit(&slots.reserving, false, memory_order_release);
	return ok;
}

/* Takes a free slot that has pages, or gives the next one pages. */
static void
claim_slot(void)
{
	/* (S) acquire: pairs with the release in reserve_slot(). */
	uint32_t n = atomic_load_explicit(&slots.reserved, memory_order_acquire);

	mstat_thread.state = MSTAT_THREAD_CLAIMING;
	for (uint32_t i = 1; i < n; i++) {
		unsigned char free_ = 0;

		if (atomic_load_explicit(&slots.busy[i], memory_order_relaxed) ||
		    /* (H) acquire: pairs with the release in give_back_slot();
		     * the counters and seq the last owner left are visible. */
		    !atomic_compare_exchange_strong_explicit(
			    &slots.busy[i], &free_, 1, memory_order_acquire,
			    memory_order_relaxed))
			continue;
		take_slot(i);
		return;
	}
	if (n < mstat_proc.slot_count &&
	    !atomic_load_explicit(&slots.reserve_failed, memory_order_relaxed)) {
		if (reserve_slot(n)) {
			take_slot(n);
			return;
		}
		if (!atomic_load_explicit(&slots.reserve_failed, memory_order_relaxed)) {
			/* Another thread is reserving: try again next time. */
			mstat_thread.state = MSTAT_THREAD_NEW;
			return;
		}
	}
	atomic_fetch_add_explicit(&mstat_proc.seg.hdr->overflowed, 1,
				  memory_order_relaxed);
	mstat_thread.state = MSTAT_THREAD_SHARED;
}

/* The destructor of exit_key: runs as a thread exits. */
static void
give_back_slot(void *unused)
{
	(void)unused;
	if (mstat_thread.state != MSTAT_THREAD_OWN)
		return;
	struct mstat_shm_slot *s = mstat_thread.own;
	/* Later counts of this thread (other destructors freeing) go to the
	 * shared slot: nothing is lost, and the slot is free now. */
	mstat_slots_set(NULL);
	mstat_thread.state = MSTAT_THREAD_SHARED;
	atomic_store_explicit(&s->head.tid, 0, memory_order_relaxed);
	atomic_fetch_sub_explicit(&mstat_proc.seg.hdr->threads, 1, memory_order_relaxed);
	/* (H) release: the next owner's acquire sees every count made here.
	 * The counters stay: a slot keeps its cumulative counts for good. */
	atomic_store_explicit(&slots.busy[mstat_thread.slot_index], 0,
			      memory_order_release);
}

MSTAT_START_TEXT bool
mstat_slots_open_slow(struct mstat_section *sec)
{
	for (;;) {
		struct mstat_shm_slot *slot = mstat_thread.own;

		if (!slot) {
			if (mstat_thread.forking ||
			    mstat_thread.state != MSTAT_THREAD_NEW ||
			    /* (R) acquire: pairs with the release in start();
			     * the segment and the config are complete. */
			    !atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) ||
			    /* No slot is written once the exit has begun. */
			    (atomic_load_explicit(&mstat_writer_config.stop,
						  memory_order_relaxed) & MSTAT_STOP_EXIT))
				return false;
			/* Inside malloc: a slot whose pages cannot be had
			 * (ENOSPC) is not the caller's error. */
			int saved = errno;
			claim_slot();
			errno = saved;
			if (!mstat_thread.own)
				return false;
			continue;
		}
		switch (mstat_wsection_begin(slot, &mstat_writer_config.epoch,
					     mstat_writer_config.fenced, &sec->g)) {
		case MSTAT_WS_OPEN:
			sec->slot = slot;
			/* The interposer may have spoken since the slot was
			 * taken (a count from inside its own resolution). */
			if (!mstat_thread.fast && !mstat_writer_config.fenced &&
			    atomic_load_explicit(&header_sizes, memory_order_relaxed))
				mstat_slots_set(slot);
			return true;
		case MSTAT_WS_NESTED:
			return false;
		case MSTAT_WS_STOPPED:
			if (!mstat_stop_wait())
				return false;
			break;
		}
	}
}

uint32_t
mstat_slots_reserved(void)
{
	/* (S) acquire: pairs with the release in reserve_slot(); the slots
	 * below are mapped with pages. */
	return atomic_load_explicit(&slots.reserved, memory_order_acquire);
}

void
mstat_slots_key(void)
{
	if (!slots.have_key)
		slots.have_key = pthread_key_create(&slots.exit_key, give_back_slot) == 0;
}

void
mstat_slots_made(void)
{
	atomic_store_explicit(&slots.reserved, 1, memory_order_relaxed);
}

void
mstat_slots_fork_child(void)
{
	atomic_store_explicit(&slots.reserved, 0, memory_order_relaxed);
	atomic_store_explicit(&slots.reserving, false, memory_order_relaxed);
	atomic_store_explicit(&slots.reserve_failed, false, memory_order_relaxed);
	memset((void *)slots.busy, 0, sizeof(slots.busy));
}
