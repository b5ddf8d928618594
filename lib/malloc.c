/* SPDX-License-Identifier: MIT */
/*
 * malloc.c - malloc and its family, counted, then forwarded to the next
 * allocator in the RTLD_NEXT chain (glibc, or jemalloc / tcmalloc preloaded
 * after this library: next.h).
 *
 * Contract of every function here:
 *   - it behaves as the next allocator's function of the same name (for
 *     reallocarray, valloc, pvalloc: as glibc's, built on the next
 *     allocator's realloc and memalign, so that a block never comes from an
 *     allocator other than the one that frees it);
 *   - a block is counted with its usable size as the next allocator reports
 *     it, the same number at its allocation and at its free, so live bytes
 *     return to exactly 0 when everything is freed;
 *   - a failed allocation, free(NULL) and a failed realloc count nothing;
 *     realloc is one update section (MSTAT_OP_REALLOC): no snapshot sees
 *     its free without its allocation;
 *   - when sizes come from glibc's header (next.h), the section is opened
 *     before the call to the next allocator and closed after it, so that
 *     the allocation and its count are one update: a fork or the exit,
 *     which wait for open sections, never see one without the other.
 *     With another allocator the count follows the call (that allocator
 *     may call back into this library from inside its malloc);
 *   - nothing here takes a lock, allocates, uses stdio or aborts, except the
 *     one-time resolution of the next allocator (dlsym, which may itself
 *     call calloc: such calls are served from a static arena) and of each
 *     C++ operator on its first call.
 *
 * A block the next allocator cannot size is counted with its requested
 * size and remembered (unsized.h); a block allocated while the next
 * allocator is being found comes from a static arena (arena.h); the
 * library's own blocks are never counted (own.h); a sampled block may be
 * moved, and is freed with the size it was counted with (sampled.h).  The
 * C++ operators are cxx.c's.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/arena.h"
#include "lib/malloc_inline.h"
#include "lib/next.h"
#include "lib/own.h"
#include "lib/pool.h"
#include "lib/profile.h"
#include "lib/sampled.h"
#include "lib/unsized.h"
#include "lib/writer.h"

/* malloc, free, calloc and realloc each start a cache line: their fast
 * paths (two or three lines) then do not move with whatever code comes
 * before them.  Their offsets alone moved the hot loop's cost by 0.4 ns
 * a pair (bench/run.sh --suite writer). */
#define ENTRY_ALIGN __attribute__((aligned(64)))

/* Into an open section, with glibc's header: the allocation of `p`, any
 * block of glibc's. */
static inline __attribute__((always_inline)) void
count_header_alloc(const struct mstat_section *sec, void *p, size_t requested)
{
	if (LIKELY(mstat_count_header_small(sec, p, requested)))
		return;
	size_t u = mstat_glibc_usable(p);
	mstat_section_count_classes(sec, MSTAT_OP_ALLOC, 0, 0, mstat_size_class(u),
				    u, requested);
}

static inline __attribute__((always_inline)) void *
counted(void *p, size_t requested)
{
	if (LIKELY(p != NULL))
		mstat_count(MSTAT_OP_ALLOC, 0, mstat_new_size(p, requested), requested);
	return p;
}

/*
 * An allocation `expr` from the next allocator, `requested` bytes asked,
 * into `result`: with glibc's header, one section around the call and the
 * count (or, when no section can be had, the count the slow way, without
 * a second try); otherwise the call, then the count.
 */
#define ALLOCATE(result, expr, requested)                                    \
	do {                                                                 \
		struct mstat_section sec_;                                   \
		if (LIKELY(mstat_next_header())) {                                \
			bool open_ = mstat_section_open(&sec_);              \
			(result) = (expr);                                   \
			if (open_ && LIKELY((result) != NULL))               \
				count_header_alloc(&sec_, (result),          \
						   (requested));             \
			else if ((result) != NULL)                           \
				mstat_shared_count_unslotted(MSTAT_OP_ALLOC, 0,     \
							     mstat_glibc_usable(result),  \
							     (requested));          \
			if (open_)                                           \
				mstat_section_close(&sec_);                  \
		} else {                                                     \
			(result) = counted((expr), (requested));             \
		}                                                            \
	} while (0)

