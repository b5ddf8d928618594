/* SPDX-License-Identifier: MIT */
/*
 * pprof_http.h - mstat-exporter's heap profiles over HTTP, as Go's
 * net/http/pprof serves them, for the profile stores that scrape pprof
 * (Grafana Alloy's pyroscope.scrape, Parca, the OpenTelemetry
 * collector's pprof receiver) and for go tool pprof.  docs/profiles.md
 * is the user's side of it.
 *
 * What is served under /debug/pprof/ is one table, `routes` in
 * pprof_http.c: the index (/debug/pprof/), the heap profile of a process
 * (heap?pid=N: gzipped profile.proto, Go's four sample types, no default
 * type, so clients show inuse_space; allocs?pid=N: the same, default type
 * alloc_space), the targets of Prometheus's HTTP service discovery, and
 * Go's profiles that are not served, each with why.  The dispatch, the
 * index page and the 404 that lists what is served are made from it;
 * /debug/pprof redirects to /debug/pprof/.
 *
 * Query parameters of a profile: pid (required), seconds=N (a delta
 * over N seconds, 1 to 300, as Go's), gc (ignored: there is no garbage
 * collector to run), debug=0 (any other value is refused: the text
 * forms are Go's runtime's).
 *
 * Threads: a profile is built in the HTTP thread that asked for it,
 * from a handle the scraper's reader thread hands out between ticks
 * (scrape.h); naming frames goes through one cache of ELF files
 * (symbols.h) that every request shares.  At most `max_requests`
 * profiles are built at once; a request beyond them gets 503 with
 * Retry-After at once.  Nothing of this holds the core or its ticks: a
 * scrape of /metrics waits for no profile.
 */
#ifndef MSTAT_EXPORTER_PPROF_HTTP_H
#define MSTAT_EXPORTER_PPROF_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "exporter/scrape.h"

struct mstat_web;
struct mstat_pprof_http;

struct mstat_pprof_http_options {
	struct mstat_scraper *scraper;
	/* host:port the targets name; NULL: the address each request for
	 * them came to (its Host header). */
	const char *external_address;
	unsigned max_requests;     /* profiles built at once */
	size_t symbol_files;       /* ELF files the symbol cache keeps */
};

#define MSTAT_PPROF_PREFIX "/debug/pprof" /* every path under it is ours */
#define MSTAT_PPROF_MAX_SECONDS 300 /* the longest delta */

/* 0 or -ENOMEM. */
int mstat_pprof_http_new(struct mstat_pprof_http **out,
			 const struct mstat_pprof_http_options *o);
/* Ends the waits of delta profiles (they answer 503): before the web
 * server stops, which waits for every request. */
void mstat_pprof_http_stop(struct mstat_pprof_http *p);
/* Once the web server has stopped. */
void mstat_pprof_http_free(struct mstat_pprof_http *p);

/* Answers an authorised GET or HEAD of MSTAT_PPROF_PREFIX or a path
 * under it, through mstat_web_queue().  Called in the connection's
 * thread. */
enum MHD_Result mstat_pprof_http_serve(struct mstat_pprof_http *p,
				       struct mstat_web *w,
				       struct MHD_Connection *c,
				       const char *url);

/* ---- pieces, for the tests ---- */

/* A pid as a query gives it: decimal digits, 1 to 4194304 (the kernel's
 * largest).  0, or -1 with why in err. */
int mstat_pprof_http_parse_pid(const char *s, pid_t *pid, char *err, size_t errlen);

/* seconds=N: decimal, 1 to MSTAT_PPROF_MAX_SECONDS.  0, or -1 with why. */
int mstat_pprof_http_parse_seconds(const char *s, unsigned *seconds, char *err,
				   size_t errlen);

/*
 * The address the targets name, into out: `external` if given; else the
 * request's Host header as it is, if it is a host (a name, an IPv4
 * address or a bracketed IPv6 one) with an optional :port; else, without
 * a Host header, the address the connection came to (`local`, from
 * getsockname(); NULL: unknown).  0, or -1 with why in err (a Host
 * header that is not a host, or nothing to go by).
 */
int mstat_pprof_http_target_address(const char *external, const char *host,
				    const struct sockaddr *local, char *out,
				    size_t len, char *err, size_t errlen);

#endif /* MSTAT_EXPORTER_PPROF_HTTP_H */
