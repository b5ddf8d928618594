/* SPDX-License-Identifier: MIT */
/*
 * pairs.c - the hot loop: malloc+free pairs of mixed small sizes.
 *
 *   mstat-bench-pairs --variant V [--threads N] [--ms D | --iters N]
 *                     [--attach LIB]
 *
 * Threads wait at a start gate, then each runs malloc(size); free() pairs
 * (sizes 16..1024 from a fixed pseudo-random table: all tcache-hot in
 * glibc) for D ms, or for exactly N pairs each (for instruction counts).
 * Prints one line:
 *
 *   pairs variant=V threads=N ns_pair=X pairs=P malloc=LIB
 *
 * ns_pair is thread CPU time per pair (summed over threads / pairs),
 * cpu_share the fraction of the run's wall time each thread was on a CPU
 * (near 1.0: the threads really ran side by side), and malloc= names the object that provides malloc (so a driver sees whether
 * a preloaded interposer is in front).
 *
 * --attach LIB loads LIB (libmstatshm-attach.so.0) and starts it in this
 * process before the threads start, as mstat-attach has a target do it
 * (shm/inject.h), and waits out the second after it in which every
 * allocation checks whether a rescan is due: the pairs then go through
 * the slots it patched, and malloc= says "attached".
 *
 * Variants measured in this process (what a counting interposer would add
 * to each allocation and each free, without the interposition):
 *   plain            nothing: plain glibc, or whatever LD_PRELOAD put in front
 *   go               Go's consistentHeapStats, ported: one shared ring of
 *                    deltas, per-thread seq, every update a locked add
 *   floor            the library's counter adds into a per-thread slot, no
 *                    seq and no epoch: what counting costs without a protocol
 *   sect-fenced      the library's update section (shm/section.h), fenced
 *   sect-membarrier  the same, membarrier mode (no locked instruction)
 *   usable           one malloc_usable_size() call per pair
 *   api              the library's exported mstat_record_alloc/free (needs
 *                    libmstatshm loaded, e.g. preloaded)
 *   lean-membarrier  sect-membarrier trimmed (see lean_class): a proposal
 *   lean+touch, lean+requested, lean+computed
 *                    lean-membarrier with one trimmed piece put back (the
 *                    touched bitmap, the requested-bytes add, the computed
 *                    class): each one's cost, alone
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common.h"
#include "shm/inject.h"
#include "shm/section.h"
#include "shm/sizeclass.h"

#define SIZES MBENCH_SIZES /* entries in the size table, a power of two */
#define BATCH 256u  /* pairs between two looks at the stop flag */

enum variant {
	V_PLAIN,
	V_GO,
	V_FLOOR,
	V_SECT_FENCED,
	V_SECT_MEMBARRIER,
	V_USABLE,
	V_API,
	V_LEAN,
	V_LEAN_TOUCH,
	V_LEAN_REQUESTED,
	V_LEAN_COMPUTED,
	V_COUNT
};

static const char *const variant_names[V_COUNT] = {
	"plain", "go", "floor", "sect-fenced", "sect-membarrier", "usable", "api",
	"lean-membarrier", "lean+touch", "lean+requested", "lean+computed",
};

/* lean-membarrier: what a trimmed writer path would cost (a proposal, not
 * the library): the class of sizes up to 1024 from a 64-byte table, no
 * touched bitmap, no requested-bytes total; the same section otherwise. */
static uint8_t lean_class[65];

/* ---- the Go port: src/runtime/mstats.go, consistentHeapStats ----
 *
 * acquire(): statsSeq.Add(1) (per P; odd), gen = m.gen.Load() % 3, return
 * &m.stats[gen]; the caller does atomic.Xadd64 on the delta counters;
 * release(): statsSeq.Add(1) (even).  Every delta is shared by all Ps. */
struct go_delta {
	_Atomic int64_t alloc_count[MSTAT_CLASS_COUNT];
	_Atomic int64_t alloc_bytes[MSTAT_CLASS_COUNT];
	_Atomic int64_t free_count[MSTAT_CLASS_COUNT];
	_Atomic int64_t free_bytes[MSTAT_CLASS_COUNT];
};
static struct {
	_Alignas(MBENCH_CACHELINE) _Atomic uint32_t gen;
	_Alignas(MBENCH_CACHELINE) struct go_delta stats[3];
} go_heap;

