/* SPDX-License-Identifier: MIT */
/*
 * fork.h - the library's fork handlers (fork.c).
 *
 * For the sum a child starts from to be the heap it gets, no count may be
 * in flight when it is taken, nor start before the copy: the prepare
 * handler stops and drains every section (stop.h) and sums every slot;
 * the forking thread itself counts into process memory (`forking`) from
 * its prepare handler to its parent or child handler.  The child makes a
 * segment of its own once it is worth one, as any process does.
 */
#ifndef MSTAT_LIB_FORK_H
#define MSTAT_LIB_FORK_H

#include "lib/state.h"

/* Registers the fork handlers (the library's start, once). */
void mstat_fork_handlers(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_FORK_H */
