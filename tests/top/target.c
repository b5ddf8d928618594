/* SPDX-License-Identifier: MIT */
/*
 * target.c - mstat-observer-target, an instrumented process for the
 * observer's end-to-end tests.  It counts through the explicit API.
 *
 *   mstat-observer-target fixed
 *	counts 10 allocations of 2^37 bytes and 3 frees of them, then idles
 *   mstat-observer-target steady
 *	every 10 ms, 100 reallocations of 64 bytes to 64 bytes (each an
 *	allocation and a free, in one update); 50 live, exactly, always
 *   mstat-observer-target leak
 *	every 10 ms, 10 allocations of 2^38 bytes, never freed
 *   mstat-observer-target exec
 *	like fixed; on a line on stdin, exec()s itself as "fixed" with
 *	MSTAT_NAME=<name>-after (the library replaces the segment)
 *   mstat-observer-target sampled
 *	like fixed, then mallocs 100 blocks of 1 KiB and keeps them: real
 *	allocations, which the library samples (MSTAT_SAMPLE_BYTES=1:
 *	every one)
 *   mstat-observer-target stall
 *	like fixed, then one more allocation and free of 2^37 bytes, then
 *	enters an update section (an allocation of 2^37 bytes) and stops
 *	itself (SIGSTOP) inside it; once continued, finishes it and idles
 *
 * The library interposes malloc too, so the process's own allocations are
 * counted as well: the exact counts are those of the classes of 2^37 and
 * 2^38 bytes, which no real allocation reaches.
 *
 * Prints "ready" once its segment exists; exits (cleanly: atexit marks the
 * segment exiting and unlinks it) when its stdin is closed: never after a
 * time, so that a test sees what it waits for however slow the machine.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mstatshm.h>
#include "lib/writer.h"

#define FIXED_SIZE (UINT64_C(1) << 37)
#define LEAK_SIZE (UINT64_C(1) << 38)

static void
stall_inside_section(void)
{
	/* A count first, so that this thread has a slot of its own. */
	mstat_record_alloc(FIXED_SIZE, FIXED_SIZE);
	mstat_record_free(FIXED_SIZE);
	struct mstat_section sec;
	if (!mstat_thread.own || !mstat_section_open(&sec)) {
		fprintf(stderr, "target: no slot\n");
		exit(3);
	}
	unsigned c = mstat_size_class(FIXED_SIZE);
	mstat_wsection_add(sec.slot, sec.g, c, MSTAT_C_ALLOC_COUNT, 1);
	raise(SIGSTOP); /* inside the section */
	mstat_wsection_add(sec.slot, sec.g, c, MSTAT_C_ALLOC_BYTES, FIXED_SIZE);
	mstat_wsection_touch(sec.slot, c);
	mstat_section_close(&sec);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int steady = strcmp(mode, "steady") == 0, leak = strcmp(mode, "leak") == 0;

	int exec_mode = strcmp(mode, "exec") == 0;
	int sampled = strcmp(mode, "sampled") == 0;

	if (!steady && !leak && !exec_mode && !sampled && strcmp(mode, "fixed") &&
	    strcmp(mode, "stall")) {
		fprintf(stderr, "usage: mstat-observer-target "
			"fixed|steady|leak|stall|exec|sampled\n");
		return 2;
	}
	if (!mstat_self_enabled()) {
		fprintf(stderr, "target: %s\n", mstat_self_status());
		return 3;
	}
	if (!steady && !leak) {
		for (int i = 0; i < 10; i++)
			mstat_record_alloc(FIXED_SIZE, FIXED_SIZE);
		for (int i = 0; i < 3; i++)
			mstat_record_free(FIXED_SIZE);
	}
	if (steady)
		for (int i = 0; i < 50; i++)
			mstat_record_alloc(64, 64);
	static void *kept[100];
	for (int i = 0; sampled && i < 100; i++)
		if (!(kept[i] = malloc(1024)))
			return 3;
	/* write(), not stdio: no buffer to allocate. */
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		return 3;
	if (strcmp(mode, "stall") == 0)
		stall_inside_section();

	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char buf[64];
		if (poll(&p, 1, 10) > 0) {
			if (read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
				return 0; /* stdin closed */
			if (exec_mode) {
				char name[128];
				snprintf(name, sizeof(name), "%s-after",
					 getenv("MSTAT_NAME") ? getenv("MSTAT_NAME") : "");
				setenv("MSTAT_NAME", name, 1);
				/* argv[0], not /proc/self/exe: under valgrind
				 * that names valgrind. */
				execl(argv[0], argv[0], "fixed", (char *)NULL);
				return 4;
			}
		}
		for (int i = 0; steady && i < 100; i++)
			mstat_record_realloc(64, 64, 64);
		for (int i = 0; leak && i < 10; i++)
			mstat_record_alloc(LEAK_SIZE, LEAK_SIZE);
	}
}
