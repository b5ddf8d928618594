/* SPDX-License-Identifier: MIT */
/*
 * workload.c - a demo process with a recognisable heap behaviour, for
 * watching with mstat-top.  It calls plain malloc and free: run it under
 * the library (mstat-run, or LD_PRELOAD=libmstatshm.so) to count them.
 *
 *   mstat-demo-workload steady    a working set of constant size, renewed
 *                                 at a steady rate (1 thread)
 *   mstat-demo-workload churning  bursts of many short-lived objects
 *                                 (4 threads): high rates, little live
 *   mstat-demo-workload leaking [MIB]
 *                                 like steady, but keeps one object in 16
 *                                 (2 threads): live bytes grow; it exits
 *                                 once the two have leaked MIB MiB
 *                                 (default 64), counted in usable bytes
 *                                 as its row counts them: it then holds
 *                                 that, and a few KiB of the C library's
 *   mstat-demo-workload short     churns and leaks a little for a few
 *                                 seconds, then exits
 *
 * SIGTERM, SIGINT or SIGHUP make it exit(0), as a service stopped does.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 4096
#define LEAK_MIB 64

struct worker {
	const char *mode;
	uint64_t rng;
};

/* leaking: what its threads have leaked, and how much they leak. */
static _Atomic size_t leaked;
static size_t leak_limit = (size_t)LEAK_MIB << 20;

static uint64_t
next(struct worker *w)
{
	/* xorshift64 */
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

/* Sizes spread over the classes: 16 bytes to 16 KiB, small ones likelier. */
static size_t
some_size(struct worker *w)
{
	unsigned a = (unsigned)(next(w) % 64), b = (unsigned)(next(w) % 64);
	unsigned lg = 4 + a * b / 400; /* 4..13 */
	return ((size_t)1 << lg) + next(w) % ((size_t)1 << lg);
}

static void *
fresh(size_t size)
{
	char *p = malloc(size);
	if (p)
		memset(p, 1, size < 64 ? size : 64); /* used, so kept */
	return p;
}

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* steady and leaking: renew 100 random slots of the working set every 5 ms;
 * leaking drops one renewed object in 16 instead of freeing it, until its
 * threads have leaked leak_limit bytes. */
static void
renew(struct worker *w, bool leak, long rounds)
{
	void **slot = calloc(SLOTS, sizeof(*slot));
	bool done = false;

	for (long r = 0; slot && !done && (rounds < 0 || r < rounds); r++) {
		for (int i = 0; i < 100 && !done; i++) {
			size_t k = next(w) % SLOTS;
			if (leak && slot[k] && next(w) % 16 == 0) {
				/* The old one is lost.  Relaxed: a count. */
				size_t n = malloc_usable_size(slot[k]);
				done = atomic_fetch_add_explicit(
					       &leaked, n, memory_order_relaxed) +
					       n >= leak_limit;
			} else {
				free(slot[k]);
			}
			slot[k] = done ? NULL : fresh(some_size(w));
		}
		if (!done)
			pause_ms(5);
	}
	for (size_t k = 0; slot && k < SLOTS; k++)
		free(slot[k]);
	free(slot);
}

/* churning: 5000 objects allocated, then all freed, every 10 ms. */
static void
churn(struct worker *w, long rounds)
{
	static _Thread_local void *burst[5000];

	for (long r = 0; rounds < 0 || r < rounds; r++) {
		for (int i = 0; i < 5000; i++)
			burst[i] = fresh(32 + next(w) % 480);
		for (int i = 0; i < 5000; i++)
			free(burst[i]);
		pause_ms(10);
	}
}

static void *
run(void *arg)
{
	struct worker *w = arg;

	if (strcmp(w->mode, "steady") == 0)
		renew(w, false, -1);
	else if (strcmp(w->mode, "leaking") == 0)
		renew(w, true, -1);
	else if (strcmp(w->mode, "churning") == 0)
		churn(w, -1);
	else { /* short: a few seconds */
		churn(w, 150 + (long)(next(w) % 150));
		for (int i = 0; i < 200; i++)
			(void)fresh(some_size(w)); /* leaked at exit */
	}
	return NULL;
}

/* Waits for a signal of `arg`'s set, then exits as main() would. */
static void *
wait_stop(void *arg)
{
	int sig;

	if (sigwait(arg, &sig) == 0)
		exit(0);
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steady";
	int threads = 0;
	char *end = NULL;

	if (strcmp(mode, "steady") == 0 || strcmp(mode, "short") == 0)
		threads = argc == 2 ? 1 : 0;
	else if (strcmp(mode, "churning") == 0)
		threads = argc == 2 ? 4 : 0;
	else if (strcmp(mode, "leaking") == 0) {
		long mib = argc == 3 ? strtol(argv[2], &end, 10) : LEAK_MIB;
		if (argc <= 3 && (!end || !*end) && mib >= 1 && mib <= 65536) {
			threads = 2;
			leak_limit = (size_t)mib << 20;
		}
	}
	if (!threads) {
		fprintf(stderr, "usage: %s steady|churning|leaking [MIB]|short\n",
			argv[0]);
		return 2;
	}
	/* Stopped as a service is (SIGTERM, or ^C): it exits, and its row
	 * says exited, not killed.  The workers inherit the mask. */
	static sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_t t[4], stopper;
	if (pthread_sigmask(SIG_BLOCK, &stop, NULL) != 0 ||
	    pthread_create(&stopper, NULL, wait_stop, &stop) != 0)
		return 1;
	struct worker w[4];
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ mode, 0x9e3779b97f4a7c15u * (uint64_t)(i + 1) ^
					       (uint64_t)time(NULL) };
		if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
			return 1;
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
