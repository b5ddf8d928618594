/* SPDX-License-Identifier: MIT */
/*
 * test_memory.c - resident memory in parts (core/memory.h): the parts of
 * known findings, to the byte; that they add up whatever was found; the
 * parsers of /proc's status, statm and maps; and a look at a child of
 * this process, without the library, whose heap is known, and at one
 * that maps a file whose path is longer than a maps line's buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/memory.h"
#include "shm/procfs.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * KIB)

static uint64_t
sum(const struct mstat_memory *m)
{
	uint64_t s = 0;

	for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++)
		s += m->part[p];
	return s;
}

/* A finding behind glibc: 100 MiB anonymous, 10 MiB of files, 1 MiB of
 * shared memory of which the segment is 56 KiB; the pool's own part 28
 * KiB; a heap of 60 MiB resident and two chunks of 8 MiB + 4 KiB, each
 * resident in full. */
static struct mstat_memory_found
glibc_found(void)
{
	struct mstat_memory_found f = {
		.status = { .rss = 111 * MIB, .anon = 100 * MIB, .file = 10 * MIB,
			    .shmem = 1 * MIB },
		.source = MSTAT_MEMORY_GLIBC,
		.segment = 56 * KIB,
		.own = 28 * KIB,
		.heap = 60 * MIB,
		.chunks = 2,
		.chunk_bytes = 2 * (8 * MIB + 4 * KIB),
		.chunk_resident = 2 * (8 * MIB + 4 * KIB),
	};
	f.alloc.allocator = MSTAT_ALLOCATOR_GLIBC;
	return f;
}

static void
test_glibc_parts(void **state)
{
	struct mstat_memory_found f = glibc_found();
	struct mstat_memory m;
	(void)state;

	/* 30 MiB live in 1002 blocks: the chunks' usable bytes, and 1000
	 * blocks of the arenas. */
	uint64_t chunks_usable = 2 * (8 * MIB + 4 * KIB - 16);
	uint64_t live = chunks_usable + 30 * MIB - 16 * MIB;
	mstat_memory_split(&f, live, 1002, 7, &m);
	assert_int_equal(m.rss, 111 * MIB);
	assert_int_equal(m.time_ns, 7);
	assert_int_equal(m.source, MSTAT_MEMORY_GLIBC);
	assert_int_equal(m.part[MSTAT_MEMORY_FILE], 10 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_SHMEM], 1 * MIB - 56 * KIB);
	assert_int_equal(m.part[MSTAT_MEMORY_LIBRARY], 56 * KIB + 28 * KIB);
	/* The heap: 60 MiB and the chunks, within 100 MiB less the pool's. */
	uint64_t heap = 60 * MIB + 2 * (8 * MIB + 4 * KIB);
	assert_int_equal(m.part[MSTAT_MEMORY_NOT_HEAP], 100 * MIB - 28 * KIB - heap);
	assert_int_equal(m.part[MSTAT_MEMORY_LIVE], live);
	/* Headers: 16 bytes for each chunk, 8 for each other block. */
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD], 2 * 16 + 1000 * 8);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_FREE],
			 60 * MIB - (live - chunks_usable) - 1000 * 8);
	assert_int_equal(m.live_not_resident, 0);
	assert_int_equal(sum(&m), m.rss);
}

/* Live bytes the heap cannot hold (a chunk never written, swapped
 * pages): live is what it holds, the rest not resident; nothing is free
 * and no part goes below 0. */
static void
test_live_beyond_the_heap(void **state)
{
	struct mstat_memory_found f = glibc_found();
	struct mstat_memory m;
	(void)state;

	/* One chunk of 256 MiB, one page of it resident. */
	f.chunks = 1;
	f.chunk_bytes = 256 * MIB;
	f.chunk_resident = 4 * KIB;
	f.heap = 1 * MIB;
	mstat_memory_split(&f, 256 * MIB - 16 + 2 * MIB, 3, 0, &m);
	assert_int_equal(m.part[MSTAT_MEMORY_LIVE], (4 * KIB - 16) + 1 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_FREE], 0);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD], 16);
	assert_int_equal(m.live_not_resident,
			 256 * MIB - 16 + 2 * MIB - m.part[MSTAT_MEMORY_LIVE]);
	assert_int_equal(sum(&m), m.rss);
}

/* jemalloc's figures: its resident estimate is the heap, no more than
 * the anonymous memory there is; its metadata is its overhead. */
