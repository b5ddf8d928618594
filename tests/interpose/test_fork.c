/* SPDX-License-Identifier: MIT */
/*
 * test_fork.c - processes: fork, exec, a realloc seen from outside, and a
 * process killed by a signal.
 *
 *   fork: the child's first snapshot is exactly the heap it inherited (a
 *   single-threaded parent): per class, the parent's live objects and bytes
 *   as allocations, no frees.  What the child does afterwards is in its
 *   own segment and never in the parent's.
 *   fork, threads: a parent whose four other threads allocate and free
 *   while it forks, 100 times, gives children whose counts are their heap:
 *   what they can reach, and nothing they cannot but a block a churning
 *   thread held in its hand.  The same on one CPU shared with threads
 *   that take it from them.
 *   exec: the new image starts from nothing, under the same segment name.
 *   fork, fresh: the same, in a process that has no segment yet when it
 *   starts forking, every 2 ms while its threads churn and its segment
 *   is being made (slowly: dlopen() below), with another process reading
 *   every segment meanwhile: every child reads itself, exactly.
 *   realloc: another process, reading a target that reallocates one block
 *   back and forth between two classes as fast as it can, never sees the
 *   block in both classes or in neither.
 *   killed: a target killed by SIGKILL leaves a segment that names its pid
 *   and start time, and that a reader still opens.
 *
 * The test program re-executes itself for exec (argument "after-exec").
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/name.h"
#include "tests/interpose/truth.h"

#define CHILD_SIZE (5u << 20)   /* what the fork child allocates */
#define EXEC_SIZE (9u << 20)    /* what the parent holds across exec */
#define SIZE_A 3000u
#define SIZE_B 6000u

static struct mstat_snapshot sp, sp2, sc0, sc1;

static void
snap(struct mstat_snapshot *s)
{
	int rc = self_snapshot(s);
	if (rc != 0)
		fail_msg("mstat_self_snapshot: %d (%s)", rc, mstat_self_status());
}

static void
open_child(struct mstat_reader **r, pid_t pid)
{
	char err[256];

	if (mstat_reader_open_pid(r, pid, err, sizeof(err)) != 0)
		fail_msg("reader on pid %d: %s", (int)pid, err);
}

static void
rsnap(struct mstat_reader *r, struct mstat_snapshot *s)
{
	if (reader_snapshot(r, s) != 0)
		fail_msg("snapshot: %s", mstat_reader_error(r));
}

/* A child dies with the test, even one that fails half-way.  Children
 * end with exit(), so that the library's exit handler unlinks their
 * segments; stdio is flushed first so nothing buffered prints twice. */
static pid_t
fork_child(void)
{
	fflush(NULL);
	pid_t pid = fork();

	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	assert_true(pid >= 0);
	return pid;
}

static void
put(int fd, char c)
{
	assert_int_equal(write(fd, &c, 1), 1);
}

static char
get(int fd)
{
	char c = 0;
	assert_int_equal(read(fd, &c, 1), 1);
	return c;
}

/* ---- fork ---- */

