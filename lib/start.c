/* SPDX-License-Identifier: MIT */
/*
 * start.c - the library's start (its constructor: the configuration
 * read, the handlers registered, counting begun in process memory), and
 * the segment made once the process is worth watching, or at once
 * (MSTAT_EAGER, mstat-run's command, a process asking about itself); the
 * hooks other parts of the library act at (writer.h); the report to
 * mstat-run (shm/report.h).  See start.h.
 */
#include "lib/own.h"
#include "lib/start.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/allocstats.h"
#include "lib/attach.h"
#include "shm/clock.h"
#include "lib/config.h"
#include "lib/exec.h"
#include "lib/exit.h"
#include "lib/fork.h"
#include "shm/owner.h"
#include "shm/report.h"
#include "lib/rows.h"
#include "lib/segment.h"
#include "lib/shared.h"
#include "lib/slots.h"
#include "lib/status.h"
#include "lib/stop.h"
#include "lib/writer.h"

/* Dead segments a process may look at when it makes its segment
 * (mstat_owner_reap_some()). */
#define REAP_PROBES 8u

/* The hooks registered (mstat_start_hooks()), by constructors: every
 * process writes them as it starts. */
#define HOOKS_MAX 4u
static const struct mstat_writer_hooks *hooks[HOOKS_MAX] MSTAT_STARTUP;
static unsigned hooks_n MSTAT_STARTUP;

MSTAT_START_TEXT void
mstat_start_hooks(const struct mstat_writer_hooks *h)
{
	if (hooks_n < HOOKS_MAX)
		hooks[hooks_n++] = h;
}

/* Runs hook `point` of each registered set, in their order. */
#define RUN_HOOKS(point)                                                     \
	for (unsigned i_ = 0; i_ < hooks_n; i_++)                            \
		if (hooks[i_]->point)                                        \
			hooks[i_]->point()

static void start(void);

/*
 * `starting` is set under the shared lock, which a fork before the segment
 * holds across fork(): so a fork either sees a start begun, and waits for
 * its end (fork_prepare()), or is over before it begins.  A child never
 * inherits half a segment (its descriptor, its `starting`).
 */
void
mstat_start_publish(void)
{
	bool go;

	if (!mstat_proc.started || mstat_proc.disabled ||
	    atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) ||
	    /* a signal handler, its thread holding the lock */
	    mstat_shared_must_defer())
		return;
	mstat_shared_lock();
	/* Not once the exit has begun (retire() sets that under this lock):
	 * a segment made then would never be retired. */
	go = !atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) &&
	     !(atomic_load_explicit(&mstat_writer_config.stop, memory_order_relaxed) &
	       MSTAT_STOP_EXIT);
	if (go) {
		atomic_store_explicit(&mstat_proc.starting, true, memory_order_relaxed);
		mstat_proc.starter = mstat_shared_tid();
	}
	mstat_shared_unlock();
	if (go) {
		/* Inside malloc, whose caller reads errno as it left it: a
		 * segment that cannot be made (ENOSPC) is not its error. */
		int saved = errno;
		start();
		errno = saved;
	}
}

void
mstat_start_publish_claim(void)
{
	atomic_store_explicit(&mstat_proc.starting, true, memory_order_relaxed);
	mstat_proc.starter = mstat_shared_tid();
}

void
mstat_start_publish_claimed(void)
{
	mstat_proc.starter = mstat_shared_tid();
	start();
}

void
mstat_start_publish_wait(void)
{
	mstat_start_publish();
	uint64_t since = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	/* (W) acquire: pairs with the release in start_end(); what start()
	 * did (the segment, `ready`, `disabled`) is seen. */
	while (atomic_load_explicit(&mstat_proc.starting, memory_order_relaxed) &&
	       !atomic_load_explicit(&mstat_proc.start_ended, memory_order_acquire) &&
	       mstat_proc.starter != mstat_shared_tid() &&
	       mstat_clock_ns(CLOCK_MONOTONIC_COARSE) - since < START_WAIT_NS) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
	}
}

/* Tells mstat-run, if it runs this process: the status, and the segment
 * unless `seg` is NULL (nothing is counted). */
static MSTAT_START_TEXT void
report(const struct mstat_segment *seg)
{
	int fd = -1;

	if (!mstat_proc.report[0] || getpid() != mstat_proc.report_pid ||
	    (seg && (fd = mstat_segment_reopen(seg)) < 0))
		return;
	(void)mstat_report_send(mstat_proc.report, mstat_proc.status, fd);
	if (fd >= 0)
		close(fd);
}

