/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the hot loop: what counting adds to a malloc+free pair.
 *
 *   mstat-bench-writer --pairs PATH --lib PATH --forward PATH
 *                      [--lean PATH] [--attach PATH] [--heaptrack PATH|none]
 *                      [--before PATH]
 *                      [--breakdown yes] [--rounds N] [--ms D]
 *                      [--heaptrack-rounds N]
 *
 * Runs mstat-bench-pairs (the hot loop) once per variant and thread count
 * per round, each run a fresh process, in an order rotated every round
 * (A B C .. then B C .. A), so that the machine's drift and the other
 * users of its two CPUs hit every variant alike.  Per round it takes each
 * variant's difference to plain glibc measured in that same round, and
 * reports the median over rounds, with the quartiles as the noise.
 *
 * Summary lines, one per figure, all starting "BENCH writer":
 *   BENCH writer threads=T variant=V ns_pair=.. extra_ns=.. q1=.. q3=.. ratio=..
 *   BENCH writer-scaling variant=V extra_1t=.. extra_2t=.. ratio_2t_1t=..
 *   BENCH writer-goal variant=V ...
 *   BENCH writer-noise threads=T ...
 * --breakdown yes runs instead, on one thread, the in-process variants
 * that price each piece of the writer's section (lean+touch, ...).
 * Environment: MSTAT_BENCH_ROUNDS, MSTAT_BENCH_MS override the defaults;
 * MSTAT_BENCH_BEFORE, a library, is --before where none is given (so
 * that bench/run.sh --suite writer measures a change against its base).
 * --attach, libmstatshm-attach.so.0, adds the variant "attached": the
 * loop in a process that started it as mstat-attach has a target do it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"

#define MAX_ROUNDS 64
#define THREAD_COUNTS 2

enum preload { P_NONE, P_LIB, P_FORWARD, P_LEAN, P_BEFORE, P_ATTACH };

struct variant {
	const char *name;
	const char *loop;  /* --variant of mstat-bench-pairs */
	enum preload preload;
	const char *mode;  /* MSTAT_MODE, or NULL */
	bool heaptrack;
	bool breakdown;    /* only with --breakdown */
	bool on;
	const char *what;  /* for the summary */
	double ns[THREAD_COUNTS][MAX_ROUNDS];
	double extra[THREAD_COUNTS][MAX_ROUNDS];
	double ratio[THREAD_COUNTS][MAX_ROUNDS];
	unsigned n[THREAD_COUNTS];
};

/* cpu_share of the plain 2-thread runs: did the threads run side by side? */
static double share2[MAX_ROUNDS * 16];
static unsigned nshare2;

static struct variant variants[] = {
	{ .name = "plain", .loop = "plain", .what = "glibc alone" },
	{ .name = "lib-fenced", .loop = "plain", .preload = P_LIB,
	  .mode = "fenced", .what = "libmstatshm preloaded, fenced" },
	{ .name = "lib-membarrier", .loop = "plain", .preload = P_LIB,
	  .mode = "membarrier", .what = "libmstatshm preloaded, membarrier" },
	{ .name = "api-fenced", .loop = "api", .preload = P_LIB,
	  .mode = "fenced", .what = "mstat_record_* calls, no interposer" },
	{ .name = "api-membarrier", .loop = "api", .preload = P_LIB,
	  .mode = "membarrier", .what = "mstat_record_* calls, no interposer" },
	{ .name = "go", .loop = "go", .what = "Go port: shared ring, atomic adds" },
	{ .name = "sect-fenced", .loop = "sect-fenced",
	  .what = "per-thread section, fenced, no interposer" },
	{ .name = "sect-membarrier", .loop = "sect-membarrier",
	  .what = "per-thread section, membarrier, no interposer" },
	{ .name = "lean-membarrier", .loop = "lean-membarrier",
	  .what = "proposal: table class, no touch, no requested" },
	{ .name = "lean+touch", .loop = "lean+touch", .breakdown = true,
	  .what = "lean-membarrier with the touched bitmap" },
	{ .name = "lean+requested", .loop = "lean+requested", .breakdown = true,
	  .what = "lean-membarrier with the requested-bytes add" },
	{ .name = "lean+computed", .loop = "lean+computed", .breakdown = true,
	  .what = "lean-membarrier with the computed class" },
	{ .name = "floor", .loop = "floor", .what = "per-thread adds, no protocol" },
	{ .name = "usable", .loop = "usable", .what = "one malloc_usable_size" },
	{ .name = "forward", .loop = "plain", .preload = P_FORWARD,
	  .what = "RTLD_NEXT forwarder only" },
	{ .name = "lib-before", .loop = "plain", .preload = P_BEFORE,
	  .mode = "membarrier", .what = "another build of libmstatshm (--before)" },
	{ .name = "attached", .loop = "plain", .preload = P_ATTACH,
	  .what = "libmstatshm-attach, started in the process (mstat-attach)" },
	{ .name = "lean-preload", .loop = "plain", .preload = P_LEAN,
	  .what = "proposal: lean counting interposer (bench/lean.c)" },
	{ .name = "heaptrack", .loop = "plain", .heaptrack = true,
	  .what = "heaptrack (ratio only)" },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static struct {
	const char *pairs, *lib, *forward, *lean, *heaptrack, *before, *attach;
	unsigned rounds, ms, ht_rounds;
	bool breakdown;
	char tmpdir[64];
} opt = { .rounds = 9, .ms = 150, .ht_rounds = 3 };

static struct variant *
find(const char *name)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (strcmp(variants[i].name, name) == 0)
			return &variants[i];
	return NULL;
}