/*
 * malloc, free, calloc and realloc have a fast path for the common case:
 * glibc behind the library, membarrier mode, a thread with a slot of its
 * own.  One load of the thread's `fast` slot decides (writer.h: it is
 * NULL in every other case), the section's own tests follow (nested,
 * stopped), and the rest stays out of line.
 */

static MSTAT_START_TEXT __attribute__((noinline)) void *
malloc_other(size_t n)
{
	if (UNLIKELY(!mstat_next_ready()))
		return mstat_arena_alloc(n, MSTAT_ARENA_ALIGN);
	return counted(mstat_next.malloc(n), n);
}

/* Everything but the fast path: another allocator, before resolution, a
 * thread without a `fast` slot, a section refused. */
MSTAT_START_TEXT __attribute__((noinline)) void *
mstat_malloc_slow(size_t n)
{
	struct mstat_section sec;
	void *p;

	if (UNLIKELY(mstat_own_work()) && (p = mstat_own_alloc(n, false)))
		return p;
	if (UNLIKELY(mstat_next_state() != MSTAT_NEXT_HEADER))
		return malloc_other(n);
	if (!mstat_slots_open_slow(&sec)) {
		p = mstat_next.malloc(n);
		if (LIKELY(p != NULL))
			mstat_shared_count_unslotted(MSTAT_OP_ALLOC, 0,
						     mstat_glibc_usable(p), n);
		return p;
	}
	p = mstat_next.malloc(n);
	if (LIKELY(p != NULL))
		count_header_alloc(&sec, p, n);
	mstat_section_close(&sec);
	return p;
}

MSTAT_START_TEXT __attribute__((noinline)) void *
mstat_malloc_sampled(size_t n, const void *caller)
{
	bool sample = mstat_profile_begin(n);
	void *p = mstat_malloc_slow(n);

	return sample ? mstat_sampled(p, n, 0, 0, false, caller) : p;
}

/* Out of line: the inline path then holds nothing the general decode
 * needs (its registers spared, where gcc kept them all for this). */
__attribute__((noinline)) void *
mstat_malloc_header_large(struct mstat_shm_slot *slot, unsigned g, void *p,
			  size_t n)
{
	struct mstat_section sec = { slot, g };

	if (LIKELY(p != NULL))
		count_header_alloc(&sec, p, n);
	mstat_section_close(&sec);
	return p;
}

MSTAT_START_TEXT ENTRY_ALIGN MSTAT_EXPORT void *
malloc(size_t n)
{
	return mstat_do_malloc(n, NULL);
}

static MSTAT_START_TEXT __attribute__((noinline)) void
free_other(void *p)
{
	if (UNLIKELY(p == NULL))
		return;
	if (UNLIKELY(mstat_arena_has(p))) {
		mstat_count(MSTAT_OP_FREE, mstat_arena_usable(p), 0, 0);
		return;
	}
	/* A block not from the arena came from the next allocator, which is
	 * therefore known. */
	mstat_count(MSTAT_OP_FREE, mstat_freed_size(p), 0, 0);
	mstat_next.free(p);
}

/* Out of line: its call is the fast path's last, and needs no register
 * of the fast path. */
