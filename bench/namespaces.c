/* SPDX-License-Identifier: MIT */
/*
 * namespaces.c - what mstat-top's tick costs on a host of containers.
 *
 *   mstat-bench-namespaces [--namespaces N] [--ticks T]
 *
 * Makes N containers (default 500) of the kernel objects a runtime makes
 * for one, cheaply: each a mount namespace of its own (private), a tmpfs
 * of its own on /dev/shm and a pid namespace of its own, with two
 * processes in it (its pids 1 and 2), each of which makes a segment of
 * its own, as a process would (its pid, start time and pid namespace in
 * the header; segments.h), holds its owner lock and waits.  Then an
 * observer (struct mstat_core, what mstat-top and mstat-exporter run)
 * reads every namespace's /dev/shm (only these processes: -p with their
 * host pids, so that no other namespace on the machine is touched)
 * and ticks T times (default 20): the first tick sweeps /proc, opens
 * each namespace's /dev/shm through one of its processes and attaches
 * and checks 2N segments; the others read them.  The observer thread's
 * CPU time and each tick's wall time are printed:
 *
 *   BENCH namespaces namespaces=N processes=2N first_tick cpu_ms=.. wall_ms=..
 *   BENCH namespaces ... later_ticks cpu_ms median=.. p90=.. wall_ms median=..
 *
 * Goals (docs/performance.md, "Observer"): with 500 namespaces of 2
 * processes, the first tick within 0.5 s, later ticks within 50 ms of
 * CPU.  Never asserted.  As root (unshare(2) of a mount namespace);
 * skipped (77) otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common.h"
#include "bench/segments.h"
#include "core/core.h"
#include "core/sampler.h" /* the core's targets, looked at */

/* In a child: a segment of its own, "ready" on `ready`, then wait to be
 * killed. */
static void
hold(int ready)
{
	int fd = mbench_segment_self("bench-ns");
	char c = fd >= 0 ? 'y' : 'n';

	(void)!write(ready, &c, 1);
	close(ready);
	for (;;)
		pause();
}

/* A container: its pids 1 and 2 each with a segment.  0 or -1. */
static int
container(void)
{
	int p[2], q[2];

	if (pipe(p) < 0 || pipe(q) < 0)
		return -1;
	pid_t a = fork();
	if (a < 0)
		return -1;
	if (a == 0) {
		/* Its mount namespace (private: nothing it mounts goes back
		 * to the host), a tmpfs on /dev/shm, its pid namespace. */
		close(p[0]);
		close(q[0]);
		if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
			  "size=4m,mode=1777") < 0)
			_exit(1);
		pid_t one = fork();
		if (one < 0)
			_exit(1);
		if (one == 0) {
			pid_t two = fork();
			if (two == 0) {
				close(p[1]);
				hold(q[1]);
			}
			close(q[1]);
			hold(p[1]);
		}
		/* Its pid 1 and 2 now belong to the benchmark (a subreaper). */
		_exit(0);
	}
	close(p[1]);
	close(q[1]);
	char c1 = 0, c2 = 0;
	int st;
	bool ok = read(p[0], &c1, 1) == 1 && read(q[0], &c2, 1) == 1 &&
		  c1 == 'y' && c2 == 'y';
	close(p[0]);
	close(q[0]);
	waitpid(a, &st, 0);
	return ok ? 0 : -1;
}

/* The children of `pid` into out (at most max): how many. */
static size_t
children(pid_t pid, pid_t *out, size_t max)
{
	char path[64], buf[65536];
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (char *s = strtok(buf, " \n"); s && n < max; s = strtok(NULL, " \n"))
		out[n++] = (pid_t)atoi(s);
	return n;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "namespaces", required_argument, NULL, 'n' },
		{ "ticks", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned n = 500, ticks = 20;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'n')
			n = (unsigned)atoi(optarg);
		else if (c == 't')
			ticks = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (n == 0 || ticks < 2) {
		fprintf(stderr, "usage: mstat-bench-namespaces [--namespaces N] "
				"[--ticks T >= 2]\n");
		return 2;
	}
	if (geteuid() != 0) {
		printf("SKIP namespaces: needs root (a mount namespace each)\n");
		return 77;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Each container's first process hands its two to us. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	uint64_t made0 = mbench_now_ns();
	for (unsigned i = 0; i < n; i++)
		if (container() < 0) {
			fprintf(stderr, "mstat-bench: container %u: %s\n", i,
				strerror(errno));
			kill(0, SIGKILL);
		}
	double made_ms = (double)(mbench_now_ns() - made0) / 1e6;

	/* Their host pids: each container's pid 1 is our child now, and its
	 * pid 2 is its child. */
	pid_t *pids = calloc(2 * n + 1, sizeof(*pids));
	size_t np = 0;
	if (!pids)
		return 1;
	np = children(getpid(), pids, 2 * n);
	for (size_t i = 0, ones = np; i < ones; i++)
		np += children(pids[i], pids + np, 2 * n - np);

	double *cpu = calloc(ticks, sizeof(*cpu)), *wall = calloc(ticks, sizeof(*wall));
	struct mstat_core *core;
	struct mstat_core_options o = {
		.pids = pids,
		.npids = np,
		.interval_ms = 1000,
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = 1000000000u,
		.note = mbench_segments_note,
	};
	if (!cpu || !wall || mstat_core_new(&core, &o) < 0)
		return 1;
	rcu_register_thread();
	for (unsigned t = 0; t < ticks; t++) {
		uint64_t c0 = mbench_thread_cpu_ns(), w0 = mbench_now_ns();
		mstat_core_tick(core);
		cpu[t] = (double)(mbench_thread_cpu_ns() - c0) / 1e6;
		wall[t] = (double)(mbench_now_ns() - w0) / 1e6;
	}
	size_t read = 0, inner = 0;
	struct mstat_core_target *tg;
	cds_list_for_each_entry(tg, &core->targets, node) {
		read += tg->sample && tg->sample->have_snap;
		inner += tg->verified && tg->nspid <= 2;
	}
	size_t dirs = core->disc.procs.nlisted;
	mstat_core_free(core);
	rcu_unregister_thread();
	signal(SIGTERM, SIG_IGN);
	for (size_t i = 0; i < np; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;

	printf("BENCH namespaces namespaces=%u processes=%zu made_ms=%.0f "
	       "directories=%zu read=%zu checked=%zu\n", n, np, made_ms, dirs,
	       read, inner);
	printf("BENCH namespaces namespaces=%u first_tick cpu_ms=%.1f "
	       "wall_ms=%.1f (goal 500)\n", n, cpu[0], wall[0]);
	mbench_sort(cpu + 1, ticks - 1);
	mbench_sort(wall + 1, ticks - 1);
	printf("BENCH namespaces namespaces=%u later_ticks cpu_ms median=%.1f "
	       "p90=%.1f wall_ms median=%.1f (goal 50 CPU) ticks=%u\n", n,
	       mbench_quantile(cpu + 1, ticks - 1, 0.5),
	       mbench_quantile(cpu + 1, ticks - 1, 0.9),
	       mbench_quantile(wall + 1, ticks - 1, 0.5), ticks - 1);
	return read == np && np == 2 * n ? 0 : 1;
}