void
mstat_start_fork_child(void)
{
	RUN_HOOKS(fork_child);
	atomic_store_explicit(&mstat_proc.starting, false, memory_order_relaxed);
	atomic_store_explicit(&mstat_proc.start_ended, 0, memory_order_relaxed);
}

/* start() has returned, made the segment or not: threads that wait for
 * it go on (mstat_start_publish_wait(), fork_prepare()). */
static void
start_end(void)
{
	/* (W) release: pairs with the acquire loads of its waiters. */
	atomic_store_explicit(&mstat_proc.start_ended, 1, memory_order_release);
	syscall(SYS_futex, &mstat_proc.start_ended, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
}

/* No segment, for good: `why`, said in the status and to mstat-run. */
static void
not_counting(const char *why)
{
	mstat_shared_lock();
	mstat_proc.disabled = true;
	mstat_shared_unlock();
	mstat_status_set((const char *const[]){ "not counting: ", why, NULL });
	mstat_status_log("not counting", why);
	report(NULL);
}

/*
 * Under the shared lock: folds `early` into the shared slot of `seg`,
 * publishes it, names it, and makes it the process's.  1 if it did; 0 if
 * the exit began while the segment was made (it would never be retired);
 * -errno if it could not be named (why in `err`).  Either way, a segment
 * not made the process's was never named: no reader has seen it, and
 * `early` keeps its counts.
 */
static int
adopt(struct mstat_segment *seg, uint32_t mode, char *err, size_t errlen)
{
	if (atomic_load_explicit(&mstat_writer_config.stop, memory_order_relaxed) &
	    MSTAT_STOP_EXIT)
		return 0;
	/* A section on a segment no reader can see yet, which nothing can
	 * stop: epoch 0, generation 0. */
	(void)mstat_shared_take_early();
	mstat_proc.early[MSTAT_CLASS_COUNT][MSTAT_T_REQUESTED_BYTES] +=
		mstat_proc.early_requested;
	mstat_proc.early_requested = 0;
	mstat_rows_put(mstat_segment_slot(seg, MSTAT_SHARED_SLOT), 0, mstat_proc.early);
	mstat_allocstats_made(seg->hdr);
	mstat_segment_publish(seg);
	/* Named once whole: a file the library names always holds a
	 * published segment (segment.h). */
	int rc = mstat_segment_name(seg, err, errlen);
	if (rc < 0)
		return rc;
	memset(mstat_proc.early, 0, sizeof(mstat_proc.early));
	mstat_proc.seg = *seg;
	mstat_slots_made();
	atomic_store_explicit(&mstat_writer_config.epoch,
			      mstat_epoch_word(&seg->hdr->epoch), memory_order_relaxed);
	atomic_store_explicit(&mstat_proc.exit_word, mstat_epoch_word(&seg->hdr->epoch),
			      memory_order_relaxed);
	mstat_writer_config.fenced = mode == MSTAT_MODE_FENCED;
	/* (R) release: pairs with the acquire in mstat_slots_open_slow().
	 * (I) seq_cst: with the load of `execing` after it, pairs with an
	 * exec()'s store of `execing` and load of `ready` (exec.c). */
	atomic_store_explicit(&mstat_proc.ready, 1, memory_order_seq_cst);
	mstat_exec_published();
	return 1;
}

/* Creates the segment, folds `early` into the shared slot, publishes,
 * names it.  The process has one thread, or the others count into
 * `early` meanwhile. */
static void
start(void)
{
	char err[160];
	uint32_t mode = mstat_proc.writer_mode;

	if (mode == MSTAT_MODE_MEMBARRIER &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) < 0) {
		mstat_status_warn("membarrier unavailable, counting in fenced mode",
				  mstat_strerror(errno));
		mode = MSTAT_MODE_FENCED;
	}
	/* Whoever starts removes a few segments of processes that are gone;
	 * a killed one's only once its grace is over. */
	const struct mstat_grace grace = {
		.seconds = mstat_config_number(MSTAT_CONF_KILLED_GRACE),
		.max_bytes = mstat_config_number(MSTAT_CONF_KILLED_BYTES),
	};
	mstat_owner_reap_some(geteuid(), REAP_PROBES, &grace);
	/* A fork child: its parent's segment, still mapped (fork.c). */
	mstat_segment_unmap(&mstat_proc.inherited);
	/* What the hooks allocate (loading libunwind) is the library's own. */
	mstat_own_begin();
	RUN_HOOKS(segment);
	mstat_own_end();
	/* Made outside the shared lock: creating may allocate (it should not,
	 * but a count from in here must not deadlock), counted as early. */
	struct mstat_segment seg;
	int rc = mstat_segment_create(&seg, mstat_proc.name, mstat_proc.slot_count,
				      mode, mstat_proc.attached_ns, err, sizeof(err));
	if (rc < 0) {
		not_counting(err);
		start_end();
		return;
	}

	mstat_slots_key();
	mstat_shared_lock();
	rc = adopt(&seg, mode, err, sizeof(err));
	mstat_shared_unlock();
	if (rc <= 0) {
		mstat_segment_forget(&seg);
		if (rc < 0)
			not_counting(err);
		start_end();
		return;
	}
	mstat_status_set((const char *const[]){
		"counting into " MSTAT_SHM_DIR "/", seg.shm_name,
		mode == MSTAT_MODE_FENCED ? " (fenced)" : " (membarrier)", NULL });
	report(&mstat_proc.seg);
	start_end();
}