/* The epoch the section variants read: in the library it is in the
 * segment's control page, on its own line. */
static struct {
	_Alignas(MBENCH_CACHELINE) _Atomic uint64_t epoch;
	char pad[MBENCH_CACHELINE - sizeof(uint64_t)];
} sect_epoch;
/* The writer's epoch word (shm/section.h), never stopped here. */
static _Atomic uintptr_t sect_word;

static void (*api_alloc)(size_t, size_t);
static void (*api_free)(size_t);

struct worker {
	_Alignas(MBENCH_CACHELINE) _Atomic uint32_t go_seq; /* per-P statsSeq */
	enum variant v;
	uint64_t iters; /* 0: run until stopped */
	struct mbench_gate *gate;
	const uint32_t *sizes;
	struct mstat_shm_slot *slot; /* private; one per thread */
	uint64_t sink;
	uint64_t pairs;
	uint64_t cpu_ns;
	pthread_t th;
};

static inline void
escape(void *p)
{
	/* The pointer escapes, so the compiler cannot elide malloc+free. */
	__asm__ volatile("" : : "r"(p) : "memory");
}

static inline void
go_update(struct worker *w, int op, size_t size)
{
	unsigned c = mstat_size_class(size);

	/* acquire: odd seq, then the generation */
	atomic_fetch_add_explicit(&w->go_seq, 1, memory_order_seq_cst);
	struct go_delta *d =
		&go_heap.stats[atomic_load_explicit(&go_heap.gen,
						    memory_order_seq_cst) % 3];
	if (op == 0) {
		atomic_fetch_add_explicit(&d->alloc_count[c], 1, memory_order_seq_cst);
		atomic_fetch_add_explicit(&d->alloc_bytes[c], (int64_t)size,
					  memory_order_seq_cst);
	} else {
		atomic_fetch_add_explicit(&d->free_count[c], 1, memory_order_seq_cst);
		atomic_fetch_add_explicit(&d->free_bytes[c], (int64_t)size,
					  memory_order_seq_cst);
	}
	/* release: even seq */
	atomic_fetch_add_explicit(&w->go_seq, 1, memory_order_seq_cst);
}

/* The adds of one allocation (op 0) or one free (op 1), as writer.h does
 * them, into generation `gen` of the thread's slot. */
static inline __attribute__((always_inline)) void
slot_adds(struct mstat_shm_slot *slot, unsigned g, int op, size_t size)
{
	unsigned c = mstat_size_class(size);

	if (op == 0) {
		mstat_wsection_count(slot, g, c, MSTAT_C_ALLOC_COUNT, size);
		mstat_wsection_requested(slot, g, size);
	} else {
		mstat_wsection_count(slot, g, c, MSTAT_C_FREE_COUNT, size);
	}
}

static inline __attribute__((always_inline)) void
account(struct worker *w, enum variant v, int op, void *p, size_t size)
{
	switch (v) {
	case V_PLAIN:
		break;
	case V_GO:
		go_update(w, op, size);
		break;
	case V_FLOOR:
		slot_adds(w->slot, 0, op, size);
		break;
	case V_SECT_FENCED:
	case V_SECT_MEMBARRIER: {
		unsigned g;
		if (mstat_wsection_begin(w->slot, &sect_word, v == V_SECT_FENCED,
					 &g) != MSTAT_WS_OPEN)
			break;
		slot_adds(w->slot, g, op, size);
		mstat_wsection_end(w->slot);
		break;
	}
	case V_USABLE:
		/* Once per pair, as an interposer asks on free. */
		if (op == 1)
			w->sink += malloc_usable_size(p);
		break;
	case V_LEAN:
	case V_LEAN_TOUCH:
	case V_LEAN_REQUESTED:
	case V_LEAN_COMPUTED: {
		unsigned c = size <= 1024 && v != V_LEAN_COMPUTED
				     ? lean_class[(size + 15) >> 4]
				     : mstat_size_class(size);
		unsigned g;
		if (mstat_wsection_begin(w->slot, &sect_word, false, &g) !=
		    MSTAT_WS_OPEN)
			break;
		if (v == V_LEAN_TOUCH)
			mstat_wsection_touch(w->slot, c);
		mstat_wsection_add(w->slot, g, c, op == 0 ? MSTAT_C_ALLOC_COUNT
							  : MSTAT_C_FREE_COUNT, 1);
		mstat_wsection_add(w->slot, g, c, op == 0 ? MSTAT_C_ALLOC_BYTES
							  : MSTAT_C_FREE_BYTES, size);
		if (v == V_LEAN_REQUESTED && op == 0)
			mstat_wsection_requested(w->slot, g, size);
		mstat_wsection_end(w->slot);
		break;
	}
	case V_API:
		if (op == 0)
			api_alloc(size, size);
		else
			api_free(size);
		break;
	case V_COUNT:
		break;
	}
}

