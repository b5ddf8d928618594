/* SPDX-License-Identifier: MIT */
/*
 * target.c - mstat-test-attach-target: processes for mstat-attach to
 * attach, and to refuse, started without libmstatshm.
 *
 *   mstat-test-attach-target MODE [N]
 *
 * Each prints "ready" once set up, works until its stdin closes, then
 * prints what it saw and exits (0 unless it found its own data changed
 * or a signal lost).  Its output is the same whether it was attached or
 * not: that is what the tests compare.
 *
 *   idle            waits
 *   churn N         N threads allocate, fill, check and free blocks of
 *                   many sizes, as fast as they can, through every
 *                   function of the family
 *   huge N          churn, and one thread more that grows and shrinks a
 *                   block of hundreds of MiB inside glibc's heap: it is
 *                   inside realloc() for many milliseconds at a time
 *   signals N       churn, and counts the real-time signals it gets
 *                   (the test sends some, and compares)
 *   fork N          churn, and forks children that allocate and exit
 *   exec            execs itself, in mode idle, after "ready"
 *   exit            churn 2, and exits on its own after a few ms
 *   reaper          forks a child that waits for a signal, before
 *                   "ready"; run as the first process of a pid namespace,
 *                   its exit then waits until the child is reaped (the
 *                   kernel's zap_pid_ns_processes()), as long as the test
 *                   that traces the child does not wait for it
 *   leaderless      its main thread exits (pthread_exit()) once another
 *                   has said "ready"; that one runs on
 *   handler         after "ready", waits in a signal handler (where no
 *                   attach may run) for a line on stdin: "exec", and it
 *                   execs itself in mode idle; "exit", and it exits 0
 *   seccomp-kill    a seccomp filter that kills the process at
 *                   memfd_create() (the attach must refuse it)
 *   seccomp-errno   a seccomp filter that fails membarrier() with EPERM
 *                   (the library counts fenced)
 *   ignore-segv     ignores SIGSEGV (the attach must refuse it)
 *   leak            at a line "go" on stdin, leaks 64 MiB in blocks of 8 KiB
 *                   from leak_site(), and says "leaked"
 *   prior N         makes N blocks of 1000 bytes before "ready"; at a line
 *                   "free" on stdin frees them, and says "freed N U" (U:
 *                   the usable size of each)
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Atomic bool done;
static _Atomic unsigned long bad;       /* blocks found changed */
static _Atomic unsigned long rt_signals;
static const char *self;

static uint64_t
next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Fills block p of n bytes from seed, checks it back later. */
static void
fill(unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 131);
}

static void
check(const unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 131)) {
			atomic_fetch_add(&bad, 1);
			return;
		}
}

#define LIVE 64

/* One thread: blocks made and freed through every function, each filled
 * and checked; a realloc keeps its contents. */
static void *
churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;
	struct { unsigned char *p; size_t n; uint64_t seed; } b[LIVE] = { { 0 } };

	while (!atomic_load(&done)) {
		unsigned k = (unsigned)(next(&s) % LIVE);
		size_t n = 1 + (size_t)(next(&s) % (next(&s) & 1 ? 256 : 70000));
		if (b[k].p) {
			check(b[k].p, b[k].n, b[k].seed);
			if (next(&s) & 1) {
				unsigned char *q = realloc(b[k].p, n);
				if (q) {
					check(q, b[k].n < n ? b[k].n : n, b[k].seed);
					b[k].p = q;
				}
			} else {
				free(b[k].p);
				b[k].p = NULL;
			}
		}
		if (!b[k].p) {
			void *q = NULL;
			switch (next(&s) % 5) {
			case 0: q = malloc(n); break;
			case 1: q = calloc(1, n); break;
			case 2: if (posix_memalign(&q, 64, n)) q = NULL; break;
			case 3: q = aligned_alloc(32, (n + 31) & ~(size_t)31); break;
			case 4: q = memalign(128, n); break;
			}
			b[k].p = q;
		}
		if (b[k].p) {
			b[k].n = n;
			b[k].seed = next(&s);
			fill(b[k].p, n, b[k].seed);
		}
	}
	for (unsigned k = 0; k < LIVE; k++)
		if (b[k].p) {
			check(b[k].p, b[k].n, b[k].seed);
			free(b[k].p);
		}
	return NULL;
}

/* Grows and shrinks one block of hundreds of MiB in the heap (not
 * mmapped: the threshold raised), copied inside realloc(). */
static void *
huge(void *arg)
{
	(void)arg;
	size_t n = 64u << 20;
	unsigned char *p = malloc(n);
	uint64_t seed = 7;

	if (!p)
		return NULL;
	fill(p, 4096, seed);
	while (!atomic_load(&done)) {
		size_t m = n == 64u << 20 ? 256u << 20 : 64u << 20;
		unsigned char *q = realloc(p, m);
		if (!q)
			break;
		check(q, 4096, seed);
		p = q;
		n = m;
	}
	free(p);
	return NULL;
}

static void
on_rt(int sig)
{
	(void)sig;
	atomic_fetch_add(&rt_signals, 1);
}

