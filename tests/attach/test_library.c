/* SPDX-License-Identifier: MIT */
/*
 * test_library.c - the library mstat-attach injects, in a program that
 * does not link libmstatshm and made blocks before:
 *
 *   - loaded and started in-process, as mstat-attach would have the
 *     target do it: dlopen(), its entry point (shm/inject.h).  No
 *     ptrace: this thread is the one the attach runs in;
 *   - with MSTAT_TEST_EXTERNAL=1, attached from outside by mstat-attach:
 *     the program says "ready PID" on stdout and waits for a line on
 *     stdin, which comes once mstat-attach has returned (e2e.py).
 *
 * Each test takes a snapshot of the process's segment through a reader
 * (the library has no API in this process), makes a known pattern, takes
 * another, and demands the difference be exactly the pattern: per class,
 * and in the prior row for the blocks made before the attach.
 *
 *   ATTACH_LIB   the library (libmstatshm-attach.so.0)
 *   PLUGIN_LIB   libmstat-test-plugin.so, loaded after the attach
 *   SLOW_LIB     libmstat-test-slow.so, whose load stops half way
 */
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/inject.h"
#include "tests/attach/plugin.h"
#include "shm/reader.h"
#include "tests/interpose/truth.h"

#define PRIOR_N 64
#define PRIOR_SIZE 40

static struct truth t;
static struct mstat_snapshot s0, s1;
static struct mstat_prior p0, p1;
static struct mstat_reader *r;
static void *prior[PRIOR_N];
static size_t prior_usable;
static uint64_t before_ns, after_ns;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
snap(struct mstat_snapshot *s, struct mstat_prior *p)
{
	int rc = reader_snapshot(r, s);

	if (rc != 0)
		fail_msg("snapshot: %d (%s)", rc, mstat_reader_error(r));
	mstat_reader_prior(r, p);
}

static void
begin(void)
{
	truth_clear(&t);
	snap(&s0, &p0);
}

/* The pattern exactly; the prior row moved by what is said. */
static void
end(uint64_t frees, uint64_t free_bytes, uint64_t reallocs, uint64_t realloc_bytes)
{
	snap(&s1, &p1);
	assert_int_equal(truth_check(&s0, &s1, &t), 0);
	assert_int_equal(p1.prior_frees - p0.prior_frees, frees);
	assert_int_equal(p1.prior_free_bytes - p0.prior_free_bytes, free_bytes);
	assert_int_equal(p1.prior_reallocs - p0.prior_reallocs, reallocs);
	assert_int_equal(p1.prior_realloc_bytes - p0.prior_realloc_bytes, realloc_bytes);
}

/* Says it is ready, and waits for the word that mstat-attach has
 * attached it. */
static int
attached_from_outside(void)
{
	char line[64], err[256];

	before_ns = now_ns();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return -1;
	after_ns = now_ns();
	if (mstat_reader_open_pid(&r, getpid(), err, sizeof(err)) != 0) {
		fprintf(stderr, "reader: %s\n", err);
		return -1;
	}
	return 0;
}

/* Blocks made before the attach, then the attach as mstat-attach makes
 * it: the library loaded, started, published. */
