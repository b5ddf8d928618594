/* SPDX-License-Identifier: MIT */
/*
 * record.h - ticks written to a file, and read back: mstat-top --record
 * and --replay.  The format is docs/mstat-top-record.md: JSON Lines, a
 * header line, then one line per tick holding what the sampler saw of
 * each process (the model's inputs, snapshots included).  Replayed, the
 * same inputs make the same model, so every output prints what it printed
 * live.
 *
 * Text in a recording (names, errors) is written by the quoted rule of
 * text.h, as in JSON output; a file being read is input like any other:
 * everything is checked, and what does not pass is refused with its line
 * number and why.
 */
#ifndef MSTAT_CORE_RECORD_H
#define MSTAT_CORE_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/model.h"

#define MSTAT_RECORD_FORMAT "mstat-top-record"
#define MSTAT_RECORD_VERSION 1

/* One tick, as recorded. */
struct mstat_record_tick {
	uint64_t seq;         /* the tick's number, from 1 */
	uint64_t time_ms;     /* CLOCK_REALTIME, milliseconds */
	uint64_t now_ns;      /* CLOCK_MONOTONIC the inputs were taken at */
	double interval_s;    /* the interval then */
	const struct mstat_model_input *in;
	size_t n;
};

/* Writes the header line.  0 or -EIO. */
int mstat_record_begin(FILE *f, uint64_t time_ms);
/* Writes a tick and flushes it: a recording cut short ends with whole
 * ticks.  0 or -EIO. */
int mstat_record_write(FILE *f, const struct mstat_record_tick *t);

struct mstat_replay;

/* Opens a recording and checks its header.  0, or -errno with the reason
 * in err. */
int mstat_record_replay_open(struct mstat_replay **out, const char *path, char *err,
			     size_t errlen);
/* The next tick into *t (valid until the next call): 1, 0 at the end, or
 * -1 with the reason in err. */
int mstat_record_replay_next(struct mstat_replay *r, struct mstat_record_tick *t,
			     char *err, size_t errlen);
void mstat_record_replay_close(struct mstat_replay *r);

#endif /* MSTAT_CORE_RECORD_H */
