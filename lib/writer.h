/* SPDX-License-Identifier: MIT */
/*
 * writer.h - counting an allocation, for the interposer and the public API.
 *
 * The fast path, inline: a thread with a slot of its own opens an update
 * section on it (shm/section.h), adds, and closes it.  The interposer
 * opens the section before it calls the next allocator and closes it
 * after, so that the allocator's work and its count are one update: a
 * fork or the exit, which drain every open section before they read the
 * counts, never find a block allocated and not yet counted.
 *
 * Every other case goes out of line: a thread's first count (it claims a
 * slot: slots.c), a fork in progress (it waits: stop.c), a section inside
 * a section of the same thread (a signal handler), and the counts that
 * cannot go to a slot of their own (mstat_shared_count_unslotted(): shared.c).
 *
 * Who writes where:
 *   - a thread with a slot of its own writes it lock-free (here);
 *   - everything else writes the shared slot 0 under the shared lock, a
 *     process-local lock readers never take: threads that found every
 *     slot taken or could not get pages for one, threads past their
 *     exit, and (folded in when the segment is made) the counts made
 *     before it existed (shared.c);
 *   - before the segment exists, counts go to `early`, process memory,
 *     under the same lock.  The segment is made only once the process is
 *     worth watching (start.c): a command that runs for a millisecond
 *     never pays for one;
 *   - while a thread forks, its own counts go to `forking`, process
 *     memory that fork copies, and every other thread's sections are
 *     stopped until the fork is done (fork.c);
 *   - once the process exits, the thread that runs the exit counts on,
 *     to the end, through the shared slot; every other thread counts
 *     into process memory (`early` again), which the exiting thread adds
 *     in with its next count: nothing a thread's death can cut is ever
 *     half in the segment (exit.c);
 *   - a signal handler that counts while its thread holds the shared
 *     lock or adds to `forking` cannot wait for itself: its count is
 *     deferred to the thread's ring, which that thread adds where it was
 *     adding before it lets go (shared.c).
 *
 * Inside a host process: nothing of the writer aborts, and nothing
 * allocates but what glibc does on the library's behalf
 * (pthread_setspecific() on a thread's first count, the reader of
 * itself, the handlers' lists): the library's own blocks, never counted
 * (mstat_own_begin()).
 */
#ifndef MSTAT_LIB_WRITER_H
#define MSTAT_LIB_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/countdown.h"
#include "shm/layout.h"
#include "shm/section.h"
#include "shm/sizeclass.h"
#include "lib/state.h"

/* The fast path must inline into each caller, so `op` is a constant. */
#define MSTAT_INLINE static inline __attribute__((always_inline))

enum mstat_op {
	MSTAT_OP_ALLOC,
	MSTAT_OP_FREE,
	MSTAT_OP_REALLOC, /* a free and an alloc in one section */
	/* In an attached process only (attach.h): the free of a block made
	 * before the attach, counted in the prior row; its realloc, the old
	 * block there and the new one as an allocation, in one section. */
	MSTAT_OP_PRIOR_FREE,
	MSTAT_OP_PRIOR_REALLOC,
};

/* Whether `op` counts a free in a class row; an allocation. */
MSTAT_INLINE bool
mstat_op_frees(enum mstat_op op)
{
	return op == MSTAT_OP_FREE || op == MSTAT_OP_REALLOC;
}

MSTAT_INLINE bool
mstat_op_allocs(enum mstat_op op)
{
	return op == MSTAT_OP_ALLOC || op == MSTAT_OP_REALLOC ||
	       op == MSTAT_OP_PRIOR_REALLOC;
}

/* An open update section. */
struct mstat_segment;

struct mstat_section {
	struct mstat_shm_slot *slot;
	unsigned g; /* the generation it writes to */
};

/* The cases the inline open does not handle; see the top of this file. */
bool mstat_slots_open_slow(struct mstat_section *sec) MSTAT_HIDDEN;

/* Counts without a section of the thread's own: the shared slot, the
 * counts before the segment exists, a forking thread's; once the process
 * exits, the exiting thread's (through the shared slot) and the other
 * threads' (into process memory, until it adds them in). */
void mstat_shared_count_unslotted(enum mstat_op op, uint64_t freed, uint64_t size,
				  uint64_t requested) MSTAT_HIDDEN;

/* The interposer's word, once, before any block it sizes from glibc's
 * header is counted: threads may take the inline path of `fast`.  (Tests
 * that reopen the interposer's resolution window take it back.) */
void mstat_slots_header_sizes(bool yes) MSTAT_HIDDEN;

