/* SPDX-License-Identifier: MIT */
/*
 * test_signals.c - counts made in signal handlers are exact and never
 * deadlock, whatever the handler interrupts.
 *
 * A process counts in a loop while another process keeps signalling it;
 * the handler counts too.  Each case ends with a snapshot of the
 * process's own segment that must equal what the loop and the handler
 * tallied, per class; a process whose loop stops making progress (the
 * handler waiting for a lock its own thread holds) is killed, and the
 * case fails.  The paths:
 *
 *   own: the thread counts into a slot of its own;
 *   shared: it counts through the shared slot (a second thread holds the
 *     only thread slot), under the process's shared lock;
 *   early: before the segment exists, under the same lock (many short
 *     processes, each counting less than makes a segment);
 *   fork: it forks again and again, and each child's inherited counts
 *     are what the handler and the loop tallied before the fork.  Fork
 *     handlers registered before the library's (so that they run while
 *     it forks) count and raise the signal too.
 *
 * And with malloc itself, while the library does work of its own, whose
 * allocations it never counts (lib/own.h):
 *
 *   sampled: the loop does free(malloc(24)) with every allocation
 *     sampled (MSTAT_SAMPLE_BYTES=1), so that most of its time goes to
 *     taking stacks, until the handler, which does free(malloc(40)), has
 *     run 2000 times.  Between two snapshots, each class counts exactly
 *     the loop's, the handler's;
 *   own work: the handler's signal is raised inside each piece of the
 *     library's own work a program can reach: loading libunwind as the
 *     segment is made (dlopen), opening the process's reader of itself
 *     (shm_open), giving a thread its slot (pthread_setspecific) and
 *     taking its first stack (dl_iterate_phdr, which libunwind calls as
 *     it unwinds), each caught by a wrapper of that call here (SIGUSR2,
 *     raised once in each; SIGUSR1 is ignored);
 *     the handler does free(malloc(1500)), and that class counts, from
 *     the process's start, exactly the handler's 4.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>

#include <mstatshm.h>
#include "shm/sizeclass.h"

#define LOOP_SIZE (UINT64_C(1) << 37)    /* the loop's class */
#define HANDLER_SIZE (UINT64_C(1) << 39) /* the handler's */

/* Tallies, apart from the library; a handler and the loop write them. */
static volatile sig_atomic_t h_alloc, h_free;
static uint64_t l_alloc, l_free;

static void
handler(int sig)
{
	int saved = errno;

	(void)sig;
	mstat_record_alloc(HANDLER_SIZE, HANDLER_SIZE);
	h_alloc++;
	mstat_record_free(HANDLER_SIZE);
	h_free++;
	errno = saved;
}

/* The case process writes a byte here now and then: the test's evidence
 * that its loop is not stuck (see signalled()). */
#define BEAT_FD 3

static void
loop(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		mstat_record_alloc(LOOP_SIZE, LOOP_SIZE);
		l_alloc++;
		mstat_record_free(LOOP_SIZE);
		l_free++;
		if (i % 64 == 0) /* fails on a full pipe, or outside a case */
			(void)!write(BEAT_FD, "", 1);
	}
}

/* In the counting process: whether its counts in the two classes are the
 * tallies, and says what differs.  With `live_only`, only what is live:
 * a fork child starts from its parent's live objects, and the counts its
 * forking thread made during the fork are its own too. */
