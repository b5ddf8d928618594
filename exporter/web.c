/* SPDX-License-Identifier: MIT */
/*
 * web.c - mstat-exporter's HTTP side; see web.h.
 *
 * One libmicrohttpd daemon per listening socket, each with a thread per
 * connection: a scrape waits for the reader's tick (scrape.h), and a
 * slow client or a bcrypt check must not hold up anyone else.  (A thread
 * pool would serve a connection's requests in the thread polling it, so
 * a waiting scrape would hold up every connection of its thread, health
 * checks among them.)
 *
 * A crowd: at most max_requests scrapes of the metrics wait at once,
 * as promhttp's in-flight limit has it (node_exporter's
 * --web.max-requests); one more is answered 503 at once, with
 * Retry-After, and its connection and thread are free again.  Connections
 * are accepted well beyond that (SPARE_CONNECTIONS more): a connection
 * libmicrohttpd refuses is reset, and one it stops accepting waits in the
 * kernel's queue, whose overflow the client retries a second or more
 * later; either would leave /-/healthy unanswered during a scrape storm,
 * and a liveness probe would restart the exporter.
 */
#include "exporter/web.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "exporter/pprof_http.h"
#include "exporter/tlsgate.h"

#define MAX_SOCKETS 32

/* A connection that sends nothing for this long is let go: it holds a
 * thread, or a place at a TLS port's gate. */
#define IDLE_TIMEOUT_S 60

/* Connections accepted beyond the scrapes that may wait: each answered
 * at once (a 503, a health check, a page), or a profile's, which have
 * their own limit (pprof_http.h).  A thread each while open. */
#define SPARE_CONNECTIONS 1024

/* The kernel's queue of connections not accepted yet (it caps it at
 * net.core.somaxconn, 4096 by default). */
#define LISTEN_BACKLOG 1024

struct mstat_web {
	struct mstat_web_options opt;
	struct MHD_Daemon *daemons[MAX_SOCKETS];
	struct mstat_tlsgate *gates[MAX_SOCKETS]; /* with TLS */
	char bound[MAX_SOCKETS][80];
	size_t n;
	_Atomic unsigned scraping;  /* scrapes of the metrics under way */
};

/* ---- content negotiation ---- */

static char *
trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

enum mstat_expo_format
mstat_web_negotiate(const char *accept)
{
	double om = 0, text = 0;
	char buf[1024], *save = NULL;

	if (!accept)
		return MSTAT_EXPO_PROMETHEUS;
	snprintf(buf, sizeof(buf), "%s", accept);
	for (char *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *psave = NULL, *first = strtok_r(item, ";", &psave);
		char *type = trim(first ? first : item);
		double q = 1;
		const char *version = NULL;
		for (char *p = strtok_r(NULL, ";", &psave); p;
		     p = strtok_r(NULL, ";", &psave)) {
			p = trim(p);
			if (strncasecmp(p, "q=", 2) == 0)
				q = strtod(p + 2, NULL);
			else if (strncasecmp(p, "version=", 8) == 0)
				version = p + 8;
		}
		if (!(q > 0))
			continue;
		if (strcasecmp(type, "application/openmetrics-text") == 0) {
			if ((!version || strcmp(version, "1.0.0") == 0) && q > om)
				om = q;
		} else if ((strcasecmp(type, "text/plain") == 0 &&
			    (!version || strcmp(version, "0.0.4") == 0)) ||
			   strcasecmp(type, "text/*") == 0 ||
			   strcasecmp(type, "*/*") == 0) {
			if (q > text)
				text = q;
		}
	}
	return om > 0 && om >= text ? MSTAT_EXPO_OPENMETRICS : MSTAT_EXPO_PROMETHEUS;
}

/* ---- what the operator gives ---- */

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

#define ADDRESS_FORMS "; the forms are host:port, [ipv6]:port and :port " \
	"(every interface), with a port from 1 to 65535"

/* An IPv6 address as it stands between brackets, with a zone if any
 * ("fe80::1%eth0"). */
