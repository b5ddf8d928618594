/* SPDX-License-Identifier: MIT */
/* segment.c - the target's side of a segment; see segment.h. */
#include "lib/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "shm/owner.h"
#include "shm/procfs.h"
#include "lib/status.h"

static int
fail(char *err, size_t errlen, int rc, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, mstat_strerror(-rc));
	return rc;
}

/* MSTAT_SHM_DIR "/" name into path; no stdio (retire runs in _exit). */
static void
path_of(char *path, size_t len, const char *name)
{
	size_t d = sizeof(MSTAT_SHM_DIR) - 1, n = strlen(name);

	if (d + 1 + n + 1 > len)
		n = len - d - 2;
	memcpy(path, MSTAT_SHM_DIR "/", d + 1);
	memcpy(path + d + 1, name, n);
	path[d + 1 + n] = '\0';
}

/*
 * The segment's file is made without a name (O_TMPFILE), locked, sized,
 * given its pages and its header, and named only once published
 * (mstat_segment_name()): every file the library names holds a whole
 * segment with its magic, and a creator that dies while making one leaves
 * nothing behind, for nobody to guess about (docs/design.md, "Removing
 * dead segments").
 */
int
mstat_segment_create(struct mstat_segment *seg, const char *name,
		     uint32_t slot_count, uint32_t writer_mode,
		     uint64_t attached_ns, char *err, size_t errlen)
{
	const uint32_t classes = MSTAT_CLASS_COUNT;
	const uint64_t size = MSTAT_SEGMENT_SIZE(classes, slot_count);
	int fd, rc;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	seg->id.published = true;
	seg->id.pid = getpid();
	rc = mstat_procfs_start_time(0, &seg->id.start_time);
	if (rc < 0)
		return fail(err, errlen, rc, "/proc/self/stat");
	(void)mstat_procfs_pid_ns(&seg->id.pid_ns); /* 0 if unknown */

	fd = open(MSTAT_SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, -errno, MSTAT_SHM_DIR ": O_TMPFILE");
	/* Nobody can open it yet: the lock is taken before anyone could
	 * see the file unlocked.  The umask may have narrowed the mode;
	 * readers demand exactly 0600. */
	rc = mstat_owner_lock(fd);
	if (rc == 0 && (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)size) < 0))
		rc = -errno;
	if (rc < 0)
		goto fail;
	seg->fd = fd;
	seg->slots_offset = MSTAT_SLOTS_OFFSET(classes);
	seg->slot_size = MSTAT_SLOT_SIZE(classes);
	seg->slot_count = slot_count;
	/* Pages for the control page, the class table and slot 0; the rest
	 * stays a hole until a thread claims its slot. */
	if (fallocate(fd, 0, 0, (off_t)seg->slots_offset + seg->slot_size) < 0) {
		rc = -errno;
		goto fail;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}

	/* Fresh pages are zero: slots, counters and epochs start at 0. */
	struct mstat_shm_header *h = p;
	mstat_header_geometry(h, classes, slot_count, MSTAT_STACKS, MSTAT_FRAMES,
			      MSTAT_MODULES);
	h->writer_mode = writer_mode;
	h->pid = seg->id.pid;
	h->uid = geteuid();
	h->start_time = seg->id.start_time;
	h->created_ns = mstat_clock_ns(CLOCK_REALTIME);
	h->pid_ns = seg->id.pid_ns;
	h->attached_ns = attached_ns;
	strncpy(h->name, name, sizeof(h->name) - 1);
	uint64_t *max_size = (uint64_t *)((char *)p + MSTAT_CLASSES_OFFSET);
	for (uint32_t c = 0; c < classes; c++)
		max_size[c] = mstat_class_max_size(c);
	atomic_store_explicit(&h->state, MSTAT_STATE_RUNNING, memory_order_relaxed);
	/* Slot 0, the shared slot, is always in use. */
	atomic_store_explicit(&h->slots_used, 1, memory_order_relaxed);

	seg->hdr = h;
	seg->size = size;
	seg->pid = seg->id.pid;
	return 0;

fail:
	/* Unnamed: closing it is all it takes. */
	close(fd);
	seg->fd = -1;
	return fail(err, errlen, rc, MSTAT_SHM_DIR);
}

/* A suffix nobody can have guessed, never 0 (the plain name). */
static uint64_t
random_suffix(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
		/* Early boot: the clock and where the stack is, as good as
		 * it gets without blocking. */
		v = mstat_clock_ns(CLOCK_REALTIME) ^ ((uint64_t)(uintptr_t)&v << 16);
	}
	return v ? v : 1;
}

/* Links the segment's file, open at seg->fd, as `name` in `dirfd`: 0, or
 * -errno (-EEXIST: the name is taken).  Through /proc: linkat() with
 * AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH. */
