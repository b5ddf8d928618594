/* SPDX-License-Identifier: MIT */
/*
 * latency.c - malloc latency: does a target notice an observer reading it?
 *
 *   mstat-bench-latency --lib PATH [--mode fenced|membarrier]
 *                       [--phases N] [--phase-ms M] [--hz H]
 *
 * Starts a target (this program again, with libmstatshm preloaded in the
 * given mode) that times every malloc and every free of a hot loop with
 * the TSC into histograms.  This process, linked only with the reader
 * (never instrumented itself), alternates phases: observer off, observer
 * on (a snapshot of the target every 1/H s, 100 Hz by default), off, on...
 * The target files each sample under the phase it was taken in, so the
 * drift of the machine and its other users hit both alike.
 *
 * If the preloaded library does not interpose malloc, the target counts
 * through mstat_record_alloc/free instead (explicit API), inside the
 * timed region; the setup line says which.
 *
 * Summary lines: "BENCH latency ..." per mode, operation and phase,
 * "BENCH latency-delta" (on minus off) and "BENCH latency-observer".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "bench/common.h"
#include <mstatshm.h>

#define SIZES MBENCH_SIZES
#define BATCH 256u
#define LINEAR 1024u /* ticks counted one by one */
#define SUB 64u      /* buckets per doubling above */
#define NBUCKETS (LINEAR + 31u * SUB)

enum { OP_MALLOC, OP_FREE, OPS };

struct hist {
	uint64_t n, max;
	uint32_t b[NBUCKETS];
};

/* Shared between this process and the target (a memfd, inherited). */
struct ctl {
	_Alignas(MBENCH_CACHELINE) _Atomic int observing; /* phase: 0 off, 1 on */
	_Alignas(MBENCH_CACHELINE) _Atomic int stop;
	_Atomic int ready;
	int explicit_api;     /* the target counts through mstat_record_* */
	char malloc_from[64];
	double ticks_per_ns;
	double timer_floor_ticks;
	struct hist h[2][OPS]; /* [observing][op] */
};

static inline uint64_t
ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	return mbench_now_ns();
#endif
}

static inline void
hist_add(struct hist *h, uint64_t v)
{
	unsigned b;

	if (v < LINEAR) {
		b = (unsigned)v;
	} else {
		unsigned lg = 63u - (unsigned)__builtin_clzll(v);
		b = LINEAR + (lg - 10u) * SUB + (unsigned)((v >> (lg - 6u)) & (SUB - 1));
		if (b >= NBUCKETS)
			b = NBUCKETS - 1;
	}
	h->b[b]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

/* The middle of bucket b, in ticks. */
static double
bucket_value(unsigned b)
{
	if (b < LINEAR)
		return b;
	unsigned lg = 10u + (b - LINEAR) / SUB, sub = (b - LINEAR) % SUB;
	double lo = (double)(UINT64_C(1) << lg) + (double)sub * (double)(UINT64_C(1) << (lg - 6u));
	return lo + (double)(UINT64_C(1) << (lg - 6u)) / 2;
}

static double
hist_quantile(const struct hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->n), seen = 0;

	for (unsigned b = 0; b < NBUCKETS; b++) {
		seen += h->b[b];
		if (seen > want)
			return bucket_value(b);
	}
	return (double)h->max;
}

/* Samples above `t` ticks (to bucket resolution). */
static uint64_t
hist_above(const struct hist *h, double t)
{
	uint64_t n = 0;

	for (unsigned b = 0; b < NBUCKETS; b++)
		if (bucket_value(b) > t)
			n += h->b[b];
	return n;
}

/* The median of the samples above `t` ticks, or 0 if none. */
static double
hist_median_above(const struct hist *h, double t)
{
	uint64_t n = hist_above(h, t), seen = 0;

	for (unsigned b = 0; n && b < NBUCKETS; b++) {
		if (bucket_value(b) <= t)
			continue;
		seen += h->b[b];
		if (seen > n / 2)
			return bucket_value(b);
	}
	return 0;
}

/* ---- the target ---- */

