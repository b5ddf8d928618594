/* SPDX-License-Identifier: MIT */
/*
 * cxx.c - C++ operator new and delete, every form, counted as malloc and
 * free are (malloc.c), and forwarded to the next definition.
 *
 * libstdc++'s operators call malloc and free, which count.  jemalloc and
 * tcmalloc define the operators themselves, and theirs never call malloc:
 * a C++ program stacked on them would go uncounted.  So the library
 * defines the operators too (under their mangled names; the C names are
 * mstat_cxx_*) and forwards each to the next definition in the chain.  It
 * counts in the operator only when that next definition lives in the same
 * object as the next malloc (an allocator that implements both), and
 * leaves the counting to malloc and free otherwise.  Even an allocator's
 * own operator may call its public malloc family through the PLT, that
 * is, this library's (jemalloc's aligned new calls aligned_alloc, its
 * aligned nothrow delete calls free): the operator then sees its thread's
 * slot `seq` move during the call and does not count again.  A thread
 * without a slot of its own cannot see that; it goes by what the operator
 * learned on threads that could (and counts if nothing was learned yet).
 * A std::bad_alloc thrown by the next operator new unwinds through
 * these C frames (the library is built with -fexceptions).
 *
 * When the next definition is libstdc++'s, whose operator new is a loop
 * around malloc (with the new-handler and the throw when malloc fails)
 * and whose every operator delete is free, the operators call malloc and
 * free themselves and skip that layer: an allocation-heavy C++ program
 * paid a third of the library's time in it.  Only the failure of malloc
 * goes on to libstdc++, which runs its loop.  Aligned new keeps going
 * through libstdc++, which rounds the size its own way.
 */
#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arena.h"
#include "lib/malloc_inline.h"
#include "lib/next.h"
#include "lib/pool.h"
#include "lib/profile.h"
#include "lib/sampled.h"
#include "lib/unsized.h"
#include "lib/writer.h"

enum cxx_how {
	CXX_FORWARD,   /* call the next operator; malloc and free count */
	CXX_MALLOC,    /* the next is libstdc++'s: call malloc and free */
	CXX_COUNT,     /* the next allocator implements both: count here */
};

struct cxx_next {
	_Atomic(void *) fn;
	_Atomic int how;     /* enum cxx_how, stored before fn */
	_Atomic int inner;   /* the next operator counted itself: 0 not known,
			      * 1 yes, 2 no */
};

/* Where this thread's counting stands, before a call to the next operator. */
struct cxx_mark {
	struct mstat_shm_slot *slot;
	uint64_t seq;
};

static inline struct cxx_mark
cxx_mark(void)
{
	struct cxx_mark m = { mstat_thread.own, 0 };

	if (m.slot) /* this thread's own: a relaxed load sees its last store */
		m.seq = atomic_load_explicit(&m.slot->head.seq, memory_order_relaxed);
	return m;
}

/* After the call: whether a section was counted during it. */
static bool
cxx_counted_inside(struct cxx_next *n, struct cxx_mark m)
{
	struct mstat_shm_slot *now = mstat_thread.own;
	bool inside;

	if (now && now == m.slot)
		inside = atomic_load_explicit(&now->head.seq,
					      memory_order_relaxed) != m.seq;
	else if (now && !m.slot)
		inside = true; /* the call claimed the thread's first slot */
	else
		return atomic_load_explicit(&n->inner, memory_order_relaxed) == 1;
	atomic_store_explicit(&n->inner, inside ? 1 : 2, memory_order_relaxed);
	return inside;
}

/* Whether the object `m` is libstdc++ (its file name). */
static bool
is_libstdcxx(const struct link_map *m)
{
	const char *name = m && m->l_name ? strrchr(m->l_name, '/') : NULL;

	name = name ? name + 1 : m && m->l_name ? m->l_name : "";
	return strncmp(name, "libstdc++.so", 12) == 0;
}