static void
test_fork_child_starts_from_inherited_heap(void **state)
{
	int up[2], down[2];
	void *keep[64];

	(void)state;
	snap(&sp); /* opens this process's own reader first */
	for (int i = 0; i < 64; i++)
		keep[i] = malloc(16 + (size_t)i * 97);
	for (int i = 0; i < 64; i += 3)
		free(keep[i]);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	snap(&sp);
	pid_t pid = fork_child();
	if (pid == 0) {
		static void *mine[100];
		/* Asking makes its segment now, rather than once it is worth
		 * watching: the parent reads it next. */
		if (!mstat_self_enabled())
			exit(2);
		put(up[1], 'r');
		get(down[0]);
		for (int i = 0; i < 100; i++)
			mine[i] = malloc(CHILD_SIZE);
		put(up[1], mine[99] ? 'd' : 'x');
		get(down[0]);
		exit(0);
	}
	assert_int_equal(get(up[0]), 'r');

	struct mstat_reader *r;
	open_child(&r, pid);
	assert_int_equal(mstat_reader_info(r)->pid, pid);
	rsnap(r, &sc0);
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++) {
		if (sc0.classes[c].alloc_count != mstat_live_objects(&sp.classes[c]) ||
		    sc0.classes[c].alloc_bytes != mstat_live_bytes(&sp.classes[c]) ||
		    sc0.classes[c].free_count || sc0.classes[c].free_bytes)
			fail_msg("class %u: child starts with %llu/%llu allocs/bytes "
				 "and %llu frees; parent had %llu/%llu live", c,
				 (unsigned long long)sc0.classes[c].alloc_count,
				 (unsigned long long)sc0.classes[c].alloc_bytes,
				 (unsigned long long)sc0.classes[c].free_count,
				 (unsigned long long)mstat_live_objects(&sp.classes[c]),
				 (unsigned long long)mstat_live_bytes(&sp.classes[c]));
	}

	put(down[1], 'g');
	assert_int_equal(get(up[0]), 'd');
	rsnap(r, &sc1);
	snap(&sp2);
	void *probe = malloc(CHILD_SIZE);
	unsigned cc = mstat_size_class(malloc_usable_size(probe));
	free(probe);
	assert_int_equal(sc1.classes[cc].alloc_count - sc0.classes[cc].alloc_count, 100);
	/* The parent's segment never saw the child's allocations. */
	assert_int_equal(sp2.classes[cc].alloc_count, sp.classes[cc].alloc_count);

	mstat_reader_close(r);
	put(down[1], 'q');
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 64; i++)
		if (i % 3)
			free(keep[i]);
	close(up[0]), close(up[1]), close(down[0]), close(down[1]);
}

/* ---- fork of a parent with threads ---- */

/*
 * Four threads churn, each in a class of its own: a ring of blocks, each
 * freed and replaced in turn (the slot is emptied before the free and
 * filled after the malloc).  The parent forks again and again while they
 * run; each child frees every block it finds in the rings it inherited.
 *
 * The child's counts must be its heap: per churning class, its inherited
 * live objects are the blocks in its rings, plus at most one that its
 * churning thread held in its hand at the fork (allocated and not yet in
 * the ring, or taken out and not yet freed: live in the child's heap, and
 * unreachable).  Once it has freed the rings, 0 or 1 remain, never fewer:
 * a free is never counted without its allocation, and no allocation made
 * before the copy is missing.
 */
#define CHURNERS 4
#define RING 64
#define FORKS 100
static const size_t churn_size[CHURNERS] = { 33000, 45000, 53000, 61000 };
static _Atomic(void *) ring[CHURNERS][RING];
static _Atomic int churn_stop;

static void *
churn(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;

	for (unsigned i = 0; !atomic_load_explicit(&churn_stop, memory_order_relaxed);
	     i = (i + 1) % RING) {
		free(atomic_exchange(&ring[t][i], NULL));
		atomic_store(&ring[t][i], malloc(churn_size[t]));
	}
	return NULL;
}

static unsigned churn_class[CHURNERS];
static size_t churn_usable[CHURNERS];

/* In the child: 0, or the number of the check that failed. */
static int
child_frees_the_rings(void)
{
	struct mstat_snapshot *s0 = &sc0, *s1 = &sc1;
	unsigned reachable[CHURNERS] = { 0 };

	if (self_snapshot(s0) != 0)
		return 2;
	for (unsigned t = 0; t < CHURNERS; t++) {
		const struct mstat_counts *k = &s0->classes[churn_class[t]];
		for (unsigned i = 0; i < RING; i++)
			reachable[t] += atomic_load(&ring[t][i]) != NULL;
		if (k->free_count > k->alloc_count || k->free_bytes > k->alloc_bytes)
			return 3;
		uint64_t live = mstat_live_objects(k);
		if (live < reachable[t] || live > reachable[t] + 1)
			return 4;
	}
	for (unsigned t = 0; t < CHURNERS; t++)
		for (unsigned i = 0; i < RING; i++)
			free(atomic_exchange(&ring[t][i], NULL));
	if (self_snapshot(s1) != 0)
		return 5;
	for (unsigned t = 0; t < CHURNERS; t++) {
		const struct mstat_counts *k0 = &s0->classes[churn_class[t]];
		const struct mstat_counts *k1 = &s1->classes[churn_class[t]];
		uint64_t left = mstat_live_objects(k1);
		/* The block in flight, if any, is of the class; its usable
		 * size is the usual one unless it was sampled (page-aligned,
		 * it may hold a few bytes more). */
		uint64_t bytes = mstat_live_bytes(k1);
		if (k1->free_count > k1->alloc_count ||
		    k1->free_count - k0->free_count != reachable[t] || left > 1 ||
		    (left == 0 && bytes != 0) ||
		    (left == 1 && (bytes < churn_usable[t] ||
				   bytes > mstat_class_max_size(churn_class[t]))))
			return 6;
	}
	return 0;
}