static bool
exact(const char *what, bool live_only)
{
	struct mstat_snapshot *s = malloc(sizeof(*s));
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = s ? mstat_self_snapshot(s) : -ENOMEM;
	for (int i = 0; i < 100 && (rc == -EAGAIN || rc == -EBUSY); i++)
		rc = mstat_self_snapshot(s);
	if (rc != 0) {
		fprintf(stderr, "%s: snapshot: %d (%s)\n", what, rc,
			mstat_self_status());
		return false;
	}
	const struct mstat_counts *l = &s->classes[mstat_size_class(LOOP_SIZE)];
	const struct mstat_counts *h = &s->classes[mstat_size_class(HANDLER_SIZE)];
	bool ok = mstat_live_objects(l) == l_alloc - l_free &&
		  mstat_live_bytes(l) == (l_alloc - l_free) * LOOP_SIZE &&
		  mstat_live_objects(h) == (uint64_t)(h_alloc - h_free) &&
		  mstat_live_bytes(h) == (uint64_t)(h_alloc - h_free) * HANDLER_SIZE;
	/* The process's own allocations (stdio's, this snapshot) request
	 * far less than one of the loop's. */
	uint64_t others = s->requested_bytes - l_alloc * LOOP_SIZE -
			  (uint64_t)h_alloc * HANDLER_SIZE;
	if (!live_only)
		ok = ok && l->alloc_count == l_alloc &&
		     h->alloc_count == (uint64_t)h_alloc &&
		     l->alloc_bytes == l_alloc * LOOP_SIZE &&
		     h->alloc_bytes == (uint64_t)h_alloc * HANDLER_SIZE &&
		     others < LOOP_SIZE;
	if (!ok)
		fprintf(stderr, "%s: loop %llu/%llu counted %llu/%llu, handler "
			"%d/%d counted %llu/%llu\n", what,
			(unsigned long long)l_alloc, (unsigned long long)l_free,
			(unsigned long long)l->alloc_count,
			(unsigned long long)l->free_count, (int)h_alloc,
			(int)h_free, (unsigned long long)h->alloc_count,
			(unsigned long long)h->free_count);
	if (!ok && !live_only && others >= LOOP_SIZE)
		fprintf(stderr, "%s: requested bytes off by %lld loop sizes\n",
			what, (long long)others / (long long)LOOP_SIZE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(s);
	return ok;
}

/* ---- malloc in a handler ---- */

#define LOOP_MALLOC 24   /* the loop's size: its own class */
#define HANDLER_MALLOC 40
#define OWN_MALLOC 1500  /* a class nothing else in the process uses */

static size_t h_malloc_size = HANDLER_MALLOC;

/* free(malloc(n)), which the compiler may not leave out. */
static void
malloc_free(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

static void
malloc_handler(int sig)
{
	int saved = errno;

	(void)sig;
	malloc_free(h_malloc_size);
	h_alloc++;
	h_free++;
	errno = saved;
}

static void
take_signals(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn, .sa_flags = SA_RESTART };

	sigaction(sig, &sa, NULL);
}

/* A snapshot of this process, taken with its signals blocked. */
static bool
self_snapshot(struct mstat_snapshot *s, const char *what)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = mstat_self_snapshot(s);
	for (int i = 0; i < 100 && (rc == -EAGAIN || rc == -EBUSY); i++)
		rc = mstat_self_snapshot(s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		fprintf(stderr, "%s: snapshot: %d (%s)\n", what, rc,
			mstat_self_status());
	return rc == 0;
}

/* Whether class `size` counted `allocs` and `frees` more in `b` than in
 * `a` (all of it if `a` is NULL); says what differs. */
static bool
counted(const char *what, const struct mstat_snapshot *a,
	const struct mstat_snapshot *b, uint64_t size, uint64_t allocs,
	uint64_t frees)
{
	unsigned c = mstat_size_class(size);
	uint64_t na = b->classes[c].alloc_count - (a ? a->classes[c].alloc_count : 0);
	uint64_t nf = b->classes[c].free_count - (a ? a->classes[c].free_count : 0);

	if (na == allocs && nf == frees)
		return true;
	fprintf(stderr, "%s: %llu allocations and %llu frees of %llu bytes, "
		"counted %llu and %llu\n", what, (unsigned long long)allocs,
		(unsigned long long)frees, (unsigned long long)size,
		(unsigned long long)na, (unsigned long long)nf);
	return false;
}

static int
run_sampled(void)
{
	static struct mstat_snapshot a, b;

	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* The tallies start with the first snapshot. */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (!self_snapshot(&a, "before"))
		return 2;
	h_alloc = h_free = 0;
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	/* Until the handler has run 2000 times, whatever the machine's
	 * load does to the signals' pace. */
	for (unsigned i = 0; i < 100000 || h_alloc < 2000; i++) {
		malloc_free(LOOP_MALLOC);
		l_alloc++;
		l_free++;
		if (i % 64 == 0)
			(void)!write(BEAT_FD, "", 1);
	}
	/* The handler's count is read with the signal blocked: the snapshot
	 * is its cut. */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (!self_snapshot(&b, "after"))
		return 2;
	bool ok = counted("the loop", &a, &b, LOOP_MALLOC, l_alloc, l_free) &
		  counted("the handler", &a, &b, HANDLER_MALLOC, (uint64_t)h_alloc,
			  (uint64_t)h_free);
	fprintf(stderr, "sampled: loop %llu, handler %d\n",
		(unsigned long long)l_alloc, (int)h_alloc);
	return ok && h_alloc > 0 ? 0 : 1;
}

/* The calls the library makes in its own work, each raising SIGUSR2 once
 * while its bit of `armed` is set.  Forwarded to the C library's. */
enum { IN_DLOPEN = 1, IN_SHM_OPEN = 2, IN_PHDR = 4, IN_SETSPECIFIC = 8 };
static _Atomic unsigned armed;

static void
raise_in(unsigned call)
{
	if (atomic_fetch_and(&armed, ~call) & call)
		raise(SIGUSR2);
}

/* The C library's `name`, looked up once. */
#define NEXT(name, type)                                                     \
	static _Atomic(type) next_;                                          \
	type next = atomic_load_explicit(&next_, memory_order_relaxed);      \
	if (!next) {                                                         \
		*(void **)&next = dlsym(RTLD_NEXT, name);                    \
		if (!next)                                                   \
			abort();                                             \
		atomic_store_explicit(&next_, next, memory_order_relaxed);   \
	}

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*shm_open_fn)(const char *, int, mode_t);
typedef int (*phdr_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
typedef int (*setspecific_fn)(pthread_key_t, const void *);

void *
dlopen(const char *file, int mode)
{
	NEXT("dlopen", dlopen_fn);
	raise_in(IN_DLOPEN);
	return next(file, mode);
}

int shm_open(const char *name, int flags, mode_t mode);

int
shm_open(const char *name, int flags, mode_t mode)
{
	NEXT("shm_open", shm_open_fn);
	raise_in(IN_SHM_OPEN);
	return next(name, flags, mode);
}

int
dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	NEXT("dl_iterate_phdr", phdr_fn);
	raise_in(IN_PHDR);
	return next(cb, data);
}

