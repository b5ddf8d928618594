/* SPDX-License-Identifier: MIT */
/*
 * shared.h - the counts that cannot go to a slot of the thread's own
 * (shared.c): through the shared slot, or into process memory (`early`),
 * under the shared lock; and those of signal handlers, deferred.
 *
 * Who counts here: threads that found every slot taken or could not get
 * pages for one, threads past their exit, every thread before the
 * segment exists (its counts are folded into the shared slot when it is
 * made), a forking thread (into mstat_proc.forking), and, once the exit
 * has begun, the exiting thread (through the shared slot, in sections
 * the exit's stop bit does not refuse) and every other one (into
 * `early`, which the exiting thread adds in with its next count).
 *
 * A signal handler that counts while its thread holds the shared lock or
 * adds to `forking` cannot wait for itself: its count goes to the
 * thread's ring (mstat_thread.deferred), which the thread counts where it
 * was counting before it lets go.
 */
#ifndef MSTAT_LIB_SHARED_H
#define MSTAT_LIB_SHARED_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/state.h"
#include "lib/writer.h"

/* This thread's id, as the shared lock knows its holder. */
uint32_t mstat_shared_tid(void) MSTAT_HIDDEN;

/* This thread is inside one of the writer's critical sections (holds the
 * shared lock, adds to `forking`): a signal handler of it must not wait
 * for the lock, nor count but deferred. */
bool mstat_shared_must_defer(void) MSTAT_HIDDEN;

void mstat_shared_lock(void) MSTAT_HIDDEN;
/* Lets go of the lock; counts deferred after the holder took them out
 * (a handler between that and this) are counted as any other. */
void mstat_shared_unlock(void) MSTAT_HIDDEN;

/* Where a count without a slot of the thread's own goes. */
enum mstat_shared {
	MSTAT_INTO_SLOT,  /* a section is open on slot 0; the lock held */
	MSTAT_INTO_EXIT,  /* the same, of the exiting thread */
	MSTAT_INTO_EARLY, /* no segment yet: count into `early`; the lock held */
	MSTAT_INTO_LATE,  /* the exit has begun: into `early` too, for the
			   * exiting thread to add in; the lock held */
	MSTAT_INTO_NONE,  /* count nothing; no lock held */
};

/* Takes the lock and opens where this thread's count goes (a section's
 * generation in *g). */
enum mstat_shared mstat_shared_open(unsigned *g) MSTAT_HIDDEN;

/* Ends what mstat_shared_open() began, with the counts this thread's
 * handlers deferred meanwhile.  Whether the segment is due now (start.h,
 * mstat_start_publish()). */
bool mstat_shared_close(enum mstat_shared s, unsigned g) MSTAT_HIDDEN;

/* Ends the exiting thread's section (MSTAT_INTO_EXIT) without
 * letting go of the lock; `done`: the exit has run to its end, and the
 * header says so. */
void mstat_shared_exit_end(bool done) MSTAT_HIDDEN;

/* Under the lock, before the segment exists: this thread's deferred
 * counts into `early`.  Whether the segment is due now. */
bool mstat_shared_take_early(void) MSTAT_HIDDEN;

/* Adds rows kept in process memory where this thread counts. */
void mstat_shared_count_rows(mstat_rows acc) MSTAT_HIDDEN;

/* Counts what this thread's handlers deferred while it held what it has
 * just let go of, wherever it counts now; and any spill. */
void mstat_shared_count_deferred(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_SHARED_H */
