/* SPDX-License-Identifier: MIT */
/*
 * late_lib.c - libmstat-test-late.so, for late.c: a shared library whose
 * constructor allocates LATE_BLOCKS blocks of LATE_SIZE bytes and whose
 * destructor frees them.  The program links it, so the loader
 * initialises it before a preloaded libmstatshm and finalises it after:
 * its frees come after the library's own exit handler.  How its
 * destructor ends is the program's choice (late_mode(), late.c).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/interpose/late.h"
#include "shm/layout.h"
#include <mstatshm.h>
#include "shm/sizeclass.h"

#define LATE_BLOCKS 100
#define LATE_SIZE 1000
#define THREAD_BLOCKS 10
#define THREAD_SIZE 3000

static void *blocks[LATE_BLOCKS];
static const char *mode = "";
static const struct mstat_shm_header *watched;

void
late_mode(const char *m)
{
	mode = m;
}

void
late_watch(const void *header)
{
	watched = header;
}

/* SIGPROF: death, if it finds the exiting thread inside an update. */
static void
kill_if_busy(int sig)
{
	(void)sig;
	if (atomic_load(&watched->exit_flags) & MSTAT_EXIT_BUSY)
		raise(SIGKILL);
}

/* The usable bytes of one block (all are alike). */
size_t
late_usable(void)
{
	return malloc_usable_size(blocks[0]);
}

void
late_free(unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		free(blocks[i]);
		blocks[i] = NULL;
	}
}

__attribute__((constructor)) static void
late_init(void)
{
	for (unsigned i = 0; i < LATE_BLOCKS; i++)
		blocks[i] = malloc(LATE_SIZE);
}

/* A thread started by a destructor: allocates THREAD_BLOCKS blocks,
 * frees half of them, hands the rest back. */
static void *
worker(void *arg)
{
	void **kept = arg;

	for (unsigned i = 0; i < THREAD_BLOCKS; i++) {
		void *p = malloc(THREAD_SIZE);
		if (i % 2)
			free(p);
		else
			kept[i / 2] = p;
	}
	return NULL;
}

__attribute__((destructor)) static void
late_fini(void)
{
	if (strcmp(mode, "dtor") == 0) {
		late_free(0, LATE_BLOCKS);
	} else if (strcmp(mode, "_exit") == 0) {
		late_free(0, LATE_BLOCKS);
		_exit(0);
	} else if (strcmp(mode, "kill") == 0) {
		late_free(0, LATE_BLOCKS / 2);
		raise(SIGKILL);
	} else if (strcmp(mode, "thread") == 0) {
		void *kept[THREAD_BLOCKS / 2];
		pthread_t t;
		if (pthread_create(&t, NULL, worker, kept) == 0 &&
		    pthread_join(t, NULL) == 0)
			for (unsigned i = 0; i < THREAD_BLOCKS / 2; i++)
				free(kept[i]);
		late_free(0, LATE_BLOCKS);
	} else if (strcmp(mode, "vfork") == 0) {
		pid_t pid = vfork();
		if (pid == 0)
			_exit(0); /* shares our memory: must not end our counting */
		waitpid(pid, NULL, 0);
		late_free(0, LATE_BLOCKS);
	} else if (strcmp(mode, "self") == 0) {
		/* A snapshot of itself, its segment's name gone: the frees of
		 * the blocks' class it counts. */
		int (*snap)(struct mstat_snapshot *);
		static struct mstat_snapshot s;
		size_t usable = late_usable();
		late_free(0, LATE_BLOCKS);
		*(void **)&snap = dlsym(RTLD_DEFAULT, "mstat_self_snapshot");
		if (snap && snap(&s) == 0)
			printf("self %llu %u\n", (unsigned long long)
			       s.classes[mstat_size_class(usable)].free_count, s.state);
		fflush(stdout);
	} else if (strcmp(mode, "busy") == 0 && watched) {
		/* Count until a profiling tick finds this thread inside an
		 * update of its segment, and dies of it there. */
		struct sigaction sa = { .sa_handler = kill_if_busy };
		struct itimerval it = { { 0, 100 }, { 0, 100 } };
		late_free(0, LATE_BLOCKS);
		sigaction(SIGPROF, &sa, NULL);
		setitimer(ITIMER_PROF, &it, NULL);
		for (unsigned i = 0; i < 100000000u; i++) {
			void *volatile p = malloc(LATE_SIZE);
			free(p);
		}
	} else if (strcmp(mode, "wait") == 0) {
		char c;
		printf("exiting\n");
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
		late_free(0, LATE_BLOCKS);
	}
}
