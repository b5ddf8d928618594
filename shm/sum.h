/* SPDX-License-Identifier: MIT */
/*
 * sum.h - adding up the counters of slots.
 *
 * Used by readers (the generations no writer can touch, see reader.c)
 * and by a forked child, which adds up its parent's slots to learn the
 * heap it inherited.
 */
#ifndef MSTAT_SHM_SUM_H
#define MSTAT_SHM_SUM_H

#include <stdint.h>

#include "shm/layout.h"

/* A set of generations: bit g for generation g; all of them. */
#define MSTAT_GEN_BIT(g) (1u << (g))
#define MSTAT_GENS_ALL (MSTAT_GEN_BIT(MSTAT_GENS) - 1)

/* Adds the generations of the set `gens` of `n` slots starting at
 * `slots`, each `slot_size` bytes, into sum[row][counter] (rows =
 * MSTAT_ROWS(class_count): the classes, then the totals, whose requested
 * bytes come from the slots' heads, then the prior row, of the slots that
 * noted theirs; the chunk rows folded into their classes).
 * Class rows a slot never wrote are zero in every generation and are
 * skipped.  Loads are relaxed: the caller orders them (the handshake, or
 * a fork). */
void mstat_sum_generations(const unsigned char *slots, uint32_t slot_size,
			   uint32_t n, uint32_t class_count, unsigned gens,
			   uint64_t (*sum)[MSTAT_ROW_COUNTERS]);

struct mstat_snapshot;

/* The counts of a sum (rows as above) into `out`: each class's counters,
 * their totals over the classes and the per-process totals, as a
 * snapshot holds them; nothing else of `out` is written (the prior row
 * is the caller's: reader.h keeps it beside the snapshot). */
void mstat_sum_counts(struct mstat_snapshot *out,
		      const uint64_t (*sum)[MSTAT_ROW_COUNTERS],
		      uint32_t class_count);

#endif /* MSTAT_SHM_SUM_H */
