/* SPDX-License-Identifier: MIT */
/*
 * segments.c - thousands of live segments, cheaply; see segments.h.
 */
#include "segments.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "name.h"
#include "owner.h"
#include "procfs.h"

#define SLOTS 4u

/* The first pages of a segment of this process with start time `start`:
 * header, class table, and slot 0 with counts in 8 classes. */
static void
image(unsigned char *buf, size_t len, uint64_t start, const char *name)
{
	struct mstat_shm_header *h = (struct mstat_shm_header *)buf;
	const uint32_t classes = MSTAT_CLASS_COUNT;

	memset(buf, 0, len);
	mstat_header_geometry(h, classes, SLOTS, MSTAT_STACKS, MSTAT_FRAMES,
			      MSTAT_MODULES);
	h->writer_mode = MSTAT_MODE_MEMBARRIER;
	h->pid = getpid();
	h->uid = geteuid();
	h->start_time = start;
	(void)mstat_pid_ns(&h->pid_ns);
	snprintf(h->name, sizeof(h->name), "%s", name);
	atomic_init(&h->state, MSTAT_STATE_RUNNING);
	atomic_init(&h->slots_used, 1);
	uint64_t *max = (uint64_t *)(buf + MSTAT_CLASSES_OFFSET);
	for (uint32_t c = 0; c < classes; c++)
		max[c] = mstat_class_max_size(c);
	struct mstat_shm_slot *s = (struct mstat_shm_slot *)(buf + h->slots_offset);
	for (unsigned c = 1; c <= 8; c++) {
		_Atomic uint64_t *row = s->acc + (size_t)c * MSTAT_ROW_COUNTERS;
		atomic_init(&row[MSTAT_C_ALLOC_COUNT], 100 * c);
		atomic_init(&row[MSTAT_C_ALLOC_BYTES], 1600 * c * c);
		atomic_init(&s->head.touched[0], atomic_load(&s->head.touched[0]) |
						 (UINT64_C(1) << c));
	}
	atomic_init(&h->magic, MSTAT_SHM_MAGIC);
}

int
mbench_segments_make(unsigned n, int *fds, const char *name)
{
	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	char path[128], seg[64];

	if (!buf)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t start = (UINT64_C(1) << 45) + i;
		mstat_shm_name(seg, sizeof(seg), getpid(), start, 0);
		snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, seg);
		image(buf, len, start, name);
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || mstat_owner_lock(fd) < 0 ||
		    pwrite(fd, buf, len, 0) != (ssize_t)len ||
		    ftruncate(fd, (off_t)MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS)) < 0) {
			fprintf(stderr, "mstat-bench: %s: %s\n", path,
				strerror(errno));
			free(buf);
			return -1;
		}
		fds[i] = fd;
	}
	free(buf);
	return 0;
}

int
mbench_segment_self(const char *name)
{
	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	char path[128], seg[64];
	uint64_t start;
	int fd = -1;

	if (!buf || mstat_proc_start_time(0, &start) < 0) {
		free(buf);
		return -1;
	}
	mstat_shm_name(seg, sizeof(seg), getpid(), start, 0);
	snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, seg);
	image(buf, len, start, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || mstat_owner_lock(fd) < 0 ||
	    pwrite(fd, buf, len, 0) != (ssize_t)len ||
	    ftruncate(fd, (off_t)MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS)) < 0) {
		fprintf(stderr, "mstat-bench: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(buf);
	return fd;
}

void
mbench_segments_remove(unsigned n, int *fds)
{
	char seg[64];

	for (unsigned i = 0; i < n; i++) {
		mstat_shm_name(seg, sizeof(seg), getpid(), (UINT64_C(1) << 45) + i, 0);
		shm_unlink(seg);
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

void
mbench_segments_note(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "note: %s\n", line);
}
