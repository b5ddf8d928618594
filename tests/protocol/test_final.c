/* SPDX-License-Identifier: MIT */
/*
 * test_final.c - the final read of a segment whose owner is gone: how the
 * process ended, and how many updates its death may have cut.
 *
 * Each segment is a memfd of this user, mode 0600, that nobody holds the
 * owner lock of: a reader finds its owner gone.  Slot 0 holds 7
 * allocations and 3 frees of one class; a slot whose seq is odd is what
 * a thread left inside an update.  Gone after EXITING, a process exited
 * if its exiting thread got to the end of its exit (MSTAT_EXIT_DONE), and
 * was killed during it if not, one update more cut if its death found
 * that thread inside one (MSTAT_EXIT_BUSY); a writer before 5.1, which
 * counted nothing once EXITING, exited.  EXECED, marked by an image
 * before its exec(), says so once the owner lock is gone, and nothing
 * while it is held: the exec() is under way, or failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>

#include "shm/layout.h"
#include <mstatshm.h>
#include "shm/owner.h"
#include "shm/reader.h"
#include "shm/section.h"
#include "shm/sizeclass.h"

#define SLOTS 3u
#define CLASS 40u

struct seg {
	int fd;
	unsigned char *map;
	size_t size;
	struct mstat_shm_header *h;
};

static struct mstat_shm_slot *
slot(struct seg *s, unsigned i)
{
	return (struct mstat_shm_slot *)(s->map + s->h->slots_offset +
					 (size_t)i * s->h->slot_size);
}

/* A segment of a process gone: state, exit_cut, exit_flags and minor as
 * given; slots 1 and 2 odd as asked. */
static struct seg
seg_new(uint32_t state, uint32_t exit_cut, uint32_t flags, uint16_t minor,
	unsigned odd)
{
	struct seg s;
	struct mstat_shm_header *h;

	s.size = MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS);
	s.fd = memfd_create("mstat-test-final", MFD_CLOEXEC);
	assert_true(s.fd >= 0);
	assert_int_equal(fchmod(s.fd, 0600), 0);
	assert_int_equal(ftruncate(s.fd, (off_t)s.size), 0);
	s.map = mmap(NULL, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
	assert_true(s.map != MAP_FAILED);
	s.h = h = (struct mstat_shm_header *)s.map;
	mstat_header_geometry(h, MSTAT_CLASS_COUNT, SLOTS, MSTAT_STACKS,
			      MSTAT_FRAMES, MSTAT_MODULES);
	h->version_minor = minor;
	h->writer_mode = MSTAT_MODE_FENCED;
	h->pid = getpid();
	h->uid = (uint32_t)geteuid();
	strcpy(h->name, "final");
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		((uint64_t *)(s.map + MSTAT_CLASSES_OFFSET))[c] = mstat_class_max_size(c);
	atomic_store(&h->slots_used, SLOTS);
	atomic_store(&h->state, state);
	atomic_store(&h->exit_cut, exit_cut);
	atomic_store(&h->exit_flags, flags);
	for (int i = 0; i < 7; i++)
		mstat_wsection_count(slot(&s, 0), i % MSTAT_GENS, CLASS,
				     MSTAT_C_ALLOC_COUNT, 100);
	for (int i = 0; i < 3; i++)
		mstat_wsection_count(slot(&s, 0), 2, CLASS, MSTAT_C_FREE_COUNT, 100);
	for (unsigned i = 1; i < SLOTS; i++)
		atomic_store(&slot(&s, i)->head.seq, i <= odd ? 5 : 4);
	atomic_store(&h->magic, MSTAT_SHM_MAGIC);
	return s;
}

