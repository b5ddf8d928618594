/* SPDX-License-Identifier: MIT */
/* segment.c - the target's side of a segment; see segment.h. */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int
fail(char *err, size_t errlen, int rc, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, strerror(-rc));
	return rc;
}

/* Opens the name exclusively.  A segment left under it can only be this
 * very process's own, from before an exec (same pid, same start time):
 * exec starts afresh, so it is replaced. */
static int
open_exclusive(const char *shm_name)
{
	int fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && shm_unlink(shm_name) == 0)
		fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int
mstat_segment_create(struct mstat_segment *seg, const char *name,
		     uint32_t slot_count, uint32_t writer_mode, char *err,
		     size_t errlen)
{
	const uint32_t classes = MSTAT_CLASS_COUNT;
	const uint64_t size = MSTAT_SEGMENT_SIZE(classes, slot_count);
	uint64_t start_time;
	struct timespec now;
	int fd, rc;

	memset(seg, 0, sizeof(*seg));
	rc = mstat_proc_start_time(0, &start_time);
	if (rc < 0)
		return fail(err, errlen, rc, "/proc/self/stat");
	rc = mstat_shm_name(seg->shm_name, sizeof(seg->shm_name), getpid(),
			    start_time);
	if (rc < 0)
		return fail(err, errlen, rc, "segment name");

	fd = open_exclusive(seg->shm_name);
	if (fd < 0)
		return fail(err, errlen, fd, "/dev/shm");
	/* The umask may have narrowed the mode; readers demand exactly 0600. */
	if (fchmod(fd, 0600) < 0) {
		rc = -errno;
		goto unlink;
	}
	/* posix_fallocate returns the error rather than setting errno. */
	rc = -posix_fallocate(fd, 0, (off_t)size);
	if (rc < 0)
		goto unlink;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto unlink;
	}
	close(fd);

	/* Fresh pages are zero: slots, counters and epochs start at 0. */
	struct mstat_shm_header *h = p;
	h->version_major = MSTAT_SHM_VERSION_MAJOR;
	h->version_minor = MSTAT_SHM_VERSION_MINOR;
	h->header_size = sizeof(*h);
	h->segment_size = size;
	h->class_count = classes;
	h->row_counters = MSTAT_ROW_COUNTERS;
	h->classes_offset = MSTAT_CLASSES_OFFSET;
	h->slots_offset = MSTAT_SLOTS_OFFSET(classes);
	h->slot_size = MSTAT_SLOT_SIZE(classes);
	h->slot_count = slot_count;
	h->writer_mode = writer_mode;
	h->pid = getpid();
	h->uid = geteuid();
	h->start_time = start_time;
	clock_gettime(CLOCK_REALTIME, &now);
	h->created_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	strncpy(h->name, name, sizeof(h->name) - 1);
	uint64_t *max_size = (uint64_t *)((char *)p + h->classes_offset);
	for (uint32_t c = 0; c < classes; c++)
		max_size[c] = mstat_class_max_size(c);
	atomic_store_explicit(&h->state, MSTAT_STATE_RUNNING, memory_order_relaxed);
	/* Slot 0, the shared slot, is always in use. */
	atomic_store_explicit(&h->slots_used, 1, memory_order_relaxed);

	seg->hdr = h;
	seg->size = size;
	return 0;

unlink:
	shm_unlink(seg->shm_name);
	close(fd);
	return fail(err, errlen, rc, seg->shm_name);
}

void
mstat_segment_publish(struct mstat_segment *seg)
{
	/* (P) release: the identity and the counters folded in before are
	 * complete when a reader's acquire load finds the magic. */
	atomic_store_explicit(&seg->hdr->magic, MSTAT_SHM_MAGIC, memory_order_release);
}

void
mstat_segment_retire(struct mstat_segment *seg, bool unlink_name)
{
	struct timespec now;

	if (!seg->hdr)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	atomic_store_explicit(&seg->hdr->exit_ns,
			      (uint64_t)now.tv_sec * 1000000000u +
				      (uint64_t)now.tv_nsec,
			      memory_order_relaxed);
	atomic_store_explicit(&seg->hdr->state, MSTAT_STATE_EXITING,
			      memory_order_release);
	if (unlink_name)
		shm_unlink(seg->shm_name);
}

void
mstat_segment_forget(struct mstat_segment *seg)
{
	if (seg->hdr)
		munmap(seg->hdr, seg->size);
	memset(seg, 0, sizeof(*seg));
}
