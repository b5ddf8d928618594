/* SPDX-License-Identifier: MIT */
/*
 * rows.h - counts kept in process memory, rows as a segment's
 * (mstat_rows: the early counts, a forking thread's, the heap a fork
 * child inherits), and adding them into an open section.  The writer's
 * files keep such rows where a count cannot go to a slot (writer.h).
 */
#ifndef MSTAT_LIB_ROWS_H
#define MSTAT_LIB_ROWS_H

#include <stdint.h>

#include "lib/state.h"
#include "lib/writer.h"

/* The counters one count adds to, and how much. */
struct mstat_adds {
	unsigned n;
	struct {
		unsigned row, k;
		uint64_t v;
	} a[5];
};

static inline void
mstat_adds_of(struct mstat_adds *x, enum mstat_op op, uint64_t freed,
	      uint64_t size, uint64_t requested)
{
	x->n = 0;
	if (mstat_op_frees(op)) {
		unsigned c = mstat_size_class(freed);
		x->a[x->n++] = (__typeof__(x->a[0])){ c, MSTAT_C_FREE_COUNT, 1 };
		x->a[x->n++] = (__typeof__(x->a[0])){ c, MSTAT_C_FREE_BYTES, freed };
	} else if (op != MSTAT_OP_ALLOC) { /* a block made before the attach */
		unsigned k = op == MSTAT_OP_PRIOR_FREE ? MSTAT_P_FREES : MSTAT_P_REALLOCS;
		x->a[x->n++] = (__typeof__(x->a[0])){
			MSTAT_PRIOR_ROW(MSTAT_CLASS_COUNT), k, 1 };
		x->a[x->n++] = (__typeof__(x->a[0])){
			MSTAT_PRIOR_ROW(MSTAT_CLASS_COUNT), k + 1, freed };
	}
	if (mstat_op_allocs(op)) {
		unsigned c = mstat_size_class(size);
		x->a[x->n++] = (__typeof__(x->a[0])){ c, MSTAT_C_ALLOC_COUNT, 1 };
		x->a[x->n++] = (__typeof__(x->a[0])){ c, MSTAT_C_ALLOC_BYTES, size };
		x->a[x->n++] = (__typeof__(x->a[0])){
			MSTAT_TOTALS_ROW(MSTAT_CLASS_COUNT), MSTAT_T_REQUESTED_BYTES,
			requested };
	}
}

/* One count into the rows of `acc`, its requested bytes into *req. */
static inline void
mstat_rows_count(mstat_rows acc, uint64_t *req, enum mstat_op op,
		 uint64_t freed, uint64_t size, uint64_t requested)
{
	struct mstat_adds x;

	mstat_adds_of(&x, op, freed, size, requested);
	for (unsigned i = 0; i < x.n; i++) {
		if (x.a[i].row == MSTAT_TOTALS_ROW(MSTAT_CLASS_COUNT))
			*req += x.a[i].v;
		else
			acc[x.a[i].row][x.a[i].k] += x.a[i].v;
	}
}

/* `from` added to `to`. */
void mstat_rows_add(mstat_rows to, mstat_rows from) MSTAT_HIDDEN;

/* `v` added to counter `k` of row `row` (the totals row: requested
 * bytes; the prior row: its counters) in the section open on `slot`,
 * generation `g`. */
void mstat_rows_put_one(struct mstat_shm_slot *slot, unsigned g, unsigned row,
			unsigned k, uint64_t v) MSTAT_HIDDEN;

/* `acc` added into the section open on `slot`, generation `g`. */
void mstat_rows_put(struct mstat_shm_slot *slot, unsigned g, mstat_rows acc)
	MSTAT_HIDDEN;

#endif /* MSTAT_LIB_ROWS_H */
