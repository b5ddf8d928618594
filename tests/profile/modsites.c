/* SPDX-License-Identifier: MIT */
/*
 * modsites.c - objects loaded one after another while samples are taken,
 * for the modules' test (modules.py).  Run with libmstatshm preloaded,
 * every allocation sampled (MSTAT_SAMPLE_BYTES=1).
 *
 *   modsites OBJECT...
 *
 * A thread allocates and frees from this program without pause, so that
 * every sample of the main thread's races with its samples.  The main
 * thread loads each OBJECT in turn and keeps BLOCKS blocks from its
 * modsite_keep(), each a sample whose stack starts in that object, loaded
 * after the process's first samples.  Then it prints "ready KEPT", KEPT
 * the usable bytes it keeps from each object (the size the counters
 * count a block with), and exits once stdin is closed.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 64
#define SIZE 1024

static atomic_bool stop;

__attribute__((noinline)) static void *
churn_site(void)
{
	char *p = malloc(SIZE);
	if (p)
		p[0] = 2;
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

static void *
churn(void *arg)
{
	(void)arg;
	/* Relaxed: a flag, ordering nothing. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		free(churn_site());
	return NULL;
}

int
main(int argc, char **argv)
{
	size_t kept = 0;
	pthread_t t;

	if (argc < 2) {
		fprintf(stderr, "usage: modsites OBJECT...\n");
		return 2;
	}
	free(churn_site()); /* the process's first sample, before any load */
	if (pthread_create(&t, NULL, churn, NULL) != 0) {
		fprintf(stderr, "modsites: pthread_create failed\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		void *(*keep)(size_t) = NULL;
		if (h)
			*(void **)&keep = dlsym(h, "modsite_keep");
		if (!keep) {
			fprintf(stderr, "modsites: %s: %s\n", argv[i], dlerror());
			return 1;
		}
		size_t mine = 0;
		for (int b = 0; b < BLOCKS; b++) {
			void *p = keep(SIZE); /* kept to the process's end */
			if (!p)
				return 1;
			mine += malloc_usable_size(p);
		}
		if (kept && mine != kept) {
			fprintf(stderr, "modsites: %zu bytes kept, %zu before\n", mine, kept);
			return 1;
		}
		kept = mine;
	}
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(t, NULL);
	printf("ready %zu\n", kept);
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}
