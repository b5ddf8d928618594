/* SPDX-License-Identifier: MIT */
/*
 * memory_tick.c - what reading processes' resident memory in parts
 * (core/memory.h) adds to a tick of mstat-top over 1000 processes.
 *
 *   mstat-bench-memory-tick --lib PATH/libmstatshm.so [--targets N]
 *                           [--ticks T]
 *
 * Starts N targets (default 1000: this program again, libmstatshm
 * preloaded, MSTAT_EAGER=1): each makes a small heap (4000 blocks of 16
 * to 1024 bytes, every other one freed, and a block of 256 KiB, an
 * mmapped chunk), then waits.  Then an observer (struct mstat_core, what
 * mstat-top and mstat-exporter run) attaches them all and ticks T times
 * (default 40), for each way of reading memory: not at all (`off`, the
 * tick as it was before memory was read), mstat-top's (`share=10`: the
 * processes read longest ago, within 10 % of the rest of the tick's CPU
 * time), mstat-exporter's --collector.memory (`share=100`).  Per tick,
 * the observer thread's CPU time (CLOCK_THREAD_CPUTIME_ID), and the
 * processes whose memory a tick read, on average; and one look at each
 * process alone (mstat_memory_read()):
 *
 *   BENCH memory-tick targets=N memory=off tick_cpu_ms median=.. p90=..
 *   BENCH memory-tick targets=N memory=share=10 tick_cpu_ms median=.. p90=.. read=.. vs_off=..
 *   BENCH memory-tick targets=N memory=share=100 tick_cpu_ms median=.. p90=.. read=.. vs_off=..
 *   BENCH memory-look targets=N cpu_us median=.. p90=..
 *
 * The goal (docs/performance.md, "Resident memory"): mstat-top's tick
 * over 1000 processes costs at most 1.2 times what it did without.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "bench/common.h"
#include "core/core.h"
#include "core/memory.h"
#include "shm/reader.h"
#include "core/sampler.h" /* the core's targets and its count of reads */

/* ---- the target ---- */

static void *volatile sink;

static int
target_main(void)
{
	static void *b[4000];
	char c;

	for (int i = 0; i < 4000; i++)
		b[i] = malloc((size_t)16 << (i % 7));
	for (int i = 0; i < 4000; i += 2)
		free(b[i]);
	sink = malloc(256 << 10);
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		return 1;
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	return 0;
}

/* ---- the observer ---- */

/* Ticks over the n targets, memory read within `share` % (0: not): the
 * median CPU time of a tick, in ms; -1 if they could not be read. */
static double
ticks(const pid_t *pids, size_t n, unsigned share, unsigned count)
{
	struct mstat_core *core;
	struct mstat_core_options o = {
		.pids = pids, .npids = n, .interval_ms = 1000,
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = 5000000000u, .memory_share = share,
	};
	uint64_t *t = calloc(count, sizeof(*t));
	size_t attached = 0;

	if (!t || mstat_core_new(&core, &o) < 0) {
		free(t);
		return -1;
	}
	/* The first tick attaches them all (and reads every one's memory
	 * once): not what a tick costs after. */
	mstat_core_tick(core);
	struct mstat_core_target *tg;
	cds_list_for_each_entry(tg, &core->targets, node)
		attached++;
	if (attached != n) {
		fprintf(stderr, "attached %zu of %zu targets\n", attached, n);
		mstat_core_free(core);
		free(t);
		return -1;
	}
	uint64_t reads = core->memory_reads, looks = core->memory_looks;
	for (unsigned i = 0; i < count; i++) {
		uint64_t c = mbench_thread_cpu_ns();
		mstat_core_tick(core);
		t[i] = mbench_thread_cpu_ns() - c;
	}
	reads = core->memory_reads - reads;
	looks = core->memory_looks - looks;
	double median = (double)mbench_quantile_u64(t, count, 0.5) / 1e6;
	double p90 = (double)mbench_quantile_u64(t, count, 0.9) / 1e6;
	printf("BENCH memory-tick targets=%zu memory=%s%.0u tick_cpu_ms "
	       "median=%.2f p90=%.2f read=%.1f looks=%.1f", n,
	       share ? "share=" : "off", share, median, p90,
	       (double)reads / count, (double)looks / count);
	mstat_core_free(core);
	free(t);
	return median;
}

/* One look at each process alone, in the observer's CPU time. */
static int
looks(const pid_t *pids, size_t n)
{
	uint64_t *t = calloc(n, sizeof(*t)), answered = 0;
	struct mstat_snapshot *s = calloc(1, sizeof(*s));
	int rc = 0;

	for (size_t i = 0; t && s && i < n && rc == 0; i++) {
		struct mstat_reader *r;
		struct mstat_memory m;
		char err[256];
		if (mstat_reader_open_pid(&r, pids[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "%d: %s\n", (int)pids[i], err);
			rc = -1;
			break;
		}
		if ((rc = mstat_reader_snapshot(r, s)) < 0) {
			fprintf(stderr, "%d: %s\n", (int)pids[i], strerror(-rc));
		} else {
			uint64_t c = mbench_thread_cpu_ns();
			struct mstat_memory_mark mark = { 0 };
			int got = mstat_memory_read(r, pids[i], s, &mark, &m);
			t[i] = mbench_thread_cpu_ns() - c;
			answered += got == 1 && m.source == MSTAT_MEMORY_GLIBC;
		}
		mstat_reader_close(r);
	}
	if (t && s && rc == 0)
		printf("BENCH memory-look targets=%zu glibc=%llu cpu_us median=%.1f "
		       "p90=%.1f\n", n, (unsigned long long)answered,
		       (double)mbench_quantile_u64(t, n, 0.5) / 1e3,
		       (double)mbench_quantile_u64(t, n, 0.9) / 1e3);
	free(t);
	free(s);
	return t && s && rc == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const char *lib = NULL;
	unsigned count = 40;
	size_t n = 1000;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--target") == 0)
			return target_main();
		if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
			lib = argv[++i];
		else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
			count = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--targets") == 0 && i + 1 < argc)
			n = (size_t)atoi(argv[++i]);
	}
	if (!lib || count == 0 || n == 0) {
		fprintf(stderr, "usage: %s --lib PATH/libmstatshm.so [--targets N] "
			"[--ticks T]\n", argv[0]);
		return 2;
	}
	/* A descriptor for each target's two pipes, and the observer's. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	struct mbench_target *c = calloc(n, sizeof(*c));
	pid_t *pids = calloc(n, sizeof(*pids));
	if (!c || !pids)
		return 1;
	char preload[4096];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
	const char *env[] = { preload, "MSTAT_NAME=bench-memory",
			      "MSTAT_EAGER=1", NULL };
	for (size_t i = 0; i < n; i++) {
		if (mbench_target_start(&c[i], "mstat-bench-memory-tick", env) < 0) {
			fprintf(stderr, "target %zu did not start\n", i);
			rc = 1;
			goto out;
		}
		pids[i] = c[i].pid;
	}
	rcu_register_thread();
	double off = ticks(pids, n, 0, count);
	printf("\n");
	static const unsigned shares[] = { 10, 100 };
	for (size_t k = 0; k < 2 && off > 0; k++) {
		double v = ticks(pids, n, shares[k], count);
		printf(" vs_off=%.2f\n", v / off);
	}
	if (off < 0 || looks(pids, n) < 0)
		rc = 1;
	rcu_unregister_thread();
out:
	for (size_t i = 0; i < n; i++)
		mbench_target_stop(&c[i]);
	free(c);
	free(pids);
	return rc;
}
