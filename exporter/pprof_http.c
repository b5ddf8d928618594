/* SPDX-License-Identifier: MIT */
/*
 * pprof_http.c - heap profiles over HTTP; see pprof_http.h.
 */
#include "exporter/pprof_http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm/clock.h"
#include "core/exposition.h"
#include "core/pprof.h"
#include "core/profiles.h"
#include "shm/reader.h"
#include "core/symbols.h"
#include "core/text.h"
#include "exporter/web.h"

#define PREFIX MSTAT_PPROF_PREFIX

struct mstat_pprof_http {
	struct mstat_pprof_http_options opt;
	struct mstat_symcache *symbols;
	/* Profiles being built: a place is taken before the handle is asked
	 * for, and given back once the answer is queued. */
	_Atomic unsigned building;
	pthread_mutex_t lock;
	pthread_cond_t stopped;   /* on CLOCK_MONOTONIC: delta waits */
	bool stopping;            /* under lock */
};

int
mstat_pprof_http_new(struct mstat_pprof_http **out,
		     const struct mstat_pprof_http_options *o)
{
	struct mstat_pprof_http *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	if (!p)
		return -ENOMEM;
	p->opt = *o;
	if (!(p->symbols = mstat_symbols_cache_new(o->symbol_files))) {
		free(p);
		return -ENOMEM;
	}
	atomic_init(&p->building, 0);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->stopped, &ca);
	pthread_condattr_destroy(&ca);
	*out = p;
	return 0;
}

void
mstat_pprof_http_stop(struct mstat_pprof_http *p)
{
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->stopped);
	pthread_mutex_unlock(&p->lock);
}

void
mstat_pprof_http_free(struct mstat_pprof_http *p)
{
	if (!p)
		return;
	mstat_symbols_cache_free(p->symbols);
	pthread_cond_destroy(&p->stopped);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* ---- what a request gives ---- */

static int
say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Decimal digits only, at most `max`: 0 and *v, or -1. */
static int
decimal(const char *s, unsigned long max, unsigned long *v)
{
	size_t n = strspn(s, "0123456789");

	if (n == 0 || s[n] != '\0')
		return -1;
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		*v = *v * 10 + (unsigned long)(s[i] - '0');
		if (*v > max)
			return -1;
	}
	return 0;
}

/* The kernel's largest pid (PID_MAX_LIMIT on 64-bit machines). */
#define PID_LIMIT 4194304ul

int
mstat_pprof_http_parse_pid(const char *s, pid_t *pid, char *err, size_t errlen)
{
	unsigned long v;

	if (decimal(s, PID_LIMIT, &v) < 0 || v == 0)
		return say(err, errlen, "a process id is a decimal number from "
			   "1 to %lu", PID_LIMIT);
	*pid = (pid_t)v;
	return 0;
}

int
mstat_pprof_http_parse_seconds(const char *s, unsigned *seconds, char *err,
			       size_t errlen)
{
	unsigned long v;

	if (decimal(s, MSTAT_PPROF_MAX_SECONDS, &v) < 0 || v == 0)
		return say(err, errlen, "the length of a delta profile is a "
			   "decimal number of seconds from 1 to %d",
			   MSTAT_PPROF_MAX_SECONDS);
	*seconds = (unsigned)v;
	return 0;
}

/* A host of a Host header or an address flag: a name or an IPv4
 * address, or an IPv6 one in brackets; then, optionally, :port. */
static bool
valid_host(const char *s)
{
	const char *port;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		char ip[INET6_ADDRSTRLEN];
		struct in6_addr a;
		size_t n = close ? (size_t)(close - s - 1) : 0;
		if (!close || n == 0 || n >= sizeof(ip))
			return false;
		memcpy(ip, s + 1, n);
		ip[n] = '\0';
		if (inet_pton(AF_INET6, ip, &a) != 1)
			return false;
		port = close + 1;
	} else {
		size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_");
		if (n == 0 || n > 253)
			return false;
		port = s + n;
	}
	unsigned long v;
	return *port == '\0' ||
	       (*port == ':' && decimal(port + 1, 65535, &v) == 0 && v > 0);
}