/* Forks children that allocate a little and exit. */
static void *
forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		pid_t c = fork();
		if (c == 0) {
			void *p = malloc(1000);
			fill(p, 1000, 3);
			free(p);
			_exit(0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void
filter(int nr, uint32_t action)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		exit(3);
	}
}

/* The call site the heap profile must find. */
static __attribute__((noinline)) void *
leak_site(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

/* Waits for stdin to close. */
static void
wait_stdin(void)
{
	char buf[256];

	while (read(0, buf, sizeof(buf)) > 0)
		;
}

/* Mode handler's: a line on stdin says what to do. */
static void
on_usr1(int sig)
{
	char line[16] = "";

	(void)sig;
	if (read(0, line, sizeof(line) - 1) > 0 && strcmp(line, "exec\n") == 0)
		execl(self, self, "idle", (char *)NULL);
	_exit(strcmp(line, "exit\n") == 0 ? 0 : 4);
}

/* Mode leaderless's thread that runs on: "ready", then as mode idle. */
static void *
after_main(void *arg)
{
	(void)arg;
	printf("ready\n");
	fflush(stdout);
	wait_stdin();
	printf("changed 0\n");
	exit(0);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "idle";
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
	pthread_t th[65];
	unsigned nth = 0;

	self = argv[0];
	if (n > 64)
		n = 64;
	if (strcmp(mode, "seccomp-kill") == 0)
		filter(SYS_memfd_create, SECCOMP_RET_KILL_PROCESS);
	else if (strcmp(mode, "seccomp-errno") == 0)
		filter(SYS_membarrier, SECCOMP_RET_ERRNO | EPERM);
	else if (strcmp(mode, "ignore-segv") == 0)
		signal(SIGSEGV, SIG_IGN);
	if (strcmp(mode, "signals") == 0) {
		struct sigaction sa = { .sa_handler = on_rt, .sa_flags = SA_RESTART };
		sigaction(SIGRTMIN, &sa, NULL);
	}
	if (strcmp(mode, "huge") == 0) {
		mallopt(M_MMAP_THRESHOLD, 1 << 30); /* the block stays in the heap */
		mallopt(M_TRIM_THRESHOLD, 1 << 30);
		pthread_create(&th[nth++], NULL, huge, NULL);
	}
	if (strcmp(mode, "fork") == 0)
		pthread_create(&th[nth++], NULL, forker, NULL);
	if (strcmp(mode, "exit") == 0)
		n = 2;
	if (strcmp(mode, "reaper") == 0 && fork() == 0) {
		pause();
		_exit(0);
	}
	if (strcmp(mode, "leaderless") == 0) {
		pthread_create(&th[0], NULL, after_main, NULL);
		pthread_exit(NULL);
	}
	if (strcmp(mode, "churn") == 0 || strcmp(mode, "huge") == 0 ||
	    strcmp(mode, "signals") == 0 || strcmp(mode, "fork") == 0 ||
	    strcmp(mode, "exit") == 0)
		for (unsigned i = 0; i < n; i++)
			pthread_create(&th[nth++], NULL, churn, (void *)(uintptr_t)(i + 1));
	void *prior[64];
	size_t usable = 0;
	if (strcmp(mode, "prior") == 0)
		for (unsigned i = 0; i < n; i++) {
			prior[i] = malloc(1000);
			usable = malloc_usable_size(prior[i]);
		}
	printf("ready\n");
	fflush(stdout);
	if (strcmp(mode, "leak") == 0) {
		char line[16];
		if (!fgets(line, sizeof(line), stdin) || strcmp(line, "go\n") != 0)
			return 5;
		for (unsigned i = 0; i < 8192; i++)
			if (!leak_site(8192))
				return 6;
		printf("leaked\n");
		fflush(stdout);
	}
	if (strcmp(mode, "prior") == 0) {
		char line[16];
		if (!fgets(line, sizeof(line), stdin) || strcmp(line, "free\n") != 0)
			return 5;
		for (unsigned i = 0; i < n; i++)
			free(prior[i]);
		printf("freed %u %zu\n", n, usable);
		fflush(stdout);
	}
	if (strcmp(mode, "handler") == 0) {
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
	}
	if (strcmp(mode, "exec") == 0) {
		execl(self, self, "idle", (char *)NULL);
		return 4;
	}
	if (strcmp(mode, "exit") == 0) {
		struct timespec ts = { 0, 3 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		exit(0);
	}
	wait_stdin();
	atomic_store(&done, true);
	for (unsigned i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("changed %lu", atomic_load(&bad));
	if (strcmp(mode, "signals") == 0) {
		/* Every signal sent is handled or pending (the sender has
		 * stopped): each system call's return here handles those
		 * pending, until none is. */
		sigset_t pending;
		do
			sigpending(&pending);
		while (sigismember(&pending, SIGRTMIN));
		printf(" signals %lu", atomic_load(&rt_signals));
	}
	printf("\n");
	return atomic_load(&bad) ? 1 : 0;
}
