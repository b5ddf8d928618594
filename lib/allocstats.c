/* SPDX-License-Identifier: MIT */
/*
 * allocstats.c - what the library tells readers of the allocator behind
 * it; see allocstats.h.
 *
 * The ordered accesses, named as in docs/design.md:
 *   (N) the reader's `request`, a value compared with the last one
 *       answered: relaxed.
 *   (O) the answer, a seqlock: shm/answer.h.
 *   (T) `answering`, process-local: the one thread that answers takes it
 *       (acquire CAS) and gives it back (release store), the last
 *       request answered and its time with it.
 */
#include "lib/allocstats.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "shm/answer.h"
#include "shm/clock.h"
#include "lib/next.h"
#include "lib/own.h"
#include "lib/pool.h"
#include "lib/writer.h"

typedef int (*mallctl_fn)(const char *name, void *old, size_t *oldlen,
			  void *new, size_t newlen);
typedef int (*property_fn)(const char *name, size_t *value);

/* The allocator, found as the segment is made; process memory. */
static struct {
	uint32_t kind;            /* enum mstat_allocator */
	mallctl_fn mallctl;       /* jemalloc's */
	property_fn property;     /* tcmalloc's */
	/* The last request answered, and CLOCK_MONOTONIC_COARSE then:
	 * written by the thread that holds `answering`, loaded by any
	 * (relaxed: values, read again under it before they matter). */
	_Atomic uint64_t answered, answered_ns;
	_Atomic bool answering;   /* a thread answers: another skips */
} alloc;

/* The allocator serving malloc: glibc's if the next malloc is in the
 * object that defines getenv(); else jemalloc or tcmalloc if the object
 * of the next malloc defines their statistics' entry point.  A program
 * that brings another allocator under the same names is asked nothing.
 * glibc's is told without dlsym(), whose failed searches allocate (a
 * message): a process behind glibc would map the pool for it. */
static void
find_allocator(void)
{
	char *(*libc_getenv)(const char *) = getenv;
	/* The next malloc, found as next.c finds it, but not resolved for
	 * the interposer: that stays its first call's to do. */
	void *next = mstat_next_state() >= MSTAT_NEXT_ASK
			     ? *(void **)&mstat_next.malloc
			     : dlsym(RTLD_NEXT, "malloc");

	if (!next)
		return; /* none: nothing to ask */
	const void *m = mstat_next_object_of(next);
	if (m && m == mstat_next_object_of(*(void **)&libc_getenv)) {
		alloc.kind = MSTAT_ALLOCATOR_GLIBC;
		return;
	}
	void *je = dlsym(RTLD_DEFAULT, "mallctl");
	void *tc = je && m == mstat_next_object_of(je)
			   ? NULL
			   : dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
	if (je && m == mstat_next_object_of(je)) {
		alloc.kind = MSTAT_ALLOCATOR_JEMALLOC;
		*(void **)&alloc.mallctl = je;
	} else if (tc && m == mstat_next_object_of(tc)) {
		alloc.kind = MSTAT_ALLOCATOR_TCMALLOC;
		*(void **)&alloc.property = tc;
	} else {
		alloc.kind = MSTAT_ALLOCATOR_OTHER;
	}
}

/* The writer's `segment` hook: as the library's own work, before the
 * segment is made (dlsym may allocate). */
static void
on_segment(void)
{
	if (alloc.kind == MSTAT_ALLOCATOR_UNKNOWN)
		find_allocator();
}

void
mstat_allocstats_made(struct mstat_shm_header *h)
{
	struct mstat_shm_alloc *a =
		(struct mstat_shm_alloc *)((char *)h + MSTAT_ALLOC_OFFSET);

	a->allocator = alloc.kind;
	a->pool_own_offset = (uint32_t)MSTAT_POOL_OWN_OFFSET;
	a->pool_size = MSTAT_POOL_SIZE;
}

/* A figure the allocator gives, or 0. */
static uint64_t
jemalloc_stat(const char *name)
{
	size_t v = 0, len = sizeof(v);

	return alloc.mallctl(name, &v, &len, NULL, 0) == 0 ? v : 0;
}

static uint64_t
tcmalloc_stat(const char *name)
{
	size_t v = 0;

	return alloc.property(name, &v) ? v : 0;
}

/* The allocator's figures, asked now: jemalloc's after an "epoch", which
 * refreshes them (it merges each arena's under the arena's locks). */