MSTAT_START_TEXT const struct mstat_segment *
mstat_start_segment(void)
{
	/* (R) acquire: pairs with the release in start(); the segment's
	 * fields are then set. */
	if (!atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) ||
	    atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed))
		return NULL;
	return &mstat_proc.seg;
}

__attribute__((constructor)) static MSTAT_START_TEXT void
mstat_writer_start(void)
{
	const char *e;

	mstat_proc.pid = getpid();
	mstat_proc.born_ns = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	e = mstat_config_text(MSTAT_CONF_NAME);
	mstat_status_join(mstat_proc.name, sizeof(mstat_proc.name), (const char *const[]){
		e ? e : program_invocation_short_name, NULL });
	/* Injected into a running process, which may have written over its
	 * arguments since it started (a process title, as nginx's "nginx:
	 * worker process"): its comm. */
	if (MSTAT_ATTACH && !e)
		(void)prctl(PR_GET_NAME, mstat_proc.name);
	if ((e = mstat_config_text(MSTAT_CONF_LOG)))
		mstat_status_join(mstat_proc.log, sizeof(mstat_proc.log),
				  (const char *const[]){ e, NULL });
	/* Set by mstat-run for the command it runs (shm/report.h): that
	 * process sends its segment as it makes it, at once, or says why
	 * there is none. */
	if ((e = mstat_config_text(MSTAT_CONF_REPORT))) {
		mstat_status_join(mstat_proc.report, sizeof(mstat_proc.report),
				  (const char *const[]){ e, NULL });
		mstat_proc.report_pid = (pid_t)mstat_config_number(MSTAT_CONF_REPORT_PID);
	}
	if (mstat_config_number(MSTAT_CONF_DISABLE)) {
		mstat_proc.disabled = true;
		mstat_status_set((const char *const[]){ "disabled by MSTAT_DISABLE",
							NULL });
		report(NULL);
		return;
	}
	/* MSTAT_EAGER holds for every process, fork children included;
	 * mstat-run's command is eager for itself alone: a child of it
	 * that exec()s at once must cost what a plain fork costs, and
	 * leave nothing (fork.c). */
	mstat_proc.eager = mstat_config_number(MSTAT_CONF_EAGER);
#if !MSTAT_ATTACH
	bool reported = mstat_proc.report[0] && mstat_proc.report_pid == getpid();
#endif
	RUN_HOOKS(start);
	mstat_proc.slot_count = (uint32_t)mstat_config_number(MSTAT_CONF_SLOTS);
	mstat_proc.writer_mode = (uint32_t)mstat_config_number(MSTAT_CONF_MODE);
	if (mstat_proc.writer_mode == MSTAT_MODE_MEMBARRIER && !MSTAT_ATTACH)
		mstat_stop_start();
	/* Handlers may take glibc a block to keep: the library's own. */
	mstat_own_begin();
	mstat_fork_handlers();
	mstat_exit_handlers();
	mstat_own_end();
#if MSTAT_ATTACH
	/* Nothing is counted before the attach, which starts it. */
	mstat_attach_prepare();
#else
	mstat_status_set((const char *const[]){
		"counting in process memory; the segment is made once the "
		"process is worth watching", NULL });
	mstat_proc.started = true;
	if (mstat_proc.eager || reported)
		mstat_start_publish();
#endif
}
