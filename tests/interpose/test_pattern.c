/* SPDX-License-Identifier: MIT */
/*
 * test_pattern.c - every interposed function, counted exactly.
 *
 * Each test takes a snapshot of the process's own counters, makes a known
 * pattern of calls, takes another, and demands that the difference be
 * exactly the pattern, per size class and counter, with the usable sizes
 * the allocator reports.  Between the two snapshots the test allocates
 * nothing else (the tally is static; a snapshot allocates nothing once the
 * first one has opened the reader).
 *
 * Linked with libmstatshm (the pkg-config way).  The same program runs
 * again with LD_PRELOAD="libmstatshm.so.0 libjemalloc.so.2" and with
 * tcmalloc; MSTAT_TEST_NEXT names the allocator that must then sit behind
 * the library, and the test checks that it really does.
 *
 * Allocations made before the library's constructor (from this program's
 * .preinit_array, which runs before any shared object's constructor) must
 * be in the counts too, and a snapshot of itself taken there, before any
 * segment exists, must already be exact.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/pool.h"
#include "tests/interpose/truth.h"

static struct truth t;
/* Sizes no allocator can give, hidden from the compiler's size checks. */
static volatile size_t huge = SIZE_MAX - 4096;
static volatile size_t half = SIZE_MAX / 2;
static struct mstat_snapshot s0, s1;

static void
snap(struct mstat_snapshot *s)
{
	int rc = self_snapshot(s);
	if (rc != 0)
		fail_msg("mstat_self_snapshot: %d (%s)", rc, mstat_self_status());
}

static void
begin(void)
{
	truth_clear(&t);
	snap(&s0);
}

static void
end(void)
{
	snap(&s1);
	assert_int_equal(truth_check(&s0, &s1, &t), 0);
}

/* ---- before the constructor ---- */

#define EARLY_SIZE 777777u /* a class nothing else here uses */
static int early_enabled = -1;
static size_t early_usable[3];
static int early_rc[2] = { 1, 1 };
static struct mstat_snapshot early_snap[2];

static void
before_the_library(int argc, char **argv, char **envp)
{
	(void)argc, (void)argv, (void)envp;
	static void *p[3]; /* p[1], p[2] stay allocated, reachable */

	early_enabled = mstat_self_enabled();
	early_rc[0] = mstat_self_snapshot(&early_snap[0]);
	for (int i = 0; i < 3; i++) {
		p[i] = malloc(EARLY_SIZE);
		early_usable[i] = p[i] ? malloc_usable_size(p[i]) : 0;
	}
	free(p[0]); /* p[1], p[2] stay: counted live */
	early_rc[1] = mstat_self_snapshot(&early_snap[1]);
}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(
	int, char **, char **) = before_the_library;

