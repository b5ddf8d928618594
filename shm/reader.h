/* SPDX-License-Identifier: MIT */
/*
 * reader.h - the reader protocol, in steps, for readers of many targets.
 *
 * mstat_reader_snapshot() (public, mstatshm.h) reads one target.  A reader
 * of many targets (mstat-top) runs the same steps over all of them so that
 * one tick costs one membarrier, not one per target:
 *
 *	for each target: mstat_reader_begin()   lock, catch up, base, rotate
 *	mstat_reader_barrier() once, if any target needs it
 *	until none pending or out of time: mstat_reader_poll() each
 *	for each target: mstat_reader_finish() or mstat_reader_abandon()
 *
 * mstat_reader_snapshot_many() does exactly that.
 *
 * struct mstat_reader is the reader's own (reader.c): everything else,
 * the observer and mstat-run included, uses it through these functions
 * and those of mstatshm.h.
 */
#ifndef MSTAT_SHM_READER_H
#define MSTAT_SHM_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/layout.h"
#include <mstatshm.h>

/* Why process `pid` has no segment to read, in one line into `err`:
 * -ESRCH there is no such process (here), -EPERM it is another user's,
 * -ENOENT it does not count with libmstatshm.  mstat_reader_open_pid()
 * says the same when it finds none. */
int mstat_reader_why_none(pid_t pid, char *err, size_t errlen);

#define MSTAT_READER_MAGIC 0x6d737264u /* "msrd" */
#define MSTAT_WAIT_BUDGET_DEFAULT_US 10000u
#define MSTAT_LOCK_BUDGET_US 1000000u


/* Steps of a read, for tests that kill a reader at each of them. */
enum mstat_read_step {
	MSTAT_STEP_LOCKED,
	MSTAT_STEP_CAUGHT_UP,
	MSTAT_STEP_BASE_READ,
	MSTAT_STEP_ROTATED,
	MSTAT_STEP_HANDSHAKE, /* once per slot looked at */
	MSTAT_STEP_SUMMED,
	MSTAT_STEP_SYNCED,
	MSTAT_STEP_COUNT
};
void mstat_reader_set_step_hook(void (*hook)(enum mstat_read_step, void *),
				void *arg);

/* Attaches to the segment open at `fd` (which the reader then owns and
 * closes), named `label` in messages.  For a descriptor received from the
 * target itself (mstat-run). */
int mstat_reader_open_fd(struct mstat_reader **out, int fd, const char *label,
			 char *err, size_t errlen);

/* The same for a segment whose owner and header uid the caller checks
 * (mstat_reader_info() and fstat() on mstat_reader_fd() say what they
 * are) against the process the header claims: a segment of another
 * user, or of another namespace, read by a privileged observer.  Every
 * other check is made. */
int mstat_reader_open_claimed(struct mstat_reader **out, int fd,
			      const char *label, char *err, size_t errlen);

/* Unmaps a reader's segment and closes its fd, keeping the reader's
 * memory (a fork child drops its parent's reader this way: the memory is
 * inherited heap, and freeing it would count a free the child never
 * made).  Only mstat_reader_close() may follow. */
void mstat_reader_unmap(struct mstat_reader *r);

/* Lock, catch up with a reader that died mid-read (waiting for it at most
 * `catchup_budget_us`), read the base generation and rotate.  0, or -EBUSY
 * (another reader holds the lock; not waited for), -EAGAIN (catching up
 * found a stalled slot), -EPROTO.  If the owner is gone, none of that: the
 * counters are final, and finish reads them as they are. */
int mstat_reader_begin(struct mstat_reader *r, unsigned catchup_budget_us);

/* Whether a target begun needs mstat_reader_barrier() before polling. */
bool mstat_reader_needs_barrier(const struct mstat_reader *r);

/* The global membarrier: 0 or -errno. */
int mstat_reader_barrier(void);

/* Looks at the slots not yet seen leaving the old epoch: true while one is
 * still inside a section begun before the rotation. */
