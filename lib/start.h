/* SPDX-License-Identifier: MIT */
/*
 * start.h - the segment made, once the process is worth watching
 * (start.c).
 */
#ifndef MSTAT_LIB_START_H
#define MSTAT_LIB_START_H

#include "lib/state.h"

/* How long a thread waits for another to make the segment (a fork, a
 * self snapshot): that takes a millisecond or two (loading libunwind). */
#define START_WAIT_NS (1000u * 1000u * 1000u)

/* Makes the segment now, once, if the library has started and counts,
 * unless this thread is a signal handler inside the writer's critical
 * sections, or the exit has begun. */
void mstat_start_publish(void) MSTAT_HIDDEN;

/* The same, and waits for a start in another thread, so that the segment
 * exists now unless it cannot be made (or this very thread is making it:
 * a signal handler; or it waits for a lock this thread holds,
 * START_WAIT_NS). */
void mstat_start_publish_wait(void) MSTAT_HIDDEN;

/* In the library mstat-attach injects (attach.c): the start claimed by
 * the thread that runs the attach, before anything is counted, so that
 * no count makes the segment before it does; then made, by that thread,
 * the other threads running. */
void mstat_start_publish_claim(void) MSTAT_HIDDEN;
void mstat_start_publish_claimed(void) MSTAT_HIDDEN;

/* In a fork child whose parent had a segment, before it forgets it: the
 * hooks' fork_child (writer.h), and a start of the child's own to come. */
void mstat_start_fork_child(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_START_H */
