/* SPDX-License-Identifier: MIT */
/*
 * exporter.c - what a Prometheus scrape of 1000 processes costs
 * mstat-exporter.
 *
 *   mstat-bench-exporter --exporter PATH [--segments N] [--scrapes S]
 *
 * Makes N live segments (default 1000; bench/segments.h), then measures
 * two ways, interleaved where they share the machine:
 *
 *   in process   the exporter's scrape path itself (scrape.h: a tick of
 *                the reader thread over every segment, then the writer
 *                into memory), S times (default 200) per format, with
 *                and without per-class series; the process's CPU time
 *                (CLOCK_PROCESS_CPUTIME_ID: both threads) per scrape:
 *     BENCH exporter-scrape segments=N format=F classes=C cpu_ms median=..
 *       p90=.. wall_ms median=.. bytes=..
 *
 *   over HTTP    the mstat-exporter program, scraped S times over
 *                loopback as Prometheus scrapes it (its Accept header),
 *                one connection each; its CPU time (utime + stime of
 *                /proc/PID/stat) over the S scrapes, per scrape:
 *     BENCH exporter-http segments=N classes=C scrapes=S
 *       cpu_ms_per_scrape=.. wall_ms_per_scrape=.. bytes=..
 *       peak_rss_kib=.. rss_anon_kib=.. rss_shmem_kib=..
 *   with its memory once scraped (/proc/PID/status: VmHWM, RssAnon,
 *   RssShmem); its own is the anonymous part, the segments' pages it
 *   maps are shared memory their processes made (and are charged for).
 *
 * The goal (docs/performance.md, "Exporter"): a scrape of 1000 processes
 * costs at most 50 ms of CPU.  The segments are removed at the end.
 *
 *   mstat-bench-exporter --exporter PATH --profile-stacks N [--requests R]
 *
 * The heap profile of a process with N live stacks (default 10000; a
 * segment of this process, bench/segments.h, frames in its own loaded
 * objects), served as /debug/pprof/heap serves it, R times (default 20):
 *
 *   in process   what a request does (pprof_http.c): a reader of its own
 *                on the segment, the profile read, its frames named
 *                through the shared symbol cache, encoded and gzipped;
 *                the first request (the cache empty) and the later ones,
 *                CPU time of the thread, and the part the read takes:
 *     BENCH exporter-pprof-inprocess stacks=N first_cpu_ms=.. cpu_ms
 *       median=.. p90=.. read_ms median=.. bytes=..
 *
 *   over HTTP    mstat-exporter asked for the profile R times, one
 *                connection each; its CPU time (utime + stime) for the
 *                first request (which reads every segment once, to find
 *                the process) and per later one:
 *     BENCH exporter-pprof-http stacks=N first_cpu_ms=.. cpu_ms_per_request=..
 *       wall_ms_per_request=.. bytes=..
 *
 * The goal (docs/performance.md, "Exporter"): a profile of 10,000 live
 * stacks served in at most 50 ms of CPU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/common.h"
#include "core/pprof.h"
#include "shm/reader.h"
#include "exporter/scrape.h"
#include "bench/segments.h"
#include "core/symbols.h"

/* S scrapes of the in-process path. */
static int
in_process(unsigned n, unsigned scrapes, enum mstat_expo_format fmt,
	   bool classes)
{
	struct mstat_scrape_options o = {
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.classes = classes,
		.note = mbench_segments_note,
	};
	struct mstat_scraper *s;
	double *cpu = calloc(scrapes, sizeof(*cpu));
	double *wall = calloc(scrapes, sizeof(*wall));
	size_t bytes = 0;

	if (!cpu || !wall || mstat_scrape_start(&s, &o) < 0)
		return -1;
	/* The first scrape attaches every segment: not what a scrape costs
	 * afterwards, when Prometheus scrapes every 15 s. */
	for (unsigned i = 0; i <= scrapes; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		uint64_t c0 = mbench_process_cpu_ns(), w0 = mbench_now_ns();
		int rc = mstat_scrape_write(s, f, fmt);
		fclose(f);
		if (i) {
			cpu[i - 1] = (double)(mbench_process_cpu_ns() - c0) / 1e6;
			wall[i - 1] = (double)(mbench_now_ns() - w0) / 1e6;
		}
		bytes = len;
		free(buf);
		if (rc < 0)
			return -1;
	}
	mstat_scrape_stop(s);
	mbench_sort(cpu, scrapes);
	printf("BENCH exporter-scrape segments=%u format=%s classes=%s cpu_ms "
	       "median=%.2f p90=%.2f wall_ms median=%.2f bytes=%zu (goal 50 CPU)\n",
	       n, fmt == MSTAT_EXPO_OPENMETRICS ? "openmetrics" : "text",
	       classes ? "yes" : "no", mbench_quantile(cpu, scrapes, 0.5),
	       mbench_quantile(cpu, scrapes, 0.9), mbench_median(wall, scrapes),
	       bytes);
	free(cpu);
	free(wall);
	return 0;
}

