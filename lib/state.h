/* SPDX-License-Identifier: MIT */
/*
 * state.h - the library's state, named: the process's (struct
 * mstat_proc, and the two small structs every count reads) and each
 * thread's (struct mstat_thread), with where each lies.
 *
 * Every other structure of the library is private to the file that owns
 * it; these are shared, and each field says which file writes it.  The
 * definitions, and the checks of their layout, are state.c's.
 */
#ifndef MSTAT_LIB_STATE_H
#define MSTAT_LIB_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/countdown.h"
#include "shm/layout.h"
#include "lib/ownlock.h"
#include "shm/report.h"
#include "lib/segment.h"

/* 1 in the library mstat-attach injects into a running process
 * (libmstatshm-attach.so, lib/attach.h); 0 in libmstatshm. */
#ifndef MSTAT_ATTACH
#define MSTAT_ATTACH 0
#endif

/*
 * Each thread's block is initial-exec TLS: one load of the thread
 * pointer's offset.  A library loaded into a running process takes such
 * TLS from what glibc keeps free for all of them (512 bytes, shared), so
 * the injected one has the general-dynamic model instead: a call of
 * __tls_get_addr(), which gives each thread its block on its first call.
 * Not TLS descriptors: glibc before 2.40 clobbers vector registers in
 * their slow path, which code built for them keeps live (docs/attach.md).
 */
#if MSTAT_ATTACH
#define MSTAT_TLS_MODEL
#else
#define MSTAT_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

#define MSTAT_HIDDEN __attribute__((visibility("hidden")))
/* What the library exports besides its API (libmstatshm.map): the malloc
 * family, the C++ operators, _exit and _Exit, unversioned. */