int
mstat_pprof_http_target_address(const char *external, const char *host,
				const struct sockaddr *local, char *out, size_t len,
				char *err, size_t errlen)
{
	char ip[INET6_ADDRSTRLEN];

	if (external) {
		snprintf(out, len, "%s", external);
		return 0;
	}
	if (host) {
		if (!valid_host(host))
			return say(err, errlen, "the Host header is not a host "
				   "with an optional :port");
		if ((size_t)snprintf(out, len, "%s", host) >= len)
			return say(err, errlen, "the Host header is too long");
		return 0;
	}
	if (local && local->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)local;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, ntohs(s4->sin_port));
		return 0;
	}
	if (local && local->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)local;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
		return 0;
	}
	return say(err, errlen, "no Host header, and the address the request "
		   "came to is not known: give --web.external-address");
}

/* ---- answers ---- */

/* The answer `body` (len bytes, malloc'ed: freed here) with status,
 * type and an extra header (name, value; name NULL: none). */
static enum MHD_Result
reply(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
      const char *type, char *body, size_t len, const char *hname,
      const char *hvalue)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, MHD_RESPMEM_MUST_FREE);

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (hname)
		MHD_add_response_header(r, hname, hvalue);
	return mstat_web_queue(w, c, status, r);
}

/* A refusal: the reason, one line of plain text. */
static enum MHD_Result
refuse(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
       const char *hname, const char *hvalue, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static enum MHD_Result
refuse(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
       const char *hname, const char *hvalue, const char *fmt, ...)
{
	char raw[1024], line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* It may quote what a request or a segment says. */
	size_t n = mstat_text_escape(line, sizeof(line) - 1, raw, MSTAT_TEXT_PLAIN);
	line[n++] = '\n';
	char *body = malloc(n);
	if (!body)
		return MHD_NO;
	memcpy(body, line, n);
	return reply(w, c, status, "text/plain; charset=utf-8", body, n, hname,
		     hvalue);
}

#define REFUSE(status, ...) refuse(w, c, status, NULL, NULL, __VA_ARGS__)

/* A query value quoted in a refusal: escaped there, cut here. */
static const char *
quoted(const char *v, char *buf, size_t len)
{
	size_t n = strlen(v);

	if (n < len) {
		memcpy(buf, v, n + 1);
		return buf;
	}
	memcpy(buf, v, len - 4);
	memcpy(buf + len - 4, "...", 4);
	return buf;
}

static const char *
arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- the routes ---- */

/*
 * Every name under /debug/pprof/, in one table: what serves it, and
 * what it is.  The dispatch, the index page's table, the 404 that lists
 * what is served and the exporter's refusal of a telemetry path under
 * /debug/pprof (web.c) are made from it.
 */
struct route {
	const char *name;  /* after /debug/pprof/ */
	enum MHD_Result (*serve)(struct mstat_pprof_http *p, struct mstat_web *w,
				 struct MHD_Connection *c,
				 const struct route *r);
	/* Served: what it is (HTML), for the index; NULL for the index
	 * itself.  Not served: why not, for its 404. */
	const char *what;
	bool served;
	bool per_process;  /* it takes ?pid=N: linked per process */
	bool delta;        /* the index links a 30 s delta of it too */
};

#define ROUTE_FN(fn)                                                          \
	static enum MHD_Result fn(struct mstat_pprof_http *p,                 \
				  struct mstat_web *w,                        \
				  struct MHD_Connection *c,                   \
				  const struct route *r)
ROUTE_FN(index_page);
ROUTE_FN(profile);
ROUTE_FN(targets);
ROUTE_FN(not_served);
ROUTE_FN(go_only);

static const struct route routes[] = {
	{ "", index_page, NULL, true, false, false },
	{ "allocs", profile, "the heap profile, shown by default as the bytes "
	  "allocated (alloc_space)", true, true, false },
	{ "heap", profile, "the heap profile, shown by default as the bytes "
	  "in use (inuse_space)", true, true, true },
	{ "targets", targets, "every process, as a target of Prometheus's HTTP "
	  "service discovery, with its labels and <code>__param_pid</code>",
	  true, false, false },
	{ "delta_heap", not_served, "delta_heap (godeltaprof) is not served: "
	  PREFIX "/allocs?pid=N counts alloc_* since the process started, and "
	  "the scraper takes the deltas itself (Grafana Alloy's "
	  "profile.memory, Parca's memory)", false, false, false },
	{ "profile", go_only, NULL, false, false, false },
	{ "goroutine", go_only, NULL, false, false, false },
	{ "block", go_only, NULL, false, false, false },
	{ "mutex", go_only, NULL, false, false, false },
	{ "threadcreate", go_only, NULL, false, false, false },
	{ "trace", go_only, NULL, false, false, false },
	{ "cmdline", go_only, NULL, false, false, false },
	{ "symbol", go_only, NULL, false, false, false },
};
static const size_t nroutes = sizeof(routes) / sizeof(routes[0]);

/* ---- a profile ---- */

/* Waits `seconds`, or less if the exporter stops: whether it waited. */
static bool
wait_for_delta(struct mstat_pprof_http *p, unsigned seconds)
{
	struct timespec until;
	bool waited;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&p->lock);
	while (!p->stopping &&
	       pthread_cond_timedwait(&p->stopped, &p->lock, &until) != ETIMEDOUT)
		;
	waited = !p->stopping;
	pthread_mutex_unlock(&p->lock);
	return waited;
}