/* The final read: state and cut; the counts, every time. */
static void
expect(struct seg *s, uint32_t state, uint32_t cut)
{
	struct mstat_reader *r;
	struct mstat_snapshot snap;
	char err[256] = "";

	assert_int_equal(mstat_reader_open_fd(&r, dup(s->fd), "final", err,
					      sizeof(err)), 0);
	assert_int_equal(mstat_reader_snapshot(r, &snap), 0);
	assert_int_equal(snap.state, state);
	assert_int_equal(snap.cut, cut);
	assert_int_equal(snap.classes[CLASS].alloc_count, 7);
	assert_int_equal(snap.classes[CLASS].alloc_bytes, 700);
	assert_int_equal(snap.classes[CLASS].free_count, 3);
	assert_int_equal(snap.threads, 0);
	mstat_reader_close(r);
	munmap(s->map, s->size);
	close(s->fd);
}

/* Killed before any exit: each slot still odd was cut inside an update. */
static void
test_killed(void **state)
{
	(void)state;
	struct seg s = seg_new(MSTAT_STATE_RUNNING, 0, 0, 1, 2);
	expect(&s, MSTAT_KILLED, 2);
	s = seg_new(MSTAT_STATE_RUNNING, 0, 0, 1, 0);
	expect(&s, MSTAT_KILLED, 0);
}

/* Exited: the exit ran to its end.  An odd seq then is a section that
 * saw the stop and added nothing; only exit_cut counts. */
static void
test_exited(void **state)
{
	(void)state;
	struct seg s = seg_new(MSTAT_STATE_EXITING, 0, MSTAT_EXIT_DONE, 1, 2);
	expect(&s, MSTAT_EXITED, 0);
	s = seg_new(MSTAT_STATE_EXITING, 1, MSTAT_EXIT_DONE, 1, 2);
	expect(&s, MSTAT_EXITED, 1);
}

/* Killed during the exit (its destructors, its handlers): between two
 * updates of the exiting thread, or inside one. */
static void
test_killed_exiting(void **state)
{
	(void)state;
	struct seg s = seg_new(MSTAT_STATE_EXITING, 0, 0, 1, 2);
	expect(&s, MSTAT_KILLED, 0);
	s = seg_new(MSTAT_STATE_EXITING, 0, MSTAT_EXIT_BUSY, 1, 0);
	expect(&s, MSTAT_KILLED, 1);
	s = seg_new(MSTAT_STATE_EXITING, 1, MSTAT_EXIT_BUSY, 1, 0);
	expect(&s, MSTAT_KILLED, 2);
	/* Done, then killed inside an update of what came after. */
	s = seg_new(MSTAT_STATE_EXITING, 0, MSTAT_EXIT_DONE | MSTAT_EXIT_BUSY, 1, 0);
	expect(&s, MSTAT_KILLED, 1);
}

/* A cut past the slots is bounded by them. */
static void
test_cut_bounded(void **state)
{
	(void)state;
	struct seg s = seg_new(MSTAT_STATE_EXITING, 1000, MSTAT_EXIT_BUSY, 0, 0);
	expect(&s, MSTAT_KILLED, SLOTS + 1);
}

/* An image that marked itself before its exec(): exec'd once its lock is
 * gone, running while it is held. */
static void
test_execed(void **state)
{
	(void)state;
	struct seg s = seg_new(MSTAT_STATE_EXECED, 0, 0, 1, 0);
	char path[64];
	struct mstat_reader *r;
	struct mstat_snapshot snap;
	char err[256] = "";

	/* The owner: another open file of the segment, holding the lock. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s.fd);
	int owner = open(path, O_RDWR | O_CLOEXEC);
	assert_true(owner >= 0);
	assert_int_equal(mstat_owner_lock(owner), 0);
	assert_int_equal(mstat_reader_open_fd(&r, dup(s.fd), "final", err,
					      sizeof(err)), 0);
	assert_int_equal(mstat_reader_snapshot(r, &snap), 0);
	assert_int_equal(snap.state, MSTAT_RUNNING);
	mstat_reader_close(r);
	close(owner);
	expect(&s, MSTAT_EXECED, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_killed),
		cmocka_unit_test(test_exited),
		cmocka_unit_test(test_killed_exiting),
		cmocka_unit_test(test_cut_bounded),
		cmocka_unit_test(test_execed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
