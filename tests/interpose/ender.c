/* SPDX-License-Identifier: MIT */
/*
 * ender.c - a plain program (not linked with libmstatshm) that ends in
 * every way a process can, for lifecycle.sh and launcher.sh; run under
 * LD_PRELOAD or mstat-run.
 *
 *   ender exit|_exit|_Exit|return|quick_exit|abort|segv|term|kill
 *                          allocates, then ends that way
 *   ender exec-fail        an exec that fails, then exit()
 *   ender exec FN PROG [ARG...]
 *                          makes its segment, then exec()s PROG through
 *                          FN (execve, execv, execvp, execvpe, execl,
 *                          execle, execlp, fexecve or execveat) with
 *                          LD_PRELOAD gone: the new image counts nothing
 *   ender exec-fail-kill   makes its segment, an exec fails, then SIGKILL
 *   ender vfork-exec-kill PROG
 *                          makes its segment; a vfork child exec()s PROG;
 *                          the parent, still counting into the same
 *                          segment (exit status 1 if not), then SIGKILLs
 *                          itself: the child's exec() was not its own
 *   ender fork-_exit       a child allocates and _exit()s; prints its pid
 *   ender vfork-_exit      a vfork child _exit()s; the parent must still be
 *                          counting after it (exit status 1 if not)
 *   ender threads N        N threads each allocate a block and keep it;
 *                          prints "footprint BYTES" (the segment's pages)
 *   ender exact N          N threads each allocate 50 blocks of a size of
 *                          their own (above 1 MiB), free 20; prints "exact"
 *                          if a snapshot of itself says exactly that, and
 *                          its slots
 *   ender churn N          N threads allocate and free 200-byte blocks (200
 *                          usable bytes on glibc, alone in their class) as
 *                          fast as they can until main() returns, 20 ms
 *                          later
 *   ender wait             prints "ready", exits once stdin is closed
 *   ender late             allocates once more 30 ms after the first
 *                          block, then as `wait`
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mstatshm.h>
#include "shm/sizeclass.h"

static void *volatile kept;

/* The library's functions, if it is preloaded. */
static const char *
self_status(void)
{
	const char *(*f)(void);

	*(void **)&f = dlsym(RTLD_DEFAULT, "mstat_self_status");
	return f ? f() : "not preloaded";
}

static int
self_snapshot(struct mstat_snapshot *s)
{
	int (*f)(struct mstat_snapshot *);
	int rc;

	*(void **)&f = dlsym(RTLD_DEFAULT, "mstat_self_snapshot");
	if (!f)
		return -ENOSYS;
	for (int i = 0; (rc = f(s)) == -EBUSY && i < 30; i++)
		;
	return rc;
}

/* Bytes of /dev/shm this process's segment holds (asking makes it). */
static long long
footprint(void)
{
	int (*enabled)(void);

	*(void **)&enabled = dlsym(RTLD_DEFAULT, "mstat_self_enabled");
	if (!enabled || !enabled())
		return -1;
	const char *st = self_status(), *p = strstr(st, "/dev/shm/");
	char path[128];
	struct stat sb;

	if (!p)
		return -1;
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(p, " "), p);
	return stat(path, &sb) == 0 ? (long long)sb.st_blocks * 512 : -1;
}

/* Execs argv[0] through the function named `fn`, without LD_PRELOAD:
 * returns only if it failed (127), or 2 for an unknown `fn`. */
