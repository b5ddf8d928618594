/* SPDX-License-Identifier: MIT */
/*
 * core.h - the state the core's threads share, and the sampler's side.
 *
 * Two roles:
 *   the sampler (a thread in interactive mode; the main thread in batch
 *     mode) discovers segments, attaches and detaches targets, reads them
 *     all once per tick and publishes each target's latest sample;
 *   the consumer (the drawing or printing thread) folds the latest samples
 *     into its model with mstat_core_collect().
 *
 * Sharing, through liburcu (memb flavour):
 *   - `targets` is an RCU list.  Only the sampler adds (cds_list_add_rcu)
 *     and removes (cds_list_del_rcu); a removed target is closed and freed
 *     by call_rcu, after every consumer that could see it has left its
 *     read-side critical section.  Consumers never wait for the sampler.
 *   - `target->sample` is published with rcu_assign_pointer() once filled
 *     and never changed after; consumers rcu_dereference() it.  The sample
 *     it replaces is freed by call_rcu.
 *   - `status` (the last one-line note) is published the same way.
 *   - Requests from the consumer (interval, stop) are atomics, plus a
 *     write to `wake_fd` so that the sampler acts on them at once.
 * Every thread that takes rcu_read_lock() must be rcu_register_thread()ed.
 */
#ifndef MSTAT_CORE_H
#define MSTAT_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <urcu.h>
#include <urcu/rculist.h>

#include "discover.h"
#include "model.h"
#include "sites.h"
#include "mstatshm.h"

struct mstat_core;

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
	struct mstat_snapshot snap; /* the last good snapshot; allocated with
				     * room for its class_count classes only */
};

struct mstat_core_status {
	struct rcu_head rcu;
	uint64_t seq;               /* increases with every note */
	char line[256];
};

/*
 * Why a target was not read, as counted in mstat_core.errors: X(ENUM, name,
 * "description").  The names are mstat-exporter's `reason` label values.
 */
#define MSTAT_CORE_ERRORS(X)                                                   \
	X(STALLED, stalled, "a thread stayed inside an update for the whole " \
			    "wait budget")                                    \
	X(BUSY, busy, "another reader held the segment for the whole wait "   \
		      "budget")                                               \
	X(REFUSED, refused, "discovery refused a segment (owner, mode, "      \
			    "format, sizes)")                                 \
	X(DROPPED, dropped, "a segment attached earlier became "              \
			    "untrustworthy (truncated, corrupted)")           \
	X(DESCRIPTORS, descriptors, "a segment could not be opened: out of "  \
				    "file descriptors")                       \
	X(READ, read, "any other failed read (membarrier refused)")

enum mstat_core_error {
#define MSTAT_X(e, n, h) MSTAT_CORE_ERR_##e,
	MSTAT_CORE_ERRORS(MSTAT_X)
#undef MSTAT_X
	MSTAT_CORE_ERR_COUNT
};

/*
 * The sites view (sites.h): the consumer asks for one process's call
 * sites with mstat_core_sites_want(); from then on the sampler reads that
 * process's profile once a tick, after its counters, and publishes the
 * result as `sites` (rcu_assign_pointer; immutable once published); a
 * killed process is read on while its row lingers, an exited one once
 * more as it is found gone: their final sites.  Nobody asking, no
 * profile is read (but baselines, below).
 */
#define MSTAT_CORE_SITES_MAX 32
enum mstat_core_sites_order { MSTAT_CORE_SITES_LIVE, MSTAT_CORE_SITES_GROWTH };
struct mstat_core_sites {
	struct rcu_head rcu;
	char key[MSTAT_KEY_MAX]; /* the process */
	int rc;                  /* 0; -ENOENT: not read (exited before it
				  * was asked for, or not a live process);
				  * or the read's -errno */
	bool final;              /* the process is gone: its last sites */
	bool have_growth;        /* a baseline was read */
	uint64_t sample_bytes;   /* the mean interval in effect; 0 off */
	uint64_t samples;        /* taken so far */
	size_t nsites;           /* every site of the profile */
	size_t n[2];             /* of top[order] */
	/* The top sites by live bytes, and by growth since the baseline. */
	struct mstat_site top[2][MSTAT_CORE_SITES_MAX];
};

/* What the consumer asks for: whose sites. */
struct mstat_core_sites_want {
	struct rcu_head rcu;
	char key[MSTAT_KEY_MAX];
};