int
pthread_setspecific(pthread_key_t key, const void *value)
{
	NEXT("pthread_setspecific", setspecific_fn);
	raise_in(IN_SETSPECIFIC);
	return next(key, value);
}

static void *
first_count(void *unused)
{
	(void)unused;
	malloc_free(100); /* takes a slot */
	return NULL;
}

static int
run_own_work(void)
{
	static struct mstat_snapshot s;
	pthread_t t;
	bool ok = true;

	/* The handler runs at the raises alone: 4 times (SIGUSR1 stays
	 * ignored, as exec() left it). */
	h_malloc_size = OWN_MALLOC;
	take_signals(SIGUSR2, malloc_handler);
	/* Counts enough to make the segment, which loads libunwind. */
	atomic_store(&armed, IN_DLOPEN);
	for (int i = 0; i < 1000000 && (atomic_load(&armed) & IN_DLOPEN); i++)
		malloc_free(100);
	/* The process's reader of itself, opened by its first snapshot. */
	atomic_store(&armed, atomic_load(&armed) | IN_SHM_OPEN);
	(void)mstat_self_snapshot(&s);
	/* A thread given its slot, then taking its first stack, which
	 * libunwind unwinds through the list of loaded objects. */
	atomic_store(&armed, atomic_load(&armed) | IN_SETSPECIFIC | IN_PHDR);
	if (pthread_create(&t, NULL, first_count, NULL))
		return 2;
	pthread_join(t, NULL);
	if (atomic_load(&armed)) {
		fprintf(stderr, "own work: calls never made: %#x\n",
			atomic_load(&armed));
		ok = false;
	}
	if (!self_snapshot(&s, "own work"))
		return 2;
	ok &= counted("own work: the handler", NULL, &s, OWN_MALLOC,
		      (uint64_t)h_alloc, (uint64_t)h_free);
	return ok && h_alloc == 4 ? 0 : 1;
}

/* ---- fork handlers inside the library's ---- */

/* Counts while the library forks, into rows of the fork's own that a
 * handler must not add to at the same time: the loop gives the signals
 * a window to land in, the raise() one for certain. */
static void
at_fork(void)
{
	loop(500);
	mstat_record_alloc(LOOP_SIZE, LOOP_SIZE);
	l_alloc++;
	raise(SIGUSR1); /* ignored but in a case's process */
	mstat_record_free(LOOP_SIZE);
	l_free++;
}

/* Before the library's constructor registers its fork handlers: these
 * prepare after its prepare, and run before its parent and child. */
__attribute__((constructor(101))) static void
register_at_fork(void)
{
	pthread_atfork(at_fork, at_fork, at_fork);
}

/* ---- the counting processes ---- */

static int
run_own(void)
{
	loop(200000);
	return exact("own slot", false) ? 0 : 1;
}

static void *
shared_worker(void *ok)
{
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL); /* the signals are for it */
	loop(100000);
	*(bool *)ok = exact("shared slot", false);
	return NULL;
}

static int
run_shared(void)
{
	pthread_t t;
	sigset_t usr1;
	bool ok = false;

	/* MSTAT_SLOTS=2: the shared slot and one thread slot, which this
	 * thread takes (its counts so far, or this one); the worker counts
	 * through the shared slot, and takes every signal. */
	mstat_record_alloc(1, 1);
	mstat_record_free(1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (pthread_create(&t, NULL, shared_worker, &ok))
		return 2;
	pthread_join(t, NULL);
	return ok ? 0 : 1;
}

static int
run_early(void)
{
	/* Fewer counts than make a segment (4096), quickly: all of them
	 * into process memory, under the shared lock.  The snapshot makes
	 * the segment. */
	loop(1000);
	return exact("before the segment", false) ? 0 : 1;
}

static int
run_fork(void)
{
	for (int i = 0; i < 200; i++) {
		loop(200);
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			/* The tallies were copied with the heap. */
			_exit(exact("a fork child", true) ? 0 : 1);
		}
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
	}
	return exact("after the forks", false) ? 0 : 1;
}

