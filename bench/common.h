/* SPDX-License-Identifier: MIT */
/*
 * common.h - what every benchmark shares: clocks, a start gate, order
 * statistics and the summary line.
 *
 * Every benchmark here has the shape of liburcu's: threads wait at a start
 * gate, run for a fixed duration, and their counts are summed after join.
 * Time is each thread's own CPU time (CLOCK_THREAD_CPUTIME_ID): on a shared
 * 2-vCPU machine a thread that is preempted makes no progress and burns no
 * CPU time, so a preemption does not show as a slower variant.
 */
#ifndef MSTAT_BENCH_COMMON_H
#define MSTAT_BENCH_COMMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MBENCH_CACHELINE 64

/* CLOCK_MONOTONIC in ns. */
uint64_t mbench_now_ns(void);
/* The calling thread's CPU time in ns. */
uint64_t mbench_thread_cpu_ns(void);
/* The whole process's CPU time, every thread. */
uint64_t mbench_process_cpu_ns(void);
void mbench_sleep_ns(uint64_t ns);

/* A start gate for `n` threads: each calls mbench_gate_wait(); the main
 * thread calls mbench_gate_open() once all have arrived (it waits for
 * them), and mbench_gate_stop() at the end of the run. */
struct mbench_gate {
	_Alignas(MBENCH_CACHELINE) _Atomic unsigned arrived;
	_Alignas(MBENCH_CACHELINE) _Atomic int open;
	_Alignas(MBENCH_CACHELINE) _Atomic int stop; /* read in hot loops */
};
void mbench_gate_init(struct mbench_gate *g);
void mbench_gate_wait(struct mbench_gate *g);
void mbench_gate_open(struct mbench_gate *g, unsigned n);
void mbench_gate_stop(struct mbench_gate *g);

static inline int
mbench_gate_stopped(struct mbench_gate *g)
{
	return atomic_load_explicit(&g->stop, memory_order_relaxed);
}

/* Sorts v[0..n) in place. */
void mbench_sort(double *v, size_t n);
/* Quantile q in [0,1] of a sorted array, linear interpolation. */
double mbench_quantile(const double *v, size_t n, double q);
/* Median of v[0..n); v is sorted in place. */
double mbench_median(double *v, size_t n);

/* The hot loops' sizes: MBENCH_SIZES sizes of 16..1024 bytes from a fixed
 * xorshift sequence, the same in every benchmark and every run. */
#define MBENCH_SIZES 1024u /* a power of two: index with & (MBENCH_SIZES - 1) */
void mbench_fill_sizes(uint32_t sizes[MBENCH_SIZES]);

/* An environment for a child: the caller's, without the variables that
 * change how malloc behaves (LD_PRELOAD, MALLOC_*, GLIBC_TUNABLES, MSTAT_*),
 * plus `extra` (NULL-terminated "NAME=value" strings).  Free with
 * mbench_env_free(). */
char **mbench_env(const char *const *extra);
void mbench_env_free(char **env);

/* Runs argv with env, stdout captured into buf (NUL-terminated, truncated
 * to len - 1); stderr passes through unless `quiet`.  Returns the exit
 * status as from waitpid, or -1. */
int mbench_run(char *const argv[], char *const env[], char *buf, size_t len,
	       int quiet);

/* This program again, as a target: /proc/self/exe `name` --target, its
 * stdin and stdout piped to `in` and `out`, with `env` ("NAME=value"
 * strings, NULL-terminated) set.  It says "ready" once it is, and ends
 * when its stdin closes. */
struct mbench_target {
	pid_t pid;  /* 0: not started */
	int in, out; /* its stdin (written), its stdout (read) */
};
/* Starts it and waits for its "ready": 0, or -1. */
int mbench_target_start(struct mbench_target *t, const char *name,
			const char *const *env);
/* Closes its stdin and waits for its end. */
void mbench_target_stop(struct mbench_target *t);

/* Quantile q in [0,1] of v[0..n), sorted in place: the element at
 * q * (n - 1), rounded down. */
uint64_t mbench_quantile_u64(uint64_t *v, size_t n, double q);

/* The value of "key=<number>" in a line of `s` starting with `tag`, or
 * -1 if absent. */
double mbench_field(const char *s, const char *tag, const char *key);

#endif /* MSTAT_BENCH_COMMON_H */
