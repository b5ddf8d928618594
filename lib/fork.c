/* SPDX-License-Identifier: MIT */
/*
 * fork.c - across fork(), the child gets its own segment, starting from
 * the heap it inherits: per class, the parent's live objects and bytes,
 * as allocations.  See fork.h.
 */
#include "lib/fork.h"

#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "lib/exec.h"
#include "shm/reader.h"
#include "lib/rows.h"
#include "lib/shared.h"
#include "lib/slots.h"
#include "lib/start.h"
#include "lib/stop.h"
#include "shm/sum.h"

/* A fork before the segment existed holds the shared lock across it
 * (fork_prepare() to fork_parent() or fork_child()). */
static bool holds_shared;
/* Every slot, summed once sections stopped: the heap the child inherits. */
static mstat_rows inherit;

/* ---- fork ---- */

/* Every slot with pages, all generations: the counts so far.  Exact once
 * mstat_stop() has returned true. */
static void
sum_slots(mstat_rows out)
{
	uint32_t n = mstat_slots_reserved();

	mstat_sum_generations((const unsigned char *)
				      mstat_segment_slot(&mstat_proc.seg, 0),
			      mstat_proc.seg.slot_size, n, MSTAT_CLASS_COUNT,
			      MSTAT_GENS_ALL, out);
}

/*
 * Across fork(), the child gets its own segment, starting from the heap it
 * inherits: per class, the parent's live objects and bytes, as
 * allocations.  For that sum to be the heap the child gets, no count may
 * be in flight when it is taken, nor start before the copy:
 *
 *   - the prepare handler sets MSTAT_STOP_FORK and drains: every section
 *     open then (a malloc or free on its way, the allocator's call
 *     included) ends, and every later one is refused before it calls the
 *     allocator and waits on fork_lock, which this thread holds until its
 *     parent handler.  glibc takes its arena locks after the prepare
 *     handlers, so no allocation can happen uncounted before the copy;
 *   - then it sums every slot into `inherit`, process memory the child
 *     gets a copy of.
 *
 * The forking thread itself counts into `forking` from here to its parent
 * or child handler: handlers of other libraries may allocate on either
 * side of the fork, and in the child those registered before ours run
 * while the thread's slot pointer still points into the parent's
 * segment, which the child shares.  Writing there would make two writers
 * of one slot.
 */
static void
fork_prepare(void)
{
	/* Before the child exists: its exec() needs no loader. */
	mstat_exec_resolve();
	mstat_thread.holds_fork_lock = true;
	pthread_mutex_lock(&mstat_proc.fork_lock);
	memset(mstat_proc.forking, 0, sizeof(mstat_proc.forking));
	memset(inherit, 0, sizeof(inherit));
	mstat_thread.slot_before_fork = mstat_thread.own;
	mstat_slots_set(NULL);
	mstat_thread.forking = true;
	atomic_signal_fence(memory_order_seq_cst); /* for this thread's handlers */
	/* No segment yet: the counts are `early`, which other threads write
	 * under shared_lock.  Held across the fork, as glibc holds its arena
	 * locks, the child gets a copy no thread was half-way through.  (The
	 * segment cannot be published meanwhile: that takes the lock too.) */
	mstat_shared_lock();
	/* Another thread is making the segment (mstat_start_publish() set `starting`
	 * under this lock): fork once it is made.  A child of a fork in the
	 * middle would hold the parent's new segment open, its owner lock
	 * with it, and never make one of its own.  For START_WAIT_NS at
	 * most: the maker may wait for something this thread holds (the
	 * loader's lock, when a library's constructor forks while the
	 * segment's making loads libunwind); fork_child() copes. */
	uint64_t waited_since = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	while (!atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed) &&
	       atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) &&
	       /* (W) relaxed: under shared_lock, which start() holds as it
		* publishes or gives up; the acquire of `ready` below. */
	       !atomic_load_explicit(&mstat_proc.start_ended, memory_order_relaxed) &&
	       mstat_proc.starter != mstat_shared_tid() &&
	       mstat_clock_ns(CLOCK_MONOTONIC_COARSE) - waited_since < START_WAIT_NS) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		mstat_shared_unlock();
		syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAIT_PRIVATE, 0,
			&ts, NULL, 0);
		mstat_shared_lock();
	}
	if (!atomic_load_explicit(&mstat_proc.ready, memory_order_acquire)) {
		holds_shared = true;
		return;
	}
	mstat_shared_unlock();
	(void)mstat_stop(MSTAT_STOP_FORK);
	sum_slots(inherit);
	/* During the exit: what other threads counted since, not added in
	 * yet (exit_section()). */
	mstat_shared_lock();
	if (mstat_proc.late)
		mstat_rows_add(inherit, mstat_proc.early);
	mstat_shared_unlock();
}

static void
fork_parent(void)
{
	mstat_rows *mine = &mstat_proc.forking;
	mstat_rows copy;

	mstat_stop_fork_end();
	mstat_thread.forking = false;
	/* A handler's count into `forking` is before the copy below. */
	atomic_signal_fence(memory_order_seq_cst);
	mstat_slots_set(mstat_thread.slot_before_fork);
	if (holds_shared) {
		holds_shared = false;
		mstat_shared_unlock();
	}
	/* Counted once fork_lock is free, where this thread counts (its
	 * slot, the shared one, or `early`, which takes shared_lock). */
	memcpy(copy, *mine, sizeof(copy));
	pthread_mutex_unlock(&mstat_proc.fork_lock);
	mstat_thread.holds_fork_lock = false;
	mstat_shared_count_rows(copy);
	mstat_shared_count_deferred(); /* a spill while it forked */
}

/* The child must not write into its parent's segment (its slots belong to
 * the parent's threads): it makes its own, starting from `inherit` and what
 * was counted while forking. */
