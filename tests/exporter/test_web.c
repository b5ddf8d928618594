/* SPDX-License-Identifier: MIT */
/*
 * test_web.c - mstat-exporter's pieces that need no server: content
 * negotiation, listen addresses, the web configuration file and basic
 * auth against bcrypt hashes.
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

#include "web.h"
#include "webconfig.h"

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

static void
test_addresses(void **state)
{
	char host[64], port[16];
	(void)state;

	assert_int_equal(mstat_web_split_address("127.0.0.1:10415", host,
						 sizeof(host), port, sizeof(port)), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_string_equal(port, "10415");
	assert_int_equal(mstat_web_split_address(":10415", host, sizeof(host),
						 port, sizeof(port)), 0);
	assert_string_equal(host, "");
	assert_int_equal(mstat_web_split_address("[::1]:9", host, sizeof(host),
						 port, sizeof(port)), 0);
	assert_string_equal(host, "::1");
	assert_string_equal(port, "9");
	assert_int_equal(mstat_web_split_address("localhost:http", host,
						 sizeof(host), port, sizeof(port)), 0);
	const char *bad[] = { "::1:9", "10415", "host:", "[::1]9", "[::1]", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mstat_web_split_address(bad[i], host, sizeof(host),
							 port, sizeof(port)), -1);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_auth),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
