/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the process's side: its segment, its threads' slots, and every
 * count that cannot take the fast path of writer.h.
 *
 * Who writes where:
 *   - a thread with a slot of its own writes it lock-free (writer.h);
 *   - everything else writes the shared slot 0 under `shared_lock`, a
 *     process-local lock readers never take: threads that found every slot
 *     taken or could not get pages for one, threads past their exit, and
 *     (folded in when the segment is made) the counts made before it
 *     existed;
 *   - before the segment exists, counts go to `early`, process memory,
 *     under the same lock.  The segment is made only once the process is
 *     worth watching (see publish_due()): a command that runs for a
 *     millisecond never pays for one;
 *   - while a thread forks, its own counts go to `forking`, process memory
 *     that fork copies, and every other thread's sections are stopped
 *     until the fork is done (see fork_prepare());
 *   - once the process exits, the thread that runs the exit counts on,
 *     to the end, through the shared slot; every other thread counts into
 *     process memory (`early` again), which the exiting thread adds in
 *     with its next count: nothing a thread's death can cut is ever half
 *     in the segment (see retire());
 *   - a signal handler that counts while its thread holds `shared_lock` or
 *     adds to `forking` cannot wait for itself: its count is deferred to
 *     the thread's `deferred` ring, which that thread adds where it was
 *     adding before it lets go (see defer()).
 *
 * Inside a host process: nothing here aborts, and nothing allocates but
 * what glibc does on the library's behalf (pthread_setspecific() on a
 * thread's first count, the reader of itself, the handlers' lists): the
 * library's own blocks, never counted (mstat_own_begin()).
 */
#include "writer.h"
#include "ownlock.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "handshake.h"
#include "mstatshm.h"
#include "owner.h"
#include "reader.h"
#include "report.h"
#include "rows.h"
#include "segment.h"
#include "shared.h"
#include "slots.h"
#include "start.h"
#include "status.h"
#include "stop.h"
#include "sum.h"

/* Dead segments a process may look at when it makes its segment
 * (mstat_reap_some()). */
#define REAP_PROBES 8u
/* How long a fork waits for another thread to make the segment
 * (fork_prepare()): that takes a millisecond or two (loading libunwind). */
#define START_WAIT_NS (1000u * 1000u * 1000u)

#define EXPORT __attribute__((visibility("default")))


static void start(void);

/*
 * `starting` is set under the shared lock, which a fork before the segment
 * holds across fork(): so a fork either sees a start begun, and waits for
 * its end (fork_prepare()), or is over before it begins.  A child never
 * inherits half a segment (its descriptor, its `starting`).
 */
void
mstat_publish(void)
{
	bool go;

	if (!mstat_proc.started || mstat_proc.disabled ||
	    atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) ||
	    /* a signal handler, its thread holding the lock */
	    mstat_shared_must_defer())
		return;
	mstat_shared_lock();
	/* Not once the exit has begun (retire() sets that under this lock):
	 * a segment made then would never be retired. */
	go = !atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) &&
	     !(atomic_load_explicit(&mstat_writer_config.stop, memory_order_relaxed) &
	       MSTAT_STOP_EXIT);
	if (go) {
		atomic_store_explicit(&mstat_proc.starting, true, memory_order_relaxed);
		mstat_proc.starter = mstat_tid();
	}
	mstat_shared_unlock();
	if (go)
		start();
}

void
mstat_publish_wait(void)
{
	mstat_publish();
	uint64_t since = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	/* (W) acquire: pairs with the release in start_end(); what start()
	 * did (the segment, `ready`, `disabled`) is seen. */
	while (atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) &&
	       !atomic_load_explicit(&mstat_proc.start_ended, memory_order_acquire) &&
	       mstat_proc.starter != mstat_tid() &&
	       mstat_clock_ns(CLOCK_MONOTONIC_COARSE) - since < START_WAIT_NS) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
	}
}

/* ---- start-up ---- */

/* Tells mstat-run, if it runs this process: the status, and the segment
 * unless `seg` is NULL (nothing is counted). */
static MSTAT_START_TEXT void
report(const struct mstat_segment *seg)
{
	int fd = -1;

	if (!mstat_proc.report[0] || getpid() != mstat_proc.report_pid ||
	    (seg && (fd = mstat_segment_reopen(seg)) < 0))
		return;
	(void)mstat_report_send(mstat_proc.report, mstat_proc.status, fd);
	if (fd >= 0)
		close(fd);
}

