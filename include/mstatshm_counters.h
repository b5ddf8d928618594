/* SPDX-License-Identifier: MIT */
/*
 * mstatshm_counters.h - the counters, defined once.
 *
 * X(ENUM_NAME, field_name, "description"): per size class, per process
 * for those that are not per class, and of an attached process's heap
 * from before its attach.  These lists make the
 * segment's rows (shm/layout.h), the public snapshot (mstatshm.h), the
 * reader's sum and every output's field names.  Part of the wire format:
 * it depends on nothing, and the public header includes it.
 */
#ifndef MSTATSHM_COUNTERS_H
#define MSTATSHM_COUNTERS_H

#define MSTAT_CLASS_COUNTERS(X)                                              \
	X(ALLOC_COUNT, alloc_count, "allocations made")                       \
	X(ALLOC_BYTES, alloc_bytes, "bytes allocated (usable size)")          \
	X(FREE_COUNT, free_count, "allocations freed")                        \
	X(FREE_BYTES, free_bytes, "bytes freed (usable size)")

#define MSTAT_TOTAL_COUNTERS(X)                                              \
	X(REQUESTED_BYTES, requested_bytes, "bytes requested by callers")

/*
 * In a process counting since mstat-attach injected the library, the
 * blocks made before the attach, as they go: their frees, and their
 * reallocs (the old block's bytes; the new block is an allocation like
 * any other).  Kept apart from the class counters, whose live counts
 * then mean "made since the attach and still live".  Not in struct
 * mstat_snapshot, whose layout is the API's: the readers of the segment
 * take them from shm/reader.h.
 */
#define MSTAT_PRIOR_COUNTERS(X)                                              \
	X(FREES, prior_frees, "frees of blocks made before the attach")       \
	X(FREE_BYTES, prior_free_bytes, "their bytes (usable size)")          \
	X(REALLOCS, prior_reallocs, "reallocs of blocks made before the attach") \
	X(REALLOC_BYTES, prior_realloc_bytes, "the old blocks' bytes (usable size)")

#define MSTAT_MAX_CLASSES 191 /* a snapshot holds at most this many */

#endif /* MSTATSHM_COUNTERS_H */
