/* SPDX-License-Identifier: MIT */
/* handshake.c - waiting for sections to end; see handshake.h. */
#include "shm/handshake.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "shm/clock.h"
#include "shm/layout.h"

void
mstat_handshake_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

void
mstat_handshake_start(struct mstat_handshake *h, const unsigned char *slots,
		      uint32_t slot_size, uint32_t used)
{
	h->slots = slots;
	h->slot_size = slot_size;
	h->used = used;
	h->next = 0;
	h->odd = 0;
	h->on_slot = NULL;
	h->on_slot_arg = NULL;
}

bool
mstat_handshake_poll(struct mstat_handshake *h)
{
	while (h->next < h->used) {
		const struct mstat_shm_slot *s =
			(const struct mstat_shm_slot *)(h->slots +
							(size_t)h->next * h->slot_size);
		/* (E) seq_cst: with (D) against the writer's (A)/(B), or with
		 * the store of `stop` against (A)/(V), if this load misses a
		 * section's odd seq, that section sees the change.  Also
		 * acquire: pairs with (C), so the counters of every section
		 * that ended before are visible to whatever is read next. */
		uint64_t v = atomic_load_explicit(&s->head.seq, memory_order_seq_cst);

		if (h->on_slot)
			h->on_slot(h->on_slot_arg);
		/* Even: not in a section.  Odd but moved since first seen:
		 * the section seen then has ended. */
		if (!(v & 1) || (h->odd && v != h->odd)) {
			h->next++;
			h->odd = 0;
			continue;
		}
		h->odd = v;
		return true;
	}
	return false;
}

uint32_t
mstat_handshake_pending(const struct mstat_handshake *h)
{
	uint32_t n = 0;

	for (uint32_t i = h->next; i < h->used; i++) {
		const struct mstat_shm_slot *s =
			(const struct mstat_shm_slot *)(h->slots + (size_t)i * h->slot_size);
		n += atomic_load_explicit(&s->head.seq, memory_order_relaxed) & 1;
	}
	return n;
}

bool
mstat_handshake_wait(struct mstat_handshake *h, unsigned budget_us,
		     clockid_t clock)
{
	uint64_t deadline;
	unsigned spins = 0;

	if (!mstat_handshake_poll(h))
		return true;
	deadline = mstat_clock_us(clock) + budget_us;
	while (mstat_handshake_poll(h)) {
		if (++spins < 128) {
			mstat_handshake_relax();
			continue;
		}
		if (mstat_clock_us(clock) >= deadline)
			return false;
		sched_yield();
	}
	return true;
}
