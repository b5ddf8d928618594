/* SPDX-License-Identifier: MIT */
/*
 * main.c - mstat-exporter: heap statistics of every process of this user
 * that counts with libmstatshm, served to Prometheus.  Options and the
 * process's life; see mstat-exporter(1).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "killed.h"
#include "pprof_http.h"
#include "procs.h"
#include "reader.h"
#include "scrape.h"
#include "text.h"
#include "web.h"
#include "webconfig.h"

/* Not on the Prometheus project's list of exporter ports (the range
 * 9100-9999 is full; docs/mstat-exporter.1, PORT, says why this one). */
#define DEFAULT_LISTEN "127.0.0.1:10415"
#define MAX_LISTEN 16
/* ELF files the symbol cache of the profiles keeps (symbols.h). */
#define SYMBOL_FILES 256

struct options {
	const char *listen[MAX_LISTEN];
	size_t nlisten;
	const char *telemetry_path;
	const char *config_file;
	bool classes;
	bool memory;
	struct mstat_namespaces namespaces;
	unsigned wait_budget_us;
	unsigned max_requests;
	unsigned max_profile_requests;
	const char *external_address;
	struct mstat_grace grace;
	const char *postmortem_dir;
	uint64_t postmortem_bytes;
};

static void
usage(FILE *f)
{
	fputs("usage: mstat-exporter [options]\n"
	      "Serves the heap statistics of every process of this user that\n"
	      "counts with libmstatshm to Prometheus, read when scraped.\n\n"
	      "  --web.listen-address=ADDR   host:port, [ipv6]:port or :port (every\n"
	      "                              interface), port 1 to 65535;\n"
	      "                              repeatable (default " DEFAULT_LISTEN ")\n"
	      "  --web.telemetry-path=PATH   where the metrics are (default /metrics)\n"
	      "  --web.config.file=FILE      TLS and basic auth: the Prometheus\n"
	      "                              exporter web configuration file\n"
	      "  --web.max-requests=N        connections served at once (default 40)\n"
	      "  --web.max-profile-requests=N  heap profiles built at once; more\n"
	      "                              get 503 (default 4)\n"
	      "  --web.external-address=HOST:PORT  the address the profile targets\n"
	      "                              name (default: the Host header of the\n"
	      "                              request for them)\n"
	      "  --[no-]collector.classes    per-size-class series (default off)\n"
	      "  --[no-]collector.memory     resident memory by part, read from\n"
	      "                              /proc at each scrape (default off)\n"
	      "  --reader.namespaces=WHICH   all: the /dev/shm of every mount\n"
	      "                              namespace this user may read (the\n"
	      "                              default, or MSTAT_NAMESPACES); own:\n"
	      "                              its own only; PID[,PID..]: those of\n"
	      "                              these processes, and its own\n"
	      "  --reader.wait-budget=TIME   how long a scrape waits, in all, for\n"
	      "                              stalled and busy processes: 10ms,\n"
	      "                              0.5s, ... up to 5s (default 10ms)\n"
	      "  --killed-grace=SECONDS      keep a killed process's segment this\n"
	      "                              long for later readers (default: its\n"
	      "                              MSTAT_KILLED_GRACE, or 300; 0: remove)\n"
	      "  --postmortem-dir=DIR        write each killed process's heap profile\n"
	      "                              to DIR/NAME-PID-TIME.pb.gz\n"
	      "  --postmortem-bytes=N        at most N bytes of them in DIR, the\n"
	      "                              oldest go first (default 67108864)\n"
	      "  --version                   the version\n"
	      "  -h, --help                  this text\n"
	      "/-/healthy answers 200 OK, or 503 and why if reading is stuck.\n"
	      "/debug/pprof/ serves each process's heap profile (go tool pprof,\n"
	      "Pyroscope, Parca) and lists the processes as scrape targets.\n", f);
}

#define say(...) mstat_text_say("mstat-exporter", __VA_ARGS__)

static void
note(void *arg, const char *line)
{
	(void)arg;
	say("%s", line);
}

/* "10ms", "0.5s", "250us", "0": microseconds, or -1. */
static long long
parse_duration(const char *s)
{
	static const struct {
		const char *unit;
		double us;
	} units[] = { { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 } };
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0))
		return -1;
	if (!*end)
		return v == 0 ? 0 : -1; /* a number needs a unit */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0)
			return (long long)(v * units[i].us + 0.5);
	return -1;
}