/* The hooks registered (mstat_writer_hooks()), by constructors: every
 * process writes them as it starts. */
#define HOOKS_MAX 4u
static const struct mstat_writer_hooks *hooks[HOOKS_MAX] MSTAT_STARTUP;
static unsigned hooks_n MSTAT_STARTUP;

MSTAT_START_TEXT void
mstat_writer_hooks(const struct mstat_writer_hooks *h)
{
	if (hooks_n < HOOKS_MAX)
		hooks[hooks_n++] = h;
}

/* Runs hook `point` of each registered set, in their order. */
#define RUN_HOOKS(point)                                                     \
	for (unsigned i_ = 0; i_ < hooks_n; i_++)                            \
		if (hooks[i_]->point)                                        \
			hooks[i_]->point()

/* start() has returned, made the segment or not: threads that wait for
 * it go on (mstat_publish_wait(), fork_prepare()). */
static void
start_end(void)
{
	/* (W) release: pairs with the acquire loads of its waiters. */
	atomic_store_explicit(&mstat_proc.start_ended, 1, memory_order_release);
	syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
}

/* Creates the segment, folds `early` into the shared slot, publishes.  The
 * process has one thread, or the others count into `early` meanwhile. */
static void
start(void)
{
	char err[160];
	uint32_t mode = mstat_proc.writer_mode;

	if (mode == MSTAT_MODE_MEMBARRIER &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) < 0) {
		mstat_status_warn("membarrier unavailable, counting in fenced mode",
				  strerror(errno));
		mode = MSTAT_MODE_FENCED;
	}
	/* Whoever starts removes a few segments of processes that are gone. */
	mstat_reap_some(geteuid(), REAP_PROBES);
	/* What the hooks allocate (loading libunwind) is the library's own. */
	mstat_own_begin();
	RUN_HOOKS(segment);
	mstat_own_end();
	/* Made outside shared_lock: creating may allocate (it should not,
	 * but a count from in here must not deadlock), counted as early. */
	struct mstat_segment seg;
	int rc = mstat_segment_create(&seg, mstat_proc.name, mstat_proc.slot_count, mode, err,
				      sizeof(err));
	if (rc < 0) {
		mstat_shared_lock();
		mstat_proc.disabled = true;
		mstat_shared_unlock();
		mstat_status_set((const char *const[]){ "not counting: ", err, NULL });
		mstat_status_log("not counting", err);
		report(NULL);
		start_end();
		return;
	}

	mstat_slots_key();
	mstat_shared_lock();
	/* The exit began while the segment was made: it would never be
	 * retired.  Nobody has seen it (magic is not published). */
	if (atomic_load_explicit(&mstat_writer_config.stop, memory_order_relaxed) &
	    MSTAT_STOP_EXIT) {
		mstat_shared_unlock();
		mstat_segment_discard(&seg);
		start_end();
		return;
	}
	mstat_proc.seg = seg;
	mstat_slots_made();
	atomic_store_explicit(&mstat_writer_config.epoch,
			      mstat_epoch_word(&seg.hdr->epoch), memory_order_relaxed);
	atomic_store_explicit(&mstat_proc.exit_word, mstat_epoch_word(&seg.hdr->epoch),
			      memory_order_relaxed);
	mstat_writer_config.fenced = mode == MSTAT_MODE_FENCED;
	/* A section on a segment no reader can see yet, which nothing can
	 * stop: epoch 0, generation 0. */
	(void)mstat_shared_take_early();
	mstat_proc.early[MSTAT_CLASS_COUNT][MSTAT_T_REQUESTED_BYTES] += mstat_proc.early_requested;
	mstat_proc.early_requested = 0;
	mstat_rows_put(mstat_segment_slot(&seg, MSTAT_SHARED_SLOT), 0, mstat_proc.early);
	memset(mstat_proc.early, 0, sizeof(mstat_proc.early));
	mstat_segment_publish(&seg);
	/* (R) release: pairs with the acquire in mstat_section_open_slow(). */
	atomic_store_explicit(&mstat_proc.ready, 1, memory_order_release);
	mstat_shared_unlock();
	mstat_status_set((const char *const[]){
		"counting into " MSTAT_SHM_DIR "/", seg.shm_name,
		mode == MSTAT_MODE_FENCED ? " (fenced)" : " (membarrier)", NULL });
	report(&mstat_proc.seg);
	start_end();
}