/* One run of the loop; the output line into out.  0 or -1. */
static int
run_once(const struct variant *v, unsigned threads, unsigned ms, char *out,
	 size_t len)
{
	char tstr[16], msstr[24], preload[4200], mode[64], htout[128];
	const char *extra[6];
	char *argv[16];
	int a = 0, e = 0;

	snprintf(tstr, sizeof(tstr), "%u", threads);
	snprintf(msstr, sizeof(msstr), "%u", ms);
	if (v->preload != P_NONE && v->preload != P_ATTACH) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s",
			 v->preload == P_LIB ? opt.lib :
			 v->preload == P_LEAN ? opt.lean :
			 v->preload == P_BEFORE ? opt.before : opt.forward);
		extra[e++] = preload;
	}
	if (v->mode) {
		snprintf(mode, sizeof(mode), "MSTAT_MODE=%s", v->mode);
		extra[e++] = mode;
		extra[e++] = "MSTAT_NAME=mstat-bench-pairs";
	}
	extra[e] = NULL;
	if (v->heaptrack) {
		snprintf(htout, sizeof(htout), "%s/ht", opt.tmpdir);
		argv[a++] = (char *)opt.heaptrack;
		argv[a++] = "-o";
		argv[a++] = htout;
	}
	argv[a++] = (char *)opt.pairs;
	argv[a++] = "--variant";
	argv[a++] = (char *)v->loop;
	argv[a++] = "--threads";
	argv[a++] = tstr;
	argv[a++] = "--ms";
	argv[a++] = msstr;
	if (v->preload == P_ATTACH) {
		argv[a++] = "--attach";
		argv[a++] = (char *)opt.attach;
	}
	argv[a] = NULL;

	char **env = mbench_env(extra);
	int st = mbench_run(argv, env, out, len, v->heaptrack);
	mbench_env_free(env);
	if (v->heaptrack) {
		/* heaptrack names its output after the pid: clear the lot. */
		char cmd[160];
		snprintf(cmd, sizeof(cmd), "rm -f %s/ht*", opt.tmpdir);
		(void)!system(cmd);
	}
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    mbench_field(out, "pairs ", "ns_pair") <= 0) {
		fprintf(stderr, "mstat-bench-writer: %s, %u threads: run failed:\n%s\n",
			v->name, threads, out);
		return -1;
	}
	return 0;
}

/* Which object provides malloc under this variant (from a short run). */
static void
provider(const struct variant *v, char *buf, size_t len)
{
	char out[8192];

	buf[0] = '\0';
	if (run_once(v, 1, 5, out, sizeof(out)) < 0)
		return;
	const char *m = strstr(out, "malloc=");
	if (m)
		sscanf(m + 7, "%255s", buf);
	(void)len;
}

static double
med(const double *src, unsigned n, double q)
{
	double v[MAX_ROUNDS * 16];

	memcpy(v, src, n * sizeof(*v));
	mbench_sort(v, n);
	return mbench_quantile(v, n, q);
}

