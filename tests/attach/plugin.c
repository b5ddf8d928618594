/* SPDX-License-Identifier: MIT */
/*
 * plugin.c - libmstat-test-plugin.so: a shared library a test loads with
 * dlopen() after the attach, whose calls of malloc go through its own
 * slots (which the attached library must find and patch).  Its
 * constructor allocates PLUGIN_CTOR_BLOCKS blocks before anything can
 * patch it: blocks made before, as far as the counts know.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/attach/plugin.h"

static void *ctor_blocks[PLUGIN_CTOR_BLOCKS];

__attribute__((constructor)) static void
plugin_start(void)
{
	for (int i = 0; i < PLUGIN_CTOR_BLOCKS; i++)
		ctor_blocks[i] = malloc(PLUGIN_CTOR_SIZE);
}

void
plugin_free_ctor_blocks(void)
{
	for (int i = 0; i < PLUGIN_CTOR_BLOCKS; i++) {
		free(ctor_blocks[i]);
		ctor_blocks[i] = NULL;
	}
}

void *
plugin_malloc(size_t n)
{
	return malloc(n);
}

void *
plugin_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

void *
plugin_realloc(void *p, size_t n)
{
	return realloc(p, n);
}

void
plugin_free(void *p)
{
	free(p);
}

/* A function pointer taken in data, which the loader relocates: a slot
 * of the kind R_X86_64_64. */
void (*const plugin_free_ptr)(void *) = free;