/* Threads that only take the CPU: no allocation, no count. */
static void *
hog(void *unused)
{
	(void)unused;
	while (!atomic_load_explicit(&churn_stop, memory_order_relaxed))
		;
	return NULL;
}

/* FORKS forks of a parent with CHURNERS churning threads and `hogs`
 * threads that take the CPU from them. */
static void
forks_of_threaded_parent(unsigned hogs)
{
	pthread_t th[CHURNERS], hg[32];
	int failed[7] = { 0 };

	assert_true(hogs <= 32);
	for (unsigned t = 0; t < CHURNERS; t++) {
		void *p = malloc(churn_size[t]);
		churn_usable[t] = malloc_usable_size(p);
		churn_class[t] = mstat_size_class(churn_usable[t]);
		free(p);
		for (unsigned u = 0; u < t; u++)
			assert_int_not_equal(churn_class[u], churn_class[t]);
	}
	atomic_store(&churn_stop, 0);
	for (unsigned t = 0; t < CHURNERS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, churn,
						(void *)(uintptr_t)t), 0);
	for (unsigned t = 0; t < hogs; t++)
		assert_int_equal(pthread_create(&hg[t], NULL, hog, NULL), 0);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork_child();
		if (pid == 0)
			exit(child_frees_the_rings());
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) < 7);
		failed[WEXITSTATUS(status)]++;
	}
	atomic_store(&churn_stop, 1);
	for (unsigned t = 0; t < CHURNERS; t++)
		pthread_join(th[t], NULL);
	for (unsigned t = 0; t < hogs; t++)
		pthread_join(hg[t], NULL);
	for (unsigned t = 0; t < CHURNERS; t++)
		for (unsigned i = 0; i < RING; i++)
			free(atomic_exchange(&ring[t][i], NULL));
	if (failed[0] != FORKS)
		fail_msg("%d of %d children wrong: snapshot %d, frees over "
			 "allocations %d, inherited not the rings %d, snapshot "
			 "%d, after freeing %d", FORKS - failed[0], FORKS,
			 failed[2], failed[3], failed[4], failed[5], failed[6]);
}

static void
test_fork_of_threaded_parent_is_exact(void **state)
{
	(void)state;
	forks_of_threaded_parent(0);
}

/*
 * The same on one CPU shared with 24 threads that never yield it: a
 * churning thread preempted inside its section waits for many time
 * slices (as on a loaded machine, or in a container whose CPU quota is
 * spent), and the fork must wait for it all the same.
 */
static void
test_fork_of_threaded_parent_under_load(void **state)
{
	cpu_set_t all, one;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	forks_of_threaded_parent(24);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
}

/* ---- forks of a process whose segment is being made ---- */

/*
 * The library loads libunwind as it makes its segment.  This program's
 * dlopen() comes first in the lookup, and in the "fresh-forks" run makes
 * that load take 30 ms: a window in which the segment is being made,
 * which forks then fall into.
 */
static bool slow_unwinder;