static void
test_allocator_parts(void **state)
{
	struct mstat_memory_found f = glibc_found();
	struct mstat_memory m;
	(void)state;

	f.source = MSTAT_MEMORY_ALLOCATOR;
	f.alloc.allocator = MSTAT_ALLOCATOR_JEMALLOC;
	f.alloc.answered = true;
	f.alloc.answer_ns = 99;
	f.alloc.resident = 80 * MIB;
	f.alloc.metadata = 3 * MIB;
	mstat_memory_split(&f, 20 * MIB, 5, 0, &m);
	assert_int_equal(m.allocator_ns, 99);
	assert_int_equal(m.part[MSTAT_MEMORY_LIVE], 20 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD], 3 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_FREE], 57 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_NOT_HEAP], 20 * MIB - 28 * KIB);
	assert_int_equal(sum(&m), m.rss);
	/* It says more than there is: all the anonymous memory is heap. */
	f.alloc.resident = 500 * MIB;
	mstat_memory_split(&f, 20 * MIB, 5, 0, &m);
	assert_int_equal(m.part[MSTAT_MEMORY_NOT_HEAP], 0);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_FREE],
			 100 * MIB - 28 * KIB - 23 * MIB);
	assert_int_equal(sum(&m), m.rss);
}

/* Not told apart: the live bytes as far as anonymous memory holds them,
 * the rest not heap. */
static void
test_none_parts(void **state)
{
	struct mstat_memory_found f = glibc_found();
	struct mstat_memory m;
	(void)state;

	f.source = MSTAT_MEMORY_NONE;
	mstat_memory_split(&f, 30 * MIB, 5, 0, &m);
	assert_int_equal(m.part[MSTAT_MEMORY_LIVE], 30 * MIB);
	assert_int_equal(m.part[MSTAT_MEMORY_ALLOCATOR_FREE], 0);
	assert_int_equal(m.part[MSTAT_MEMORY_NOT_HEAP], 70 * MIB - 28 * KIB);
	mstat_memory_split(&f, 300 * MIB, 5, 0, &m);
	assert_int_equal(m.part[MSTAT_MEMORY_LIVE], 100 * MIB - 28 * KIB);
	assert_int_equal(m.part[MSTAT_MEMORY_NOT_HEAP], 0);
	assert_int_equal(m.live_not_resident, 200 * MIB + 28 * KIB);
	assert_int_equal(sum(&m), m.rss);
}

/* A figure drawn at random: mostly up to 512 MiB, one in five anything. */
static uint64_t
draw(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x % 5 == 0 ? *x : *x % (512 * MIB);
}

/* Whatever a look found, and whatever the counters say, the parts add up
 * to rss and none wraps: findings drawn at random, each figure anywhere
 * from 0 to far more than there is. */
static void
test_parts_add_up(void **state)
{
	uint64_t x = 88172645463325252u;
	(void)state;

#define DRAW() draw(&x)
	for (int i = 0; i < 200000; i++) {
		struct mstat_memory_found f = {
			.status = { .anon = DRAW(), .file = DRAW() % (64 * MIB),
				    .shmem = DRAW() % (64 * MIB) },
			.source = (enum mstat_memory_source)(i % MSTAT_MEMORY_SOURCE_COUNT),
			.segment = DRAW(), .own = DRAW(), .heap = DRAW(),
			.chunks = DRAW() % 100, .chunk_bytes = DRAW(),
			.chunk_resident = DRAW(),
		};
		f.status.anon %= UINT64_C(1) << 50;
		f.status.rss = f.status.anon + f.status.file + f.status.shmem;
		if (f.chunk_bytes < 16 * f.chunks)
			f.chunk_bytes = 16 * f.chunks;
		f.alloc.resident = DRAW();
		f.alloc.metadata = DRAW();
		struct mstat_memory m;
		mstat_memory_split(&f, DRAW(), DRAW(), 0, &m);
		uint64_t s = 0;
		for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++) {
			assert_true(m.part[p] <= m.rss);
			s += m.part[p];
		}
		assert_int_equal(s, m.rss);
		assert_int_equal(m.rss, f.status.rss);
	}
#undef DRAW
}

