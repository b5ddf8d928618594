/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the process's side: its segment, its threads' slots, and every
 * count that cannot take the fast path of writer.h.
 *
 * Who writes where:
 *   - a thread with a slot of its own writes it lock-free (writer.h);
 *   - everything else writes the shared slot 0 under `shared_lock`, a
 *     process-local lock readers never take: threads that found every slot
 *     taken, threads past their exit, and (folded in when the segment is
 *     made) the counts made before it existed;
 *   - before the segment exists, counts go to `early`, process memory,
 *     under the same lock;
 *   - while a thread forks, its counts go to `forking`, process memory
 *     that fork copies, under `fork_lock`: neither the parent's segment
 *     nor a lock is touched across fork (see fork_prepare()).
 *
 * Inside a host process: nothing here aborts, and nothing allocates except
 * pthread_setspecific() on a thread's first count, which may recurse into
 * malloc once; that count takes the shared path (see claim_slot()).
 */
#include "writer.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mstatshm.h"
#include "reader.h"
#include "segment.h"
#include "sum.h"

#ifndef MSTAT_DEFAULT_MODE
#define MSTAT_DEFAULT_MODE MSTAT_MODE_MEMBARRIER
#endif

struct mstat_writer_config mstat_writer_config;
_Thread_local struct mstat_shm_slot *mstat_thread_slot
	__attribute__((tls_model("initial-exec")));

/* Where a thread stands, besides its slot pointer. */
enum thread_state {
	THREAD_NEW = 0, /* has not counted yet */
	THREAD_CLAIMING, /* taking a slot: a count now takes the shared path */
	THREAD_OWN,      /* has a slot of its own */
	THREAD_SHARED,   /* no slot was free, or it has exited */
};
static _Thread_local unsigned char thread_state __attribute__((tls_model("initial-exec")));
static _Thread_local uint32_t thread_slot_index __attribute__((tls_model("initial-exec")));
/* Between fork_prepare() and fork_parent()/fork_child(), in the forking
 * thread: its slot is set aside and its counts go to proc.forking. */
static _Thread_local bool thread_forking __attribute__((tls_model("initial-exec")));
static _Thread_local struct mstat_shm_slot *slot_before_fork
	__attribute__((tls_model("initial-exec")));

static struct {
	_Atomic int ready;       /* (R) the segment is published */
	bool disabled;           /* not counting, for good */
	struct mstat_segment seg;
	uint32_t slot_count;
	uint32_t writer_mode;
	pthread_key_t exit_key;  /* its destructor gives a thread's slot back */
	bool have_key;
	pthread_mutex_t shared_lock;
	/* Counts made before the segment exists, under shared_lock. */
	uint64_t early[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];
	/* Counts of the thread that is forking, and the live heap when it
	 * began to fork, under fork_lock. */
	pthread_mutex_t fork_lock;
	uint64_t forking[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];
	uint64_t inherit[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];
	/* (H) slot i is owned by a live thread; process-local. */
	_Atomic unsigned char busy[MSTAT_SLOTS_MAX];
	char name[MSTAT_NAME_MAX];
	char status[200];
	pid_t keep_pid;  /* MSTAT_KEEP_PID: this pid leaves its segment at exit */
	pthread_mutex_t self_lock;  /* guards self_reader */
	struct mstat_reader *self_reader;
	struct mstat_reader *parent_reader; /* a fork child's, unmapped */
} proc = {
	.shared_lock = PTHREAD_MUTEX_INITIALIZER,
	.fork_lock = PTHREAD_MUTEX_INITIALIZER,
	.self_lock = PTHREAD_MUTEX_INITIALIZER,
};

typedef uint64_t mstat_rows[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];

/* ---- the shared slot and the early counts ---- */

