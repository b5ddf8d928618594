/* SPDX-License-Identifier: MIT */
/* attached.c - malloc and its family in an attached process; see
 * attached.h. */
#include "lib/attached.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "lib/next.h"
#include "lib/own.h"
#include "lib/patch.h"
#include "lib/profile.h"
#include "lib/shadow.h"
#include "lib/writer.h"

/* The count of `op`, into the section if it is open, else the way of
 * counts without one (writer.h). */
static inline void
count(const struct mstat_section *sec, bool open, enum mstat_op op,
      unsigned freed_class, uint64_t freed, unsigned size_class, uint64_t size,
      uint64_t requested)
{
	if (LIKELY(open))
		mstat_section_count_classes(sec, op, freed_class, freed, size_class,
					    size, requested);
	else
		mstat_shared_count_unslotted(op, freed, size, requested);
}

/* ---- allocations ---- */

/* An allocation under way: its section (opened before the allocator's
 * call, so that the call and its count are one update for a fork's
 * drain, as in libmstatshm), whether it is the library's own work, and
 * whether it is sampled. */
struct alloc {
	struct mstat_section sec;
	bool open, own, sample;
};

static inline void
alloc_begin(struct alloc *a, size_t n, bool may_sample)
{
	mstat_patch_check();
	a->own = mstat_own_work();
	a->sample = !a->own && may_sample && UNLIKELY(mstat_sample_due(n)) &&
		    mstat_profile_begin(n);
	a->open = !a->own && mstat_section_open(&a->sec);
}

/* The end of the sampling begun with the allocation: its stack, taken
 * outside the section (what libunwind allocates for it is the library's
 * own), or why there is none. */
static void
sample_end(void *p, struct mstat_sample *e, bool counted, const void *caller)
{
	if (e) {
		mstat_own_begin();
		mstat_profile_record(e, caller);
		mstat_own_end();
	} else if (p && counted) {
		mstat_profile_record(NULL, caller); /* the table is full: dropped */
	} else {
		mstat_profile_cancel();
	}
}

/* Block `p` (NULL: none was made), `n` bytes asked: tagged, counted,
 * sampled if due; the section closed. */
static inline void *
alloc_end(struct alloc *a, void *p, size_t n, const void *caller)
{
	struct mstat_sample *e = NULL;
	bool counted = false;

	if (UNLIKELY(a->own)) {
		if (p)
			(void)mstat_shadow_set(p, MSTAT_TAG_OWN);
		return p;
	}
	if (LIKELY(p != NULL)) {
		size_t u;
		unsigned c = mstat_glibc_class(p, &u);
		/* Inside the section: a fork child has the tag if it has the
		 * count. */
		counted = mstat_shadow_set(p, c + 1);
		if (LIKELY(counted)) {
			count(&a->sec, a->open, MSTAT_OP_ALLOC, 0, 0, c, u, n);
			if (UNLIKELY(a->sample) && (e = mstat_profile_note(p, n, u)))
				(void)mstat_shadow_set(p, MSTAT_TAG_SAMPLED);
		}
	}
	if (LIKELY(a->open))
		mstat_section_close(&a->sec);
	if (UNLIKELY(a->sample))
		sample_end(p, e, counted, caller);
	return p;
}

static inline void *
att_malloc(size_t n, const void *caller)
{
	struct alloc a;

	alloc_begin(&a, n, true);
	return alloc_end(&a, mstat_next.malloc(n), n, caller);
}

void *
mstat_attached_malloc(size_t n)
{
	return att_malloc(n, __builtin_return_address(0));
}

void *
mstat_attached_calloc(size_t n, size_t size)
{
	struct alloc a;
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	alloc_begin(&a, total, true);
	return alloc_end(&a, mstat_next.calloc(n, size), total,
			 __builtin_return_address(0));
}

int
mstat_attached_posix_memalign(void **out, size_t align, size_t n)
{
	struct alloc a;
	void *p = NULL;

	alloc_begin(&a, n, true);
	int rc = mstat_next.posix_memalign(&p, align, n);
	p = alloc_end(&a, rc == 0 ? p : NULL, n, __builtin_return_address(0));
	if (rc == 0)
		*out = p;
	return rc;
}

void *
mstat_attached_aligned_alloc(size_t align, size_t n)
{
	struct alloc a;

	alloc_begin(&a, n, true);
	return alloc_end(&a, mstat_next.aligned_alloc(align, n), n,
			 __builtin_return_address(0));
}

void *
mstat_attached_memalign(size_t align, size_t n)
{
	struct alloc a;

	alloc_begin(&a, n, true);
	return alloc_end(&a, mstat_next.memalign(align, n), n,
			 __builtin_return_address(0));
}

/* As glibc's: memalign(page, n).  valloc() and pvalloc() are counted,
 * but take no step of the sampling countdown, as in libmstatshm. */
void *
mstat_attached_valloc(size_t n)
{
	struct alloc a;

	alloc_begin(&a, n, false);
	return alloc_end(&a, mstat_next.memalign((size_t)getpagesize(), n), n, NULL);
}