bool mstat_reader_poll(struct mstat_reader *r);

/* Whether the segment's owner lives: 1, 0, or -errno. */
int mstat_reader_alive(const struct mstat_reader *r);

/* The segment's descriptor (to remove it, owner.h). */
int mstat_reader_fd(const struct mstat_reader *r);

/* Classes in its snapshots: a snapshot needs room for this many entries
 * in its arrays (mstatshm.h). */
uint32_t mstat_reader_class_count(const struct mstat_reader *r);

/* What became of the blocks made before the attach, in a process the
 * library was injected into (mstat-attach): its prior counters
 * (MSTAT_PRIOR_COUNTERS) as of the last snapshot taken, all 0 in any
 * other process and before a snapshot.  mstat_reader_info()'s
 * attached_ns says when the attach was. */
struct mstat_prior {
#define MSTAT_X(e, f, h) uint64_t f;
	MSTAT_PRIOR_COUNTERS(MSTAT_X)
#undef MSTAT_X
};
void mstat_reader_prior(const struct mstat_reader *r, struct mstat_prior *out);

/* When the target began to exit (CLOCK_REALTIME ns), 0 if it has not. */
uint64_t mstat_reader_exit_ns(const struct mstat_reader *r);

/* Handshake done: sum the snapshot, record it as synced, unlock.  Returns
 * 0, or -EFAULT if the segment was cut while being read. */
int mstat_reader_finish(struct mstat_reader *r, struct mstat_snapshot *out);

/* Give up on a read (a slot stalled): unlock and say which slot.  The next
 * read catches up; nothing is lost.  Returns -EAGAIN. */
int mstat_reader_abandon(struct mstat_reader *r);

/* One tick over many targets: rcs[i] is what mstat_reader_snapshot() would
 * return for rs[i], into *outs[i]; the whole call waits at most
 * `budget_us` for stalled slots, whatever their number. */
void mstat_reader_snapshot_many(struct mstat_reader **rs, size_t n,
				struct mstat_snapshot **outs, int *rcs,
				unsigned budget_us);

/*
 * The sampled heap profile (docs/design.md, "Heap profile").  Read without
 * the flock and without rotating anything: its counters are cumulative
 * and only grow.  What a read guarantees: every stack has all its frames;
 * per stack, frees <= allocs, free_bytes <= alloc_bytes, free_objects <=
 * alloc_objects and free_weight <= alloc_weight (a free is never seen
 * without its allocation); every module listed is whole; a stack's
 * lifetime buckets sum to its free_weight.  It is not the cut of a snapshot: a sample taken during
 * the read may be in or out, and a live sample's birth is read apart
 * from its stack's counts.  Stacks the target entered
 * twice (two threads making the same new entry at once) are merged, their
 * sums stopping at UINT64_MAX.  Counts are of samples; the weights and
 * objects are the bytes and blocks the samples stand for, which
 * core/pprof.h turns into estimates.  The region is the target's to
 * write: entries no writer makes (a depth or frames out of bounds, more
 * frees than allocations, an empty module) are left out, and counts,
 * lengths and paths bounded (docs/design.md, "Reading it"), so that the
 * above holds whatever it holds.
 */
struct mstat_profile_stack {
	/* Samples, and their bytes as the slots count them (requested
	 * bytes from a segment of format 5.0). */
	uint64_t allocs, alloc_bytes, frees, free_bytes;
	/* The bytes they stand for (layout.h, struct mstat_shm_stack); 0
	 * unless the profile is `weighted`. */
	uint64_t alloc_weight, free_weight;
	/* The objects they stand for, in MSTAT_OBJECT_UNITS of one; 0 unless
	 * the profile `has_objects`. */
	uint64_t alloc_objects, free_objects;
	/* The weights freed by lifetime: bucket b, [2^b, 2^(b+1)) ticks of
	 * the profile's counter (layout.h, struct mstat_shm_lifetimes). */
	uint64_t lifetimes[MSTAT_LIFETIMES];
	/* Its live samples that have a birth word: how many, the sum and the
	 * least of their births, in units of 2^MSTAT_BIRTH_SHIFT ticks since
	 * the profile's tick0. */
	uint64_t born_n, born_sum, born_min;
	uint32_t depth;
	uint64_t frames[MSTAT_STACK_DEPTH]; /* leaf first: return addresses,
					     * the first the allocation's call */
};