static int
exec_through(const char *fn, char **argv)
{
	extern char **environ;
	char *const *a = argv;

	unsetenv("LD_PRELOAD");
	if (strcmp(fn, "execve") == 0)
		execve(a[0], a, environ);
	else if (strcmp(fn, "execv") == 0)
		execv(a[0], a);
	else if (strcmp(fn, "execvp") == 0)
		execvp(a[0], a);
	else if (strcmp(fn, "execvpe") == 0)
		execvpe(a[0], a, environ);
	else if (strcmp(fn, "execl") == 0)
		execl(a[0], a[0], a[1], (char *)NULL);
	else if (strcmp(fn, "execle") == 0)
		execle(a[0], a[0], a[1], (char *)NULL, environ);
	else if (strcmp(fn, "execlp") == 0)
		execlp(a[0], a[0], a[1], (char *)NULL);
	else if (strcmp(fn, "fexecve") == 0 || strcmp(fn, "execveat") == 0) {
		int fd = open(a[0], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 127;
		if (fn[0] == 'f')
			fexecve(fd, a, environ);
		else
			execveat(fd, "", a, environ, AT_EMPTY_PATH);
	} else
		return 2;
	fprintf(stderr, "ender: %s %s: %s\n", fn, a[0], strerror(errno));
	return 127;
}

/* Counting into its segment, a vfork child exec()s argv[0], then SIGKILL;
 * 1 if it counts no more, or elsewhere. */
static int
vfork_exec_kill(char **argv)
{
	long long before = footprint();
	const char *st = strstr(self_status(), "/dev/shm/");
	char seg[128];

	snprintf(seg, sizeof(seg), "%s", st ? st : "");
	pid_t pid = vfork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	kept = malloc(2000);
	st = strstr(self_status(), "/dev/shm/");
	if (before <= 0 || !st || strcmp(st, seg) != 0 ||
	    strncmp(self_status(), "counting", 8) != 0)
		return 1;
	raise(SIGKILL);
	return 1;
}

static pthread_barrier_t all_counted;
static _Atomic int stop;

static void *
keep_one(void *arg)
{
	(void)arg;
	kept = malloc(100);
	pthread_barrier_wait(&all_counted); /* every slot claimed at once */
	pthread_barrier_wait(&all_counted);
	return NULL;
}

/* Thread t: 50 blocks of 1 MiB + t 64 KiB (nothing else here allocates
 * above 1 MiB), 20 of them freed; what it did, per class, in exact_truth
 * (a block's usable size depends on whether glibc mmapped it, which other
 * threads' frees change). */
#define EXACT_MAX 64
static pthread_mutex_t exact_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mstat_counts exact_truth[MSTAT_CLASS_COUNT];

static size_t
exact_size(uintptr_t t)
{
	return ((size_t)1 << 20) + t * ((size_t)1 << 16);
}

static void *
exact_thread(void *arg)
{
	void *p[50];
	size_t u[50];

	for (int i = 0; i < 50; i++) {
		p[i] = malloc(exact_size((uintptr_t)arg));
		u[i] = malloc_usable_size(p[i]);
	}
	for (int i = 0; i < 20; i++)
		free(p[i]);
	pthread_mutex_lock(&exact_lock);
	for (int i = 0; i < 50; i++) {
		struct mstat_counts *c = &exact_truth[mstat_size_class(u[i])];
		c->alloc_count++;
		c->alloc_bytes += u[i];
		if (i < 20) {
			c->free_count++;
			c->free_bytes += u[i];
		}
	}
	pthread_mutex_unlock(&exact_lock);
	pthread_barrier_wait(&all_counted);
	return NULL;
}

static void *
churn(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		void *volatile p = malloc(200);
		free(p);
	}
	return NULL;
}

static int
run_threads(long n, void *(*fn)(void *), int barrier_waits)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));

	pthread_barrier_init(&all_counted, NULL, (unsigned)n + 1);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)i) != 0)
			return 3;
	for (int i = 0; i < barrier_waits; i++)
		pthread_barrier_wait(&all_counted);
	if (fn == keep_one)
		printf("footprint %lld\n", footprint());
	pthread_barrier_wait(&all_counted);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}

