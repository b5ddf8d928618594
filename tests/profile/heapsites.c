/* SPDX-License-Identifier: MIT */
/*
 * heapsites.c - a program with one leaking call site and one churning
 * one, for the heap profile's end-to-end tests (tests/profile/e2e.py).
 * Plain: it is run with libmstatshm preloaded, or attached (usdt.py).
 *
 *   heapsites   leak_site() keeps 65536 blocks of 1 KiB (64 MiB live);
 *               churn_site() allocates and frees 65536 blocks of 8 KiB
 *               (512 MiB allocated, none live); then prints "ready", the
 *               usable sizes of a leak_site and a churn_site block (what
 *               the counters and the profile count them with), and exits
 *               once stdin is closed, freeing nothing.  Each "l" read from
 *               stdin before then makes late_site() keep 16384 blocks of
 *               1 KiB more (16 MiB), and prints "grown"; each "c" makes
 *               churn_site() allocate and free 16384 blocks more (128
 *               MiB), and prints "churned"; an "m" makes mixed_site()
 *               keep 396,000 blocks of 32 B and 4,000 of 64 KiB, one of
 *               64 KiB after every 99 of 32 B (400,000 objects, 274.8 MB
 *               asked for), and prints "mixed" and the usable sizes of
 *               the two; an "o" makes late_site() keep blocks until the
 *               process is killed (the OOM killer of a memory-limited
 *               cgroup), or malloc fails (exit 1).
 *   heapsites wait
 *               the same, once a line is read from stdin after it printed
 *               "waiting" (a tracer attaches meanwhile).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LEAKS 65536
#define LEAK_SIZE 1024
#define CHURNS 65536
#define CHURN_SIZE 8192
#define LATES 16384
#define LATE_SIZE 1024
#define CHURNS_MORE 16384
#define MIXED 400000
#define MIXED_SMALL 32
#define MIXED_LARGE 65536

static void *kept[LEAKS];

__attribute__((noinline)) static void *
leak_site(void)
{
	void *p = malloc(LEAK_SIZE);
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

/* The usable size of the block it made, freed. */
__attribute__((noinline)) static size_t
churn_site(void)
{
	char *p = malloc(CHURN_SIZE);
	size_t usable = p ? malloc_usable_size(p) : 0;
	if (p)
		p[0] = 1;
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	return usable;
}

/* A block that keeps the one kept before it: a chain, no table. */
__attribute__((noinline)) static void *
late_site(void *prev)
{
	void **p = malloc(LATE_SIZE);
	if (p)
		*p = prev;
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* A block of `size` that keeps the one kept before it: one call site of
 * two sizes. */
__attribute__((noinline)) static void *
mixed_site(void *prev, size_t size)
{
	void **p = malloc(size);
	if (p)
		*p = prev;
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int
main(int argc, char **argv)
{
	if (argc > 1) {
		printf("waiting\n");
		fflush(stdout);
		int c;
		while ((c = getchar()) != '\n' && c != EOF)
			;
	}
	for (int i = 0; i < LEAKS; i++)
		if (!(kept[i] = leak_site()))
			return 1;
	size_t churn_usable = 0;
	for (int i = 0; i < CHURNS; i++)
		churn_usable = churn_site();
	printf("ready %zu %zu\n", malloc_usable_size(kept[0]), churn_usable);
	fflush(stdout);
	void *late = NULL, *mixed = NULL;
	int c;
	while ((c = getchar()) != EOF) {
		if (c == 'l') {
			for (int i = 0; i < LATES; i++)
				if (!(late = late_site(late)))
					return 1;
			printf("grown\n");
		} else if (c == 'o') {
			for (;;)
				if (!(late = late_site(late)))
					return 1;
		} else if (c == 'm') {
			size_t usable[2] = { 0, 0 };
			for (int i = 0; i < MIXED; i++) {
				int large = i % 100 == 99;
				if (!(mixed = mixed_site(mixed, large ? MIXED_LARGE
								       : MIXED_SMALL)))
					return 1;
				usable[large] = malloc_usable_size(mixed);
			}
			printf("mixed %zu %zu\n", usable[0], usable[1]);
		} else if (c == 'c') {
			for (int i = 0; i < CHURNS_MORE; i++)
				churn_site();
			printf("churned\n");
		}
		fflush(stdout);
	}
	return 0;
}
