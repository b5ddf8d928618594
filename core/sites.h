/* SPDX-License-Identifier: MIT */
/*
 * sites.h - the call sites that hold a process's heap, from its sampled
 * profile: each stack's allocating call (its first frame), named, with
 * the bytes and objects its stacks' samples stand for summed (pprof.h,
 * mstat_pprof_unbias(), says how they are estimated).
 *
 * Growth per site: a baseline keeps each site's live bytes and objects
 * at one moment (the process's baseline: when it was first seen, or
 * reset), and a later read's growth is its live values minus those.  A
 * site missing from the baseline had nothing live then.  The profile's
 * stacks are never removed, so a site in the baseline is in every later
 * read of the same segment.
 */
#ifndef MSTAT_CORE_SITES_H
#define MSTAT_CORE_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lifetime.h"
#include "shm/reader.h"

struct mstat_site {
	uint64_t pc;           /* the return address of the allocating call */
	char function[128];    /* "" if unknown */
	char file[192];        /* source file, "" if unknown */
	int line;              /* 0 if unknown */
	char module[MSTAT_MODULE_PATH]; /* the object holding it, "" if none */
	/* The frame that called it, in the site's stack holding the most
	 * live bytes (then allocated bytes): 0 and "" if none. */
	uint64_t caller_pc;
	char caller_function[128];
	char caller_file[192];
	int caller_line;
	double live_bytes, live_objects;   /* estimated: allocated, not freed */
	double alloc_bytes, alloc_objects; /* estimated: allocated, ever */
	/* How long its blocks live (lifetime.h): summed over its stacks, and
	 * what that says as the profile was read. */
	struct mstat_lifetime life;
	struct mstat_lifetime_summary lifetimes;
	/* Derived by mstat_sites_growth(): live - baseline. */
	double growth_bytes, growth_objects;
};

enum mstat_sites_order {
	MSTAT_SITES_BY_LIVE = 0,   /* most live bytes first */
	MSTAT_SITES_BY_GROWTH,     /* most growth of live bytes first */
};

/* The `n` sites of the profile of the process `r` reads with the most
 * live bytes, largest first, into out[0..*got).  0, or -errno (the
 * reader's error says why). */
int mstat_sites_read(struct mstat_reader *r, size_t n, struct mstat_site *out,
		     size_t *got);

/* Every site of `p`, unnamed, in *all (malloc'ed, the caller frees it),
 * ordered by pc.  0 or -ENOMEM. */
int mstat_sites_sum(const struct mstat_profile *p, struct mstat_site **all,
		    size_t *n);
/* Orders s[0..n) by `by`, ties by pc. */
void mstat_sites_sort(struct mstat_site *s, size_t n, enum mstat_sites_order by);
/* Names s[0..n) and their callers: function, file, line, module
 * (symbols.h). */
void mstat_sites_name(const struct mstat_profile *p, struct mstat_site *s,
		      size_t n);

struct mstat_sites_base;
/* A baseline of the sites all[0..n) (ordered by pc, as mstat_sites_sum()
 * gives them), or NULL if out of memory. */
struct mstat_sites_base *mstat_sites_base_new(const struct mstat_site *all,
					      size_t n);
void mstat_sites_base_free(struct mstat_sites_base *b);
/* Sets the growth of s[0..n) (in any order) against `b`. */
void mstat_sites_growth(const struct mstat_sites_base *b, struct mstat_site *s,
			size_t n);

#endif /* MSTAT_CORE_SITES_H */