struct mstat_profile_module {
	uint64_t start, end, bias;
	uint32_t build_id_len;
	uint8_t build_id[MSTAT_BUILD_ID_MAX];
	char path[MSTAT_MODULE_PATH];
};

struct mstat_profile {
	uint64_t sample_bytes;  /* the mean interval in effect; 0 off */
	/* Its stacks carry weights (format 5.1 on); else their counts are
	 * unbiased with sample_bytes, as their samples' interval. */
	bool weighted;
	/* Its stacks count their objects (format 6.1 on); else a stack's
	 * objects are estimated from its weight and its bytes. */
	bool has_objects;
	uint64_t samples;       /* taken */
	uint64_t dropped;       /* taken, not kept (a table was full) */
	/* The tick counter (shm/clock.h) and CLOCK_MONOTONIC when the target
	 * set its profile up, and as this read took them: its rate is
	 * mstat_reader_profile_ns_per_tick(). */
	uint64_t tick0, ns0, now_tick, now_ns;
	uint32_t nstacks, nmodules;
	struct mstat_profile_stack *stacks;
	struct mstat_profile_module *modules;
};

/* Reads the profile into *out (which mstat_reader_profile_release() frees): 0,
 * -ENOMEM, or -EFAULT if the segment was cut while being read. */
int mstat_reader_profile(struct mstat_reader *r, struct mstat_profile *out);
void mstat_reader_profile_release(struct mstat_profile *p);

/* Asks the target to sample every `bytes` on average from now on (0:
 * stop sampling); its threads apply it at their next sample, or within
 * 64 MiB of allocation when off.  0, or -EINVAL above MSTAT_SAMPLE_MAX. */
int mstat_reader_request_sampling(struct mstat_reader *r, uint64_t bytes);

/* Nanoseconds per tick of the profile's counter, measured from its
 * setup to the read; 0 if it cannot be (no time between them, or a
 * counter that went back: another machine's). */
double mstat_reader_profile_ns_per_tick(const struct mstat_profile *p);

/*
 * What the segment says of the allocator behind its process (layout.h,
 * struct mstat_shm_alloc, in every segment of format 6).  The pool is
 * where the library's sampled blocks and its own blocks are, pool_base 0
 * while it is not mapped; its
 * geometry is bounded before it is handed out (a pool that could not be
 * the library's is none).  The figures are the allocator's last answer
 * to a request (`ask` below), if it gave one: one answer
 * whole, or none if it was being written at each of a few tries (not
 * waited for); those the parts are made of (core/memory.h).
 */
struct mstat_alloc_info {
	uint32_t allocator;          /* enum mstat_allocator */
	uint64_t pool_base, pool_size, pool_own_offset;
	bool answered;               /* the figures below are an answer */
	uint64_t answer_ns;          /* CLOCK_REALTIME it was made */
	uint64_t resident, metadata; /* bytes */
};
#define MSTAT_POOL_SIZE_LIMIT (UINT64_C(1) << 32)
/* With `ask`, the target is asked for its allocator's figures again,
 * if it is one that gives them (jemalloc, tcmalloc): it answers at its
 * next sampling decision (lib/allocstats.h), for a later read.  0, or
 * -EFAULT if the segment was cut while being read. */
int mstat_reader_alloc(struct mstat_reader *r, bool ask,
		       struct mstat_alloc_info *out);

/* The module holding `pc`, or NULL. */
const struct mstat_profile_module *
mstat_reader_profile_module_of(const struct mstat_profile *p, uint64_t pc);

#endif /* MSTAT_SHM_READER_H */
