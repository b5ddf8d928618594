/* SPDX-License-Identifier: MIT */
/*
 * section.c - writer mode: fenced or membarrier, decided by
 * what each costs whom.
 *
 *   mstat-bench-section [--rounds N] [--ms D] [--calls K]
 *
 * 1. The writer's side: one update section alone (shm/section.h: begin,
 *    touch, three adds, end, as writer.h counts an allocation) on a
 *    thread's own slot, in a loop, in each mode; against the same adds
 *    with no section (the floor) and Go's shared-ring update.  1 and 2
 *    threads, variants interleaved in slices of D ms, medians over rounds.
 *
 * 2. The reader's side: one membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED),
 *    timed, while a registered target process has 0, 1 or 2 busy writer
 *    threads (phases interleaved).  In fenced mode the reader needs no
 *    barrier at all: its rotation is one locked add.
 *
 * 3. What the target feels: the section rate of one busy writer thread
 *    while the reader is quiet, against while it issues membarriers back
 *    to back (phases interleaved); the loss, divided by the calls made,
 *    is what one membarrier costs each busy target thread.
 *
 * Summary lines start "BENCH section", "BENCH membarrier" and
 * "BENCH membarrier-target".
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "shm/section.h"
#include "shm/sizeclass.h"

#define SIZES MBENCH_SIZES
#define BATCH 256u
#define MAX_ROUNDS 64

enum kind { K_FLOOR, K_MEMBARRIER, K_FENCED, K_GO, K_COUNT };
static const char *const kind_names[K_COUNT] = {
	"floor", "membarrier", "fenced", "go",
};

static uint32_t sizes[SIZES];

/* Go's shared ring (see pairs.c): one generation of deltas for all. */
static struct {
	_Alignas(MBENCH_CACHELINE) _Atomic uint32_t gen;
	_Alignas(MBENCH_CACHELINE) _Atomic int64_t count[3][MSTAT_CLASS_COUNT];
	_Atomic int64_t bytes[3][MSTAT_CLASS_COUNT];
} go_ring;

struct worker {
	_Alignas(MBENCH_CACHELINE) _Atomic uint32_t go_seq;
	enum kind k;
	struct mbench_gate *gate;
	_Atomic uintptr_t word; /* the epoch word (shm/section.h) */
	struct mstat_shm_slot *slot;
	_Atomic uint64_t *progress; /* if set: sections so far, for part 3 */
	uint64_t sections;
	uint64_t cpu_ns;
	pthread_t th;
};


static inline __attribute__((always_inline)) void
one_section(struct worker *w, enum kind k, size_t size)
{
	unsigned c = mstat_size_class(size);
	unsigned gen;

	switch (k) {
	case K_GO: {
		atomic_fetch_add_explicit(&w->go_seq, 1, memory_order_seq_cst);
		unsigned g = atomic_load_explicit(&go_ring.gen, memory_order_seq_cst) % 3;
		atomic_fetch_add_explicit(&go_ring.count[g][c], 1, memory_order_seq_cst);
		atomic_fetch_add_explicit(&go_ring.bytes[g][c], (int64_t)size,
					  memory_order_seq_cst);
		atomic_fetch_add_explicit(&w->go_seq, 1, memory_order_seq_cst);
		return;
	}
	case K_FLOOR:
		gen = 0;
		break;
	default:
		/* Never stopped or nested here: the writer's own epoch word. */
		if (mstat_wsection_begin(w->slot, &w->word, k == K_FENCED, &gen) !=
		    MSTAT_WS_OPEN)
			return;
		break;
	}
	mstat_wsection_count(w->slot, gen, c, MSTAT_C_ALLOC_COUNT, size);
	mstat_wsection_requested(w->slot, gen, size);
	if (k != K_FLOOR)
		mstat_wsection_end(w->slot);
}