void *
dlopen(const char *file, int flags)
{
	static void *(*real)(const char *, int);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dlopen");
	if (slow_unwinder && file && strstr(file, "libunwind")) {
		struct timespec ts = { 0, 30 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return real(file, flags);
}

#define FRESH_FORKS 20

/* The "fresh-forks" run, in a process of its own: no segment yet.  Its
 * threads start churning at once (the second thread to count makes the
 * segment), and it forks every 2 ms meanwhile.  Exit status: 0, or 10 +
 * the number of the check the first wrong child failed. */
static int
fresh_forks(void)
{
	pthread_t th[CHURNERS];
	int bad = 0;

	slow_unwinder = true;
	for (unsigned t = 0; t < CHURNERS; t++) {
		void *p = malloc(churn_size[t]);
		churn_usable[t] = malloc_usable_size(p);
		churn_class[t] = mstat_size_class(churn_usable[t]);
		free(p);
	}
	for (unsigned t = 0; t < CHURNERS; t++)
		if (pthread_create(&th[t], NULL, churn, (void *)(uintptr_t)t) != 0)
			return 3;
	for (int i = 0; i < FRESH_FORKS; i++) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		int status;
		nanosleep(&ts, NULL);
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 3;
		if (pid == 0)
			_exit(child_frees_the_rings());
		if (waitpid(pid, &status, 0) != pid)
			return 3;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "child %d of %d: %s %d (%s)\n", i + 1,
				FRESH_FORKS, WIFEXITED(status) ? "check" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				mstat_self_status());
			if (!bad)
				bad = 10 + (WIFEXITED(status) ? WEXITSTATUS(status) : 9);
		}
	}
	atomic_store(&churn_stop, 1);
	for (unsigned t = 0; t < CHURNERS; t++)
		pthread_join(th[t], NULL);
	return bad;
}

/* Reads every segment in /dev/shm, over and over, until *stop: as
 * mstat-top does beside the processes it watches. */
static void *
read_everything(void *arg)
{
	_Atomic int *stop = arg;
	struct mstat_snapshot *s = malloc(sizeof(*s));

	while (s && !atomic_load(stop)) {
		DIR *d = opendir("/dev/shm");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			struct mstat_reader *r;
			if (strncmp(de->d_name, "mstat.", 6) != 0 ||
			    mstat_reader_open_name(&r, de->d_name, NULL, 0) != 0)
				continue;
			(void)mstat_reader_snapshot(r, s);
			mstat_reader_close(r);
		}
		if (d)
			closedir(d);
	}
	free(s);
	return NULL;
}