static int
attach(void **state)
{
	struct mstat_attach_args a = { .version = MSTAT_ATTACH_ARGS_VERSION,
				       .size = sizeof(a), .memfd = -1 };
	char err[256];
	(void)state;

	for (int i = 0; i < PRIOR_N; i++)
		prior[i] = malloc(PRIOR_SIZE);
	prior_usable = malloc_usable_size(prior[0]);
	if (getenv("MSTAT_TEST_EXTERNAL"))
		return attached_from_outside();
	void *h = dlopen(getenv("ATTACH_LIB"), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return -1;
	}
	int (*start)(struct mstat_attach_args *);
	*(void **)&start = dlsym(h, MSTAT_ATTACH_START);
	if (!start)
		return -1;
	strcpy(a.name, "attach-test");
	before_ns = now_ns();
	if (start(&a) != 0) {
		fprintf(stderr, "start: %s\n", a.err);
		return -1;
	}
	after_ns = now_ns();
	/* Published by a thread of the library's: once it says so. */
	struct mstat_attach_state *st = dlsym(h, MSTAT_ATTACH_STATE);
	if (!st)
		return -1;
	/* Acquire: pairs with the release store of `done` (lib/attach.c). */
	while (!atomic_load_explicit(&st->done, memory_order_acquire)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (st->rc != 0) {
		fprintf(stderr, "publish: %s\n", st->status);
		return -1;
	}
	if (mstat_reader_open_pid(&r, getpid(), err, sizeof(err)) != 0) {
		fprintf(stderr, "reader: %s\n", err);
		return -1;
	}
	return 0;
}

static void
test_the_segment_says_attached(void **state)
{
	const struct mstat_target_info *in = mstat_reader_info(r);

	(void)state;
	assert_string_equal(in->name, getenv("MSTAT_TEST_EXTERNAL") ? "external"
								   : "attach-test");
	assert_true(in->attached_ns >= before_ns && in->attached_ns <= after_ns);
	assert_int_equal(in->pid, getpid());
}

static const size_t sizes[] = {
	0, 1, 8, 24, 25, 100, 256, 1000, 4096, 5000, 65536, 140000, 1u << 20, 33u << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every function, a known pattern, exactly. */
static void
test_pattern(void **state)
{
	void *p[NSIZES], *q;

	(void)state;
	begin();
	for (size_t i = 0; i < NSIZES; i++) {
		p[i] = malloc(sizes[i]);
		truth_alloc(&t, p[i], sizes[i]);
	}
	for (size_t i = 0; i < NSIZES; i++) {
		q = calloc(1, sizes[i]);
		truth_alloc(&t, q, sizes[i]);
		truth_free_p(&t, q);
	}
	for (size_t i = 0; i < NSIZES; i++) {
		size_t u = malloc_usable_size(p[i]);
		q = realloc(p[i], sizes[(i + 3) % NSIZES] + 1);
		truth_free(&t, u);
		truth_alloc(&t, q, sizes[(i + 3) % NSIZES] + 1);
		p[i] = q;
	}
	q = reallocarray(NULL, 10, 100);
	truth_alloc(&t, q, 1000);
	truth_free_p(&t, q);
	assert_int_equal(posix_memalign(&q, 256, 3000), 0);
	truth_alloc(&t, q, 3000);
	truth_free_p(&t, q);
	q = aligned_alloc(64, 640);
	truth_alloc(&t, q, 640);
	truth_free_p(&t, q);
	q = memalign(4096, 100);
	truth_alloc(&t, q, 100);
	truth_free_p(&t, q);
	q = valloc(10);
	truth_alloc(&t, q, 10);
	truth_free_p(&t, q);
	q = pvalloc(10);
	truth_alloc(&t, q, 10);
	truth_free_p(&t, q);
	/* glibc's own allocations, through its own slots. */
	q = strdup("a string glibc copies with its malloc");
	truth_alloc(&t, q, strlen(q) + 1);
	truth_free_p(&t, q);
	for (size_t i = 0; i < NSIZES; i++)
		truth_free_p(&t, p[i]);
	free(NULL);
	end(0, 0, 0, 0);
}

static volatile size_t huge = SIZE_MAX - 4096;

static void
test_failures_count_nothing(void **state)
{
	void *q = NULL;

	(void)state;
	begin();
	assert_null(malloc(huge));
	assert_null(calloc(huge, 2));
	assert_null(reallocarray(NULL, huge, 2));
	assert_int_equal(posix_memalign(&q, 3, 10), EINVAL);
	q = malloc(100);
	truth_alloc(&t, q, 100);
	assert_null(realloc(q, huge)); /* q stays live, counted as it was */
	truth_free_p(&t, q);
	end(0, 0, 0, 0);
}

/* Blocks made before the attach: their frees and reallocs in the prior
 * row, how many and how many bytes, never in a class; the new block of
 * a realloc counted as allocated. */
static void
test_prior_blocks(void **state)
{
	(void)state;
	begin();
	for (int i = 0; i < 10; i++)
		free(prior[i]);
	for (int i = 10; i < 15; i++) {
		prior[i] = realloc(prior[i], 3000);
		truth_alloc(&t, prior[i], 3000);
	}
	end(10, 10 * prior_usable, 5, 5 * prior_usable);
	begin();
	for (int i = 10; i < 15; i++) /* made since: counted */
		truth_free_p(&t, prior[i]);
	prior[15] = realloc(prior[15], 0); /* glibc frees it */
	end(1, prior_usable, 0, 0);
}

/* An object loaded after the attach: its slots patched once its load is
 * over (its constructor's blocks are made before, as far as the counts
 * know), the function pointer in its data too. */
/* Returns once a rescan is due (lib/patch.c): the coarse clock, by which
 * a rescan is paced, a millisecond past what it read here, which is past
 * the end of any rescan this thread's calls made.  Its tick is 1 to 4 ms:
 * a sleep of a set time may not see it move. */
static void
rescan_due(void)
{
	struct timespec t0, now, ms = { 0, 1000 * 1000 };

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t0);
	do {
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) <
		 1000 * 1000);
}

