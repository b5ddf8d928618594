/* SPDX-License-Identifier: MIT */
/*
 * test_layout.c - size classes, a slot's chunk rows as the writer counts
 * and the reader sums them, segment names, and every reason a reader
 * refuses a segment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include <cmocka.h>

#include "shm/layout.h"
#include "shm/name.h"
#include "shm/procfs.h"
#include "shm/section.h"
#include "shm/sizeclass.h"
#include "shm/sum.h"
#include "shm/validate.h"

static void
size_classes_cover_every_size(void **state)
{
	(void)state;
	assert_int_equal(mstat_size_class(0), 0);
	assert_int_equal(mstat_size_class(1), 1);
	assert_int_equal(mstat_size_class(16), 1);
	assert_int_equal(mstat_size_class(17), 2);
	assert_int_equal(mstat_size_class(256), 16);
	assert_int_equal(mstat_size_class(257), 17);
	assert_int_equal(mstat_size_class(320), 17);
	assert_int_equal(mstat_size_class(321), 18);
	assert_int_equal(mstat_size_class(UINT64_C(1) << 40), MSTAT_HUGE_CLASS - 1);
	assert_int_equal(mstat_size_class((UINT64_C(1) << 40) + 1), MSTAT_HUGE_CLASS);
	assert_int_equal(mstat_size_class(UINT64_MAX), MSTAT_HUGE_CLASS);
	assert_true(MSTAT_CLASS_COUNT <= MSTAT_MAX_CLASSES);

	/* Every class is the class of its own bounds, and only of them. */
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		uint64_t max = mstat_class_max_size(c);
		assert_int_equal(mstat_size_class(max), c);
		if (c + 1 < MSTAT_CLASS_COUNT)
			assert_int_equal(mstat_size_class(max + 1), c + 1);
		if (c > 0)
			assert_true(max > mstat_class_max_size(c - 1));
	}
	/* The table agrees with the computation wherever it is used. */
	for (uint64_t s = 0; s <= MSTAT_TABLE_MAX + 64; s++)
		assert_int_equal(mstat_size_class(s), mstat_size_class_computed(s));
	/* Exhaustively over small sizes, and at each power of two around. */
	for (uint64_t s = 1; s < 70000; s++) {
		unsigned c = mstat_size_class(s);
		assert_true(s <= mstat_class_max_size(c));
		assert_true(s > mstat_class_max_size(c - 1));
	}
	for (unsigned lg = 8; lg < 64; lg++)
		for (int d = -1; d <= 1; d++) {
			uint64_t s = (UINT64_C(1) << lg) + (uint64_t)d;
			unsigned c = mstat_size_class(s);
			assert_true(s <= mstat_class_max_size(c));
			assert_true(s > mstat_class_max_size(c - 1));
		}
}

static void
names_round_trip_and_reject_garbage(void **state)
{
	char buf[MSTAT_SHM_NAME_MAX];
	pid_t pid;
	uint64_t st;

	(void)state;
	assert_int_equal(mstat_shm_name(buf, sizeof(buf), 4242, 987654321, 0), 20);
	assert_string_equal(buf, "mstat.4242.987654321");
	assert_int_equal(mstat_shm_parse_name(buf, &pid, &st), 0);
	assert_int_equal(pid, 4242);
	assert_int_equal(st, 987654321);
	assert_int_equal(mstat_shm_name(buf, 8, 4242, 1, 0), -ENAMETOOLONG);
	/* The names a creator falls back to when the first is taken. */
	assert_int_equal(mstat_shm_name(buf, sizeof(buf), 4242, 987654321, 7), 22);
	assert_string_equal(buf, "mstat.4242.987654321.7");
	assert_int_equal(mstat_shm_parse_name(buf, &pid, &st), 0);
	assert_int_equal(pid, 4242);
	assert_int_equal(st, 987654321);
	/* And then to a random one, which nobody can take first: the
	 * longest name fits. */
	assert_true(mstat_shm_name(buf, sizeof(buf), INT32_MAX, UINT64_MAX,
				   UINT64_MAX) > 0);
	assert_string_equal(buf, "mstat.2147483647.18446744073709551615."
				 "18446744073709551615");
	assert_int_equal(mstat_shm_parse_name(buf, &pid, &st), 0);
	assert_int_equal(pid, INT32_MAX);
	assert_int_equal(st, UINT64_MAX);

	const char *bad[] = {
		"mstat.", "mstat.1", "mstat.1.", "mstat..1", "mstat.0.1",
		"mstat.01.1", "mstat.1.01", "mstat.-1.1", "mstat.1.2.0",
		"mstat.1.2.18446744073709551616", "mstat.1.2.01", "mstat.1.2.3.4", "mstat.1.2.",
		"mstat.1.2x", "mstat.99999999999.1", "mstat.1.99999999999999999999",
		"xstat.1.2", "mstat.1.2/../x", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mstat_shm_parse_name(bad[i], &pid, &st), -EINVAL);

	assert_int_equal(mstat_procfs_start_time(0, &st), 0);
	assert_true(st > 0);
	uint64_t st2;
	assert_int_equal(mstat_procfs_start_time(getpid(), &st2), 0);
	assert_int_equal(st, st2);
}