static void
test_parsers(void **state)
{
	struct mstat_proc_rss r;
	struct mstat_proc_map m;
	char line[256];
	(void)state;

	assert_int_equal(mstat_procfs_rss_parse(
		"Name:\tx\nVmRSS:\t    3580 kB\nRssAnon:\t     424 kB\n"
		"RssFile:\t    3128 kB\nRssShmem:\t      28 kB\n", &r), 0);
	assert_int_equal(r.rss, 3580 * KIB);
	assert_int_equal(r.anon, 424 * KIB);
	assert_int_equal(r.file, 3128 * KIB);
	assert_int_equal(r.shmem, 28 * KIB);
	/* A zombie's status has none of them. */
	assert_int_equal(mstat_procfs_rss_parse("Name:\tx\nState:\tZ\n", &r), -EPROTO);
	assert_int_equal(mstat_procfs_rss_parse("VmRSS:\t12 MB\nRssAnon:\t1 kB\n"
						"RssFile:\t1 kB\nRssShmem:\t1 kB\n", &r),
			 -EPROTO);

	strcpy(line, "7f336adc0000-7f336adc3000 rw-p 00000000 00:00 0 ");
	assert_int_equal(mstat_procfs_map_parse(line, &m), 0);
	assert_true(m.start == 0x7f336adc0000u && m.end == 0x7f336adc3000u);
	assert_string_equal(m.perms, "rw-p");
	assert_string_equal(m.name, "");
	assert_int_equal(m.ino, 0);
	strcpy(line, "7f33626ad000-7f3368722000 rw-s 00000000 00:1b 1302      "
		     "                 /dev/shm/mstat.24446.169892");
	assert_int_equal(mstat_procfs_map_parse(line, &m), 0);
	assert_int_equal(m.dev_major, 0);
	assert_int_equal(m.dev_minor, 0x1b);
	assert_int_equal(m.ino, 1302);
	assert_string_equal(m.name, "/dev/shm/mstat.24446.169892");
	strcpy(line, "564c57a52000-564c57b9c000 rw-p 00000000 00:00 0    [heap]");
	assert_int_equal(mstat_procfs_map_parse(line, &m), 0);
	assert_string_equal(m.name, "[heap]");
	strcpy(line, "5000-6000 r-xp 00001000 fe:00 10953833   /a path/with spaces");
	assert_int_equal(mstat_procfs_map_parse(line, &m), 0);
	assert_int_equal(m.offset, 0x1000);
	assert_int_equal(m.dev_major, 0xfe);
	assert_string_equal(m.name, "/a path/with spaces");
	/* Not lines of maps. */
	static const char *const bad[] = {
		"", "5000", "6000-5000 rw-p 0 00:00 0", "5000-6000 rw 0 00:00 0",
		"5000-6000 rw-p 0 0000 0", "5000-6000 rw-p 0 00:00 x",
		"10000000000000000-10000000000000001 rw-p 0 00:00 0",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		assert_int_equal(mstat_procfs_map_parse(line, &m), -EPROTO);
	}
	uint64_t res, shared;
	assert_int_equal(mstat_procfs_statm(getpid(), &res, &shared), 0);
	assert_true(res > 0 && shared <= res);
	assert_int_equal(mstat_procfs_statm(2000000001, &res, &shared), -ENOENT);
}

/* Skips the test where malloc is not glibc's. */
static void
needs_glibc_malloc(void)
{
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload")) {
		skip(); /* valgrind's malloc, not glibc's */
	}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	skip(); /* the sanitizer's malloc */
#endif
}

/*
 * A child of this process, glibc's malloc under it (no library, no
 * segment), that has made its memory with make(arg) and waits to be
 * killed (and dies with this test, should it fail): its pid.
 */
static pid_t
child(void (*make)(int), int arg)
{
	int ready[2];
	char c;

	needs_glibc_malloc();
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		make(arg);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

static void
end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* 8 MiB of its own mapping, written, then 4000 blocks of 1000 bytes and
 * one of 2 MiB, written. */
static void
mapping_and_heap(int unused)
{
	char *own = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)unused;
	if (own == MAP_FAILED)
		_exit(1);
	memset(own, 1, 8 * MIB);
	for (int i = 0; i < 4000; i++)
		memset(malloc(1000), 2, 1000);
	memset(malloc(2 * MIB), 3, 2 * MIB);
}

/*
 * A look at a child of this process, glibc's malloc under it:
 * mapping_and_heap(): the brk heap and the chunk are found, the mapping
 * is not the heap's.
 */