MSTAT_START_TEXT const struct mstat_segment *
mstat_writer_segment(void)
{
	/* (R) acquire: pairs with the release in start(); the segment's
	 * fields are then set. */
	if (!atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) ||
	    atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed))
		return NULL;
	return &mstat_proc.seg;
}

/* ---- fork ---- */

/* Every slot with pages, all generations: the counts so far.  Exact once
 * mstat_stop() has returned true. */
static void
sum_slots(mstat_rows out)
{
	uint32_t n = mstat_slots_reserved();

	for (unsigned g = 0; g < MSTAT_GENS; g++)
		mstat_sum_generation((const unsigned char *)mstat_segment_slot(&mstat_proc.seg, 0),
				     mstat_proc.seg.slot_size, n, MSTAT_CLASS_COUNT, g, out);
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
	mstat_thread.holds_fork_lock = true;
	pthread_mutex_lock(&mstat_proc.fork_lock);
	memset(mstat_proc.forking, 0, sizeof(mstat_proc.forking));
	memset(mstat_proc.inherit, 0, sizeof(mstat_proc.inherit));
	mstat_thread.slot_before_fork = mstat_thread.own;
	mstat_slots_set(NULL);
	mstat_thread.forking = true;
	atomic_signal_fence(memory_order_seq_cst); /* for this thread's handlers */
	/* No segment yet: the counts are `early`, which other threads write
	 * under shared_lock.  Held across the fork, as glibc holds its arena
	 * locks, the child gets a copy no thread was half-way through.  (The
	 * segment cannot be published meanwhile: that takes the lock too.) */
	mstat_shared_lock();
	/* Another thread is making the segment (mstat_publish() set `starting`
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
	       mstat_proc.starter != mstat_tid() &&
	       mstat_clock_ns(CLOCK_MONOTONIC_COARSE) - waited_since < START_WAIT_NS) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		mstat_shared_unlock();
		syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAIT_PRIVATE, 0,
			&ts, NULL, 0);
		mstat_shared_lock();
	}
	if (!atomic_load_explicit(&mstat_proc.ready, memory_order_acquire)) {
		mstat_proc.fork_holds_shared = true;
		return;
	}
	mstat_shared_unlock();
	(void)mstat_stop(MSTAT_STOP_FORK);
	sum_slots(mstat_proc.inherit);
	/* During the exit: what other threads counted since, not added in
	 * yet (exit_section()). */
	mstat_shared_lock();
	if (mstat_proc.late)
		mstat_rows_add(mstat_proc.inherit, mstat_proc.early);
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
	if (mstat_proc.fork_holds_shared) {
		mstat_proc.fork_holds_shared = false;
		mstat_shared_unlock();
	}
	/* Counted once fork_lock is free, where this thread counts (its
	 * slot, the shared one, or `early`, which takes shared_lock). */
	memcpy(copy, *mine, sizeof(copy));
	pthread_mutex_unlock(&mstat_proc.fork_lock);
	mstat_thread.holds_fork_lock = false;
	mstat_count_rows(copy);
	mstat_count_deferred(); /* a spill while it forked */
}

/* The child must not write into its parent's segment (its slots belong to
 * the parent's threads): it makes its own, starting from mstat_proc.inherit and
 * what was counted while forking. */
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
	mstat_proc.fork_holds_shared = false;
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
			atomic_store_explicit(&mstat_proc.start_ended, 1, memory_order_relaxed);
		/* start() will fold `early` */
		(void)mstat_shared_take_early();
		mstat_shared_unlock();
		return;
	}

	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		uint64_t *in = mstat_proc.inherit[c];
		/* The drain makes frees never exceed allocations; kept from
		 * going below zero should a stopped thread have defeated it. */
		if (in[MSTAT_C_ALLOC_COUNT] > in[MSTAT_C_FREE_COUNT])
			mstat_proc.early[c][MSTAT_C_ALLOC_COUNT] +=
				in[MSTAT_C_ALLOC_COUNT] - in[MSTAT_C_FREE_COUNT];
		if (in[MSTAT_C_ALLOC_BYTES] > in[MSTAT_C_FREE_BYTES])
			mstat_proc.early[c][MSTAT_C_ALLOC_BYTES] +=
				in[MSTAT_C_ALLOC_BYTES] - in[MSTAT_C_FREE_BYTES];
	}
	/* What the hooks kept of the parent's segment goes first, then its
	 * descriptor; its owner lock is the parent's and stays held by the
	 * parent's copy. */
	RUN_HOOKS(fork_child);
	mstat_segment_forget(&mstat_proc.seg);
	mstat_slots_fork_child();
	/* A segment of its own when it is worth one, as for any process: a
	 * shell's child that exec()s at once never makes one. */
	mstat_proc.born_ns = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	mstat_proc.early_counts = mstat_proc.early_bytes = 0;
	mstat_proc.early_threads = 0;
	mstat_thread.counted_early = false;
	atomic_store_explicit(&mstat_proc.starting, false, memory_order_relaxed);
	atomic_store_explicit(&mstat_proc.start_ended, 0, memory_order_relaxed);
	(void)mstat_shared_take_early();
	mstat_shared_unlock();
	if (mstat_proc.eager)
		mstat_publish();
}