/* Every process of /proc, a batch of `max` at a time, in `pids` (room
 * for `cap`): how many. */
static size_t
list_procs(size_t max, pid_t *pids, size_t cap)
{
	struct mstat_proc_iter it;
	struct mstat_proc_entry e[256];
	size_t n = 0;
	long got;

	assert_int_equal(mstat_procfs_iter_open(&it), 0);
	while ((got = mstat_procfs_iter_next(&it, e, max)) > 0) {
		assert_true((size_t)got <= max);
		for (long i = 0; i < got; i++) {
			assert_true(n < cap);
			assert_true(e[i].ino != 0);
			pids[n++] = e[i].pid;
		}
	}
	assert_int_equal(got, 0);
	mstat_procfs_iter_close(&it);
	return n;
}

/* The processes of /proc come in batches of any size, across the reads
 * of the directory (more processes than one read holds), each once: a
 * thousand children, waiting, are in every listing, and this one. */
static void
processes_are_listed_once_in_batches_of_any_size(void **state)
{
	enum { CHILDREN = 1000, CAP = 1 << 16 };
	static pid_t kids[CHILDREN], pids[CAP];
	int fds[2];
	const size_t sizes[] = { 1, 7, 255, 256 };

	(void)state;
	assert_int_equal(pipe(fds), 0);
	for (int i = 0; i < CHILDREN; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			char c;
			close(fds[1]);
			_exit(read(fds[0], &c, 1) < 0); /* until the parent closes */
		}
	}
	close(fds[0]);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = list_procs(sizes[k], pids, CAP), found = 0;
		bool self = false;
		for (size_t i = 0; i < n; i++) {
			/* In pid order, as /proc lists them: each once. */
			assert_true(i == 0 || pids[i] > pids[i - 1]);
			self |= pids[i] == getpid();
		}
		for (int i = 0; i < CHILDREN; i++)
			for (size_t j = 0; j < n; j++)
				found += pids[j] == kids[i];
		assert_true(self);
		assert_int_equal(found, CHILDREN);
	}
	close(fds[1]);
	for (int i = 0; i < CHILDREN; i++)
		assert_int_equal(waitpid(kids[i], NULL, 0), kids[i]);
}

/* Where this process lives, read at once, is what its links say. */
static void
a_process_place_is_its_namespaces_and_root(void **state)
{
	struct mstat_proc_place pl;
	struct stat mnt, pidns, root;

	(void)state;
	assert_int_equal(stat("/proc/self/ns/mnt", &mnt), 0);
	assert_int_equal(stat("/proc/self/ns/pid", &pidns), 0);
	assert_int_equal(stat("/proc/self/root", &root), 0);
	assert_int_equal(mstat_procfs_place(0, &pl), 0);
	assert_int_equal(pl.mnt_ns, mnt.st_ino);
	assert_int_equal(pl.pid_ns, pidns.st_ino);
	assert_int_equal(pl.root_dev, root.st_dev);
	assert_int_equal(pl.root_ino, root.st_ino);
	assert_int_equal(pl.mount_id, 0);
	assert_int_equal(mstat_procfs_place(0x7ffffffe, &pl), -ENOENT);
}

