/* SPDX-License-Identifier: MIT */
/*
 * forksamples.c - a fork child samples allocations of its own: after
 * the forks of a prefork server, the parent and its children make the
 * same allocations, and which of them each samples must be as
 * independent as two programs' samples are.
 *
 *   forksamples preloaded   run with libmstatshm preloaded
 *   forksamples attached    loads ATTACH_LIB (libmstatshm-attach) and
 *                           starts it in-process, as mstat-attach would
 *                           have the process do (tests/attach/test_library.c)
 *
 * Run with MSTAT_EAGER=1 (every process has a segment from its fork on)
 * and MSTAT_SAMPLE_BYTES=8192.  The parent allocates once, forks two
 * children, and each of the three then makes POSITIONS allocations of
 * SIZE bytes, each from a call stack of its own: position i is reached
 * through BITS calls of zero() or one(), bit b of i saying which at
 * depth b.  Each reads its own profile back with the reader, as an
 * observer would: a stack sampled names its position by its frames.
 *
 * Each allocation is sampled with probability p = 1 - exp(-SIZE / R) at
 * the mean interval R (docs/design.md, "Sampling"), independently of the
 * others: each process samples Binomial(POSITIONS, p) of them, and, if
 * two processes' random numbers are independent, both sample a position
 * with probability p^2, so the positions both sampled are
 * Binomial(POSITIONS, p^2) (but for the one that ends the countdown
 * running at a fork, which both may sample: lib/fork.c).  Every count
 * must lie inside both tails of its binomial at ALPHA: while a child
 * drew from its parent's random state, the positions any two processes
 * both sampled were every one each sampled (about 314 of an expected
 * 96).  Exit 0, 1 with what failed, 77 under valgrind (truth.h).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/inject.h"
#include "shm/reader.h"
#include "tests/interpose/truth.h"

#define BITS 10
#define POSITIONS (1u << BITS)
#define SIZE 3000
#define INTERVAL 8192
/* The parent and the two children it forks, one after the other. */
#define PROCS 3
/* Each bound's chance of failing a correct library. */
#define ALPHA 1e-7

/* Each function alone in a section of its own, whose bounds the linker
 * gives: the frame a return address is in is known exactly. */
#define IN(s) __attribute__((noinline, noclone, section(s)))
extern const char __start_mstat_fs_zero[], __stop_mstat_fs_zero[];
extern const char __start_mstat_fs_one[], __stop_mstat_fs_one[];
extern const char __start_mstat_fs_leaf[], __stop_mstat_fs_leaf[];

/* Written by zero() and one(), so that their code differs: identical,
 * the compiler would make them one function. */
static volatile unsigned trail;

IN("mstat_fs_leaf") static void
leaf(void)
{
	void *p = malloc(SIZE);

	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	free(p);
}

static void descend(unsigned i, unsigned depth);

IN("mstat_fs_zero") static void
zero(unsigned i, unsigned depth)
{
	trail = 0;
	descend(i, depth);
	__asm__ volatile("" : : : "memory");
}

IN("mstat_fs_one") static void
one(unsigned i, unsigned depth)
{
	trail = 1;
	descend(i, depth);
	__asm__ volatile("" : : : "memory");
}

static void
descend(unsigned i, unsigned depth)
{
	if (depth == BITS)
		leaf();
	else if (i >> depth & 1)
		one(i, depth + 1);
	else
		zero(i, depth + 1);
}

static int
in(uint64_t pc, const char *start, const char *stop)
{
	return pc >= (uintptr_t)start && pc < (uintptr_t)stop;
}

/* What one process sampled, where its parent reads it. */
struct seen {
	int failed;             /* its reason is on stderr */
	uint64_t interval;      /* the profile's */
	unsigned char sampled[POSITIONS];
};

/* The position stack `s` was taken at, -1 if none (another call of the
 * process's), or -2 if its frames are not such a stack's. */
static int
position(const struct mstat_profile_stack *s)
{
	unsigned bits = 0, pos = 0;

	for (uint32_t f = 1; f < s->depth; f++) {
		uint64_t pc = s->frames[f];
		int bit = in(pc, __start_mstat_fs_one, __stop_mstat_fs_one);
		if (!bit && !in(pc, __start_mstat_fs_zero, __stop_mstat_fs_zero))
			continue;
		/* Leaf first: the deepest call, bit BITS - 1, comes first. */
		if (bits < BITS)
			pos |= (unsigned)bit << (BITS - 1 - bits);
		bits++;
	}
	if (s->depth == 0 || !in(s->frames[0], __start_mstat_fs_leaf, __stop_mstat_fs_leaf))
		return bits ? -2 : -1;
	return bits == BITS ? (int)pos : -2;
}

/* Makes the allocations, and reads which of them this process sampled. */
static void
run(struct seen *out, const char *who)
{
	struct mstat_reader *r;
	struct mstat_profile p;
	char err[256];
	int rc;

	for (unsigned i = 0; i < POSITIONS; i++)
		descend(i, 0);
	if (mstat_reader_open_pid(&r, getpid(), err, sizeof(err)) != 0) {
		fprintf(stderr, "forksamples: %s: no segment: %s\n", who, err);
		out->failed = 1;
		return;
	}
	if ((rc = mstat_reader_profile(r, &p)) != 0) {
		fprintf(stderr, "forksamples: %s: no profile: %d\n", who, rc);
		out->failed = 1;
		mstat_reader_close(r);
		return;
	}
	out->interval = p.sample_bytes;
	for (uint32_t k = 0; k < p.nstacks; k++) {
		const struct mstat_profile_stack *s = &p.stacks[k];
		int i = position(s);
		if (i == -1 || s->allocs == 0)
			continue;
		if (i == -2 || out->sampled[i] || s->allocs != 1) {
			fprintf(stderr, "forksamples: %s: stack %u: %s\n", who, k,
				i == -2 ? "frames of no position" : "a position sampled twice");
			out->failed = 1;
			continue;
		}
		out->sampled[i] = 1;
	}
	mstat_reader_profile_release(&p);
	mstat_reader_close(r);
}