/* ---- exit ---- */

/*
 * Every way out that runs code of ours: exit() and a return from main
 * (atexit; for the library, its own destructor), quick_exit()
 * (at_quick_exit), _exit() and _Exit() (defined below).
 *
 * The thread that calls it runs the rest of the exit: the atexit
 * handlers after ours, every library's destructors (one that is
 * finalised after this library frees what its constructor allocated),
 * and finally exit_group(), which kills every other thread wherever it
 * is.  So the totals can be final and whole only if no other thread is
 * inside an update when that comes, and complete only if this one counts
 * to the end.  retire() stops every other thread's sections, waits for
 * those in flight (exit_cut: how many it could not wait for), marks the
 * segment EXITING and unlinks its name.  From then on:
 *
 *   - this thread counts on, through the shared slot, under shared_lock
 *     (exit_section()): each of its updates is whole when it calls
 *     exit_group(), for it makes none after its last;
 *   - every other thread counts into process memory (`early`), under
 *     the same lock, where no death can leave half an update in the
 *     segment; this thread adds those counts in with its next count.
 *     What they count after its last count is lost;
 *   - finish(), at the very end, adds in what is left and says DONE.
 *
 * A reader that finds the owner gone reads the final totals (shm/
 * reader.c): exited if DONE; killed if not (a signal during the exit),
 * with one update more cut if BUSY.  A process that dies by a signal
 * before its exit runs none of this: its owner lock goes with it, and
 * the next process that starts, or an observer, removes the segment.  A
 * process that exits before it made its segment counts on in process
 * memory, and makes none.
 */
static MSTAT_START_TEXT void
retire(void)
{
	bool mine, first = false, ready = false;

	if (!mstat_proc.started || mstat_proc.disabled ||
	    getpid() != mstat_proc.pid || /* a vfork child, sharing our memory */
	    atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed))
		return;
	/* A fork of another thread ends first: its parent handler would let
	 * the sections go again.  Not this thread's own (a signal handler
	 * inside it exits): it never gets back there. */
	if (!mstat_thread.holds_fork_lock)
		pthread_mutex_lock(&mstat_proc.fork_lock);
	/* Under shared_lock: a thread that begins a section of the shared
	 * slot after this sees the exit first (mstat_shared_open()), and so does
	 * a start (mstat_publish(), start()).  Not if this is a signal handler of
	 * the holder: it never gets back there either. */
	mine = mstat_ownlock_mine(&mstat_proc.shared_lock, mstat_tid());
	if (!mine)
		mstat_ownlock_lock(&mstat_proc.shared_lock, mstat_tid());
	if (!atomic_exchange_explicit(&mstat_proc.retired, true, memory_order_relaxed)) {
		first = true;
		atomic_fetch_or_explicit(&mstat_writer_config.stop, MSTAT_STOP_EXIT,
					 memory_order_relaxed);
		mstat_thread.exiting = true;
		ready = atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed);
	}
	if (!mine)
		mstat_ownlock_unlock(&mstat_proc.shared_lock);
	if (first && ready)
		mstat_segment_retire(&mstat_proc.seg, mstat_stop(MSTAT_STOP_EXIT));
	if (!mstat_thread.holds_fork_lock)
		pthread_mutex_unlock(&mstat_proc.fork_lock);
}

/*
 * The end of the exit: exit_group() comes next.  A last section of the
 * exiting thread adds in what other threads counted since its last
 * count, and says DONE.  Called by another thread (its _exit() while the
 * exiting thread runs destructors), it becomes the exiting thread, and
 * keeps shared_lock: the other one begins no update of which exit_group()
 * could cut half.
 */
