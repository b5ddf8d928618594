/* SPDX-License-Identifier: MIT */
/*
 * start.c - what starting a process costs under the library, and where it
 * goes.
 *
 *   mstat-bench-start --lib LIBMSTATSHM --forward FORWARD_SO [--runs N]
 *                     [--rounds R] [--run MSTAT_RUN] [--exit0 STATIC]
 *
 * Whole starts: `dash -c true`, in four variants, one start of each in
 * turn, N of each per round: plain; preloading an interposer that only
 * forwards (bench/forward.c: the floor of any preloaded interposer);
 * the library loaded but disabled (MSTAT_DISABLE=1: loading, relocation,
 * resolving the next allocator and its self-test); and counting (the
 * segment, its pages, the cleanup of dead segments, the exit path, for a
 * process that makes one).  Wall time per start, median of R rounds.
 *
 * Pieces, in this process, each repeated and timed (median of R rounds):
 * what start() and the exit do, one call at a time, on the real /dev/shm.
 *
 * Forks: dash running FORKS subshells that exit at once, plain and
 * counting, one run of each in turn, R rounds; per fork, less a start.
 * And bash running FORKS children that exec() a program of one system call at once
 * (STATIC: the new image loads nothing, in every variant), plain,
 * counting, and as the command of mstat-run (MSTAT_RUN: a command that
 * makes its segment at start); with MSTAT_BENCH_BEFORE (a library) and
 * MSTAT_BENCH_BEFORE_RUN (an mstat-run) of another build, those too,
 * interleaved with the rest.
 *
 * Figures, never assertions: docs/performance.md says what they mean.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "shm/name.h"
#include "shm/owner.h"
#include "shm/procfs.h"
#include "lib/segment.h"

#define MAX_ROUNDS 64

enum variant { PLAIN, FORWARD, DISABLED, COUNTING, VARIANTS };
static const char *const variant_name[VARIANTS] = {
	"plain", "forward-only", "disabled", "counting"
};

static char *dash;

/* `dash -c true`, and a script that forks FORKS subshells which exit at
 * once (a fork, a child that counts, its exit): what a fork costs. */
#define FORKS 50
#define STR_(x) #x
#define STR(x) STR_(x)
static const char *script = "true";
static const char forks_script[] =
	"i=0; while [ $i -lt " STR(FORKS) " ]; do (:); i=$((i+1)); done";

/* One run of `shell` -c `text`, under mstat-run `run` if not NULL: wall
 * time and the child's CPU time (user and system, from wait4), in ns. */