struct mstat_core_options {
	const pid_t *pids;          /* attach only these, if npids > 0 */
	size_t npids;
	/* Whose /dev/shm to read (procs.h); all zero: every mount
	 * namespace's it may read. */
	struct mstat_namespaces namespaces;
	unsigned interval_ms;
	unsigned wait_budget_us;    /* for stalled targets, per tick */
	uint64_t linger_ns;         /* how long exited and killed targets stay */
	/* Killed targets stay at least this long, their rows or not (their
	 * profiles are served, and their rows shown: mstat-exporter, whose
	 * exited rows do not linger). */
	uint64_t killed_linger_ns;
	/* How long the segments of killed processes are kept (owner.h): as
	 * mstat_killed_env() says, or 0, removed at once. */
	struct mstat_grace grace;
	/* --postmortem-dir: where a killed process's profile is written
	 * (killed.h), NULL nowhere; and the cap on the bytes there. */
	const char *postmortem_dir;
	uint64_t postmortem_bytes;
	/* Called with each one-line note (a refusal, a removal); in the
	 * sampler's thread.  NULL: publish it as `status`. */
	void (*note)(void *arg, const char *line);
	void *note_arg;
	/* Called at the end of every tick, in the sampler's thread, with
	 * every sample of the tick published (mstat_core_gather() reads
	 * them); NULL: nothing.  mstat-top records ticks with it. */
	void (*after_tick)(void *arg, struct mstat_core *core);
	void *after_tick_arg;
	/* Keep every process's call sites at its baseline, for their growth
	 * in `sites`: its profile is read once when it is first seen, and
	 * once again each time mstat_core_sites_rebase() names it. */
	bool site_baselines;
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
	uint64_t status_seq;
	char sites_key[MSTAT_KEY_MAX]; /* whose sites, this tick */
	unsigned stop_checks;           /* looks at /proc left this tick */
	/* Failed reads and refusals, by reason, since init: the sampler's
	 * own (read them from its thread, between ticks). */
	uint64_t errors[MSTAT_CORE_ERR_COUNT];
};

/* "stalled", "busy", ...: the error's name. */
const char *mstat_core_error_name(enum mstat_core_error e);

struct mstat_site;
/* The top `n` call sites of the process whose key is `key` (sites.h),
 * while it is read (a killed one: while its row lingers; not an exited
 * one, whose segment is closed).  0, -ENOENT,
 * or another -errno.  In the sampler's thread: batch mode's, between
 * ticks. */
int mstat_core_sites(struct mstat_core *core, const char *key, size_t n,
		    struct mstat_site *out, size_t *got);

/* Asks for the sites of the process `key` from the next tick on, or,
 * with NULL, for none.  Consumer side (registered with RCU). */
void mstat_core_sites_want(struct mstat_core *core, const char *key);
/* Asks the sampler to take the call sites' baseline of the process `key`
 * (every process if NULL) again at its next tick, as the model's
 * baseline is reset now.  Consumer side. */
void mstat_core_sites_rebase(struct mstat_core *core, const char *key);

/* 0 or -errno.  Does not start a thread. */
int mstat_core_init(struct mstat_core *core, const struct mstat_core_options *opt);
/* Stops the sampler thread if running, detaches every target and waits for
 * call_rcu to have freed them. */
void mstat_core_fini(struct mstat_core *core);

/* One tick: discover, read every target, publish, remove the segments
 * of targets found gone.  A target another reader holds (mstat-top and
 * mstat-exporter read the same segments) is tried again until it is
 * free: the tick waits at most the wait budget in all, for stalled and
 * busy targets together.  Only from the sampler (the thread, or the main
 * thread in batch mode; one thread at a time). */
void mstat_core_tick(struct mstat_core *core);

/* Runs mstat_core_tick() every interval in a thread of its own. */
int mstat_core_start(struct mstat_core *core);
/* Asks the sampler to act at once (after a change of interval). */
void mstat_core_wake(struct mstat_core *core);

/* Folds the latest samples into `m` (consumer side; never blocks on the
 * sampler).  `scratch` grows as needed.  0 or -ENOMEM. */
struct mstat_core_scratch {
	struct mstat_model_input *in;
	size_t cap;
};
int mstat_core_collect(struct mstat_core *core, struct mstat_model *m,
		      struct mstat_core_scratch *scratch, uint64_t now_ns);

/* The latest samples as model inputs, handed to fn(arg, in, n) inside an
 * RCU read-side critical section (they point into the samples: fn must
 * not keep them).  Returns fn's result, or -ENOMEM.  From any thread
 * registered with RCU. */
int mstat_core_gather(struct mstat_core *core, struct mstat_core_scratch *scratch,
		     int (*fn)(void *arg, const struct mstat_model_input *in,
			       size_t n),
		     void *arg);

/* The call_rcu callback that frees a replaced status. */
void mstat_core_status_free(struct rcu_head *head);
/* Copies the last note into buf (empty if none); returns its seq. */
uint64_t mstat_core_status(struct mstat_core *core, char *buf, size_t len);

/* Reports a one-line note (printf-like).  The whole line is escaped by
 * the plain rule of text.h, whatever its arguments hold. */
void mstat_core_note(struct mstat_core *core, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* MSTAT_CORE_H */
