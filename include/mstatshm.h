/* SPDX-License-Identifier: MIT */
/*
 * mstatshm.h - heap statistics of a process, readable from outside it.
 *
 * A process that links libmstatshm (or runs with LD_PRELOAD=libmstatshm.so)
 * counts its heap allocations per size class into a shared-memory segment.
 * Any process of the same user can take consistent snapshots of those
 * counters without stopping it: every update is wholly in a snapshot or
 * wholly out of it, and a free is never in one without its allocation.
 *
 * Recording (the process's own counters):
 *   mstat_record_alloc(), mstat_record_free(), mstat_record_realloc() count
 *   what an allocator the library cannot interpose did.  Thread-safe, lock-
 *   free, no system call; safe to call before main() and during exit.
 *
 * Reading (any process, including the one being counted):
 *   mstat_reader_open_pid(), mstat_reader_snapshot(), mstat_reader_close().
 *   A reader is not thread-safe: use one per thread.  Functions return 0 or
 *   a negative errno value; mstat_reader_error() then says why in one line.
 */
#ifndef MSTATSHM_H
#define MSTATSHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mstatshm_counters.h" /* the counter lists, defined once */

#ifdef __cplusplus
extern "C" {
#endif

#define MSTATSHM_API_VERSION 1

struct mstat_counts {
#define MSTAT_X(e, f, h) uint64_t f;
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
};

/* live objects = alloc_count - free_count; live bytes likewise. */
static inline uint64_t
mstat_live_objects(const struct mstat_counts *c)
{
	return c->alloc_count - c->free_count;
}

static inline uint64_t
mstat_live_bytes(const struct mstat_counts *c)
{
	return c->alloc_bytes - c->free_bytes;
}

enum mstat_state {
	MSTAT_RUNNING = 1,
	MSTAT_EXITING = 2, /* exit has begun: the exiting thread counts on */
	MSTAT_EXITED = 3,  /* gone, after exit(), _exit() or a return from
			    * main ran to its end: the counts are final */
	MSTAT_KILLED = 4,  /* gone without exiting, or during its exit: a
			    * signal, SIGKILL */
	MSTAT_EXECED = 5,  /* replaced by exec(): a new segment counts on */
};

struct mstat_snapshot {
	uint64_t epoch;         /* increases with every snapshot taken; 0 in
				 * a snapshot of oneself taken before the
				 * segment exists */
	uint32_t state;         /* enum mstat_state */
	uint32_t threads;       /* threads counting into a slot of their own */
	uint32_t slots_used;    /* slots ever used, including the shared one */
	uint32_t overflowed;    /* threads that found every slot taken */
	uint32_t class_count;   /* entries used in the arrays below; a read
				 * writes no others */
	uint32_t cut;           /* updates the process's death cut short (a
				 * thread killed inside malloc or free): 0, or
				 * the counts may be off by that many */
#define MSTAT_X(e, f, h) uint64_t f;
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	struct mstat_counts total; /* Derived: the sum over every class. */
	uint64_t class_max_size[MSTAT_MAX_CLASSES]; /* largest size in class */
	struct mstat_counts classes[MSTAT_MAX_CLASSES];
};

/* Identity of the process a reader is attached to. */
struct mstat_target_info {
	pid_t pid;
	uid_t uid;
	uint64_t start_time;  /* /proc/<pid>/stat starttime, clock ticks */
	uint64_t created_ns;  /* when the segment was made, CLOCK_REALTIME */
	uint32_t writer_mode; /* 1 fenced, 2 membarrier */
	uint32_t slot_count;
	uint32_t version_major, version_minor;
	uint64_t pid_ns;      /* inode of the target's pid namespace; `pid` is
			       * that namespace's (0: not known) */
	char name[64];
	char shm_name[64];    /* the segment's name in /dev/shm */
	uint64_t attached_ns; /* when mstat-attach made the running process
			       * count, CLOCK_REALTIME; 0: counted from its
			       * start.  Its counts are then of what it did
			       * since. */
};

/* ---- recording ---- */

/* An allocation of `size` usable bytes, `requested` of them asked for. */
void mstat_record_alloc(size_t size, size_t requested);
/* The release of an allocation of `size` usable bytes. */
void mstat_record_free(size_t size);
/* A reallocation, counted as one update: the free of the old block and
 * the allocation of the new one are never seen apart. */
void mstat_record_realloc(size_t old_size, size_t new_size, size_t requested);

/* Whether this process is counting: 1 yes, 0 no (disabled, or the segment
 * could not be made; mstat_self_status() says which). */
int mstat_self_enabled(void);
const char *mstat_self_status(void);

/* A consistent snapshot of this process's own counters (what Go's
 * runtime/metrics gives a Go service), from its first instruction on:
 * before its segment exists, of the counts it keeps in its own memory,
 * as exactly.  0, or a negative errno value (-ENODEV: not counting). */
int mstat_self_snapshot(struct mstat_snapshot *out);

/* ---- reading ---- */

struct mstat_reader;

/* Attach to the segment of process `pid`.  On failure *out is NULL, the
 * result is a negative errno value and `err` (if not NULL) holds a one-line
 * reason. */
int mstat_reader_open_pid(struct mstat_reader **out, pid_t pid, char *err,
			  size_t errlen);
/* Attach to a segment by its name in /dev/shm ("mstat.<pid>.<starttime>"). */
int mstat_reader_open_name(struct mstat_reader **out, const char *shm_name,
			   char *err, size_t errlen);

/*
 * Take a consistent snapshot.  Returns 0, or:
 *   -EAGAIN  a thread of the target stayed inside an update longer than the
 *            wait budget (stopped, or killed there); the error names it.  The
 *            next call finishes the job; nothing is lost.
 *   -EBUSY   another reader held the segment longer than the lock budget.
 *   -EPROTO  the segment no longer passes validation.
 */
int mstat_reader_snapshot(struct mstat_reader *r, struct mstat_snapshot *out);

/* How long a snapshot may wait for one update to end (default 10 ms). */
void mstat_reader_set_wait_budget(struct mstat_reader *r, unsigned usec);

const struct mstat_target_info *mstat_reader_info(const struct mstat_reader *r);
const char *mstat_reader_error(const struct mstat_reader *r);
void mstat_reader_close(struct mstat_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* MSTATSHM_H */