__attribute__((noinline)) void
mstat_malloc_free_header_large(struct mstat_shm_slot *slot, unsigned g, void *p)
{
	struct mstat_section sec = { slot, g };
	size_t u;

	if (UNLIKELY(mstat_arena_has(p))) {
		u = mstat_arena_usable(p);
		mstat_section_count_classes(&sec, MSTAT_OP_FREE, mstat_size_class(u),
					    u, 0, 0, 0);
		mstat_section_close(&sec);
		return;
	}
	bool pooled = mstat_pool_has(p);
	if (UNLIKELY(pooled)) {
		if (mstat_pool_own(p)) { /* the library's: never counted */
			mstat_section_close(&sec);
			mstat_pool_free(p);
			return;
		}
		/* A sample pool block is a sampled one, remembered while it
		 * lives; any other address there is refused. */
		if (!mstat_profile_freed(p, &u)) {
			mstat_section_close(&sec);
			return;
		}
	} else {
		u = mstat_sample_leaving(p, mstat_glibc_usable(p));
	}
	mstat_section_count_classes(&sec, MSTAT_OP_FREE, mstat_size_class(u), u,
				    0, 0, 0);
	if (UNLIKELY(pooled))
		mstat_pool_free(p);
	else
		mstat_next.free(p);
	mstat_section_close(&sec);
}

MSTAT_START_TEXT __attribute__((noinline)) void
mstat_malloc_free_slow(void *p)
{
	struct mstat_section sec;
	size_t size;

	if (UNLIKELY(mstat_own_block(p))) { /* the library's: never counted */
		mstat_pool_free(p);
		return;
	}
	if (p != NULL && !mstat_arena_has(p) && mstat_may_be_sampled(p) &&
	    mstat_profile_freed(p, &size)) {
		mstat_sampled_free(p, size);
		return;
	}
	if (UNLIKELY(mstat_pool_has(p)))
		return; /* no live sampled block: refused */
	if (UNLIKELY(mstat_next_state() != MSTAT_NEXT_HEADER) || UNLIKELY(p == NULL) ||
	    UNLIKELY(mstat_arena_has(p))) {
		free_other(p);
		return;
	}
	if (!mstat_slots_open_slow(&sec)) {
		size = mstat_glibc_usable(p); /* not a sampled block: see above */
		mstat_shared_count_unslotted(MSTAT_OP_FREE, size, 0, 0);
		mstat_next.free(p);
		return;
	}
	mstat_free_header(&sec, p);
}

MSTAT_START_TEXT ENTRY_ALIGN MSTAT_EXPORT void
free(void *p)
{
	mstat_do_free(p);
}

/* calloc but for its fast path; `due`: the countdown ran out.  Every
 * calloc of a process that has no segment yet comes here. */
static MSTAT_START_TEXT __attribute__((noinline)) void *
calloc_slow(size_t n, size_t size, size_t total, bool due, const void *caller)
{
	void *p;

	if (UNLIKELY(mstat_own_work()) && (p = mstat_own_alloc(total, true)))
		return p;
	bool sample = due && mstat_profile_begin(total);
	if (UNLIKELY(!mstat_next_ready())) {
		if (sample)
			mstat_profile_cancel();
		/* Zeroed: an arena block is never reused. */
		return mstat_arena_alloc(total, MSTAT_ARENA_ALIGN);
	}
	ALLOCATE(p, mstat_next.calloc(n, size), total);
	return UNLIKELY(sample) ? mstat_sampled(p, total, 0, 0, true, caller) : p;
}

MSTAT_START_TEXT ENTRY_ALIGN MSTAT_EXPORT void *
calloc(size_t n, size_t size)
{
	struct mstat_shm_slot *slot = mstat_thread.fast;
	struct mstat_section sec;
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	/* As malloc's fast path (mstat_do_malloc()); the rest out of line. */
	bool due = mstat_sample_due(total);
	if (UNLIKELY(due) || UNLIKELY(slot == NULL) ||
	    UNLIKELY(mstat_wsection_begin(slot, &mstat_writer_config.epoch, false,
					  &sec.g) != MSTAT_WS_OPEN))
		return calloc_slow(n, size, total, due, __builtin_return_address(0));
	sec.slot = slot;
	void *p = mstat_next.calloc(n, size);
	if (LIKELY(p != NULL) && LIKELY(mstat_count_header_small(&sec, p, total))) {
		mstat_section_close(&sec);
		return p;
	}
	return mstat_malloc_header_large(slot, sec.g, p, total);
}

