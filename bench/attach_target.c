/* SPDX-License-Identifier: MIT */
/*
 * attach_target.c - mstat-bench-attach-target: the process
 * bench/attach.c attaches, started without libmstatshm.
 *
 *   mstat-bench-attach-target THREADS DIR
 *
 * Loads every file of DIR (copies of mstat-bench-attach-object.so, each
 * an object of its own), starts THREADS threads that allocate through
 * them (a quarter without a pause, as a busy service's workers; the
 * rest a round, then 1 ms asleep, as its idle ones), says "ready N"
 * (N objects loaded), and at a line on stdin stops its threads, checks
 * that every round computed what the first did, says "ok" and exits 0.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBJECTS_MAX 512
#define ROUND 64

typedef unsigned (*work_fn)(unsigned);

static work_fn work[OBJECTS_MAX];
static unsigned nwork, first;
static _Atomic bool stop;
static _Atomic unsigned long wrong;

static void *
worker(void *arg)
{
	unsigned long k = (unsigned long)(uintptr_t)arg;
	bool busy = k % 4 == 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (work[k++ % nwork](ROUND) != first)
			atomic_fetch_add(&wrong, 1);
		if (!busy) {
			struct timespec ts = { 0, 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	char path[4096], line[16];
	pthread_t th[256];

	if (argc != 3)
		return 2;
	unsigned threads = (unsigned)strtoul(argv[1], NULL, 10);
	DIR *d = opendir(argv[2]);
	if (!d || threads < 1 || threads > 256)
		return 2;
	for (struct dirent *e; (e = readdir(d)) && nwork < OBJECTS_MAX;) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", argv[2], e->d_name);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(*(void **)&work[nwork] = dlsym(h, "obj_work"))) {
			fprintf(stderr, "%s: %s\n", path, dlerror());
			return 1;
		}
		nwork++;
	}
	closedir(d);
	if (!nwork)
		return 1;
	first = work[0](ROUND);
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 1;
	printf("ready %u\n", nwork);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	atomic_store(&stop, true);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	unsigned long w = atomic_load(&wrong);
	if (w)
		printf("wrong %lu\n", w);
	else
		printf("ok\n");
	return w ? 1 : 0;
}
