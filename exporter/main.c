/* SPDX-License-Identifier: MIT */
/*
 * main.c - mstat-exporter: heap statistics of every process of this user
 * that counts with libmstatshm, served to Prometheus.  Options and the
 * process's life; see mstat-exporter(1).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/killed.h"
#include "exporter/pprof_http.h"
#include "core/procs.h"
#include "shm/reader.h"
#include "exporter/scrape.h"
#include "core/text.h"
#include "exporter/web.h"
#include "exporter/webconfig.h"

/* Not on the Prometheus project's list of exporter ports (the range
 * 9100-9999 is full; docs/mstat-exporter.1, PORT, says why this one). */
#define DEFAULT_LISTEN "127.0.0.1:10415"
#define MAX_LISTEN 16
/* ELF files the symbol cache of the profiles keeps (symbols.h). */
#define SYMBOL_FILES 256

struct listen_list {
	const char *v[MAX_LISTEN];
	size_t n;
};

struct options {
	struct listen_list listen;
	const char *telemetry_path;
	const char *config_file;
	bool classes;
	bool memory;
	struct mstat_namespaces namespaces;
	uint64_t wait_budget_us;
	uint64_t max_requests;
	uint64_t max_profile_requests;
	const char *external_address;
	struct mstat_grace grace;
	const char *postmortem_dir;
	uint64_t postmortem_bytes;
};

#define say(...) mstat_text_say("mstat-exporter", __VA_ARGS__)

static void
note(void *arg, const char *line)
{
	(void)arg;
	say("%s", line);
}

/* --reader.wait-budget: "10ms", "0.5s", "250us", "0", up to 5 s, in
 * microseconds. */
static int
parse_duration(const char *s, void *dst, char *why, size_t len)
{
	static const struct {
		const char *unit;
		double us;
	} units[] = { { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 } };
	char *end;
	double v = strtod(s, &end);

	(void)why;
	(void)len;
	if (end == s || !(v >= 0))
		return -1;
	if (!*end) {
		if (v != 0)
			return -1; /* a number needs a unit */
		*(uint64_t *)dst = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0 && v * units[i].us <= 5e6) {
			*(uint64_t *)dst = (uint64_t)(v * units[i].us + 0.5);
			return 0;
		}
	return -1;
}

/* --web.listen-address, repeatable. */
static int
parse_listen(const char *v, void *dst, char *why, size_t len)
{
	struct listen_list *l = dst;
	char host[256];
	unsigned port;

	if (l->n == MAX_LISTEN) {
		snprintf(why, len, "at most %d addresses", MAX_LISTEN);
		return -1;
	}
	if (mstat_web_parse_address(v, host, sizeof(host), &port, why, len) < 0)
		return -1;
	l->v[l->n++] = v;
	return 0;
}

/* --web.external-address: an address with a host. */
static int
parse_external(const char *v, void *dst, char *why, size_t len)
{
	char host[256];
	unsigned port;

	if (mstat_web_parse_address(v, host, sizeof(host), &port, why, len) < 0)
		return -1;
	if (!host[0]) {
		snprintf(why, len, "a host is needed: the address scrapers "
			 "reach this exporter at");
		return -1;
	}
	*(const char **)dst = v;
	return 0;
}

static int
parse_path(const char *v, void *dst, char *why, size_t len)
{
	if (mstat_web_check_path(v, why, len) < 0)
		return -1;
	*(const char **)dst = v;
	return 0;
}

