/* SPDX-License-Identifier: MIT */
/*
 * threads.c - what the library costs in memory per thread
 *
 *   mstat-bench-threads --lib PATH [--threads N] [--rounds R]
 *
 * Runs itself as a child, plain, with the library preloaded, and
 * preloaded with sampling off (MSTAT_SAMPLE_BYTES=0), in turn, R rounds
 * (3 by default); preloaded, with MSTAT_EAGER=1, so that every thread's
 * allocations are sampled as a long-lived process's are.  The child starts N threads (400 by default); each makes
 * and frees 4096 blocks of 512 bytes (2 MiB, about four samples at the
 * default interval) and waits; then, with every thread alive, the child
 * reads its own anonymous resident memory (RssAnon in /proc/self/status).
 * Memory, not time: the rounds show that the figure is stable, and the
 * median is reported.
 *
 * Summary lines:
 *   BENCH threads variant=V threads=N rss_anon_kib=.. extra_kib_per_thread=..
 */
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static pthread_barrier_t gate;

static void *
thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4096; i++) {
		void *volatile p = malloc(512); /* volatile: not elided */
		free(p);
	}
	pthread_barrier_wait(&gate); /* all have allocated */
	pthread_barrier_wait(&gate); /* the parent has read */
	return NULL;
}

static long
rss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static int
child(unsigned n)
{
	pthread_t *t = calloc(n, sizeof(*t));

	if (!t || pthread_barrier_init(&gate, NULL, n + 1) != 0)
		return 1;
	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) {
			fprintf(stderr, "mstat-bench-threads: thread %u not started\n", i);
			_exit(1);
		}
	pthread_barrier_wait(&gate);
	printf("%ld\n", rss_anon_kib());
	fflush(stdout);
	pthread_barrier_wait(&gate);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}

/* The child's RssAnon in KiB, run with `preload` (NULL: none) and, if
 * `var`, that variable set; -1 if it failed. */
static long
measure(const char *self, unsigned n, const char *preload, const char *var)
{
	char arg[32], pre[4096];
	char *argv[] = { (char *)self, "--child", arg, NULL };
	char **env;
	size_t k = 0, count = 0;
	int fd[2];
	pid_t pid;
	long kib = -1;

	snprintf(arg, sizeof(arg), "%u", n);
	while (environ[count])
		count++;
	if (!(env = calloc(count + 4, sizeof(*env))))
		return -1;
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
		    strncmp(environ[i], "MSTAT_", 6) != 0)
			env[k++] = environ[i];
	if (preload) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", preload);
		env[k++] = pre;
		/* The segment, and so sampling, from the start: else threads
		 * that finish before it is made sample nothing. */
		env[k++] = "MSTAT_EAGER=1";
	}
	if (var)
		env[k++] = (char *)var;

	posix_spawn_file_actions_t fa;
	if (pipe(fd) != 0) {
		free(env);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	if (posix_spawn(&pid, self, &fa, NULL, argv, env) == 0) {
		FILE *out;
		int status;

		close(fd[1]);
		out = fdopen(fd[0], "r");
		if (!out || fscanf(out, "%ld", &kib) != 1)
			kib = -1;
		if (out)
			fclose(out);
		else
			close(fd[0]);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			kib = -1;
	} else {
		close(fd[0]);
		close(fd[1]);
	}
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	return kib;
}

static int
cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	const char *lib = NULL;
	unsigned n = 400, rounds = 3;
	bool bad = false;

	for (int i = 1; i < argc && !bad; i++) {
		if (strcmp(argv[i], "--child") == 0 && i + 1 < argc)
			return child((unsigned)strtoul(argv[i + 1], NULL, 10));
		if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
			lib = argv[++i];
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			n = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = (unsigned)strtoul(argv[++i], NULL, 10);
		else
			bad = true;
	}
	if (bad || !lib || n < 1 || n > 10000 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: mstat-bench-threads --lib PATH [--threads N] [--rounds R]\n");
		return 2;
	}

	static const struct {
		const char *name;
		int preload;
		const char *var;
	} variants[] = {
		{ "plain", 0, NULL },
		{ "lib", 1, NULL },
		{ "nosample", 1, "MSTAT_SAMPLE_BYTES=0" },
	};
	enum { VARIANTS = sizeof(variants) / sizeof(variants[0]) };
	long kib[VARIANTS][99], median[VARIANTS];

	for (unsigned r = 0; r < rounds; r++)
		for (unsigned v = 0; v < VARIANTS; v++) {
			kib[v][r] = measure("/proc/self/exe", n,
					    variants[v].preload ? lib : NULL, variants[v].var);
			if (kib[v][r] < 0) {
				fprintf(stderr, "mstat-bench-threads: %s run failed\n",
					variants[v].name);
				return 1;
			}
		}
	for (unsigned v = 0; v < VARIANTS; v++) {
		qsort(kib[v], rounds, sizeof(long), cmp_long);
		median[v] = kib[v][rounds / 2];
		printf("BENCH threads variant=%s threads=%u rss_anon_kib=%ld "
		       "extra_kib_per_thread=%.1f\n",
		       variants[v].name, n, median[v],
		       (double)(median[v] - median[0]) / n);
	}
	return 0;
}
