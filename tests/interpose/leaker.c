/* SPDX-License-Identifier: MIT */
/*
 * leaker.c - a plain program (not linked with libmstatshm) for the shell
 * tests, run under LD_PRELOAD or mstat-run.
 *
 *   leaker leak N SIZE [CODE]  allocates N blocks of SIZE bytes, keeps them,
 *                              prints "usable U", the usable bytes of all N,
 *                              and exits with CODE
 *   leaker kill N SIZE         the same, then kills itself with SIGKILL
 *   leaker status              asks the library whether it counts (which
 *                              makes its segment), prints what it says of
 *                              itself ("not preloaded" without it) and how
 *                              many segments in /dev/shm carry its pid
 *   leaker errno N SIZE        N times malloc(SIZE) and free, errno set
 *                              before each: prints "errno kept" if none
 *                              changed it (a call that succeeds leaves it
 *                              alone), else which, and exits 1
 */
#include <errno.h>
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
status(void)
{
	const char *(*self_status)(void);
	int (*self_enabled)(void);
	char prefix[40];
	int n = 0;
	struct dirent *de;

	*(void **)&self_enabled = dlsym(RTLD_DEFAULT, "mstat_self_enabled");
	*(void **)&self_status = dlsym(RTLD_DEFAULT, "mstat_self_status");
	if (self_enabled)
		self_enabled();
	printf("status: %s\n", self_status ? self_status() : "not preloaded");
	snprintf(prefix, sizeof(prefix), "mstat.%d.", (int)getpid());
	DIR *d = opendir("/dev/shm");
	while (d && (de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	printf("segments: %d\n", n);
	return 0;
}

/* Sizes kept from the compiler's sight: each call is made. */
static int
errno_kept(long n, size_t size)
{
	for (long i = 0; i < n; i++) {
		errno = EILSEQ;
		void *volatile p = malloc(size);
		if (!p)
			return 3;
		if (errno != EILSEQ) {
			printf("errno: malloc %ld of %ld made it %d\n", i, n, errno);
			return 1;
		}
		free(p);
		if (errno != EILSEQ) {
			printf("errno: free %ld of %ld made it %d\n", i, n, errno);
			return 1;
		}
	}
	printf("errno kept\n");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "status") == 0)
		return status();
	if (argc == 4 && strcmp(argv[1], "errno") == 0)
		return errno_kept(atol(argv[2]), (size_t)atol(argv[3]));
	if (argc < 4 || (strcmp(argv[1], "leak") && strcmp(argv[1], "kill"))) {
		fprintf(stderr, "usage: leaker leak|kill N SIZE [CODE] | status | "
				"errno N SIZE\n");
		return 2;
	}
	long n = atol(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	size_t total = 0;
	for (long i = 0; i < n; i++) {
		void *p = malloc(size);
		if (!p)
			return 3;
		/* Blocks of one size need not have one usable size: a sampled
		 * one is page-aligned, which may take a few bytes more. */
		total += malloc_usable_size(p);
	}
	printf("usable %zu\n", total);
	fflush(stdout);
	if (strcmp(argv[1], "kill") == 0)
		raise(SIGKILL);
	return argc > 4 ? atoi(argv[4]) : 0;
}
