/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the blocks sampled objects move to, and the library's own
 * blocks; see pool.h.
 *
 * One reservation of address space, mapped at the first block and kept
 * (a fork child keeps it with the parent's blocks), holds one part per
 * class: first the sample classes, with slots of 32 << c bytes, 32 B to
 * 4 KiB, then the own classes, 32 B to 32 KiB.  Slot i's block starts
 * 16 + i * stride bytes into its part, the header word just before it
 * (in the previous slot's last 8 bytes, as glibc's chunks overlap): a
 * block holds stride - 8 bytes, and is 16-aligned.  Pages are touched as
 * slots are first taken, and stay; a part holds 2 MiB of slots, so the
 * sample pool is 16 MiB and the own one 22 MiB, of address space.
 *
 * Which slots are taken: one bitmap per class, a bit per slot.  A slot
 * is taken with a compare-and-swap that sets its bit, and given back by
 * clearing it:
 *   (Q) the clear releases, after the program's last access to the block
 *       (which happened before its free); the taking CAS acquires, so
 *       the next owner's writes come after them.
 * Each thread starts its search at the word it last took a slot from,
 * its own hint per class (the first one drawn from its address), so that
 * threads that sample at once work on bitmap lines of their own: with a
 * shared hint, and both on one line, two threads lost 0.3 ns a pair of
 * the hot loop to that line's moves (docs/performance.md, "The heap
 * profile").
 */
#include "lib/pool.h"

#include <stdatomic.h>
#include <sys/mman.h>

#define CLASSES 8     /* sample classes: parts 0 .. CLASSES - 1 */
#define OWN_CLASSES 11 /* own classes: the parts after them */
#define PARTS (CLASSES + OWN_CLASSES)
#define MIN_SHIFT 5 /* 32-byte slots in class 0 */
#define PART_BYTES ((size_t)2 << 20)
#define PART_STRIDE (PART_BYTES + MSTAT_POOL_PART_TAIL) /* each part's last
							 * slot ends past it */
#define POOL_BYTES (PARTS * PART_STRIDE)
#define WORDS0 (PART_BYTES >> MIN_SHIFT >> 6) /* class 0's bitmap words */
#define UNMAPPED 0
#define NO_POOL MSTAT_POOL_NONE /* the mapping failed: never tried again */

_Static_assert(POOL_BYTES == MSTAT_POOL_SIZE, "pool.h has the pool's size");
_Static_assert(CLASSES * PART_STRIDE == MSTAT_POOL_OWN_OFFSET,
	       "pool.h has where the own part begins");
_Static_assert(PART_BYTES == MSTAT_POOL_PART_BYTES, "pool.h has a part's size");

_Static_assert(((size_t)32 << (CLASSES - 1)) - 8 >= MSTAT_POOL_MAX,
	       "the largest class holds MSTAT_POOL_MAX bytes");
_Static_assert(((size_t)32 << (OWN_CLASSES - 1)) - 8 == MSTAT_POOL_OWN_MAX,
	       "the largest own class holds MSTAT_POOL_OWN_MAX bytes");
_Static_assert((WORDS0 >> (OWN_CLASSES - 1)) >= 1,
	       "every class has a bitmap word");

/* Where the pool is, UNMAPPED or NO_POOL.  Written once, with a CAS;
 * relaxed everywhere: a block reaches a thread that frees it through the
 * program's own synchronisation, after the store its allocating thread
 * saw, and nothing else is published with it (the mapping's pages are
 * zeros, the bitmaps in .bss). */
_Atomic uintptr_t mstat_pool_base;

/* Which slots are taken, one bitmap per part: the sample classes', then
 * the own classes'.  Class c's words start at 2 * WORDS0 - (2 * WORDS0 >>
 * c) of its kind's. */
static _Atomic uint64_t used_words[2][2 * WORDS0];

/* Per part, the word this thread last took a slot from, plus one; 0
 * before its first: mstat_thread.pool_hint. */
_Static_assert(PARTS == MSTAT_POOL_PARTS, "state.h has the pool's parts");

static inline unsigned
class_words(unsigned c)
{
	return WORDS0 >> c;
}

/* Part `part`'s bitmap: class part, or part - CLASSES of the own kind. */
static inline _Atomic uint64_t *
part_bitmap(unsigned part)
{
	unsigned own = part >= CLASSES, c = part - (own ? CLASSES : 0);

	return &used_words[own][2 * WORDS0 - (2 * WORDS0 >> c)];
}

static inline unsigned
part_class(unsigned part)
{
	return part >= CLASSES ? part - CLASSES : part;
}

/* The class whose slots hold `size` bytes: 32 << c >= size + 8. */
static inline unsigned
class_of(size_t size)
{
	size_t slot = size + 8 <= 32 ? 32 : size + 8;
	unsigned bits = 64 - (unsigned)__builtin_clzll((unsigned long long)slot - 1);

	return bits - MIN_SHIFT;
}

static uintptr_t
base_now(void)
{
	uintptr_t b = atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);

	if (b != UNMAPPED)
		return b;
	void *m = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t want = m == MAP_FAILED ? NO_POOL : (uintptr_t)m;
	/* Not in huge pages: a few live blocks would each keep 2 MiB. */
	if (m != MAP_FAILED)
		(void)madvise(m, POOL_BYTES, MADV_NOHUGEPAGE);
	/* Relaxed: see mstat_pool_base.  Another thread may have mapped it
	 * first. */
	if (atomic_compare_exchange_strong_explicit(&mstat_pool_base, &b, want,
						    memory_order_relaxed,
						    memory_order_relaxed))
		return want;
	if (m != MAP_FAILED)
		munmap(m, POOL_BYTES);
	return b;
}