/* With glibc's header, in section `sec` if it is open (else without one
 * of the thread's own): the count of a realloc of a block of class
 * `old_class` and `old_size` bytes that gave `p` for `n` bytes; the
 * section closed. */
static inline __attribute__((always_inline)) void
count_realloc(const struct mstat_section *sec, bool open, unsigned old_class,
	      size_t old_size, void *p, size_t n)
{
	size_t size = 0;

	if (p || n == 0) { /* glibc: realloc(p, 0) frees p, gives NULL */
		enum mstat_op op = p ? MSTAT_OP_REALLOC : MSTAT_OP_FREE;
		unsigned c = p ? mstat_glibc_class(p, &size) : 0;
		if (LIKELY(open))
			mstat_section_count_classes(sec, op, old_class, old_size, c,
						    size, n);
		else
			mstat_shared_count_unslotted(op, old_size, size, n);
	}
	if (LIKELY(open))
		mstat_section_close(sec);
}

/* With glibc's header, in section `sec` if it is open (else without one
 * of the thread's own): the realloc of live block `old`, counted; the
 * section closed. */
static inline __attribute__((always_inline)) void *
realloc_header(const struct mstat_section *sec, bool open, void *old, size_t n)
{
	size_t old_size;
	/* A sample left in place leaves the live table before glibc can
	 * free old; should the realloc fail, the block stays live,
	 * unsampled, and its site shows it freed.  It was counted with its
	 * own size: a moved one never comes here (mstat_sampled_realloc()). */
	unsigned old_class = mstat_glibc_class(old, &old_size);

	(void)mstat_sample_leaving(old, old_size);
	void *p = mstat_next.realloc(old, n);
	count_realloc(sec, open, old_class, old_size, p, n);
	return p;
}

/* realloc(NULL, n), out of line: malloc's inline path, not a second
 * copy of it among realloc's. */
static __attribute__((noinline)) void *
realloc_null(size_t n, const void *caller)
{
	return mstat_do_malloc(n, caller);
}

/* The end of realloc()'s inline path for anything but a small chunk
 * reallocated to a small chunk (realloc_chunk()), out of line as
 * mstat_malloc_header_large() is: in open section slot, g, the realloc of
 * `old`, whose header word was `old_header`, to `p`. */
static __attribute__((noinline)) void *
realloc_chunk_rest(struct mstat_shm_slot *slot, unsigned g, size_t old_header,
		   void *p, size_t n)
{
	struct mstat_section sec = { slot, g };
	size_t k = old_header >> 4;

	count_realloc(&sec, true, mstat_small_class[k], MSTAT_CHUNK_USABLE(k), p, n);
	return p;
}

/* In open section `sec`, with glibc's header: the realloc of `old`, a
 * small chunk (mstat_glibc_chunk(), its header word `old_header`, read while it
 * is live; never a sampled block, see MSTAT_SAMPLE_IN_PLACE), counted; the
 * section closed. */
static inline __attribute__((always_inline)) void *
realloc_chunk(const struct mstat_section *sec, void *old, size_t old_header,
	      size_t n)
{
	void *p = mstat_next.realloc(old, n);
	size_t h;

	if (LIKELY(p != NULL) && LIKELY(mstat_glibc_chunk(p, &h))) {
		mstat_wsection_chunk(sec->slot, sec->g, old_header, MSTAT_CHUNK_FREES);
		mstat_wsection_chunk(sec->slot, sec->g, h, MSTAT_CHUNK_ALLOCS);
		mstat_wsection_requested(sec->slot, sec->g, n);
		mstat_section_close(sec);
		return p;
	}
	return realloc_chunk_rest(sec->slot, sec->g, old_header, p, n);
}

/* realloc_header() out of line: realloc()'s inline path keeps to small
 * chunks, which are never sampled blocks.  A larger one may be. */