/* utime + stime of a process, in ms. */
static double
proc_cpu_ms(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	/* Fields after the name: state is 3; utime 14, stime 15. */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

/* A "Field:  N kB" line of /proc/PID/status, in KiB; -1 if none. */
static long
proc_status_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* One GET of `path`, with Prometheus's Accept header; the length of
 * the answer, or -1. */
static long
http_get(unsigned port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char req[512];
	int n = snprintf(req, sizeof(req),
		"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		"Accept: application/openmetrics-text;version=1.0.0,"
		"application/openmetrics-text;version=0.0.1;q=0.75,"
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
		"Connection: close\r\n\r\n", path);
	static char buf[1 << 16];
	long total = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, req, (size_t)n) != (ssize_t)n) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (ssize_t r; (r = read(fd, buf, sizeof(buf))) > 0;)
		total += r;
	close(fd);
	return total;
}

/* A port of 127.0.0.1 free a moment ago, or 0. */
static unsigned
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Starts the exporter on a free port (another taken it since: the next
 * one).  Its pid and port, with its stderr open in *errf; or -1. */
static int
start_exporter(const char *exporter, bool classes, pid_t *pid, unsigned *port,
	       FILE **errf)
{
	char line[512], want[64], arg[64];

	for (int attempt = 0; attempt < 20; attempt++) {
		int pipefd[2];
		bool in_use = false, listening = false;

		if (!(*port = free_port()) || pipe(pipefd) < 0)
			return -1;
		snprintf(arg, sizeof(arg), "--web.listen-address=127.0.0.1:%u", *port);
		snprintf(want, sizeof(want), "listening on 127.0.0.1:%u ", *port);
		if ((*pid = fork()) == 0) {
			dup2(pipefd[1], STDERR_FILENO);
			close(pipefd[0]);
			execl(exporter, exporter, arg, classes ?
			      "--collector.classes" : "--no-collector.classes",
			      (char *)NULL);
			_exit(127);
		}
		close(pipefd[1]);
		FILE *err = fdopen(pipefd[0], "r");
		while (err && !listening && fgets(line, sizeof(line), err)) {
			listening = strstr(line, want) != NULL;
			in_use |= strstr(line, "Address already in use") != NULL;
		}
		if (listening) {
			*errf = err;
			return 0;
		}
		kill(*pid, SIGTERM);
		waitpid(*pid, NULL, 0);
		if (err)
			fclose(err);
		if (!in_use)
			break;
	}
	fprintf(stderr, "mstat-bench-exporter: %s did not start\n", exporter);
	return -1;
}