#define O struct options
static const struct mstat_cli_option options[] = {
	{ .name = "web.listen-address", .arg = "ADDR",
	  MSTAT_CLI_PARSE(O, listen, parse_listen), .want = "an address",
	  .dflt_text = DEFAULT_LISTEN,
	  .help = "host:port, [ipv6]:port or :port (every interface), port 1 "
		  "to 65535; repeatable" },
	{ .name = "web.telemetry-path", .arg = "PATH",
	  MSTAT_CLI_PARSE(O, telemetry_path, parse_path), .want = "a path",
	  .dflt = "/metrics", .help = "where the metrics are" },
	{ .name = "web.config.file", .arg = "FILE",
	  MSTAT_CLI_TEXT(O, config_file, 0), .want = "a file name",
	  .help = "TLS and basic auth: the Prometheus exporter web "
		  "configuration file" },
	{ .name = "web.max-requests", .arg = "N",
	  MSTAT_CLI_NUMBER(O, max_requests, 1, 10000), .dflt = "40",
	  .want = "a number of scrapes",
	  .help = "scrapes of the metrics at once; more get 503" },
	{ .name = "web.max-profile-requests", .arg = "N",
	  MSTAT_CLI_NUMBER(O, max_profile_requests, 1, 1000), .dflt = "4",
	  .want = "a number of profiles",
	  .help = "heap profiles built at once; more get 503" },
	{ .name = "web.external-address", .arg = "HOST:PORT",
	  MSTAT_CLI_PARSE(O, external_address, parse_external),
	  .want = "host:port",
	  .dflt_text = "the Host header of the request for them",
	  .help = "the address the profile targets name" },
	{ .name = "collector.classes", MSTAT_CLI_FLAG(O, classes),
	  .negatable = true, .dflt_text = "off",
	  .help = "per-size-class series" },
	{ .name = "collector.memory", MSTAT_CLI_FLAG(O, memory),
	  .negatable = true, .dflt_text = "off",
	  .help = "resident memory by part, read from /proc and the "
		  "allocators at each scrape" },
	{ .name = "reader.namespaces", .arg = "WHICH",
	  MSTAT_CLI_PARSE(O, namespaces, mstat_procs_namespaces_option),
	  .want = MSTAT_NAMESPACES_WANT, .dflt_text = "all, or MSTAT_NAMESPACES",
	  .help = MSTAT_NAMESPACES_HELP },
	{ .name = "reader.wait-budget", .arg = "TIME",
	  MSTAT_CLI_PARSE(O, wait_budget_us, parse_duration),
	  .want = "a time such as 10ms, 0.5s or 250us, up to 5s",
	  .dflt = "10ms", /* MSTAT_WAIT_BUDGET_DEFAULT_US, as mstat-top's */
	  .help = "how long a scrape waits, in all, for stalled and busy "
		  "processes" },
	MSTAT_KILLED_OPTIONS(O, grace, postmortem_dir, postmortem_bytes),
	{ .name = "version", .kind = MSTAT_CLI_KIND_VERSION,
	  .help = "the version" },
	{ .name = "help", .letter = 'h', .kind = MSTAT_CLI_KIND_HELP,
	  .help = "this text" },
};
#undef O

static const struct mstat_cli cli = {
	.program = "mstat-exporter",
	.version = MSTAT_VERSION,
	.synopsis = "mstat-exporter [options]",
	.about = "Serves the heap statistics of every process of this user "
		 "that\ncounts with libmstatshm to Prometheus, read when "
		 "scraped.",
	.epilogue = "/-/healthy answers 200 OK, or 503 and why if reading is "
		    "stuck.\n/debug/pprof/ serves each process's heap profile "
		    "(go tool pprof,\nPyroscope, Parca) and lists the "
		    "processes as scrape targets.\n",
	.options = options,
	.n = sizeof(options) / sizeof(options[0]),
	.column = 31,
};

/* The options: 0 to go on, 1 to exit 0 (--help, --version), -1 to exit
 * 2 (said why). */
static int
parse_options(struct options *o, int argc, char **argv)
{
	char why[400];
	int next;

	*o = (struct options){ 0 };
	if (mstat_killed_env(&o->grace, why, sizeof(why)) < 0 ||
	    mstat_procs_namespaces_env(&o->namespaces, why, sizeof(why)) < 0) {
		say("%s", why);
		return -1;
	}
	enum mstat_cli_result r = mstat_cli_parse(&cli, o, argc, argv, &next);
	if (r != MSTAT_CLI_OK)
		return (int)r;
	if (o->listen.n == 0)
		o->listen.v[o->listen.n++] = DEFAULT_LISTEN;
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

	if ((rc = parse_options(&o, argc, argv)) != 0)
		return rc < 0 ? 2 : 0;
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
		.wait_budget_us = (unsigned)o.wait_budget_us,
		.classes = o.classes,
		.memory = o.memory,
		.namespaces = o.namespaces,
		.note = note,
		.grace = o.grace,
		.postmortem_dir = o.postmortem_dir,
		.postmortem_bytes = o.postmortem_bytes,
	};
	if ((rc = mstat_scrape_start(&scraper, &so)) < 0) {
		say("cannot start: %s", strerror(-rc));
		mstat_webconfig_free(&config);
		return 1;
	}
	struct mstat_pprof_http_options po = {
		.scraper = scraper,
		.external_address = o.external_address,
		.max_requests = (unsigned)o.max_profile_requests,
		.symbol_files = SYMBOL_FILES,
	};
	if ((rc = mstat_pprof_http_new(&pprof, &po)) < 0) {
		say("cannot start: %s", strerror(-rc));
		mstat_scrape_stop(scraper);
		mstat_webconfig_free(&config);
		return 1;
	}
	struct mstat_web_options wo = {
		.listen = o.listen.v,
		.nlisten = o.listen.n,
		.telemetry_path = o.telemetry_path,
		.max_requests = (unsigned)o.max_requests,
		.config = &config,
		.scraper = scraper,
		.pprof = pprof,
	};
	if (mstat_web_start(&web, &wo, err, sizeof(err)) < 0) {
		say("%s", err);
		mstat_pprof_http_free(pprof);
		mstat_scrape_stop(scraper);
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
	mstat_scrape_stop(scraper);
	mstat_webconfig_free(&config);
	return 0;
}
