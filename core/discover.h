/* SPDX-License-Identifier: MIT */
/*
 * discover.h - finding segments in /dev/shm: the targets of an observer.
 *
 * Discovery is the bottom layer of the observer.  It knows segments,
 * readers and processes, and nothing of ticks, samples or models:
 *
 *   mstat_discover_scan()  sweeps the machine's processes (procs.h),
 *                          attaches the new segments of every /dev/shm
 *                          it may read to a list of targets, each
 *                          checked against the process its header
 *                          claims, refuses bad ones (one note each) and
 *                          marks which targets' names are still there;
 *   mstat_discover_reap()  removes the name of a target whose process is
 *                          gone, or keeps a killed one's for its grace
 *                          (owner.h), never attaching it again;
 *                          mstat_discover_gc() every such name;
 *   mstat_discover_detach() takes a target off its list; call_rcu frees it.
 *
 * The list is an RCU list (liburcu, memb flavour).  Only one thread, the
 * sampler, calls these functions, so they walk it without
 * rcu_read_lock(); readers of the list (the consumer of samples) see a
 * target from cds_list_add_rcu() on, and it is freed only after they
 * have left their read-side critical sections.
 */
#ifndef MSTAT_CORE_DISCOVER_H
#define MSTAT_CORE_DISCOVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <urcu.h>
#include <urcu/rculist.h>

#include "core/killed.h"
#include "core/memory.h"
#include "core/model.h"
#include <mstatshm.h>
#include "shm/owner.h"
#include "shm/procfs.h"
#include "core/procs.h"
#include "core/where.h"

struct mstat_sites_base;

struct mstat_core_sample; /* the sampler's (sampler.h): freed with the target */

struct mstat_core_target {
	struct cds_list_head node;  /* in the list scanned (RCU) */
	struct rcu_head rcu;
	/* Set before the target is published, never changed after. */
	char key[MSTAT_KEY_MAX];   /* the process: "<pid>.<start>@<pid ns>",
					   * the same for every image it exec()s */
	char image[MSTAT_KEY_MAX]; /* this segment: "<name>:<inode>" */
	char shm_name[64];
	struct mstat_shmdir *dir;   /* where its name is (held) */
	pid_t pid;                  /* as shown: in our pid namespace if its
				     * process was found there (`verified`),
				     * else as the header says */
	pid_t nspid;                /* as the header says: in its own */
	bool verified;              /* the process its header claims was
				     * found, and checked (discover.c) */
	bool pid_ours;              /* `pid` is of our pid namespace: it
				     * was verified, or its header's pid
				     * namespace is ours */
	struct mstat_where where;   /* where it runs, if verified */
	uint64_t start_time;        /* of the process, from the header */
	uint64_t start_ns;          /* the same, CLOCK_REALTIME; 0 unknown */
	char name[64];              /* as the segment says (MSTAT_NAME or the
				     * program's name) */
	uint32_t writer_mode;       /* of its segment, from the header */
	uint32_t layout_major, layout_minor;
	uint64_t attached_ns;       /* when mstat-attach made it count, from
				     * the header; 0 if it counts from its
				     * start */
	struct mstat_proc_identity id; /* what /proc says, if it can */
	struct mstat_oom_watch oom;    /* its OOM kills, read while it lives */
	/* Published by the sampler (rcu_assign_pointer); freed with the
	 * target. */
	struct mstat_core_sample *sample;
	/* The sampler's own. */
	struct mstat_reader *reader; /* NULL once the final counts are read */
	uint64_t ino;
	bool in_scan;               /* its name was in the last scan */
	bool final;                 /* its process is gone and its final
				     * counts are read: nothing more to read */
	uint64_t end_ns;            /* CLOCK_MONOTONIC when found gone */
	char *postmortem;           /* killed: the path of the post-mortem
				     * profile written of it, or NULL; freed
				     * with the target, its samples borrow it */
	uint64_t checked_ns;        /* CLOCK_MONOTONIC /proc was last asked
				     * whether it is stopped; 0 never */
	uint64_t first_tick;        /* the sampler's tick that found it */
	uint64_t memory_tick;       /* the tick its memory was last read at,
				     * plus one; 0 never (core.h) */
	struct mstat_memory_mark memory_mark; /* what that read went by */
	/* Its call sites at the process's baseline (sites.h), the
	 * sampler's own, freed with the target; NULL until read. */
	struct mstat_sites_base *sites_base;
	bool sites_based;           /* read once: at first sight */
	/* Its sites as read at tick `sites_last_tick` (while they are
	 * shown): what a baseline reset at the next tick takes, as the
	 * model's reset took the counts of that tick. */
	struct mstat_sites_base *sites_last;
	uint64_t sites_last_tick;
	/* Set by the consumer (mstat_core_sites_rebase()), cleared by the
	 * sampler when it reads the baseline again. */
	_Atomic bool sites_rebase;
};