/* Reads, names and encodes the profile of `pid` (a delta over `seconds`
 * if not 0), answering with it or with why not. */
static enum MHD_Result
build(struct mstat_pprof_http *p, struct mstat_web *w, struct MHD_Connection *c,
      const char *name, pid_t pid, unsigned seconds)
{
	struct mstat_core_profile *h;
	struct mstat_profile now, then;
	char why[512];
	int rc = mstat_scrape_profile(p->opt.scraper, pid, &h, why, sizeof(why));

	if (rc == -ENOENT || rc == -ESTALE) {
		/* Not one the core holds, or one that ended since the tick
		 * that found it: say why, as the process stands. */
		(void)mstat_reader_why_none(pid, why, sizeof(why));
		return REFUSE(MHD_HTTP_NOT_FOUND, "%s", why);
	}
	if (rc == -ESHUTDOWN)
		return REFUSE(MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
	if (rc < 0)
		return REFUSE(MHD_HTTP_INTERNAL_SERVER_ERROR, "pid %d: %s",
			      (int)pid, why);
	uint64_t t0 = mstat_clock_wall_ns(), t1 = t0;
	rc = mstat_core_profile_read(h, seconds ? &then : &now, why, sizeof(why));
	if (rc == 0 && seconds) {
		if (!wait_for_delta(p, seconds)) {
			mstat_reader_profile_release(&then);
			mstat_core_profile_close(h);
			return REFUSE(MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
		}
		t1 = mstat_clock_wall_ns();
		if ((rc = mstat_core_profile_read(h, &now, why, sizeof(why))) < 0)
			mstat_reader_profile_release(&then);
	}
	mstat_core_profile_close(h);
	if (rc < 0)
		return REFUSE(MHD_HTTP_INTERNAL_SERVER_ERROR,
			      "pid %d: its profile could not be read: %s",
			      (int)pid, why);

	/* Go's endpoints differ by the default type alone. */
	struct mstat_pprof_options o = {
		.default_sample_type = strcmp(name, "allocs") == 0 ? "alloc_space"
								    : NULL,
		.base = seconds ? &then : NULL,
		.time_ns = t0,
		.duration_ns = t1 - t0,
	};
	struct mstat_symbols *sym = mstat_symbols_new_cached(&now, p->symbols);
	unsigned char *gz = NULL;
	size_t len = 0;
	rc = sym ? mstat_pprof_encode(&now, sym, &o, &gz, &len, why, sizeof(why))
		 : -ENOMEM;
	mstat_symbols_free(sym);
	mstat_reader_profile_release(&now);
	if (seconds)
		mstat_reader_profile_release(&then);
	if (rc < 0)
		return REFUSE(MHD_HTTP_INTERNAL_SERVER_ERROR, "pid %d: %s",
			      (int)pid, sym ? why : "out of memory");
	char disposition[64];
	snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s%s\"",
		 name, seconds ? "-delta" : "");
	return reply(w, c, MHD_HTTP_OK, "application/octet-stream", (char *)gz,
		     len, "Content-Disposition", disposition);
}

static enum MHD_Result
profile(struct mstat_pprof_http *p, struct mstat_web *w,
	struct MHD_Connection *c, const struct route *r)
{
	const char *name = r->name;
	char why[256], q[40];
	const char *v = arg(c, "pid");
	unsigned seconds = 0;
	pid_t pid;

	if (!v)
		return REFUSE(MHD_HTTP_BAD_REQUEST, "which process: "
			      PREFIX "/%s?pid=N (" PREFIX "/ lists them, and "
			      PREFIX "/targets)", name);
	if (mstat_pprof_http_parse_pid(v, &pid, why, sizeof(why)) < 0)
		return REFUSE(MHD_HTTP_BAD_REQUEST, "pid=%s: %s",
			      quoted(v, q, sizeof(q)), why);
	if ((v = arg(c, "debug")) && strcmp(v, "0") != 0)
		return REFUSE(MHD_HTTP_BAD_REQUEST, "debug=%s: only the binary "
			      "profile is served (debug=0); go tool pprof -top "
			      "or -traces shows it as text",
			      quoted(v, q, sizeof(q)));
	if ((v = arg(c, "seconds")) &&
	    mstat_pprof_http_parse_seconds(v, &seconds, why, sizeof(why)) < 0)
		return REFUSE(MHD_HTTP_BAD_REQUEST, "seconds=%s: %s",
			      quoted(v, q, sizeof(q)), why);
	/* gc: ignored, as documented (nothing to collect). */

	/* Relaxed: a count, publishing nothing; every place taken is
	 * given back by the thread that took it. */
	if (atomic_fetch_add_explicit(&p->building, 1, memory_order_relaxed) >=
	    p->opt.max_requests) {
		atomic_fetch_sub_explicit(&p->building, 1, memory_order_relaxed);
		return refuse(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "Retry-After",
			      "1", "as many heap profiles as are built at once "
			      "(%u, --web.max-profile-requests) are being "
			      "built: try again", p->opt.max_requests);
	}
	enum MHD_Result ret = build(p, w, c, name, pid, seconds);
	atomic_fetch_sub_explicit(&p->building, 1, memory_order_relaxed);
	return ret;
}

/* ---- the index and the targets ---- */

/* `s` by text.h's plain rule, then as HTML text or attribute. */
static void
put_html(FILE *f, const char *s)
{
	char safe[256];

	mstat_text_escape(safe, sizeof(safe), s, MSTAT_TEXT_PLAIN);
	for (const char *c = safe; *c; c++) {
		switch (*c) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*c, f);
		}
	}
}

