/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - a heap profile as pprof reads it: profile.proto
 * (github.com/google/pprof, proto/profile.proto), gzipped.
 *
 * Sample types alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes, as Go's heap profiles have;
 * period_type space/bytes, period the sampling interval.  Sample counts
 * are unbiased as Go's scaleHeapSample() does: a stack whose samples
 * average s bytes, at a mean interval of R bytes, was sampled with
 * probability 1 - exp(-s/R), so its counts are divided by that.  Every
 * module becomes a Mapping with its path and build id; frames named here
 * (symbols.h) carry their function (its name as views show it, its
 * system_name the symbol whole: mangled, with clone suffixes), its file
 * from / and line, the others only their address, for pprof to
 * symbolise from the mapping's file.
 */
#ifndef MSTAT_OBSERVER_PPROF_H
#define MSTAT_OBSERVER_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "symbols.h"

/* The unbiased (count, bytes) of `count` samples of `bytes` in all, at a
 * mean interval of `rate` bytes (<= 1: every byte, as they are). */
void mstat_pprof_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		       double *count_out, double *bytes_out);

/* Writes `p` (symbols from `sym`, which may be NULL) to `path`, gzipped;
 * `time_ns` is when it was read.  0, or -errno with a reason in err. */
int mstat_pprof_write(const struct mstat_profile *p, struct mstat_symbols *sym,
		      uint64_t time_ns, const char *path, char *err, size_t errlen);

#endif /* MSTAT_OBSERVER_PPROF_H */