/* A free slot of part `part` of the pool at `base`, taken; NULL if the
 * part is full. */
static void *
take(uintptr_t base, unsigned part)
{
	unsigned c = part_class(part), n = class_words(c);
	_Atomic uint64_t *used = part_bitmap(part);
	/* A first search starts on a bitmap line (8 words) of its own,
	 * picked by a hash of the thread's address. */
	unsigned *hint = mstat_thread.pool_hint;
	unsigned start = hint[part] ? hint[part] - 1
				    : (unsigned)(((uintptr_t)hint * UINT64_C(0x9e3779b97f4a7c15)) >> 40) &
					      ~7u;

	for (unsigned k = 0; k < n; k++) {
		unsigned w = (start + k) & (n - 1);
		uint64_t x = atomic_load_explicit(&used[w], memory_order_relaxed);
		while (~x != 0) {
			uint64_t bit = ~x & (x + 1); /* the lowest clear bit */
			/* (Q) acquire: pairs with the release in
			 * mstat_pool_free() of the slot's last owner. */
			if (!atomic_compare_exchange_weak_explicit(
				    &used[w], &x, x | bit, memory_order_acquire,
				    memory_order_relaxed))
				continue;
			hint[part] = w + 1;
			size_t i = (size_t)w * 64 + (unsigned)__builtin_ctzll(bit);
			size_t stride = (size_t)1 << (MIN_SHIFT + c);
			unsigned char *p = (unsigned char *)base + part * PART_STRIDE +
					   16 + i * stride;
			((size_t *)p)[-1] = MSTAT_OWN_MARK | (stride - 8);
			return p;
		}
	}
	return NULL;
}

void *
mstat_pool_alloc(size_t size)
{
	if (size > MSTAT_POOL_MAX)
		return NULL;
	uintptr_t base = base_now();
	if (base == NO_POOL)
		return NULL;
	return take(base, class_of(size));
}

void *
mstat_pool_own_alloc(size_t size)
{
	if (size > MSTAT_POOL_OWN_MAX)
		return NULL;
	uintptr_t base = base_now();
	if (base == NO_POOL)
		return NULL;
	/* A full class spills to the next one up. */
	for (unsigned c = class_of(size); c < OWN_CLASSES; c++) {
		void *p = take(base, CLASSES + c);
		if (p)
			return p;
	}
	return NULL;
}

void
mstat_pool_free(void *p)
{
	size_t off = (uintptr_t)p - atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);
	size_t part = off / PART_STRIDE, at = off % PART_STRIDE;

	if (part >= PARTS || at < 16)
		return;
	unsigned c = part_class((unsigned)part);
	size_t stride = (size_t)1 << (MIN_SHIFT + c);
	size_t i = (at - 16) / stride;
	if ((at - 16) % stride != 0 || i >= (size_t)class_words(c) * 64)
		return;
	unsigned w = (unsigned)(i / 64);
	/* (Q) release: pairs with the acquire CAS in take() of the slot's
	 * next owner. */
	atomic_fetch_and_explicit(&part_bitmap((unsigned)part)[w],
				  ~((uint64_t)1 << (i % 64)), memory_order_release);
}

size_t
mstat_pool_usable(const void *p)
{
	size_t off = (uintptr_t)p - atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);
	size_t part = off / PART_STRIDE;

	if (part >= PARTS)
		return 0;
	return ((size_t)1 << (MIN_SHIFT + part_class((unsigned)part))) - 8;
}