struct label_cell {
	FILE *f;
};

static void
label_cell(void *arg, const char *key, const char *value)
{
	struct label_cell *l = arg;

	if (strcmp(key, "pid") == 0)
		return; /* a column of its own */
	fputs(" ", l->f);
	put_html(l->f, key);
	fputs("=<b>", l->f);
	put_html(l->f, value);
	fputs("</b>", l->f);
}

/* A process's links: each route that takes a pid. */
static void
process_links(FILE *f, int pid)
{
	const char *sep = "";

	for (size_t i = 0; i < nroutes; i++) {
		const struct route *r = &routes[i];
		if (!r->served || !r->per_process)
			continue;
		fprintf(f, "%s<a href=\"%s?pid=%d\">%s</a>", sep, r->name, pid,
			r->name);
		if (r->delta)
			fprintf(f, " <a href=\"%s?pid=%d&amp;seconds=30\">%s, 30 s "
				"delta</a>", r->name, pid, r->name);
		sep = " ";
	}
}

static int
index_rows(void *arg, const struct mstat_model_row *const *rows, size_t n)
{
	FILE *f = arg;

	fprintf(f, "<h2>Processes: %zu</h2>\n", n);
	if (!n) {
		fputs("<p>No process of this user counts with libmstatshm.</p>\n", f);
		return 0;
	}
	fputs("<table>\n<tr><th>pid</th><th>labels</th><th>profiles</th></tr>\n", f);
	for (size_t i = 0; i < n; i++) {
		int pid = (int)rows[i]->pid;
		struct label_cell l = { f };
		fprintf(f, "<tr><td>%d</td><td>", pid);
		mstat_exposition_process_labels(rows[i], label_cell, &l);
		fputs("</td><td>", f);
		process_links(f, pid);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	return 0;
}

static enum MHD_Result
index_page(struct mstat_pprof_http *p, struct mstat_web *w,
	   struct MHD_Connection *c, const struct route *route)
{
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);

	if (!f)
		return REFUSE(MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
	      "<title>" PREFIX "/</title></head>\n<body>\n<h1>" PREFIX "/</h1>\n"
	      "<p>Heap profiles of the processes of this user that count with "
	      "libmstatshm, as Go's net/http/pprof serves them: gzipped "
	      "profile.proto with alloc_objects, alloc_space, inuse_objects "
	      "and inuse_space, estimated from each process's samples; "
	      "alloc_* since the process started.  Name the process with "
	      "<code>?pid=N</code>; <code>&amp;seconds=N</code> (1 to 300) "
	      "gives a delta over N seconds, <code>gc</code> is ignored, and "
	      "only <code>debug=0</code> is served.  "
	      "<code>go tool pprof -top http://HOST:PORT" PREFIX
	      "/heap?pid=N</code> reads one.</p>\n"
	      "<table>\n<tr><th>profile</th><th>what</th></tr>\n", f);
	(void)route;
	for (size_t i = 0; i < nroutes; i++) {
		const struct route *r = &routes[i];
		if (!r->served || !r->what)
			continue;
		if (r->per_process)
			fprintf(f, "<tr><td>%s</td>", r->name);
		else
			fprintf(f, "<tr><td><a href=\"%s\">%s</a></td>", r->name,
				r->name);
		fprintf(f, "<td>%s</td></tr>\n", r->what);
	}
	fputs("</table>\n", f);
	int rc = mstat_scrape_rows(p->opt.scraper, index_rows, f);
	fputs("<p>See mstat-exporter(1).</p>\n</body>\n</html>\n", f);
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(page);
		return REFUSE(rc == -ESHUTDOWN ? MHD_HTTP_SERVICE_UNAVAILABLE
					       : MHD_HTTP_INTERNAL_SERVER_ERROR,
			      rc == -ESHUTDOWN ? "shutting down" : "out of memory");
	}
	return reply(w, c, MHD_HTTP_OK, "text/html; charset=utf-8", page, len,
		     NULL, NULL);
}