static __attribute__((noinline)) void *
realloc_header_other(struct mstat_shm_slot *slot, unsigned g, void *old, size_t n)
{
	struct mstat_section sec = { slot, g };

	if (UNLIKELY(mstat_may_be_sampled(old))) {
		mstat_section_close(&sec); /* it counted nothing */
		return mstat_own_block(old) ? mstat_own_realloc(old, n)
				      : mstat_sampled_realloc(old, n, false, NULL);
	}
	return realloc_header(&sec, true, old, n);
}

MSTAT_START_TEXT ENTRY_ALIGN MSTAT_EXPORT void *
realloc(void *old, size_t n)
{
	if (old == NULL)
		return realloc_null(n, __builtin_return_address(0));
	if (UNLIKELY(mstat_arena_has(old)))
		return mstat_arena_realloc(old, n);
	if (UNLIKELY(mstat_sample_due(n)) && n != 0)
		return mstat_sampled_realloc(old, n, mstat_profile_begin(n),
				       __builtin_return_address(0));
	/* As free's fast path (mstat_do_free()); the rest out of line. */
	struct mstat_shm_slot *slot = mstat_thread.fast;
	struct mstat_section sec;
	if (UNLIKELY(slot == NULL) ||
	    UNLIKELY(mstat_wsection_begin(slot, &mstat_writer_config.epoch, false,
					  &sec.g) != MSTAT_WS_OPEN))
		return UNLIKELY(mstat_may_be_sampled(old))
			       ? mstat_sampled_realloc(old, n, false, NULL)
			       : mstat_malloc_realloc_plain(old, n);
	sec.slot = slot;
	size_t h;
	if (LIKELY(mstat_glibc_chunk(old, &h)))
		return realloc_chunk(&sec, old, h, n);
	return realloc_header_other(slot, sec.g, old, n);
}

/* realloc of a block of the next allocator's that was not sampled, but
 * for realloc()'s fast path; every realloc of a process that has no
 * segment yet among them. */
MSTAT_START_TEXT __attribute__((noinline)) void *
mstat_malloc_realloc_plain(void *old, size_t n)
{
	struct mstat_section sec;
	size_t old_size;
	void *p;

	if (UNLIKELY(mstat_own_work()) && (p = mstat_own_realloc_into(old, n)))
		return p;
	/* The old block is live and this thread's until mstat_next.realloc(). */
	if (LIKELY(mstat_next_header())) {
		bool open = mstat_section_open(&sec);
		return realloc_header(&sec, open, old, n);
	}
	bool unsized_old = mstat_unsized_any() && mstat_unsized_forget(old, &old_size);
	if (!unsized_old)
		old_size = mstat_next_usable(old);
	p = mstat_next.realloc(old, n);
	if (LIKELY(p != NULL))
		mstat_count(MSTAT_OP_REALLOC, old_size, mstat_new_size(p, n), n);
	else if (n == 0)
		mstat_count(MSTAT_OP_FREE, old_size, 0, 0);
	else if (unsized_old) /* failed: old is still live, as it was */
		mstat_unsized_note(old, old_size);
	return p;
}

/* As glibc's: realloc(old, n * size) unless the product overflows. */
MSTAT_EXPORT void *
reallocarray(void *old, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, total);
}

