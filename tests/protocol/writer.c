/* SPDX-License-Identifier: MIT */
/*
 * writer.c - mstat-test-writer, a target process for the protocol tests.
 *
 *   mstat-test-writer pairs THREADS SECTIONS
 *	each thread runs reallocs from a huge block to a class-144 block
 *	(one section bumping two counters that must always be equal): at
 *	least SECTIONS of them, and on until a second byte arrives on stdin
 *   mstat-test-writer handoff PAIRS OBJECTS
 *	producer threads allocate, consumer threads free what they are
 *	handed: per class, frees never exceed allocations
 *   mstat-test-writer exact WAVES THREADS OPS
 *	WAVES waves of THREADS threads, all alive at once (run with a small
 *	MSTAT_SLOTS to go past the slot capacity), doing a mix of counts,
 *	then exiting
 *   mstat-test-writer stall
 *	counts once, enters an update section and stops itself (SIGSTOP)
 *	inside it; once continued, finishes the section
 *   mstat-test-writer spin
 *	counts once, enters an update section, prints "inside" and never
 *	leaves it
 *
 * Talk: prints "ready" once its segment exists, starts on one byte from
 * stdin, prints "done" and then its ground truth when its work is over,
 * and exits when stdin is closed.
 *
 * Ground truth is kept apart from the library, in plain atomic tallies.
 * Only sizes above 2^36 are used, in classes no real allocation reaches,
 * so the truth stays exact even if malloc itself is counted.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mstatshm.h>
#include "lib/writer.h"

#define TEST_SIZES 4
static const uint64_t test_size[TEST_SIZES] = {
	(UINT64_C(1) << 36) + 1,
	(UINT64_C(1) << 38),
	(UINT64_C(1) << 40),     /* class 144 */
	(UINT64_C(1) << 40) + 1, /* the huge class */
};

static _Atomic uint64_t truth[MSTAT_CLASS_COUNT][4];
static _Atomic uint64_t truth_requested;

static void
tally(unsigned k, uint64_t size)
{
	unsigned c = mstat_size_class(size);
	atomic_fetch_add(&truth[c][k], k % 2 ? size : 1);
}

static void
do_alloc(uint64_t size)
{
	mstat_record_alloc(size, size - 1);
	tally(0, size);
	tally(1, size);
	atomic_fetch_add(&truth_requested, size - 1);
}

static void
do_free(uint64_t size)
{
	mstat_record_free(size);
	tally(2, size);
	tally(3, size);
}

static void
do_realloc(uint64_t old_size, uint64_t new_size)
{
	mstat_record_realloc(old_size, new_size, new_size);
	tally(2, old_size);
	tally(3, old_size);
	tally(0, new_size);
	tally(1, new_size);
	atomic_fetch_add(&truth_requested, new_size);
}

/* Counts made before libmstatshm's constructor runs. */
__attribute__((constructor(101))) static void
before_the_library(void)
{
	do_alloc(test_size[0]);
	do_alloc(test_size[1]);
	do_free(test_size[0]);
}

static unsigned long arg_n[3];

/* ---- pairs ---- */

static _Atomic int stop;

static void *
pairs_thread(void *unused)
{
	(void)unused;
	for (unsigned long i = 0; i < arg_n[1] || !atomic_load(&stop); i++)
		do_realloc(test_size[3], test_size[2]);
	return NULL;
}

static void
run_pairs(void)
{
	pthread_t *t = calloc(arg_n[0], sizeof(*t));
	char byte;

	for (unsigned long i = 0; i < arg_n[0]; i++)
		pthread_create(&t[i], NULL, pairs_thread, NULL);
	if (read(0, &byte, 1) != 1)
		exit(3);
	atomic_store(&stop, 1);
	for (unsigned long i = 0; i < arg_n[0]; i++)
		pthread_join(t[i], NULL);
	free(t);
}

/* ---- handoff ---- */

#define RING 256
struct handoff {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t ring[RING];
	unsigned head, tail; /* head - tail objects in the ring */
};

static void *
producer(void *arg)
{
	struct handoff *h = arg;

	for (unsigned long i = 0; i < arg_n[1]; i++) {
		uint64_t size = test_size[i % TEST_SIZES];
		do_alloc(size); /* counted before it is handed over */
		pthread_mutex_lock(&h->lock);
		while (h->head - h->tail == RING)
			pthread_cond_wait(&h->cond, &h->lock);
		h->ring[h->head++ % RING] = size;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
	}
	return NULL;
}

static void *
consumer(void *arg)
{
	struct handoff *h = arg;

	for (unsigned long i = 0; i < arg_n[1]; i++) {
		pthread_mutex_lock(&h->lock);
		while (h->head == h->tail)
			pthread_cond_wait(&h->cond, &h->lock);
		uint64_t size = h->ring[h->tail++ % RING];
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		do_free(size);
	}
	return NULL;
}