static __attribute__((noinline)) void *
cxx_resolve(struct cxx_next *n, const char *sym)
{
	void *fn;

	if (!mstat_next_ready() || !(fn = dlsym(RTLD_NEXT, sym)))
		return NULL;
	const struct link_map *obj = mstat_next_object_of(fn);
	int how = obj && obj == mstat_next_object_of(*(void **)&mstat_next.malloc) ? CXX_COUNT
		  : is_libstdcxx(obj)				 ? CXX_MALLOC
								 : CXX_FORWARD;
	atomic_store_explicit(&n->how, how, memory_order_relaxed);
	/* Release: pairs with the acquire in cxx_next(); `how` is set. */
	atomic_store_explicit(&n->fn, fn, memory_order_release);
	return fn;
}

/* The next definition of `sym`, or NULL if there is none (no C++ runtime
 * loaded).  Resolved on first use: a C++ library dlopen()ed later is
 * found then. */
static inline void *
cxx_next(struct cxx_next *n, const char *sym, int *how)
{
	/* Acquire: pairs with the release in cxx_resolve(); `how` is set. */
	void *fn = atomic_load_explicit(&n->fn, memory_order_acquire);

	if (UNLIKELY(!fn) && !(fn = cxx_resolve(n, sym)))
		return NULL;
	*how = atomic_load_explicit(&n->how, memory_order_relaxed);
	return fn;
}

/* Whether the next definition is known to be libstdc++'s, which the
 * operators then skip.  Relaxed: `how` is stored once, and this answer
 * needs nothing else resolution wrote (the next operator, which does, is
 * loaded with acquire in cxx_next()). */
static inline bool
cxx_skips(struct cxx_next *n)
{
	return atomic_load_explicit(&n->how, memory_order_relaxed) == CXX_MALLOC;
}

#define CXX_UNPAREN(...) __VA_ARGS__

/*
 * Each operator is a short exported function, which does what malloc or
 * free does, inline, when the next definition is libstdc++'s (the case of
 * almost every C++ program on glibc), and a noinline rest for everything
 * else: resolution, the other allocators, the failure of malloc.  Kept
 * apart, the exported one needs no frame of its own.  `caller` is the
 * operator's caller, for a sampled block's stack.  Without a next
 * definition, plain malloc and free stand in.
 */