static inline __attribute__((always_inline)) uint64_t
loop(struct worker *w, enum kind k)
{
	uint64_t n = 0;

	do {
		for (unsigned i = 0; i < BATCH; i++) {
			one_section(w, k, sizes[(n + i) & (SIZES - 1)]);
			/* Keep the compiler from merging sections. */
			__asm__ volatile("" ::: "memory");
		}
		n += BATCH;
		if (w->progress)
			atomic_store_explicit(w->progress, n, memory_order_relaxed);
	} while (!mbench_gate_stopped(w->gate));
	return n;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	mbench_gate_wait(w->gate);
	uint64_t t0 = mbench_thread_cpu_ns();
	switch (w->k) {
	case K_FLOOR: w->sections = loop(w, K_FLOOR); break;
	case K_MEMBARRIER: w->sections = loop(w, K_MEMBARRIER); break;
	case K_FENCED: w->sections = loop(w, K_FENCED); break;
	case K_GO: w->sections = loop(w, K_GO); break;
	case K_COUNT: break;
	}
	w->cpu_ns = mbench_thread_cpu_ns() - t0;
	return NULL;
}

static struct mstat_shm_slot *
new_slot(void)
{
	size_t n = MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	struct mstat_shm_slot *s = aligned_alloc(MBENCH_CACHELINE, n);

	if (!s) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(s, 0, n);
	return s;
}

/* Runs `threads` workers of kind k for ms; ns per section (thread CPU
 * time) and, through *share, how much the threads ran side by side. */
static double
run_kind(enum kind k, unsigned threads, unsigned ms, double *share)
{
	static struct {
		_Alignas(MBENCH_CACHELINE) _Atomic uint64_t epoch;
	} ep;
	struct worker ws[2];
	struct mbench_gate gate;

	memset(ws, 0, sizeof(ws));
	mbench_gate_init(&gate);
	for (unsigned t = 0; t < threads; t++) {
		ws[t].k = k;
		ws[t].gate = &gate;
		atomic_init(&ws[t].word, mstat_epoch_word(&ep.epoch));
		ws[t].slot = new_slot();
		pthread_create(&ws[t].th, NULL, worker_main, &ws[t]);
	}
	mbench_gate_open(&gate, threads);
	uint64_t w0 = mbench_now_ns();
	mbench_sleep_ns((uint64_t)ms * 1000000u);
	mbench_gate_stop(&gate);
	uint64_t n = 0, cpu = 0;
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(ws[t].th, NULL);
		n += ws[t].sections;
		cpu += ws[t].cpu_ns;
		free(ws[t].slot);
	}
	*share = (double)cpu / ((double)threads * (double)(mbench_now_ns() - w0));
	return (double)cpu / (double)n;
}

static double
q(const double *src, unsigned n, double quant)
{
	double v[MAX_ROUNDS * 4];

	memcpy(v, src, n * sizeof(*v));
	mbench_sort(v, n);
	return mbench_quantile(v, n, quant);
}

static void
part_sections(unsigned rounds, unsigned ms)
{
	static double ns[2][K_COUNT][MAX_ROUNDS];
	double shares[MAX_ROUNDS * K_COUNT];
	unsigned nshares = 0;

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned t = 0; t < 2; t++)
			for (unsigned i = 0; i < K_COUNT; i++) {
				enum kind k = (enum kind)((i + r) % K_COUNT);
				double share;
				unsigned tries = 0;
				do
					ns[t][k][r] = run_kind(k, t + 1, ms, &share);
				while (t == 1 && share < 0.75 && ++tries < 3);
				if (t == 1)
					shares[nshares++] = share;
			}
	for (unsigned t = 0; t < 2; t++) {
		double d[MAX_ROUNDS];
		for (unsigned k = 0; k < K_COUNT; k++) {
			for (unsigned r = 0; r < rounds; r++)
				d[r] = ns[t][k][r] - ns[t][K_FLOOR][r];
			printf("BENCH section threads=%u mode=%s ns_section=%.2f "
			       "over_floor=%+.2f q1=%+.2f q3=%+.2f rounds=%u\n",
			       t + 1, kind_names[k], q(ns[t][k], rounds, 0.5),
			       q(d, rounds, 0.5), q(d, rounds, 0.25),
			       q(d, rounds, 0.75), rounds);
		}
		for (unsigned r = 0; r < rounds; r++)
			d[r] = ns[t][K_FENCED][r] - ns[t][K_MEMBARRIER][r];
		printf("BENCH section-modes threads=%u fenced_minus_membarrier_ns=%+.2f "
		       "q1=%+.2f q3=%+.2f per_pair=%+.2f\n", t + 1,
		       q(d, rounds, 0.5), q(d, rounds, 0.25), q(d, rounds, 0.75),
		       2 * q(d, rounds, 0.5));
	}
	printf("BENCH section-noise cpu_share_2t_median=%.2f min=%.2f\n",
	       q(shares, nshares, 0.5), q(shares, nshares, 0));
}