static void
report(void)
{
	static const unsigned tc[THREAD_COUNTS] = { 1, 2 };
	struct variant *plain = find("plain");

	for (unsigned t = 0; t < THREAD_COUNTS; t++) {
		unsigned n = plain->n[t];
		if (!n)
			continue;
		double mn = med(plain->ns[t], n, 0), mx = med(plain->ns[t], n, 1);
		double m = med(plain->ns[t], n, 0.5);
		printf("BENCH writer-noise threads=%u plain_ns_pair=%.2f min=%.2f "
		       "max=%.2f spread_pct=%.0f rounds=%u",
		       tc[t], m, mn, mx, m > 0 ? 100 * (mx - mn) / m : 0, n);
		if (tc[t] == 2 && nshare2)
			/* Below 1.0, the other users of the machine took one
			 * of the two CPUs part of the time. */
			printf(" cpu_share_median=%.2f cpu_share_min=%.2f",
			       med(share2, nshare2, 0.5), med(share2, nshare2, 0));
		printf("\n");
	}
	for (size_t i = 0; i < NVARIANTS; i++) {
		struct variant *v = &variants[i];
		if (!v->on)
			continue;
		for (unsigned t = 0; t < THREAD_COUNTS; t++) {
			unsigned n = v->n[t];
			if (!n)
				continue;
			if (v->heaptrack) {
				printf("BENCH writer threads=%u variant=%s ns_pair=%.1f "
				       "ratio=%.1fx rounds=%u  # %s\n",
				       tc[t], v->name, med(v->ns[t], n, 0.5),
				       med(v->ratio[t], n, 0.5), n, v->what);
				continue;
			}
			printf("BENCH writer threads=%u variant=%s ns_pair=%.2f "
			       "extra_ns=%+.2f q1=%+.2f q3=%+.2f ratio=%.3f "
			       "rounds=%u  # %s\n",
			       tc[t], v->name, med(v->ns[t], n, 0.5),
			       med(v->extra[t], n, 0.5), med(v->extra[t], n, 0.25),
			       med(v->extra[t], n, 0.75), med(v->ratio[t], n, 0.5),
			       n, v->what);
		}
	}
	for (size_t i = 0; i < NVARIANTS; i++) {
		struct variant *v = &variants[i];
		if (!v->on || v == plain || v->heaptrack || !v->n[0] || !v->n[1])
			continue;
		double e1 = med(v->extra[0], v->n[0], 0.5);
		double e2 = med(v->extra[1], v->n[1], 0.5);
		printf("BENCH writer-scaling variant=%s extra_1t=%+.2f extra_2t=%+.2f "
		       "ratio_2t_1t=%.2f\n", v->name, e1, e2, e1 > 0 ? e2 / e1 : 0);
		if (strncmp(v->name, "lib-", 4) == 0)
			printf("BENCH writer-goal variant=%s extra_1t=%+.2f goal=+4.0 %s "
			       "extra_2t=%+.2f goal=+4.5 %s ratio_2t_1t=%.2f goal=1.2 %s\n",
			       v->name, e1, e1 <= 4.0 ? "met" : "MISSED", e2,
			       e2 <= 4.5 ? "met" : "MISSED", e1 > 0 ? e2 / e1 : 0,
			       e1 > 0 && e2 / e1 <= 1.2 ? "met" : "MISSED");
	}
}

static unsigned
env_uint(const char *name, unsigned dflt)
{
	const char *s = getenv(name);

	return s && *s ? (unsigned)strtoul(s, NULL, 10) : dflt;
}