static void
test_dlopen_later(void **state)
{
	void *q[4];

	(void)state;
	void *h = dlopen(getenv("PLUGIN_LIB"), RTLD_NOW);
	assert_non_null(h);
	void *(*pm)(size_t), *(*pc)(size_t, size_t), *(*pr)(void *, size_t);
	void (*pf)(void *), (*ctor_free)(void);
	void (**fp)(void *) = dlsym(h, "plugin_free_ptr");
	*(void **)&pm = dlsym(h, "plugin_malloc");
	*(void **)&pc = dlsym(h, "plugin_calloc");
	*(void **)&pr = dlsym(h, "plugin_realloc");
	*(void **)&pf = dlsym(h, "plugin_free");
	*(void **)&ctor_free = dlsym(h, "plugin_free_ctor_blocks");
	assert_true(pm && pc && pr && pf && fp && ctor_free);
	/* The next allocation after its load, a millisecond after the last
	 * rescan, patches it. */
	rescan_due();
	q[0] = malloc(PLUGIN_CTOR_SIZE);
	size_t ctor_usable = malloc_usable_size(q[0]);
	free(q[0]);
	begin();
	q[0] = pm(5000);
	truth_alloc(&t, q[0], 5000);
	q[1] = pc(3, 1000);
	truth_alloc(&t, q[1], 3000);
	size_t u = malloc_usable_size(q[1]);
	q[1] = pr(q[1], 20000);
	truth_free(&t, u);
	truth_alloc(&t, q[1], 20000);
	u = malloc_usable_size(q[0]);
	pf(q[0]);
	truth_free(&t, u);
	u = malloc_usable_size(q[1]);
	(*fp)(q[1]);
	truth_free(&t, u);
	ctor_free();
	end(PLUGIN_CTOR_BLOCKS, PLUGIN_CTOR_BLOCKS * ctor_usable, 0, 0);
}

static void *
load_slow(void *arg)
{
	(void)arg;
	return dlopen(getenv("SLOW_LIB"), RTLD_NOW);
}

/* An object half loaded by another thread (listed, half relocated) when
 * an allocation rescans: left alone until its load is over (its slots
 * written then, and its read-only pages made writable, would make the
 * loader's next write fault), and patched after. */
static void
test_dlopen_under_way(void **state)
{
	int said[2], go[2];
	pthread_t th;
	void *h;
	char c;

	(void)state;
	assert_int_equal(pipe(said), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(dup2(said[1], SLOW_FD_SAID), SLOW_FD_SAID);
	assert_int_equal(dup2(go[0], SLOW_FD_GO), SLOW_FD_GO);
	assert_int_equal(pthread_create(&th, NULL, load_slow, NULL), 0);
	assert_int_equal(read(said[0], &c, 1), 1); /* in its resolver */
	rescan_due();
	free(malloc(100)); /* a rescan, the object in the list */
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(pthread_join(th, &h), 0);
	assert_non_null(h);
	int (*call)(void);
	*(void **)&call = dlsym(h, "slow_call");
	void *(*const *pm)(size_t) = dlsym(h, "slow_malloc_ptr");
	assert_true(call && pm);
	assert_int_equal(call(), SLOW_ANSWER);
	rescan_due();
	free(malloc(100)); /* the rescan that patches it */
	begin();
	void *p = (*pm)(7777);
	truth_alloc(&t, p, 7777);
	truth_free_p(&t, p);
	end(0, 0, 0, 0);
	const int fds[] = { said[0], said[1], go[0], go[1], SLOW_FD_SAID, SLOW_FD_GO };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
}

static int hold_fd[2];

static int
hold_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	char c;

	(void)info;
	(void)size;
	(void)arg;
	/* The lock held: say so, and wait for the word. */
	if (write(hold_fd[1], "h", 1) != 1 || read(hold_fd[0], &c, 1) != 1)
		return 1;
	return 1;
}

static void *
hold_list(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_cb, NULL);
	return NULL;
}

/* A fork while a thread of the program's holds dl_iterate_phdr()'s lock
 * (glibc does not reset it in the child), rescans due: the child, whose
 * program never walks the list, must not wait for it either.  Its
 * allocations go on (the parent's patching in place), and it exits. */
