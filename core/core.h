/* SPDX-License-Identifier: MIT */
/*
 * core.h - the observers' core: the sampler, and what its consumers may
 * ask of it.
 *
 * Two roles:
 *   the sampler (a thread in interactive mode, mstat_core_start(); the
 *     main thread in batch mode, mstat_core_tick()) discovers segments,
 *     attaches and detaches targets, reads them all once per tick and
 *     publishes each target's latest sample;
 *   the consumer (the drawing or printing thread) folds the latest samples
 *     into its model with mstat_core_collect(), and asks for call sites,
 *     an interval, a wake-up, with the functions below.
 * Each function says from which side it may be called.  Consumers never
 * wait for the sampler: what the sampler publishes is published with
 * RCU (liburcu, memb flavour), and every thread that calls a consumer's
 * function must be rcu_register_thread()ed.  The state itself, and how
 * it is shared, is sampler.h's, private to the core's own files.
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

#include "core/discover.h"
#include "core/model.h"
#include "core/sites.h"
#include <mstatshm.h>

struct mstat_core;

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
	/* Each process's resident memory in parts (memory.h): 0, not
	 * read.  Else a tick reads that of every process seen for the first
	 * time, then of the others those read longest ago, as long as what
	 * it spends on them is under `memory_share` % of the CPU time the
	 * rest of a tick takes (averaged over about eight ticks, or the last
	 * if it took less), and of at least MSTAT_CORE_MEMORY_MIN; a process
	 * not read at a tick shows what was read last, with its time.  A
	 * read that finds nothing moved since the last (memory.h) costs a
	 * tenth of a look. */
	unsigned memory_share;
};
#define MSTAT_CORE_MEMORY_MIN 4

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
/* The sites the sampler published last (those asked for, as they were
 * read at the tick after the asking), or NULL.  Consumer side, inside
 * rcu_read_lock(): the pointer is good until rcu_read_unlock(). */
const struct mstat_core_sites *mstat_core_sites_latest(struct mstat_core *core);
/* Asks the sampler to take the call sites' baseline of the process `key`
 * (every process if NULL) again at its next tick, as the model's
 * baseline is reset now.  Consumer side. */
void mstat_core_sites_rebase(struct mstat_core *core, const char *key);

/* A core, into *out: 0 or -errno.  Does not start a thread. */
int mstat_core_new(struct mstat_core **out, const struct mstat_core_options *opt);
/* Stops the sampler thread if running, detaches every target, waits for
 * call_rcu to have freed them, and frees the core.  NULL: nothing. */
void mstat_core_free(struct mstat_core *core);

/* One tick: discover, read every target, publish, remove the segments
 * of targets found gone.  A target another reader holds (mstat-top and
 * mstat-exporter read the same segments) is tried again until it is
 * free: the tick waits at most the wait budget in all, for stalled and
 * busy targets together.  Only from the sampler (the thread, or the main
 * thread in batch mode; one thread at a time). */
void mstat_core_tick(struct mstat_core *core);

/* Runs mstat_core_tick() every interval in a thread of its own. */
int mstat_core_start(struct mstat_core *core);
/* Asks the sampler to act at once. */
void mstat_core_wake(struct mstat_core *core);

/* The interval between ticks of the sampler thread, milliseconds; set,
 * it takes effect at once (the sampler is woken).  Any side. */
unsigned mstat_core_interval_ms(struct mstat_core *core);
void mstat_core_set_interval_ms(struct mstat_core *core, unsigned ms);

/* Ticks completed.  Consumer side: once it has changed, the samples of
 * the tick that changed it are published (an acquire load, pairing with
 * the release at the end of mstat_core_tick()). */
uint64_t mstat_core_ticks(struct mstat_core *core);

/* Mount namespaces whose /dev/shm the last tick could not read
 * (procs.h).  Any side: a count, read as it is. */
unsigned mstat_core_namespaces_unreadable(struct mstat_core *core);

/* Failed reads and refusals since the core began, by reason
 * (MSTAT_CORE_ERRORS), into out[].  In the sampler's thread, between
 * ticks. */
void mstat_core_errors(struct mstat_core *core,
		       uint64_t out[MSTAT_CORE_ERR_COUNT]);

/* Removes every segment of a process that is gone, as a tick would, one
 * note each, without reading the others: mstat-top --gc.  Returns how
 * many.  From the sampler's side (no thread started). */
size_t mstat_core_gc(struct mstat_core *core);

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

/* Copies the last note into buf (empty if none); returns its seq, which
 * increases with every note.  Consumer side. */
uint64_t mstat_core_status(struct mstat_core *core, char *buf, size_t len);

/* Reports a one-line note (printf-like).  The whole line is escaped by
 * the plain rule of text.h, whatever its arguments hold. */
void mstat_core_note(struct mstat_core *core, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* MSTAT_CORE_H */
