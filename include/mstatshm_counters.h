/* SPDX-License-Identifier: MIT */
/*
 * mstatshm_counters.h - the counters, defined once.
 *
 * X(ENUM_NAME, field_name, "description"): per size class, and per
 * process for those that are not per class.  These lists make the
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

#define MSTAT_MAX_CLASSES 191 /* a snapshot holds at most this many */

#endif /* MSTATSHM_COUNTERS_H */
