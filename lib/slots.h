/* SPDX-License-Identifier: MIT */
/*
 * slots.h - each thread's slot, and its slot pointers (slots.c).
 *
 * A thread takes a slot at its first count once the segment exists: a
 * free one with pages, or the next one given its pages (one thread at a
 * time); with none to be had, it counts through the shared slot.  Its
 * slot goes back as it exits, counts and all: a slot keeps its
 * cumulative counts for good.  The hand-off is (H); the count of slots
 * with pages, (S) (docs/design.md).
 */
#ifndef MSTAT_LIB_SLOTS_H
#define MSTAT_LIB_SLOTS_H

#include <stdint.h>

#include "lib/state.h"
#include "lib/writer.h"

/* This thread writes `s` (or nothing of its own, NULL) from now on; the
 * inline paths take it as far as the mode and the interposer allow. */
void mstat_slots_set(struct mstat_shm_slot *s) MSTAT_HIDDEN;

/* How many slots have pages (the first ones): the slots a drain or a sum
 * looks at.  Acquire: their pages are there. */
uint32_t mstat_slots_reserved(void) MSTAT_HIDDEN;

/* As the first segment is made, with no lock held: the key whose
 * destructor gives an exiting thread's slot back (once: a fork child
 * inherits it; not at start, where most processes never need it). */
void mstat_slots_key(void) MSTAT_HIDDEN;

/* A segment is made, before it is published: slot 0, the shared slot,
 * has its pages. */
void mstat_slots_made(void) MSTAT_HIDDEN;

/* In a fork child: no slot has pages, none is taken (the parent's
 * segment is not the child's). */
void mstat_slots_fork_child(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_SLOTS_H */