static bool
ipv6_address(const char *s, size_t len)
{
	char buf[INET6_ADDRSTRLEN];
	struct in6_addr a;
	const char *zone = memchr(s, '%', len);
	size_t alen = zone ? (size_t)(zone - s) : len;

	if (alen >= sizeof(buf))
		return false;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET6, buf, &a) != 1)
		return false;
	if (!zone)
		return true;
	if (zone + 1 == s + len)
		return false;
	for (const char *z = zone + 1; z < s + len; z++)
		if (!isalnum((unsigned char)*z) && !strchr("-_.", *z))
			return false;
	return true;
}

int
mstat_web_parse_address(const char *addr, char *host, size_t hostlen,
			unsigned *port, char *err, size_t errlen)
{
	const char *h = addr, *colon;
	size_t hlen;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close)
			return fail(err, errlen, "no ] after [" ADDRESS_FORMS);
		h = addr + 1;
		hlen = (size_t)(close - h);
		if (!ipv6_address(h, hlen))
			return fail(err, errlen, "%.*s is not an IPv6 address"
				    ADDRESS_FORMS, (int)hlen, h);
		if (close[1] != ':')
			return fail(err, errlen, "no :port after ]" ADDRESS_FORMS);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return fail(err, errlen, "no :port" ADDRESS_FORMS);
		hlen = (size_t)(colon - addr);
		if (memchr(addr, ':', hlen))
			return fail(err, errlen, "an IPv6 address goes in "
				    "brackets, as in [::1]:10415" ADDRESS_FORMS);
		for (size_t i = 0; i < hlen; i++)
			if (!isalnum((unsigned char)h[i]) && !strchr("-_.", h[i]))
				return fail(err, errlen, "%.*s is not a host name "
					    "or IPv4 address" ADDRESS_FORMS,
					    (int)hlen, h);
	}
	if (hlen >= hostlen || hlen > 253)
		return fail(err, errlen, "the host is too long" ADDRESS_FORMS);
	const char *p = colon + 1;
	unsigned long v = 0;
	size_t n = strspn(p, "0123456789");
	if (!*p)
		return fail(err, errlen, "no port after :" ADDRESS_FORMS);
	if (n == 0 || p[n])
		return fail(err, errlen, "the port %s is not a decimal number"
			    ADDRESS_FORMS, p);
	for (size_t i = 0; i < n && v <= 65535; i++)
		v = v * 10 + (unsigned long)(p[i] - '0');
	if (v < 1 || v > 65535)
		return fail(err, errlen, "the port %s is out of range"
			    ADDRESS_FORMS, p);
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (unsigned)v;
	return 0;
}

/* ---- the routes ---- */

struct route;
#define ROUTE_FN(fn)                                                          \
	static enum MHD_Result fn(struct mstat_web *w,                        \
				  struct MHD_Connection *c, const char *url)
ROUTE_FN(landing);
ROUTE_FN(healthy);
ROUTE_FN(profiles);

/*
 * Every path the exporter serves but the metrics' (the operator places
 * those, --web.telemetry-path), in one table: the dispatch, the landing
 * page's links and the refusal of a telemetry path that would hide one
 * are made from it.
 */
static const struct route {
	const char *path;
	bool prefix;        /* and every path under it */
	enum MHD_Result (*serve)(struct mstat_web *w, struct MHD_Connection *c,
				 const char *url);
	const char *what;   /* for a refusal, and the landing page's link */
	const char *href;   /* the landing page links it there; NULL: not */
} routes[] = {
	{ "/", false, landing, "the landing page", NULL },
	{ MSTAT_WEB_HEALTH_PATH, false, healthy, "the health endpoint",
	  MSTAT_WEB_HEALTH_PATH },
	{ MSTAT_PPROF_PREFIX, true, profiles,
	  "the heap profiles (" MSTAT_PPROF_PREFIX "/)", MSTAT_PPROF_PREFIX "/" },
};

/* The route that serves `url`, or NULL. */
static const struct route *
route_of(const char *url)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *r = &routes[i];
		size_t n = strlen(r->path);
		if (strncmp(url, r->path, n) == 0 &&
		    (url[n] == '\0' || (r->prefix && url[n] == '/')))
			return r;
	}
	return NULL;
}