static void
test_before_constructor(void **state)
{
	(void)state;
	struct mstat_snapshot *s = &s0;

	snap(s);
	assert_int_equal(early_enabled, 0); /* really before the constructor */
	/* tcmalloc cannot size blocks before its initializer has run: the
	 * library then counts the requested size. */
	for (int i = 0; i < 3; i++)
		if (early_usable[i] == 0)
			early_usable[i] = EARLY_SIZE;
	assert_true(early_usable[0] >= EARLY_SIZE);
	unsigned c = mstat_size_class(early_usable[0]);
	assert_int_equal(mstat_size_class(early_usable[1]), c);
	assert_int_equal(s->classes[c].alloc_count, 3);
	assert_int_equal(s->classes[c].alloc_bytes,
			 early_usable[0] + early_usable[1] + early_usable[2]);
	assert_int_equal(s->classes[c].free_count, 1);
	assert_int_equal(s->classes[c].free_bytes, early_usable[0]);
	/* Read from process memory then: no segment, no epoch. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(early_rc[i], 0);
		assert_int_equal(early_snap[i].epoch, 0);
		assert_int_equal(early_snap[i].state, MSTAT_RUNNING);
		assert_int_equal(early_snap[i].class_count, MSTAT_CLASS_COUNT);
	}
	const struct mstat_counts *a = &early_snap[0].classes[c], *b = &early_snap[1].classes[c];
	assert_int_equal(b->alloc_count - a->alloc_count, 3);
	assert_int_equal(b->alloc_bytes - a->alloc_bytes,
			 early_usable[0] + early_usable[1] + early_usable[2]);
	assert_int_equal(b->free_count - a->free_count, 1);
	assert_int_equal(b->free_bytes - a->free_bytes, early_usable[0]);
}

/* ---- the family ---- */

static void
test_nothing_between(void **state)
{
	(void)state;
	begin();
	end();
}

static const size_t sizes[] = {
	0, 1, 8, 16, 17, 24, 25, 100, 200, 256, 257, 300, 1000, 4096, 5000,
	65536, 100000, 140000, 1u << 20, 3u << 20, 33u << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void
test_malloc_free(void **state)
{
	void *p[NSIZES];

	(void)state;
	begin();
	for (size_t i = 0; i < NSIZES; i++) {
		p[i] = malloc(sizes[i]);
		assert_non_null(p[i]);
		assert_true(malloc_usable_size(p[i]) >= sizes[i]);
		truth_alloc(&t, p[i], sizes[i]);
	}
	for (size_t i = 0; i < NSIZES; i += 2)
		truth_free_p(&t, p[i]);
	end();
	begin();
	for (size_t i = 1; i < NSIZES; i += 2)
		truth_free_p(&t, p[i]);
	end();
}

/* Everything freed: every class back where it was, to the byte. */
static void
test_live_returns_to_start(void **state)
{
	void *p[NSIZES * 4];

	(void)state;
	snap(&s0);
	for (size_t r = 0; r < 4; r++)
		for (size_t i = 0; i < NSIZES; i++)
			p[r * NSIZES + i] = r & 1 ? calloc(1, sizes[i])
						  : malloc(sizes[i] + r);
	for (size_t i = 0; i < NSIZES * 4; i++)
		p[i] = realloc(p[i], sizes[(i * 7) % NSIZES] + 1);
	for (size_t i = 0; i < NSIZES * 4; i++)
		free(p[i]);
	snap(&s1);
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		assert_int_equal(mstat_live_objects(&s1.classes[c]),
				 mstat_live_objects(&s0.classes[c]));
		assert_int_equal(mstat_live_bytes(&s1.classes[c]),
				 mstat_live_bytes(&s0.classes[c]));
	}
}

static void
test_failures_count_nothing(void **state)
{
	void *p;

	(void)state;
	begin();
	free(NULL);
	errno = 0;
	assert_null(malloc(huge));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(calloc(half, 4)); /* the product overflows */
	assert_int_equal(errno, ENOMEM);
	assert_null(calloc(1, huge));
	assert_int_equal(posix_memalign(&p, 3, 64), EINVAL);
	assert_int_equal(posix_memalign(&p, 64, huge), ENOMEM);
	assert_null(aligned_alloc(64, huge));
	assert_null(memalign(64, huge));
	assert_null(valloc(huge));
	errno = 0;
	assert_null(pvalloc(huge + 4000)); /* rounding up overflows */
	assert_int_equal(errno, ENOMEM);
	end();
}

static void
test_calloc_zeroes(void **state)
{
	unsigned char *p[4];

	(void)state;
	begin();
	p[0] = calloc(10, 10);
	p[1] = calloc(0, 7);
	p[2] = calloc(1000, 1000);
	p[3] = calloc(3, 33);
	truth_alloc(&t, p[0], 100);
	truth_alloc(&t, p[1], 0);
	truth_alloc(&t, p[2], 1000000);
	truth_alloc(&t, p[3], 99);
	for (size_t i = 0; i < 1000000; i += 4093)
		assert_int_equal(p[2][i], 0);
	for (int i = 0; i < 4; i++)
		truth_free_p(&t, p[i]);
	end();
}

/* realloc(p, n): the free of the old block and the allocation of the new. */
static void *
tally_realloc(void *p, size_t n)
{
	size_t old = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);

	if (q) {
		if (p)
			truth_free(&t, old);
		truth_alloc(&t, q, n);
	} else if (p && n == 0) {
		truth_free(&t, old); /* glibc: realloc(p, 0) frees p */
	}
	return q;
}

static void
test_realloc_cases(void **state)
{
	(void)state;
	begin();
	char *p = tally_realloc(NULL, 10); /* an allocation */
	assert_non_null(p);
	memcpy(p, "abcdefghi", 10);
	p = tally_realloc(p, 20);          /* grows, maybe in place */
	p = tally_realloc(p, 5000);        /* another class */
	p = tally_realloc(p, 300000);      /* mmapped with glibc */
	p = tally_realloc(p, 2000000);
	p = tally_realloc(p, 100);         /* shrinks */
	p = tally_realloc(p, 100);         /* the same size */
	assert_string_equal(p, "abcdefghi");
	assert_null(realloc(p, huge)); /* fails: p untouched */
	assert_string_equal(p, "abcdefghi");
	p = tally_realloc(p, 0);           /* frees, or a minimal block */
	if (p)
		truth_free_p(&t, p);
	end();
}