/* Counts into process memory `acc` (early or forking counts). */
static void
count_into(mstat_rows acc, enum mstat_op op, uint64_t freed, uint64_t size,
	   uint64_t requested)
{
	if (op != MSTAT_OP_ALLOC) {
		unsigned c = mstat_size_class(freed);
		acc[c][MSTAT_C_FREE_COUNT] += 1;
		acc[c][MSTAT_C_FREE_BYTES] += freed;
	}
	if (op != MSTAT_OP_FREE) {
		unsigned c = mstat_size_class(size);
		acc[c][MSTAT_C_ALLOC_COUNT] += 1;
		acc[c][MSTAT_C_ALLOC_BYTES] += size;
		acc[MSTAT_CLASS_COUNT][MSTAT_T_REQUESTED_BYTES] += requested;
	}
}

/* Adds counts kept in process memory to `slot` in one section. */
static void
add_rows(struct mstat_shm_slot *slot, mstat_rows acc)
{
	_Atomic uint64_t *gen = mstat_wsection_begin(
		slot, mstat_writer_config.epoch, mstat_writer_config.fenced);

	for (unsigned row = 0; row < MSTAT_ROWS(MSTAT_CLASS_COUNT); row++) {
		bool any = false;
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++) {
			mstat_wsection_add(gen, row, k, acc[row][k]);
			any |= acc[row][k] != 0;
		}
		if (any && row < MSTAT_CLASS_COUNT)
			mstat_wsection_touch(slot, row);
	}
	mstat_wsection_end(slot);
}