int
mstat_web_check_path(const char *path, char *err, size_t errlen)
{
	const struct route *r = route_of(path);

	if (path[0] != '/')
		return fail(err, errlen, "it must start with /, as /metrics does");
	if (r)
		return fail(err, errlen, "%s is %s: the metrics need a path of "
			    "their own, such as /metrics", path, r->what);
	if (strlen(path) > 256)
		return fail(err, errlen, "longer than 256 bytes");
	for (const char *c = path; *c; c++)
		if (*c <= ' ' || *c > '~' || strchr("?#%", *c))
			return fail(err, errlen, "a path is / and printable "
				    "ASCII but for space, ?, # and %%");
	return 0;
}

/* Binds and listens on every address `addr` names; their descriptors into
 * fds, their names into names.  Returns how many, or -1. */
static int
listen_on(const char *addr, int *fds, char (*names)[80], size_t room,
	  char *err, size_t errlen)
{
	char host[256], port[8];
	unsigned portnum;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	int n = 0, rc;

	char why[400];
	if (mstat_web_parse_address(addr, host, sizeof(host), &portnum, why,
				    sizeof(why)) < 0)
		return fail(err, errlen, "listen address %s: %s", addr, why);
	snprintf(port, sizeof(port), "%u", portnum);
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0)
		return fail(err, errlen, "listen address %s: %s", addr,
			    gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		if ((size_t)n == room) {
			freeaddrinfo(res);
			return fail(err, errlen, "too many listening sockets");
		}
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
				ai->ai_protocol);
		int one = 1;
		if (fd < 0)
			continue; /* an address family this host lacks */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* ":port" gives 0.0.0.0 and ::, each bound on its own. */
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
		    listen(fd, LISTEN_BACKLOG) < 0) {
			int e = errno;
			close(fd);
			for (int i = 0; i < n; i++)
				close(fds[i]);
			freeaddrinfo(res);
			return fail(err, errlen, "listen address %s: %s", addr,
				    strerror(e));
		}
		char ip[INET6_ADDRSTRLEN] = "?";
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &sl);
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
			snprintf(names[n], 80, "[%s]:%u", ip, ntohs(s6->sin6_port));
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
			snprintf(names[n], 80, "%s:%u", ip, ntohs(s4->sin_port));
		}
		fds[n++] = fd;
	}
	freeaddrinfo(res);
	if (n == 0)
		return fail(err, errlen, "listen address %s: no address to bind",
			    addr);
	return n;
}

/* ---- requests ---- */

enum MHD_Result
mstat_web_queue(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
		struct MHD_Response *r)
{
	enum MHD_Result ret;

	for (size_t i = 0; i < w->opt.config->nheaders; i++)
		MHD_add_response_header(r, w->opt.config->headers[i].name,
					w->opt.config->headers[i].value);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
send_page(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
	  const char *type, char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	return mstat_web_queue(w, c, status, r);
}

static enum MHD_Result
send_text(struct mstat_web *w, struct MHD_Connection *c, unsigned status,
	  const char *text)
{
	return send_page(w, c, status, "text/plain; charset=utf-8", (char *)text,
			 strlen(text), MHD_RESPMEM_PERSISTENT);
}

/* Whether the request carries a user of basic_auth_users; if not, the
 * 401 is queued. */
static bool
authorised(struct mstat_web *w, struct MHD_Connection *c, enum MHD_Result *ret)
{
	char *pass = NULL;
	char *user;
	bool ok;

	if (w->opt.config->nusers == 0)
		return true;
	user = MHD_basic_auth_get_username_password(c, &pass);
	ok = user && pass && mstat_webconfig_auth(w->opt.config, user, pass);
	if (user)
		MHD_free(user);
	if (pass)
		MHD_free(pass);
	if (ok)
		return true;
	static const char body[] = "Unauthorized\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(
		sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!r) {
		*ret = MHD_NO;
		return false;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	*ret = MHD_queue_basic_auth_fail_response(c, "mstat-exporter", r);
	MHD_destroy_response(r);
	return false;
}

/* The landing page: the metrics, and what the routes link; the
 * telemetry path is the operator's, escaped all the same. */
static enum MHD_Result
landing(struct mstat_web *w, struct MHD_Connection *c, const char *url)
{
	char path[512] = "";
	size_t k = 0;

	for (const char *s = w->opt.telemetry_path; *s && k + 7 < sizeof(path); s++) {
		const char *rep = *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
				: *s == '&' ? "&amp;" : *s == '"' ? "&quot;" : NULL;
		if (rep) {
			memcpy(path + k, rep, strlen(rep));
			k += strlen(rep);
		} else {
			path[k++] = *s;
		}
	}
	path[k] = '\0';
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);
	(void)url;
	if (!f)
		return send_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "out of memory\n");
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta "
		"charset=\"utf-8\"><title>mstat-exporter</title></head>\n"
		"<body>\n<h1>mstat-exporter</h1>\n"
		"<p>Heap statistics of every process of this user that counts "
		"with libmstatshm, read when scraped.</p>\n"
		"<ul>\n<li><a href=\"%s\">the metrics</a></li>\n", path);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].href)
			fprintf(f, "<li><a href=\"%s\">%s</a></li>\n",
				routes[i].href, routes[i].what);
	fprintf(f, "</ul>\n<p>Version %s. See mstat-exporter(1).</p>\n"
		"</body>\n</html>\n", MSTAT_VERSION);
	if (fclose(f) != 0) {
		free(page);
		return send_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "out of memory\n");
	}
	return send_page(w, c, MHD_HTTP_OK, "text/html; charset=utf-8", page,
			 len, MHD_RESPMEM_MUST_FREE);
}