static void
test_reallocarray(void **state)
{
	(void)state;
	begin();
	void *p = reallocarray(NULL, 10, 30);
	truth_alloc(&t, p, 300);
	size_t old = malloc_usable_size(p);
	void *q = reallocarray(p, 1000, 30);
	assert_non_null(q);
	truth_free(&t, old);
	truth_alloc(&t, q, 30000);
	errno = 0;
	void *volatile same = q; /* gcc cannot know that q survives */
	assert_null(reallocarray(same, half, 3)); /* overflow: q stays */
	assert_int_equal(errno, ENOMEM);
	truth_free_p(&t, q);
	end();
}

static void
test_aligned(void **state)
{
	void *p[16];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int n = 0;

	(void)state;
	begin();
	for (size_t a = 16; a <= 65536; a *= 16) {
		assert_int_equal(posix_memalign(&p[n], a, 100), 0);
		assert_int_equal((uintptr_t)p[n] % a, 0);
		truth_alloc(&t, p[n++], 100);
		p[n] = aligned_alloc(a, 3 * a);
		assert_int_equal((uintptr_t)p[n] % a, 0);
		truth_alloc(&t, p[n++], 3 * a);
		p[n] = memalign(a, 1000);
		assert_int_equal((uintptr_t)p[n] % a, 0);
		truth_alloc(&t, p[n++], 1000);
	}
	p[n] = valloc(100);
	assert_int_equal((uintptr_t)p[n] % page, 0);
	truth_alloc(&t, p[n++], 100);
	p[n] = pvalloc(100);
	assert_int_equal((uintptr_t)p[n] % page, 0);
	assert_true(malloc_usable_size(p[n]) >= page);
	truth_alloc(&t, p[n++], 100);
	for (int i = 0; i < n; i++)
		truth_free_p(&t, p[i]);
	end();
}

/* ---- threads ---- */

/*
 * 20,000 allocations across 8 threads, made and freed between the two
 * snapshots; the threads then exit.  What the library does for itself
 * meanwhile must not show: a thread's first sample takes a stack with
 * libunwind, whose thread-local block glibc then allocates (and frees as
 * the thread exits).  Under MSTAT_SAMPLE_BYTES=1 every thread samples;
 * under MSTAT_SAMPLE_BYTES=0 none does.  The threads are made before the
 * first snapshot (making one allocates its thread's own blocks, which
 * are the program's), with small stacks, so that glibc keeps their
 * stacks, and what it allocated with them, when they are joined.
 */
#define PATTERN_THREADS 8
#define PATTERN_ALLOCS 20000
static pthread_barrier_t pattern_go;

static void *
pattern_thread(void *arg)
{
	static const size_t small[] = { 1, 16, 24, 40, 100, 200, 500, 1000, 3000 };
	const size_t n = sizeof(small) / sizeof(small[0]);
	uintptr_t id = (uintptr_t)arg;
	void *kept[64] = { 0 };

	pthread_barrier_wait(&pattern_go);
	for (unsigned k = 0; k < PATTERN_ALLOCS / PATTERN_THREADS; k++) {
		size_t size = small[(id * 7 + k) % n];
		void *p = k % 3 ? malloc(size) : calloc(1, size);
		if (!p)
			return (void *)1;
		truth_alloc(&t, p, size);
		if (kept[k % 64])
			truth_free_p(&t, kept[k % 64]);
		kept[k % 64] = p;
	}
	for (unsigned i = 0; i < 64; i++)
		if (kept[i])
			truth_free_p(&t, kept[i]);
	return NULL;
}

static void
test_threads(void **state)
{
	pthread_t th[PATTERN_THREADS];
	pthread_attr_t attr;

	(void)state;
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 256u << 10), 0);
	assert_int_equal(pthread_barrier_init(&pattern_go, NULL, PATTERN_THREADS + 1), 0);
	for (uintptr_t i = 0; i < PATTERN_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], &attr, pattern_thread,
						(void *)i), 0);
	begin();
	pthread_barrier_wait(&pattern_go);
	for (unsigned i = 0; i < PATTERN_THREADS; i++) {
		void *rc;
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	end();
	pthread_barrier_destroy(&pattern_go);
	pthread_attr_destroy(&attr);
}

/* ---- sampled blocks ---- */

/* Whether glibc's malloc is the next allocator: it keeps a sampled block
 * of more than a page where it made it (lib/sampled.h,
 * MSTAT_SAMPLE_IN_PLACE); the others' are moved to a page of their own. */