static void
test_look_at_a_child(void **state)
{
	(void)state;
	pid_t pid = child(mapping_and_heap, 0);

	struct mstat_memory_where w = { .large_objects = 1 };
	struct mstat_memory_found f;
	w.alloc.allocator = MSTAT_ALLOCATOR_GLIBC;
	assert_int_equal(mstat_memory_look(pid, &w, &f), 0);
	assert_int_equal(f.source, MSTAT_MEMORY_GLIBC);
	assert_int_equal(f.chunks, 1);
	assert_int_equal(f.chunk_bytes, 2 * MIB + 4 * KIB);
	assert_int_equal(f.chunk_resident, 2 * MIB + 4 * KIB);
	assert_true(f.heap >= 4000 * 1008 && f.heap < 4000 * 1008 + 1 * MIB);
	struct mstat_memory m;
	mstat_memory_split(&f, 4000 * 1000 + 2 * MIB, 4001, 0, &m);
	assert_true(m.part[MSTAT_MEMORY_NOT_HEAP] >= 8 * MIB);
	assert_true(m.part[MSTAT_MEMORY_NOT_HEAP] < 8 * MIB + 2 * MIB);
	assert_int_equal(sum(&m), m.rss);

	/* Another allocator's memory is not looked for. */
	w.alloc.allocator = MSTAT_ALLOCATOR_OTHER;
	assert_int_equal(mstat_memory_look(pid, &w, &f), 0);
	assert_int_equal(f.source, MSTAT_MEMORY_NONE);
	assert_int_equal(f.heap + f.chunks, 0);
	end_child(pid);
	/* Gone: nothing to read. */
	assert_int_equal(mstat_memory_look(pid, &w, &f), -ENOENT);
}

/* Makes a file 40 directories of 250 bytes down in `top` (10,000 bytes of
 * path, more than a maps line's buffer holds), a page long: its fd. */
static int
deep_file(const char *top)
{
	char name[251];
	int dir = open(top, O_RDONLY | O_DIRECTORY);

	memset(name, 'd', 250);
	name[250] = '\0';
	for (int i = 0; i < 40 && dir >= 0; i++) {
		int sub;
		if (mkdirat(dir, name, 0700) < 0 ||
		    (sub = openat(dir, name, O_RDONLY | O_DIRECTORY)) < 0)
			sub = -1;
		close(dir);
		dir = sub;
	}
	assert_true(dir >= 0);
	int fd = openat(dir, "f", O_RDWR | O_CREAT, 0600);
	close(dir);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	return fd;
}

/* The file `fd` mapped, and 4000 blocks of 1000 bytes, written. */
static void
file_and_heap(int fd)
{
	if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
		_exit(1);
	for (int i = 0; i < 4000; i++)
		memset(malloc(1000), 2, 1000);
}

/*
 * A process that maps a file whose path is longer than the iterator's
 * buffer: its line is taken with its name cut, the lines after it as
 * they are, and its heap still told apart.
 */
static void
test_long_path(void **state)
{
	char top[] = "/tmp/mstat-test-memory-XXXXXX";
	(void)state;

	needs_glibc_malloc();
	assert_non_null(mkdtemp(top));
	int fd = deep_file(top);
	pid_t pid = child(file_and_heap, fd);

	/* Every line read, the long one cut, none refused. */
	struct mstat_proc_maps maps;
	struct mstat_proc_map m;
	int rc, lines = 0, cut = 0;
	bool stack = false;
	assert_int_equal(mstat_procfs_maps_open(&maps, pid), 0);
	while ((rc = mstat_procfs_maps_next(&maps, &m)) > 0) {
		lines++;
		cut += strncmp(m.name, top, strlen(top)) == 0 &&
		       strlen(m.name) < 10000;
		stack |= strcmp(m.name, "[stack]") == 0;
	}
	mstat_procfs_maps_close(&maps);
	assert_int_equal(rc, 0);
	assert_int_equal(cut, 1);
	assert_true(stack && lines > 5);

	struct mstat_memory_where w = { 0 };
	struct mstat_memory_found f;
	w.alloc.allocator = MSTAT_ALLOCATOR_GLIBC;
	assert_int_equal(mstat_memory_look(pid, &w, &f), 0);
	assert_int_equal(f.source, MSTAT_MEMORY_GLIBC);
	assert_true(f.heap >= 4000 * 1008);
	end_child(pid);
	close(fd);
	char rm[64];
	snprintf(rm, sizeof(rm), "rm -rf %s", top);
	assert_int_equal(system(rm), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc_parts),
		cmocka_unit_test(test_live_beyond_the_heap),
		cmocka_unit_test(test_allocator_parts),
		cmocka_unit_test(test_none_parts),
		cmocka_unit_test(test_parts_add_up),
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_look_at_a_child),
		cmocka_unit_test(test_long_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
