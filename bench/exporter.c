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
 */
#include <arpa/inet.h>
#include <errno.h>
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

#include "common.h"
#include "reader.h"
#include "scrape.h"
#include "segments.h"

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

	if (!cpu || !wall || mstat_scraper_start(&s, &o) < 0)
		return -1;
	/* The first scrape attaches every segment: not what a scrape costs
	 * afterwards, when Prometheus scrapes every 15 s. */
	for (unsigned i = 0; i <= scrapes; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		uint64_t c0 = mbench_process_cpu_ns(), w0 = mbench_now_ns();
		int rc = mstat_scraper_scrape(s, f, fmt);
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
	mstat_scraper_stop(s);
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

/* One GET as Prometheus sends it; the body's length, or -1. */
static long
http_get(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static const char req[] =
		"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		"Accept: application/openmetrics-text;version=1.0.0,"
		"application/openmetrics-text;version=0.0.1;q=0.75,"
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
		"Connection: close\r\n\r\n";
	static char buf[1 << 16];
	long total = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
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
	long bytes = http_get(port); /* attaches every segment */
	double c0 = proc_cpu_ms(pid);
	uint64_t w0 = mbench_now_ns();
	for (unsigned i = 0; i < scrapes && bytes > 0; i++)
		bytes = http_get(port);
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

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "exporter", required_argument, NULL, 'e' },
		{ "segments", required_argument, NULL, 's' },
		{ "scrapes", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *exporter = NULL;
	unsigned n = 1000, scrapes = 200;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'e')
			exporter = optarg;
		else if (c == 's')
			n = (unsigned)atoi(optarg);
		else if (c == 'n')
			scrapes = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (!exporter || n == 0 || scrapes == 0) {
		fprintf(stderr, "usage: mstat-bench-exporter --exporter PATH "
				"[--segments N] [--scrapes S]\n");
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
