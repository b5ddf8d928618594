/* SPDX-License-Identifier: MIT */
/*
 * test_scribble.c - the writer trusts nothing a reader can write.
 *
 * Anyone of the user may map a segment read-write, as readers do to
 * rotate its epoch.  While a target's threads count, come and go, and
 * overflow its slots, another process writes random bytes over its whole
 * control page and class table, again and again: offsets, sizes, counts,
 * the epoch, the state.  The target must not notice: it keeps counting
 * from its private copies of the layout (the epoch it uses only modulo
 * 3), exits normally, and once the control page is put back, a snapshot
 * is its exact ground truth.  And an epoch no reader can have written
 * is refused by readers, rather than summed wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/protocol/harness.h"
#include "shm/reader.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
scribbled_layout_is_ignored(void **state)
{
	const char *mode = *state;
	/* 4 slots for waves of 12 threads: reservations, give-backs and
	 * the shared slot, all while the layout is garbage. */
	const char *args[] = { "exact", "4", "12", "20000", NULL };
	struct writer w;
	struct mstat_snapshot s;
	unsigned long rounds = 0;

	writer_start(&w, mode, 4, args);
	const struct mstat_target_info *in = mstat_reader_info(w.r);
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, in->shm_name);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	/* The control page and the class table: everything before slot 0. */
	size_t len = MSTAT_SLOTS_OFFSET(mstat_reader_class_count(w.r));
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				fd, 0);
	assert_true(m != MAP_FAILED);
	unsigned char *saved = malloc(len);
	assert_non_null(saved);
	memcpy(saved, m, len);

	writer_go(&w);
	while (!writer_poll_done(&w)) {
		for (size_t i = 0; i + 8 <= len; i += 8) {
			uint64_t v = next();
			memcpy(m + i, &v, 8);
		}
		rounds++;
	}
	/* Put back, with an epoch and a synced epoch that agree (any
	 * value: the writer added into epoch % 3 whatever it was).  The
	 * fields the target keeps (slots in use, threads) are lost with the
	 * garbage: every slot is to be read. */
	memcpy(m, saved, len);
	struct mstat_shm_header *h = (struct mstat_shm_header *)m;
	atomic_store(&h->slots_used, h->slot_count);
	snapshot_ok(w.r, &s);
	expect_truth(&s, &w);
	print_message("# %s: %lu rounds of garbage over %zu bytes\n", mode,
		      rounds, len);
	writer_finish(&w); /* exited 0, not by a signal */
	munmap(m, len);
	close(fd);
	free(saved);
}

/* A reader that finds an epoch no reader wrote (near the wrap at 2^64,
 * where 3 generations are not 3, or more than one rotation ahead of the
 * last finished one) refuses the segment rather than sum it wrong. */
static void
epoch_no_reader_wrote_is_refused(void **state)
{
	static const uint64_t bad[][2] = { /* epoch, synced */
		{ UINT64_MAX - 1, UINT64_MAX - 1 },
		{ UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1 },
		{ 7, 2 },
		{ 2, 3 },
	};
	const char *mode = *state;
	const char *args[] = { "pairs", "1", "10", NULL };
	struct mstat_snapshot s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct writer w;
		writer_start(&w, mode, 0, args);
		const struct mstat_target_info *in = mstat_reader_info(w.r);
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, in->shm_name);
		int fd = open(path, O_RDWR);
		assert_true(fd >= 0);
		struct mstat_shm_header *h = mmap(NULL, MSTAT_PAGE,
						  PROT_READ | PROT_WRITE,
						  MAP_SHARED, fd, 0);
		assert_true(h != MAP_FAILED);
		atomic_store(&h->epoch, bad[i][0]);
		atomic_store(&h->synced_epoch, bad[i][1]);
		assert_int_equal(mstat_reader_snapshot(w.r, &s), -EPROTO);
		assert_non_null(strstr(mstat_reader_error(w.r),
				       "not written by a reader"));
		/* Put right, it reads again. */
		atomic_store(&h->epoch, 0);
		atomic_store(&h->synced_epoch, 0);
		snapshot_ok(w.r, &s);
		munmap(h, MSTAT_PAGE);
		close(fd);
		writer_go(&w);
		writer_stop(&w);
		writer_wait_done(&w);
		writer_finish(&w);
	}
}

int
main(void)
{
	void *fenced = (void *)harness_modes[0];
	void *membarrier = (void *)harness_modes[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(scribbled_layout_is_ignored, fenced),
		cmocka_unit_test_prestate(scribbled_layout_is_ignored, membarrier),
		cmocka_unit_test_prestate(epoch_no_reader_wrote_is_refused, fenced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