/* ---- parts 2 and 3: a registered target process, another process ---- */

struct target_ctl {
	_Alignas(MBENCH_CACHELINE) _Atomic int busy; /* writer threads to run */
	_Atomic int quit;
	_Atomic int ready;
	_Atomic int registered; /* 1 ok, -errno failed */
	_Alignas(MBENCH_CACHELINE) _Atomic uint64_t progress[2][8];
};

struct target_thread {
	struct target_ctl *ctl;
	unsigned index;
};

static void *
target_thread_main(void *arg)
{
	struct target_thread *tt = arg;
	struct target_ctl *ctl = tt->ctl;
	static struct {
		_Alignas(MBENCH_CACHELINE) _Atomic uint64_t epoch;
	} ep;
	struct worker w;
	struct mbench_gate never;

	memset(&w, 0, sizeof(w));
	mbench_gate_init(&never);
	w.gate = &never;
	atomic_init(&w.word, mstat_epoch_word(&ep.epoch));
	w.slot = new_slot();
	w.progress = &ctl->progress[tt->index][0];
	while (!atomic_load_explicit(&ctl->quit, memory_order_relaxed)) {
		if (atomic_load_explicit(&ctl->busy, memory_order_relaxed) >
		    (int)tt->index) {
			/* Busy: sections in membarrier mode, in batches, until
			 * told to rest (the gate's stop flag is never set, so
			 * look at busy between batches). */
			uint64_t n = atomic_load_explicit(w.progress,
							  memory_order_relaxed);
			for (unsigned b = 0; b < 64; b++) {
				for (unsigned i = 0; i < BATCH; i++) {
					one_section(&w, K_MEMBARRIER,
						    sizes[(n + i) & (SIZES - 1)]);
					__asm__ volatile("" ::: "memory");
				}
				n += BATCH;
				atomic_store_explicit(w.progress, n,
						      memory_order_relaxed);
			}
		} else {
			mbench_sleep_ns(1000000); /* rests: off the CPU */
		}
	}
	return NULL;
}

static pid_t
start_target(struct target_ctl *ctl)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0);
	atomic_store(&ctl->registered, rc < 0 ? -errno : 1);
	pthread_t th[2];
	struct target_thread tt[2];
	for (unsigned i = 0; i < 2; i++) {
		tt[i].ctl = ctl;
		tt[i].index = i;
		pthread_create(&th[i], NULL, target_thread_main, &tt[i]);
	}
	atomic_store(&ctl->ready, 1);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

static int
membarrier_global(void)
{
	return (int)syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
}

static void
part_membarrier(struct target_ctl *ctl, unsigned rounds, unsigned calls)
{
	/* phases: 0, 1, 2 busy writer threads */
	static double lat[3][MAX_ROUNDS * 512];
	unsigned nlat[3] = { 0, 0, 0 };

	if (calls > 512)
		calls = 512;
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < 3; i++) {
			unsigned busy = (i + r) % 3;
			atomic_store(&ctl->busy, (int)busy);
			mbench_sleep_ns(20000000); /* writers up or at rest */
			for (unsigned c = 0; c < calls; c++) {
				uint64_t t0 = mbench_now_ns();
				if (membarrier_global() < 0) {
					perror("membarrier");
					return;
				}
				lat[busy][nlat[busy]++] =
					(double)(mbench_now_ns() - t0) / 1000.0;
				/* As an observer's ticks: apart, not back to back. */
				mbench_sleep_ns(200000);
			}
		}
	atomic_store(&ctl->busy, 0);
	for (unsigned b = 0; b < 3; b++) {
		mbench_sort(lat[b], nlat[b]);
		printf("BENCH membarrier busy_writers=%u us_p50=%.1f us_p90=%.1f "
		       "us_p99=%.1f us_max=%.1f calls=%u\n", b,
		       mbench_quantile(lat[b], nlat[b], 0.5),
		       mbench_quantile(lat[b], nlat[b], 0.9),
		       mbench_quantile(lat[b], nlat[b], 0.99),
		       lat[b][nlat[b] - 1], nlat[b]);
	}
}

