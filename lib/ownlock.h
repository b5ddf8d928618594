/* SPDX-License-Identifier: MIT */
/*
 * ownlock.h - a mutex that knows which thread holds it.
 *
 * A signal handler that counts must never wait for a lock its own thread
 * holds: it would wait forever.  With a pthread mutex it cannot tell; this
 * lock's word is its holder's thread id, set by the very instruction that
 * takes it, so a handler asks mstat_ownlock_mine() and does something else
 * (lib/shared.c defers its count).  No window lies between taking the lock
 * and being known to hold it, nor between letting it go and not.
 *
 * The word is 0 when free, else the holder's tid, with MSTAT_OWNLOCK_WAITERS
 * set once a thread sleeps on it (a futex, as in "Futexes Are Tricky",
 * mutex 2).  Nothing here allocates; all of it is async-signal-safe.
 */
#ifndef MSTAT_LIB_OWNLOCK_H
#define MSTAT_LIB_OWNLOCK_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MSTAT_OWNLOCK_WAITERS 0x80000000u /* tids are below 2^22 */

struct mstat_ownlock {
	_Atomic uint32_t word;
};

static inline void
mstat_ownlock_init(struct mstat_ownlock *l)
{
	atomic_store_explicit(&l->word, 0, memory_order_relaxed);
}

static inline bool
mstat_ownlock_mine(struct mstat_ownlock *l, uint32_t tid)
{
	/* Relaxed: only this thread stores its own tid there, and a signal
	 * handler runs on the thread it interrupts. */
	return (atomic_load_explicit(&l->word, memory_order_relaxed) &
		~MSTAT_OWNLOCK_WAITERS) == tid;
}

static inline void
mstat_ownlock_lock(struct mstat_ownlock *l, uint32_t tid)
{
	uint32_t w = 0;

	/* Acquire: pairs with the release in mstat_ownlock_unlock(). */
	if (atomic_compare_exchange_strong_explicit(&l->word, &w, tid,
						    memory_order_acquire,
						    memory_order_relaxed))
		return;
	for (;;) {
		/* Taken: say a thread sleeps on it, and sleep while it is
		 * still taken with that said. */
		if (w != 0 && !(w & MSTAT_OWNLOCK_WAITERS) &&
		    !atomic_compare_exchange_strong_explicit(
			    &l->word, &w, w | MSTAT_OWNLOCK_WAITERS,
			    memory_order_relaxed, memory_order_relaxed))
			continue;
		if (w != 0)
			syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE,
				w | MSTAT_OWNLOCK_WAITERS, NULL, NULL, 0);
		/* Taken with the waiters bit: another sleeper may remain,
		 * and the next unlock must wake it. */
		w = 0;
		if (atomic_compare_exchange_strong_explicit(
			    &l->word, &w, tid | MSTAT_OWNLOCK_WAITERS,
			    memory_order_acquire, memory_order_relaxed))
			return;
	}
}

static inline void
mstat_ownlock_unlock(struct mstat_ownlock *l)
{
	/* Release: pairs with the acquire of the next holder. */
	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) &
	    MSTAT_OWNLOCK_WAITERS)
		syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif /* MSTAT_LIB_OWNLOCK_H */
