/* SPDX-License-Identifier: MIT */
/*
 * sampling.c - one fixed heap workload, and the per-class counts it made,
 * printed: they must not depend on sampling.  tests/interpose/sampling.sh
 * runs it with no allocation sampled and with every one sampled, in front
 * of glibc, jemalloc and tcmalloc, and compares.
 *
 * Prints, on stdout, every class the workload counted something in, each
 * counter of the class, and the requested bytes; on stderr, "aligned N of
 * M": how many of its M blocks came back page-aligned, as sampled blocks
 * do.  Between its two snapshots it allocates nothing else.
 *
 * Linked with libmstatshm, as tests/interpose/test_pattern.c.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/interpose/truth.h"

/* Away from glibc's mmap threshold (128 KiB, raised by each free of a
 * mapped block), where the page-aligned block and the plain one of the
 * same size may be placed apart: one mapped, one not. */
static const size_t sizes[] = {
	1,    8,    24,   25,    40,    100,   250,    256,    257,     600,
	1000, 1024, 1032, 1033,  2000,  4000,  4096,   8000,   20000,   65536,
	100000, 400000, 3000000,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define EACH 20

static void *blocks[NSIZES * EACH * 3];
static unsigned nblocks, aligned;

static void *
keep(void *p)
{
	if (!p) {
		fprintf(stderr, "sampling: an allocation failed: %s\n", strerror(errno));
		exit(1);
	}
	aligned += ((uintptr_t)p & 4095) == 0;
	blocks[nblocks++] = p;
	return p;
}

static void
workload(void)
{
	for (size_t i = 0; i < NSIZES; i++)
		for (int k = 0; k < EACH; k++) {
			keep(malloc(sizes[i]));
			keep(calloc(1, sizes[i]));
			if (k % 4 == 0)
				free(malloc(sizes[i] + 3));
		}
	/* realloc: grown to more than twice, then shrunk to less than half,
	 * which every allocator here moves rather than keeps in place. */
	for (unsigned b = 0; b < nblocks; b += 3) {
		size_t n = malloc_usable_size(blocks[b]);
		void *q = realloc(blocks[b], n * 2 + 5);
		if (!q)
			exit(1);
		blocks[b] = realloc(q, n / 4 + 1);
		if (!blocks[b])
			exit(1);
	}
	for (size_t i = 0; i < NSIZES; i++) {
		void *p;
		if (posix_memalign(&p, 16, sizes[i]) != 0)
			exit(1);
		keep(p);
		keep(aligned_alloc(16, (sizes[i] + 15) & ~(size_t)15));
	}
	/* Every other block freed; the rest stay live. */
	for (unsigned b = 0; b < nblocks; b += 2) {
		free(blocks[b]);
		blocks[b] = NULL;
	}
}

int
main(void)
{
	static struct mstat_snapshot s0, s1;

	if (self_snapshot(&s0) != 0 || (workload(), self_snapshot(&s1) != 0)) {
		fprintf(stderr, "sampling: no snapshot: %s\n", mstat_self_status());
		return 1;
	}
	for (unsigned c = 0; c < s1.class_count; c++) {
		const struct mstat_counts *a = &s0.classes[c], *b = &s1.classes[c];
		if (memcmp(a, b, sizeof(*a)) == 0)
			continue;
		printf("class %u (<= %llu)", c, (unsigned long long)s1.class_max_size[c]);
#define MSTAT_X(e, f, h) printf(" " #f " %llu", (unsigned long long)(b->f - a->f));
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
		printf("\n");
	}
	printf("requested %llu\n",
	       (unsigned long long)(s1.requested_bytes - s0.requested_bytes));
	fprintf(stderr, "aligned %u of %u\n", aligned, nblocks);
	return 0;
}