static void
ask(uint64_t f[4])
{
	if (alloc.kind == MSTAT_ALLOCATOR_JEMALLOC) {
		uint64_t epoch = 1;
		size_t len = sizeof(epoch);
		(void)alloc.mallctl("epoch", &epoch, &len, &epoch, len);
		f[0] = jemalloc_stat("stats.resident");
		f[1] = jemalloc_stat("stats.allocated");
		f[2] = jemalloc_stat("stats.metadata");
		f[3] = jemalloc_stat("stats.retained");
	} else {
		/* gperftools: the physical bytes are the page heap's, less
		 * what it gave back, plus its metadata. */
		uint64_t heap = tcmalloc_stat("generic.heap_size");
		f[3] = tcmalloc_stat("tcmalloc.pageheap_unmapped_bytes");
		f[0] = tcmalloc_stat("generic.total_physical_bytes");
		f[1] = tcmalloc_stat("generic.current_allocated_bytes");
		f[2] = f[0] + f[3] > heap ? f[0] + f[3] - heap : 0;
	}
}

/* Asks the allocator and writes its answer to request `req` into `a`. */
static void
answer(struct mstat_shm_alloc *a, uint64_t req)
{
	uint64_t f[4], cpu = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID);

	/* What the allocator's question allocates, if anything, is the
	 * library's own; and nothing in it is sampled. */
	mstat_thread.in_sample = true;
	mstat_own_begin();
	ask(f);
	mstat_own_end();
	mstat_thread.in_sample = false;
	mstat_answer_write(a, &(struct mstat_alloc_figures){
		.answered = req,
		.answer_ns = mstat_clock_wall_ns(),
		.cost_ns = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu,
		.resident = f[0], .allocated = f[1], .metadata = f[2],
		.retained = f[3],
	});
}

/* Whether request `req` is to be answered at `now`: another than the
 * last answered, which was MSTAT_ALLOCSTATS_GAP_NS ago or more. */
static bool
due(uint64_t req, uint64_t now)
{
	uint64_t last = atomic_load_explicit(&alloc.answered_ns, memory_order_relaxed);

	return req != atomic_load_explicit(&alloc.answered, memory_order_relaxed) &&
	       (last == 0 || (now >= last && now - last >= MSTAT_ALLOCSTATS_GAP_NS));
}

void
mstat_allocstats_poll(const struct mstat_segment *seg)
{
	struct mstat_shm_alloc *a =
		(struct mstat_shm_alloc *)((char *)seg->hdr + MSTAT_ALLOC_OFFSET);
	/* Relaxed: a value, publishing nothing (the pool's pages are its
	 * own business). */
	uint64_t pool = atomic_load_explicit(&mstat_pool_base, memory_order_relaxed);

	if (pool > MSTAT_POOL_NONE &&
	    atomic_load_explicit(&a->pool_base, memory_order_relaxed) != pool)
		atomic_store_explicit(&a->pool_base, pool, memory_order_relaxed);
	if ((alloc.kind != MSTAT_ALLOCATOR_JEMALLOC &&
	     alloc.kind != MSTAT_ALLOCATOR_TCMALLOC) || mstat_own_work())
		return;
	/* (N) relaxed: compared, never used as a number. */
	uint64_t req = atomic_load_explicit(&a->request, memory_order_relaxed);
	uint64_t now = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	bool busy = false;
	/* (T) acquire: pairs with the release below of the thread that
	 * answered last; what it answered is seen. */
	if (!due(req, now) ||
	    !atomic_compare_exchange_strong_explicit(&alloc.answering, &busy, true,
						     memory_order_acquire,
						     memory_order_relaxed))
		return;
	/* Again, as the last thread that answered left them: it may have
	 * answered this request since. */
	if (due(req, now)) {
		answer(a, req);
		atomic_store_explicit(&alloc.answered, req, memory_order_relaxed);
		atomic_store_explicit(&alloc.answered_ns, now, memory_order_relaxed);
	}
	/* (T) release: the answer and the fields above, to the next thread
	 * that answers (the acquire CAS above). */
	atomic_store_explicit(&alloc.answering, false, memory_order_release);
}

/* A fork child has no answer to give yet: its segment is its own, and a
 * thread of its parent's that was answering is not in it. */
static void
on_fork_child(void)
{
	atomic_store_explicit(&alloc.answered, 0, memory_order_relaxed);
	atomic_store_explicit(&alloc.answered_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&alloc.answering, false, memory_order_relaxed);
}

__attribute__((constructor(MSTAT_HOOKS_PRIORITY))) static void
register_hooks(void)
{
	static const struct mstat_writer_hooks hooks = {
		.segment = on_segment,
		.fork_child = on_fork_child,
	};

	mstat_start_hooks(&hooks);
}