static int
target(int fd)
{
	static uint32_t sizes[SIZES];
	void (*rec_alloc)(size_t, size_t) = NULL;
	void (*rec_free)(size_t) = NULL;
	Dl_info info;
	struct ctl *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);

	if (c == MAP_FAILED)
		return 1;
	mbench_fill_sizes(sizes);
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	const char *from = m && dladdr(m, &info) && info.dli_fname ? info.dli_fname : "?";
	snprintf(c->malloc_from, sizeof(c->malloc_from), "%s",
		 strrchr(from, '/') ? strrchr(from, '/') + 1 : from);
	if (!strstr(c->malloc_from, "mstatshm")) {
		*(void **)&rec_alloc = dlsym(RTLD_DEFAULT, "mstat_record_alloc");
		*(void **)&rec_free = dlsym(RTLD_DEFAULT, "mstat_record_free");
		if (!rec_alloc || !rec_free) {
			fprintf(stderr, "target: libmstatshm is not loaded\n");
			return 1;
		}
		c->explicit_api = 1;
	}

	/* The timer's own cost: an empty interval. */
	struct hist *floor_h = calloc(1, sizeof(*floor_h));
	for (unsigned i = 0; i < 1000000; i++) {
		uint64_t t0 = ticks();
		hist_add(floor_h, ticks() - t0);
	}
	c->timer_floor_ticks = hist_quantile(floor_h, 0.5);
	free(floor_h);

	uint64_t ns0 = mbench_now_ns(), tk0 = ticks();
	atomic_store(&c->ready, 1);
	uint64_t n = 0;
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		int obs = atomic_load_explicit(&c->observing, memory_order_relaxed) != 0;
		struct hist *hm = &c->h[obs][OP_MALLOC], *hf = &c->h[obs][OP_FREE];
		for (unsigned i = 0; i < BATCH; i++) {
			size_t size = sizes[(n + i) & (SIZES - 1)];
			uint64_t t0 = ticks();
			void *p = malloc(size);
			if (rec_alloc)
				rec_alloc(size, size);
			uint64_t t1 = ticks();
			__asm__ volatile("" : : "r"(p) : "memory");
			if (rec_free)
				rec_free(size);
			free(p);
			uint64_t t2 = ticks();
			hist_add(hm, t1 - t0);
			hist_add(hf, t2 - t1);
		}
		n += BATCH;
	}
	c->ticks_per_ns = (double)(ticks() - tk0) / (double)(mbench_now_ns() - ns0);
	return 0;
}

/* ---- the observer side ---- */