struct mstat_discover_refusal;

struct mstat_discover_want;

struct mstat_discover {
	pid_t *pids;                /* attach only these, sorted, if npids */
	size_t npids;
	struct mstat_discover_want *want; /* where they are, this scan */
	struct mstat_procs procs;   /* the machine's processes */
	unsigned unreadable_said;   /* namespaces not read, last said */
	void *scratch;              /* a scan's */
	size_t scratch_len;
	unsigned wait_budget_us;    /* given to each reader */
	uint64_t pid_ns;            /* this process's pid namespace, 0 unknown */
	uint64_t boot_ns;           /* CLOCK_REALTIME of boot, 0 unknown */
	/* Each note (a refusal, a removal), one line, as formatted: the
	 * callee escapes it (text.h) before it shows it. */
	void (*note)(void *arg, const char *line);
	void *note_arg;
	struct mstat_discover_refusal **refused;
	size_t nrefused, caprefused;
	/* Since init: segments refused (one each), and segments not read
	 * for want of a file descriptor (each scan). */
	uint64_t refused_count, no_fd_count;
	/* How long killed processes' segments are kept (set after init; 0:
	 * removed at once), and those kept that this process has read: not
	 * attached again, removed once their grace is over or the bytes of
	 * all of them are over the bound, oldest first. */
	struct mstat_grace grace;
	struct mstat_kept_list kept;
};

/* 0 or -ENOMEM.  `pids` is copied (pids in this process's pid
 * namespace); `which`: whose /dev/shm it reads (procs.h; NULL: every
 * mount namespace's it may read). */
int mstat_discover_init(struct mstat_discover *d, const pid_t *pids,
			size_t npids, const struct mstat_namespaces *which,
			unsigned wait_budget_us,
			void (*note)(void *arg, const char *line), void *arg);
void mstat_discover_fini(struct mstat_discover *d);

/* Scans every /dev/shm into `targets` (a list of struct
 * mstat_core_target). */
void mstat_discover_scan(struct mstat_discover *d, struct cds_list_head *targets);

/* Whether a target whose owner is gone without exiting is in fact a
 * process that exec()ed (its pid, in our pid namespace, still has its
 * start time): the lock went with the old image's descriptors. */
bool mstat_discover_execed(const struct mstat_discover *d,
			   const struct mstat_core_target *t);

/* Whether a target's process is stopped (SIGSTOP, a debugger): what /proc
 * says, if its pid means something here and is still that process. */
bool mstat_discover_stopped(const struct mstat_discover *d,
			    const struct mstat_core_target *t);

/* Unlinks the name of a target whose process is gone, if the name still
 * leads to it, unless the process was killed within the grace (`grace`
 * 0: at once, whatever the grace); the target keeps its final counts and
 * its mapping.  Returns CLOCK_REALTIME the process was first found killed
 * (by whoever did), or 0 if nobody had. */
uint64_t mstat_discover_reap(struct mstat_discover *d,
			     struct mstat_core_target *t, bool grace);

/* Removes every segment of this user whose process is gone, in every
 * /dev/shm it may read; one note each.  Returns how many. */
size_t mstat_discover_gc(struct mstat_discover *d);

/* A reader of the segment of process `pid` (in this process's pid
 * namespace), wherever it is (in the namespaces `which` says), checked
 * as a scan checks it: 0, or why not, as mstat_reader_why_none() says
 * it. */
int mstat_discover_open_pid(pid_t pid, const struct mstat_namespaces *which,
			    struct mstat_reader **out, char *err, size_t errlen);

/* Why process `pid` has no segment to read, as mstat_reader_why_none()
 * says it for this observer (root reads every user's). */
int mstat_discover_why_none(pid_t pid, char *err, size_t errlen);

/* Takes a target off its list; call_rcu closes and frees it (and its
 * last sample). */
void mstat_discover_detach(struct mstat_discover *d, struct mstat_core_target *t);

#endif /* MSTAT_CORE_DISCOVER_H */
