/* SPDX-License-Identifier: MIT */
/*
 * sites.h - the call sites that hold a process's heap, from its sampled
 * profile: each stack's allocating call (its first frame), named, with
 * the unbiased bytes and objects of its stacks summed (pprof.h says how
 * samples are unbiased).
 */
#ifndef MSTAT_OBSERVER_SITES_H
#define MSTAT_OBSERVER_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

struct mstat_site {
	uint64_t pc;           /* the return address of the allocating call */
	char function[128];    /* "" if unknown */
	char file[192];        /* source file, "" if unknown */
	int line;              /* 0 if unknown */
	char module[MSTAT_MODULE_PATH]; /* the object holding it, "" if none */
	double live_bytes, live_objects;   /* unbiased: allocated, not freed */
	double alloc_bytes, alloc_objects; /* unbiased: allocated, ever */
};

/* The `n` sites of the profile of the process `r` reads with the most
 * live bytes, largest first, into out[0..*got).  0, or -errno (the
 * reader's error says why). */
int mstat_sites_read(struct mstat_reader *r, size_t n, struct mstat_site *out,
		     size_t *got);

#endif /* MSTAT_OBSERVER_SITES_H */
