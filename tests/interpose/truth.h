/* SPDX-License-Identifier: MIT */
/*
 * truth.h - ground truth for the interposition tests, kept apart from the
 * library: a tally, per size class, of what a test did, made from the
 * usable sizes the allocator reports (malloc_usable_size(), which the
 * library passes through to the next allocator).  The tally lives in
 * static memory, so keeping it allocates nothing.
 */
#ifndef MSTAT_TEST_TRUTH_H
#define MSTAT_TEST_TRUTH_H

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mstatshm.h>
#include "shm/sizeclass.h"

/*
 * Valgrind's memcheck replaces malloc in every object, this library's
 * included: under it the interposer is never called, and nothing it does
 * can be tested.  Such a run is skipped (exit 77); test_race, which runs
 * the interposer renamed, is how valgrind sees its code.
 */
static inline void
skip_under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	if (preload && strstr(preload, "vgpreload")) {
		fprintf(stderr, "SKIP: valgrind replaces malloc everywhere; "
				"the interposer cannot run under it\n");
		exit(77);
	}
}

/*
 * Snapshots, retried while another reader holds the segment (-EBUSY): a
 * mstat-top running on the same machine reads every segment of the user,
 * this test's too, and that is not this test's failure.  Also while a
 * writer stays inside an update past the wait budget (-EAGAIN): on a
 * loaded machine a busy writer is preempted there for longer.
 */
static inline int
self_snapshot(struct mstat_snapshot *s)
{
	int rc;

	for (int i = 0; i < 30; i++)
		if ((rc = mstat_self_snapshot(s)) != -EBUSY && rc != -EAGAIN)
			break;
	return rc;
}

static inline int
reader_snapshot(struct mstat_reader *r, struct mstat_snapshot *s)
{
	int rc;

	for (int i = 0; i < 30; i++)
		if ((rc = mstat_reader_snapshot(r, s)) != -EBUSY && rc != -EAGAIN)
			break;
	return rc;
}

enum { T_ALLOC_COUNT, T_ALLOC_BYTES, T_FREE_COUNT, T_FREE_BYTES, T_COUNTERS };

struct truth {
	_Atomic uint64_t c[MSTAT_CLASS_COUNT][T_COUNTERS];
	_Atomic uint64_t requested;
};

static inline void
truth_clear(struct truth *t)
{
	memset(t, 0, sizeof(*t));
}

/* An allocation that returned p for `requested` bytes. */
static inline void
truth_alloc(struct truth *t, void *p, size_t requested)
{
	size_t u = malloc_usable_size(p);
	unsigned c = mstat_size_class(u);

	atomic_fetch_add(&t->c[c][T_ALLOC_COUNT], 1);
	atomic_fetch_add(&t->c[c][T_ALLOC_BYTES], u);
	atomic_fetch_add(&t->requested, requested);
}

/* The free of a block of `usable` bytes (ask before freeing). */
static inline void
truth_free(struct truth *t, size_t usable)
{
	unsigned c = mstat_size_class(usable);

	atomic_fetch_add(&t->c[c][T_FREE_COUNT], 1);
	atomic_fetch_add(&t->c[c][T_FREE_BYTES], usable);
}

/* free(p), tallied. */
static inline void
truth_free_p(struct truth *t, void *p)
{
	size_t u = malloc_usable_size(p);

	free(p);
	truth_free(t, u);
}

/*
 * Compares b - a with the tally, every counter of every class and the
 * requested bytes.  Prints each difference; returns how many there were.
 */
static inline int
truth_check_classes(const struct mstat_snapshot *a,
		    const struct mstat_snapshot *b, const struct truth *t,
		    int only_tallied);

static inline int
truth_check(const struct mstat_snapshot *a, const struct mstat_snapshot *b,
	    const struct truth *t)
{
	return truth_check_classes(a, b, t, 0);
}

/* The same, with `only_tallied`: only the classes the tally has anything
 * in, and not the requested bytes (for tests whose process allocates on
 * its own meanwhile, in other classes: thread creation). */
static inline int
truth_check_classes(const struct mstat_snapshot *a,
		    const struct mstat_snapshot *b, const struct truth *t,
		    int only_tallied)
{
	int bad = 0;

	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		const struct mstat_counts *x = &a->classes[c], *y = &b->classes[c];
		if (only_tallied && !atomic_load(&t->c[c][T_ALLOC_COUNT]) &&
		    !atomic_load(&t->c[c][T_FREE_COUNT]))
			continue;
		const uint64_t got[T_COUNTERS] = {
			y->alloc_count - x->alloc_count,
			y->alloc_bytes - x->alloc_bytes,
			y->free_count - x->free_count,
			y->free_bytes - x->free_bytes,
		};
		for (int k = 0; k < T_COUNTERS; k++) {
			uint64_t want = atomic_load(&t->c[c][k]);
			if (got[k] != want) {
				fprintf(stderr, "class %u (<= %llu) counter %d: "
					"counted %llu, did %llu\n", c,
					(unsigned long long)mstat_class_max_size(c),
					k, (unsigned long long)got[k],
					(unsigned long long)want);
				bad++;
			}
		}
	}
	uint64_t req = b->requested_bytes - a->requested_bytes;
	if (!only_tallied && req != atomic_load(&t->requested)) {
		fprintf(stderr, "requested bytes: counted %llu, did %llu\n",
			(unsigned long long)req,
			(unsigned long long)atomic_load(&t->requested));
		bad++;
	}
	return bad;
}

#endif /* MSTAT_TEST_TRUTH_H */
