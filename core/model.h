/* SPDX-License-Identifier: MIT */
/*
 * model.h - what mstat-top knows about its targets, derived from snapshots.
 *
 * The model turns successive snapshots of each process into rows: totals,
 * rates per second, a history of live bytes, per-class tables, and growth:
 * live bytes and objects gained since the row's baseline (when it was
 * first seen, or reset), per process and per class, and the rate of that
 * growth over a sliding window.  It also keeps the lifecycle of rows: an
 * exited or killed process keeps its row, with its final totals, while
 * its input is given and for `linger_ns` after it was first seen gone,
 * or until dismissed.  It
 * filters rows for whoever shows them (columns.h sorts them).
 *
 * A row is a process, not a segment: the image an exec() starts makes a
 * segment of its own, and the row goes on with it (new name, counters
 * from nothing, a new baseline).
 *
 * The model is plain data owned by one thread (the one that draws or
 * prints); it knows nothing of RCU, segments or terminals.  The view, the
 * table, JSON and OpenMetrics outputs all read it and nothing else.
 */
#ifndef MSTAT_CORE_MODEL_H
#define MSTAT_CORE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/memory.h"
#include <mstatshm.h>
#include "shm/reader.h"
#include "core/where.h"

#define MSTAT_MODEL_HISTORY 120  /* live-bytes points kept per row */
#define MSTAT_MODEL_WINDOW 64    /* points kept for the growth rate */
#define MSTAT_KEY_MAX 64         /* a process's key, or an image's, with
				  * its NUL */
#define MSTAT_MODEL_ERR_MAX 200
#define MSTAT_MODEL_WINDOW_DEFAULT_NS (UINT64_C(60) * 1000000000u)

/* What the observer knows of a target's process. */
enum mstat_model_live {
	MSTAT_LIVE_RUNNING = 0,
	MSTAT_LIVE_STALLED,  /* a thread stayed inside an update (-EAGAIN) */
	MSTAT_LIVE_STOPPED,  /* read, and stopped (SIGSTOP, a debugger) */
	MSTAT_LIVE_BUSY,     /* another reader held the segment (-EBUSY) */
	MSTAT_LIVE_EXITING,  /* exit has begun; the process still exists */
	MSTAT_LIVE_EXITED,   /* gone after exit(), _exit(): final totals */
	MSTAT_LIVE_KILLED,   /* gone without exiting (a signal): final totals */
	MSTAT_LIVE_OOM,      /* killed, and its memory cgroup's count of OOM
			      * kills rose while it lived (killed.h) */
	MSTAT_LIVE_COUNT
};

/* "running", "stalled", ...: the word shown in STATE columns and output. */
const char *mstat_model_live_name(enum mstat_model_live l);
/* The state a word names, or -1. */
int mstat_model_live_parse(const char *s);

/* Whether the process is gone (its row shows final totals). */
static inline bool
mstat_model_gone(enum mstat_model_live l)
{
	return l == MSTAT_LIVE_EXITED || l == MSTAT_LIVE_KILLED ||
	       l == MSTAT_LIVE_OOM;
}

/* One target as the sampler last saw it. */
struct mstat_model_input {
	const char *key;     /* unique per process, the same across exec() */
	pid_t pid;           /* in the observer's pid namespace where known */
	pid_t nspid;         /* in its own pid namespace; 0 not known */
	const char *name;
	enum mstat_model_live live;
	const char *err;     /* why the last read failed, or "" */
	uint64_t t_ns;       /* CLOCK_MONOTONIC when `snap` was taken */
	uint64_t end_ns;     /* CLOCK_REALTIME the process ended, 0 if not */
	const char *postmortem; /* killed: its post-mortem profile's path,
				 * where one was written; else NULL */
	const struct mstat_snapshot *snap; /* last good snapshot, or NULL */
	/* NULL and 0: not known. */
	const char *image;   /* the image counting (its segment): when it
			      * changes, the process exec()ed */
	const char *comm;    /* /proc/<pid>/comm */
	const char *exe;     /* the executable's file name */
	uint64_t start_ns;   /* CLOCK_REALTIME the process started */
	uint32_t writer_mode; /* of its segment: 1 fenced, 2 membarrier */
	uint32_t layout_major, layout_minor; /* its segment's format version */
	uint64_t attached_ns; /* CLOCK_REALTIME mstat-attach made it count, 0
			       * if it counts from its start */
	struct mstat_prior prior; /* of `snap`: the frees and reallocs of
				   * blocks made before the attach */
	/* Where it runs (where.h): NULL and "" not known. */
	const char *container_id, *pod_uid, *qos_class, *systemd_unit;
	/* Its resident memory in parts, as last read (memory.h); NULL not
	 * known. */
	const struct mstat_memory *memory;
};

struct mstat_model_class {
	uint64_t max_size;   /* largest size in the class */
	struct mstat_counts c;
	double alloc_rate;   /* allocations per second */
	double free_rate;
	double net_bytes_rate; /* live bytes growth per second */
	uint64_t base_bytes, base_objects; /* live at the baseline */
	int64_t growth_bytes, growth_objects; /* Derived: live - base */
};

/* A point of the growth window. */
struct mstat_model_point {
	uint64_t t_ns;
	uint64_t live_bytes;
};