static void
test_fork_with_the_list_held(void **state)
{
	struct timespec ms = { 0, 2 * 1000 * 1000 };
	int to[2], from[2], st = 0;
	pthread_t th;
	char c;

	(void)state;
	/* A dlopen() arms the rescans for a second. */
	void *h = dlopen(getenv("PLUGIN_LIB"), RTLD_NOW);
	assert_non_null(h);
	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	hold_fd[0] = to[0];
	hold_fd[1] = from[1];
	assert_int_equal(pthread_create(&th, NULL, hold_list, NULL), 0);
	assert_int_equal(read(from[0], &c, 1), 1);
	/* Nothing here allocates until the lock is let go: this process's
	 * own rescans would wait for it too. */
	pid_t pid = fork();
	if (pid == 0) {
		nanosleep(&ms, NULL);
		free(malloc(100));
		_exit(0);
	}
	pid_t got = 0;
	for (int i = 0; i < 5000 && pid > 0 && (got = waitpid(pid, &st, WNOHANG)) == 0; i++)
		nanosleep(&ms, NULL);
	if (pid > 0 && got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	assert_int_equal(write(to[1], "g", 1), 1);
	pthread_join(th, NULL);
	for (int i = 0; i < 2; i++) {
		close(to[i]);
		close(from[i]);
	}
	dlclose(h);
	assert_true(pid > 0);
	assert_int_equal(got, pid); /* it ended, not killed after 10 s */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

#define THREADS 8
#define PER_THREAD 500

static void *
churn(void *arg)
{
	void *b[PER_THREAD];

	(void)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		b[i] = malloc(16 + (size_t)i);
		truth_alloc(&t, b[i], 16 + (size_t)i);
	}
	for (int i = 0; i < PER_THREAD; i += 2)
		truth_free_p(&t, b[i]);
	for (int i = 1; i < PER_THREAD; i += 2)
		truth_free_p(&t, b[i]);
	return NULL;
}

/* Threads started since: each its block of thread-local state (general-
 * dynamic TLS, made at its first count), its slot, exact.  Their own
 * creation allocates (glibc's thread stacks are mmapped, its TLS blocks
 * of dlopen()ed objects are not its malloc's): only the classes the
 * tally has are compared. */
static void
test_threads(void **state)
{
	pthread_t th[THREADS];

	(void)state;
	begin();
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	snap(&s1, &p1);
	assert_int_equal(truth_check_classes(&s0, &s1, &t, 1), 0);
	assert_int_equal(p1.prior_frees, p0.prior_frees);
}

/* A fork child counts into a segment of its own, from the heap it
 * inherits; blocks made before the attach are made before for it too. */
static void
test_fork(void **state)
{
	(void)state;
	void *kept = malloc(7000);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mstat_reader *cr;
		struct mstat_snapshot a, b;
		struct mstat_prior pa, pb;
		char err[256];
		free(malloc(1)); /* counts, and makes its segment when due */
		if (mstat_reader_open_pid(&cr, getpid(), err, sizeof(err)) != 0) {
			/* Not made yet: a count after 10 ms makes it. */
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			free(malloc(1));
			if (mstat_reader_open_pid(&cr, getpid(), err, sizeof(err)) != 0)
				_exit(10);
		}
		if (reader_snapshot(cr, &a) != 0)
			_exit(11);
		mstat_reader_prior(cr, &pa);
		size_t u = malloc_usable_size(kept);
		free(kept);        /* the parent's, since the attach */
		free(prior[20]);   /* before it */
		if (reader_snapshot(cr, &b) != 0)
			_exit(12);
		mstat_reader_prior(cr, &pb);
		unsigned c = mstat_size_class(u);
		if (b.classes[c].free_count - a.classes[c].free_count != 1 ||
		    b.classes[c].free_bytes - a.classes[c].free_bytes != u)
			_exit(13);
		if (pb.prior_frees - pa.prior_frees != 1 ||
		    pb.prior_free_bytes - pa.prior_free_bytes != prior_usable)
			_exit(14);
		if (mstat_reader_info(cr)->attached_ns != mstat_reader_info(r)->attached_ns)
			_exit(15);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	free(kept);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_segment_says_attached),
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_failures_count_nothing),
		cmocka_unit_test(test_prior_blocks),
		cmocka_unit_test(test_dlopen_later),
		cmocka_unit_test(test_dlopen_under_way),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_fork_with_the_list_held),
	};
	return cmocka_run_group_tests(tests, attach, NULL);
}
