/* SPDX-License-Identifier: MIT */
/*
 * modsite.c - one call site in a shared object of its own, built as
 * several objects (mstat-test-modsite-N.so), each loaded with dlopen()
 * by modsites.c while another thread's samples go on.
 */
#include <stdlib.h>

void *modsite_keep(size_t n);

__attribute__((noinline)) void *
modsite_keep(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 1;
	__asm__ volatile("" : : "r"(p) : "memory"); /* a frame of its own */
	return p;
}