/* As glibc's: memalign(page, n rounded up to a page). */
void *
mstat_attached_pvalloc(size_t n)
{
	size_t page = (size_t)getpagesize(), rounded;
	struct alloc a;

	if (__builtin_add_overflow(n, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	alloc_begin(&a, n, false);
	return alloc_end(&a, mstat_next.memalign(page, rounded), n, NULL);
}

/* ---- frees ---- */

/* What a block on its way out was: made since the attach and counted
 * (its class and usable size, which its count had), the library's own,
 * or anything else, for the prior row. */
enum was {
	WAS_PRIOR,
	WAS_COUNTED,
	WAS_OWN,
};

struct leaving {
	enum was was;
	unsigned tag, class;
	size_t size;
};

/* Live block `p` leaves (freed, or handed to realloc): its tag taken, its
 * size read while it is live. */
static inline void
leave(void *p, struct leaving *l)
{
	size_t counted;

	l->tag = mstat_shadow_take(p);
	l->class = mstat_glibc_class(p, &l->size);
	if (LIKELY(l->tag == l->class + 1)) {
		l->was = WAS_COUNTED;
	} else if (l->tag == MSTAT_TAG_SAMPLED) {
		/* Never moved: counted with its own size, as the table says. */
		(void)mstat_profile_freed(p, &counted);
		l->was = WAS_COUNTED;
	} else {
		l->was = l->tag == MSTAT_TAG_OWN ? WAS_OWN : WAS_PRIOR;
	}
}

/* The free of block `l` described, counted as what it was. */
static inline void
count_free(const struct mstat_section *sec, bool open, const struct leaving *l)
{
	if (l->was != WAS_OWN)
		count(sec, open, l->was == WAS_COUNTED ? MSTAT_OP_FREE : MSTAT_OP_PRIOR_FREE,
		      l->class, l->size, 0, 0, 0);
}

void
mstat_attached_free(void *p)
{
	struct mstat_section sec;
	struct leaving l;

	if (UNLIKELY(p == NULL))
		return; /* counts nothing */
	mstat_patch_check();
	bool open = mstat_section_open(&sec);
	leave(p, &l);
	count_free(&sec, open, &l);
	mstat_next.free(p);
	if (LIKELY(open))
		mstat_section_close(&sec);
}

/* ---- realloc ---- */

/* Block `p` of the realloc of `l` to `n` bytes, counted as one update:
 * the old block's free (or its prior count) and the new one's
 * allocation; the library's own stays its own.  Its sample entry, if
 * `sample`. */
static inline struct mstat_sample *
count_realloc(const struct mstat_section *sec, bool open, const struct leaving *l,
	      void *p, size_t n, bool own, bool sample)
{
	struct mstat_sample *e = NULL;
	size_t u;

	if (own || l->was == WAS_OWN) {
		(void)mstat_shadow_set(p, MSTAT_TAG_OWN);
		count_free(sec, open, l);
		return NULL;
	}
	unsigned c = mstat_glibc_class(p, &u);
	bool tagged = mstat_shadow_set(p, c + 1);
	enum mstat_op op = l->was == WAS_COUNTED
				   ? (tagged ? MSTAT_OP_REALLOC : MSTAT_OP_FREE)
				   : (tagged ? MSTAT_OP_PRIOR_REALLOC : MSTAT_OP_PRIOR_FREE);
	count(sec, open, op, l->class, l->size, c, u, n);
	if (tagged && sample && (e = mstat_profile_note(p, n, u)))
		(void)mstat_shadow_set(p, MSTAT_TAG_SAMPLED);
	return e;
}

static void *
att_realloc(void *old, size_t n, const void *caller)
{
	struct mstat_section sec;
	struct mstat_sample *e = NULL;
	struct leaving l;

	if (old == NULL)
		return att_malloc(n, caller);
	mstat_patch_check();
	bool own = mstat_own_work();
	bool sample = !own && n != 0 && UNLIKELY(mstat_sample_due(n)) &&
		      mstat_profile_begin(n);
	bool open = mstat_section_open(&sec);
	leave(old, &l);
	void *p = mstat_next.realloc(old, n);
	if (LIKELY(p != NULL))
		e = count_realloc(&sec, open, &l, p, n, own, sample);
	else if (n == 0) /* glibc: realloc(p, 0) frees p, gives NULL */
		count_free(&sec, open, &l);
	else /* failed: old is live, as it was (a sample no longer) */
		(void)mstat_shadow_set(old, l.tag == MSTAT_TAG_SAMPLED ? l.class + 1
								      : l.tag);
	if (LIKELY(open))
		mstat_section_close(&sec);
	if (UNLIKELY(sample))
		sample_end(p, e, p != NULL, caller);
	return p;
}

void *
mstat_attached_realloc(void *old, size_t n)
{
	return att_realloc(old, n, __builtin_return_address(0));
}

/* As glibc's: realloc(old, n * size) unless the product overflows. */
void *
mstat_attached_reallocarray(void *old, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return att_realloc(old, total, __builtin_return_address(0));
}
