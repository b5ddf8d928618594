/* SPDX-License-Identifier: MIT */
/*
 * test_self.c - the reader API from inside the process being counted.
 *
 *  - a known pattern of counts between two snapshots of oneself shows up
 *    as exactly that difference, per class;
 *  - snapshots of oneself while one's own threads count are whole;
 *  - with MSTAT_DISABLE=1 (a second run of this program) nothing is
 *    counted, no segment is made, and reads say why.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "shm/layout.h"
#include <mstatshm.h>
#include "shm/sizeclass.h"

#define BIG (UINT64_C(1) << 38)
#define HUGE_SIZE ((UINT64_C(1) << 40) + 1)

static bool
disabled(void)
{
	const char *e = getenv("MSTAT_DISABLE");
	return e && *e && strcmp(e, "0") != 0;
}

static void
pattern_between_two_snapshots_is_exact(void **state)
{
	struct mstat_snapshot a, b;
	unsigned c = mstat_size_class(BIG), h = mstat_size_class(HUGE_SIZE);

	(void)state;
	assert_int_equal(mstat_self_snapshot(&a), 0);
	for (int i = 0; i < 1000; i++)
		mstat_record_alloc(BIG, BIG - 5);
	for (int i = 0; i < 300; i++)
		mstat_record_free(BIG);
	for (int i = 0; i < 7; i++)
		mstat_record_realloc(BIG, HUGE_SIZE, HUGE_SIZE);
	assert_int_equal(mstat_self_snapshot(&b), 0);

	assert_true(b.epoch > a.epoch);
	assert_int_equal(b.classes[c].alloc_count - a.classes[c].alloc_count, 1000);
	assert_int_equal(b.classes[c].alloc_bytes - a.classes[c].alloc_bytes, 1000 * BIG);
	assert_int_equal(b.classes[c].free_count - a.classes[c].free_count, 307);
	assert_int_equal(b.classes[c].free_bytes - a.classes[c].free_bytes, 307 * BIG);
	assert_int_equal(b.classes[h].alloc_count - a.classes[h].alloc_count, 7);
	assert_int_equal(b.classes[h].alloc_bytes - a.classes[h].alloc_bytes, 7 * HUGE_SIZE);
	assert_int_equal(b.classes[h].free_count - a.classes[h].free_count, 0);
	assert_int_equal(b.requested_bytes - a.requested_bytes,
			 1000 * (BIG - 5) + 7 * HUGE_SIZE);
	assert_int_equal(b.total.alloc_count - a.total.alloc_count, 1007);
	assert_int_equal(mstat_live_objects(&b.classes[c]) -
				 mstat_live_objects(&a.classes[c]), 693);
}

static _Atomic int stop;

static void *
pairs(void *unused)
{
	(void)unused;
	while (!atomic_load(&stop))
		mstat_record_realloc(HUGE_SIZE, UINT64_C(1) << 40, 1);
	return NULL;
}

static void
snapshots_of_oneself_are_whole(void **state)
{
	pthread_t t[3];
	struct mstat_snapshot s;
	unsigned moving = 0;
	uint64_t last = 0;

	(void)state;
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, pairs, NULL);
	while (moving < 50) {
		int rc = mstat_self_snapshot(&s);
		if (rc == -EAGAIN)
			continue;
		assert_int_equal(rc, 0);
		const struct mstat_counts *f = &s.classes[MSTAT_HUGE_CLASS];
		const struct mstat_counts *a = &s.classes[MSTAT_HUGE_CLASS - 1];
		/* Each realloc frees a huge block and allocates 2^40 in one
		 * section; nothing else counts in these two classes. */
		assert_int_equal(f->free_count, a->alloc_count);
		assert_int_equal(f->free_bytes, a->alloc_bytes + a->alloc_count);
		moving += a->alloc_count != last;
		last = a->alloc_count;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_true(s.threads >= 1);
}

static void
disabled_counts_nothing_and_says_why(void **state)
{
	struct mstat_snapshot s;
	struct mstat_reader *r;
	char err[256];

	(void)state;
	assert_int_equal(mstat_self_enabled(), 0);
	assert_non_null(strstr(mstat_self_status(), "MSTAT_DISABLE"));
	mstat_record_alloc(64, 64); /* harmless */
	assert_int_equal(mstat_self_snapshot(&s), -ENODEV);
	assert_int_equal(mstat_reader_open_pid(&r, getpid(), err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no segment"));
}

int
main(void)
{
	const struct CMUnitTest enabled[] = {
		cmocka_unit_test(pattern_between_two_snapshots_is_exact),
		cmocka_unit_test(snapshots_of_oneself_are_whole),
	};
	const struct CMUnitTest off[] = {
		cmocka_unit_test(disabled_counts_nothing_and_says_why),
	};
	if (disabled())
		return cmocka_run_group_tests(off, NULL, NULL);
	return cmocka_run_group_tests(enabled, NULL, NULL);
}