/* ---- the test ---- */

static const struct {
	const char *name;
	int (*fn)(void);
	const char *env; /* NAME=VALUE pairs, space separated */
	void (*usr1)(int); /* its handler of SIGUSR1; NULL: ignored */
} cases[] = {
	{ "own", run_own, "MSTAT_EAGER=1", handler },
	{ "shared", run_shared, "MSTAT_EAGER=1 MSTAT_SLOTS=2", handler },
	{ "early", run_early, "", handler },
	{ "fork", run_fork, "MSTAT_EAGER=1", handler },
	{ "sampled", run_sampled, "MSTAT_EAGER=1 MSTAT_SAMPLE_BYTES=1", malloc_handler },
	{ "own-work", run_own_work, "MSTAT_SAMPLE_BYTES=1", NULL },
};

static const char *self;

/* A case whose loop makes no progress for this long hangs.  Under
 * memcheck (meson test --setup valgrind, whose timeouts are 20 times as
 * long) a fork child's exit alone is a leak check. */
static time_t
stall_s(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload") ? 20 * 30 : 30;
}

/* A busy pause of up to a few microseconds between signals, so that they
 * land anywhere in the loop's counts (one in about 25 iterations) and
 * still leave the loop time to go on.  A flood without pauses kept the
 * process in its handler: the cases took minutes, more on a loaded
 * machine, and a slow fork looked like a hung one. */
static void
pause_randomly(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	for (volatile uint32_t i = 0, n = *x % 2048; i < n; i++)
		;
}

/* Runs case `k` in a process of its own (this program, exec()ed so that
 * the library starts with the case's environment), and signals it until
 * it exits.  Returns its exit status, or -1 if it had to be killed: its
 * loop wrote nothing to the beat pipe for stall_s(). */
static int
signalled(unsigned k)
{
	int beat[2];

	assert_int_equal(pipe(beat), 0);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char env[128], *save, *kv;
		snprintf(env, sizeof(env), "%s", cases[k].env);
		for (kv = strtok_r(env, " ", &save); kv;
		     kv = strtok_r(NULL, " ", &save))
			putenv(kv);
		close(beat[0]);
		if (dup2(beat[1], BEAT_FD) < 0 ||
		    fcntl(BEAT_FD, F_SETFL, O_NONBLOCK) < 0)
			_exit(126);
		execl(self, self, cases[k].name, (char *)NULL);
		_exit(127);
	}
	close(beat[1]);
	assert_int_equal(fcntl(beat[0], F_SETFL, O_NONBLOCK), 0);
	time_t stall = time(NULL) + stall_s();
	uint32_t x = 2463534242u + k;
	int status;
	for (;;) {
		char drain[512];
		kill(pid, SIGUSR1);
		pause_randomly(&x);
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (read(beat[0], drain, sizeof(drain)) > 0)
			stall = time(NULL) + stall_s();
		else if (time(NULL) > stall) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(beat[0]);
			return -1;
		}
	}
	close(beat[0]);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void
expect(unsigned k, unsigned times)
{
	for (unsigned i = 0; i < times; i++) {
		int rc = signalled(k);
		if (rc == -1)
			fail_msg("%s: hung (run %u): a handler waits for its own "
				 "thread", cases[k].name, i);
		if (rc != 0)
			fail_msg("%s: run %u failed (%d)", cases[k].name, i, rc);
	}
}

static void
own_slot(void **state)
{
	(void)state;
	expect(0, 3);
}

static void
shared_slot(void **state)
{
	(void)state;
	expect(1, 3);
}

static void
before_the_segment(void **state)
{
	(void)state;
	expect(2, 200);
}

static void
during_fork(void **state)
{
	(void)state;
	expect(3, 1);
}

static void
during_samples(void **state)
{
	(void)state;
	expect(4, 3);
}

static void
during_own_work(void **state)
{
	(void)state;
	expect(5, 3);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(own_slot),
		cmocka_unit_test(shared_slot),
		cmocka_unit_test(before_the_segment),
		cmocka_unit_test(during_fork),
		cmocka_unit_test(during_samples),
		cmocka_unit_test(during_own_work),
	};

	if (argc == 2) {
		/* A case: SIGUSR1 runs its handler from its first count on
		 * (signals sent before are ignored). */
		for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			if (strcmp(argv[1], cases[k].name) == 0) {
				if (cases[k].usr1)
					take_signals(SIGUSR1, cases[k].usr1);
				return cases[k].fn();
			}
		return 2;
	}
	self = argv[0];
	signal(SIGUSR1, SIG_IGN); /* the parent is not a target */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
