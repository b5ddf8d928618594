/* SPDX-License-Identifier: MIT */
/*
 * open_pid.c - what mstat_reader_open_pid() finds for a pid: prints the
 * name of the segment it opened and its total allocations, or why not.
 *
 *   mstat-test-open-pid PID
 */
#include <stdio.h>
#include <stdlib.h>

#include <mstatshm.h>

int
main(int argc, char **argv)
{
	struct mstat_reader *r;
	struct mstat_snapshot *s = malloc(sizeof(*s));
	char err[256];

	if (argc != 2 || !s) {
		fprintf(stderr, "usage: mstat-test-open-pid PID\n");
		return 2;
	}
	if (mstat_reader_open_pid(&r, atoi(argv[1]), err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	int rc = mstat_reader_snapshot(r, s);
	printf("%s %llu\n", mstat_reader_info(r)->shm_name,
	       rc == 0 ? (unsigned long long)s->total.alloc_count : 0ull);
	mstat_reader_close(r);
	free(s);
	return rc == 0 ? 0 : 1;
}
