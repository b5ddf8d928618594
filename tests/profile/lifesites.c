/* SPDX-License-Identifier: MIT */
/*
 * lifesites.c - three call sites whose blocks live known times, for the
 * lifetimes' test (lifetimes.py).  Plain: run with libmstatshm preloaded.
 *
 *   lifesites   at_once_site() allocates 16384 blocks of 4 KiB and frees
 *               each at once (64 MiB); later_site() allocates 1024 blocks
 *               of 4 KiB four times, and frees them 0.5 s later (16 MiB);
 *               never_site() keeps 1024 blocks of 4 KiB (4 MiB), made
 *               first.  Then it prints "ready" and exits once stdin is
 *               closed, freeing nothing more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SIZE 4096
#define AT_ONCE 16384
#define LATER 1024
#define ROUNDS 4
#define NEVER 1024

static void *later[LATER], *kept[NEVER];

__attribute__((noinline)) static void *
at_once_site(void)
{
	char *p = malloc(SIZE);
	if (p)
		p[0] = 1; /* a body of its own: not folded into another */
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

__attribute__((noinline)) static void *
later_site(void)
{
	char *p = malloc(SIZE);
	if (p)
		p[0] = 2; /* a body of its own: not folded into another */
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

__attribute__((noinline)) static void *
never_site(void)
{
	char *p = malloc(SIZE);
	if (p)
		p[0] = 3; /* a body of its own: not folded into another */
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}

int
main(void)
{
	const struct timespec half = { 0, 500000000 };

	for (int i = 0; i < NEVER; i++)
		if (!(kept[i] = never_site()))
			return 1;
	for (int i = 0; i < AT_ONCE; i++)
		free(at_once_site());
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < LATER; i++)
			if (!(later[i] = later_site()))
				return 1;
		nanosleep(&half, NULL);
		for (int i = 0; i < LATER; i++)
			free(later[i]);
	}
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}
