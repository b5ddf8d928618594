/* SPDX-License-Identifier: MIT */
/*
 * harness.h - drive mstat-test-writer processes from a test (see writer.c).
 */
#ifndef MSTAT_TEST_HARNESS_H
#define MSTAT_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shm/layout.h"
#include <mstatshm.h>

struct writer {
	pid_t pid;
	int to;      /* its stdin */
	int from;    /* its stdout */
	FILE *out;   /* `from`, once done */
	struct mstat_reader *r;
	bool done;
	uint64_t truth[MSTAT_CLASS_COUNT][4];
	uint64_t requested;
};

/* The modes the writer runs in, for tests parameterised over them. */
extern const char *const harness_modes[2]; /* "fenced", "membarrier" */

/* Starts `mstat-test-writer ARGS...` in writer mode `mode` with `slots`
 * slots (0: default), waits for it to be ready and attaches a reader. */
void writer_start(struct writer *w, const char *mode, unsigned slots,
		  const char *const *args);
void writer_go(struct writer *w);
/* Waits for the writer to print `line` (a `spin` writer: "inside"). */
void writer_expect(struct writer *w, const char *line);
/* Lets a `pairs` writer stop once it has done its minimum. */
void writer_stop(struct writer *w);
/* Whether it has printed "done" (and then its truth); never blocks. */
bool writer_poll_done(struct writer *w);
void writer_wait_done(struct writer *w);
/* Closes its stdin, reaps it, detaches. */
void writer_finish(struct writer *w);

/* Asserts the snapshot equals the writer's truth in every class the
 * writer uses (sizes above 2^36), and the requested bytes. */
void expect_truth(const struct mstat_snapshot *s, const struct writer *w);

/* A snapshot, retried while a writer thread is merely descheduled
 * inside a section (-EAGAIN) or another reader holds the segment (-EBUSY);
 * asserts success within 1000 tries. */
void snapshot_ok(struct mstat_reader *r, struct mstat_snapshot *s);

/* Asserts a snapshot of a `pairs` writer is whole: its section frees
 * 2^40 + 1 bytes (the huge class) and allocates 2^40 (class 144); counters
 * wrap at 2^64, and the check holds modulo 2^64. */
void check_pairs(const struct mstat_snapshot *s);

/* The first class the writers use; classes below it are left to malloc. */
#define TEST_FIRST_CLASS (mstat_size_class((UINT64_C(1) << 36) + 1))

#endif /* MSTAT_TEST_HARNESS_H */
