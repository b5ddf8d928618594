/* SPDX-License-Identifier: MIT */
/*
 * api.c - what the library defines of the public API (include/mstatshm.h):
 * recording what an allocator it cannot interpose did, and a process
 * asking about itself.  The reader's part is shm/reader.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include <mstatshm.h>
#include "shm/name.h"
#include "lib/own.h"
#include "shm/reader.h"
#include "lib/shared.h"
#include "lib/start.h"
#include "lib/state.h"
#include "shm/sum.h"
#include "lib/writer.h"

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

/* Asking about itself is a reason to be seen: the segment is made now. */
int
mstat_self_enabled(void)
{
	mstat_start_publish_wait();
	return atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) &&
	       !mstat_proc.disabled;
}

const char *
mstat_self_status(void)
{
	return mstat_proc.started || mstat_proc.disabled ? mstat_proc.status
							 : "not started";
}

/*
 * Without a segment (none yet, or none any more to be made: the exit has
 * begun), the counts are in process memory: a snapshot of them, taken
 * under the lock that guards them, is as exact as a read of the segment.
 * 1 if the segment exists, to be read instead.
 */
static int
snapshot_early(struct mstat_snapshot *out)
{
	if (mstat_shared_must_defer())
		return -EAGAIN; /* a signal handler inside our critical section */
	mstat_shared_lock();
	if (atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed)) {
		mstat_shared_unlock();
		return 1;
	}
	(void)mstat_shared_take_early();
	memset(out, 0, offsetof(struct mstat_snapshot, class_max_size));
	out->state = atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed)
			     ? MSTAT_EXITING
			     : MSTAT_RUNNING;
	out->class_count = MSTAT_CLASS_COUNT;
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		out->class_max_size[c] = mstat_class_max_size(c);
	mstat_sum_counts(out, (const uint64_t (*)[MSTAT_ROW_COUNTERS])mstat_proc.early,
			 MSTAT_CLASS_COUNT);
	out->requested_bytes += mstat_proc.early_requested;
	mstat_shared_unlock();
	return 0;
}

int
mstat_self_snapshot(struct mstat_snapshot *out)
{
	int rc = 0;

	mstat_start_publish_wait(); /* asking is a reason to be seen */
	if (mstat_proc.disabled)
		return -ENODEV;
	if ((rc = snapshot_early(out)) <= 0)
		return rc;
	rc = 0;
	if (mstat_thread.exiting && !mstat_shared_must_defer()) {
		/* What other threads counted since the exit began, in. */
		unsigned g;
		(void)mstat_shared_close(mstat_shared_open(&g), g);
	}
	pthread_mutex_lock(&mstat_proc.self_lock);
	if (!mstat_proc.self_reader) {
		/* The reader is the library's own block.  Once the exit has
		 * unlinked the name, a file of its own through /proc (the
		 * owner lock is the open file's: not seg.fd's). */
		mstat_own_begin();
		rc = mstat_reader_open_name(&mstat_proc.self_reader,
					    mstat_proc.seg.shm_name, NULL, 0);
		if (rc == -ENOENT) {
			char path[40] = "/proc/self/fd/";
			mstat_utoa(path + strlen(path), (uint64_t)mstat_proc.seg.fd);
			int fd = open(path, O_RDWR | O_CLOEXEC);
			rc = fd < 0 ? -errno
				    : mstat_reader_open_fd(&mstat_proc.self_reader,
							   fd, mstat_proc.seg.shm_name,
							   NULL, 0);
		}
		mstat_own_end();
	}
	if (rc == 0)
		rc = mstat_reader_snapshot(mstat_proc.self_reader, out);
	pthread_mutex_unlock(&mstat_proc.self_lock);
	return rc;
}
