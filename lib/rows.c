/* SPDX-License-Identifier: MIT */
/* rows.c - counts kept in process memory; see rows.h. */
#include "lib/rows.h"

void
mstat_rows_add(mstat_rows to, mstat_rows from)
{
	for (unsigned row = 0; row < MSTAT_ROWS(MSTAT_CLASS_COUNT); row++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
			to[row][k] += from[row][k];
}

void
mstat_rows_put_one(struct mstat_shm_slot *slot, unsigned g, unsigned row,
		   unsigned k, uint64_t v)
{
	if (!v)
		return;
	if (row == MSTAT_TOTALS_ROW(MSTAT_CLASS_COUNT)) {
		if (k == MSTAT_T_REQUESTED_BYTES)
			mstat_wsection_requested(slot, g, v);
		return;
	}
	if (row == MSTAT_PRIOR_ROW(MSTAT_CLASS_COUNT)) {
		if (k < MSTAT_PRIOR_COUNT)
			mstat_wsection_prior(slot, g, k, v);
		return;
	}
	mstat_wsection_touch(slot, row);
	mstat_wsection_add(slot, g, row, k, v);
}

void
mstat_rows_put(struct mstat_shm_slot *slot, unsigned g, mstat_rows acc)
{
	for (unsigned row = 0; row < MSTAT_ROWS(MSTAT_CLASS_COUNT); row++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
			mstat_rows_put_one(slot, g, row, k, acc[row][k]);
}
