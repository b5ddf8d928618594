/* SPDX-License-Identifier: MIT */
/*
 * heapsites.c - a program with one leaking call site and one churning
 * one, for the heap profile's end-to-end tests (pprof.py).  Plain: it is
 * run with libmstatshm preloaded.
 *
 *   heapsites   leak_site() keeps 65536 blocks of 1 KiB (64 MiB live);
 *               churn_site() allocates and frees 65536 blocks of 8 KiB
 *               (512 MiB allocated, none live); then prints "ready" and
 *               exits once stdin is closed, freeing nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LEAKS 65536
#define LEAK_SIZE 1024
#define CHURNS 65536
#define CHURN_SIZE 8192

static void *kept[LEAKS];

__attribute__((noinline)) static void *
leak_site(void)
{
	void *p = malloc(LEAK_SIZE);
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

__attribute__((noinline)) static void
churn_site(void)
{
	char *p = malloc(CHURN_SIZE);
	if (p)
		p[0] = 1;
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

int
main(void)
{
	for (int i = 0; i < LEAKS; i++)
		if (!(kept[i] = leak_site()))
			return 1;
	for (int i = 0; i < CHURNS; i++)
		churn_site();
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}