static int
over_http(const char *exporter, unsigned n, unsigned scrapes, bool classes)
{
	pid_t pid;
	unsigned port;
	FILE *err;

	if (start_exporter(exporter, classes, &pid, &port, &err) < 0)
		return -1;
	long bytes = http_get(port, "/metrics"); /* attaches every segment */
	double c0 = proc_cpu_ms(pid);
	uint64_t w0 = mbench_now_ns();
	for (unsigned i = 0; i < scrapes && bytes > 0; i++)
		bytes = http_get(port, "/metrics");
	double wall = (double)(mbench_now_ns() - w0) / 1e6;
	double cpu = proc_cpu_ms(pid) - c0;
	long hwm = proc_status_kib(pid, "VmHWM"),
	     anon = proc_status_kib(pid, "RssAnon"),
	     shmem = proc_status_kib(pid, "RssShmem");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	fclose(err);
	if (bytes <= 0)
		return -1;
	printf("BENCH exporter-http segments=%u classes=%d scrapes=%u "
	       "cpu_ms_per_scrape=%.2f wall_ms_per_scrape=%.2f bytes=%ld "
	       "peak_rss_kib=%ld rss_anon_kib=%ld rss_shmem_kib=%ld "
	       "(goal 50 CPU)\n", n, classes, scrapes, cpu / scrapes,
	       wall / scrapes, bytes, hwm, anon, shmem);
	return 0;
}

/* ---- a heap profile of many stacks ---- */

static int
profile_in_process(int seg, unsigned stacks, unsigned requests)
{
	struct mstat_symcache *cache = mstat_symbols_cache_new(256);
	double *cpu = calloc(requests, sizeof(*cpu));
	double *read = calloc(requests, sizeof(*read));
	double first = 0;
	size_t bytes = 0;
	char err[256];

	if (!cache || !cpu || !read)
		return -1;
	for (unsigned i = 0; i <= requests; i++) {
		struct mstat_reader *r;
		struct mstat_profile p;
		struct mstat_pprof_options o = { .time_ns = 1 };
		unsigned char *gz = NULL;
		size_t len = 0;
		uint64_t c0 = mbench_thread_cpu_ns();
		int fd = fcntl(seg, F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || mstat_reader_open_fd(&r, fd, "bench", err, sizeof(err)) < 0 ||
		    mstat_reader_profile(r, &p) < 0) {
			fprintf(stderr, "mstat-bench-exporter: the profile: %s\n", err);
			return -1;
		}
		uint64_t c1 = mbench_thread_cpu_ns();
		struct mstat_symbols *sym = mstat_symbols_new_cached(&p, cache);
		int rc = mstat_pprof_encode(&p, sym, &o, &gz, &len, err, sizeof(err));
		mstat_symbols_free(sym);
		uint64_t n = p.nstacks;
		mstat_reader_profile_release(&p);
		mstat_reader_close(r);
		free(gz);
		double ms = (double)(mbench_thread_cpu_ns() - c0) / 1e6;
		if (rc < 0 || n != stacks) {
			fprintf(stderr, "mstat-bench-exporter: %" PRIu64 " stacks "
				"encoded of %u: %s\n", n, stacks, rc < 0 ? err : "");
			return -1;
		}
		bytes = len;
		if (i == 0) {
			first = ms;
			continue;
		}
		cpu[i - 1] = ms;
		read[i - 1] = (double)(c1 - c0) / 1e6;
	}
	mbench_sort(cpu, requests);
	printf("BENCH exporter-pprof-inprocess stacks=%u first_cpu_ms=%.1f cpu_ms "
	       "median=%.2f p90=%.2f read_ms median=%.2f bytes=%zu (goal 50 CPU)\n",
	       stacks, first, mbench_quantile(cpu, requests, 0.5),
	       mbench_quantile(cpu, requests, 0.9), mbench_median(read, requests),
	       bytes);
	mstat_symbols_cache_free(cache);
	free(cpu);
	free(read);
	return 0;
}

