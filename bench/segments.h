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

/* Makes n segments named `name` (their process's name); their
 * descriptors into fds.  0 or -1 (with a line on stderr). */
int mbench_segments_make(unsigned n, int *fds, const char *name);
/* A segment of the calling process, under its own name, with its own
 * pid, start time and pid namespace, named `name`, its owner lock held:
 * the descriptor (keep it), or -1 (with a line on stderr). */
int mbench_segment_self(const char *name);
/* Unlinks and closes them. */
void mbench_segments_remove(unsigned n, int *fds);
/* An observer core's note (struct mstat_core_options.note): to stderr. */
void mbench_segments_note(void *arg, const char *line);

#endif /* MSTAT_BENCH_SEGMENTS_H */
