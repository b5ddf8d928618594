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
 * Every other case goes out of line to writer.c: a thread's first count
 * (it claims a slot), a fork in progress (it waits), a section inside a
 * section of the same thread (a signal handler), and the counts that
 * cannot go to a slot of their own (mstat_count_unslotted()).
 */
#ifndef MSTAT_LIB_WRITER_H
#define MSTAT_LIB_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "sizeclass.h"
#include "section.h"

#define MSTAT_HIDDEN __attribute__((visibility("hidden")))
/* The fast path must inline into each caller, so `op` is a constant. */
#define MSTAT_INLINE static inline __attribute__((always_inline))

enum mstat_op {
	MSTAT_OP_ALLOC,
	MSTAT_OP_FREE,
	MSTAT_OP_REALLOC, /* a free and an alloc in one section */
};

/* Bits of mstat_writer_config.stop: why sections are refused. */
enum mstat_stop {
	MSTAT_STOP_FORK = 1, /* a thread forks: wait until it is done */
	MSTAT_STOP_EXIT = 2, /* the process exits: the counts are final */
};

/* What every writer of the process reads.  `epoch` and `fenced` change
 * only while the process has a single thread (start-up, fork child). */
struct mstat_writer_config {
	_Atomic uint64_t *epoch; /* in the segment */
	bool fenced;
	_Atomic unsigned char stop; /* (V) enum mstat_stop bits */
};
extern struct mstat_writer_config mstat_writer_config MSTAT_HIDDEN;

/* The thread's own slot, or NULL for the slow path. */
extern _Thread_local struct mstat_shm_slot *mstat_thread_slot
	__attribute__((tls_model("initial-exec"))) MSTAT_HIDDEN;

/* An open update section. */
struct mstat_section {
	struct mstat_shm_slot *slot;
	_Atomic uint64_t *gen;
};

/* The cases the inline open does not handle; see the top of this file. */
bool mstat_section_open_slow(struct mstat_section *sec) MSTAT_HIDDEN;

/* Counts without a section of the thread's own: the shared slot, the
 * counts before the segment exists, a forking thread's; nothing once the
 * process exits. */
void mstat_count_unslotted(enum mstat_op op, uint64_t freed, uint64_t size,
			   uint64_t requested) MSTAT_HIDDEN;

/* Opens a section on the thread's own slot: true, or false when the count
 * must go to mstat_count_unslotted(). */
MSTAT_INLINE bool
mstat_section_open(struct mstat_section *sec)
{
	struct mstat_shm_slot *slot = mstat_thread_slot;

	if (__builtin_expect(slot != NULL, 1) &&
	    __builtin_expect(mstat_wsection_begin(slot, mstat_writer_config.epoch,
						  &mstat_writer_config.stop,
						  mstat_writer_config.fenced,
						  &sec->gen) == MSTAT_WS_OPEN, 1)) {
		sec->slot = slot;
		return true;
	}
	return mstat_section_open_slow(sec);
}

/* The free of a block of `freed` usable bytes and/or the allocation of one
 * of `size` usable bytes (`requested` asked), into an open section. */
MSTAT_INLINE void
mstat_section_count(const struct mstat_section *sec, enum mstat_op op,
		    uint64_t freed, uint64_t size, uint64_t requested)
{
	if (op != MSTAT_OP_ALLOC)
		mstat_wsection_count(sec->slot, sec->gen, mstat_size_class(freed),
				     MSTAT_C_FREE_COUNT, freed);
	if (op != MSTAT_OP_FREE) {
		mstat_wsection_count(sec->slot, sec->gen, mstat_size_class(size),
				     MSTAT_C_ALLOC_COUNT, size);
		mstat_wsection_add(sec->gen, MSTAT_CLASS_COUNT,
				   MSTAT_T_REQUESTED_BYTES, requested);
	}
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
		mstat_count_unslotted(op, freed, size, requested);
	}
}

/* Starts counting (the library's constructor does; idempotent). */
void mstat_writer_start(void) MSTAT_HIDDEN;

/* Something the process should know that does not stop it counting: kept
 * in mstat_self_status(), and logged where MSTAT_LOG asks (nowhere by
 * default: the program's descriptors are its own). */
void mstat_writer_warn(const char *what, const char *why) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_WRITER_H */