static inline __attribute__((always_inline)) uint64_t
loop(struct worker *w, enum variant v, uint64_t iters)
{
	const uint32_t *sizes = w->sizes;
	uint64_t n = 0;

	for (;;) {
		for (unsigned i = 0; i < BATCH; i++) {
			size_t size = sizes[(n + i) & (SIZES - 1)];
			void *p = malloc(size);
			escape(p);
			account(w, v, 0, p, size);
			/* The free is a call of its own in an interposer: no
			 * work shared with the allocation's count. */
			__asm__ volatile("" : "+r"(size));
			account(w, v, 1, p, size);
			free(p);
		}
		n += BATCH;
		if (iters ? n >= iters : mbench_gate_stopped(w->gate))
			return n;
	}
}

/* One specialised loop per variant: the switch is resolved at compile time. */
static uint64_t
run_variant(struct worker *w, uint64_t iters)
{
	switch (w->v) {
#define CASE(V) case V: return loop(w, V, iters);
	CASE(V_PLAIN)
	CASE(V_GO)
	CASE(V_FLOOR)
	CASE(V_SECT_FENCED)
	CASE(V_SECT_MEMBARRIER)
	CASE(V_USABLE)
	CASE(V_API)
	CASE(V_LEAN)
	CASE(V_LEAN_TOUCH)
	CASE(V_LEAN_REQUESTED)
	CASE(V_LEAN_COMPUTED)
#undef CASE
	case V_COUNT:
		break;
	}
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	/* Warm up: tcache filled, pages touched, a preloaded library's slot
	 * claimed. */
	run_variant(w, 64 * BATCH);
	mbench_gate_wait(w->gate);
	uint64_t t0 = mbench_thread_cpu_ns();
	w->pairs = run_variant(w, w->iters);
	w->cpu_ns = mbench_thread_cpu_ns() - t0;
	return NULL;
}

/* --attach: the library mstat-attach injects, started here. */
static int
attach_here(const char *lib)
{
	struct mstat_attach_args a = { .version = MSTAT_ATTACH_ARGS_VERSION,
				       .size = sizeof(a), .memfd = -1 };
	int (*start)(struct mstat_attach_args *) = NULL;
	struct mstat_attach_state *st = NULL;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (h) {
		*(void **)&start = dlsym(h, MSTAT_ATTACH_START);
		st = dlsym(h, MSTAT_ATTACH_STATE);
	}
	if (!start || !st) {
		fprintf(stderr, "mstat-bench-pairs: --attach %s: %s\n", lib, dlerror());
		return -1;
	}
	strcpy(a.name, "mstat-bench-pairs");
	if (start(&a) != 0) {
		fprintf(stderr, "mstat-bench-pairs: --attach: %s\n", a.err);
		return -1;
	}
	/* Published by a thread of the library's: once it says so. */
	while (!atomic_load_explicit(&st->done, memory_order_acquire))
		mbench_sleep_ns(1000000);
	if (st->rc != 0) {
		fprintf(stderr, "mstat-bench-pairs: --attach: %s\n", st->status);
		return -1;
	}
	/* Past the second after the attach in which allocations look for
	 * slots to patch again (lib/patch.c): the steady state. */
	mbench_sleep_ns(1500u * 1000u * 1000u);
	return 0;
}

static const char *
malloc_provider(void)
{
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, "malloc");

	if (!f || !dladdr(f, &info) || !info.dli_fname)
		return "?";
	const char *s = strrchr(info.dli_fname, '/');
	return s ? s + 1 : info.dli_fname;
}

