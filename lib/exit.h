/* SPDX-License-Identifier: MIT */
/*
 * exit.h - the exit counted to its end (exit.c).
 *
 * At exit(), a return from main, quick_exit(), _exit() or _Exit(), every
 * thread but the exiting one stops counting into slots, the sections in
 * flight are waited for, the segment is marked EXITING and its name
 * unlinked; the exiting thread counts on through the shared slot, the
 * others into process memory, which it adds in, until its last count says
 * DONE (shared.h).  A reader that finds the owner gone reads the final
 * totals: exited if DONE, killed if not.
 */
#ifndef MSTAT_LIB_EXIT_H
#define MSTAT_LIB_EXIT_H

#include "lib/state.h"

/* Registers the exit handlers and finds the next _exit (the library's
 * start, once).  In the library mstat-attach injects, only those that
 * its unloading takes back (an attach that gives up unloads it). */
void mstat_exit_handlers(void) MSTAT_HIDDEN;

/* In the library mstat-attach injects, once the attach is done: the
 * handlers its unloading would leave behind (quick_exit's). */
void mstat_exit_handlers_attached(void) MSTAT_HIDDEN;

/* _exit() and _Exit(): the library's exit path, then the next _exit. */
void mstat_exit_now(int status) __attribute__((noreturn)) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_EXIT_H */
