/* SPDX-License-Identifier: MIT */
/*
 * header_offsets.c - where a segment header's identity fields are, for
 * tests that forge headers:
 *
 *   mstat-test-header-offsets   prints "pid 52 uid 56 start_time 64 ..."
 */
#include <stddef.h>
#include <stdio.h>

#include "shm/layout.h"

int
main(void)
{
	printf("pid %zu uid %zu start_time %zu pid_ns %zu killed_s %zu\n",
	       offsetof(struct mstat_shm_header, pid),
	       offsetof(struct mstat_shm_header, uid),
	       offsetof(struct mstat_shm_header, start_time),
	       offsetof(struct mstat_shm_header, pid_ns),
	       offsetof(struct mstat_shm_header, killed_s));
	return 0;
}
