/* SPDX-License-Identifier: MIT */
/*
 * lean.c - a proposal, not the library: the least a counting interposer
 * can do per malloc and free with the library's own update section, to
 * show how close to the floor the real one could get
 * (LD_PRELOAD=mstat-bench-lean.so; the hot loop's "lean-preload").
 *
 * Per call: one TLS load (the thread's slot), the block's usable size from
 * glibc's chunk header (as lib/next.h does when its self-test
 * passes), the class of sizes up to 1024 from a 64-byte table, and one
 * membarrier-mode section (shm/section.h) with two adds.  No touched
 * bitmap, no requested-bytes total, no mode test, no readiness test on the
 * fast path.  Slots are private memory, not a segment: nobody reads them.
 * Counts malloc and free only; everything else is forwarded as is.
 * glibc only (the header layout is assumed, not checked).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shm/section.h"
#include "shm/sizeclass.h"

#define EXPORT __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);

static alignas(64) unsigned char boot[16384];
static size_t boot_used;
static int resolving;

static struct {
	alignas(64) _Atomic uint64_t epoch;
} control;
static _Atomic uintptr_t epoch_word; /* the writer's (shm/section.h) */
static uint8_t small_class[65];

static _Thread_local struct mstat_shm_slot *slot
	__attribute__((tls_model("initial-exec")));

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
	return (uintptr_t)p - (uintptr_t)boot < sizeof(boot);
}

static void
resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	atomic_store(&epoch_word, mstat_epoch_word(&control.epoch));
	for (unsigned i = 0; i <= 64; i++)
		small_class[i] = (uint8_t)mstat_size_class(i * 16u);
	*(void **)&next_calloc = dlsym(RTLD_NEXT, "calloc");
	*(void **)&next_free = dlsym(RTLD_NEXT, "free");
	*(void **)&next_realloc = dlsym(RTLD_NEXT, "realloc");
	*(void **)&next_malloc = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
}

__attribute__((constructor)) static void
lean_init(void)
{
	resolve();
}

static __attribute__((noinline)) struct mstat_shm_slot *
claim(void)
{
	void *p = mmap(NULL, MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	slot = p;
	return p;
}

static inline size_t
glibc_usable(const void *p)
{
	size_t h = ((const size_t *)p)[-1];

	return (h & ~(size_t)7) - ((h & 2) ? 16 : 8);
}


static inline void
count(unsigned counter0, size_t size)
{
	struct mstat_shm_slot *s = slot;

	if (__builtin_expect(!s, 0) && !(s = claim()))
		return;
	unsigned c = size <= 1024 ? small_class[(size + 15) >> 4]
				  : mstat_size_class(size);
	unsigned g;
	if (mstat_wsection_begin(s, &epoch_word, false, &g) != MSTAT_WS_OPEN)
		return;
	mstat_wsection_add(s, g, c, counter0, 1);
	mstat_wsection_add(s, g, c, counter0 + 1, size);
	mstat_wsection_end(s);
}

EXPORT void *
malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0)) {
		resolve();
		if (!next_malloc)
			return boot_alloc(n);
	}
	void *p = next_malloc(n);
	if (__builtin_expect(p != NULL, 1))
		count(MSTAT_C_ALLOC_COUNT, glibc_usable(p));
	return p;
}

EXPORT void
free(void *p)
{
	if (__builtin_expect(!p || is_boot(p), 0))
		return;
	count(MSTAT_C_FREE_COUNT, glibc_usable(p));
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
			return boot_alloc(n * m);
		}
	}
	return next_calloc(n, m);
}

EXPORT void *
realloc(void *p, size_t n)
{
	if (__builtin_expect(is_boot(p), 0)) {
		void *q = malloc(n);
		if (q) {
			size_t room = (size_t)(boot + sizeof(boot) - (unsigned char *)p);
			memcpy(q, p, n < room ? n : room);
		}
		return q;
	}
	if (!next_realloc)
		resolve();
	return next_realloc(p, n);
}
