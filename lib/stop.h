/* SPDX-License-Identifier: MIT */
/*
 * stop.h - every thread's update sections stopped and drained, for a
 * fork or the exit, and what a section that finds them stopped does.
 *
 * The stop bit is in the word every section loads after it opens (the
 * address of `epoch`, mstat_writer_config.epoch: section.h), so that a
 * section that began before the stop is waited for (the handshake of
 * shm/handshake.h, on every slot with pages) and one that begins after
 * it sees it and goes out of line; the reason, a fork or the exit, is in
 * mstat_writer_config.stop.
 */
#ifndef MSTAT_LIB_STOP_H
#define MSTAT_LIB_STOP_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/state.h"

/* At start, while the process most likely has one thread: registers it
 * for the membarrier commands it uses.  (In an attached process, with
 * its threads running, each registration waits for an RCU grace period,
 * 4 to 24 ms here: attach.c makes them in a thread of its own.) */
void mstat_stop_start(void) MSTAT_HIDDEN;

/*
 * Sets `bit` (enum mstat_stop) and waits, at most DRAIN_BUDGET_US of its
 * CPU time, until every section that did not see it has ended.
 * Afterwards no thread writes a slot until the bit is cleared.  Returns
 * how many slots stayed inside a section (a thread stopped in a
 * debugger, or this very thread, interrupted by the signal handler that
 * called us): normally 0.
 */
uint32_t mstat_stop(unsigned char bit) MSTAT_HIDDEN;

/* A section found the stop bit.  While a fork is in progress, sleeps
 * until it ends and says to try again (true; the exit too: a fork made
 * during it); once the process exits, says to count without a section
 * of the thread's own (false).  Takes no lock: a signal handler may wait
 * here, for a fork of another thread. */
bool mstat_stop_wait(void) MSTAT_HIDDEN;

/* The fork is done, in the parent: sections run again, but for the
 * exit's stop, and those that wait are woken. */
void mstat_stop_fork_end(void) MSTAT_HIDDEN;

/* In a fork child: nothing is stopped. */
void mstat_stop_fork_child(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_STOP_H */
