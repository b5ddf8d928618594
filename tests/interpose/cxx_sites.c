/* SPDX-License-Identifier: MIT */
/*
 * cxx_sites.c - for test_cxx.cc, which cannot include the reader's C
 * header: the samples of this process's own profile whose first frame
 * lies in [lo, hi).
 */
#include <stdint.h>
#include <unistd.h>

#include "shm/reader.h"

long long cxx_sampled_in(uintptr_t lo, uintptr_t hi);

/* Allocations sampled at stacks whose first frame is in [lo, hi), or -1
 * when the profile cannot be read. */
long long
cxx_sampled_in(uintptr_t lo, uintptr_t hi)
{
	struct mstat_reader *r;
	struct mstat_profile p;
	char err[256];
	long long n = 0;

	if (mstat_reader_open_pid(&r, getpid(), err, sizeof(err)) != 0)
		return -1;
	int rc = mstat_reader_profile(r, &p);
	mstat_reader_close(r);
	if (rc != 0)
		return -1;
	for (uint32_t i = 0; i < p.nstacks; i++)
		if (p.stacks[i].depth > 0 && p.stacks[i].frames[0] >= lo &&
		    p.stacks[i].frames[0] < hi)
			n += (long long)p.stacks[i].allocs;
	mstat_reader_profile_release(&p);
	return n;
}
