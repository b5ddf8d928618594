/* SPDX-License-Identifier: MIT */
/* plugin.h - libmstat-test-plugin.so (plugin.c) and libmstat-test-slow.so
 * (plugin_slow.c). */
#ifndef MSTAT_TEST_PLUGIN_H
#define MSTAT_TEST_PLUGIN_H

#include <stddef.h>

#define PLUGIN_CTOR_BLOCKS 7
#define PLUGIN_CTOR_SIZE 3000

void plugin_free_ctor_blocks(void);
void *plugin_malloc(size_t n);
void *plugin_calloc(size_t n, size_t size);
void *plugin_realloc(void *p, size_t n);
void plugin_free(void *p);
extern void (*const plugin_free_ptr)(void *);

#define SLOW_FD_SAID 200
#define SLOW_FD_GO 201
#define SLOW_ANSWER 42

int slow_call(void);
extern void *(*const slow_malloc_ptr)(size_t);

#endif