/* One scrape too many: 503 at once, saying why, as promhttp says it. */
static enum MHD_Result
too_many(struct mstat_web *w, struct MHD_Connection *c)
{
	char body[128];
	int len = snprintf(body, sizeof(body), "Limit of concurrent requests "
			   "reached (%u), try again later.\n",
			   w->opt.max_requests);
	struct MHD_Response *r = MHD_create_response_from_buffer(
		(size_t)len, body, MHD_RESPMEM_MUST_COPY);

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return mstat_web_queue(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
}

static enum MHD_Result
metrics(struct mstat_web *w, struct MHD_Connection *c)
{
	enum mstat_expo_format fmt = mstat_web_negotiate(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_ACCEPT));
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	/* Relaxed: a count, publishing nothing; every place taken is given
	 * back by the thread that took it. */
	if (atomic_fetch_add_explicit(&w->scraping, 1, memory_order_relaxed) >=
	    w->opt.max_requests) {
		atomic_fetch_sub_explicit(&w->scraping, 1, memory_order_relaxed);
		return too_many(w, c);
	}
	f = open_memstream(&buf, &len);
	rc = f ? mstat_scrape_write(w->opt.scraper, f, fmt) : -ENOMEM;
	atomic_fetch_sub_explicit(&w->scraping, 1, memory_order_relaxed);
	if (!f)
		return send_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "out of memory\n");
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc < 0) {
		free(buf);
		return send_text(w, c, rc == -ESHUTDOWN ? MHD_HTTP_SERVICE_UNAVAILABLE
						       : MHD_HTTP_INTERNAL_SERVER_ERROR,
				 rc == -ESHUTDOWN ? "shutting down\n"
						  : "the scrape failed: out of memory\n");
	}
	return send_page(w, c, MHD_HTTP_OK, mstat_exposition_content_type(fmt), buf,
			 len, MHD_RESPMEM_MUST_FREE);
}

/* Whether the reader keeps up, from what it last said of itself: no
 * segment is read and no tick asked for. */
