/* SPDX-License-Identifier: MIT */
#include "bench/common.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

uint64_t
mbench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
mbench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
mbench_process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
mbench_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void
mbench_gate_init(struct mbench_gate *g)
{
	atomic_init(&g->arrived, 0);
	atomic_init(&g->open, 0);
	atomic_init(&g->stop, 0);
}

void
mbench_gate_wait(struct mbench_gate *g)
{
	atomic_fetch_add_explicit(&g->arrived, 1, memory_order_acq_rel);
	while (!atomic_load_explicit(&g->open, memory_order_acquire))
		sched_yield();
}

void
mbench_gate_open(struct mbench_gate *g, unsigned n)
{
	while (atomic_load_explicit(&g->arrived, memory_order_acquire) < n)
		sched_yield();
	atomic_store_explicit(&g->open, 1, memory_order_release);
}

void
mbench_gate_stop(struct mbench_gate *g)
{
	atomic_store_explicit(&g->stop, 1, memory_order_relaxed);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
mbench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double
mbench_quantile(const double *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

double
mbench_median(double *v, size_t n)
{
	mbench_sort(v, n);
	return mbench_quantile(v, n, 0.5);
}

static int
dropped(const char *e)
{
	static const char *const prefixes[] = {
		"LD_PRELOAD=", "MALLOC_", "GLIBC_TUNABLES=", "MSTAT_",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(e, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

char **
mbench_env(const char *const *extra)
{
	size_t n = 0, m = 0, k = 0;

	while (environ[n])
		n++;
	while (extra && extra[m])
		m++;
	char **env = calloc(n + m + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!dropped(environ[i]))
			env[k++] = strdup(environ[i]);
	for (size_t i = 0; i < m; i++)
		env[k++] = strdup(extra[i]);
	env[k] = NULL;
	return env;
}

void
mbench_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

int
mbench_run(char *const argv[], char *const env[], char *buf, size_t len,
	   int quiet)
{
	posix_spawn_file_actions_t fa;
	int fds[2], status = -1;
	size_t got = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
						 O_WRONLY, 0);
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return -1;
	}
	for (;;) {
		char tmp[4096];
		ssize_t r = read(fds[0], tmp, sizeof(tmp));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t take = (size_t)r;
		if (got + take > len - 1)
			take = len - 1 - got;
		memcpy(buf + got, tmp, take);
		got += take;
	}
	buf[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

double
mbench_field(const char *s, const char *tag, const char *key)
{
	size_t tl = strlen(tag), kl = strlen(key);

	for (const char *line = s; line && *line;) {
		const char *end = strchr(line, '\n');
		if (strncmp(line, tag, tl) == 0) {
			for (const char *p = line; p && (!end || p < end);
			     p = strchr(p + 1, ' ')) {
				const char *w = *p == ' ' ? p + 1 : p;
				if (strncmp(w, key, kl) == 0 && w[kl] == '=')
					return strtod(w + kl + 1, NULL);
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

void
mbench_fill_sizes(uint32_t sizes[MBENCH_SIZES])
{
	uint32_t x = 2463534242u;

	for (unsigned i = 0; i < MBENCH_SIZES; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		sizes[i] = 16 + x % (1024 - 16 + 1);
	}
}

int
mbench_target_start(struct mbench_target *t, const char *name,
		    const char *const *env)
{
	int to[2], from[2];
	char line[8];

	t->pid = 0;
	if (pipe2(to, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(from, O_CLOEXEC) < 0) {
		close(to[0]);
		close(to[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execl("/proc/self/exe", name, "--target", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	if (pid < 0) {
		close(to[1]);
		close(from[0]);
		return -1;
	}
	t->pid = pid;
	t->in = to[1];
	t->out = from[0];
	return read(t->out, line, 6) == 6 && memcmp(line, "ready\n", 6) == 0 ? 0 : -1;
}

void
mbench_target_stop(struct mbench_target *t)
{
	if (t->pid <= 0)
		return;
	close(t->in);
	close(t->out);
	while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
		;
	t->pid = 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint64_t
mbench_quantile_u64(uint64_t *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(size_t)(q * (double)(n - 1))];
}