static void
fork_child(void)
{
	bool was_ready = atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed);

	/* Whoever held these in the parent does not exist here; this thread
	 * has an id of its own.  Until mstat_thread.forking is cleared below, a
	 * signal handler here counts into `forking`, taking no lock. */
	mstat_ownlock_init(&mstat_proc.shared_lock);
	mstat_thread.tid = (uint32_t)gettid();
	/* Not pthread_mutex_init(): the parent never calls it, and its lazy
	 * binding would be done again in every child (a symbol lookup and
	 * five page faults a fork). */
	mstat_proc.fork_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	mstat_thread.holds_fork_lock = false;
	mstat_proc.self_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	mstat_proc.pid = getpid();
	/* Random numbers of its own too: parent and child, running the same
	 * code from here, would otherwise sample the very same allocations.
	 * Seeded afresh at its next draw (profile.c, seed(), with the pid);
	 * the countdown running stays, still an exponential draw of its
	 * mean whatever came before (countdown.h): the allocation that ends
	 * it is the one both may sample, and no later one. */
	mstat_thread.countdown.rng = 0;
	/* Held while `early` is made: a handler's count meanwhile is
	 * deferred, and taken into it below. */
	mstat_shared_lock();
	/* From here until start(), counts go to `early`, never to the
	 * parent's segment. */
	atomic_store_explicit(&mstat_proc.ready, 0, memory_order_relaxed);
	mstat_stop_fork_child();
	/* A child of a fork made during the exit is a process of its own,
	 * not exiting.  What the parent's other threads counted since is in
	 * `inherit` (fork_prepare()). */
	mstat_thread.exiting = false;
	atomic_store_explicit(&mstat_proc.retired, false, memory_order_relaxed);
	/* Nor exec()ing, if another thread of the parent was. */
	atomic_store_explicit(&mstat_proc.execing, false, memory_order_relaxed);
	if (was_ready) {
		memset(mstat_proc.early, 0, sizeof(mstat_proc.early));
		mstat_proc.early_requested = 0;
	}
	mstat_proc.late = false;
	mstat_proc.exit_flags = 0;
	mstat_thread.forking = false;
	atomic_signal_fence(memory_order_seq_cst);
	mstat_thread.state = MSTAT_THREAD_NEW;
	mstat_slots_set(NULL);
	holds_shared = false;
	/* The parent's reader of itself: drop the copies of its mapping and
	 * fd, keep its memory (inherited heap, still reachable from here). */
	if (mstat_proc.self_reader) {
		mstat_reader_unmap(mstat_proc.self_reader);
		mstat_proc.parent_reader = mstat_proc.self_reader;
		mstat_proc.self_reader = NULL;
	}
	if (mstat_proc.disabled) {
		mstat_shared_unlock();
		return;
	}
	mstat_rows_add(mstat_proc.early, mstat_proc.forking);
	if (!was_ready) {
		/* A fork in the middle of start() (from inside it, a signal
		 * handler of the thread making the segment; or a fork that
		 * waited for it in vain, fork_prepare()): that start goes on
		 * in the parent alone.  This child counts in process memory
		 * for good, and waits for no start. */
		if (atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed))
			atomic_store_explicit(&mstat_proc.start_ended, 1,
					      memory_order_relaxed);
		/* start() will fold `early` */
		(void)mstat_shared_take_early();
		mstat_shared_unlock();
		return;
	}

	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		uint64_t *in = inherit[c];
		/* The drain makes frees never exceed allocations; kept from
		 * going below zero should a stopped thread have defeated it. */
		if (in[MSTAT_C_ALLOC_COUNT] > in[MSTAT_C_FREE_COUNT])
			mstat_proc.early[c][MSTAT_C_ALLOC_COUNT] +=
				in[MSTAT_C_ALLOC_COUNT] - in[MSTAT_C_FREE_COUNT];
		if (in[MSTAT_C_ALLOC_BYTES] > in[MSTAT_C_FREE_BYTES])
			mstat_proc.early[c][MSTAT_C_ALLOC_BYTES] +=
				in[MSTAT_C_ALLOC_BYTES] - in[MSTAT_C_FREE_BYTES];
	}
	/* What the start's hooks kept of the parent's segment goes first,
	 * then its descriptor (its owner lock is the parent's, and stays
	 * held by the parent's copy); its mapping stays until this child
	 * makes a segment of its own (start.c), which one that exec()s at
	 * once never does. */
	mstat_start_fork_child();
	mstat_segment_let_go(&mstat_proc.seg, &mstat_proc.inherited);
	mstat_slots_fork_child();
	/* A segment of its own when it is worth one, as for any process: a
	 * shell's child that exec()s at once never makes one, and costs
	 * what a plain fork costs.  With MSTAT_EAGER, at once; an exec()
	 * then marks it EXECED (exec.c), whatever the new image does. */
	mstat_proc.born_ns = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	mstat_proc.early_counts = mstat_proc.early_bytes = 0;
	mstat_proc.early_threads = 0;
	mstat_thread.counted_early = false;
	(void)mstat_shared_take_early();
	mstat_shared_unlock();
	if (mstat_proc.eager)
		mstat_start_publish();
}

#ifdef __GLIBC__
extern void *__dso_handle;
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void),
			     void *);

/* Through the function libc.so itself exports: pthread_atfork() is a stub
 * that libc_nonshared.a links into the library, at the end of its code,
 * far from the rest of what a start runs (MSTAT_START_TEXT). */
MSTAT_START_TEXT void
mstat_fork_handlers(void)
{
	__register_atfork(fork_prepare, fork_parent, fork_child, __dso_handle);
}
#else
void
mstat_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
#endif
