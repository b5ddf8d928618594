/* SPDX-License-Identifier: MIT */
/*
 * sampler.h - the core's state (struct mstat_core), private to the
 * core's own files (sampler.c, profiles.c) and to the tests and
 * benchmarks that look inside it; the programs use core.h's functions.
 *
 * Sharing, through liburcu (memb flavour):
 *   - `targets` is an RCU list.  Only the sampler adds (cds_list_add_rcu)
 *     and removes (cds_list_del_rcu); a removed target is closed and freed
 *     by call_rcu, after every consumer that could see it has left its
 *     read-side critical section.  Consumers never wait for the sampler.
 *   - `target->sample` is published with rcu_assign_pointer() once filled
 *     and never changed after; consumers rcu_dereference() it.  The sample
 *     it replaces is freed by call_rcu.
 *   - `status` (the last one-line note) and `sites` are published the
 *     same way; `sites_want` is the consumer's, published to the sampler
 *     so (rcu_xchg_pointer()).
 *   - Requests from the consumer (interval, stop) are atomics, plus a
 *     write to `wake_fd` so that the sampler acts on them at once.
 */
#ifndef MSTAT_CORE_SAMPLER_H
#define MSTAT_CORE_SAMPLER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <urcu.h>
#include <urcu/rculist.h>

#include "core/core.h"
#include "core/discover.h"
#include "core/oomlog.h"

/* What a consumer may read of one target's latest read. Immutable once
 * published. */
struct mstat_core_sample {
	struct rcu_head rcu;
	uint64_t t_ns;              /* CLOCK_MONOTONIC of `snap` */
	enum mstat_model_live live;
	bool have_snap;             /* false until a read succeeded */
	char err[MSTAT_MODEL_ERR_MAX]; /* why the last read failed, or "" */
	uint64_t end_ns;            /* CLOCK_REALTIME the process ended, or 0 */
	const char *postmortem;     /* killed: the post-mortem profile's path
				     * if one was written (its target's), or
				     * NULL */
	bool have_memory;           /* `memory` was read (now or before) */
	struct mstat_memory memory; /* its resident memory, as last read */
	struct mstat_prior prior;   /* of `snap` (reader.h): what became of
				     * the blocks made before an attach */
	struct mstat_snapshot snap; /* the last good snapshot; allocated with
				     * room for its class_count classes only */
};

struct mstat_core_status {
	struct rcu_head rcu;
	uint64_t seq;               /* increases with every note */
	char line[256];
};

/* What the consumer asks for: whose sites. */
struct mstat_core_sites_want {
	struct rcu_head rcu;
	char key[MSTAT_KEY_MAX];
};

struct mstat_core {
	struct mstat_core_options opt;

	/* Shared, see above. */
	struct cds_list_head targets;
	struct mstat_core_status *status;
	struct mstat_core_sites_want *sites_want; /* the consumer's, see above */
	struct mstat_core_sites *sites;           /* the sampler's */
	_Atomic uint64_t ticks;         /* ticks completed */
	/* Mount namespaces whose /dev/shm the last tick could not read
	 * (procs.h); a count, relaxed: it publishes nothing else. */
	_Atomic unsigned namespaces_unreadable;
	_Atomic unsigned interval_ms;
	_Atomic bool stop;
	int wake_fd;                    /* eventfd */

	/* The sampler's own. */
	struct mstat_discover disc;
	pthread_t thread;
	bool thread_started;
	size_t cap;                     /* of the arrays below */
	struct mstat_core_target **batch;
	struct mstat_reader **readers;
	struct mstat_core_sample **fresh; /* the samples this tick reads into */
	struct mstat_snapshot **outs;     /* their snapshots */
	int *rcs;
	bool *memory_due;               /* whose memory this tick read */
	struct memory_turn *memory_turns; /* their order (sampler.c) */
	uint64_t tick_cpu_ns;           /* a tick's CPU time but its memory
					 * reads, averaged */
	uint64_t memory_reads;          /* processes' memory read, since init */
	uint64_t memory_looks;          /* of them, full looks (memory.h) */
	uint64_t status_seq;
	char sites_key[MSTAT_KEY_MAX]; /* whose sites, this tick */
	unsigned stop_checks;           /* looks at /proc left this tick */
	uint64_t tick_no;               /* ticks begun */
	struct mstat_oomlog oomlog;     /* the kernel's OOM kills */
	/* Failed reads and refusals, by reason, since init: the sampler's
	 * own (read them from its thread, between ticks). */
	uint64_t errors[MSTAT_CORE_ERR_COUNT];
};

#endif /* MSTAT_CORE_SAMPLER_H */