static void
run_script(char **env, const char *run, char *shell, const char *text,
	   double *wall, double *cpu)
{
	char *plain[] = { shell, "-c", (char *)text, NULL };
	char *under[] = { (char *)run, "--", shell, "-c", (char *)text, NULL };
	char **argv = run ? under : plain;
	uint64_t t0 = mbench_now_ns();
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execve(argv[0], argv, env);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "mstat-bench-start: %s failed\n", shell);
		exit(1);
	}
	*wall += (double)(mbench_now_ns() - t0);
	*cpu += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
		(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static void
one_start(char **env, double *wall, double *cpu)
{
	run_script(env, NULL, dash, script, wall, cpu);
}

/* ---- the pieces ---- */

static uint64_t sink;

static void
piece_start_time(void)
{
	uint64_t t;
	if (mstat_procfs_start_time(0, &t) == 0)
		sink += t;
}

static void
piece_pid_ns(void)
{
	uint64_t ino;
	if (mstat_procfs_pid_ns(&ino) == 0)
		sink += ino;
}

static void
piece_reap(void)
{
	const struct mstat_grace g = { MSTAT_KILLED_GRACE_DEFAULT,
				       MSTAT_KILLED_BYTES_DEFAULT };
	sink += mstat_owner_reap_some(geteuid(), 8, &g);
}

static void
piece_membarrier(void)
{
	sink += (uint64_t)syscall(SYS_membarrier,
				  MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0);
}

/* A whole segment's life, as a one-thread process has it: created with
 * its first pages, published and named, a slot given pages, retired
 * (unlinked), unmapped. */
static void
piece_segment(void)
{
	struct mstat_segment seg;
	char err[160];

	if (mstat_segment_create(&seg, "bench", MSTAT_SLOTS_DEFAULT,
				 MSTAT_MODE_MEMBARRIER, 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "mstat-bench-start: %s\n", err);
		exit(1);
	}
	mstat_segment_publish(&seg);
	if (mstat_segment_name(&seg, err, sizeof(err)) < 0) {
		fprintf(stderr, "mstat-bench-start: %s\n", err);
		exit(1);
	}
	if (mstat_segment_reserve(&seg, 1) < 0)
		exit(1);
	mstat_segment_retire(&seg, 0);
	mstat_segment_forget(&seg);
}

static const struct {
	const char *name;
	void (*fn)(void);
	unsigned reps;
} pieces[] = {
	{ "start-time", piece_start_time, 2000 },
	{ "pid-namespace", piece_pid_ns, 2000 },
	{ "membarrier-register", piece_membarrier, 2000 },
	{ "reap-some", piece_reap, 2000 },
	{ "segment-life", piece_segment, 500 },
};
#define PIECES (sizeof(pieces) / sizeof(pieces[0]))

static double
time_piece(unsigned i)
{
	uint64_t t0 = mbench_now_ns();

	for (unsigned k = 0; k < pieces[i].reps; k++)
		pieces[i].fn();
	return (double)(mbench_now_ns() - t0) / pieces[i].reps;
}

/* A way to run dash for the forks that exec(): its environment, and the
 * mstat-run it runs under, if any. */
struct exec_variant {
	const char *name;
	char **env;
	const char *run;
};

/*
 * Forks that exec() at once: bash running FORKS children that exec()
 * `exit0` (dash vfork()s such a child, which runs no fork handler), under
 * each of the `n` variants in turn (their order rotated every run),
 * `runs` runs a round; a variant's figure per round is its mean run less
 * its mean `bash -c true` (measured in the same turns), per fork, in wall
 * time and in CPU time (bash's and its children's).  Medians of the
 * rounds.
 */
static void
fork_exec(const struct exec_variant *v, unsigned n, const char *exit0,
	  unsigned runs, unsigned rounds)
{
	char text[4200], *bash = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : dash;
	double wall[8][MAX_ROUNDS], cpu[8][MAX_ROUNDS];

	snprintf(text, sizeof(text),
		 "i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done", FORKS, exit0);
	for (unsigned r = 0; r < rounds; r++) {
		double fw[8] = { 0 }, fc[8] = { 0 }, sw[8] = { 0 }, sc[8] = { 0 };
		for (unsigned i = 0; i < runs; i++)
			for (unsigned k = 0; k < n; k++) {
				unsigned j = (k + i) % n;
				run_script(v[j].env, v[j].run, bash, text, &fw[j],
					   &fc[j]);
				run_script(v[j].env, v[j].run, bash, "true", &sw[j],
					   &sc[j]);
			}
		for (unsigned j = 0; j < n; j++) {
			wall[j][r] = (fw[j] - sw[j]) / runs / FORKS / 1e3;
			cpu[j][r] = (fc[j] - sc[j]) / runs / FORKS / 1e3;
		}
	}
	printf("BENCH start fork+exec:");
	for (unsigned j = 0; j < n; j++)
		printf("%s %.1f us wall, %.1f us CPU %s", j ? ";" : "",
		       mbench_median(wall[j], rounds), mbench_median(cpu[j], rounds),
		       v[j].name);
	printf(" (a fork whose child exec()s %s at once; %s, %d a run, less "
	       "a start; medians of %u rounds of %u)\n", exit0, bash, FORKS,
	       rounds, runs);
}

/* Forks: the subshells' script, plain and counting, in turn; its time
 * less a start of the same round (`wall`), per fork. */
static void
fork_subshells(char **env[VARIANTS], double wall[VARIANTS][MAX_ROUNDS],
	       unsigned runs, unsigned rounds)
{
	double fork_us[2][MAX_ROUNDS];
	static const enum variant fv[2] = { PLAIN, COUNTING };

	script = forks_script;
	for (unsigned r = 0; r < rounds; r++) {
		double fw[2] = { 0, 0 }, fc = 0;
		for (unsigned i = 0; i < runs; i++)
			for (unsigned k = 0; k < 2; k++)
				one_start(env[fv[(k + i) % 2]], &fw[(k + i) % 2], &fc);
		for (unsigned k = 0; k < 2; k++)
			fork_us[k][r] = (fw[k] / runs - wall[fv[k]][r]) / FORKS / 1e3;
	}
	printf("BENCH start fork: %.1f us a fork plain, %.1f us counting "
	       "(dash, %d subshells a run, less a start; medians of %u rounds)\n",
	       mbench_median(fork_us[0], rounds), mbench_median(fork_us[1], rounds),
	       FORKS, rounds);
}

/* Forks that exec(): plain, counting, under mstat-run `run` (if not
 * NULL), and beside another build's library and mstat-run if the
 * environment names them. */
static void
forks_that_exec(char **env[VARIANTS], const char *run, const char *exit0,
		unsigned runs, unsigned rounds)
{
	const char *before = getenv("MSTAT_BENCH_BEFORE");
	const char *before_run = getenv("MSTAT_BENCH_BEFORE_RUN");
	char bpre[4200];
	char *extra_before[] = { bpre, NULL };
	snprintf(bpre, sizeof(bpre), "LD_PRELOAD=%s", before ? before : "");
	char **benv = before && *before
		? mbench_env((const char *const *)extra_before) : NULL;
	struct exec_variant ev[5] = {
		{ "plain", env[PLAIN], NULL },
		{ "counting", env[COUNTING], NULL },
	};
	unsigned n = 2;

	if (run)
		ev[n++] = (struct exec_variant){ "under mstat-run", env[PLAIN], run };
	if (benv)
		ev[n++] = (struct exec_variant){ "counting (before)", benv, NULL };
	if (before_run && *before_run)
		ev[n++] = (struct exec_variant){ "under mstat-run (before)",
						 env[PLAIN], before_run };
	fork_exec(ev, n, exit0, runs, rounds);
	if (benv)
		mbench_env_free(benv);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lib", required_argument, NULL, 'l' },
		{ "forward", required_argument, NULL, 'f' },
		{ "runs", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "run", required_argument, NULL, 'm' },
		{ "exit0", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lib = NULL, *forward = NULL, *run = NULL, *exit0 = "/bin/true";
	unsigned runs = 200, rounds = 9;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': lib = optarg; break;
		case 'f': forward = optarg; break;
		case 'n': runs = (unsigned)atoi(optarg); break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 'm': run = optarg; break;
		case 'e': exit0 = optarg; break;
		default: return 2;
		}
	}
	if (!lib || !forward || rounds == 0 || rounds > MAX_ROUNDS || runs == 0) {
		fprintf(stderr, "usage: mstat-bench-start --lib LIB --forward SO "
				"[--runs N] [--rounds R <= %d]\n", MAX_ROUNDS);
		return 2;
	}
	dash = access("/bin/dash", X_OK) == 0 ? "/bin/dash" : "/bin/sh";

	char preload[4200], fwd[4200];
	char *extra_forward[] = { fwd, NULL };
	char *extra_disabled[] = { preload, "MSTAT_DISABLE=1", NULL };
	char *extra_counting[] = { preload, NULL };
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
	snprintf(fwd, sizeof(fwd), "LD_PRELOAD=%s", forward);
	char **env[VARIANTS] = {
		mbench_env(NULL),
		mbench_env((const char *const *)extra_forward),
		mbench_env((const char *const *)extra_disabled),
		mbench_env((const char *const *)extra_counting),
	};
	/* Each round runs `runs` starts of every variant, one of each in
	 * turn (in an order rotated every start), so that the machine's
	 * drifts fall on all variants alike; a round's figure per variant is
	 * its mean, and the ratios are taken within a round. */
	double wall[VARIANTS][MAX_ROUNDS], cpu[VARIANTS][MAX_ROUNDS];
	double ratio[VARIANTS][MAX_ROUNDS];
	double w = 0, u = 0;

	for (int i = 0; i < 20; i++)
		one_start(env[COUNTING], &w, &u); /* warm the page cache */
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned v = 0; v < VARIANTS; v++)
			wall[v][r] = cpu[v][r] = 0;
		for (unsigned i = 0; i < runs; i++)
			for (unsigned k = 0; k < VARIANTS; k++) {
				unsigned v = (k + i) % VARIANTS;
				one_start(env[v], &wall[v][r], &cpu[v][r]);
			}
		for (unsigned v = 0; v < VARIANTS; v++) {
			wall[v][r] /= runs;
			cpu[v][r] /= runs;
			ratio[v][r] = wall[v][r] / wall[PLAIN][r];
		}
	}
	double mw[VARIANTS], mc[VARIANTS], mr[VARIANTS];
	for (unsigned v = 0; v < VARIANTS; v++) {
		mw[v] = mbench_median(wall[v], rounds);
		mc[v] = mbench_median(cpu[v], rounds);
		mr[v] = mbench_median(ratio[v], rounds);
		printf("BENCH start %s %s -c true: %.1f us wall, %.1f us CPU per "
		       "start (medians of %u rounds of %u)\n", variant_name[v],
		       dash, mw[v] / 1e3, mc[v] / 1e3, rounds, runs);
	}
	printf("BENCH start ratio counting/plain %.3f (goal <= 1.10), "
	       "disabled/plain %.3f, forward-only/plain %.3f (wall, median of "
	       "the rounds' ratios)\n", mr[COUNTING], mr[DISABLED], mr[FORWARD]);
	printf("BENCH start CPU per start: preloading an interposer +%.1f us, "
	       "the library's loading and resolving +%.1f us, counting +%.1f us\n",
	       (mc[FORWARD] - mc[PLAIN]) / 1e3, (mc[DISABLED] - mc[FORWARD]) / 1e3,
	       (mc[COUNTING] - mc[DISABLED]) / 1e3);

	double p[PIECES][MAX_ROUNDS];
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned i = 0; i < PIECES; i++)
			p[i][r] = time_piece(i);
	for (unsigned i = 0; i < PIECES; i++)
		printf("BENCH start piece %s: %.1f us (median of %u rounds of %u)\n",
		       pieces[i].name, mbench_median(p[i], rounds) / 1e3, rounds,
		       pieces[i].reps);

	fork_subshells(env, wall, runs / 10 + 1, rounds);
	forks_that_exec(env, run, exit0, runs / 10 + 1, rounds);
	for (unsigned v = 0; v < VARIANTS; v++)
		mbench_env_free(env[v]);
	return (int)(sink & 0); /* keep the pieces' results alive */
}