static void
add_into(mstat_rows to, mstat_rows from)
{
	for (unsigned row = 0; row < MSTAT_ROWS(MSTAT_CLASS_COUNT); row++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
			to[row][k] += from[row][k];
}

static void
count_shared(enum mstat_op op, uint64_t freed, uint64_t size, uint64_t requested)
{
	pthread_mutex_lock(&proc.shared_lock);
	if (atomic_load_explicit(&proc.ready, memory_order_relaxed))
		mstat_count_on(mstat_segment_slot(&proc.seg, MSTAT_SHARED_SLOT),
			       op, freed, size, requested);
	else if (!proc.disabled)
		count_into(proc.early, op, freed, size, requested);
	pthread_mutex_unlock(&proc.shared_lock);
}

/* ---- thread slots ---- */

static void
raise_slots_used(uint32_t n)
{
	_Atomic uint32_t *used = &proc.seg.hdr->slots_used;
	uint32_t cur = atomic_load_explicit(used, memory_order_relaxed);

	/* (F) seq_cst, before this thread's first section in the slot: pairs
	 * with the reader's load of slots_used after its rotation (D). */
	while (cur < n && !atomic_compare_exchange_weak_explicit(
				  used, &cur, n, memory_order_seq_cst,
				  memory_order_relaxed))
		;
}

static void
claim_slot(void)
{
	struct mstat_shm_header *h = proc.seg.hdr;

	thread_state = THREAD_CLAIMING;
	for (uint32_t i = 1; i < proc.slot_count; i++) {
		unsigned char free_ = 0;

		if (atomic_load_explicit(&proc.busy[i], memory_order_relaxed) ||
		    /* (H) acquire: pairs with the release in give_back_slot();
		     * the counters and seq the last owner left are visible. */
		    !atomic_compare_exchange_strong_explicit(
			    &proc.busy[i], &free_, 1, memory_order_acquire,
			    memory_order_relaxed))
			continue;
		struct mstat_shm_slot *s = mstat_segment_slot(&proc.seg, i);
		raise_slots_used(i + 1);
		atomic_store_explicit(&s->head.tid, (uint32_t)gettid(),
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&h->threads, 1, memory_order_relaxed);
		/* May allocate (keys past the first 32): that count sees
		 * THREAD_CLAIMING and takes the shared path. */
		if (proc.have_key)
			pthread_setspecific(proc.exit_key, (void *)1);
		thread_slot_index = i;
		thread_state = THREAD_OWN;
		mstat_thread_slot = s;
		return;
	}
	atomic_fetch_add_explicit(&h->overflowed, 1, memory_order_relaxed);
	thread_state = THREAD_SHARED;
}

/* The destructor of exit_key: runs as a thread exits. */
static void
give_back_slot(void *unused)
{
	(void)unused;
	if (thread_state != THREAD_OWN)
		return;
	struct mstat_shm_slot *s = mstat_thread_slot;
	/* Later counts of this thread (other destructors freeing) go to the
	 * shared slot: nothing is lost, and the slot is free now. */
	mstat_thread_slot = NULL;
	thread_state = THREAD_SHARED;
	atomic_store_explicit(&s->head.tid, 0, memory_order_relaxed);
	atomic_fetch_sub_explicit(&proc.seg.hdr->threads, 1, memory_order_relaxed);
	/* (H) release: the next owner's acquire sees every count made here.
	 * The counters stay: a slot keeps its cumulative counts for good. */
	atomic_store_explicit(&proc.busy[thread_slot_index], 0, memory_order_release);
}

void
mstat_count_slow(enum mstat_op op, uint64_t freed, uint64_t size,
		 uint64_t requested)
{
	if (proc.disabled)
		return;
	if (thread_forking) {
		count_into(proc.forking, op, freed, size, requested);
		return;
	}
	/* (R) acquire: pairs with the release in start(); the segment and
	 * mstat_writer_config are complete once ready is seen. */
	if (thread_state == THREAD_NEW &&
	    atomic_load_explicit(&proc.ready, memory_order_acquire)) {
		claim_slot();
		if (mstat_thread_slot) {
			mstat_count_on(mstat_thread_slot, op, freed, size, requested);
			return;
		}
	}
	count_shared(op, freed, size, requested);
}

/* ---- start-up, fork, exit ---- */

static void
say(const char *what, const char *why)
{
	char line[400];
	int n = snprintf(line, sizeof(line), "mstatshm: %s[%d]: %s%s%s\n",
			 proc.name, (int)getpid(), what, why ? ": " : "",
			 why ? why : "");
	if (n > 0)
		(void)!write(STDERR_FILENO, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static uint32_t
env_slots(void)
{
	const char *s = getenv("MSTAT_SLOTS");
	char *end;

	if (!s || !*s)
		return MSTAT_SLOTS_DEFAULT;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v < MSTAT_SLOTS_MIN || v > MSTAT_SLOTS_MAX) {
		say("MSTAT_SLOTS ignored", "not a number in 2..4096");
		return MSTAT_SLOTS_DEFAULT;
	}
	return (uint32_t)v;
}

static uint32_t
env_mode(void)
{
	const char *s = getenv("MSTAT_MODE");

	if (!s || !*s)
		return MSTAT_DEFAULT_MODE;
	if (strcmp(s, "fenced") == 0)
		return MSTAT_MODE_FENCED;
	if (strcmp(s, "membarrier") == 0)
		return MSTAT_MODE_MEMBARRIER;
	say("MSTAT_MODE ignored", "use fenced or membarrier");
	return MSTAT_DEFAULT_MODE;
}

/* Creates the segment, folds `early` into the shared slot, publishes.  The
 * process has one thread, or the others count into `early` meanwhile. */
static void
start(void)
{
	char err[160];
	uint32_t mode = proc.writer_mode;

	if (mode == MSTAT_MODE_MEMBARRIER &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) < 0) {
		say("membarrier unavailable, counting in fenced mode",
		    strerror(errno));
		mode = MSTAT_MODE_FENCED;
	}
	/* Made outside shared_lock: creating may allocate (it should not,
	 * but a count from in here must not deadlock), counted as early. */
	struct mstat_segment seg;
	int rc = mstat_segment_create(&seg, proc.name, proc.slot_count, mode, err,
				      sizeof(err));
	if (rc < 0) {
		pthread_mutex_lock(&proc.shared_lock);
		proc.disabled = true;
		pthread_mutex_unlock(&proc.shared_lock);
		snprintf(proc.status, sizeof(proc.status), "not counting: %s", err);
		say("not counting", err);
		return;
	}

	pthread_mutex_lock(&proc.shared_lock);
	proc.seg = seg;
	mstat_writer_config.epoch = &seg.hdr->epoch;
	mstat_writer_config.fenced = mode == MSTAT_MODE_FENCED;
	/* A section on a segment no reader can see yet: epoch 0, gen 0. */
	add_rows(mstat_segment_slot(&seg, MSTAT_SHARED_SLOT), proc.early);
	memset(proc.early, 0, sizeof(proc.early));
	mstat_segment_publish(&seg);
	/* (R) release: pairs with the acquire in mstat_count_slow(). */
	atomic_store_explicit(&proc.ready, 1, memory_order_release);
	pthread_mutex_unlock(&proc.shared_lock);
	snprintf(proc.status, sizeof(proc.status), "counting into /dev/shm/%s (%s)",
		 seg.shm_name, mode == MSTAT_MODE_FENCED ? "fenced" : "membarrier");
}

/*
 * Across fork(), the forking thread counts into proc.forking, from our
 * prepare handler to our parent or child handler.  Handlers of other
 * libraries may allocate in between, on either side: in the child, those
 * registered before ours run before ours, while the thread's slot pointer
 * still points into the parent's segment, which the child shares.  Writing
 * there would make two writers of one slot.  No lock is held across fork
 * either (a prepare handler that runs after ours and allocates on a thread
 * without a slot would otherwise deadlock on shared_lock).  fork_lock only
 * keeps two threads forking at once from sharing proc.forking; it is never
 * taken while counting.
 *
 * The child's counts start from the heap it inherits: per class, the live
 * objects and bytes of the parent as allocations.  They are added up here,
 * before the fork, into process memory the child gets a copy of: the
 * segment itself is shared, and by the time the child could read it the
 * parent has moved on.  Exact when the parent has one thread.  Otherwise
 * what other threads count between this handler and the fork itself is
 * missing or partly there, and slots are read at slightly different
 * moments; live counts are kept from going below zero.
 */
static void
fork_prepare(void)
{
	pthread_mutex_lock(&proc.fork_lock);
	memset(proc.forking, 0, sizeof(proc.forking));
	memset(proc.inherit, 0, sizeof(proc.inherit));
	if (atomic_load_explicit(&proc.ready, memory_order_acquire)) {
		struct mstat_shm_header *h = proc.seg.hdr;
		uint32_t used = atomic_load_explicit(&h->slots_used,
						     memory_order_relaxed);
		if (used > proc.slot_count)
			used = proc.slot_count;
		for (unsigned g = 0; g < MSTAT_GENS; g++)
			mstat_sum_generation((const unsigned char *)h + h->slots_offset,
					     h->slot_size, used, MSTAT_CLASS_COUNT, g,
					     proc.inherit);
	}
	slot_before_fork = mstat_thread_slot;
	mstat_thread_slot = NULL;
	thread_forking = true;
}

static void
fork_parent(void)
{
	thread_forking = false;
	mstat_thread_slot = slot_before_fork;
	if (mstat_thread_slot) {
		add_rows(mstat_thread_slot, proc.forking);
	} else {
		pthread_mutex_lock(&proc.shared_lock);
		if (atomic_load_explicit(&proc.ready, memory_order_relaxed))
			add_rows(mstat_segment_slot(&proc.seg, MSTAT_SHARED_SLOT),
				 proc.forking);
		else if (!proc.disabled)
			add_into(proc.early, proc.forking);
		pthread_mutex_unlock(&proc.shared_lock);
	}
	pthread_mutex_unlock(&proc.fork_lock);
}

/* The child must not write into its parent's segment (its slots belong to
 * the parent's threads): it makes its own, starting from proc.inherit and
 * what was counted while forking. */
static void
fork_child(void)
{
	bool was_ready = atomic_load_explicit(&proc.ready, memory_order_relaxed);

	/* From here until start(), counts go to `early`, never to the
	 * parent's segment. */
	atomic_store_explicit(&proc.ready, 0, memory_order_relaxed);
	thread_forking = false;
	thread_state = THREAD_NEW;
	mstat_thread_slot = NULL;
	/* The parent's reader of itself: drop the copies of its mapping and
	 * fd, keep its memory (inherited heap, still reachable from here). */
	if (proc.self_reader) {
		mstat_reader_unmap(proc.self_reader);
		proc.parent_reader = proc.self_reader;
		proc.self_reader = NULL;
	}
	/* Whoever held these in the parent does not exist here. */
	pthread_mutex_init(&proc.shared_lock, NULL);
	pthread_mutex_init(&proc.fork_lock, NULL);
	pthread_mutex_init(&proc.self_lock, NULL);
	if (proc.disabled)
		return;
	add_into(proc.early, proc.forking);
	if (!was_ready)
		return; /* start() will fold `early` */

	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		uint64_t *in = proc.inherit[c];
		if (in[MSTAT_C_ALLOC_COUNT] > in[MSTAT_C_FREE_COUNT])
			proc.early[c][MSTAT_C_ALLOC_COUNT] +=
				in[MSTAT_C_ALLOC_COUNT] - in[MSTAT_C_FREE_COUNT];
		if (in[MSTAT_C_ALLOC_BYTES] > in[MSTAT_C_FREE_BYTES])
			proc.early[c][MSTAT_C_ALLOC_BYTES] +=
				in[MSTAT_C_ALLOC_BYTES] - in[MSTAT_C_FREE_BYTES];
	}
	mstat_segment_forget(&proc.seg);
	memset((void *)proc.busy, 0, sizeof(proc.busy));
	start();
}

