/* SPDX-License-Identifier: MIT */
/*
 * test_tls.c - a thread's thread-local storage grown by the dynamic
 * loader while every allocation is sampled.
 *
 * Threads that have taken their first stack wait while the program loads
 * a module with thread-local storage under 40 names (MODULE, copied),
 * then each touches the last one's: glibc grows the thread's vector of
 * modules (its DTV) with realloc() from inside __tls_get_addr(), and
 * allocates the module's block.  Those allocations are the loader's,
 * made while the thread's TLS is half grown: a stack taken there has
 * libunwind read it, and glibc aborts ("cannot allocate memory for
 * thread-local data") or the process faults, whenever the realloc moved
 * the vector (in 3 processes of 4 here, where addresses are random; in
 * every one where they are not).  Run with MSTAT_SAMPLE_BYTES=1, so that
 * each of them would be sampled.  The work runs in 6 children in turn,
 * whose death fails the test, and whose snapshots of themselves then
 * hold no class that freed more than it allocated.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <mstatshm.h>
#include "tests/interpose/truth.h"

#define COPIES 40
#define THREADS 8
#define ROUNDS 6

static const char *module;
static char dir[] = "/tmp/mstat-test-tls.XXXXXX";
static int (*touch)(void);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loaded = PTHREAD_COND_INITIALIZER;
static int phase;

static void
copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

static void *
waiter(void *unused)
{
	(void)unused;
	free(malloc(100)); /* a slot, and its first stack */
	pthread_mutex_lock(&lock);
	while (phase == 0)
		pthread_cond_wait(&loaded, &lock);
	pthread_mutex_unlock(&lock);
	return (void *)(intptr_t)touch(); /* its TLS grown */
}

/* In the child: 0 if it lived and counted all it freed. */
static int
grow(void)
{
	char path[64];
	void *h = NULL;
	pthread_t t[THREADS];
	void *r;
	struct mstat_snapshot s;

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, waiter, NULL))
			return 2;
	for (int i = 0; i < COPIES; i++) {
		snprintf(path, sizeof(path), "%s/m%d.so", dir, i);
		if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
			return 3;
	}
	*(void **)&touch = dlsym(h, "mstat_test_tls_touch");
	if (!touch)
		return 4;
	pthread_mutex_lock(&lock);
	phase = 1;
	pthread_cond_broadcast(&loaded);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < THREADS; i++)
		if (pthread_join(t[i], &r) || r != (void *)1)
			return 5;
	if (self_snapshot(&s) != 0)
		return 6;
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		if (s.classes[c].free_count > s.classes[c].alloc_count)
			return 7;
	return 0;
}

static void
test_tls_grown_while_sampling(void **state)
{
	char path[64];
	int status;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < COPIES; i++) {
		snprintf(path, sizeof(path), "%s/m%d.so", dir, i);
		copy(module, path);
	}
	for (int k = 0; k < ROUNDS; k++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(grow());
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (status != 0)
			break;
	}
	for (int i = 0; i < COPIES; i++) {
		snprintf(path, sizeof(path), "%s/m%d.so", dir, i);
		unlink(path);
	}
	rmdir(dir);
	if (WIFSIGNALED(status))
		fail_msg("killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("exited %d%s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 127 ? " (glibc's abort)" : "");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_grown_while_sampling),
	};

	skip_under_valgrind();
	if (argc != 2) {
		fprintf(stderr, "usage: test-interpose-tls MODULE\n");
		return 2;
	}
	module = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