struct mstat_model_row {
	char key[MSTAT_KEY_MAX];
	pid_t pid;
	pid_t nspid;           /* in its own pid namespace; 0 not known */
	char name[64];
	enum mstat_model_live live;
	char err[MSTAT_MODEL_ERR_MAX];
	uint32_t threads;
	bool have_snap;        /* false until a first snapshot succeeded */
	uint64_t t_ns;         /* of the snapshot the counters come from */
	uint64_t epoch;        /* of that snapshot */
	uint64_t gone_ns;      /* CLOCK_MONOTONIC when first seen gone; else 0 */
	uint64_t end_ns;       /* CLOCK_REALTIME the process ended; else 0 */
	char *postmortem;      /* owned: its post-mortem profile's path, or
				* NULL (mstat_model_input) */
	uint32_t writer_mode, layout_major, layout_minor;
	uint64_t attached_ns;  /* as its input says */
	struct mstat_prior prior; /* of the snapshot the counters come from */
	struct mstat_counts total;
	uint64_t requested_bytes;
	bool have_memory;      /* `memory` is known: it lives, and was read */
	struct mstat_memory memory;
	bool have_rates;       /* two snapshots seen: rates are meaningful */
	double alloc_rate, free_rate, alloc_bytes_rate, free_bytes_rate;
	double net_bytes_rate; /* Derived: alloc_bytes_rate - free_bytes_rate */
	uint32_t class_count;
	struct mstat_model_class classes[MSTAT_MAX_CLASSES];
	uint64_t history[MSTAT_MODEL_HISTORY]; /* live bytes, oldest first */
	unsigned history_len;
	bool seen;             /* scratch for mstat_model_update() */

	char image[MSTAT_KEY_MAX]; /* of the counters shown */
	struct mstat_where where;  /* where it runs: "" not known */
	char comm[16];
	char exe[64];
	uint64_t start_ns;     /* CLOCK_REALTIME it started; 0 unknown */
	/* Growth since the baseline: known when have_snap. */
	uint64_t base_t_ns;    /* CLOCK_MONOTONIC of the baseline */
	uint64_t base_bytes, base_objects;
	int64_t growth_bytes, growth_objects;   /* Derived: live - base */
	/* Growth of live bytes per second over the model's window (over
	 * what there is, for a process seen for less); known when
	 * have_growth_rate. */
	bool have_growth_rate;
	double growth_bytes_rate;
	struct mstat_model_point window[MSTAT_MODEL_WINDOW]; /* oldest first */
	unsigned window_len;
	bool dismissed;        /* hidden; freed once its input stops */
};

struct mstat_model {
	struct mstat_model_row **rows; /* in no particular order; dismissed
					* ones too */
	size_t n, cap;
	uint64_t linger_ns;  /* how long an exited row stays */
	uint64_t now_ns;     /* time of the last update */
	uint64_t updates;    /* mstat_model_update() calls */
	/* Set after mstat_model_init() if wanted. */
	uint64_t window_ns;  /* of the growth rate (default 60 s) */
	uint64_t baseline_after_ns; /* if not 0: every row's baseline is reset
				     * at the first update this long after
				     * the first one (--baseline); a row
				     * first seen later keeps its own */
	uint64_t first_ns;   /* now_ns of the first update */
	uint64_t wall_ns;    /* CLOCK_REALTIME of the last update, set by the
			      * caller: what ages are counted to */
	bool rebased;        /* baseline_after_ns has happened */
};

void mstat_model_init(struct mstat_model *m, uint64_t linger_ns);
void mstat_model_fini(struct mstat_model *m);

/*
 * Folds in what the sampler saw at `now_ns` (CLOCK_MONOTONIC).  A row whose
 * input has a snapshot newer than the row's gets new counters, rates (from
 * the previous and this snapshot) and a history point.  A row not in
 * `in` is dropped, unless it had exited or was killed: then it stays with
 * its final totals until `linger_ns` after it was first seen gone (and as
 * long as it is in `in`).  Returns 0 or -ENOMEM
 * (the model is then unchanged for the inputs not yet folded in).
 */
int mstat_model_update(struct mstat_model *m,
		       const struct mstat_model_input *in, size_t n,
		       uint64_t now_ns);

/* Whether a row passes a filter: not dismissed, and an empty filter, a
 * name, comm, executable, container id, pod uid or systemd unit
 * containing it (case-insensitive), or a pid equal to it. */
bool mstat_model_match(const struct mstat_model_row *r, const char *filter);

/* Resets the baseline of the row `key`, or of every row if `key` is NULL,
 * to its counts now; with `from_nothing`, to an empty heap (growth is
 * then everything live: what mstat-run reports of a whole run).  Returns
 * how many rows it reset. */
size_t mstat_model_rebase(struct mstat_model *m, const char *key,
			  bool from_nothing);

/* Whether the baseline of baseline_after_ns is still to be taken: then
 * *in_ns says in how long (0: at the next update). */
bool mstat_model_baseline_pending(const struct mstat_model *m,
				  uint64_t *in_ns);

/* Dismisses the row `key` if its process is gone, or every such row if
 * `key` is NULL: hidden from then on.  Returns how many. */
size_t mstat_model_dismiss(struct mstat_model *m, const char *key);

/* Totals over the given rows, for headers; a rate is known (have_*) if
 * it is for one of the rows. */
struct mstat_model_totals {
	size_t processes, running;
	uint32_t threads;
	uint64_t live_bytes, live_objects;
	double alloc_rate, free_rate, net_bytes_rate;
	bool have_rates, have_growth, have_growth_rate;
	int64_t growth_bytes;
	double growth_bytes_rate;
};
void mstat_model_totals(const struct mstat_model_row *const *rows, size_t n,
			struct mstat_model_totals *t);

/* The row with this key, or NULL (also if dismissed). */
const struct mstat_model_row *mstat_model_find(const struct mstat_model *m,
					       const char *key);

static inline uint64_t
mstat_model_live_bytes(const struct mstat_model_row *r)
{
	return mstat_live_bytes(&r->total);
}

static inline uint64_t
mstat_model_live_objects(const struct mstat_model_row *r)
{
	return mstat_live_objects(&r->total);
}

#endif /* MSTAT_CORE_MODEL_H */
