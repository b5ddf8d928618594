/* SPDX-License-Identifier: MIT */
/* stop.c - stopping and draining every section; see stop.h. */
#include "lib/stop.h"

#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/handshake.h"
#include "shm/section.h"
#include "lib/slots.h"

/* How long a fork or the exit waits for a thread to leave its section
 * (it is inside malloc or free: microseconds, unless it is stopped). */
#define DRAIN_BUDGET_US 50000u

/* Registered for the private membarrier (every process, at start). */
static bool private_barrier MSTAT_STARTUP;
/* Bumped as a fork ends; stopped sections sleep on it (a futex, which a
 * signal handler may wait on: no lock is held). */
static _Atomic uint32_t forks_ended;

/*
 * Registers the process for both membarrier commands it uses: the global
 * one, which readers issue (start() registers again, and falls back to
 * fenced mode if it cannot), and the private one, which
 * barrier_threads() issues.
 * Here, at start, because the process most likely has one thread: the
 * kernel then only marks it.  Registered once a second thread runs, it
 * waits out an RCU grace period first (synchronize_rcu(); 12.6 ms on the
 * machine of docs/performance.md), paid by a process that makes its
 * segment on its second thread, then again by the first fork or the exit
 * of one with threads alive.  Failure is silent here: start() says it,
 * if the process ever makes a segment.
 */
MSTAT_START_TEXT void
mstat_stop_start(void)
{
	(void)syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0);
	private_barrier = syscall(SYS_membarrier,
		MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

bool
mstat_stop_wait(void)
{
	/* Acquire, before `stop`: pairs with the release increment in
	 * mstat_stop_fork_end(), after it cleared the bit.  Seen unchanged,
	 * the futex sleeps only while it still is. */
	uint32_t ended = atomic_load_explicit(&forks_ended, memory_order_acquire);
	unsigned char s = atomic_load_explicit(&mstat_writer_config.stop,
					       memory_order_relaxed);

	if (s & MSTAT_STOP_FORK) {
		syscall(SYS_futex, &forks_ended, FUTEX_WAIT_PRIVATE, ended, NULL,
			NULL, 0);
		return true;
	}
	return !(s & MSTAT_STOP_EXIT);
}

/* (M') a full barrier on every CPU running a thread of this process. */
static void
barrier_threads(void)
{
	if (!private_barrier)
		private_barrier = syscall(SYS_membarrier,
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	if (private_barrier &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	/* Membarrier mode registered the process for this one at start. */
	(void)syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
}

uint32_t
mstat_stop(unsigned char bit)
{
	struct mstat_handshake hs;

	/* Why, for mstat_stop_wait(): before the bit that sends sections
	 * there (a section that saw the bit and not yet this retries). */
	atomic_fetch_or_explicit(&mstat_writer_config.stop, bit,
				 memory_order_relaxed);
	/* (V) seq_cst RMW: pairs with the writers' (V) loads after (A);
	 * Dekker with the (E) loads of the handshake, as (D) with (B). */
	atomic_fetch_or_explicit(&mstat_writer_config.epoch, MSTAT_EPOCH_STOPPED,
				 memory_order_seq_cst);
	/* A fork stops the exiting thread's sections too: (V) again, on its
	 * word (exit.c). */
	if (bit == MSTAT_STOP_FORK)
		atomic_fetch_or_explicit(&mstat_proc.exit_word, MSTAT_EPOCH_STOPPED,
					 memory_order_seq_cst);
	if (__libc_single_threaded)
		return 0; /* no other thread has ever run */
	if (!mstat_writer_config.fenced)
		barrier_threads(); /* (M') pairs with the compiler barrier
				    * between (A') and (V') */
	mstat_handshake_start(&hs,
			      (const unsigned char *)mstat_segment_slot(&mstat_proc.seg, 0),
			      mstat_proc.seg.slot_size, mstat_slots_reserved());
	/* The budget is this thread's CPU time: on a loaded CPU a section's
	 * thread can wait many time slices to run again, and the wait must
	 * last until it has (a copy or a sum taken before would hold half
	 * of its update); one that cannot run ends the wait all the same. */
	return mstat_handshake_wait(&hs, DRAIN_BUDGET_US, CLOCK_THREAD_CPUTIME_ID)
		       ? 0 : mstat_handshake_pending(&hs);
}

void
mstat_stop_fork_end(void)
{
	unsigned char stop = atomic_fetch_and_explicit(&mstat_writer_config.stop,
				  (unsigned char)~MSTAT_STOP_FORK, memory_order_relaxed);

	/* The bit set in mstat_stop(); sections run again from here, but for
	 * the exit's stop (a fork made during the exit: retire() holds
	 * fork_lock as it sets it, so it cannot come in between). */
	if (!(stop & MSTAT_STOP_EXIT))
		atomic_fetch_and_explicit(&mstat_writer_config.epoch,
					  ~MSTAT_EPOCH_STOPPED, memory_order_relaxed);
	atomic_fetch_and_explicit(&mstat_proc.exit_word, ~MSTAT_EPOCH_STOPPED,
				  memory_order_relaxed);
	/* Release, after the bit is cleared: pairs with the acquire in
	 * mstat_stop_wait(), whose sleepers are woken to find it so. */
	atomic_fetch_add_explicit(&forks_ended, 1, memory_order_release);
	syscall(SYS_futex, &forks_ended, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void
mstat_stop_fork_child(void)
{
	atomic_store_explicit(&mstat_writer_config.stop, 0, memory_order_relaxed);
	atomic_fetch_and_explicit(&mstat_writer_config.epoch, ~MSTAT_EPOCH_STOPPED,
				  memory_order_relaxed);
	atomic_fetch_and_explicit(&mstat_proc.exit_word, ~MSTAT_EPOCH_STOPPED,
				  memory_order_relaxed);
}