static void
usage(void)
{
	fprintf(stderr, "usage: mstat-bench-pairs --variant V [--threads N] "
			"[--ms D | --iters N] [--attach LIB]\n  V:");
	for (int i = 0; i < V_COUNT; i++)
		fprintf(stderr, " %s", variant_names[i]);
	fprintf(stderr, "\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	enum variant v = V_COUNT;
	unsigned threads = 1;
	uint64_t ms = 200, iters = 0;
	static uint32_t sizes[SIZES];
	struct mbench_gate gate;
	const char *attach = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--variant") == 0) {
			for (int k = 0; k < V_COUNT; k++)
				if (strcmp(argv[i + 1], variant_names[k]) == 0)
					v = (enum variant)k;
		} else if (strcmp(argv[i], "--threads") == 0) {
			threads = (unsigned)strtoul(argv[i + 1], NULL, 10);
		} else if (strcmp(argv[i], "--ms") == 0) {
			ms = strtoull(argv[i + 1], NULL, 10);
		} else if (strcmp(argv[i], "--iters") == 0) {
			iters = strtoull(argv[i + 1], NULL, 10);
		} else if (strcmp(argv[i], "--attach") == 0) {
			attach = argv[i + 1];
		} else {
			usage();
		}
	}
	if (v == V_COUNT || threads < 1 || threads > 64)
		usage();
	if (v == V_API) {
		*(void **)&api_alloc = dlsym(RTLD_DEFAULT, "mstat_record_alloc");
		*(void **)&api_free = dlsym(RTLD_DEFAULT, "mstat_record_free");
		if (!api_alloc || !api_free) {
			fprintf(stderr, "api: libmstatshm is not loaded\n");
			return 1;
		}
	}

	/* Exact for every size up to 1024: a class never splits a 16-byte
	 * step above 256 (classes there are 64 bytes or wider). */
	for (unsigned i = 0; i <= 64; i++)
		lean_class[i] = (uint8_t)mstat_size_class(i * 16u);
	for (unsigned size = 0; size <= 1024; size++)
		if (lean_class[(size + 15) >> 4] != mstat_size_class(size)) {
			fprintf(stderr, "lean_class wrong at %u\n", size);
			return 1;
		}
	/* 16..1024 bytes, a fixed xorshift sequence: every run sees the same
	 * sizes in the same order. */
	mbench_fill_sizes(sizes);
	atomic_store(&sect_word, mstat_epoch_word(&sect_epoch.epoch));
	if (attach && attach_here(attach) < 0)
		return 1;

	struct worker *ws = aligned_alloc(MBENCH_CACHELINE,
					  threads * sizeof(struct worker));
	size_t slot_size = MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	if (!ws)
		return 1;
	memset(ws, 0, threads * sizeof(*ws));
	mbench_gate_init(&gate);
	for (unsigned t = 0; t < threads; t++) {
		struct worker *w = &ws[t];
		w->v = v;
		w->iters = iters;
		w->gate = &gate;
		w->sizes = sizes;
		w->slot = aligned_alloc(MBENCH_CACHELINE, slot_size);
		if (!w->slot)
			return 1;
		memset(w->slot, 0, slot_size);
		if (pthread_create(&w->th, NULL, worker_main, w) != 0)
			return 1;
	}
	mbench_gate_open(&gate, threads);
	uint64_t w0 = mbench_now_ns();
	if (!iters) {
		mbench_sleep_ns(ms * 1000000u);
		mbench_gate_stop(&gate);
	}
	uint64_t pairs = 0, cpu = 0;
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(ws[t].th, NULL);
		pairs += ws[t].pairs;
		cpu += ws[t].cpu_ns;
	}
	/* How much of the run the threads really ran side by side: 1.0 when
	 * each had a CPU of its own the whole time. */
	double share = (double)cpu / ((double)threads * (double)(mbench_now_ns() - w0));
	printf("pairs variant=%s threads=%u ns_pair=%.3f pairs=%llu cpu_share=%.2f "
	       "malloc=%s\n",
	       variant_names[v], threads, pairs ? (double)cpu / (double)pairs : 0.0,
	       (unsigned long long)pairs, share, attach ? "attached" : malloc_provider());
	return 0;
}