enum {
	OPT_LISTEN = 256, OPT_PATH, OPT_CONFIG, OPT_MAX_REQ, OPT_CLASSES,
	OPT_NO_CLASSES, OPT_BUDGET, OPT_VERSION, OPT_MAX_PROFILES, OPT_EXTERNAL,
	OPT_NAMESPACES, OPT_GRACE, OPT_PM_DIR, OPT_PM_BYTES, OPT_MEMORY,
	OPT_NO_MEMORY,
};

static int
parse_options(struct options *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "web.listen-address", required_argument, NULL, OPT_LISTEN },
		{ "web.telemetry-path", required_argument, NULL, OPT_PATH },
		{ "web.config.file", required_argument, NULL, OPT_CONFIG },
		{ "web.max-requests", required_argument, NULL, OPT_MAX_REQ },
		{ "web.max-profile-requests", required_argument, NULL,
		  OPT_MAX_PROFILES },
		{ "web.external-address", required_argument, NULL, OPT_EXTERNAL },
		{ "collector.classes", no_argument, NULL, OPT_CLASSES },
		{ "no-collector.classes", no_argument, NULL, OPT_NO_CLASSES },
		{ "collector.memory", no_argument, NULL, OPT_MEMORY },
		{ "no-collector.memory", no_argument, NULL, OPT_NO_MEMORY },
		{ "reader.wait-budget", required_argument, NULL, OPT_BUDGET },
		{ "reader.namespaces", required_argument, NULL, OPT_NAMESPACES },
		{ "killed-grace", required_argument, NULL, OPT_GRACE },
		{ "postmortem-dir", required_argument, NULL, OPT_PM_DIR },
		{ "postmortem-bytes", required_argument, NULL, OPT_PM_BYTES },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char host[256], why[400];
	unsigned port;
	long long v;
	char *end;
	int c;

	*o = (struct options){ .telemetry_path = "/metrics",
			       .wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
			       .max_requests = 40, .max_profile_requests = 4,
			       .postmortem_bytes = MSTAT_POSTMORTEM_BYTES_DEFAULT };
	if (mstat_killed_env(&o->grace, why, sizeof(why)) < 0) {
		say("%s", why);
		return -1;
	}
	const char *ns = getenv("MSTAT_NAMESPACES");
	if (ns && *ns && mstat_namespaces_parse(ns, &o->namespaces) < 0) {
		say("MSTAT_NAMESPACES=%s: all, own, or process ids separated by "
		    "commas", ns);
		return -1;
	}
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			if (o->nlisten == MAX_LISTEN) {
				say("at most %d --web.listen-address", MAX_LISTEN);
				return -1;
			}
			if (mstat_web_parse_address(optarg, host, sizeof(host),
						    &port, why, sizeof(why)) < 0) {
				say("--web.listen-address \"%s\": %s", optarg, why);
				return -1;
			}
			o->listen[o->nlisten++] = optarg;
			break;
		case OPT_PATH:
			if (mstat_web_check_path(optarg, why, sizeof(why)) < 0) {
				say("--web.telemetry-path \"%s\": %s", optarg, why);
				return -1;
			}
			o->telemetry_path = optarg;
			break;
		case OPT_CONFIG: o->config_file = optarg; break;
		case OPT_MAX_REQ:
			v = strtoll(optarg, &end, 10);
			if (*end || v < 1 || v > 10000) {
				say("--web.max-requests %s: 1 to 10000", optarg);
				return -1;
			}
			o->max_requests = (unsigned)v;
			break;
		case OPT_MAX_PROFILES:
			v = strtoll(optarg, &end, 10);
			if (*end || v < 1 || v > 1000) {
				say("--web.max-profile-requests %s: 1 to 1000", optarg);
				return -1;
			}
			o->max_profile_requests = (unsigned)v;
			break;
		case OPT_EXTERNAL:
			if (mstat_web_parse_address(optarg, host, sizeof(host),
						    &port, why, sizeof(why)) < 0) {
				say("--web.external-address \"%s\": %s", optarg, why);
				return -1;
			}
			if (!host[0]) {
				say("--web.external-address \"%s\": a host is "
				    "needed: the address scrapers reach this "
				    "exporter at", optarg);
				return -1;
			}
			o->external_address = optarg;
			break;
		case OPT_CLASSES: o->classes = true; break;
		case OPT_NO_CLASSES: o->classes = false; break;
		case OPT_MEMORY: o->memory = true; break;
		case OPT_NO_MEMORY: o->memory = false; break;
		case OPT_BUDGET:
			v = parse_duration(optarg);
			if (v < 0 || v > 5000000) {
				say("--reader.wait-budget %s: a time such as 10ms, "
				    "up to 5s", optarg);
				return -1;
			}
			o->wait_budget_us = (unsigned)v;
			break;
		case OPT_GRACE:
			if (mstat_grace_parse(optarg, MSTAT_KILLED_GRACE_MAX,
					      &o->grace.seconds) < 0) {
				say("--killed-grace %s: seconds, 0 to 86400", optarg);
				return -1;
			}
			break;
		case OPT_PM_DIR:
			if (mstat_killed_dir_check(optarg, why, sizeof(why)) < 0) {
				say("--postmortem-dir: %s", why);
				return -1;
			}
			o->postmortem_dir = optarg;
			break;
		case OPT_PM_BYTES:
			if (mstat_grace_parse(optarg, UINT64_MAX,
					      &o->postmortem_bytes) < 0) {
				say("--postmortem-bytes %s: a number of bytes", optarg);
				return -1;
			}
			break;
		case OPT_NAMESPACES:
			if (mstat_namespaces_parse(optarg, &o->namespaces) < 0) {
				say("--reader.namespaces %s: all, own, or process "
				    "ids separated by commas (at most 64)", optarg);
				return -1;
			}
			break;
		case OPT_VERSION:
			printf("mstat-exporter %s\n", MSTAT_VERSION);
			exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		say("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (o->nlisten == 0)
		o->listen[o->nlisten++] = DEFAULT_LISTEN;
	return 0;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct mstat_webconfig config;
	struct mstat_scraper *scraper;
	struct mstat_pprof_http *pprof;
	struct mstat_web *web;
	char err[512];
	sigset_t stop;
	int rc, sig;

	if (parse_options(&o, argc, argv) < 0)
		return 2;
	mstat_webconfig_init(&config);
	if (o.config_file &&
	    mstat_webconfig_load(&config, o.config_file, err, sizeof(err)) < 0) {
		say("web config %s", err);
		return 1;
	}
	/* Signals are taken by sigwait() below: every thread started from
	 * here on inherits the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct mstat_scrape_options so = {
		.wait_budget_us = o.wait_budget_us,
		.classes = o.classes,
		.memory = o.memory,
		.namespaces = o.namespaces,
		.note = note,
		.grace = o.grace,
		.postmortem_dir = o.postmortem_dir,
		.postmortem_bytes = o.postmortem_bytes,
	};
	if ((rc = mstat_scraper_start(&scraper, &so)) < 0) {
		say("cannot start: %s", strerror(-rc));
		mstat_webconfig_free(&config);
		return 1;
	}
	struct mstat_pprof_http_options po = {
		.scraper = scraper,
		.external_address = o.external_address,
		.max_requests = o.max_profile_requests,
		.symbol_files = SYMBOL_FILES,
	};
	if ((rc = mstat_pprof_http_new(&pprof, &po)) < 0) {
		say("cannot start: %s", strerror(-rc));
		mstat_scraper_stop(scraper);
		mstat_webconfig_free(&config);
		return 1;
	}
	struct mstat_web_options wo = {
		.listen = o.listen,
		.nlisten = o.nlisten,
		.telemetry_path = o.telemetry_path,
		.max_requests = o.max_requests,
		.config = &config,
		.scraper = scraper,
		.pprof = pprof,
	};
	if (mstat_web_start(&web, &wo, err, sizeof(err)) < 0) {
		say("%s", err);
		mstat_pprof_http_free(pprof);
		mstat_scraper_stop(scraper);
		mstat_webconfig_free(&config);
		return 1;
	}
	for (size_t i = 0; i < mstat_web_nbound(web); i++)
		say("listening on %s (%s%s), metrics at %s, heap profiles at "
		    "/debug/pprof/", mstat_web_bound(web, i),
		    config.cert_pem ? "https" : "http",
		    config.nusers ? ", basic auth" : "", o.telemetry_path);
	do {
		if (sigwait(&stop, &sig) != 0)
			sig = SIGTERM;
		if (sig == SIGHUP)
			say("SIGHUP: the web configuration is read at start; "
			    "restart to change it");
	} while (sig == SIGHUP);
	say("stopping on signal %d", sig);
	/* Delta profiles stop waiting, then every request ends. */
	mstat_pprof_http_stop(pprof);
	mstat_web_stop(web);
	mstat_pprof_http_free(pprof);
	mstat_scraper_stop(scraper);
	mstat_webconfig_free(&config);
	return 0;
}