MSTAT_EXPORT int
posix_memalign(void **out, size_t align, size_t n)
{
	void *p;
	int rc;

	if (UNLIKELY(mstat_own_work()) && align <= 16 && !(align & (align - 1)) &&
	    align % sizeof(void *) == 0 && (p = mstat_own_alloc(n, false))) {
		*out = p;
		return 0;
	}
	if (UNLIKELY(!mstat_next_ready())) {
		if (align == 0 || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		p = mstat_arena_alloc(n, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	bool sample = UNLIKELY(mstat_sample_due(n)) && mstat_profile_begin(n);
	struct mstat_section sec;
	if (LIKELY(mstat_next_header())) {
		bool open = mstat_section_open(&sec);
		rc = mstat_next.posix_memalign(&p, align, n);
		if (rc == 0 && open)
			count_header_alloc(&sec, p, n);
		else if (rc == 0)
			mstat_shared_count_unslotted(MSTAT_OP_ALLOC, 0,
						     mstat_glibc_usable(p), n);
		if (open)
			mstat_section_close(&sec);
	} else {
		rc = mstat_next.posix_memalign(&p, align, n);
		if (rc == 0)
			p = counted(p, n);
	}
	if (UNLIKELY(sample))
		p = mstat_sampled(rc == 0 ? p : NULL, n, align, 0, false,
			    __builtin_return_address(0));
	if (rc == 0)
		*out = p;
	return rc;
}

MSTAT_EXPORT void *
aligned_alloc(size_t align, size_t n)
{
	void *p;

	if (UNLIKELY(mstat_own_work()) && align <= 16 && !(align & (align - 1)) &&
	    (p = mstat_own_alloc(n, false)))
		return p;
	if (UNLIKELY(!mstat_next_ready()))
		return align & (align - 1) ? NULL : mstat_arena_alloc(n, align);
	bool sample = UNLIKELY(mstat_sample_due(n)) && mstat_profile_begin(n);
	ALLOCATE(p, mstat_next.aligned_alloc(align, n), n);
	return UNLIKELY(sample) ? mstat_sampled(p, n, align, 0, false,
					  __builtin_return_address(0)) : p;
}

MSTAT_EXPORT void *
memalign(size_t align, size_t n)
{
	void *p;

	if (UNLIKELY(mstat_own_work()) && align <= 16 && !(align & (align - 1)) &&
	    (p = mstat_own_alloc(n, false)))
		return p;
	if (UNLIKELY(!mstat_next_ready()))
		return align & (align - 1) ? NULL : mstat_arena_alloc(n, align);
	bool sample = UNLIKELY(mstat_sample_due(n)) && mstat_profile_begin(n);
	ALLOCATE(p, mstat_next.memalign(align, n), n);
	return UNLIKELY(sample) ? mstat_sampled(p, n, align, 0, false,
					  __builtin_return_address(0)) : p;
}

/* The page size, for valloc() and pvalloc() only: asked on their first
 * call, not at every start. */
static size_t
page_size(void)
{
	static _Atomic size_t page;
	size_t p = atomic_load_explicit(&page, memory_order_relaxed);

	if (!p) {
		p = (size_t)getpagesize();
		atomic_store_explicit(&page, p, memory_order_relaxed);
	}
	return p;
}

/* As glibc's: memalign(page, n).  valloc() and pvalloc() are counted,
 * but take no step of the sampling countdown and are never sampled. */
MSTAT_EXPORT void *
valloc(size_t n)
{
	if (UNLIKELY(!mstat_next_ready()))
		return mstat_arena_alloc(n, 4096);
	void *p;
	ALLOCATE(p, mstat_next.memalign(page_size(), n), n);
	return p;
}

/* As glibc's: memalign(page, n rounded up to a page). */
MSTAT_EXPORT void *
pvalloc(size_t n)
{
	size_t rounded;

	if (UNLIKELY(!mstat_next_ready()))
		return mstat_arena_alloc(n, 4096);
	size_t page = page_size();
	if (__builtin_add_overflow(n, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	void *p;
	ALLOCATE(p, mstat_next.memalign(page, rounded), n);
	return p;
}

MSTAT_EXPORT size_t
malloc_usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (mstat_arena_has(p))
		return mstat_arena_usable(p);
	/* A sampled block: the plain block's size, as it was counted (it
	 * holds at least that). */
	size_t size;
	if (UNLIKELY(mstat_may_be_sampled(p)) && mstat_profile_owns(p, &size))
		return size;
	if (mstat_pool_has(p)) /* the library's own; else no live sampled block */
		return mstat_pool_own(p) ? mstat_pool_usable(p) : 0;
	return mstat_next_ready() ? mstat_next.usable(p) : 0;
}
