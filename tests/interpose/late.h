/* SPDX-License-Identifier: MIT */
/* late.h - libmstat-test-late.so (late_lib.c), for late.c. */
#ifndef MSTAT_TEST_LATE_H
#define MSTAT_TEST_LATE_H

#include <stddef.h>

/* How the library's destructor ends (see late.c). */
void late_mode(const char *m);
/* The usable bytes of one of its blocks. */
size_t late_usable(void);
/* The header of its own segment, mapped, for mode "busy". */
void late_watch(const void *header);
/* Frees blocks [from, to). */
void late_free(unsigned from, unsigned to);

#endif