static bool
next_is_glibc(void)
{
	const char *want = getenv("MSTAT_TEST_NEXT");

	return !want || strcmp(want, "libc.so.6") == 0;
}

/* The word before block `p`, its allocator's header.  The address is made
 * from an integer: gcc's object-size tracking would call the read out of
 * bounds. */
static size_t
header_word(const void *p)
{
	return *(const size_t *)((uintptr_t)p - sizeof(size_t));
}

/* Whether sampled block `p` is in the library's pool (lib/pool.h): with
 * glibc, its header word is marked as the library's own. */
static bool
pooled(const void *p)
{
	return next_is_glibc() && (header_word(p) & MSTAT_OWN_MARK);
}

/*
 * Whether block `p`, of at most a page, was moved as the library moves a
 * sampled one: with glibc, into the pool, or, its class there being
 * full, to a chunk larger than a page, whose size is the header word
 * before the block (flags in the low 3 bits); with another allocator, to
 * a page-aligned block.
 */
static bool
moved_sample(const void *p)
{
	if (next_is_glibc())
		return pooled(p) || (header_word(p) & ~(size_t)7) > 4096;
	return (uintptr_t)p % 4096 == 0;
}

/*
 * Under MSTAT_SAMPLE_BYTES=1 every allocation is sampled (its countdown
 * is below 1 byte), so every test above ran on sampled blocks: moved to
 * a block of the next allocator's (moved_sample()), unless glibc's and
 * larger than a page.  This one checks that they were, and what a sampled
 * block must still do: keep its contents through realloc, be sized by
 * malloc_usable_size, be freed, all counted exactly.
 */
static void
test_sampled_blocks(void **state)
{
	(void)state;
	if (!getenv("MSTAT_TEST_SAMPLED"))
		skip();
	begin();
	unsigned char *p = malloc(100);
	assert_non_null(p);
	assert_true(moved_sample(p));
	assert_true(pooled(p) == next_is_glibc());
	assert_true(malloc_usable_size(p) >= 100);
	truth_alloc(&t, p, 100);
	memset(p, 0x5a, 100);
	truth_free(&t, malloc_usable_size(p));
	unsigned char *q = realloc(p, 50000);
	assert_non_null(q);
	if (!next_is_glibc())
		assert_int_equal((uintptr_t)q % 4096, 0);
	truth_alloc(&t, q, 50000);
	for (int i = 0; i < 100; i++)
		assert_int_equal(q[i], 0x5a);
	unsigned char *z = calloc(100, 30);
	assert_non_null(z);
	assert_true(moved_sample(z));
	assert_true(pooled(z) == next_is_glibc());
	truth_alloc(&t, z, 3000);
	for (int i = 0; i < 3000; i++)
		assert_int_equal(z[i], 0);
	truth_free_p(&t, z);
	truth_free_p(&t, q);
	end();
}

/*
 * Small sampled blocks fill the pool's pages densely (64 to a page here),
 * and every one of them is remembered.  More live sampled blocks of 2-4
 * KiB than the pool's class holds (512): the rest move to glibc's chunks
 * larger than a page.  Every block keeps its bytes and is counted
 * exactly.
 */
static void
test_pool_full(void **state)
{
	enum { N = 600 };
	static unsigned char *p[N];
	size_t in_pool = 0;

	(void)state;
	if (!getenv("MSTAT_TEST_SAMPLED") || !next_is_glibc())
		skip();
	begin();
	for (int i = 0; i < N; i++) {
		p[i] = malloc(40);
		assert_non_null(p[i]);
		assert_true(pooled(p[i]));
		truth_alloc(&t, p[i], 40);
	}
	for (int i = 0; i < N; i++)
		truth_free_p(&t, p[i]);
	for (int i = 0; i < N; i++) {
		p[i] = malloc(3000);
		assert_non_null(p[i]);
		assert_true(moved_sample(p[i]));
		in_pool += pooled(p[i]);
		memset(p[i], i & 0xff, 3000);
		truth_alloc(&t, p[i], 3000);
	}
	assert_true(in_pool > N / 2 && in_pool < N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(p[i][0], i & 0xff);
		assert_int_equal(p[i][2999], i & 0xff);
		truth_free_p(&t, p[i]);
	}
	end();
}

/*
 * A pool address that is no live sampled block (here, one freed twice) is
 * refused by free, realloc and malloc_usable_size, where glibc would be
 * handed a block it never made: nothing is counted, nothing crashes.
 * free is tried on both of its paths: the inline one, and the slow one a
 * fork child's first call takes, before the child has a slot of its own.
 */