static void
part_target(struct target_ctl *ctl, unsigned rounds, unsigned ms)
{
	double quiet_rate[MAX_ROUNDS], storm_rate[MAX_ROUNDS], cost[MAX_ROUNDS];
	double calls_per_s[MAX_ROUNDS];

	atomic_store(&ctl->busy, 1);
	mbench_sleep_ns(20000000);
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < 2; i++) {
			bool storm = (i + r) % 2;
			uint64_t calls = 0;
			uint64_t s0 = atomic_load(&ctl->progress[0][0]);
			uint64_t t0 = mbench_now_ns(), end = t0 + (uint64_t)ms * 1000000u;
			if (storm) {
				while (mbench_now_ns() < end) {
					membarrier_global();
					calls++;
				}
			} else {
				mbench_sleep_ns((uint64_t)ms * 1000000u);
			}
			uint64_t s1 = atomic_load(&ctl->progress[0][0]);
			double secs = (double)(mbench_now_ns() - t0) / 1e9;
			double rate = (double)(s1 - s0) / secs;
			if (storm) {
				storm_rate[r] = rate;
				calls_per_s[r] = (double)calls / secs;
			} else {
				quiet_rate[r] = rate;
			}
		}
		/* Writer time lost per call: the fraction of sections lost,
		 * times the time, over the calls. */
		cost[r] = (quiet_rate[r] - storm_rate[r]) / quiet_rate[r] * 1e9 /
			  calls_per_s[r];
	}
	atomic_store(&ctl->busy, 0);
	printf("BENCH membarrier-target busy_writers=1 quiet_ns_section=%.2f "
	       "storm_ns_section=%.2f storm_calls_per_s=%.0f "
	       "writer_ns_lost_per_membarrier=%.0f q1=%.0f q3=%.0f rounds=%u\n",
	       1e9 / q(quiet_rate, rounds, 0.5), 1e9 / q(storm_rate, rounds, 0.5),
	       q(calls_per_s, rounds, 0.5), q(cost, rounds, 0.5),
	       q(cost, rounds, 0.25), q(cost, rounds, 0.75), rounds);
}

int
main(int argc, char **argv)
{
	unsigned rounds = 9, ms = 50, calls = 200;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--rounds") == 0)
			rounds = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--ms") == 0)
			ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--calls") == 0)
			calls = (unsigned)strtoul(argv[i + 1], NULL, 10);
	}
	const char *e = getenv("MSTAT_BENCH_ROUNDS");
	if (e && *e)
		rounds = (unsigned)strtoul(e, NULL, 10);
	if (rounds < 1 || rounds > MAX_ROUNDS || ms < 5) {
		fprintf(stderr, "usage: mstat-bench-section [--rounds 1..64] "
				"[--ms D] [--calls K]\n");
		return 2;
	}
	mbench_fill_sizes(sizes);
	uint64_t t0 = mbench_now_ns();
	part_sections(rounds, ms);
	fflush(stdout);

	struct target_ctl *ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	memset(ctl, 0, sizeof(*ctl));
	pid_t pid = start_target(ctl);
	if (pid < 0)
		return 1;
	while (!atomic_load(&ctl->ready))
		mbench_sleep_ns(1000000);
	int reg = atomic_load(&ctl->registered);
	if (reg < 0) {
		printf("BENCH membarrier unavailable: register: %s\n",
		       strerror(-reg));
	} else {
		part_membarrier(ctl, rounds, calls);
		fflush(stdout);
		part_target(ctl, rounds, 100);
	}
	atomic_store(&ctl->quit, 1);
	waitpid(pid, NULL, 0);
	printf("BENCH section-meta rounds=%u ms_per_slice=%u wall_s=%.1f\n",
	       rounds, ms, (double)(mbench_now_ns() - t0) / 1e9);
	return 0;
}
