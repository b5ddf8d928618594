/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - a heap profile as pprof reads it: profile.proto
 * (github.com/google/pprof, proto/profile.proto), gzipped.
 *
 * Sample types alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes, as Go's heap profiles have;
 * period_type space/bytes, period the sampling interval in effect.
 * Values are estimates of what the samples stand for: mstat_pprof_unbias(),
 * which the sites view (sites.h) uses too.  Every
 * module becomes a Mapping with its path and build id; frames named here
 * (symbols.h) carry their function (its name as views show it, its
 * system_name the symbol whole: mangled, with clone suffixes), its file
 * from / and line, the others only their address, for pprof to
 * symbolise from the mapping's file.
 */
#ifndef MSTAT_CORE_PPROF_H
#define MSTAT_CORE_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "symbols.h"

/*
 * The objects and bytes (the sizes the slots count) that the samples of
 * stack `s` of profile `p` stand for: allocated, or allocated and not
 * freed if `live`.  Bytes are the sum of the samples' weights (each
 * sample's bytes over the probability it had of being sampled, at the
 * interval of its countdown: lib/countdown.h), an unbiased estimate
 * whatever the interval did and whatever the sizes; objects are the
 * bytes over the average sample's, unbiased for a stack of one size (a
 * stack of many sizes has more of its large ones sampled: its object
 * count comes out low, as Go's does).  A profile of format 5.0 has no
 * weights: its stacks are unbiased as Go's scaleHeapSample() does, at
 * the interval in effect (samples averaging s bytes were taken with
 * probability 1 - exp(-s / sample_bytes)).
 */
void mstat_pprof_unbias(const struct mstat_profile *p,
			const struct mstat_profile_stack *s, bool live,
			double *objects, double *bytes);

/* Writes `p` (symbols from `sym`, which may be NULL) to `path`, gzipped;
 * `time_ns` is when it was read.  0, or -errno with a reason in err. */
int mstat_pprof_write(const struct mstat_profile *p, struct mstat_symbols *sym,
		      uint64_t time_ns, const char *path, char *err, size_t errlen);
/* The same with `comment` (or NULL) as the profile's comment, which
 * `go tool pprof -comments` prints. */
int mstat_pprof_write_comment(const struct mstat_profile *p, struct mstat_symbols *sym,
			      uint64_t time_ns, const char *comment,
			      const char *path, char *err, size_t errlen);

#endif /* MSTAT_CORE_PPROF_H */
