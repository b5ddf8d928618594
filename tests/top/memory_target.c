/* SPDX-License-Identifier: MIT */
/*
 * memory_target.c - a process whose resident memory has known parts, for
 * tests/top/memory.py.  Run with libmstatshm preloaded (and jemalloc
 * or tcmalloc after it), it makes its heap as the mode says, prints
 * "ready PID" and waits for commands on stdin, each answered by a line:
 *
 *   frag N SIZE          N blocks of SIZE bytes, written, then nine of
 *                        every ten freed, scattered
 *   mapped OWN HEAP HOW  a mapping of its own of OWN MiB and a heap of
 *                        HEAP MiB, all written: HOW is "small" (blocks of
 *                        1000 bytes), "big" (one block, after the
 *                        mapping) or "bigfirst" (one block, before it)
 *   arenas T N           T threads, each N blocks of 1000 bytes, nine of
 *                        every ten freed (run it with MALLOC_ARENA_MAX)
 *   shared KIB           a shared mapping of its own, KIB KiB, written
 *   file PATH MIB        PATH made MIB MiB long, mapped and every page
 *                        of it read
 *   untouched MIB        one block of MIB MiB, never written
 *
 * Commands: "trim" (malloc_trim(0)), "churn N" (N blocks of 64 KiB
 * allocated and freed: the allocator's answer to a reader comes at a
 * sampled allocation), "quit".
 *
 *   memory_target noreadv COMMAND [ARG]...
 *
 * runs COMMAND where process_vm_readv(2) fails with EPERM, as it does
 * for a reader without ptrace access to the process it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile sink;

static void *
block(size_t size, int fill)
{
	void *p = malloc(size);

	if (!p) {
		perror("malloc");
		exit(1);
	}
	memset(p, fill, size);
	return p;
}

/* n blocks of `size`, nine of every ten freed: what is left is every
 * tenth, spread over the whole heap. */
static void
fragment(long n, size_t size)
{
	void **b = malloc((size_t)n * sizeof(*b));

	for (long i = 0; i < n; i++)
		b[i] = block(size, 1);
	for (long i = 0; i < n; i++)
		if (i % 10)
			free(b[i]);
	sink = b;
}

/* The arena threads and main meet here once each has made its heap. */
static pthread_barrier_t made;

static void *
arena_thread(void *arg)
{
	fragment((long)arg, 1000);
	pthread_barrier_wait(&made);
	pause();
	return NULL;
}

static void
mapped(size_t own_mib, size_t heap_mib, const char *how)
{
	size_t own = own_mib << 20, heap = heap_mib << 20;

	if (strcmp(how, "bigfirst") == 0)
		sink = block(heap, 4);
	char *p = mmap(NULL, own, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 3, own);
	if (strcmp(how, "big") == 0)
		sink = block(heap, 4);
	else if (strcmp(how, "small") == 0)
		for (size_t i = 0; i < heap / 1000; i++)
			sink = block(1000, 4);
}

static void
shared(size_t kib)
{
	char *p = mmap(NULL, kib << 10, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 5, kib << 10);
}

/* Runs argv[0...] with process_vm_readv() refused (seccomp). */
static int
no_readv(char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("seccomp");
		return 2;
	}
	execvp(argv[0], argv);
	perror(argv[0]);
	return 127;
}

static void
file(const char *path, size_t mib)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	size_t len = mib << 20;

	if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
		perror(path);
		exit(1);
	}
	const volatile char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (size_t i = 0; i < len; i += 4096)
		(void)p[i];
	close(fd);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char line[64];
	/* stdio's buffers are these, not blocks of the heap: once it has
	 * said "ready", the target makes no allocation until asked.  Its
	 * first would be the one that sorts the heap's free chunks, long
	 * enough (milliseconds, more on a busy machine) for a reader's
	 * handshake to give up on it as stalled. */
	static char inbuf[4096], outbuf[4096];

	setvbuf(stdin, inbuf, _IOFBF, sizeof inbuf);
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

	if (strcmp(mode, "noreadv") == 0 && argc > 2)
		return no_readv(argv + 2);
	if (strcmp(mode, "frag") == 0 && argc == 4) {
		fragment(atol(argv[2]), (size_t)atol(argv[3]));
	} else if (strcmp(mode, "mapped") == 0 && argc == 5) {
		mapped((size_t)atol(argv[2]), (size_t)atol(argv[3]), argv[4]);
	} else if (strcmp(mode, "arenas") == 0 && argc == 4) {
		int threads = atoi(argv[2]);
		pthread_barrier_init(&made, NULL, (unsigned)threads + 1);
		for (int i = 0; i < threads; i++) {
			pthread_t t;
			pthread_create(&t, NULL, arena_thread, (void *)atol(argv[3]));
		}
		/* Each thread's heap made before "ready". */
		pthread_barrier_wait(&made);
	} else if (strcmp(mode, "shared") == 0 && argc == 3) {
		shared((size_t)atol(argv[2]));
	} else if (strcmp(mode, "file") == 0 && argc == 4) {
		file(argv[2], (size_t)atol(argv[3]));
	} else if (strcmp(mode, "untouched") == 0 && argc == 3) {
		sink = malloc((size_t)atol(argv[2]) << 20);
	} else {
		fprintf(stderr, "usage: see memory_target.c\n");
		return 2;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "trim", 4) == 0) {
			malloc_trim(0);
			puts("trimmed");
		} else if (strncmp(line, "churn", 5) == 0) {
			for (long i = atol(line + 5); i > 0; i--) {
				sink = malloc(65536);
				free(sink);
			}
			puts("churned");
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
		fflush(stdout);
	}
	return 0;
}
