/* SPDX-License-Identifier: MIT */
/*
 * model.h - what mstat-top knows about its targets, derived from snapshots.
 *
 * The model turns successive snapshots of each target into rows: totals,
 * rates per second, a history of live bytes and per-class tables.  It also
 * keeps the lifecycle of rows: an exited target keeps its row, with its
 * final totals, for `linger_ns` after it was last seen.  It sorts and
 * filters rows for whoever shows them.
 *
 * The model is plain data owned by one thread (the one that draws or
 * prints); it knows nothing of RCU, segments or terminals.  The view, the
 * table, JSON and OpenMetrics outputs all read it and nothing else.
 */
#ifndef MSTAT_OBSERVER_MODEL_H
#define MSTAT_OBSERVER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mstatshm.h"

#define MSTAT_MODEL_HISTORY 120  /* live-bytes points kept per row */
#define MSTAT_MODEL_KEY_MAX 64   /* the segment's name, with its NUL */
#define MSTAT_MODEL_ERR_MAX 200

/* What the observer knows of a target's process. */
enum mstat_model_live {
	MSTAT_LIVE_RUNNING = 0,
	MSTAT_LIVE_STALLED,  /* a thread stayed inside an update (-EAGAIN) */
	MSTAT_LIVE_BUSY,     /* another reader held the segment (-EBUSY) */
	MSTAT_LIVE_EXITING,  /* exit has begun; the process still exists */
	MSTAT_LIVE_EXITED,   /* gone after exit(), _exit(): final totals */
	MSTAT_LIVE_KILLED,   /* gone without exiting (a signal): final totals */
	MSTAT_LIVE_COUNT
};

/* "running", "stalled", ...: the word shown in STATE columns and output. */
const char *mstat_model_live_name(enum mstat_model_live l);

/* Whether the process is gone (its row shows final totals). */
static inline bool
mstat_model_gone(enum mstat_model_live l)
{
	return l == MSTAT_LIVE_EXITED || l == MSTAT_LIVE_KILLED;
}

/* One target as the sampler last saw it. */
struct mstat_model_input {
	const char *key;     /* unique per process: the segment's name */
	pid_t pid;
	const char *name;
	enum mstat_model_live live;
	const char *err;     /* why the last read failed, or "" */
	uint64_t t_ns;       /* CLOCK_MONOTONIC when `snap` was taken */
	uint64_t end_ns;     /* CLOCK_REALTIME the process ended, 0 if not */
	const struct mstat_snapshot *snap; /* last good snapshot, or NULL */
	double start_time_s; /* when the process started, CLOCK_REALTIME
			      * seconds; 0 if not known */
	uint32_t writer_mode; /* of its segment: 1 fenced, 2 membarrier */
	uint32_t layout_major, layout_minor; /* its segment's format version */
};

struct mstat_model_class {
	uint64_t max_size;   /* largest size in the class */
	struct mstat_counts c;
	double alloc_rate;   /* allocations per second */
	double free_rate;
	double net_bytes_rate; /* live bytes growth per second */
};

struct mstat_model_row {
	char key[MSTAT_MODEL_KEY_MAX];
	pid_t pid;
	char name[64];
	enum mstat_model_live live;
	char err[MSTAT_MODEL_ERR_MAX];
	uint32_t threads;
	bool have_snap;        /* false until a first snapshot succeeded */
	uint64_t t_ns;         /* of the snapshot the counters come from */
	uint64_t epoch;        /* of that snapshot */
	uint64_t gone_ns;      /* CLOCK_MONOTONIC when first seen gone; else 0 */
	uint64_t end_ns;       /* CLOCK_REALTIME the process ended; else 0 */
	double start_time_s;   /* as in its input */
	uint32_t writer_mode, layout_major, layout_minor;
	struct mstat_counts total;
	uint64_t requested_bytes;
	bool have_rates;       /* two snapshots seen: rates are meaningful */
	double alloc_rate, free_rate, alloc_bytes_rate, free_bytes_rate;
	double net_bytes_rate; /* Derived: alloc_bytes_rate - free_bytes_rate */
	uint32_t class_count;
	struct mstat_model_class classes[MSTAT_MAX_CLASSES];
	uint64_t history[MSTAT_MODEL_HISTORY]; /* live bytes, oldest first */
	unsigned history_len;
	bool seen;             /* scratch for mstat_model_update() */
};

/* Sort keys: the columns of the process table, in their order. */
enum mstat_model_sort {
	MSTAT_SORT_PID = 0,
	MSTAT_SORT_NAME,
	MSTAT_SORT_THREADS,
	MSTAT_SORT_LIVE_BYTES,
	MSTAT_SORT_LIVE_OBJECTS,
	MSTAT_SORT_ALLOC_RATE,
	MSTAT_SORT_FREE_RATE,
	MSTAT_SORT_NET_RATE,
	MSTAT_SORT_STATE,
	MSTAT_SORT_COUNT
};

/* "PID", "LIVE-BYTES", ...: the column's title. */
const char *mstat_model_sort_name(enum mstat_model_sort k);
/* A column's title, any case, '_' for '-' allowed: the key, or -1. */
int mstat_model_parse_sort(const char *s);

struct mstat_model {
	struct mstat_model_row **rows; /* in no particular order */
	size_t n, cap;
	uint64_t linger_ns;  /* how long an exited row stays */
	uint64_t now_ns;     /* time of the last update */
	uint64_t updates;    /* mstat_model_update() calls */
};

void mstat_model_init(struct mstat_model *m, uint64_t linger_ns);
void mstat_model_fini(struct mstat_model *m);

/*
 * Folds in what the sampler saw at `now_ns` (CLOCK_MONOTONIC).  A row whose
 * input has a snapshot newer than the row's gets new counters, rates (from
 * the previous and this snapshot) and a history point.  A row not in
 * `in` is dropped, unless it had exited: then it stays with its final
 * totals until `linger_ns` after it was last seen.  Returns 0 or -ENOMEM
 * (the model is then unchanged for the inputs not yet folded in).
 */
int mstat_model_update(struct mstat_model *m,
		       const struct mstat_model_input *in, size_t n,
		       uint64_t now_ns);

/* Whether a row passes a filter: an empty filter, a name containing it
 * (case-insensitive) or a pid equal to it. */
bool mstat_model_match(const struct mstat_model_row *r, const char *filter);

/*
 * Fills `out` (room for m->n) with the rows that match `filter`, sorted by
 * `key` (descending for numbers, ascending for pid, name and state; then by
 * pid), and returns how many.  The pointers stay valid until the next
 * mstat_model_update().
 */
size_t mstat_model_view(const struct mstat_model *m, const char *filter,
			enum mstat_model_sort key, bool reverse,
			const struct mstat_model_row **out);

/* Totals over the given rows, for headers. */
struct mstat_model_totals {
	size_t processes, running;
	uint32_t threads;
	uint64_t live_bytes, live_objects;
	double alloc_rate, free_rate, net_bytes_rate;
};
void mstat_model_totals(const struct mstat_model_row *const *rows, size_t n,
			struct mstat_model_totals *t);

/* The row with this key, or NULL. */
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

#endif /* MSTAT_OBSERVER_MODEL_H */