static enum MHD_Result
healthy(struct mstat_web *w, struct MHD_Connection *c, const char *url)
{
	char why[240];

	(void)url;
	if (mstat_scrape_health(w->opt.scraper, why, sizeof(why) - 1) == 0)
		return send_text(w, c, MHD_HTTP_OK, "OK\n");
	strcat(why, "\n");
	return send_page(w, c, MHD_HTTP_SERVICE_UNAVAILABLE,
			 "text/plain; charset=utf-8", why, strlen(why),
			 MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_size,
       void **state)
{
	struct mstat_web *w = cls;
	enum MHD_Result ret = MHD_NO;
	static int first;

	(void)version;
	(void)upload_data;
	if (*state == NULL) {
		/* Called once with the headers, then with the body: answer
		 * after the headers, ignoring any body. */
		*state = &first;
		return MHD_YES;
	}
	*upload_size = 0;
	if (!authorised(w, c, &ret))
		return ret;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return send_text(w, c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "Method Not Allowed\n");
	/* `url` is the path alone: only the profiles look at a query. */
	if (strcmp(url, w->opt.telemetry_path) == 0)
		return metrics(w, c);
	const struct route *r = route_of(url);
	if (r)
		return r->serve(w, c, url);
	return send_text(w, c, MHD_HTTP_NOT_FOUND, "Not Found\n");
}

static enum MHD_Result
profiles(struct mstat_web *w, struct MHD_Connection *c, const char *url)
{
	if (!w->opt.pprof)
		return send_text(w, c, MHD_HTTP_NOT_FOUND, "Not Found\n");
	return mstat_pprof_http_serve(w->opt.pprof, w, c, url);
}

static void
log_mhd(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	fprintf(stderr, "mstat-exporter: http: %s\n", line);
}

/* The daemon serving one socket: listening on it, or, with TLS, given
 * its connections by the socket's gate (tlsgate.h), which answers those
 * that are plain HTTP. */
static struct MHD_Daemon *
start_daemon(struct mstat_web *w, int listen_fd)
{
	const struct mstat_webconfig *cfg = w->opt.config;
	struct MHD_OptionItem plain[] = {
		{ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, cfg->cert_pem },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, cfg->key_pem },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)cfg->priorities },
		{ MHD_OPTION_END, 0, NULL },
	};
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG;

	if (cfg->cert_pem)
		flags |= MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	return MHD_start_daemon(flags, 0, NULL, NULL, handle, w,
		MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
		MHD_OPTION_CONNECTION_LIMIT, mstat_web_connections(&w->opt),
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
		MHD_OPTION_ARRAY, cfg->cert_pem ? tls : plain,
		MHD_OPTION_END);
}

int
mstat_web_start(struct mstat_web **out, const struct mstat_web_options *o,
		char *err, size_t errlen)
{
	struct mstat_web *w = calloc(1, sizeof(*w));
	int fds[MAX_SOCKETS];
	size_t nfds = 0, i;

	if (!w)
		return fail(err, errlen, "out of memory");
	w->opt = *o;
	for (i = 0; i < o->nlisten; i++) {
		int n = listen_on(o->listen[i], fds + nfds, w->bound + nfds,
				  MAX_SOCKETS - nfds, err, errlen);
		if (n < 0) {
			i = 0;
			goto fail;
		}
		nfds += (size_t)n;
	}
	/* fds[i] is open until its daemon listens on it, or its gate has
	 * it (whatever the gate's start says). */
	for (i = 0; i < nfds; i++, w->n++) {
		bool tls = o->config->cert_pem != NULL;
		w->daemons[i] = start_daemon(w, fds[i]);
		if (!w->daemons[i]) {
			fail(err, errlen, "cannot serve on %s (libmicrohttpd said "
			     "why above)", w->bound[i]);
			goto fail;
		}
		if (tls && mstat_tlsgate_start(&w->gates[i], fds[i], w->daemons[i],
					       mstat_web_connections(o),
					       IDLE_TIMEOUT_S, err, errlen) < 0) {
			w->n++;
			i++;
			goto fail;
		}
	}
	*out = w;
	return 0;
fail:
	for (; i < nfds; i++)
		close(fds[i]);
	mstat_web_stop(w);
	return -1;
}

unsigned
mstat_web_connections(const struct mstat_web_options *o)
{
	return o->max_requests + SPARE_CONNECTIONS;
}

size_t
mstat_web_nbound(const struct mstat_web *w)
{
	return w->n;
}

const char *
mstat_web_bound(const struct mstat_web *w, size_t i)
{
	return w->bound[i];
}

void
mstat_web_stop(struct mstat_web *w)
{
	/* The gates first: they hand the daemons connections.  Stopping a
	 * daemon waits for its connections' threads and closes its socket. */
	for (size_t i = 0; i < w->n; i++)
		if (w->gates[i])
			mstat_tlsgate_stop(w->gates[i]);
	for (size_t i = 0; i < w->n; i++)
		MHD_stop_daemon(w->daemons[i]);
	free(w);
}
