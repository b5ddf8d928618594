/* SPDX-License-Identifier: MIT */
/*
 * workload.c - a demo process with a recognisable heap behaviour.
 *
 *   mstat-demo-workload steady    allocates and frees at a steady rate
 *   mstat-demo-workload leaking   keeps a little of what it allocates
 *   mstat-demo-workload churning  bursts of many short-lived objects
 *
 * It counts through the explicit API (mstat_record_*), so it shows the
 * segment and the reader at work without malloc interposition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mstatshm.h"

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steady";
	unsigned seed = 1;

	if (strcmp(mode, "steady") && strcmp(mode, "leaking") &&
	    strcmp(mode, "churning")) {
		fprintf(stderr, "usage: %s steady|leaking|churning\n", argv[0]);
		return 2;
	}
	fprintf(stderr, "%s: %s\n", mode, mstat_self_status());
	for (;;) {
		int burst = strcmp(mode, "churning") == 0 ? 20000 : 2000;
		for (int i = 0; i < burst; i++) {
			size_t size = 16u << (rand_r(&seed) % 8);
			mstat_record_alloc(size, size);
			if (strcmp(mode, "leaking") || i % 64)
				mstat_record_free(size);
		}
		pause_ms(10);
	}
}
