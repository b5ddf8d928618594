/* SPDX-License-Identifier: MIT */
/*
 * late.c - mstat-test-late, a plain program (not linked with libmstatshm)
 * whose blocks are freed late in its exit, for exit.sh; run under
 * mstat-run or LD_PRELOAD.  It links libmstat-test-late.so (late_lib.c),
 * whose constructor allocates 100 blocks of 1000 bytes.  It prints
 * "usable U", the usable bytes of one, then ends:
 *
 *   late dtor        that library's destructor frees them
 *   late atexit      an atexit handler frees them
 *   late quick_exit  an at_quick_exit handler frees them; quick_exit()
 *   late _exit       the destructor frees them, then calls _exit()
 *   late kill        the destructor frees half, then SIGKILLs itself
 *   late busy        the destructor frees them, then allocates and frees
 *                    until a profiling timer's tick finds it inside an
 *                    update of its segment (its exit_flags say so), and
 *                    SIGKILLs itself there
 *   late thread      the destructor starts a thread that allocates 10
 *                    blocks of 3000 bytes and frees half; it joins it,
 *                    frees the other half, then the 100 blocks
 *   late vfork       the destructor vforks a child that _exit()s, then
 *                    frees them
 *   late self        the destructor frees them, then prints "self N S":
 *                    a snapshot of itself says N frees of their class,
 *                    in state S
 *   late wait        main() returns once a byte arrives on stdin; the
 *                    destructor prints "exiting", waits until stdin is
 *                    closed, then frees them
 *   late keep        nothing frees them
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/interpose/late.h"

static void
free_all(void)
{
	late_free(0, 100);
}

/* The header of this process's own segment, mapped read-only: the name
 * is in the library's status ("counting into /dev/shm/NAME ..."). */
static const void *
own_header(void)
{
	const char *(*status)(void);
	char path[128];

	*(void **)&status = dlsym(RTLD_DEFAULT, "mstat_self_status");
	const char *st = status ? status() : "", *p = strstr(st, "/dev/shm/");
	if (!p)
		return NULL;
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(p, " "), p);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *h = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	return h == MAP_FAILED ? NULL : h;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	printf("usable %zu\n", late_usable());
	fflush(stdout);
	late_mode(m);
	if (strcmp(m, "busy") == 0)
		late_watch(own_header());
	if (strcmp(m, "atexit") == 0)
		atexit(free_all);
	if (strcmp(m, "quick_exit") == 0) {
		at_quick_exit(free_all);
		quick_exit(0);
	}
	if (strcmp(m, "wait") == 0) {
		char c;
		if (read(0, &c, 1) != 1)
			return 1;
	}
	return 0;
}