#define MSTAT_EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * For the few words every process writes as it starts: in .data, on the
 * page the loader has already written (it zeroes the end of the last page
 * of the file's data), rather than on pages of their own in .bss, each a
 * page fault of its own at every start (docs/performance.md, "Starting a
 * process").
 */
#define MSTAT_STARTUP __attribute__((section(".data.mstat_startup")))

/*
 * For the code every process runs as it starts (the constructor, the
 * first malloc and its resolution, the counts before the segment exists,
 * the exit), and the allocation entry points: together at the front of
 * .text, where the linker puts .text.hot, after the constructor in
 * .text.startup.  A fault on a page of code maps the page-cache pages
 * around it, up to a 64 KiB-aligned window; spread over the library's
 * 85 KiB of code, a start touched three such windows, three faults of
 * 3 us each here.  (lib/link.ld puts the read-only data before all this,
 * in the same first window.)
 */
#define MSTAT_START_TEXT __attribute__((section(".text.hot")))

/* Counts kept in process memory (rows.h): a segment's rows of one
 * generation, the totals row last. */
typedef uint64_t mstat_rows[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];

/* ---- what every count reads ---- */

/* Bits of mstat_writer_config.stop: why sections are refused. */
enum mstat_stop {
	MSTAT_STOP_FORK = 1, /* a thread forks: wait until it is done */
	MSTAT_STOP_EXIT = 2, /* the process exits: the counts are final */
};

/* What every writer of the process reads.  `fenced` changes only while
 * the process has a single thread (start-up, fork child). */
struct mstat_writer_config {
	/* (V) (B) the segment's `epoch`, | MSTAT_EPOCH_STOPPED while a fork
	 * or the exit drains the slots (section.h); 0 before the segment. */
	_Atomic uintptr_t epoch;
	bool fenced;
	_Atomic unsigned char stop; /* why stopped: enum mstat_stop bits */
};
extern struct mstat_writer_config mstat_writer_config MSTAT_HIDDEN;

/* The next allocator in the RTLD_NEXT chain (next.c), and how its blocks
 * are sized.  Written once, before `state` becomes ready; read-mostly,
 * on one cache line, by the interposer's inline paths. */
enum mstat_next_state {
	MSTAT_NEXT_NONE,      /* not looked up yet */
	MSTAT_NEXT_RESOLVING, /* a thread is looking it up */
	MSTAT_NEXT_FAILED,    /* there is none: the arena serves, until full */
	MSTAT_NEXT_ASK,       /* ready; sizes are asked (malloc_usable_size) */
	MSTAT_NEXT_HEADER,    /* ready; sizes are read from glibc's chunk header */
};

struct mstat_next {
	alignas(MSTAT_CACHELINE) _Atomic int state; /* enum mstat_next_state */
	_Atomic unsigned unsized_live; /* blocks remembered (unsized.c) */
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	size_t (*usable)(void *);
};
extern struct mstat_next mstat_next MSTAT_HIDDEN;

/* ---- each thread ---- */

/* Where a thread stands, besides its slot pointers (slots.c). */
enum mstat_thread_state {
	MSTAT_THREAD_NEW = 0, /* has no slot yet; tries to claim one when it counts */
	MSTAT_THREAD_CLAIMING, /* taking a slot: a count now takes the shared path */
	MSTAT_THREAD_OWN,      /* has a slot of its own */
	MSTAT_THREAD_SHARED,   /* no slot could be had, or it has exited */
};

/* A count a signal handler deferred (shared.c, defer()). */
struct mstat_deferred {
	uint64_t freed, size, requested;
	unsigned op; /* enum mstat_op */
};
#define MSTAT_DEFERRED_MAX 8u

/* The pool's parts (pool.c): a hint each. */
#define MSTAT_POOL_PARTS 19u

/*
 * Everything a thread keeps, in one block of initial-exec TLS, the
 * fast path's line first: one load of the thread pointer's offset
 * reaches any of it.
 */
struct mstat_thread {
	/*
	 * The fast path's line: what a count reads of its own (one more
	 * field here costs a fast path nothing but its own load).  Each
	 * pointer is the thread's own slot, or NULL where the inline path
	 * must not run and the slow path decides:
	 *   - `own`: the slot this thread writes, in either mode;
	 *   - `slot`: `own` in membarrier mode, for the inline section of
	 *     mstat_section_open(); NULL in fenced mode, so that the inline
	 *     path tests no mode: fenced sections open out of line;
	 *   - `fast`: `slot`, once the interposer has said its blocks carry
	 *     glibc's header (mstat_slots_header_sizes()): the interposer's
	 *     inline path then tests nothing else of the process.
	 */
	alignas(MSTAT_CACHELINE) struct mstat_shm_slot *fast;
	struct mstat_shm_slot *slot;
	struct mstat_shm_slot *own;
	/* Bytes to allocate before the next sample (profile.h); below zero:
	 * this allocation is sampled.  0 for a new thread, whose first
	 * allocation draws its first countdown. */
	int64_t sample_left;

	/* The rest, by the file that writes it.  The library's own work
	 * (own.c): nests; relaxed, this thread's and its signal handlers'.
	 * The signal mask the outermost found, which its end puts back. */
	_Atomic unsigned own_depth;
	sigset_t own_mask;
	/* Its slot (slots.c). */
	unsigned char state;  /* enum mstat_thread_state */
	uint32_t slot_index;  /* of `own` */
	/* The shared lock and the deferred counts (shared.c).  Its id, as
	 * the shared lock knows its holder (0 until first needed). */
	uint32_t tid;
	/* It is adding to mstat_proc.forking: a signal handler must not. */
	bool in_forking;
	/* It is counting its deferred counts: one deeper down does not
	 * start another loop. */
	bool draining;
	/* It has counted before the segment existed. */
	bool counted_early;
	/* Counts its signal handlers deferred: entries put in (by handlers)
	 * and taken out (by the thread), counting up; the ring holds
	 * in - out. */
	_Atomic unsigned deferred_in, deferred_out;
	struct mstat_deferred deferred[MSTAT_DEFERRED_MAX];
	/* The fork (fork.c).  Between its prepare handler and its parent or
	 * child handler, in the forking thread: its slot is set aside (in
	 * slot_before_fork) and its counts go to mstat_proc.forking. */
	bool forking;
	/* It may hold mstat_proc.fork_lock (the same handlers): a signal
	 * handler that exits must not wait for it. */
	bool holds_fork_lock;
	struct mstat_shm_slot *slot_before_fork;
	/* It runs the process's exit (exit.c): it counts on, through the
	 * shared slot, where every other thread has stopped. */
	bool exiting;
	/* It is inside dlsym, resolving the next allocator (next.c). */
	bool resolving;
	/* It is inside the next allocator's malloc_usable_size(), which may
	 * allocate (next.h). */
	bool sizing;
	/* Sampling (profile.c): it is taking a sample, and samples nothing
	 * more; its countdown (its bytes left are sample_left), and the mean
	 * interval of the sample it is taking. */
	bool in_sample;
	/* It has taken a stack: libunwind's thread-local block exists. */
	bool unwound;
	struct mstat_countdown countdown;
	uint64_t sample_interval;
	/* Per part of the pool, the word it last took a slot from, plus one;
	 * 0 before its first (pool.c). */
	unsigned pool_hint[MSTAT_POOL_PARTS];
};
extern _Thread_local struct mstat_thread mstat_thread MSTAT_TLS_MODEL MSTAT_HIDDEN;

/* ---- the process ---- */

/*
 * The writer's process state, what more than one of its files reads;
 * each group says which file writes it.  The small fields first and the
 * large tables last: a process that starts touches only the first pages
 * of this, each page a fault.  On a page boundary, so that they are the
 * fewest (state.c checks that the counts a starting process makes are on
 * the first).
 */
struct mstat_proc {
	/* The start (start.c), and the configuration it read (config.h). */
	_Atomic int ready;       /* (R) the segment is published */
	bool started;            /* the constructor has run */
	bool disabled;           /* not counting, for good */
	bool eager;              /* MSTAT_EAGER: make the segment at start,
				  * in a fork child too */
	_Atomic bool starting;   /* start() has been called (under shared_lock) */
	_Atomic uint32_t start_ended; /* start() has returned; a futex word */
	uint32_t starter;        /* the thread in start() */
	pid_t pid;               /* this process's (a vfork child is not) */
	uint32_t slot_count;     /* MSTAT_SLOTS */
	uint32_t writer_mode;    /* MSTAT_MODE */
	pid_t report_pid;        /* MSTAT_REPORT_PID: which process reports */
	/* CLOCK_REALTIME when the library began to count in the running
	 * process it was injected into, 0 in any other (attach.c, before
	 * counting begins; kept by a fork child, whose heap is its
	 * parent's): the segment's header says it. */
	uint64_t attached_ns;
	struct mstat_mapping inherited; /* a fork child's: its parent's segment,
				  * mapped until it makes its own (fork.c) */
	_Atomic bool execing;    /* a thread has begun an exec() (exec.c) */
	struct mstat_segment seg; /* once `ready` */

	/* The exit (exit.c, and the exiting thread's section: shared.c). */
	_Atomic bool retired;    /* the exit has begun (retire()) */
	bool late;               /* `early` holds counts made since, which
				  * the exiting thread adds in (under
				  * shared_lock) */
	uint32_t exit_flags;     /* the header's, as last stored (under
				  * shared_lock) */
	/* (V) the exiting thread's epoch word: the address of `epoch`, with
	 * MSTAT_EPOCH_STOPPED only while a fork drains (the exit's stop bit
	 * is in mstat_writer_config.epoch alone). */
	_Atomic uintptr_t exit_word;

	/* The shared slot and the counts before the segment (shared.c):
	 * how much was counted before the segment exists, under shared_lock;
	 * when the process (or fork child) began. */
	struct mstat_ownlock shared_lock;
	uint64_t early_counts, early_bytes;
	unsigned early_threads;
	uint64_t born_ns;

	/* Held by a forking thread from its prepare handler to its parent or
	 * child handler (fork.c): keeps two threads forking at once from
	 * sharing `forking` and what the child inherits. */
	pthread_mutex_t fork_lock;

	/* A process's reader of itself (api.c). */
	pthread_mutex_t self_lock;  /* guards self_reader */
	struct mstat_reader *self_reader;
	struct mstat_reader *parent_reader; /* a fork child's, unmapped */

	/* What every process writes as it starts, from here on, on one page
	 * (docs/performance.md, "Starting a process"): the texts, then the
	 * counts made before the segment exists, under shared_lock.  Their
	 * requested bytes are kept here, not in the totals row, the last
	 * of `early`: the rows of the classes up to 1 KiB, where a process
	 * that starts allocates, are then the only ones it touches. */
	uint64_t early_requested;
	char name[MSTAT_NAME_MAX]; /* MSTAT_NAME, or the program's (start.c) */
	/* The status (status.c): mstat_self_status(), and the report's. */
	char status[MSTAT_REPORT_STATUS_MAX]; /* the state; the warnings */
	char state[200];         /* what the library does */
	char warnings[200];      /* said once, kept in the status */
	char log[256];           /* MSTAT_LOG: "stderr", a file, or "" */
	char report[MSTAT_REPORT_NAME_MAX]; /* MSTAT_REPORT: where mstat-run
					     * listens (start.c) */
	mstat_rows early;        /* shared.c */
	mstat_rows forking;      /* the forking thread's counts meanwhile
				  * (fork.c, shared.c) */
};
extern struct mstat_proc mstat_proc MSTAT_HIDDEN;

#endif /* MSTAT_LIB_STATE_H */
