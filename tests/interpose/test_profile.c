/* SPDX-License-Identifier: MIT */
/*
 * test_profile.c - the sampled heap profile, read back exactly.
 *
 * Run with MSTAT_SAMPLE_BYTES=1: every allocation is then sampled (its
 * countdown, an exponential draw of mean 1 byte, is below any size
 * asked here), so the profile's counts per call site are known exactly.
 * Its bytes are the sizes the counters count the blocks with, what
 * malloc_usable_size() says of them; and each sample, taken with
 * probability 1 - exp(-n) = 1 for the sizes asked here, weighs exactly
 * its bytes and stands for exactly one object.  The program reads its own segment with the reader API, as
 * an observer would from outside.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/reader.h"
#include "tests/interpose/truth.h"

/* The sites are alone in a section of their own, whose bounds the linker
 * gives, so that the site holding a return address is the one that
 * starts last before it, whatever the build makes of their size. */
#define NOINLINE __attribute__((noinline, noclone, section("mstat_sites")))
extern const char __start_mstat_sites[], __stop_mstat_sites[];

static void *volatile keep[1000];

/* Each site is one call of malloc's family; the frame of the site is the
 * first of its stacks (the library's own are left out). */
NOINLINE static void *
site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}

NOINLINE static void *
site_calloc(size_t n, size_t k)
{
	void *p = calloc(n, k);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

NOINLINE static void *
site_realloc(void *old, size_t n)
{
	void *p = realloc(old, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

NOINLINE static void *
site_small(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

struct site_total {
	uint64_t stacks, allocs, alloc_bytes, frees, free_bytes;
	uint64_t alloc_weight, free_weight, alloc_objects, free_objects;
};

/* The site whose code holds return address `pc`, or 0. */
static uintptr_t
site_of(uint64_t pc)
{
	const uintptr_t sites[] = { (uintptr_t)site_malloc, (uintptr_t)site_calloc,
				    (uintptr_t)site_realloc, (uintptr_t)site_small };
	uintptr_t best = 0;

	if (pc < (uintptr_t)__start_mstat_sites || pc >= (uintptr_t)__stop_mstat_sites)
		return 0;
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (sites[i] <= pc && sites[i] > best)
			best = sites[i];
	return best;
}

/* The totals of the stacks whose first frame lies in site `a`. */
static struct site_total
site_at(const struct mstat_profile *p, uintptr_t a)
{
	struct site_total t = { 0 };

	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct mstat_profile_stack *s = &p->stacks[i];
		assert_true(s->frees <= s->allocs);
		assert_true(s->free_bytes <= s->alloc_bytes);
		assert_true(s->free_objects <= s->alloc_objects);
		assert_true(s->free_weight <= s->alloc_weight);
		if (s->depth == 0 || site_of(s->frames[0]) != a)
			continue;
		t.stacks++;
		t.allocs += s->allocs;
		t.alloc_bytes += s->alloc_bytes;
		t.frees += s->frees;
		t.free_bytes += s->free_bytes;
		t.alloc_objects += s->alloc_objects;
		t.free_objects += s->free_objects;
		t.alloc_weight += s->alloc_weight;
		t.free_weight += s->free_weight;
	}
	return t;
}

#define site(p, fn) site_at((p), (uintptr_t)(fn))

static void
read_profile(struct mstat_profile *p)
{
	struct mstat_reader *r;
	char err[256];

	assert_int_equal(mstat_reader_open_pid(&r, getpid(), err, sizeof(err)), 0);
	assert_int_equal(mstat_reader_profile(r, p), 0);
	mstat_reader_close(r);
}

/* Makes sure the segment exists (MSTAT_EAGER is set too). */
static int
setup(void **state)
{
	(void)state;
	skip_under_valgrind();
	if (!getenv("MSTAT_SAMPLE_BYTES") || strcmp(getenv("MSTAT_SAMPLE_BYTES"), "1")) {
		fprintf(stderr, "SKIP: needs MSTAT_SAMPLE_BYTES=1\n");
		exit(77);
	}
	free(malloc(1));
	return 0;
}

static void
test_sites_counted_exactly(void **state)
{
	struct mstat_profile p;

	(void)state;
	for (int i = 0; i < 1000; i++)
		keep[i] = site_malloc(100);
	/* The size the counters count each with: 104 with glibc. */
	uint64_t u = malloc_usable_size(keep[0]), cu = 0;
	for (int i = 0; i < 400; i++)
		free(keep[i]);
	for (int i = 0; i < 50; i++) {
		void *q = site_calloc(10, 30);
		cu = malloc_usable_size(q);
		free(q);
	}
	read_profile(&p);
	assert_int_equal(p.sample_bytes, 1);
	assert_true(p.weighted && p.has_objects);
	assert_int_equal(p.dropped, 0);
	assert_true(u >= 100 && cu >= 300);
	struct site_total m = site(&p, site_malloc);
	assert_int_equal(m.stacks, 1);
	assert_int_equal(m.allocs, 1000);
	assert_int_equal(m.alloc_bytes, 1000 * u);
	assert_int_equal(m.alloc_objects, 1000 * MSTAT_OBJECT_UNITS);
	assert_int_equal(m.alloc_weight, 1000 * u);
	assert_int_equal(m.frees, 400);
	assert_int_equal(m.free_bytes, 400 * u);
	assert_int_equal(m.free_objects, 400 * MSTAT_OBJECT_UNITS);
	assert_int_equal(m.free_weight, 400 * u);
	struct site_total c = site(&p, site_calloc);
	assert_int_equal(c.allocs, 50);
	assert_int_equal(c.alloc_bytes, 50 * cu);
	assert_int_equal(c.alloc_objects, 50 * MSTAT_OBJECT_UNITS);
	assert_int_equal(c.alloc_weight, 50 * cu);
	assert_int_equal(c.frees, 50);
	assert_int_equal(c.free_weight, 50 * cu);
	/* The module list holds this program, with its build id. */
	const struct mstat_profile_module *mod =
		mstat_reader_profile_module_of(&p, (uint64_t)(uintptr_t)site_malloc);
	assert_non_null(mod);
	assert_non_null(strstr(mod->path, "test-interpose-profile"));
	assert_int_equal(mod->build_id_len, 20);
	mstat_reader_profile_release(&p);
	for (int i = 400; i < 1000; i++)
		free(keep[i]);
	read_profile(&p);
	m = site(&p, site_malloc);
	assert_int_equal(m.frees, 1000);
	assert_int_equal(m.free_bytes, 1000 * u);
	assert_int_equal(m.free_objects, 1000 * MSTAT_OBJECT_UNITS);
	assert_int_equal(m.free_weight, 1000 * u);
	mstat_reader_profile_release(&p);
}

/* With glibc, a sampled block of more than a page stays where glibc made
 * it, and sampling copies nothing: a mapped block is grown with mremap as
 * it would be unsampled.  Whichever way such a block goes, free or
 * realloc, its sample goes with it. */
static void
test_large_blocks_stay_in_place(void **state)
{
	struct mstat_profile p;
	const size_t mib = 1 << 20, big = 32 * mib;

	(void)state;
	/* Mapped by glibc, above a threshold set (and so not raised by the
	 * frees of mapped blocks), with no room left at the top of the heap:
	 * its chunk is page-aligned, the block 16 bytes in. */
	assert_int_equal(mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);
	malloc_trim(0);
	char *a = site_malloc(big); /* larger than any free chunk */
	assert_int_equal((uintptr_t)a % 4096, 16);
	memset(a, 5, big);
	char *b = site_realloc(a, 3 * big);
	assert_int_equal((uintptr_t)b % 4096, 16);
	assert_int_equal(b[big - 1], 5);
	read_profile(&p);
	struct site_total m = site(&p, site_malloc), r = site(&p, site_realloc);
	assert_int_equal(m.frees, m.allocs); /* a went with the realloc */
	assert_int_equal(m.free_weight, m.alloc_weight);
	assert_int_equal(r.allocs - r.frees, 1);
	assert_int_equal(r.alloc_bytes - r.free_bytes, malloc_usable_size(b));
	assert_int_equal(r.alloc_weight - r.free_weight, malloc_usable_size(b));
	mstat_reader_profile_release(&p);
	free(b);
	/* Below the threshold: blocks of glibc's heap. */
	assert_int_equal(mallopt(M_MMAP_THRESHOLD, 4 * mib), 1);
	char *c = site_malloc(200000);
	memset(c, 6, 200000);
	char *d = site_realloc(c, 300000);
	assert_int_equal(d[199999], 6);
	char *e = site_calloc(1, 100000);
	assert_int_equal(e[99999], 0);
	read_profile(&p);
	m = site(&p, site_malloc);
	r = site(&p, site_realloc);
	assert_int_equal(m.frees, m.allocs);
	assert_int_equal(r.allocs - r.frees, 1);
	assert_int_equal(site(&p, site_calloc).allocs - site(&p, site_calloc).frees, 1);
	mstat_reader_profile_release(&p);
	free(d);
	free(e);
	read_profile(&p);
	r = site(&p, site_realloc);
	struct site_total c2 = site(&p, site_calloc);
	assert_int_equal(r.frees, r.allocs);
	assert_int_equal(r.free_bytes, r.alloc_bytes);
	assert_int_equal(r.free_weight, r.alloc_weight);
	assert_int_equal(c2.frees, c2.allocs);
	assert_int_equal(c2.free_bytes, c2.alloc_bytes);
	assert_int_equal(c2.free_weight, c2.alloc_weight);
	mstat_reader_profile_release(&p);
}

/* A realloc moves its block to a sample of its own call site; the old
 * sample is freed. */
static void
test_realloc_moves_the_sample(void **state)
{
	struct mstat_profile p;

	(void)state;
	char *a = site_malloc(200);
	memset(a, 7, 200);
	char *b = site_realloc(a, 3000);
	assert_int_equal(b[199], 7);
	read_profile(&p);
	struct site_total r = site(&p, site_realloc);
	assert_int_equal(r.allocs, 1);
	assert_int_equal(r.alloc_bytes, malloc_usable_size(b));
	assert_int_equal(r.alloc_weight, malloc_usable_size(b));
	assert_int_equal(r.frees, 0);
	mstat_reader_profile_release(&p);
	free(b);
	read_profile(&p);
	r = site(&p, site_realloc);
	assert_int_equal(r.frees, 1);
	mstat_reader_profile_release(&p);
}

/* A reader turns sampling off, then back on, through the request word;
 * the target applies it on its next sample, or within 64 MiB while off. */
static void
test_reader_sets_the_interval(void **state)
{
	struct mstat_reader *r;
	struct mstat_profile p;
	char err[256];

	(void)state;
	assert_int_equal(mstat_reader_open_pid(&r, getpid(), err, sizeof(err)), 0);
	assert_int_equal(mstat_reader_request_sampling(r, MSTAT_SAMPLE_MAX + 1), -EINVAL);
	assert_int_equal(mstat_reader_request_sampling(r, 0), 0);
	free(site_malloc(64)); /* sampled, and learns: off */
	assert_int_equal(mstat_reader_profile(r, &p), 0);
	assert_int_equal(p.sample_bytes, 0);
	uint64_t before = site(&p, site_malloc).allocs;
	mstat_reader_profile_release(&p);
	for (int i = 0; i < 100; i++)
		free(site_malloc(100));
	assert_int_equal(mstat_reader_profile(r, &p), 0);
	assert_int_equal(site(&p, site_malloc).allocs, before);
	mstat_reader_profile_release(&p);

	assert_int_equal(mstat_reader_request_sampling(r, 1), 0);
	for (int i = 0; i < 65; i++) /* past the 64 MiB of a look while off */
		free(malloc(1 << 20));
	for (int i = 0; i < 100; i++)
		free(site_malloc(100));
	assert_int_equal(mstat_reader_profile(r, &p), 0);
	assert_int_equal(p.sample_bytes, 1);
	assert_int_equal(site(&p, site_malloc).allocs, before + 100);
	mstat_reader_profile_release(&p);
	mstat_reader_close(r);
}

static void *
small_blocks(void *arg)
{
	size_t *u = arg;

	for (int i = 0; i < 40000; i++) {
		void *p = site_small(64);
		*u = malloc_usable_size(p);
		free(p);
	}
	return NULL;
}

/* A sample weighs its counted bytes over the probability it had, which
 * its requested bytes (what the countdown counted) and the interval its
 * countdown was drawn from give.  A new thread draws its first countdown
 * at the interval in effect, 64 KiB here: each sample of its 64-byte
 * blocks (72 usable with glibc) weighs 72 / (1 - exp(-64 / 65536)), 73764
 * bytes, where the usable size would give 65572.  Its 40000 blocks hold
 * about 39 samples; none, once in 10^17 runs. */
static void
test_weight_is_of_the_interval_drawn(void **state)
{
	struct mstat_reader *r;
	struct mstat_profile p;
	pthread_t t;
	size_t u = 0;
	char err[256];

	(void)state;
	assert_int_equal(mstat_reader_open_pid(&r, getpid(), err, sizeof(err)), 0);
	assert_int_equal(mstat_reader_request_sampling(r, 65536), 0);
	assert_int_equal(pthread_create(&t, NULL, small_blocks, &u), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(mstat_reader_profile(r, &p), 0);
	struct site_total s = site(&p, site_small);
	mstat_reader_profile_release(&p);
	assert_int_equal(mstat_reader_request_sampling(r, 1), 0);
	mstat_reader_close(r);
	/* This thread's countdown may have been drawn at 64 KiB meanwhile:
	 * 4 MiB run it out (but once in e^64), and every allocation is
	 * sampled again, as the tests after this one expect. */
	for (int i = 0; i < 4; i++)
		free(malloc(1 << 20));

	double w = (double)u / -expm1(-64.0 / 65536);
	printf("%llu samples, weighing %llu bytes (%.1f each, %.1f expected)\n",
	       (unsigned long long)s.allocs, (unsigned long long)s.alloc_weight,
	       (double)s.alloc_weight / (double)s.allocs, w);
	assert_true(s.allocs > 0);
	assert_int_equal(s.alloc_bytes, s.allocs * u);
	/* Objects: one block over the same probability, in 256ths. */
	double o = MSTAT_OBJECT_UNITS / -expm1(-64.0 / 65536);
	assert_true(fabs((double)s.alloc_objects - (double)s.allocs * o) <=
		    (double)s.allocs);
	assert_true(fabs((double)s.alloc_weight - (double)s.allocs * w) <= (double)s.allocs);
	/* All freed: exactly what their allocations added. */
	assert_int_equal(s.frees, s.allocs);
	assert_int_equal(s.free_bytes, s.alloc_bytes);
	assert_int_equal(s.free_objects, s.alloc_objects);
	assert_int_equal(s.free_weight, s.alloc_weight);
}

/* A fork child profiles afresh, in a segment of its own: its stacks are
 * entered again, not found in the parent's index (whose entries number
 * the parent's table), and its sites count what it sampled. */
static void
test_fork_child_profiles_afresh(void **state)
{
	int status;

	(void)state;
	for (int i = 0; i < 10; i++)
		free(site_malloc(100)); /* the parent's index holds its stack */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mstat_reader *r;
		struct mstat_profile p;
		char err[256];

		for (int i = 0; i < 20; i++)
			free(site_malloc(100));
		for (int i = 0; i < 30; i++)
			free(site_calloc(10, 30));
		if (mstat_reader_open_pid(&r, getpid(), err, sizeof(err)) != 0 ||
		    mstat_reader_profile(r, &p) != 0)
			_exit(2);
		struct site_total m = site(&p, site_malloc), c = site(&p, site_calloc);
		_exit(m.stacks == 1 && m.allocs == 20 && c.stacks == 1 && c.allocs == 30
			      ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sites_counted_exactly),
		cmocka_unit_test(test_realloc_moves_the_sample),
		cmocka_unit_test(test_large_blocks_stay_in_place),
		cmocka_unit_test(test_reader_sets_the_interval),
		cmocka_unit_test(test_weight_is_of_the_interval_drawn),
		cmocka_unit_test(test_fork_child_profiles_afresh),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