/* Opens a section on `slot`, the thread's own, in membarrier mode. */
MSTAT_INLINE bool
mstat_section_open_on(struct mstat_section *sec, struct mstat_shm_slot *slot)
{
	if (__builtin_expect(mstat_wsection_begin(slot, &mstat_writer_config.epoch,
						  false, &sec->g) == MSTAT_WS_OPEN, 1)) {
		sec->slot = slot;
		return true;
	}
	return mstat_slots_open_slow(sec);
}

/* Opens a section on the thread's own slot: true, or false when the count
 * must go to mstat_shared_count_unslotted(). */
MSTAT_INLINE bool
mstat_section_open(struct mstat_section *sec)
{
	struct mstat_shm_slot *slot = mstat_thread.slot;

	if (__builtin_expect(slot != NULL, 1))
		return mstat_section_open_on(sec, slot);
	return mstat_slots_open_slow(sec);
}

/* The free of a block of `freed` usable bytes in class `freed_class`
 * (of one made before the attach: in the prior row) and/or the
 * allocation of one of `size` usable bytes in class `size_class`
 * (`requested` asked), into an open section. */
MSTAT_INLINE void
mstat_section_count_classes(const struct mstat_section *sec, enum mstat_op op,
			    unsigned freed_class, uint64_t freed,
			    unsigned size_class, uint64_t size, uint64_t requested)
{
	if (mstat_op_frees(op))
		mstat_wsection_count(sec->slot, sec->g, freed_class,
				     MSTAT_C_FREE_COUNT, freed);
	if (op == MSTAT_OP_PRIOR_FREE || op == MSTAT_OP_PRIOR_REALLOC) {
		unsigned k = op == MSTAT_OP_PRIOR_FREE ? MSTAT_P_FREES : MSTAT_P_REALLOCS;
		mstat_wsection_prior(sec->slot, sec->g, k, 1);
		mstat_wsection_prior(sec->slot, sec->g, k + 1, freed);
	}
	if (mstat_op_allocs(op)) {
		mstat_wsection_count(sec->slot, sec->g, size_class,
				     MSTAT_C_ALLOC_COUNT, size);
		mstat_wsection_requested(sec->slot, sec->g, requested);
	}
}

/* The same, classes from the sizes. */
MSTAT_INLINE void
mstat_section_count(const struct mstat_section *sec, enum mstat_op op,
		    uint64_t freed, uint64_t size, uint64_t requested)
{
	mstat_section_count_classes(sec, op,
				    mstat_op_frees(op) ? mstat_size_class(freed) : 0,
				    freed,
				    mstat_op_allocs(op) ? mstat_size_class(size) : 0,
				    size, requested);
}

MSTAT_INLINE void
mstat_section_close(const struct mstat_section *sec)
{
	mstat_wsection_end(sec->slot);
}

/* One count, in a section of its own. */
MSTAT_INLINE void
mstat_count(enum mstat_op op, uint64_t freed, uint64_t size, uint64_t requested)
{
	struct mstat_section sec;

	if (__builtin_expect(mstat_section_open(&sec), 1)) {
		mstat_section_count(&sec, op, freed, size, requested);
		mstat_section_close(&sec);
	} else {
		mstat_shared_count_unslotted(op, freed, size, requested);
	}
}

/* The sampling countdown (lib/profile.h, countdown.h): one subtract on
 * the thread's line and a branch.  True when an allocation of `n` bytes
 * ran it out. */
MSTAT_INLINE bool
mstat_sample_due(size_t n)
{
	return mstat_countdown_due(&mstat_thread.sample_left, n);
}

/* The segment, once published, while counting goes on; NULL before and
 * after (for the profile, which lives in it). */
const struct mstat_segment *mstat_start_segment(void) MSTAT_HIDDEN;

/*
 * Points of the writer's life where another part of the library acts
 * (the profile: profile.c), registered from that part's constructor,
 * which runs before the writer's (MSTAT_HOOKS_PRIORITY).  The writer
 * knows nothing of who registered; NULL hooks are skipped.
 */
struct mstat_writer_hooks {
	/* The library's constructor starts counting: the environment is
	 * there now (allocations before libc's own initialiser, from a
	 * program's .preinit_array, found none). */
	void (*start)(void);
	/* A segment is being made: before it is published, with no lock of
	 * the writer held, as the library's own work (mstat_own_begin()). */
	void (*segment)(void);
	/* In a fork child whose parent had a segment, before the child
	 * counts into one of its own: one thread, under shared_lock
	 * (fork.c): a signal handler's count meanwhile is deferred. */
	void (*fork_child)(void);
};
#define MSTAT_HOOKS_PRIORITY 101 /* a constructor priority: before the writer's */
void mstat_start_hooks(const struct mstat_writer_hooks *hooks) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_WRITER_H */