/* ---- exact ---- */

static pthread_barrier_t wave;

static void *
exact_thread(void *arg)
{
	unsigned long seed = (unsigned long)(uintptr_t)arg;

	/* Every thread of the wave holds its slot (or found none) before any
	 * goes on: more threads than slots do overflow, whatever the load. */
	do_alloc(test_size[seed % TEST_SIZES]);
	pthread_barrier_wait(&wave);
	for (unsigned long i = 0; i < arg_n[2]; i++) {
		uint64_t a = test_size[(seed + i) % TEST_SIZES];
		uint64_t b = test_size[(seed * 7 + i) % TEST_SIZES];
		switch ((seed + i) % 3) {
		case 0: do_alloc(a); break;
		case 1: do_free(b); break;
		default: do_realloc(a, b); break;
		}
	}
	return NULL;
}

static void
run_threads(unsigned long n, void *(*fn)(void *), void *arg, int vary)
{
	pthread_t *t = calloc(n, sizeof(*t));

	for (unsigned long i = 0; i < n; i++) {
		void *a = vary ? (void *)(uintptr_t)(i + 1) : arg;
		if (pthread_create(&t[i], NULL, fn, a) != 0) {
			perror("pthread_create");
			exit(3);
		}
	}
	for (unsigned long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
}

/* ---- stall and spin: a section left open, through the internal API ---- */

static void
open_section_and(int stop_inside)
{
	/* The first count gives this thread a slot of its own. */
	do_alloc(test_size[0]);
	struct mstat_section sec;
	if (!mstat_thread.own || !mstat_section_open(&sec)) {
		fprintf(stderr, "no slot\n");
		exit(3);
	}
	unsigned c = mstat_size_class(test_size[2]);
	mstat_wsection_add(sec.slot, sec.g, c, MSTAT_C_ALLOC_COUNT, 1);
	if (!stop_inside) {
		printf("inside\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	raise(SIGSTOP); /* inside the section, half of it done */
	mstat_wsection_add(sec.slot, sec.g, c, MSTAT_C_ALLOC_BYTES, test_size[2]);
	mstat_wsection_requested(sec.slot, sec.g, test_size[2] - 1);
	mstat_wsection_touch(sec.slot, c);
	mstat_section_close(&sec);
	tally(0, test_size[2]);
	tally(1, test_size[2]);
	atomic_fetch_add(&truth_requested, test_size[2] - 1);
}

static void
print_truth(void)
{
	printf("done\n");
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		if (truth[c][0] || truth[c][2])
			printf("class %u %llu %llu %llu %llu\n", c,
			       (unsigned long long)truth[c][0],
			       (unsigned long long)truth[c][1],
			       (unsigned long long)truth[c][2],
			       (unsigned long long)truth[c][3]);
	printf("requested %llu\nend\n", (unsigned long long)truth_requested);
	fflush(stdout);
}

static int
usage(void)
{
	fprintf(stderr, "usage: mstat-test-writer pairs|handoff|exact|stall|spin N...\n");
	return 2;
}

int
main(int argc, char **argv)
{
	char byte;

	if (argc < 2)
		return usage();
	for (int i = 2; i < argc && i < 5; i++)
		arg_n[i - 2] = strtoul(argv[i], NULL, 10);
	if (!mstat_self_enabled()) {
		fprintf(stderr, "not counting: %s\n", mstat_self_status());
		return 3;
	}
	printf("ready\n");
	fflush(stdout);
	if (read(0, &byte, 1) != 1)
		return 0;

	if (strcmp(argv[1], "pairs") == 0) {
		run_pairs();
	} else if (strcmp(argv[1], "handoff") == 0) {
		struct handoff *h = calloc(arg_n[0], sizeof(*h));
		pthread_t *t = calloc(2 * arg_n[0], sizeof(*t));
		for (unsigned long i = 0; i < arg_n[0]; i++) {
			pthread_mutex_init(&h[i].lock, NULL);
			pthread_cond_init(&h[i].cond, NULL);
			pthread_create(&t[2 * i], NULL, producer, &h[i]);
			pthread_create(&t[2 * i + 1], NULL, consumer, &h[i]);
		}
		for (unsigned long i = 0; i < 2 * arg_n[0]; i++)
			pthread_join(t[i], NULL);
		free(t);
		free(h);
	} else if (strcmp(argv[1], "exact") == 0) {
		pthread_barrier_init(&wave, NULL, (unsigned)arg_n[1]);
		for (unsigned long w = 0; w < arg_n[0]; w++)
			run_threads(arg_n[1], exact_thread, NULL, 1);
	} else if (strcmp(argv[1], "stall") == 0) {
		open_section_and(1);
	} else if (strcmp(argv[1], "spin") == 0) {
		open_section_and(0);
	} else {
		return usage();
	}
	print_truth();
	while (read(0, &byte, 1) > 0)
		;
	return 0;
}
