/* SPDX-License-Identifier: MIT */
/*
 * test_web.c - mstat-exporter's pieces that need no server: content
 * negotiation, listen addresses and the telemetry path, what a TLS
 * port makes of a connection's first bytes, the web configuration file
 * and basic auth against bcrypt hashes; when the health endpoint says
 * the reader is stuck; what the profiles take from a request (pid,
 * seconds, the address their targets name).
 */
#include <crypt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "exporter/pprof_http.h"
#include "exporter/tlsgate.h"
#include "exporter/web.h"
#include "exporter/webconfig.h"

static void
test_negotiate(void **state)
{
	(void)state;
	/* What Prometheus 2.42 sends. */
	assert_int_equal(mstat_web_negotiate(
		"application/openmetrics-text;version=1.0.0,"
		"application/openmetrics-text;version=0.0.1;q=0.75,"
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
		MSTAT_EXPO_OPENMETRICS);
	assert_int_equal(mstat_web_negotiate(NULL), MSTAT_EXPO_PROMETHEUS);
	assert_int_equal(mstat_web_negotiate("*/*"), MSTAT_EXPO_PROMETHEUS);
	assert_int_equal(mstat_web_negotiate(""), MSTAT_EXPO_PROMETHEUS);
	assert_int_equal(mstat_web_negotiate("application/openmetrics-text"),
			 MSTAT_EXPO_OPENMETRICS);
	assert_int_equal(mstat_web_negotiate(" Application/OpenMetrics-Text ; "
					     "version=1.0.0 ; q=0.9"),
			 MSTAT_EXPO_OPENMETRICS);
	/* Only a version this does not write. */
	assert_int_equal(mstat_web_negotiate(
		"application/openmetrics-text;version=0.0.1"),
		MSTAT_EXPO_PROMETHEUS);
	/* Refused, or preferred less than the text format. */
	assert_int_equal(mstat_web_negotiate("application/openmetrics-text;q=0"),
			 MSTAT_EXPO_PROMETHEUS);
	assert_int_equal(mstat_web_negotiate(
		"text/plain;version=0.0.4;q=0.5,"
		"application/openmetrics-text;version=1.0.0;q=0.4"),
		MSTAT_EXPO_PROMETHEUS);
	assert_int_equal(mstat_web_negotiate(
		"text/plain;q=0.5,application/openmetrics-text;q=0.5"),
		MSTAT_EXPO_OPENMETRICS);
	/* Only a text version this does not write: OpenMetrics, if asked. */
	assert_int_equal(mstat_web_negotiate(
		"text/plain;version=1.0.0,application/openmetrics-text;q=0.1"),
		MSTAT_EXPO_OPENMETRICS);
}

/* `addr` parses to host and port. */
static void
address_ok(const char *addr, const char *host, unsigned port)
{
	char h[256], err[512];
	unsigned p = 0;

	if (mstat_web_parse_address(addr, h, sizeof(h), &p, err, sizeof(err)) < 0)
		fail_msg("%s refused: %s", addr, err);
	assert_string_equal(h, host);
	assert_int_equal(p, port);
}

/* `addr` is refused, saying `why` and the forms allowed. */
static void
address_refused(const char *addr, const char *why)
{
	char h[256], err[512];
	unsigned p = 0;

	if (mstat_web_parse_address(addr, h, sizeof(h), &p, err, sizeof(err)) == 0)
		fail_msg("%s accepted: host %s, port %u", addr, h, p);
	if (!strstr(err, why) || !strstr(err, "the forms are host:port, "
		    "[ipv6]:port and :port (every interface), with a port from "
		    "1 to 65535"))
		fail_msg("%s: %s, not %s", addr, err, why);
}

static void
test_addresses(void **state)
{
	(void)state;

	address_ok("127.0.0.1:10415", "127.0.0.1", 10415);
	address_ok(":10415", "", 10415);
	address_ok("[::1]:9", "::1", 9);
	address_ok("[::]:1", "::", 1);
	address_ok("[fe80::1%eth0]:80", "fe80::1%eth0", 80);
	address_ok("localhost:65535", "localhost", 65535);
	address_ok("metrics-1.example.org:010415", "metrics-1.example.org", 10415);
	/* Every port outside 1-65535, and what is no decimal number. */
	address_refused(":99999", "the port 99999 is out of range");
	address_refused("127.0.0.1:65536", "the port 65536 is out of range");
	address_refused(":0", "the port 0 is out of range");
	address_refused(":00000", "the port 00000 is out of range");
	address_refused(":4294977711", "the port 4294977711 is out of range");
	address_refused(":99999999999999999999999", "out of range");
	address_refused(":-1", "the port -1 is not a decimal number");
	address_refused(":+80", "the port +80 is not a decimal number");
	address_refused(": 80", "the port  80 is not a decimal number");
	address_refused(":80 ", "the port 80  is not a decimal number");
	address_refused(":0x50", "the port 0x50 is not a decimal number");
	address_refused("localhost:http", "the port http is not a decimal number");
	address_refused("host:", "no port after :");
	address_refused("10415", "no :port");
	address_refused("", "no :port");
	/* Hosts. */
	address_refused("::1:9", "an IPv6 address goes in brackets");
	address_refused("[::1]9", "no :port after ]");
	address_refused("[::1]", "no :port after ]");
	address_refused("[::1:9", "no ] after [");
	address_refused("[127.0.0.1]:9", "127.0.0.1 is not an IPv6 address");
	address_refused("[]:9", " is not an IPv6 address");
	address_refused("[fe80::1%]:9", "fe80::1% is not an IPv6 address");
	address_refused("a b:9", "a b is not a host name or IPv4 address");
	address_refused("a/b:9", "a/b is not a host name or IPv4 address");
	char longhost[300];
	memset(longhost, 'a', 280);
	snprintf(longhost + 280, sizeof(longhost) - 280, ":80");
	address_refused(longhost, "the host is too long");
}

/* `path` is refused, saying `why`. */
static void
path_refused(const char *path, const char *why)
{
	char err[512];

	if (mstat_web_check_path(path, err, sizeof(err)) == 0)
		fail_msg("%s accepted", path);
	if (!strstr(err, why))
		fail_msg("%s: %s, not %s", path, err, why);
}

static void
test_paths(void **state)
{
	char err[512], longpath[300];
	(void)state;

	assert_int_equal(mstat_web_check_path("/metrics", err, sizeof(err)), 0);
	assert_int_equal(mstat_web_check_path("/a/b-c_d.e~", err, sizeof(err)), 0);
	path_refused("nometrics", "it must start with /, as /metrics does");
	path_refused("", "it must start with /");
	path_refused("/", "/ is the landing page");
	path_refused("/-/healthy", "/-/healthy is the health endpoint: the "
		     "metrics need a path of their own");
	assert_int_equal(mstat_web_check_path("/-/healthy2", err, sizeof(err)), 0);
	/* Every path served already: the metrics would hide it. */
	path_refused("/debug/pprof", "/debug/pprof is the heap profiles "
		     "(/debug/pprof/): the metrics need a path of their own");
	path_refused("/debug/pprof/", "/debug/pprof/ is the heap profiles");
	path_refused("/debug/pprof/heap", "/debug/pprof/heap is the heap "
		     "profiles");
	path_refused("/debug/pprof/allocs", "is the heap profiles");
	path_refused("/debug/pprof/targets", "is the heap profiles");
	path_refused("/debug/pprof/x/y", "is the heap profiles");
	assert_int_equal(mstat_web_check_path("/debug/pprofx", err, sizeof(err)), 0);
	assert_int_equal(mstat_web_check_path("/debug", err, sizeof(err)), 0);
	path_refused("/metrics?x=1", "printable ASCII but for space, ?, # and %");
	path_refused("/a b", "printable ASCII but for space");
	path_refused("/a#b", "printable ASCII but for space");
	path_refused("/a%20b", "printable ASCII but for space");
	path_refused("/a\tb", "printable ASCII but for space");
	path_refused("/m\xc3\xa9trics", "printable ASCII but for space");
	longpath[0] = '/';
	memset(longpath + 1, 'm', 256);
	longpath[257] = '\0';
	path_refused(longpath, "longer than 256 bytes");
	longpath[256] = '\0';
	assert_int_equal(mstat_web_check_path(longpath, err, sizeof(err)), 0);
}

/* Stuck once scrapes have waited longer than the budget and
 * MSTAT_SCRAPER_STUCK_S together, not a nanosecond sooner; whatever the
 * time, never while none waits. */
static void
test_health_rule(void **state)
{
	const uint64_t s = 1000000000u, since = 5000 * s;
	char why[240] = "";
	(void)state;

	assert_int_equal(MSTAT_SCRAPER_STUCK_S, 10);
	assert_int_equal(mstat_scrape_health_rule(0, 1, 10000, why, sizeof(why)), 0);
	assert_int_equal(mstat_scrape_health_rule(0, 99999 * s, 10000, why,
						  sizeof(why)), 0);
	assert_int_equal(mstat_scrape_health_rule(since, since, 10000, why,
						  sizeof(why)), 0);
	/* A clock read before the wait began, in another thread. */
	assert_int_equal(mstat_scrape_health_rule(since, since - 1, 10000, why,
						  sizeof(why)), 0);
	assert_int_equal(mstat_scrape_health_rule(since, since + 10 * s + 10000000u,
						  10000, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(mstat_scrape_health_rule(since, since + 10 * s + 10000001u,
						  10000, why, sizeof(why)), -1);
	assert_string_equal(why, "the reader is stuck: scrapes have waited 10.0 s "
			    "for it, more than 10 s beyond its wait budget of 0.01 s");
	/* The budget counts: 5 s of it, and 12.5 s are not too long. */
	assert_int_equal(mstat_scrape_health_rule(since, since + 12 * s + s / 2,
						  5000000, why, sizeof(why)), 0);
	assert_int_equal(mstat_scrape_health_rule(since, since + 3600 * s,
						  5000000, why, sizeof(why)), -1);
	assert_string_equal(why, "the reader is stuck: scrapes have waited 3600.0 s "
			    "for it, more than 10 s beyond its wait budget of 5 s");
}

/* What the gate of a TLS port makes of a connection's first bytes. */
static enum mstat_tlsgate_verdict
first(const char *s)
{
	return mstat_tlsgate_classify((const unsigned char *)s, strlen(s));
}

static void
test_tlsgate_classify(void **state)
{
	static const unsigned char hello[] = { 0x16, 0x03, 0x01, 0x02, 0x00 };
	static const unsigned char sslv2[] = { 0x80, 0x2e, 0x01 };
	(void)state;

	/* Go's prefixes, and every request that begins with one. */
	const char *http[] = { "GET /", "HEAD ", "POST ", "PUT /", "OPTIO",
			       "GET /metrics HTTP/1.1\r\n", "OPTIONS * HTTP/1.1" };
	for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++)
		assert_int_equal(first(http[i]), MSTAT_TLSGATE_HTTP);
	/* Each proper prefix of them waits. */
	const char *more[] = { "G", "GE", "GET", "GET ", "H", "HEA", "P", "PO",
			       "PU", "PUT ", "O", "OPTI" };
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		assert_int_equal(first(more[i]), MSTAT_TLSGATE_MORE);
	/* Begun so, then not: neither a request Go knows nor TLS. */
	const char *neither[] = { "GEX", "GET x", "HEAD/", "PATCH /", "PUT x",
				  "OPTIX" };
	for (size_t i = 0; i < sizeof(neither) / sizeof(neither[0]); i++)
		assert_int_equal(first(neither[i]), MSTAT_TLSGATE_NEITHER);
	/* TLS handshakes (and SSL 2's), and what begins no request: to TLS,
	 * unread, at the first byte. */
	assert_int_equal(mstat_tlsgate_classify(hello, 1), MSTAT_TLSGATE_TLS);
	assert_int_equal(mstat_tlsgate_classify(hello, sizeof(hello)),
			 MSTAT_TLSGATE_TLS);
	assert_int_equal(mstat_tlsgate_classify(sslv2, 1), MSTAT_TLSGATE_TLS);
	assert_int_equal(first("DELETE / HTTP/1.1"), MSTAT_TLSGATE_TLS);
	assert_int_equal(first("get /"), MSTAT_TLSGATE_TLS);
	assert_int_equal(first("XYZ"), MSTAT_TLSGATE_TLS);
	/* The reply is Go's, byte for byte. */
	assert_string_equal(mstat_tlsgate_reply,
			    "HTTP/1.0 400 Bad Request\r\n\r\n"
			    "Client sent an HTTP request to an HTTPS server.\n");
}

static char dir[] = "/tmp/mstat-webconfig-XXXXXX";

static const char *
write_file(const char *name, const char *fmt, ...)
{
	static char path[256];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	return path;
}

/* A bcrypt hash of `password`, cost 4 (the cheapest: tests). */
static const char *
bcrypt(const char *password)
{
	static char hash[128];
	struct crypt_data cd;

	memset(&cd, 0, sizeof(cd));
	const char *salt = crypt_gensalt("$2y$", 4, NULL, 0);
	assert_non_null(salt);
	snprintf(hash, sizeof(hash), "%s", crypt_r(password, salt, &cd));
	assert_memory_equal(hash, "$2y$04$", 7);
	return hash;
}

/* Loading `text` fails with an error containing `why`. */
static void
refused(const char *text, const char *why)
{
	struct mstat_webconfig c;
	char err[512];
	const char *path = write_file("web.yml", "%s", text);

	assert_int_equal(mstat_webconfig_load(&c, path, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("error %s, not %s", err, why);
	mstat_webconfig_free(&c);
}

static void
test_config_refused(void **state)
{
	(void)state;
	refused("tls_server_config:\n  cert_file: a.crt\n  nonsense: 1\n",
		"web.yml:3: unknown key nonsense in tls_server_config");
	refused("basic_auth: {}\n", "web.yml:1: unknown key basic_auth");
	refused("basic_auth_users:\n  alice: secret\n",
		"web.yml:2: user alice: the password must be a bcrypt hash");
	refused("basic_auth_users:\n  alice: $2y$10$short\n",
		"user alice: the password must be a bcrypt hash");
	refused("tls_server_config:\n  cert_file: a.crt\n",
		"needs both cert_file and key_file");
	refused("tls_server_config:\n  cert_file: missing.crt\n"
		"  key_file: missing.key\n", "missing.crt: No such file");
	refused("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n",
		"does not verify client certificates");
	refused("tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		"cipher_suites: not supported");
	refused("tls_server_config:\n  min_version: TLS14\n",
		"min_version must be TLS10, TLS11, TLS12 or TLS13");
	refused("http_server_config:\n  headers:\n    Server: x\n",
		"header Server may not be set");
	refused("http_server_config:\n  http2: maybe\n",
		"http2 must be true or false");
	refused("- a\n- b\n", "the file must be a mapping");
	refused("basic_auth_users: [\n", "web.yml:");
	/* A certificate that is not one. */
	write_file("bad.crt", "not a certificate\n");
	write_file("bad.key", "not a key\n");
	refused("tls_server_config:\n  cert_file: bad.crt\n  key_file: bad.key\n",
		"cert_file bad.crt and key_file bad.key: ");
}

static void
test_auth(void **state)
{
	struct mstat_webconfig c;
	char err[512];
	(void)state;

	char alice[128];
	snprintf(alice, sizeof(alice), "%s", bcrypt("wonder land"));
	const char *path = write_file("web.yml",
		"# comments, an empty section and quoted hashes are fine\n"
		"tls_server_config:\n"
		"http_server_config:\n"
		"  http2: false\n"
		"  headers:\n"
		"    X-Frame-Options: deny\n"
		"basic_auth_users:\n"
		"  alice: %s\n"
		"  bob: '%s'\n", alice, bcrypt("builder"));
	assert_int_equal(mstat_webconfig_load(&c, path, err, sizeof(err)), 0);
	assert_null(c.cert_pem);
	assert_int_equal(c.nusers, 2);
	assert_int_equal(c.nheaders, 1);
	assert_string_equal(c.headers[0].name, "X-Frame-Options");
	assert_string_equal(c.headers[0].value, "deny");
	assert_true(mstat_webconfig_auth(&c, "alice", "wonder land"));
	/* Again: from the cache, the same answer. */
	assert_true(mstat_webconfig_auth(&c, "alice", "wonder land"));
	assert_false(mstat_webconfig_auth(&c, "alice", "wonder lan"));
	assert_false(mstat_webconfig_auth(&c, "alice", ""));
	assert_false(mstat_webconfig_auth(&c, "alice", "builder"));
	assert_true(mstat_webconfig_auth(&c, "bob", "builder"));
	assert_false(mstat_webconfig_auth(&c, "carol", "builder"));
	assert_false(mstat_webconfig_auth(&c, "", "wonder land"));
	/* The cache remembers the password that passed, not "passed". */
	assert_true(mstat_webconfig_auth(&c, "alice", "wonder land"));
	assert_false(mstat_webconfig_auth(&c, "alice", "wonder land!"));
	mstat_webconfig_free(&c);

	/* An empty file asks for nothing. */
	path = write_file("empty.yml", "");
	assert_int_equal(mstat_webconfig_load(&c, path, err, sizeof(err)), 0);
	assert_int_equal(c.nusers, 0);
	assert_null(c.cert_pem);
	mstat_webconfig_free(&c);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	const char *names[] = { "web.yml", "empty.yml", "bad.crt", "bad.key" };
	char path[256];
	(void)state;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

static void
test_pprof_query(void **state)
{
	char why[200];
	pid_t pid;
	unsigned sec;
	static const char *const bad_pids[] = {
		"", "0", "-1", "+1", " 1", "1 ", "1e3", "0x10", "4194305",
		"99999999999999999999", "12a",
	};
	static const char *const bad_seconds[] = { "", "0", "301", "-5", "1.5",
						   "x", "99999999999" };

	(void)state;
	assert_int_equal(mstat_pprof_http_parse_pid("1", &pid, why, sizeof(why)), 0);
	assert_int_equal(pid, 1);
	assert_int_equal(mstat_pprof_http_parse_pid("4194304", &pid, why, sizeof(why)), 0);
	assert_int_equal(pid, 4194304);
	assert_int_equal(mstat_pprof_http_parse_pid("007", &pid, why, sizeof(why)), 0);
	assert_int_equal(pid, 7);
	for (size_t i = 0; i < sizeof(bad_pids) / sizeof(bad_pids[0]); i++) {
		if (mstat_pprof_http_parse_pid(bad_pids[i], &pid, why, sizeof(why)) != -1)
			fail_msg("pid \"%s\" taken", bad_pids[i]);
		assert_string_equal(why, "a process id is a decimal number from 1 "
				    "to 4194304");
	}
	assert_int_equal(mstat_pprof_http_parse_seconds("1", &sec, why, sizeof(why)), 0);
	assert_int_equal(sec, 1);
	assert_int_equal(mstat_pprof_http_parse_seconds("300", &sec, why, sizeof(why)), 0);
	assert_int_equal(sec, 300);
	for (size_t i = 0; i < sizeof(bad_seconds) / sizeof(bad_seconds[0]); i++)
		if (mstat_pprof_http_parse_seconds(bad_seconds[i], &sec, why,
						   sizeof(why)) != -1)
			fail_msg("seconds \"%s\" taken", bad_seconds[i]);
}

static void
address(const char *external, const char *host, const struct sockaddr *local,
	const char *want)
{
	char out[300], why[200] = "";
	int rc = mstat_pprof_http_target_address(external, host, local, out,
						 sizeof(out), why, sizeof(why));

	if (want && (rc != 0 || strcmp(out, want) != 0))
		fail_msg("%s, %s: %d %s %s, not %s", external ? external : "-",
			 host ? host : "-", rc, rc ? why : out, "", want);
	if (!want && rc != -1)
		fail_msg("%s taken as %s", host ? host : "-", out);
}

static void
test_pprof_target_address(void **state)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(10415) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(99) };
	const struct sockaddr *l4 = (const void *)&v4, *l6 = (const void *)&v6;

	(void)state;
	inet_pton(AF_INET, "10.0.0.5", &v4.sin_addr);
	inet_pton(AF_INET6, "fd00::5", &v6.sin6_addr);
	/* The flag first, whatever the request says. */
	address("node7:10415", "other:1", l4, "node7:10415");
	/* The Host header, as it is. */
	address(NULL, "node7.example:10415", l4, "node7.example:10415");
	address(NULL, "node7", l4, "node7");
	address(NULL, "10.1.2.3:80", NULL, "10.1.2.3:80");
	address(NULL, "[fd00::1]:10415", l4, "[fd00::1]:10415");
	address(NULL, "[fd00::1]", l4, "[fd00::1]");
	/* None: where the connection came to. */
	address(NULL, NULL, l4, "10.0.0.5:10415");
	address(NULL, NULL, l6, "[fd00::5]:99");
	address(NULL, NULL, NULL, NULL);
	/* Not a host: refused, never copied into a target. */
	static const char *const bad[] = {
		"", ":80", "a b", "a\"b", "host:", "host:0", "host:65536",
		"host:x", "[fd00::1", "[not-v6]:1", "fd00::1", "a/b", "a:1:2",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		address(NULL, bad[i], l4, NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_health_rule),
		cmocka_unit_test(test_tlsgate_classify),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_pprof_query),
		cmocka_unit_test(test_pprof_target_address),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