static void
sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int
run_mode(const char *self, const char *lib, const char *mode, unsigned phases,
	 unsigned phase_ms, unsigned hz)
{
	char fdarg[16], pre[4200], modev[64];
	int fd = memfd_create("mstat-bench-latency", 0);

	if (fd < 0 || ftruncate(fd, sizeof(struct ctl)) < 0)
		return -1;
	struct ctl *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	if (c == MAP_FAILED)
		return -1;
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
	snprintf(modev, sizeof(modev), "MSTAT_MODE=%s", mode);
	const char *extra[] = { pre, modev, "MSTAT_NAME=mstat-bench-latency", NULL };
	char **env = mbench_env(extra);
	char *argv[] = { (char *)self, "--target", fdarg, NULL };
	pid_t pid = fork();
	if (pid == 0) {
		execve(self, argv, env);
		_exit(127);
	}
	mbench_env_free(env);
	if (pid < 0)
		return -1;

	struct mstat_reader *r = NULL;
	char err[256] = "";
	uint64_t deadline = mbench_now_ns() + 5000000000u;
	while (!atomic_load(&c->ready) || !r) {
		if (atomic_load(&c->ready) &&
		    mstat_reader_open_pid(&r, pid, err, sizeof(err)) == 0)
			break;
		if (mbench_now_ns() > deadline || waitpid(pid, NULL, WNOHANG) == pid) {
			fprintf(stderr, "mstat-bench-latency: %s: no target to read: %s\n",
				mode, err);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -1;
		}
		mbench_sleep_ns(2000000);
	}

	static double snap_us[1 << 16];
	unsigned nsnap = 0, errors = 0;
	struct mstat_snapshot *s = malloc(sizeof(*s));
	uint64_t period = 1000000000u / hz;
	for (unsigned ph = 0; ph < phases; ph++) {
		int on = ph % 2;
		uint64_t t = mbench_now_ns(), end = t + (uint64_t)phase_ms * 1000000u;
		atomic_store(&c->observing, on);
		if (!on) {
			sleep_until(end);
			continue;
		}
		for (; t < end; t += period) {
			uint64_t t0 = mbench_now_ns();
			if (mstat_reader_snapshot(r, s) != 0)
				errors++;
			if (nsnap < sizeof(snap_us) / sizeof(snap_us[0]))
				snap_us[nsnap++] = (double)(mbench_now_ns() - t0) / 1000.0;
			sleep_until(t + period);
		}
	}
	atomic_store(&c->stop, 1);
	int st;
	waitpid(pid, &st, 0);
	free(s);
	mstat_reader_close(r);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;

	double tpn = c->ticks_per_ns;
	printf("BENCH latency-setup mode=%s counting=%s malloc_from=%s "
	       "timer_floor_ns=%.1f ticks_per_ns=%.3f (percentiles include the "
	       "timer floor)\n", mode, c->explicit_api ? "explicit-api" : "interposed",
	       c->malloc_from, c->timer_floor_ticks / tpn, tpn);
	static const char *const opn[OPS] = { "malloc", "free" };
	static const double qs[] = { 0.5, 0.99, 0.999, 0.9999 };
	/* Each phase kind had half the phases. */
	double secs = (double)(phases / 2) * phase_ms / 1000.0;
	for (int op = 0; op < OPS; op++) {
		double v[2][7];
		for (int obs = 0; obs < 2; obs++) {
			const struct hist *h = &c->h[obs][op];
			for (int k = 0; k < 4; k++)
				v[obs][k] = hist_quantile(h, qs[k]) / tpn;
			v[obs][4] = (double)h->max / tpn;
			/* Calls slower than 2 us, per second of the phase: an
			 * interrupt (a membarrier IPI, a timer tick) or a
			 * preemption landed inside them. */
			v[obs][5] = (double)hist_above(h, 2000 * tpn) / secs;
			v[obs][6] = hist_median_above(h, 2000 * tpn) / tpn;
			printf("BENCH latency mode=%s op=%s observer=%s p50_ns=%.1f "
			       "p99_ns=%.1f p999_ns=%.1f p9999_ns=%.1f max_ns=%.0f "
			       "over_2us_per_s=%.1f their_p50_ns=%.0f samples=%llu\n",
			       mode, opn[op], obs ? "on" : "off", v[obs][0], v[obs][1],
			       v[obs][2], v[obs][3], v[obs][4], v[obs][5], v[obs][6],
			       (unsigned long long)h->n);
		}
		printf("BENCH latency-delta mode=%s op=%s p50=%+.1f p99=%+.1f "
		       "p999=%+.1f p9999=%+.1f max=%+.0f over_2us_per_s=%+.1f "
		       "(observer on minus off)\n", mode, opn[op], v[1][0] - v[0][0],
		       v[1][1] - v[0][1], v[1][2] - v[0][2], v[1][3] - v[0][3],
		       v[1][4] - v[0][4], v[1][5] - v[0][5]);
	}
	mbench_sort(snap_us, nsnap);
	printf("BENCH latency-observer mode=%s hz=%u snapshots=%u errors=%u "
	       "snapshot_us_p50=%.1f snapshot_us_p99=%.1f snapshot_us_max=%.1f\n",
	       mode, hz, nsnap, errors, mbench_quantile(snap_us, nsnap, 0.5),
	       mbench_quantile(snap_us, nsnap, 0.99), nsnap ? snap_us[nsnap - 1] : 0);
	fflush(stdout);
	munmap(c, sizeof(*c));
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *lib = NULL, *modes[2] = { "fenced", "membarrier" };
	unsigned nmodes = 2, phases = 10, phase_ms = 1000, hz = 100;

	if (argc == 3 && strcmp(argv[1], "--target") == 0)
		return target(atoi(argv[2]));
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--lib") == 0)
			lib = argv[i + 1];
		else if (strcmp(argv[i], "--mode") == 0) {
			modes[0] = argv[i + 1];
			nmodes = 1;
		} else if (strcmp(argv[i], "--phases") == 0)
			phases = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--phase-ms") == 0)
			phase_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--hz") == 0)
			hz = (unsigned)strtoul(argv[i + 1], NULL, 10);
	}
	if (!lib || phases < 2 || phase_ms < 10 || hz < 1 || hz > 10000) {
		fprintf(stderr, "usage: mstat-bench-latency --lib PATH "
				"[--mode fenced|membarrier] [--phases N] "
				"[--phase-ms M] [--hz H]\n");
		return 2;
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	int rc = 0;
	for (unsigned m = 0; m < nmodes; m++)
		if (run_mode(self, lib, modes[m], phases, phase_ms, hz) < 0)
			rc = 1;
	return rc;
}