struct targets {
	FILE *f;
	const char *address;
};

static void
json_label(FILE *f, const char *key, const char *value)
{
	fprintf(f, ",\"%s\":\"", key);
	mstat_text_put(f, value, MSTAT_TEXT_QUOTED);
	fputc('"', f);
}

static void
target_label(void *arg, const char *key, const char *value)
{
	json_label(arg, key, value);
}

static int
target_rows(void *arg, const struct mstat_model_row *const *rows, size_t n)
{
	struct targets *t = arg;

	fputc('[', t->f);
	for (size_t i = 0; i < n; i++) {
		fprintf(t->f, "%s{\"targets\":[\"", i ? ",\n" : "\n");
		mstat_text_put(t->f, t->address, MSTAT_TEXT_QUOTED);
		/* The parameter the scraper sends, then the process's
		 * labels, as its metrics have them, then Pyroscope's name
		 * of the service. */
		fprintf(t->f, "\"],\"labels\":{\"__param_pid\":\"%d\"",
			(int)rows[i]->pid);
		mstat_exposition_process_labels(rows[i], target_label, t->f);
		json_label(t->f, "service_name", rows[i]->name);
		fputs("}}", t->f);
	}
	fputs(n ? "\n]\n" : "]\n", t->f);
	return 0;
}