static void
retire(void)
{
	/* Compared now, not at start: a fork child has another pid. */
	if (atomic_load_explicit(&proc.ready, memory_order_acquire))
		mstat_segment_retire(&proc.seg, proc.keep_pid != getpid());
}

void
mstat_writer_start(void)
{
	static bool started;
	const char *e;

	if (started)
		return;
	started = true;
	e = getenv("MSTAT_NAME");
	snprintf(proc.name, sizeof(proc.name), "%s",
		 e && *e ? e : program_invocation_short_name);
	e = getenv("MSTAT_DISABLE");
	if (e && *e && strcmp(e, "0") != 0) {
		proc.disabled = true;
		snprintf(proc.status, sizeof(proc.status),
			 "disabled by MSTAT_DISABLE");
		return;
	}
	e = getenv("MSTAT_KEEP_PID"); /* set by mstat-run for its child */
	if (e && *e)
		proc.keep_pid = (pid_t)strtol(e, NULL, 10);
	proc.slot_count = env_slots();
	proc.writer_mode = env_mode();
	proc.have_key = pthread_key_create(&proc.exit_key, give_back_slot) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(retire);
	start();
}

__attribute__((constructor)) static void
mstat_constructor(void)
{
	mstat_writer_start();
}

/* ---- the public API ---- */

void
mstat_record_alloc(size_t size, size_t requested)
{
	mstat_count(MSTAT_OP_ALLOC, 0, size, requested);
}

void
mstat_record_free(size_t size)
{
	mstat_count(MSTAT_OP_FREE, size, 0, 0);
}

void
mstat_record_realloc(size_t old_size, size_t new_size, size_t requested)
{
	mstat_count(MSTAT_OP_REALLOC, old_size, new_size, requested);
}

int
mstat_self_enabled(void)
{
	return atomic_load_explicit(&proc.ready, memory_order_acquire) &&
	       !proc.disabled;
}

const char *
mstat_self_status(void)
{
	return proc.status[0] ? proc.status : "not started";
}

int
mstat_self_snapshot(struct mstat_snapshot *out)
{
	int rc = 0;

	if (!mstat_self_enabled())
		return -ENODEV;
	pthread_mutex_lock(&proc.self_lock);
	if (!proc.self_reader)
		rc = mstat_reader_open_name(&proc.self_reader, proc.seg.shm_name,
					    NULL, 0);
	if (rc == 0)
		rc = mstat_reader_snapshot(proc.self_reader, out);
	pthread_mutex_unlock(&proc.self_lock);
	return rc;
}