/* ln of Binomial(n, q)'s probability of k. */
static double
log_pmf(unsigned n, double q, unsigned k)
{
	return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) +
	       k * log(q) + (n - k) * log1p(-q);
}

/* Whether x lies inside both tails of Binomial(n, q) at ALPHA: its
 * chances of at most and of at least x both above ALPHA.  Said. */
static int
binomial_holds(const char *what, unsigned x, unsigned n, double q)
{
	double below = 0, above = 0;

	for (unsigned k = 0; k <= n; k++) {
		double pk = exp(log_pmf(n, q, k));
		if (k <= x)
			below += pk;
		if (k >= x)
			above += pk;
	}
	int ok = below > ALPHA && above > ALPHA;
	fprintf(stderr, "forksamples: %s: %u of %u, expected %.1f (P(<=) %.3g, P(>=) %.3g)%s\n",
		what, x, n, n * q, below, above, ok ? "" : ": FAILED");
	return ok;
}

/* The injected library started in this process as mstat-attach starts
 * it, its segment published: 0, or -1, said. */
static int
attach_in_process(void)
{
	struct mstat_attach_args a = { .version = MSTAT_ATTACH_ARGS_VERSION,
				       .size = sizeof(a), .memfd = -1 };
	int (*start)(struct mstat_attach_args *);
	const char *lib = getenv("ATTACH_LIB");
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h) {
		fprintf(stderr, "forksamples: dlopen: %s\n", lib ? dlerror() : "no ATTACH_LIB");
		return -1;
	}
	*(void **)&start = dlsym(h, MSTAT_ATTACH_START);
	struct mstat_attach_state *st = dlsym(h, MSTAT_ATTACH_STATE);
	strcpy(a.name, "forksamples");
	if (!start || !st || start(&a) != 0) {
		fprintf(stderr, "forksamples: attach: %s\n", a.err);
		return -1;
	}
	/* Acquire: pairs with the release store of `done` (lib/attach.c). */
	while (!atomic_load_explicit(&st->done, memory_order_acquire))
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	if (st->rc != 0) {
		fprintf(stderr, "forksamples: publish: %s\n", st->status);
		return -1;
	}
	return 0;
}

/* The processes' names, the parent first. */
static const char *const names[PROCS] = { "parent", "child 1", "child 2" };

/* Each process's samples, and each pair's in common, against their
 * binomials at the mean interval the profiles say. */
static int
compare(const struct seen *seen)
{
	char what[64];
	int ok = 1;

	for (unsigned a = 0; a < PROCS; a++)
		if (seen[a].interval != INTERVAL) {
			fprintf(stderr, "forksamples: %s: interval %llu, not %u: run "
					"with MSTAT_SAMPLE_BYTES=%u\n", names[a],
				(unsigned long long)seen[a].interval, INTERVAL, INTERVAL);
			return 0;
		}
	double p = -expm1(-(double)SIZE / INTERVAL);
	for (unsigned a = 0; a < PROCS; a++) {
		unsigned n = 0;
		for (unsigned i = 0; i < POSITIONS; i++)
			n += seen[a].sampled[i];
		snprintf(what, sizeof(what), "%s's samples", names[a]);
		ok &= binomial_holds(what, n, POSITIONS, p);
	}
	for (unsigned a = 0; a < PROCS; a++)
		for (unsigned b = a + 1; b < PROCS; b++) {
			unsigned both = 0;
			for (unsigned i = 0; i < POSITIONS; i++)
				both += seen[a].sampled[i] & seen[b].sampled[i];
			snprintf(what, sizeof(what), "positions %s and %s both sampled",
				 names[a], names[b]);
			ok &= binomial_holds(what, both, POSITIONS, p * p);
		}
	return ok;
}

int
main(int argc, char **argv)
{
	const char *mode = argc == 2 ? argv[1] : "";
	pid_t pid[PROCS] = { 0 };
	int st, failed = 0;

	skip_under_valgrind();
	if (strcmp(mode, "attached") == 0) {
		if (attach_in_process() != 0)
			return 1;
	} else if (strcmp(mode, "preloaded") != 0) {
		fprintf(stderr, "usage: forksamples preloaded|attached\n");
		return 2;
	}
	/* Made before the forks: no process allocates from the forks to the
	 * end of its allocations. */
	struct seen *seen = mmap(NULL, PROCS * sizeof(*seen), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (seen == MAP_FAILED) {
		perror("forksamples: mmap");
		return 1;
	}
	/* As a server that has run before it forks its workers: its thread
	 * has drawn a countdown (an injected library's, none before its
	 * first allocation since the attach). */
	free(malloc(SIZE));
	fflush(NULL);
	for (unsigned k = 1; k < PROCS; k++) {
		if ((pid[k] = fork()) < 0) {
			perror("forksamples: fork");
			return 1;
		}
		if (pid[k] == 0) {
			run(&seen[k], names[k]);
			_exit(0);
		}
	}
	run(&seen[0], names[0]);
	for (unsigned k = 1; k < PROCS; k++)
		if (waitpid(pid[k], &st, 0) != pid[k] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forksamples: %s did not exit 0\n", names[k]);
			failed = 1;
		}
	for (unsigned k = 0; k < PROCS; k++)
		failed |= seen[k].failed;
	return failed || !compare(seen) ? 1 : 0;
}