int
main(int argc, char **argv)
{
	static const unsigned tc[THREAD_COUNTS] = { 1, 2 };
	char out[65536], prov[256];

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *val = argv[i + 1];
		if (strcmp(k, "--pairs") == 0)
			opt.pairs = val;
		else if (strcmp(k, "--lib") == 0)
			opt.lib = val;
		else if (strcmp(k, "--forward") == 0)
			opt.forward = val;
		else if (strcmp(k, "--lean") == 0)
			opt.lean = val;
		else if (strcmp(k, "--before") == 0)
			opt.before = val;
		else if (strcmp(k, "--attach") == 0)
			opt.attach = val;
		else if (strcmp(k, "--heaptrack") == 0)
			opt.heaptrack = strcmp(val, "none") ? val : NULL;
		else if (strcmp(k, "--rounds") == 0)
			opt.rounds = (unsigned)strtoul(val, NULL, 10);
		else if (strcmp(k, "--ms") == 0)
			opt.ms = (unsigned)strtoul(val, NULL, 10);
		else if (strcmp(k, "--breakdown") == 0)
			opt.breakdown = strcmp(val, "yes") == 0;
		else if (strcmp(k, "--heaptrack-rounds") == 0)
			opt.ht_rounds = (unsigned)strtoul(val, NULL, 10);
	}
	opt.rounds = env_uint("MSTAT_BENCH_ROUNDS", opt.rounds);
	opt.ms = env_uint("MSTAT_BENCH_MS", opt.ms);
	if (!opt.before && getenv("MSTAT_BENCH_BEFORE") &&
	    *getenv("MSTAT_BENCH_BEFORE"))
		opt.before = getenv("MSTAT_BENCH_BEFORE");
	if (!opt.pairs || !opt.lib || !opt.forward || opt.rounds < 1 ||
	    opt.rounds > MAX_ROUNDS || opt.ms < 10) {
		fprintf(stderr, "usage: mstat-bench-writer --pairs PATH --lib PATH "
				"--forward PATH [--heaptrack PATH|none] "
				"[--rounds 1..64] [--ms D]\n");
		return 2;
	}
	snprintf(opt.tmpdir, sizeof(opt.tmpdir), "/tmp/mstat-bench.XXXXXX");
	if (!mkdtemp(opt.tmpdir))
		return 1;

	/* Which variants can run here. */
	for (size_t i = 0; i < NVARIANTS; i++)
		variants[i].on = true;
	struct variant *libf = find("lib-fenced");
	provider(libf, prov, sizeof(prov));
	bool interposes = strstr(prov, "mstatshm") != NULL;
	printf("BENCH writer-setup lib=%s interposes_malloc=%s (malloc from %s)\n",
	       opt.lib, interposes ? "yes" : "no", prov[0] ? prov : "?");
	find("lib-fenced")->on = interposes;
	find("lib-membarrier")->on = interposes;
	/* The explicit API stands in until the interposer exists; with it,
	 * calls would count twice. */
	find("api-fenced")->on = !interposes;
	find("api-membarrier")->on = !interposes;
	provider(find("forward"), prov, sizeof(prov));
	if (!strstr(prov, "forward")) {
		printf("BENCH writer-setup forward: malloc from %s, skipped\n", prov);
		find("forward")->on = false;
	}
	find("lean-preload")->on = opt.lean != NULL;
	find("lib-before")->on = opt.before != NULL;
	find("attached")->on = opt.attach != NULL;
	/* --breakdown yes: the in-process variants that size each piece of
	 * the section, nothing else. */
	for (size_t i = 0; i < NVARIANTS; i++) {
		struct variant *v = &variants[i];
		bool piece = v->breakdown || strcmp(v->name, "plain") == 0 ||
			     strcmp(v->name, "sect-membarrier") == 0 ||
			     strcmp(v->name, "lean-membarrier") == 0 ||
			     strcmp(v->name, "floor") == 0;
		if (opt.breakdown ? !piece : v->breakdown)
			v->on = false;
	}
	find("heaptrack")->on = opt.heaptrack != NULL && opt.ht_rounds > 0;
	if (!opt.heaptrack)
		printf("BENCH writer-setup heaptrack: not installed, skipped "
		       "(bench/run.sh installs it)\n");
	fflush(stdout);

	uint64_t t0 = mbench_now_ns();
	unsigned retries = 0;
	for (unsigned r = 0; r < opt.rounds; r++) {
		for (unsigned t = 0; t < (opt.breakdown ? 1u : THREAD_COUNTS); t++) {
			double cur[NVARIANTS] = { 0 };
			for (size_t k = 0; k < NVARIANTS; k++) {
				size_t idx = (k + r) % NVARIANTS;
				struct variant *v = &variants[idx];
				if (!v->on || (v->heaptrack && r >= opt.ht_rounds))
					continue;
				/* Two threads must really run side by side to show
				 * shared cache lines: when the machine's other users
				 * held a CPU for most of the run, run it again. */
				int rc;
				unsigned tries = 0;
				while ((rc = run_once(v, tc[t], opt.ms, out,
						      sizeof(out))) == 0 &&
				       tc[t] == 2 && !v->heaptrack &&
				       mbench_field(out, "pairs ", "cpu_share") < 0.75 &&
				       ++tries < 3 && retries < opt.rounds * NVARIANTS) {
					retries++;
					mbench_sleep_ns(20000000);
				}
				if (rc < 0)
					continue;
				cur[idx] = mbench_field(out, "pairs ", "ns_pair");
				if (tc[t] == 2 && !v->heaptrack &&
				    nshare2 < sizeof(share2) / sizeof(share2[0]))
					share2[nshare2++] =
						mbench_field(out, "pairs ", "cpu_share");
			}
			/* Differences against plain of the same round. */
			double p = cur[0];
			for (size_t k = 0; p > 0 && k < NVARIANTS; k++) {
				struct variant *v = &variants[k];
				if (cur[k] <= 0)
					continue;
				unsigned n = v->n[t]++;
				v->ns[t][n] = cur[k];
				v->extra[t][n] = cur[k] - p;
				v->ratio[t][n] = cur[k] / p;
			}
		}
	}
	report();
	printf("BENCH writer-meta rounds=%u ms_per_run=%u heaptrack_rounds=%u "
	       "reruns_2t=%u wall_s=%.1f\n", opt.rounds, opt.ms,
	       opt.heaptrack ? opt.ht_rounds : 0, retries,
	       (double)(mbench_now_ns() - t0) / 1e9);
	rmdir(opt.tmpdir);
	return 0;
}