static int
link_as(const struct mstat_segment *seg, int dirfd, const char *name)
{
	char path[sizeof("/proc/self/fd/") + 20];

	memcpy(path, "/proc/self/fd/", sizeof("/proc/self/fd/") - 1);
	mstat_utoa(path + sizeof("/proc/self/fd/") - 1, (uint64_t)seg->fd);
	return linkat(AT_FDCWD, path, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno
									 : 0;
}

/*
 * Names the segment: the first of mstat.<pid>.<start>[.<n>] that is free,
 * or held by a process that is gone (then it is removed first).  n runs 1
 * to 7, then is random: the names are easy to guess, and another user
 * may have made them all first (their files are never used nor removed).
 */
int
mstat_segment_name(struct mstat_segment *seg, char *err, size_t errlen)
{
	const unsigned max_tries = 4 * MSTAT_SHM_SUFFIXES;
	unsigned suffix = 0, tries = 0;
	int dirfd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = -EEXIST;

	if (dirfd < 0)
		return fail(err, errlen, -errno, MSTAT_SHM_DIR);
	while (tries++ < max_tries) {
		rc = mstat_shm_name(seg->shm_name, sizeof(seg->shm_name),
				    seg->id.pid, seg->id.start_time,
				    suffix < MSTAT_SHM_SUFFIXES ? suffix
								: random_suffix());
		if (rc < 0)
			break;
		rc = link_as(seg, dirfd, seg->shm_name);
		if (rc != -EEXIST)
			break;
		/* Ours from before an exec, a dead process's, or a live
		 * one's (another pid namespace, or squatted), or a file the
		 * library did not make.  A killed one's is left to the
		 * removers' grace: there are other names. */
		if (mstat_owner_reap_at(dirfd, seg->shm_name, geteuid(), &seg->id,
					MSTAT_KILLED_GRACE_MAX, NULL) != MSTAT_REAP_REMOVED)
			suffix++;
	}
	close(dirfd);
	if (rc < 0) {
		seg->shm_name[0] = '\0';
		return fail(err, errlen, rc, rc == -EEXIST
				     ? MSTAT_SHM_DIR ": every name of this process is taken"
				     : MSTAT_SHM_DIR);
	}
	seg->named = true;
	return 0;
}

int
mstat_segment_reserve(const struct mstat_segment *seg, uint32_t i)
{
	if (i >= seg->slot_count)
		return -ENOSPC;
	if (fallocate(seg->fd, 0, (off_t)seg->slots_offset + (off_t)i * seg->slot_size,
		      seg->slot_size) < 0)
		return -errno;
	return 0;
}

void
mstat_segment_publish(struct mstat_segment *seg)
{
	/* (P) release: the identity and the counters folded in before are
	 * complete when a reader's acquire load finds the magic. */
	atomic_store_explicit(&seg->hdr->magic, MSTAT_SHM_MAGIC, memory_order_release);
}

int
mstat_segment_reopen(const struct mstat_segment *seg)
{
	char path[sizeof(MSTAT_SHM_DIR) + MSTAT_SHM_NAME_MAX];

	path_of(path, sizeof(path), seg->shm_name);
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void
mstat_segment_retire(struct mstat_segment *seg, uint32_t cut)
{
	if (!seg->hdr)
		return;
	atomic_store_explicit(&seg->hdr->exit_ns, mstat_clock_ns(CLOCK_REALTIME),
			      memory_order_relaxed);
	atomic_store_explicit(&seg->hdr->exit_cut, cut, memory_order_relaxed);
	/* (X) release: a reader that sees EXITING sees exit_cut (the other
	 * threads have stopped counting before this; see retire()). */
	atomic_store_explicit(&seg->hdr->state, MSTAT_STATE_EXITING,
			      memory_order_release);
	/* We hold the owner lock: no remover can be unlinking it now. */
	char path[sizeof(MSTAT_SHM_DIR) + MSTAT_SHM_NAME_MAX];
	path_of(path, sizeof(path), seg->shm_name);
	if (seg->named)
		unlink(path);
}

void
mstat_segment_exec(struct mstat_segment *seg, bool execing)
{
	uint32_t from = execing ? MSTAT_STATE_RUNNING : MSTAT_STATE_EXECED;

	/* (X') relaxed, like every store of the state but EXITING's: a reader
	 * takes EXECED for what it says only once the owner lock is gone,
	 * and the exec() that drops it is a system call after this store
	 * (shm/reader.c).  A compare-exchange: an exit begun meanwhile in
	 * another thread has set EXITING, which stays. */
	atomic_compare_exchange_strong_explicit(
		&seg->hdr->state, &from,
		execing ? MSTAT_STATE_EXECED : MSTAT_STATE_RUNNING,
		memory_order_relaxed, memory_order_relaxed);
}

void
mstat_segment_ended(struct mstat_segment *seg)
{
	atomic_store_explicit(&seg->hdr->exit_ns, mstat_clock_ns(CLOCK_REALTIME),
			      memory_order_relaxed);
}

void
mstat_segment_let_go(struct mstat_segment *seg, struct mstat_mapping *map)
{
	if (seg->hdr) {
		/* None kept yet: a process that made its segment unmapped the
		 * one it inherited (start.c). */
		mstat_segment_unmap(map);
		map->addr = seg->hdr;
		map->size = seg->size;
	}
	seg->hdr = NULL;
	mstat_segment_forget(seg);
}

void
mstat_segment_unmap(struct mstat_mapping *map)
{
	if (map->addr)
		munmap(map->addr, map->size);
	map->addr = NULL;
}

void
mstat_segment_forget(struct mstat_segment *seg)
{
	if (seg->hdr)
		munmap(seg->hdr, seg->size);
	if (seg->fd >= 0)
		close(seg->fd);
	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
}
