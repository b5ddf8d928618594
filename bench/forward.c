/* SPDX-License-Identifier: MIT */
/*
 * forward.c - an interposer that only forwards: what interposition alone
 * costs (LD_PRELOAD=mstat-bench-forward.so).  Built twice more as floors
 * under any counting interposer (bench/meson.build, MBENCH_FLOOR):
 *
 *   1  mstat-bench-floor-count.so: malloc and free also add 1 to a
 *      per-thread counter picked by the block's glibc chunk size: a count
 *      with no section, the least a count can cost;
 *   2  mstat-bench-floor-section.so: that add as the library makes it,
 *      a chunk row of its slot layout in an update section of
 *      shm/section.h (membarrier mode) around the next allocator's call,
 *      on a slot in private memory: the least a consistent count can
 *      cost.  Nothing else of the library: no requested bytes, no
 *      sampling, no realloc or calloc counts, no segment.
 *
 * Each function calls the next definition in the RTLD_NEXT chain through a
 * pointer resolved once, as a counting interposer would, and does nothing
 * else.  While the pointers are being resolved (dlsym may allocate), the
 * few allocations made are served from a static buffer and never freed.
 * The floors assume glibc's chunk header, as lib/next.h does once its
 * self-test passes.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef MBENCH_FLOOR
#define MBENCH_FLOOR 0
#endif
#if MBENCH_FLOOR == 2
#include <sys/mman.h>

#include "shm/section.h"
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS_IE __attribute__((tls_model("initial-exec")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);

static alignas(64) unsigned char boot[16384];
static size_t boot_used;
static int resolving;

static void *
boot_alloc(size_t n)
{
	size_t at = (boot_used + 15) & ~(size_t)15;

	if (n > sizeof(boot) - at)
		return NULL;
	boot_used = at + n;
	return boot + at;
}

static int
is_boot(const void *p)
{
	return (const unsigned char *)p >= boot &&
	       (const unsigned char *)p < boot + sizeof(boot);
}

#if MBENCH_FLOOR
/* A floor's count of block `p`, `which` 0 for an allocation, 1 for a
 * free: floor_open(), then the next allocator's call with floor_count()
 * before or after it, then floor_close(). */
struct floor {
#if MBENCH_FLOOR == 2
	struct mstat_shm_slot *slot;
	unsigned g;
#else
	char unused; /* C has no empty struct */
#endif
};

static inline size_t
chunk_of(const void *p)
{
	return ((const size_t *)p)[-1];
}

#if MBENCH_FLOOR == 1
static _Thread_local uint64_t counts[2][64] TLS_IE;

static inline bool
floor_open(struct floor *f)
{
	(void)f;
	return true;
}

static inline void
floor_count(struct floor *f, const void *p, unsigned which)
{
	(void)f;
	counts[which][(chunk_of(p) >> 4) & 63]++;
}

static inline void
floor_close(struct floor *f)
{
	(void)f;
}
#elif MBENCH_FLOOR == 2
static struct {
	alignas(64) _Atomic uint64_t epoch;
} control;
static _Atomic uintptr_t epoch_word; /* the writer's (shm/section.h) */
static _Thread_local struct mstat_shm_slot *slot TLS_IE;

static __attribute__((noinline)) struct mstat_shm_slot *
claim(void)
{
	void *p = mmap(NULL, MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : (slot = p);
}

static inline bool
floor_open(struct floor *f)
{
	f->slot = slot;
	if (__builtin_expect(!f->slot, 0) && !(f->slot = claim()))
		return false;
	return mstat_wsection_begin(f->slot, &epoch_word, false, &f->g) ==
	       MSTAT_WS_OPEN;
}

static inline void
floor_count(struct floor *f, const void *p, unsigned which)
{
	size_t h = chunk_of(p);

	if (h < MSTAT_CHUNK_LIMIT)
		mstat_wsection_chunk(f->slot, f->g, h,
				     which ? MSTAT_CHUNK_FREES : MSTAT_CHUNK_ALLOCS);
}

static inline void
floor_close(struct floor *f)
{
	mstat_wsection_end(f->slot);
}
#endif
#endif /* MBENCH_FLOOR */

static void
resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
#if MBENCH_FLOOR == 2
	atomic_store(&epoch_word, mstat_epoch_word(&control.epoch));
#endif
	*(void **)&next_calloc = dlsym(RTLD_NEXT, "calloc");
	*(void **)&next_free = dlsym(RTLD_NEXT, "free");
	*(void **)&next_realloc = dlsym(RTLD_NEXT, "realloc");
	*(void **)&next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	*(void **)&next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	*(void **)&next_memalign = dlsym(RTLD_NEXT, "memalign");
	*(void **)&next_malloc = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
}

__attribute__((constructor)) static void
forward_init(void)
{
	resolve();
}

EXPORT void *
malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0)) {
		resolve();
		if (!next_malloc)
			return boot_alloc(n);
	}
#if MBENCH_FLOOR
	struct floor f;
	if (floor_open(&f)) {
		void *p = next_malloc(n);
		if (p)
			floor_count(&f, p, 0);
		floor_close(&f);
		return p;
	}
#endif
	return next_malloc(n);
}

EXPORT void
free(void *p)
{
	if (__builtin_expect(!next_free || is_boot(p), 0)) {
		if (!is_boot(p) && p) {
			resolve();
			if (next_free)
				next_free(p);
		}
		return;
	}
#if MBENCH_FLOOR
	struct floor f;
	if (p && floor_open(&f)) {
		floor_count(&f, p, 1);
		next_free(p);
		floor_close(&f);
		return;
	}
#endif
	next_free(p);
}

EXPORT void *
calloc(size_t n, size_t m)
{
	if (__builtin_expect(!next_calloc, 0)) {
		resolve();
		if (!next_calloc) {
			if (m && n > SIZE_MAX / m)
				return NULL;
			return boot_alloc(n * m); /* static: already zero */
		}
	}
	return next_calloc(n, m);
}

EXPORT void *
realloc(void *p, size_t n)
{
	if (__builtin_expect(!next_realloc || is_boot(p), 0)) {
		resolve();
		if (is_boot(p)) {
			void *q = malloc(n);
			if (q) {
				size_t room = (size_t)(boot + sizeof(boot) -
						       (unsigned char *)p);
				memcpy(q, p, n < room ? n : room);
			}
			return q;
		}
	}
	return next_realloc(p, n);
}

EXPORT int
posix_memalign(void **out, size_t align, size_t n)
{
	if (!next_posix_memalign)
		resolve();
	return next_posix_memalign(out, align, n);
}

EXPORT void *
aligned_alloc(size_t align, size_t n)
{
	if (!next_aligned_alloc)
		resolve();
	return next_aligned_alloc(align, n);
}

EXPORT void *
memalign(size_t align, size_t n)
{
	if (!next_memalign)
		resolve();
	return next_memalign(align, n);
}