/* A file of `text`, open at its start: for what reads /proc/stat. */
static int
file_of(const char *text)
{
	char path[] = "/tmp/mstat-test-stat-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* The boot time is the "btime" line of /proc/stat, wherever it is: after
 * a line far longer than what is read at once, cut across two reads at
 * any byte, first, or not there. */
static void
boot_time_is_the_btime_line(void **state)
{
	static char text[20000];
	(void)state;

	for (size_t pad = 4000; pad < 4120; pad++) {
		size_t n = (size_t)snprintf(text, sizeof(text), "cpu 1 2 3\nintr ");
		memset(text + n, '7', pad);
		snprintf(text + n + pad, sizeof(text) - n - pad,
			 "\nctxt 5\nbtime 1795713570\nprocesses 9\n");
		int fd = file_of(text);
		assert_int_equal(mstat_procfs_boot_ns_fd(fd),
				 UINT64_C(1795713570) * 1000000000u);
		close(fd);
	}
	memset(text, '7', 15000);
	memcpy(text, "intr ", 5);
	snprintf(text + 15000, sizeof(text) - 15000, "\nbtime 42\n");
	int fd = file_of(text);
	assert_int_equal(mstat_procfs_boot_ns_fd(fd), UINT64_C(42) * 1000000000u);
	close(fd);
	fd = file_of("btime 7\ncpu 1\n");
	assert_int_equal(mstat_procfs_boot_ns_fd(fd), UINT64_C(7) * 1000000000u);
	close(fd);
	fd = file_of("cpu 1\nbtimes 7\nxbtime 8\nbtime 9");
	assert_int_equal(mstat_procfs_boot_ns_fd(fd), UINT64_C(9) * 1000000000u);
	close(fd);
	fd = file_of("cpu 1\nxbtime 8\n");
	assert_int_equal(mstat_procfs_boot_ns_fd(fd), 0);
	close(fd);
	assert_true(mstat_procfs_boot_ns() > UINT64_C(1500000000) * 1000000000u);
}

/* A header as the writer makes it, for a file of the right size. */
static struct mstat_shm_header
good_header(void)
{
	struct mstat_shm_header h;

	memset(&h, 0, sizeof(h));
	atomic_init(&h.magic, MSTAT_SHM_MAGIC);
	mstat_header_geometry(&h, MSTAT_CLASS_COUNT, 8, MSTAT_STACKS, MSTAT_FRAMES,
			      MSTAT_MODULES);
	h.writer_mode = MSTAT_MODE_FENCED;
	h.pid = 42;
	h.uid = 1000;
	strcpy(h.name, "svc");
	return h;
}

#define REFUSED(h, size, rc, why)                                            \
	do {                                                                 \
		char err_[200] = "";                                         \
		assert_int_equal(mstat_validate_header(&(h), (size), 1000,   \
						       err_, sizeof(err_)),  \
				 (rc));                                      \
		assert_non_null(strstr(err_, (why)));                        \
	} while (0)

static void
headers_are_refused_for_every_reason(void **state)
{
	struct mstat_shm_header h = good_header();
	uint64_t size = h.segment_size;
	char err[200];

	(void)state;
	assert_int_equal(mstat_validate_header(&h, size, 1000, err, sizeof(err)), 0);

	h = good_header(); atomic_init(&h.magic, 0);
	REFUSED(h, size, -EAGAIN, "has no magic yet (0)");
	h = good_header(); atomic_init(&h.magic, 0x1234);
	REFUSED(h, size, -EPROTO, "bad magic");
	/* dense, liveness by pid */
	h = good_header(); h.version_major = 1; h.version_minor = 0;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 1.0; this reader reads 6.x");
	/* three generations by % 3 */
	h = good_header(); h.version_major = 2; h.version_minor = 0;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 2.0; this reader reads 6.x");
	/* no profile */
	h = good_header(); h.version_major = 3; h.version_minor = 0;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 3.0; this reader reads 6.x");
	/* no chunk rows */
	h = good_header(); h.version_major = 4; h.version_minor = 0;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 4.0; this reader reads 6.x");
	/* no lifetimes */
	h = good_header(); h.version_major = 5; h.version_minor = 2;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 5.2; this reader reads 6.x");
	h = good_header(); h.version_major = 7; h.version_minor = 0;
	REFUSED(h, size, -EPROTONOSUPPORT, "version 7.0");
	h = good_header(); h.version_minor = 7; /* newer minor: accepted */
	assert_int_equal(mstat_validate_header(&h, size, 1000, err, sizeof(err)), 0);
	h = good_header(); h.header_size = 16;
	REFUSED(h, size, -EPROTO, "header size");
	h = good_header(); h.header_size = MSTAT_PAGE + 1;
	REFUSED(h, size, -EPROTO, "header size");
	h = good_header(); h.row_counters = 3;
	REFUSED(h, size, -EPROTO, "counters per class");
	h = good_header(); h.class_count = 0;
	REFUSED(h, size, -EPROTO, "size classes");
	h = good_header(); h.class_count = MSTAT_MAX_CLASSES + 1;
	REFUSED(h, size, -EPROTO, "size classes");
	h = good_header(); h.slot_count = 1;
	REFUSED(h, size, -EPROTO, "slots (");
	h = good_header(); h.slot_count = MSTAT_SLOTS_MAX + 1;
	REFUSED(h, size, -EPROTO, "slots (");
	h = good_header(); h.slot_size -= 64;
	REFUSED(h, size, -EPROTO, "slot size");
	h = good_header(); h.classes_offset = 64;
	REFUSED(h, size, -EPROTO, "class table");
	h = good_header(); h.classes_offset = MSTAT_PAGE + 4;
	REFUSED(h, size, -EPROTO, "class table");
	h = good_header(); h.slots_offset = MSTAT_PAGE;
	REFUSED(h, size, -EPROTO, "slots at offset");
	h = good_header(); h.slots_offset += 8;
	REFUSED(h, size, -EPROTO, "slots at offset");
	h = good_header(); h.segment_size += 64;
	REFUSED(h, size, -EPROTO, "layout needs");
	h = good_header(); h.profile_offset += MSTAT_PAGE;
	REFUSED(h, size, -EPROTO, "profile at offset");
	h = good_header(); h.stack_capacity = 3;
	REFUSED(h, size, -EPROTO, "a profile of 3 stacks");
	h = good_header(); h.frame_capacity = MSTAT_FRAMES_LIMIT + 1;
	REFUSED(h, size, -EPROTO, "frames");
	h = good_header(); h.module_capacity = 0;
	REFUSED(h, size, -EPROTO, "0 modules");
	h = good_header(); h.profile_size -= MSTAT_PAGE;
	REFUSED(h, size, -EPROTO, "bytes; its layout needs");
	h = good_header();
	REFUSED(h, size - 64, -EPROTO, "its header says");
	h = good_header(); h.writer_mode = 3;
	REFUSED(h, size, -EPROTO, "writer mode");
	h = good_header(); h.pid = 0;
	REFUSED(h, size, -EPROTO, "pid 0");
	h = good_header(); h.uid = 0;
	REFUSED(h, size, -EPERM, "uid 0");
	h = good_header(); memset(h.name, 'x', sizeof(h.name));
	REFUSED(h, size, -EPROTO, "unterminated name");
}

static void
files_are_refused_for_every_reason(void **state)
{
	struct stat st;
	char err[200];

	(void)state;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 0600;
	st.st_uid = 1000;
	st.st_size = 1 << 20;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), 0);

	st.st_mode = S_IFLNK | 0777;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "symbolic link"));
	st.st_mode = S_IFDIR | 0700;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	st.st_mode = S_IFREG | 0600;
	st.st_uid = 0;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "owned by uid 0"));
	st.st_uid = 1000;
	st.st_mode = S_IFREG | 0644;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0644"));
	st.st_mode = S_IFREG | 0600;
	st.st_size = 100;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "smaller than a header"));
	/* Empty, whatever its mode: an older creator between making it and
	 * sizing it, to be looked at again; said as what it is. */
	st.st_size = 0;
	st.st_mode = S_IFREG | 0400;
	assert_int_equal(mstat_validate_stat(&st, 1000, err, sizeof(err)), -EAGAIN);
	assert_string_equal(err, "is empty");
}