static MSTAT_START_TEXT void
finish(void)
{
	unsigned g;

	if (getpid() != mstat_proc.pid ||
	    !atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed) ||
	    !atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) ||
	    /* A signal handler of the holder: the update it cut stays BUSY. */
	    mstat_ownlock_mine(&mstat_proc.shared_lock, mstat_tid()))
		return;
	bool last = !mstat_thread.exiting;
	mstat_thread.exiting = true;
	if (mstat_shared_open(&g) != MSTAT_INTO_EXIT)
		return;
	mstat_segment_ended(&mstat_proc.seg);
	mstat_shared_exit_end(true);
	if (!last)
		mstat_shared_unlock();
}

/* _exit() and _Exit(): the library's exit path, then the next _exit
 * (glibc's, or a tool's: valgrind's own interception of it is what keeps
 * a fork child from reporting its parent's threads as leaks).
 * Async-signal-safe, as _exit must be: nothing here allocates, the next
 * _exit was looked up at start, and no lock is waited for that this
 * thread holds. */
static MSTAT_START_TEXT __attribute__((noreturn)) void
exit_now(int status)
{
	retire();
	finish();
	if (mstat_proc.next_exit)
		mstat_proc.next_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

MSTAT_START_TEXT EXPORT void
_exit(int status)
{
	exit_now(status);
}

MSTAT_START_TEXT EXPORT void
_Exit(int status)
{
	exit_now(status);
}

/*
 * The fork handlers and retire() at exit and quick_exit.  With glibc,
 * through the functions libc.so itself exports: pthread_atfork(),
 * atexit() and at_quick_exit() are stubs that libc_nonshared.a links
 * into the library, at the end of its code, far from the rest of what a
 * start runs (MSTAT_START_TEXT), and they only call these.
 */
#ifdef __GLIBC__
extern void *__dso_handle;
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void),
			     void *);
extern int __cxa_atexit(void (*)(void *), void *, void *);
extern int __cxa_at_quick_exit(void (*)(void *), void *);

static MSTAT_START_TEXT void
retire_at(void *unused)
{
	(void)unused;
	retire();
}

static MSTAT_START_TEXT void
finish_at(void *unused)
{
	(void)unused;
	retire();
	finish();
}

/*
 * retire() runs with this library's destructor (its handler is this
 * object's: __cxa_finalize() runs it there, in _dl_fini()), after the
 * handlers registered since the program started and before the
 * destructors of the objects finalised after it.  finish() runs last:
 * registered with no object, before the program's entry point
 * registered _dl_fini() (this constructor runs from the loader, before
 * it), it comes after every destructor.  quick_exit() runs no
 * destructors: both at once.
 */
static MSTAT_START_TEXT void
on_fork_and_exit(void)
{
	__register_atfork(fork_prepare, fork_parent, fork_child, __dso_handle);
	__cxa_atexit(finish_at, NULL, NULL);
	__cxa_atexit(retire_at, NULL, __dso_handle);
	__cxa_at_quick_exit(finish_at, __dso_handle);
}
#else
static void
finish_now(void)
{
	retire();
	finish();
}

static void
on_fork_and_exit(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(finish_now);
	atexit(retire);
	at_quick_exit(finish_now);
}
#endif

__attribute__((constructor)) static MSTAT_START_TEXT void
mstat_writer_start(void)
{
	const char *e;

	mstat_proc.pid = getpid();
	mstat_proc.born_ns = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	e = mstat_config_text(MSTAT_CONF_NAME);
	mstat_join(mstat_proc.name, sizeof(mstat_proc.name), (const char *const[]){
		e ? e : program_invocation_short_name, NULL });
	if ((e = mstat_config_text(MSTAT_CONF_LOG)))
		mstat_join(mstat_proc.log, sizeof(mstat_proc.log), (const char *const[]){ e, NULL });
	/* Set by mstat-run for the command it runs (shm/report.h): that
	 * process sends its segment as it makes it, at once, or says why
	 * there is none. */
	if ((e = mstat_config_text(MSTAT_CONF_REPORT))) {
		mstat_join(mstat_proc.report, sizeof(mstat_proc.report),
			   (const char *const[]){ e, NULL });
		mstat_proc.report_pid = (pid_t)mstat_config_number(MSTAT_CONF_REPORT_PID);
	}
	if (mstat_config_number(MSTAT_CONF_DISABLE)) {
		mstat_proc.disabled = true;
		mstat_status_set((const char *const[]){ "disabled by MSTAT_DISABLE", NULL });
		report(NULL);
		return;
	}
	mstat_proc.eager = mstat_config_number(MSTAT_CONF_EAGER) ||
			   (mstat_proc.report[0] && mstat_proc.report_pid == getpid());
	RUN_HOOKS(start);
	mstat_proc.slot_count = (uint32_t)mstat_config_number(MSTAT_CONF_SLOTS);
	mstat_proc.writer_mode = (uint32_t)mstat_config_number(MSTAT_CONF_MODE);
	if (mstat_proc.writer_mode == MSTAT_MODE_MEMBARRIER)
		mstat_stop_start();
	/* Handlers may take glibc a block to keep: the library's own. */
	mstat_own_begin();
	*(void **)&mstat_proc.next_exit = dlsym(RTLD_NEXT, "_exit");
	on_fork_and_exit();
	mstat_own_end();
	mstat_status_set((const char *const[]){
		"counting in process memory; the segment is made once the "
		"process is worth watching", NULL });
	mstat_proc.started = true;
	if (mstat_proc.eager)
		mstat_publish();
}

