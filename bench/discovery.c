/* SPDX-License-Identifier: MIT */
/*
 * discovery.c - what mstat-top's tick costs with thousands of segments.
 *
 *   mstat-bench-discovery [--segments N] [--ticks T]
 *
 * Makes N live segments (default 5000) in /dev/shm, as many processes
 * would: this process writes each one (control page, class table, the
 * shared slot with counts in a few classes, sparse beyond), publishes it,
 * and holds its owner lock, so every one of them is alive to a reader.
 * Then an observer (struct mstat_core, what mstat-top runs) ticks T times
 * (default 20): the first tick attaches them all, the others read them.
 * The observer thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the wall
 * time of each tick are printed:
 *
 *   BENCH discovery segments=N first_tick cpu_ms=.. wall_ms=..
 *   BENCH discovery segments=N later_ticks cpu_ms median=.. p90=.. wall_ms median=..
 *
 * Goals (docs/performance.md, "Observer"): with 5000 segments, the first
 * tick within 0.5 s, later ticks within 50 ms of CPU.  The segments are
 * removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/segments.h"
#include "shm/layout.h"
#include "shm/name.h"
#include "shm/owner.h"
#include "shm/reader.h"
#include "core/core.h"
#include "core/sampler.h" /* the core's targets, looked at */

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "segments", required_argument, NULL, 's' },
		{ "ticks", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned n = 5000, ticks = 20;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			n = (unsigned)atoi(optarg);
		else if (c == 't')
			ticks = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (n == 0 || ticks < 2) {
		fprintf(stderr, "usage: mstat-bench-discovery [--segments N] [--ticks T >= 2]\n");
		return 2;
	}
	/* Our descriptors and the observer's: two per segment. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int *fds = calloc(n, sizeof(*fds));
	double *cpu = calloc(ticks, sizeof(*cpu)), *wall = calloc(ticks, sizeof(*wall));
	if (!fds || !cpu || !wall || mbench_segments_make(n, fds, "bench-discovery") < 0)
		return 1;

	struct mstat_core *core;
	struct mstat_core_options o = {
		.interval_ms = 1000,
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = 1000000000u,
		.note = mbench_segments_note,
		/* Its own /dev/shm: what this benchmark measures (the
		 * namespaces benchmark, the others). */
		.namespaces = { .own = true },
	};
	if (mstat_core_new(&core, &o) < 0)
		return 1;
	rcu_register_thread();
	for (unsigned t = 0; t < ticks; t++) {
		uint64_t c0 = mbench_thread_cpu_ns(), w0 = mbench_now_ns();
		mstat_core_tick(core);
		cpu[t] = (double)(mbench_thread_cpu_ns() - c0) / 1e6;
		wall[t] = (double)(mbench_now_ns() - w0) / 1e6;
	}
	size_t attached = 0;
	struct mstat_core_target *tg;
	cds_list_for_each_entry(tg, &core->targets, node)
		attached += tg->sample && tg->sample->have_snap;
	mstat_core_free(core);
	rcu_unregister_thread();
	mbench_segments_remove(n, fds);

	printf("BENCH discovery segments=%u read=%zu first_tick cpu_ms=%.1f "
	       "wall_ms=%.1f (goal 500)\n", n, attached, cpu[0], wall[0]);
	mbench_sort(cpu + 1, ticks - 1);
	mbench_sort(wall + 1, ticks - 1);
	printf("BENCH discovery segments=%u later_ticks cpu_ms median=%.1f "
	       "p90=%.1f wall_ms median=%.1f (goal 50 CPU) ticks=%u\n", n,
	       mbench_quantile(cpu + 1, ticks - 1, 0.5),
	       mbench_quantile(cpu + 1, ticks - 1, 0.9),
	       mbench_quantile(wall + 1, ticks - 1, 0.5), ticks - 1);
	return attached == n ? 0 : 1;
}
