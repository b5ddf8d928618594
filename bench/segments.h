/* SPDX-License-Identifier: MIT */
/*
 * segments.h - thousands of live segments for the observer's benchmarks,
 * made as many processes would make them, by this process alone: each
 * has its control page, class table and the shared slot with counts in 8
 * classes (sparse beyond), is published, and holds its owner lock, so it
 * is alive to every reader.
 */
#ifndef MSTAT_BENCH_SEGMENTS_H
#define MSTAT_BENCH_SEGMENTS_H

#include <stdbool.h>

/* Makes n segments named `name` (their process's name); their
 * descriptors into fds.  0 or -1 (with a line on stderr). */
int mbench_segments_make(unsigned n, int *fds, const char *name);
/* A segment of the calling process, under its own name, with its own
 * pid, start time and pid namespace, named `name`, its owner lock held:
 * the descriptor (keep it), or -1 (with a line on stderr). */
int mbench_segment_self(const char *name);
/* Unlinks and closes them. */
void mbench_segments_remove(unsigned n, int *fds);
/* One segment of this process, named `name`, whose heap profile holds
 * `stacks` distinct stacks of `depth` frames, each with a sample kept
 * and one freed (of 1 KiB, each standing for 512 KiB); the frames are
 * return addresses in the code of this process's loaded objects, drawn
 * from a pool of `pcs`, and the objects are its module list, with their
 * build ids: a profile to read, name and encode as a real one.  The
 * stacks are the paths of a call tree, or, if `random`, frames drawn at
 * random (segments.c says how).  Its descriptor (holding its owner
 * lock), or -1 with a line on stderr. */
int mbench_segment_profiled(unsigned stacks, unsigned depth, unsigned pcs,
			    bool random, const char *name);
void mbench_segment_profiled_remove(int fd);

/* An observer core's note (struct mstat_core_options.note): to stderr. */
void mbench_segments_note(void *arg, const char *line);

#endif /* MSTAT_BENCH_SEGMENTS_H */
