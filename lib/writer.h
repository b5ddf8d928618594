/* SPDX-License-Identifier: MIT */
/*
 * writer.h - counting an allocation, for the interposer and the public API.
 *
 * The fast path, inline: a thread with a slot of its own runs one update
 * section on it (shm/section.h).  Every other case, a thread's first count,
 * counts made before the segment exists, threads beyond the slot capacity
 * or already past their exit, a disabled library, goes to
 * mstat_count_slow() in writer.c.
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

/* What every writer of the process reads; changes only while the process
 * has a single thread (start-up, fork child). */
struct mstat_writer_config {
	_Atomic uint64_t *epoch; /* in the segment */
	bool fenced;
};
extern struct mstat_writer_config mstat_writer_config MSTAT_HIDDEN;

/* The thread's own slot, or NULL for the slow path. */
extern _Thread_local struct mstat_shm_slot *mstat_thread_slot
	__attribute__((tls_model("initial-exec"))) MSTAT_HIDDEN;

void mstat_count_slow(enum mstat_op op, uint64_t freed, uint64_t size,
		      uint64_t requested) MSTAT_HIDDEN;

/* One section on `slot`: the free of a block of `freed` usable bytes
 * and/or the allocation of one of `size` usable bytes (`requested` asked). */
MSTAT_INLINE void
mstat_count_on(struct mstat_shm_slot *slot, enum mstat_op op, uint64_t freed,
	       uint64_t size, uint64_t requested)
{
	_Atomic uint64_t *gen = mstat_wsection_begin(
		slot, mstat_writer_config.epoch, mstat_writer_config.fenced);

	if (op != MSTAT_OP_ALLOC)
		mstat_wsection_count(slot, gen, mstat_size_class(freed),
				     MSTAT_C_FREE_COUNT, freed);
	if (op != MSTAT_OP_FREE) {
		mstat_wsection_count(slot, gen, mstat_size_class(size),
				     MSTAT_C_ALLOC_COUNT, size);
		mstat_wsection_add(gen, MSTAT_CLASS_COUNT, MSTAT_T_REQUESTED_BYTES,
				   requested);
	}
	mstat_wsection_end(slot);
}

MSTAT_INLINE void
mstat_count(enum mstat_op op, uint64_t freed, uint64_t size, uint64_t requested)
{
	struct mstat_shm_slot *slot = mstat_thread_slot;

	if (__builtin_expect(slot != NULL, 1))
		mstat_count_on(slot, op, freed, size, requested);
	else
		mstat_count_slow(op, freed, size, requested);
}

/* Starts counting (the library's constructor does; idempotent). */
void mstat_writer_start(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_WRITER_H */
