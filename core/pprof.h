/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - a heap profile as pprof reads it: profile.proto
 * (github.com/google/pprof, proto/profile.proto), gzipped.
 *
 * Sample types alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes, in that order, as Go's heap
 * profiles have them (runtime/pprof's writeHeapProto), so that Pyroscope
 * and Parca take them for memory profiles; period_type space/bytes,
 * period the sampling interval in effect; alloc_* count since the
 * process started, as Go's do.
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

#include "shm/reader.h"
#include "core/symbols.h"

/*
 * The objects and bytes (the sizes the slots count) that the samples of
 * stack `s` of profile `p` stand for: allocated, or allocated and not
 * freed if `live`.  Each sample of probability p (from its requested
 * bytes and the interval of its countdown: lib/countdown.h) stands for
 * 1/p objects and its counted bytes over p: the sums are unbiased
 * estimates whatever the interval did and whatever the sizes.  The one
 * place a profile's objects and bytes are made: pprof's values (--pprof,
 * the exporter, post-mortems), the sites view and its JSON.  A profile
 * of format 6.0 has no objects: they are its bytes over its average
 * sample's, unbiased for a stack of one size only (a stack of many sizes
 * has more of its large ones sampled: its object count comes out low).
 * Format 5.0 had no weights either: its stacks are unbiased as Go's
 * scaleHeapSample() does, at the interval in effect (samples averaging
 * s bytes were taken with probability 1 - exp(-s / sample_bytes)).
 */
void mstat_pprof_unbias(const struct mstat_profile *p,
			const struct mstat_profile_stack *s, bool live,
			double *objects, double *bytes);

/* What a profile carries beside its samples. */
struct mstat_pprof_options {
	/* The sample type clients show first: "alloc_space" in Go's
	 * /debug/pprof/allocs; NULL in its heap profile, where clients take
	 * the last, inuse_space. */
	const char *default_sample_type;
	/* A delta profile: each stack's values minus those the same stack
	 * has in `base`, an earlier read of the same segment (in use bytes
	 * and objects too, as Go's delta profiles subtract every type: they
	 * may be negative); a stack whose values are all unchanged is left
	 * out.  NULL: the values since the process started. */
	const struct mstat_profile *base;
	uint64_t time_ns;     /* CLOCK_REALTIME of the read (of `base`, in a
			       * delta) */
	uint64_t duration_ns; /* a delta's, else 0 */
	/* A line `go tool pprof -comments` prints (a post-mortem profile's
	 * cause, killed.h); NULL: none. */
	const char *comment;
};

/* `p` (frames named from `sym`, which may be NULL) as gzipped
 * profile.proto, into *out (malloc'ed, the caller frees it) of *len
 * bytes.  Each sample is one stack, its frames leaf first, with Go's
 * numeric label "bytes": its average block, its bytes over its
 * objects.  0, or -errno with a reason in err. */
int mstat_pprof_encode(const struct mstat_profile *p, struct mstat_symbols *sym,
		       const struct mstat_pprof_options *o, unsigned char **out,
		       size_t *len, char *err, size_t errlen);

/* Writes `p` to `path` (outfile.h), gzipped, as mstat_pprof_encode()
 * does without a default sample type; `time_ns` is when it was read.
 * 0, or -errno with a reason in err. */
int mstat_pprof_write(const struct mstat_profile *p, struct mstat_symbols *sym,
		      uint64_t time_ns, const char *path, char *err, size_t errlen);
/* The same with the options `o`. */
int mstat_pprof_write_with(const struct mstat_profile *p, struct mstat_symbols *sym,
			   const struct mstat_pprof_options *o, const char *path,
			   char *err, size_t errlen);

#endif /* MSTAT_CORE_PPROF_H */