static void
test_pool_refuses(void **state)
{
	(void)state;
	if (!getenv("MSTAT_TEST_SAMPLED") || !next_is_glibc())
		skip();
	unsigned char *p = malloc(100);
	assert_non_null(p);
	assert_true(pooled(p));
	begin();
	truth_free_p(&t, p);
	free(p);
	free(p); /* refused: not counted again, not handed to glibc */
	assert_int_equal(malloc_usable_size(p), 0);
	errno = 0;
	assert_null(realloc(p, 200));
	assert_int_equal(errno, EINVAL);
	end();
	int status;
	pid_t pid = fork();
	if (pid == 0) {
		free(p);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A fork child frees the blocks its parent made, sampled ones among them
 * under MSTAT_SAMPLE_BYTES=1: each free is counted with the size its
 * allocation was, which the parent tallied.
 */
static void
test_fork_child_frees(void **state)
{
	void *p[32];
	int status;

	(void)state;
	truth_clear(&t);
	for (int i = 0; i < 32; i++) {
		p[i] = malloc(24 + 100 * (size_t)i);
		assert_non_null(p[i]);
		truth_free(&t, malloc_usable_size(p[i]));
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (self_snapshot(&s0) != 0)
			_exit(2);
		for (int i = 0; i < 32; i++)
			free(p[i]);
		if (self_snapshot(&s1) != 0)
			_exit(2);
		_exit(truth_check(&s0, &s1, &t) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 32; i++)
		free(p[i]);
}

/* ---- the chain ---- */

static void
test_next_allocator(void **state)
{
	const char *want = getenv("MSTAT_TEST_NEXT");
	Dl_info info;

	(void)state;
	/* The program's malloc is the library's. */
	void *(*m)(size_t) = malloc;
	assert_true(dladdr(*(void **)&m, &info) && info.dli_fname);
	assert_non_null(strstr(info.dli_fname, "libmstatshm"));
	if (!want)
		return;
	/* The allocator that must come next is loaded, and its sizes are the
	 * ones passed through.  A sampled block's are those of the plain
	 * block of its size, which the allocator, asked directly, gives. */
	void *h = dlopen(want, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		fail_msg("%s is not loaded: LD_PRELOAD did not take it", want);
	size_t (*next_usable)(void *);
	void *(*next_malloc)(size_t);
	void (*next_free)(void *);
	*(void **)&next_usable = dlsym(h, "malloc_usable_size");
	*(void **)&next_malloc = dlsym(h, "malloc");
	*(void **)&next_free = dlsym(h, "free");
	assert_true(next_usable && next_malloc && next_free);
	bool sampled = getenv("MSTAT_TEST_SAMPLED") != NULL;
	for (size_t i = 0; i < NSIZES; i++) {
		void *p = malloc(sizes[i]);
		/* Sampled with probability 1 - exp(-n) at 1 byte on average.
		 * glibc's blocks of more than a page (4096 bytes asked are
		 * 4104 usable) stay where glibc made them. */
		bool moved = !(next_is_glibc() && sizes[i] >= 4096);
		if (sampled && sizes[i] >= 64 && moved) {
			assert_true(moved_sample(p));
			void *q = next_malloc(sizes[i]);
			assert_int_equal(malloc_usable_size(p), next_usable(q));
			size_t holds = pooled(p) ? header_word(p) & ~MSTAT_OWN_MARK
						 : next_usable(p);
			assert_true(holds >= malloc_usable_size(p));
			next_free(q);
		} else if (!sampled || !moved) {
			assert_int_equal(malloc_usable_size(p), next_usable(p));
		}
		free(p);
	}
	dlclose(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_constructor),
		cmocka_unit_test(test_next_allocator),
		cmocka_unit_test(test_nothing_between),
		cmocka_unit_test(test_malloc_free),
		cmocka_unit_test(test_live_returns_to_start),
		cmocka_unit_test(test_failures_count_nothing),
		cmocka_unit_test(test_calloc_zeroes),
		cmocka_unit_test(test_realloc_cases),
		cmocka_unit_test(test_reallocarray),
		cmocka_unit_test(test_aligned),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_sampled_blocks),
		cmocka_unit_test(test_pool_full),
		cmocka_unit_test(test_pool_refuses),
		cmocka_unit_test(test_fork_child_frees),
	};

	skip_under_valgrind();
	if (!mstat_self_enabled()) {
		fprintf(stderr, "not counting: %s\n", mstat_self_status());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