static enum MHD_Result
targets(struct mstat_pprof_http *p, struct mstat_web *w,
	struct MHD_Connection *c, const struct route *route)
{
	char address[300], why[200];
	struct sockaddr_storage ss;
	const struct sockaddr *local = NULL;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	socklen_t sl = sizeof(ss);

	(void)route;
	if (ci && getsockname(ci->connect_fd, (struct sockaddr *)&ss, &sl) == 0)
		local = (const struct sockaddr *)&ss;
	if (mstat_pprof_http_target_address(p->opt.external_address,
					    MHD_lookup_connection_value(
					       c, MHD_HEADER_KIND,
					       MHD_HTTP_HEADER_HOST),
				       local, address, sizeof(address), why,
				       sizeof(why)) < 0)
		return REFUSE(MHD_HTTP_BAD_REQUEST, "%s", why);
	char *body = NULL;
	size_t len = 0;
	struct targets t = { open_memstream(&body, &len), address };
	if (!t.f)
		return REFUSE(MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	int rc = mstat_scrape_rows(p->opt.scraper, target_rows, &t);
	if (fclose(t.f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(body);
		return REFUSE(rc == -ESHUTDOWN ? MHD_HTTP_SERVICE_UNAVAILABLE
					       : MHD_HTTP_INTERNAL_SERVER_ERROR,
			      rc == -ESHUTDOWN ? "shutting down" : "out of memory");
	}
	return reply(w, c, MHD_HTTP_OK, "application/json; charset=utf-8", body,
		     len, NULL, NULL);
}

/* ---- what is not served ---- */

static enum MHD_Result
not_served(struct mstat_pprof_http *p, struct mstat_web *w,
	   struct MHD_Connection *c, const struct route *r)
{
	(void)p;
	return REFUSE(MHD_HTTP_NOT_FOUND, "%s", r->what);
}

/* Go's profiles that a process counting with libmstatshm has no
 * counterpart of. */
static enum MHD_Result
go_only(struct mstat_pprof_http *p, struct mstat_web *w,
	struct MHD_Connection *c, const struct route *r)
{
	(void)p;
	return REFUSE(MHD_HTTP_NOT_FOUND, "Unknown profile: %s is one of Go's "
		      "runtime: only heap profiles are served here (heap, "
		      "allocs); disable the others in the scraper", r->name);
}


/* Unknown: 404, with what is served. */
static enum MHD_Result
unknown(struct mstat_web *w, struct MHD_Connection *c)
{
	char list[512] = "";

	for (size_t i = 0; i < nroutes; i++)
		if (routes[i].served)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s" PREFIX "/%s", list[0] ? ", " : "",
				 routes[i].name);
	return REFUSE(MHD_HTTP_NOT_FOUND, "Unknown profile: only heap profiles "
		      "are served here: %s", list);
}

enum MHD_Result
mstat_pprof_http_serve(struct mstat_pprof_http *p, struct mstat_web *w,
		       struct MHD_Connection *c, const char *url)
{
	const char *name = url + strlen(PREFIX);

	if (*name == '\0') {
		/* Go's mux: the index is the path with its slash. */
		char *body = strdup("<a href=\"" PREFIX "/\">Moved Permanently</a>.\n");
		if (!body)
			return MHD_NO;
		return reply(w, c, MHD_HTTP_MOVED_PERMANENTLY,
			     "text/html; charset=utf-8", body, strlen(body),
			     MHD_HTTP_HEADER_LOCATION, PREFIX "/");
	}
	name++; /* past the '/' */
	for (size_t i = 0; i < nroutes; i++)
		if (strcmp(name, routes[i].name) == 0)
			return routes[i].serve(p, w, c, &routes[i]);
	return unknown(w, c);
}
