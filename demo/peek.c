/* SPDX-License-Identifier: MIT */
/*
 * peek.c - print live snapshots of some processes, one line each second.
 *
 *   mstat-peek PID...
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mstatshm.h"

int
main(int argc, char **argv)
{
	struct mstat_reader *r[64];
	struct mstat_snapshot snap;
	char err[256];
	int n = 0;

	for (int i = 1; i < argc && n < 64; i++) {
		int rc = mstat_reader_open_pid(&r[n], atoi(argv[i]), err, sizeof(err));
		if (rc < 0)
			fprintf(stderr, "mstat-peek: %s\n", err);
		else
			n++;
	}
	if (n == 0)
		return 1;
	for (int tick = 0; tick < 10; tick++) {
		for (int i = 0; i < n; i++) {
			const struct mstat_target_info *in = mstat_reader_info(r[i]);
			int rc = mstat_reader_snapshot(r[i], &snap);
			if (rc < 0) {
				printf("%7d %-12s %s\n", (int)in->pid, in->name,
				       mstat_reader_error(r[i]));
				continue;
			}
			printf("%7d %-12s allocs %12" PRIu64 "  frees %12" PRIu64
			       "  live %10" PRIu64 " B in %8" PRIu64 " objects\n",
			       (int)in->pid, in->name, snap.total.alloc_count,
			       snap.total.free_count, mstat_live_bytes(&snap.total),
			       mstat_live_objects(&snap.total));
		}
		fflush(stdout);
		sleep(1);
	}
	for (int i = 0; i < n; i++)
		mstat_reader_close(r[i]);
	return 0;
}