/* ---- the public API ---- */

void
mstat_record_alloc(size_t size, size_t requested)
{
	mstat_count(MSTAT_OP_ALLOC, 0, size, requested);
}

void
mstat_record_free(size_t size)
{
	mstat_count(MSTAT_OP_FREE, size, 0, 0);
}

void
mstat_record_realloc(size_t old_size, size_t new_size, size_t requested)
{
	mstat_count(MSTAT_OP_REALLOC, old_size, new_size, requested);
}

/* Asking about itself is a reason to be seen: the segment is made now. */
int
mstat_self_enabled(void)
{
	mstat_publish_wait();
	return atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) &&
	       !mstat_proc.disabled;
}

const char *
mstat_self_status(void)
{
	return mstat_proc.started || mstat_proc.disabled ? mstat_proc.status : "not started";
}

/*
 * Without a segment (none yet, or none any more to be made: the exit has
 * begun), the counts are in process memory: a snapshot of them, taken
 * under the lock that guards them, is as exact as a read of the segment.
 * 1 if the segment exists, to be read instead.
 */
static int
snapshot_early(struct mstat_snapshot *out)
{
	if (mstat_shared_must_defer())
		return -EAGAIN; /* a signal handler inside our critical section */
	mstat_shared_lock();
	if (atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed)) {
		mstat_shared_unlock();
		return 1;
	}
	(void)mstat_shared_take_early();
	memset(out, 0, offsetof(struct mstat_snapshot, class_max_size));
	out->state = atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed)
			     ? MSTAT_EXITING
			     : MSTAT_RUNNING;
	out->class_count = MSTAT_CLASS_COUNT;
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		out->class_max_size[c] = mstat_class_max_size(c);
	mstat_sum_counts(out, (const uint64_t (*)[MSTAT_ROW_COUNTERS])mstat_proc.early,
			 MSTAT_CLASS_COUNT);
	out->requested_bytes += mstat_proc.early_requested;
	mstat_shared_unlock();
	return 0;
}

int
mstat_self_snapshot(struct mstat_snapshot *out)
{
	int rc = 0;

	mstat_publish_wait(); /* asking is a reason to be seen */
	if (mstat_proc.disabled)
		return -ENODEV;
	if ((rc = snapshot_early(out)) <= 0)
		return rc;
	rc = 0;
	if (mstat_thread.exiting && !mstat_shared_must_defer()) {
		/* What other threads counted since the exit began, in. */
		unsigned g;
		(void)mstat_shared_close(mstat_shared_open(&g), g);
	}
	pthread_mutex_lock(&mstat_proc.self_lock);
	if (!mstat_proc.self_reader) {
		/* The reader is the library's own block.  Once the exit has
		 * unlinked the name, a file of its own through /proc (the
		 * owner lock is the open file's: not seg.fd's). */
		mstat_own_begin();
		rc = mstat_reader_open_name(&mstat_proc.self_reader, mstat_proc.seg.shm_name,
					    NULL, 0);
		if (rc == -ENOENT) {
			char path[40] = "/proc/self/fd/";
			mstat_utoa(path + strlen(path), (uint64_t)mstat_proc.seg.fd);
			int fd = open(path, O_RDWR | O_CLOEXEC);
			rc = fd < 0 ? -errno
				    : mstat_reader_open_fd(&mstat_proc.self_reader, fd,
							   mstat_proc.seg.shm_name, NULL, 0);
		}
		mstat_own_end();
	}
	if (rc == 0)
		rc = mstat_reader_snapshot(mstat_proc.self_reader, out);
	pthread_mutex_unlock(&mstat_proc.self_lock);
	return rc;
}
