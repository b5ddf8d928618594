/* SPDX-License-Identifier: MIT */
/*
 * web.h - mstat-exporter's HTTP side (libmicrohttpd): listening, the
 * landing page, /metrics with content negotiation, TLS and basic auth
 * from the web configuration.
 *
 * Routes: GET and HEAD of the telemetry path give the metrics
 * (OpenMetrics 1.0.0 if the Accept header prefers it, else text 0.0.4,
 * whatever the query string says; 503 with Retry-After while
 * max_requests scrapes are under way); every other path served is one
 * table, `routes` in web.c: the landing page (/), the health endpoint
 * (/-/healthy: 200 "OK", or 503 and why when the reader is stuck,
 * mstat_scrape_health(); it reads nothing) and the heap profiles
 * (/debug/pprof and under it, pprof_http.h).  A telemetry path that one
 * of them serves is refused.  Other paths get 404, other methods 405.
 * With basic_auth_users, every route asks for a user first (401).
 */
#ifndef MSTAT_EXPORTER_WEB_H
#define MSTAT_EXPORTER_WEB_H

#include <stddef.h>

#include <microhttpd.h>

#include "core/exposition.h"
#include "exporter/scrape.h"
#include "exporter/webconfig.h"

struct mstat_web;
struct mstat_pprof_http;

/* The health endpoint's path, Prometheus's own (mstat-exporter(1)). */
#define MSTAT_WEB_HEALTH_PATH "/-/healthy"

struct mstat_web_options {
	const char *const *listen;  /* as mstat_web_parse_address reads them */
	size_t nlisten;
	const char *telemetry_path;
	unsigned max_requests;      /* scrapes of the metrics at once; one
				     * more gets 503 */
	struct mstat_webconfig *config;
	struct mstat_scraper *scraper;
	struct mstat_pprof_http *pprof; /* NULL: no profiles */
};

/* Binds every address and starts serving.  0, or -1 with the reason in
 * err. */
int mstat_web_start(struct mstat_web **out, const struct mstat_web_options *o,
		    char *err, size_t errlen);
/* Connections each listening socket accepts at once: max_requests, and
 * SPARE_CONNECTIONS (1024) more, answered at once, for what comes
 * beyond them (web.c). */
unsigned mstat_web_connections(const struct mstat_web_options *o);

/* The addresses bound, as "host:port" lines, for the log. */
const char *mstat_web_bound(const struct mstat_web *w, size_t i);
size_t mstat_web_nbound(const struct mstat_web *w);
void mstat_web_stop(struct mstat_web *w);

/* Queues response `r` (destroying it) with status, adding the headers
 * of the web configuration: every answer goes through here. */
enum MHD_Result mstat_web_queue(struct mstat_web *w, struct MHD_Connection *c,
				unsigned status, struct MHD_Response *r);

/*
 * The format an Accept header asks for: OpenMetrics 1.0.0 when
 * application/openmetrics-text (version 1.0.0 or none) has a quality above
 * 0 and at least that of the best text/plain (version 0.0.4 or none),
 * text/ or * / * alternative; text 0.0.4 otherwise, and without a header.
 */
enum mstat_expo_format mstat_web_negotiate(const char *accept);

/*
 * A listen address: "host:port", "[ipv6]:port" or ":port" (every
 * interface), the port in decimal from 1 to 65535; a host is a name or an
 * IPv4 address, an IPv6 address is in brackets.  Fills host (without
 * brackets; "" for every interface) and port.  0, or -1 with why in err,
 * ending with the forms allowed.
 */
int mstat_web_parse_address(const char *addr, char *host, size_t hostlen,
			    unsigned *port, char *err, size_t errlen);

/* A telemetry path: "/" and at least one more character, printable ASCII
 * but for space, '?', '#' and '%', at most 256 bytes, and no path a route
 * serves (the landing page, the health endpoint, /debug/pprof and under
 * it).  0, or -1 with why in err. */
int mstat_web_check_path(const char *path, char *err, size_t errlen);

#endif /* MSTAT_EXPORTER_WEB_H */