static int
exact(long n)
{
	struct mstat_snapshot *s = malloc(sizeof(*s));
	const struct mstat_counts *truth = exact_truth;
	int rc, bad = 0;

	if (n > EXACT_MAX || !s)
		return 3;
	if ((rc = run_threads(n, exact_thread, 0)) != 0 || self_snapshot(s) != 0)
		return 3;
	for (unsigned k = mstat_size_class(1 << 20); k < MSTAT_CLASS_COUNT; k++)
		if (memcmp(&truth[k], &s->classes[k], sizeof(truth[k])) != 0) {
			bad++;
			fprintf(stderr, "class %u: counted %llu/%llu/%llu/%llu, "
				"made %llu/%llu/%llu/%llu\n", k,
				(unsigned long long)s->classes[k].alloc_count,
				(unsigned long long)s->classes[k].alloc_bytes,
				(unsigned long long)s->classes[k].free_count,
				(unsigned long long)s->classes[k].free_bytes,
				(unsigned long long)truth[k].alloc_count,
				(unsigned long long)truth[k].alloc_bytes,
				(unsigned long long)truth[k].free_count,
				(unsigned long long)truth[k].free_bytes);
		}
	printf("%s slots_used %u overflowed %u\n", bad ? "inexact" : "exact",
	       s->slots_used, s->overflowed);
	free(s);
	return bad ? 1 : 0;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	kept = malloc(1000);
	if (strcmp(m, "exit") == 0)
		exit(0);
	if (strcmp(m, "_exit") == 0)
		_exit(0);
	if (strcmp(m, "_Exit") == 0)
		_Exit(0);
	if (strcmp(m, "return") == 0)
		return 0;
	if (strcmp(m, "quick_exit") == 0)
		quick_exit(0);
	if (strcmp(m, "abort") == 0)
		abort();
	if (strcmp(m, "segv") == 0)
		raise(SIGSEGV);
	if (strcmp(m, "term") == 0)
		raise(SIGTERM);
	if (strcmp(m, "kill") == 0)
		raise(SIGKILL);
	if (strcmp(m, "exec-fail") == 0) {
		execl("/nonexistent/program", "x", (char *)NULL);
		exit(0);
	}
	if (strcmp(m, "exec") == 0 && argc > 3) {
		if (footprint() <= 0) /* asking makes the segment */
			return 3;
		return exec_through(argv[2], argv + 3);
	}
	if (strcmp(m, "exec-fail-kill") == 0) {
		if (footprint() <= 0)
			return 3;
		execlp("/nonexistent/program", "x", (char *)NULL);
		kept = malloc(3000);
		raise(SIGKILL);
	}
	if (strcmp(m, "vfork-exec-kill") == 0 && argc > 2)
		return vfork_exec_kill(argv + 2);
	if (strcmp(m, "fork-_exit") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			kept = malloc(5000);
			_exit(0);
		}
		printf("child %d\n", (int)pid);
		waitpid(pid, NULL, 0);
		exit(0);
	}
	if (strcmp(m, "vfork-_exit") == 0) {
		pid_t pid = vfork();
		if (pid == 0)
			_exit(0); /* shares our memory: must not end our counting */
		waitpid(pid, NULL, 0);
		kept = malloc(2000);
		exit(strncmp(self_status(), "counting", 8) == 0 &&
			     footprint() > 0 ? 0 : 1);
	}
	if (strcmp(m, "threads") == 0)
		return run_threads(n, keep_one, 1);
	if (strcmp(m, "exact") == 0)
		return exact(n);
	if (strcmp(m, "churn") == 0) {
		pthread_t t[64];
		for (long i = 0; i < n && i < 64; i++)
			pthread_create(&t[i], NULL, churn, NULL);
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		return 0; /* exit() while they are inside malloc and free */
	}
	if (strcmp(m, "late") == 0) {
		struct timespec ts = { 0, 30 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		kept = malloc(2000);
		m = "wait";
	}
	if (strcmp(m, "wait") == 0) {
		char c;
		printf("ready\n");
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}
	fprintf(stderr, "usage: ender MODE [N] (see ender.c)\n");
	return 2;
}