static void
class_tables_out_of_order_are_refused(void **state)
{
	uint64_t t[MSTAT_CLASS_COUNT];
	char err[200];

	(void)state;
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		t[c] = mstat_class_max_size(c);
	assert_int_equal(mstat_validate_classes(t, MSTAT_CLASS_COUNT, err, sizeof(err)), 0);
	t[5] = t[4];
	assert_int_equal(mstat_validate_classes(t, MSTAT_CLASS_COUNT, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "out of order at class 5"));
}

/* Counter `k` of chunk row `chunk` in generation `gen` of the slot at
 * `slot`, in a segment of `classes` classes: for a segment the writer
 * cannot make (its chunk rows follow MSTAT_CLASS_COUNT classes). */
static _Atomic uint64_t *
chunk_counter(unsigned char *slot, uint32_t classes, unsigned gen, unsigned chunk,
	      unsigned k)
{
	return ((struct mstat_shm_slot *)slot)->acc +
	       (size_t)gen * MSTAT_GEN_COUNTERS(classes) + classes * MSTAT_ROW_COUNTERS +
	       chunk * MSTAT_CHUNK_ROW_COUNTERS + k;
}

static void
chunk_rows_fold_into_their_classes(void **state)
{
	static _Alignas(MSTAT_PAGE) unsigned char slots[2 * MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT)];
	static uint64_t sum[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];
	const uint32_t size = MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	const unsigned c32 = mstat_small_class[2], c1008 = mstat_small_class[63];

	struct mstat_shm_slot *s0 = (struct mstat_shm_slot *)slots,
			      *s1 = (struct mstat_shm_slot *)(slots + size);

	(void)state;
	/* Counted as the writer counts, from glibc's header words, flag bits
	 * and all (prev-in-use 1, not-main-arena 4).  Slot 1, generation 2:
	 * three 32-byte chunks made, one freed; one of 1008 bytes made.
	 * Slot 0: five of 32 in generation 1, which the sum of generation 2
	 * leaves out. */
	for (int i = 0; i < 3; i++)
		mstat_wsection_chunk(s1, 2, i ? 0x21 : 0x25, MSTAT_CHUNK_ALLOCS);
	mstat_wsection_chunk(s1, 2, 0x21, MSTAT_CHUNK_FREES);
	mstat_wsection_chunk(s1, 2, 0x3f1, MSTAT_CHUNK_ALLOCS);
	for (int i = 0; i < 5; i++)
		mstat_wsection_chunk(s0, 1, 0x21, MSTAT_CHUNK_ALLOCS);
	mstat_sum_generations(slots, size, 2, MSTAT_CLASS_COUNT, MSTAT_GEN_BIT(2),
			      sum);
	assert_int_equal(sum[c32][MSTAT_C_ALLOC_COUNT], 3);
	assert_int_equal(sum[c32][MSTAT_C_ALLOC_BYTES], 3 * 24);
	assert_int_equal(sum[c32][MSTAT_C_FREE_COUNT], 1);
	assert_int_equal(sum[c32][MSTAT_C_FREE_BYTES], 24);
	assert_int_equal(sum[c1008][MSTAT_C_ALLOC_COUNT], 1);
	assert_int_equal(sum[c1008][MSTAT_C_ALLOC_BYTES], 1000);
	assert_int_equal(sum[c1008][MSTAT_C_FREE_COUNT], 0);
	for (unsigned r = 0; r < MSTAT_ROWS(MSTAT_CLASS_COUNT); r++)
		if (r != c32 && r != c1008)
			for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
				assert_int_equal(sum[r][k], 0);

	/* Generations 1 and 2 in one sum, and none: slot 0's five too. */
	memset(sum, 0, sizeof(sum));
	mstat_sum_generations(slots, size, 2, MSTAT_CLASS_COUNT,
			      MSTAT_GEN_BIT(1) | MSTAT_GEN_BIT(2), sum);
	assert_int_equal(sum[c32][MSTAT_C_ALLOC_COUNT], 8);
	assert_int_equal(sum[c32][MSTAT_C_FREE_COUNT], 1);
	memset(sum, 0, sizeof(sum));
	mstat_sum_generations(slots, size, 2, MSTAT_CLASS_COUNT, 0, sum);
	assert_int_equal(sum[c32][MSTAT_C_ALLOC_COUNT], 0);

	/* A segment of 2 classes: its chunk rows of classes it does not
	 * have are left out, not added past the sum's 3 rows (here into
	 * rows the array has, for the test to see). */
	memset(slots, 0, sizeof(slots));
	memset(sum, 0, sizeof(sum));
	atomic_store(chunk_counter(slots, 2, 0, 1, MSTAT_CHUNK_ALLOCS), 7); /* class 1 */
	atomic_store(chunk_counter(slots, 2, 0, 63, MSTAT_CHUNK_ALLOCS), 9);
	mstat_sum_generations(slots, MSTAT_SLOT_SIZE(2), 1, 2, MSTAT_GEN_BIT(0),
			      sum);
	assert_int_equal(sum[1][MSTAT_C_ALLOC_COUNT], 7);
	for (unsigned r = MSTAT_ROWS(2); r < MSTAT_ROWS(MSTAT_CLASS_COUNT); r++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
			assert_int_equal(sum[r][k], 0);
}

