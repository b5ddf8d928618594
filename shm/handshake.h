/* SPDX-License-Identifier: MIT */
/*
 * handshake.h - waiting until no slot is inside a section begun before a
 * point: step 4 of a read (shm/reader.c), and the drain a target makes
 * before a fork or its exit (lib/stop.c).
 *
 * The caller first makes its change visible (a rotation (D) and (M) for a
 * reader, the `stop` word and its barrier for the target); then every
 * section that could have missed the change has its odd seq visible to
 * the loads here, (E).  A slot whose seq is odd is waited on until seq
 * changes: seq is a counter, so a change means the section seen has ended.
 *
 * No allocation, no stdio: the target runs it inside fork() and exit().
 */
#ifndef MSTAT_SHM_HANDSHAKE_H
#define MSTAT_SHM_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct mstat_handshake {
	const unsigned char *slots; /* slot 0 */
	uint32_t slot_size;
	uint32_t used;              /* slots to look at */
	uint32_t next;              /* slots below this have been seen out */
	uint64_t odd;               /* odd seq seen at slot `next`, 0 if none */
	void (*on_slot)(void *);    /* called at each look, if not NULL */
	void *on_slot_arg;
};

void mstat_handshake_start(struct mstat_handshake *h, const unsigned char *slots,
			   uint32_t slot_size, uint32_t used);

/* Looks at the slots not yet seen out: true while one is still inside a
 * section it was in when first seen. */
bool mstat_handshake_poll(struct mstat_handshake *h);

/* Polls until done (true) or `budget_us` have passed on `clock` (false).
 * Spins a little, then yields: on a busy CPU the writer may need this
 * one.  CLOCK_MONOTONIC bounds the wait; CLOCK_THREAD_CPUTIME_ID bounds
 * the CPU it burns, so that a wait for a writer preempted on a loaded
 * CPU (or in a cgroup out of quota) lasts until it runs again, and one
 * for a writer that cannot run (stopped by a debugger) still ends. */
bool mstat_handshake_wait(struct mstat_handshake *h, unsigned budget_us,
			  clockid_t clock);

/* After a wait that gave up: how many slots are still inside a section
 * they were in when first seen, or when the wait ended. */
uint32_t mstat_handshake_pending(const struct mstat_handshake *h);

/* A pause in a spin loop. */
void mstat_handshake_relax(void);

#endif /* MSTAT_SHM_HANDSHAKE_H */
