/* SPDX-License-Identifier: MIT */
/*
 * observer_tick.c - what one mstat-top tick costs the observer, for 1, 10
 * and 100 targets of 8 threads each.
 *
 *   mstat-bench-observer-tick --lib PATH/libmstatshm.so [--ticks N]
 *
 * Starts 100 targets (this program again, with libmstatshm preloaded):
 * each runs 8 threads that allocate and free in 16 size classes, so that
 * each holds a slot with rows to sum, and then wait (a stopped writer is
 * the other benchmark's business: here every handshake completes).  Then,
 * for 1, 10 and 100 of them, an observer (struct mstat_core, exactly what
 * mstat-top runs) attaches and ticks N times.  Per tick it measures the
 * observer thread's CPU time (CLOCK_THREAD_CPUTIME_ID) of:
 *   tick      mstat_core_tick(): scan /dev/shm, liveness, read every target
 *             (one membarrier), publish the samples
 *   read      mstat_reader_snapshot_many() alone over the same targets
 * and prints one line per target count:
 *   BENCH observer-tick targets=T threads=8T tick_cpu_us median=.. p90=..
 *     read_cpu_us median=.. p90=.. wall_us median=..
 * The goal (docs/performance.md, "Observer"): a tick over 100 targets
 * costs at most 1 ms of observer CPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/reader.h"
#include "shm/clock.h"
#include "bench/common.h"
#include "core/core.h"
#include "core/sampler.h" /* the core's targets, looked at */

#define TARGETS 100
#define THREADS 8

/* ---- the target ---- */

struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int counted, go;
};

static void *
target_thread(void *arg)
{
	struct gate *g = arg;
	void *p[16];

	for (int round = 0; round < 100; round++) {
		for (int c = 0; c < 16; c++)
			p[c] = malloc((size_t)16 << (c / 2));
		for (int c = 0; c < 16; c++)
			free(p[c]);
	}
	pthread_mutex_lock(&g->lock);
	g->counted++;
	pthread_cond_broadcast(&g->cond);
	while (!g->go)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static int
target_main(void)
{
	struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	pthread_t t[THREADS];
	char c;

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, target_thread, &g) != 0)
			return 1;
	pthread_mutex_lock(&g.lock);
	while (g.counted < THREADS)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		return 1;
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	pthread_mutex_lock(&g.lock);
	g.go = 1;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* ---- the observer ---- */

static int
measure(const pid_t *pids, size_t n, unsigned ticks)
{
	struct mstat_core *core;
	struct mstat_core_options o = {
		.pids = pids, .npids = n, .interval_ms = 1000,
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = 5000000000u,
	};
	uint64_t *tick = calloc(ticks, sizeof(*tick));
	uint64_t *read = calloc(ticks, sizeof(*read));
	uint64_t *wall = calloc(ticks, sizeof(*wall));
	struct mstat_reader **rs = calloc(n, sizeof(*rs));
	struct mstat_snapshot *snaps = calloc(n, sizeof(*snaps));
	struct mstat_snapshot **outs = calloc(n, sizeof(*outs));
	int *rcs = calloc(n, sizeof(*rcs));
	size_t attached = 0, failed = 0;

	if (!tick || !read || !wall || !rs || !snaps || !outs || !rcs ||
	    mstat_core_new(&core, &o) < 0)
		return -1;
	mstat_core_tick(core); /* attaches */
	struct mstat_core_target *t;
	cds_list_for_each_entry(t, &core->targets, node)
		rs[attached++] = t->reader;
	if (attached != n) {
		fprintf(stderr, "attached %zu of %zu targets\n", attached, n);
		return -1;
	}
	for (unsigned i = 0; i < ticks; i++) {
		uint64_t w = mstat_clock_mono_ns(), c = mbench_thread_cpu_ns();
		mstat_core_tick(core);
		tick[i] = mbench_thread_cpu_ns() - c;
		wall[i] = mstat_clock_mono_ns() - w;
		c = mbench_thread_cpu_ns();
		for (size_t k = 0; k < n; k++)
			outs[k] = &snaps[k];
		mstat_reader_snapshot_many(rs, n, outs, rcs,
					   MSTAT_WAIT_BUDGET_DEFAULT_US);
		read[i] = mbench_thread_cpu_ns() - c;
		for (size_t k = 0; k < n; k++)
			failed += rcs[k] != 0;
	}
#define US(v, q) ((double)mbench_quantile_u64(v, ticks, q) / 1000.0)
	printf("BENCH observer-tick targets=%zu threads=%zu tick_cpu_us median=%.1f "
	       "p90=%.1f read_cpu_us median=%.1f p90=%.1f wall_us median=%.1f "
	       "failed_reads=%zu\n",
	       n, n * THREADS, US(tick, 0.5), US(tick, 0.9), US(read, 0.5),
	       US(read, 0.9), US(wall, 0.5), failed);
#undef US
	fflush(stdout);
	mstat_core_free(core);
	free(tick);
	free(read);
	free(wall);
	free(rs);
	free(snaps);
	free(rcs);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *lib = NULL;
	unsigned ticks = 200;
	static struct mbench_target c[TARGETS];
	pid_t pids[TARGETS];
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--target") == 0)
			return target_main();
		if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
			lib = argv[++i];
		else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
			ticks = (unsigned)atoi(argv[++i]);
	}
	if (!lib || ticks == 0) {
		fprintf(stderr, "usage: %s --lib PATH/libmstatshm.so [--ticks N]\n",
			argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	char preload[4096];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
	const char *env[] = { preload, "MSTAT_NAME=bench-tick", "MSTAT_SLOTS=16",
			      NULL };
	for (int i = 0; i < TARGETS; i++) {
		if (mbench_target_start(&c[i], "mstat-bench-observer-tick", env) < 0) {
			fprintf(stderr, "target %d did not start\n", i);
			rc = 1;
			goto out;
		}
		pids[i] = c[i].pid;
	}
	rcu_register_thread();
	const size_t counts[] = { 1, 10, TARGETS };
	for (size_t k = 0; k < 3 && rc == 0; k++)
		if (measure(pids, counts[k], ticks) < 0)
			rc = 1;
	rcu_unregister_thread();
out:
	for (int i = 0; i < TARGETS; i++)
		mbench_target_stop(&c[i]);
	return rc;
}
