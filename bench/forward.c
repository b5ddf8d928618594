/* SPDX-License-Identifier: MIT */
/*
 * forward.c - an interposer that only forwards: what interposition alone
 * costs (LD_PRELOAD=mstat-bench-forward.so).
 *
 * Each function calls the next definition in the RTLD_NEXT chain through a
 * pointer resolved once, as a counting interposer would, and does nothing
 * else.  While the pointers are being resolved (dlsym may allocate), the
 * few allocations made are served from a static buffer and never freed.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

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

static void
resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
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
