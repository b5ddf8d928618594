/* SPDX-License-Identifier: MIT */
/* sum.c - adding up the counters of slots; see sum.h. */
#include "shm/sum.h"

#include <stdbool.h>

#include <mstatshm.h>

/* The bits of touched-bitmap word `w` that stand for rows below `rows`. */
static uint64_t
row_mask(unsigned rows, unsigned w)
{
	if (rows >= (w + 1) * 64)
		return UINT64_MAX;
	if (rows <= w * 64)
		return 0;
	return (UINT64_C(1) << (rows - w * 64)) - 1;
}

/* Chunk rows `c` (MSTAT_CHUNKS rows of MSTAT_CHUNK_ROW_COUNTERS) folded
 * into their classes' rows of `sum`: counts, and bytes from the counts. */
static void
fold_chunks(const _Atomic uint64_t *c, uint32_t class_count,
	    uint64_t (*sum)[MSTAT_ROW_COUNTERS])
{
	for (unsigned k = 0; k < MSTAT_CHUNKS; k++, c += MSTAT_CHUNK_ROW_COUNTERS) {
		uint64_t allocs =
			atomic_load_explicit(&c[MSTAT_CHUNK_ALLOCS], memory_order_relaxed);
		uint64_t frees =
			atomic_load_explicit(&c[MSTAT_CHUNK_FREES], memory_order_relaxed);
		unsigned row = mstat_small_class[k];

		/* Rows 0 and 1 of a bad segment fold to nonsense, not to a
		 * fault: the arithmetic wraps. */
		if ((allocs | frees) == 0 || row >= class_count)
			continue;
		sum[row][MSTAT_C_ALLOC_COUNT] += allocs;
		sum[row][MSTAT_C_ALLOC_BYTES] += allocs * MSTAT_CHUNK_USABLE(k);
		sum[row][MSTAT_C_FREE_COUNT] += frees;
		sum[row][MSTAT_C_FREE_BYTES] += frees * MSTAT_CHUNK_USABLE(k);
	}
}

/* The prior row `p` of a slot that noted it (layout.h) into the sum's. */
static void
add_prior(const _Atomic uint64_t *p, uint64_t *prior)
{
	for (unsigned k = 0; k < MSTAT_PRIOR_COUNT; k++)
		prior[k] += atomic_load_explicit(&p[k], memory_order_relaxed);
}

static void
sum_generation(const unsigned char *slots, uint32_t slot_size, uint32_t n,
	       uint32_t class_count, unsigned gen,
	       uint64_t (*sum)[MSTAT_ROW_COUNTERS])
{
	const unsigned totals = MSTAT_TOTALS_ROW(class_count);
	/* A slot too small for them has no prior rows (a segment that is
	 * not one the library made). */
	const bool prior = MSTAT_PRIOR_FITS(class_count, slot_size);

	for (uint32_t i = 0; i < n; i++) {
		const struct mstat_shm_slot *s =
			(const struct mstat_shm_slot *)(slots + (size_t)i * slot_size);
		const _Atomic uint64_t *g =
			s->acc + (size_t)gen * MSTAT_GEN_COUNTERS(class_count);

		sum[totals][MSTAT_T_REQUESTED_BYTES] += atomic_load_explicit(
			&s->head.requested[gen], memory_order_relaxed);
		for (unsigned w = 0; w < MSTAT_TOUCHED_WORDS; w++) {
			uint64_t bits = atomic_load_explicit(&s->head.touched[w],
							     memory_order_relaxed);
			bits &= row_mask(class_count, w); /* a bad bitmap reads no further */
			while (bits) {
				unsigned row = w * 64 + (unsigned)__builtin_ctzll(bits);
				const _Atomic uint64_t *c = g + (size_t)row * MSTAT_ROW_COUNTERS;
				bits &= bits - 1;
				for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
					sum[row][k] += atomic_load_explicit(
						&c[k], memory_order_relaxed);
			}
		}
		fold_chunks(g + (size_t)class_count * MSTAT_ROW_COUNTERS, class_count, sum);
		if (prior && (atomic_load_explicit(&s->head.touched[MSTAT_PRIOR_TOUCHED / 64],
						   memory_order_relaxed) &
			      (UINT64_C(1) << (MSTAT_PRIOR_TOUCHED % 64))))
			add_prior(s->acc + MSTAT_PRIOR_OFFSET(class_count, gen),
				  sum[MSTAT_PRIOR_ROW(class_count)]);
	}
}

void
mstat_sum_generations(const unsigned char *slots, uint32_t slot_size,
		      uint32_t n, uint32_t class_count, unsigned gens,
		      uint64_t (*sum)[MSTAT_ROW_COUNTERS])
{
	for (unsigned gen = 0; gen < MSTAT_GENS; gen++)
		if (gens & MSTAT_GEN_BIT(gen))
			sum_generation(slots, slot_size, n, class_count, gen, sum);
}

void
mstat_sum_counts(struct mstat_snapshot *out,
		 const uint64_t (*sum)[MSTAT_ROW_COUNTERS], uint32_t class_count)
{
	for (unsigned c = 0; c < class_count; c++) {
#define MSTAT_X(e, f, h)                                                     \
	out->classes[c].f = sum[c][MSTAT_C_##e];                             \
	out->total.f += sum[c][MSTAT_C_##e];
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	}
#define MSTAT_X(e, f, h) out->f = sum[MSTAT_TOTALS_ROW(class_count)][MSTAT_T_##e];
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
}