#define CXX_NEW(e, sym, params, args, n, align)                              \
	static struct cxx_next cxx_##e;                                      \
	static __attribute__((noinline)) void *                              \
	cxx_##e##_rest(const void *caller, CXX_UNPAREN params)               \
	{                                                                    \
		struct cxx_next *nx = &cxx_##e;                              \
		int how;                                                     \
		void *(*f) params;                                           \
		*(void **)&f = cxx_next(nx, sym, &how);                      \
		if (UNLIKELY(!f))                                            \
			return align ? memalign(align, n) : mstat_do_malloc(n, caller); \
		if (how == CXX_MALLOC && !align) {                           \
			void *q = mstat_do_malloc(n ? n : 1, caller);              \
			return LIKELY(q != NULL) ? q : f args;               \
		}                                                            \
		if (how != CXX_COUNT)                                        \
			return f args;                                       \
		struct cxx_mark m = cxx_mark();                              \
		void *p = f args; /* may throw: nothing begun yet */         \
		if (!p || cxx_counted_inside(nx, m))                         \
			return p; /* our malloc counted, and sampled */      \
		mstat_count(MSTAT_OP_ALLOC, 0, mstat_new_size(p, n), n);           \
		if (UNLIKELY(mstat_sample_due(n)) && mstat_profile_begin(n)) \
			p = mstat_sampled(p, n, align, 0, false, caller);          \
		return p;                                                    \
	}                                                                    \
	MSTAT_EXPORT void *mstat_cxx_##e params __asm__(sym);                \
	void *mstat_cxx_##e params                                           \
	{                                                                    \
		if (!align && LIKELY(cxx_skips(&cxx_##e))) {                 \
			void *q = mstat_do_malloc(n ? n : 1,                       \
					    __builtin_return_address(0));    \
			if (LIKELY(q != NULL))                               \
				return q;                                    \
		}                                                            \
		return cxx_##e##_rest(__builtin_return_address(0),           \
				      CXX_UNPAREN args);                     \
	}

#define CXX_DELETE(e, sym, params, args)                                     \
	static struct cxx_next cxx_##e;                                      \
	static __attribute__((noinline)) void                                \
	cxx_##e##_rest params                                                \
	{                                                                    \
		struct cxx_next *nx = &cxx_##e;                              \
		int how;                                                     \
		void (*f) params;                                            \
		*(void **)&f = cxx_next(nx, sym, &how);                      \
		if (UNLIKELY(!f || mstat_arena_has(p)) || how == CXX_MALLOC) {      \
			free(p); /* new fell back, or libstdc++'s */         \
			return;                                              \
		}                                                            \
		if (how != CXX_COUNT || !p) {                                \
			f args;                                              \
			return;                                              \
		}                                                            \
		/* A sampled block is the next malloc's, a pool block the    \
		 * library's: free() frees them. */                          \
		if (UNLIKELY(mstat_may_be_sampled(p)) &&                           \
		    (mstat_pool_has(p) || mstat_profile_owns(p, NULL))) {    \
			free(p);                                             \
			return;                                              \
		}                                                            \
		/* Sized while p is live; counted once the call shows        \
		 * whether free() already did. */                            \
		size_t size;                                                 \
		bool uns = mstat_unsized_any() && mstat_unsized_find(p, &size);          \
		if (!uns)                                                    \
			size = mstat_next_usable(p);                                    \
		struct cxx_mark m = cxx_mark();                              \
		f args;                                                      \
		if (!cxx_counted_inside(nx, m)) {                            \
			if (uns)                                             \
				mstat_unsized_forget(p, &size);                    \
			mstat_count(MSTAT_OP_FREE, size, 0, 0);              \
		}                                                            \
	}                                                                    \
	MSTAT_EXPORT void mstat_cxx_##e params __asm__(sym);                 \
	void mstat_cxx_##e params                                            \
	{                                                                    \
		if (LIKELY(cxx_skips(&cxx_##e)))                             \
			mstat_do_free(p);                                          \
		else                                                         \
			cxx_##e##_rest args;                                 \
	}

CXX_NEW(nw, "_Znwm", (size_t n), (n), n, 0)
CXX_NEW(na, "_Znam", (size_t n), (n), n, 0)
CXX_NEW(nw_nt, "_ZnwmRKSt9nothrow_t", (size_t n, const void *nt), (n, nt), n, 0)
CXX_NEW(na_nt, "_ZnamRKSt9nothrow_t", (size_t n, const void *nt), (n, nt), n, 0)
CXX_NEW(nw_al, "_ZnwmSt11align_val_t", (size_t n, size_t al), (n, al), n, al)
CXX_NEW(na_al, "_ZnamSt11align_val_t", (size_t n, size_t al), (n, al), n, al)
CXX_NEW(nw_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t",
	(size_t n, size_t al, const void *nt), (n, al, nt), n, al)
CXX_NEW(na_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t",
	(size_t n, size_t al, const void *nt), (n, al, nt), n, al)

CXX_DELETE(dl, "_ZdlPv", (void *p), (p))
CXX_DELETE(da, "_ZdaPv", (void *p), (p))
CXX_DELETE(dl_sz, "_ZdlPvm", (void *p, size_t n), (p, n))
CXX_DELETE(da_sz, "_ZdaPvm", (void *p, size_t n), (p, n))
CXX_DELETE(dl_nt, "_ZdlPvRKSt9nothrow_t", (void *p, const void *nt), (p, nt))
CXX_DELETE(da_nt, "_ZdaPvRKSt9nothrow_t", (void *p, const void *nt), (p, nt))
CXX_DELETE(dl_al, "_ZdlPvSt11align_val_t", (void *p, size_t al), (p, al))
CXX_DELETE(da_al, "_ZdaPvSt11align_val_t", (void *p, size_t al), (p, al))
CXX_DELETE(dl_sz_al, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t al),
	   (p, n, al))
CXX_DELETE(da_sz_al, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t al),
	   (p, n, al))
CXX_DELETE(dl_al_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t",
	   (void *p, size_t al, const void *nt), (p, al, nt))
CXX_DELETE(da_al_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	   (void *p, size_t al, const void *nt), (p, al, nt))