static void
test_fork_while_segment_is_made(void **state)
{
	_Atomic int stop = 0;
	pthread_t reader;
	int status;

	(void)state;
	assert_int_equal(pthread_create(&reader, NULL, read_everything, &stop), 0);
	pid_t pid = fork_child();
	if (pid == 0) {
		execl("/proc/self/exe", "test-interpose-fork", "fresh-forks",
		      (char *)NULL);
		_exit(4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	atomic_store(&stop, 1);
	pthread_join(reader, NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- exec ---- */

static unsigned
exec_class(void)
{
	void *p = malloc(EXEC_SIZE);
	unsigned c = mstat_size_class(malloc_usable_size(p));
	free(p);
	return c;
}

/* The image after exec: reports on fd what it sees of itself. */
static int
after_exec(int fd)
{
	char prefix[40];
	int segments = 0;
	struct dirent *de;

	/* Counted from its own start: nothing in the class the image before
	 * exec held 20 blocks of. */
	snap(&sp);
	unsigned c = exec_class();
	snprintf(prefix, sizeof(prefix), "mstat.%d.", (int)getpid());
	DIR *d = opendir("/dev/shm");
	while (d && (de = readdir(d)))
		segments += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	dprintf(fd, "%llu %d\n", (unsigned long long)sp.classes[c].alloc_count,
		segments);
	return 0;
}

static void
test_exec_starts_fresh(void **state)
{
	int out[2];
	void *held[20];

	(void)state;
	for (int i = 0; i < 20; i++)
		held[i] = malloc(EXEC_SIZE);
	assert_int_equal(pipe(out), 0);
	pid_t pid = fork_child();
	if (pid == 0) {
		char fd[16];
		struct mstat_snapshot *s = &sc0;
		/* Before exec, the child does count the inherited blocks. */
		if (self_snapshot(s) != 0 ||
		    s->classes[exec_class()].alloc_count < 20)
			_exit(3);
		snprintf(fd, sizeof(fd), "%d", out[1]);
		execl("/proc/self/exe", "test-interpose-fork", "after-exec", fd,
		      (char *)NULL);
		_exit(4);
	}
	close(out[1]);
	char buf[64] = "";
	assert_true(read(out[0], buf, sizeof(buf) - 1) > 0);
	unsigned long long count;
	int segments;
	assert_int_equal(sscanf(buf, "%llu %d", &count, &segments), 2);
	assert_int_equal(count, 0);
	assert_int_equal(segments, 1); /* the one before exec was replaced */
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(out[0]);
	for (int i = 0; i < 20; i++)
		free(held[i]);
}

/* ---- realloc from outside, and a killed target ---- */

static void
test_realloc_is_one_update(void **state)
{
	int up[2];

	(void)state;
	assert_int_equal(pipe(up), 0);
	pid_t pid = fork_child();
	if (pid == 0) {
		void *p = malloc(SIZE_A);
		if (!mstat_self_enabled()) /* its segment, now */
			exit(2);
		put(up[1], 'r');
		for (;;) {
			p = realloc(p, SIZE_B);
			p = realloc(p, SIZE_A);
		}
	}
	assert_int_equal(get(up[0]), 'r');
	void *pa = malloc(SIZE_A), *pb = malloc(SIZE_B);
	unsigned ca = mstat_size_class(malloc_usable_size(pa));
	unsigned cb = mstat_size_class(malloc_usable_size(pb));
	free(pa), free(pb);
	assert_int_not_equal(ca, cb);

	struct mstat_reader *r;
	open_child(&r, pid);
	uint64_t in_a = 0, in_b = 0, first = 0;
	for (int i = 0; i < 20000; i++) {
		rsnap(r, &sc0);
		uint64_t la = mstat_live_objects(&sc0.classes[ca]);
		uint64_t lb = mstat_live_objects(&sc0.classes[cb]);
		if (i == 0)
			first = la + lb;
		if (la + lb != first)
			fail_msg("snapshot %d: %llu live in class %u and %llu in "
				 "class %u, not %llu together: half a realloc", i,
				 (unsigned long long)la, ca, (unsigned long long)lb,
				 cb, (unsigned long long)first);
		in_a += sc0.classes[ca].alloc_count != sc1.classes[ca].alloc_count;
		in_b += sc0.classes[cb].alloc_count != sc1.classes[cb].alloc_count;
		sc1 = sc0;
	}
	assert_true(in_a > 0 && in_b > 0); /* the target was moving */

	/* Killed by a signal: its segment stays, stale but identifiable. */
	struct mstat_target_info info = *mstat_reader_info(r);
	mstat_reader_close(r);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	pid_t np;
	uint64_t nstart;
	assert_int_equal(mstat_shm_parse_name(info.shm_name, &np, &nstart), 0);
	assert_int_equal(np, pid);
	assert_int_equal(nstart, info.start_time);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	char err[256];
	assert_int_equal(mstat_reader_open_name(&r, info.shm_name, err, sizeof(err)), 0);
	assert_int_equal(mstat_reader_info(r)->pid, pid);
	assert_int_equal(mstat_reader_info(r)->start_time, nstart);
	mstat_reader_close(r);
	assert_int_equal(shm_unlink(info.shm_name), 0);
	close(up[0]), close(up[1]);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_child_starts_from_inherited_heap),
		cmocka_unit_test(test_exec_starts_fresh),
		cmocka_unit_test(test_fork_of_threaded_parent_is_exact),
		cmocka_unit_test(test_fork_of_threaded_parent_under_load),
		cmocka_unit_test(test_fork_while_segment_is_made),
		cmocka_unit_test(test_realloc_is_one_update),
	};

	skip_under_valgrind();
	if (argc == 3 && strcmp(argv[1], "after-exec") == 0)
		return after_exec(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "fresh-forks") == 0)
		return fresh_forks();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