static int
profile_over_http(const char *exporter, unsigned stacks, unsigned requests)
{
	char path[64];
	pid_t pid;
	unsigned port;
	FILE *err;

	if (start_exporter(exporter, false, &pid, &port, &err) < 0)
		return -1;
	snprintf(path, sizeof(path), "/debug/pprof/heap?pid=%d", (int)getpid());
	double c0 = proc_cpu_ms(pid);
	long bytes = http_get(port, path);
	double first = proc_cpu_ms(pid) - c0;
	c0 = proc_cpu_ms(pid);
	uint64_t w0 = mbench_now_ns();
	for (unsigned i = 0; i < requests && bytes > 0; i++)
		bytes = http_get(port, path);
	double wall = (double)(mbench_now_ns() - w0) / 1e6;
	double cpu = proc_cpu_ms(pid) - c0;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	fclose(err);
	if (bytes <= 0)
		return -1;
	printf("BENCH exporter-pprof-http stacks=%u first_cpu_ms=%.0f "
	       "cpu_ms_per_request=%.1f wall_ms_per_request=%.1f bytes=%ld "
	       "(goal 50 CPU; CPU in clock ticks of 10 ms)\n", stacks, first,
	       cpu / requests, wall / requests, bytes);
	return 0;
}

static int
profile_bench(const char *exporter, unsigned stacks, unsigned requests)
{
	int rc = 0;

	/* 24 frames a stack, from 8192 return addresses: a call tree's
	 * paths, then frames drawn at random (gzip's worst case). */
	for (int random = 0; random < 2 && rc == 0; random++) {
		int seg = mbench_segment_profiled(stacks, 24, 8192, random,
						  "bench-pprof");
		if (seg < 0)
			return 1;
		printf("# stacks: %s\n", random ? "frames at random"
						 : "a call tree's paths");
		for (int round = 0; round < 2 && rc == 0; round++) {
			rc |= profile_in_process(seg, stacks, requests);
			rc |= profile_over_http(exporter, stacks, requests);
		}
		mbench_segment_profiled_remove(seg);
	}
	return rc ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "exporter", required_argument, NULL, 'e' },
		{ "segments", required_argument, NULL, 's' },
		{ "scrapes", required_argument, NULL, 'n' },
		{ "profile-stacks", required_argument, NULL, 'p' },
		{ "requests", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *exporter = NULL;
	unsigned n = 1000, scrapes = 200, stacks = 0, requests = 20;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'e')
			exporter = optarg;
		else if (c == 's')
			n = (unsigned)atoi(optarg);
		else if (c == 'n')
			scrapes = (unsigned)atoi(optarg);
		else if (c == 'p')
			stacks = (unsigned)atoi(optarg);
		else if (c == 'r')
			requests = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (exporter && stacks && requests)
		return profile_bench(exporter, stacks, requests);
	if (!exporter || n == 0 || scrapes == 0) {
		fprintf(stderr, "usage: mstat-bench-exporter --exporter PATH "
				"[--segments N] [--scrapes S]\n"
				"       mstat-bench-exporter --exporter PATH "
				"--profile-stacks N [--requests R]\n");
		return 2;
	}
	/* Our descriptors and the readers': two per segment. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int *fds = calloc(n, sizeof(*fds));
	if (!fds || mbench_segments_make(n, fds, "bench-exporter") < 0)
		return 1;
	/* Twice each, interleaved: the machine's drift shows as a spread. */
	for (int round = 0; round < 2 && rc == 0; round++) {
		rc |= in_process(n, scrapes, MSTAT_EXPO_OPENMETRICS, false);
		rc |= in_process(n, scrapes, MSTAT_EXPO_PROMETHEUS, false);
		rc |= in_process(n, scrapes, MSTAT_EXPO_OPENMETRICS, true);
		rc |= over_http(exporter, n, scrapes, false);
		rc |= over_http(exporter, n, scrapes, true);
	}
	mbench_segments_remove(n, fds);
	return rc ? 1 : 0;
}