/* The prior row: counted by a section, summed into the sum's last row
 * only for a slot that noted it, and never into a class. */
static void
prior_rows_are_summed_apart(void **state)
{
	static _Alignas(MSTAT_PAGE) unsigned char slots[2 * MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT)];
	static uint64_t sum[MSTAT_ROWS(MSTAT_CLASS_COUNT)][MSTAT_ROW_COUNTERS];
	const uint32_t size = MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	const unsigned prior = MSTAT_PRIOR_ROW(MSTAT_CLASS_COUNT);
	struct mstat_shm_slot *s0 = (struct mstat_shm_slot *)slots,
			      *s1 = (struct mstat_shm_slot *)(slots + size);

	(void)state;
	/* Slot 1: two frees of 40 and 24 bytes, a realloc of a 1000-byte
	 * block, in generations 0 and 3.  Slot 0: words written in its prior
	 * line without the note, which no writer makes: not read. */
	mstat_wsection_prior(s1, 0, MSTAT_P_FREES, 1);
	mstat_wsection_prior(s1, 0, MSTAT_P_FREE_BYTES, 40);
	mstat_wsection_prior(s1, 3, MSTAT_P_FREES, 1);
	mstat_wsection_prior(s1, 3, MSTAT_P_FREE_BYTES, 24);
	mstat_wsection_prior(s1, 3, MSTAT_P_REALLOCS, 1);
	mstat_wsection_prior(s1, 3, MSTAT_P_REALLOC_BYTES, 1000);
	atomic_store(s0->acc + MSTAT_PRIOR_OFFSET(MSTAT_CLASS_COUNT, 0), 5);
	mstat_sum_generations(slots, size, 2, MSTAT_CLASS_COUNT, MSTAT_GENS_ALL, sum);
	assert_int_equal(sum[prior][MSTAT_P_FREES], 2);
	assert_int_equal(sum[prior][MSTAT_P_FREE_BYTES], 64);
	assert_int_equal(sum[prior][MSTAT_P_REALLOCS], 1);
	assert_int_equal(sum[prior][MSTAT_P_REALLOC_BYTES], 1000);
	for (unsigned r = 0; r < prior; r++)
		for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
			assert_int_equal(sum[r][k], 0);
	/* Generation 3 alone. */
	memset(sum, 0, sizeof(sum));
	mstat_sum_generations(slots, size, 2, MSTAT_CLASS_COUNT, MSTAT_GEN_BIT(3), sum);
	assert_int_equal(sum[prior][MSTAT_P_FREES], 1);
	assert_int_equal(sum[prior][MSTAT_P_FREE_BYTES], 24);
	/* 6.2: the prior rows are past every generation, in the slot: a
	 * reader of 6.1 finds each of its counters as it was, 0 here. */
	for (unsigned g = 0; g < MSTAT_GENS; g++)
		mstat_wsection_prior(s1, g, MSTAT_P_REALLOC_BYTES, 7);
	for (size_t w = 0; w < (size_t)MSTAT_GENS * MSTAT_GEN_COUNTERS(MSTAT_CLASS_COUNT); w++)
		assert_int_equal(atomic_load(&s1->acc[w]), 0);
	assert_true((size_t)((const unsigned char *)(s1->acc + MSTAT_PRIOR_OFFSET(MSTAT_CLASS_COUNT, MSTAT_GENS)) -
			     (const unsigned char *)s1) <= size);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_classes_cover_every_size),
		cmocka_unit_test(chunk_rows_fold_into_their_classes),
		cmocka_unit_test(prior_rows_are_summed_apart),
		cmocka_unit_test(names_round_trip_and_reject_garbage),
		cmocka_unit_test(boot_time_is_the_btime_line),
		cmocka_unit_test(processes_are_listed_once_in_batches_of_any_size),
		cmocka_unit_test(a_process_place_is_its_namespaces_and_root),
		cmocka_unit_test(headers_are_refused_for_every_reason),
		cmocka_unit_test(files_are_refused_for_every_reason),
		cmocka_unit_test(class_tables_out_of_order_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
