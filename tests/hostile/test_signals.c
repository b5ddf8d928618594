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

#include "mstatshm.h"
#include "sizeclass.h"

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
} cases[] = {
	{ "own", run_own, "MSTAT_EAGER=1" },
	{ "shared", run_shared, "MSTAT_EAGER=1 MSTAT_SLOTS=2" },
	{ "early", run_early, "" },
	{ "fork", run_fork, "MSTAT_EAGER=1" },
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

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(own_slot),
		cmocka_unit_test(shared_slot),
		cmocka_unit_test(before_the_segment),
		cmocka_unit_test(during_fork),
	};

	if (argc == 2) {
		/* A case: SIGUSR1 runs the handler from its first count on
		 * (signals sent before are ignored). */
		struct sigaction sa = { .sa_handler = handler,
					.sa_flags = SA_RESTART };
		for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			if (strcmp(argv[1], cases[k].name) == 0) {
				sigaction(SIGUSR1, &sa, NULL);
				return cases[k].fn();
			}
		return 2;
	}
	self = argv[0];
	signal(SIGUSR1, SIG_IGN); /* the parent is not a target */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
