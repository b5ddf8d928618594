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
 * Then an observer (struct mstat_top, what mstat-top runs) ticks T times
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

#include "common.h"
#include "layout.h"
#include "name.h"
#include "owner.h"
#include "reader.h"
#include "top.h"

#define SLOTS 4u

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first pages of a segment of this process with start time `start`:
 * header, class table, and slot 0 with counts in 8 classes. */
static void
image(unsigned char *buf, size_t len, uint64_t start)
{
	struct mstat_shm_header *h = (struct mstat_shm_header *)buf;
	const uint32_t classes = MSTAT_CLASS_COUNT;

	memset(buf, 0, len);
	h->version_major = MSTAT_SHM_VERSION_MAJOR;
	h->version_minor = MSTAT_SHM_VERSION_MINOR;
	h->header_size = sizeof(*h);
	h->segment_size = MSTAT_SEGMENT_SIZE(classes, SLOTS);
	h->class_count = classes;
	h->row_counters = MSTAT_ROW_COUNTERS;
	h->classes_offset = MSTAT_CLASSES_OFFSET;
	h->slots_offset = MSTAT_SLOTS_OFFSET(classes);
	h->slot_size = MSTAT_SLOT_SIZE(classes);
	h->slot_count = SLOTS;
	h->writer_mode = MSTAT_MODE_MEMBARRIER;
	h->pid = getpid();
	h->uid = geteuid();
	h->start_time = start;
	(void)mstat_pid_ns(&h->pid_ns);
	snprintf(h->name, sizeof(h->name), "bench-discovery");
	atomic_init(&h->state, MSTAT_STATE_RUNNING);
	atomic_init(&h->slots_used, 1);
	uint64_t *max = (uint64_t *)(buf + MSTAT_CLASSES_OFFSET);
	for (uint32_t c = 0; c < classes; c++)
		max[c] = mstat_class_max_size(c);
	struct mstat_shm_slot *s = (struct mstat_shm_slot *)(buf + h->slots_offset);
	for (unsigned c = 1; c <= 8; c++) {
		_Atomic uint64_t *row = s->acc + (size_t)c * MSTAT_ROW_COUNTERS;
		atomic_init(&row[MSTAT_C_ALLOC_COUNT], 100 * c);
		atomic_init(&row[MSTAT_C_ALLOC_BYTES], 1600 * c * c);
		atomic_init(&s->head.touched[0], atomic_load(&s->head.touched[0]) |
						 (UINT64_C(1) << c));
	}
	atomic_init(&h->magic, MSTAT_SHM_MAGIC);
}

static int
make(unsigned n, int *fds)
{
	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	char path[128], name[64];

	if (!buf)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t start = (UINT64_C(1) << 45) + i;
		mstat_shm_name(name, sizeof(name), getpid(), start, 0);
		snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, name);
		image(buf, len, start);
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || mstat_owner_lock(fd) < 0 ||
		    pwrite(fd, buf, len, 0) != (ssize_t)len ||
		    ftruncate(fd, (off_t)MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS)) < 0) {
			fprintf(stderr, "mstat-bench-discovery: %s: %s\n", path,
				strerror(errno));
			free(buf);
			return -1;
		}
		fds[i] = fd;
	}
	free(buf);
	return 0;
}

static void
unmake(unsigned n, int *fds)
{
	char name[64];

	for (unsigned i = 0; i < n; i++) {
		mstat_shm_name(name, sizeof(name), getpid(), (UINT64_C(1) << 45) + i, 0);
		shm_unlink(name);
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

static void
quiet(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "note: %s\n", line);
}

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
	if (!fds || !cpu || !wall || make(n, fds) < 0)
		return 1;

	struct mstat_top top;
	struct mstat_top_options o = {
		.interval_ms = 1000,
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = 1000000000u,
		.note = quiet,
	};
	if (mstat_top_init(&top, &o) < 0)
		return 1;
	rcu_register_thread();
	for (unsigned t = 0; t < ticks; t++) {
		uint64_t c0 = thread_cpu_ns(), w0 = mbench_now_ns();
		mstat_top_tick(&top);
		cpu[t] = (double)(thread_cpu_ns() - c0) / 1e6;
		wall[t] = (double)(mbench_now_ns() - w0) / 1e6;
	}
	size_t attached = 0;
	struct mstat_top_target *tg;
	cds_list_for_each_entry(tg, &top.targets, node)
		attached += tg->sample && tg->sample->have_snap;
	mstat_top_fini(&top);
	rcu_unregister_thread();
	unmake(n, fds);

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
