/* SPDX-License-Identifier: MIT */
/*
 * sizeclass.h - the size classes counters are kept in.
 *
 * Fine classes of 16 bytes up to 256 bytes, then four classes per doubling
 * up to 1 TiB, then one class for everything larger:
 *
 *   class 0          size 0
 *   class 1..16      1..16, 17..32, ..., 241..256
 *   class 17..144    (256,320], (320,384], (384,448], (448,512], (512,640] ...
 *                    ... (896 GiB, 1 TiB]
 *   class 145        above 1 TiB
 *
 * The lookup runs on every malloc and free, with no division and no loop:
 * up to 1 KiB, where most allocations are, one load from a 65-byte table
 * (every class bound below 1 KiB is a multiple of 16, so (size + 15) / 16
 * indexes it exactly; no branch between fine and geometric classes to
 * mispredict); above, a count of leading zeros and a few shifts.
 */
#ifndef MSTAT_SHM_SIZECLASS_H
#define MSTAT_SHM_SIZECLASS_H

#include <stdint.h>

#define MSTAT_FINE_SHIFT 4u    /* fine classes are 16 bytes apart */
#define MSTAT_FINE_MAX 256u    /* largest size in a fine class */
#define MSTAT_FINE_CLASSES 17u /* classes 0..16 */
#define MSTAT_GEO_SUB_SHIFT 2u /* 4 classes per doubling */
#define MSTAT_GEO_MIN_LG 8u    /* first geometric class: (2^8, 2^8 + 2^6] */
#define MSTAT_GEO_MAX_LG 39u   /* last geometric class ends at 2^40 */
#define MSTAT_HUGE_CLASS                                                      \
	(MSTAT_FINE_CLASSES +                                                 \
	 ((MSTAT_GEO_MAX_LG - MSTAT_GEO_MIN_LG + 1u) << MSTAT_GEO_SUB_SHIFT))
#define MSTAT_CLASS_COUNT (MSTAT_HUGE_CLASS + 1u)

/* The class of `size` usable bytes, computed (any size). */
static inline unsigned
mstat_size_class_computed(uint64_t size)
{
	if (size <= MSTAT_FINE_MAX)
		return (unsigned)((size + (1u << MSTAT_FINE_SHIFT) - 1) >>
				  MSTAT_FINE_SHIFT);
	uint64_t x = size - 1;
	unsigned lg = 63u - (unsigned)__builtin_clzll(x); /* x >= 256: lg >= 8 */
	if (lg > MSTAT_GEO_MAX_LG)
		return MSTAT_HUGE_CLASS;
	unsigned sub = (unsigned)(x >> (lg - MSTAT_GEO_SUB_SHIFT)) &
		       ((1u << MSTAT_GEO_SUB_SHIFT) - 1);
	return MSTAT_FINE_CLASSES +
	       ((lg - MSTAT_GEO_MIN_LG) << MSTAT_GEO_SUB_SHIFT) + sub;
}

/* The same, as a constant expression, for the 16-byte step i (sizes up to
 * 16 * i), i <= 64: what fills the table below. */
#define MSTAT_TABLE_MAX 1024u
#define MSTAT_SC_LG(x) ((x) >= 512u ? 9u : 8u)
#define MSTAT_SC(i)                                                           \
	((i) <= 16u ? (i) :                                                   \
		      MSTAT_FINE_CLASSES +                                    \
			      ((MSTAT_SC_LG((i) * 16u - 1) - MSTAT_GEO_MIN_LG) \
			       << MSTAT_GEO_SUB_SHIFT) +                      \
			      ((((i) * 16u - 1) >>                            \
				(MSTAT_SC_LG((i) * 16u - 1) - MSTAT_GEO_SUB_SHIFT)) & 3u))
#define MSTAT_SC4(i) MSTAT_SC(i), MSTAT_SC(i + 1), MSTAT_SC(i + 2), MSTAT_SC(i + 3)
#define MSTAT_SC16(i) MSTAT_SC4(i), MSTAT_SC4(i + 4), MSTAT_SC4(i + 8), MSTAT_SC4(i + 12)

/* Class of the sizes up to 16 * i, i <= 64 (tests/protocol/test_layout.c
 * checks it against mstat_size_class_computed() for every size).  Entries
 * 0..63, which glibc's chunk sizes index (the chunk rows of layout.h),
 * are one cache line. */
static const uint8_t mstat_small_class[MSTAT_TABLE_MAX / 16 + 1]
	__attribute__((unused, aligned(64))) = {
	MSTAT_SC16(0), MSTAT_SC16(16), MSTAT_SC16(32), MSTAT_SC16(48), MSTAT_SC(64),
};

/* The class that counts an allocation of `size` usable bytes. */
static inline unsigned
mstat_size_class(uint64_t size)
{
	if (__builtin_expect(size <= MSTAT_TABLE_MAX, 1))
		return mstat_small_class[(size + 15) >> 4];
	return mstat_size_class_computed(size);
}

/* The largest size counted in class `c` (UINT64_MAX for the huge class). */
static inline uint64_t
mstat_class_max_size(unsigned c)
{
	if (c < MSTAT_FINE_CLASSES)
		return (uint64_t)c << MSTAT_FINE_SHIFT;
	if (c >= MSTAT_HUGE_CLASS)
		return UINT64_MAX;
	unsigned g = c - MSTAT_FINE_CLASSES;
	unsigned lg = MSTAT_GEO_MIN_LG + (g >> MSTAT_GEO_SUB_SHIFT);
	unsigned sub = g & ((1u << MSTAT_GEO_SUB_SHIFT) - 1);
	return (UINT64_C(1) << lg) +
	       ((uint64_t)(sub + 1) << (lg - MSTAT_GEO_SUB_SHIFT));
}

#endif /* MSTAT_SHM_SIZECLASS_H */
