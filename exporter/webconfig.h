/* SPDX-License-Identifier: MIT */
/*
 * webconfig.h - the web configuration file of Prometheus exporters
 * (--web.config.file): TLS and basic auth, as node_exporter reads it
 * through the Prometheus exporter-toolkit.
 *
 *   tls_server_config:
 *     cert_file: server.crt        # relative to the file's directory
 *     key_file: server.key
 *     min_version: TLS12           # TLS10 TLS11 TLS12 TLS13; default TLS12
 *     max_version: TLS13
 *     client_auth_type: NoClientCert
 *     prefer_server_cipher_suites: true
 *   http_server_config:
 *     http2: false                 # accepted; HTTP/1.1 is what is served
 *     headers:
 *       Strict-Transport-Security: max-age=31536000
 *   basic_auth_users:
 *     alice: $2y$10$...            # bcrypt
 *
 * What the toolkit accepts and this does not (client certificates, cipher
 * suite and curve lists) is refused with a reason, never ignored: a
 * configuration that asks for more security than it gets must not start.
 */
#ifndef MSTAT_EXPORTER_WEBCONFIG_H
#define MSTAT_EXPORTER_WEBCONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct mstat_webuser;

struct mstat_webheader {
	char *name, *value;
};

struct mstat_webconfig {
	/* TLS, if cert_pem is set: the files' contents, and a GnuTLS
	 * priority string for the versions allowed. */
	char *cert_pem, *key_pem;
	char priorities[160];
	/* Basic auth, if nusers > 0. */
	struct mstat_webuser *users;
	size_t nusers;
	pthread_mutex_t users_lock; /* their caches */
	struct mstat_webheader *headers;
	size_t nheaders;
};

/* Reads `path` into `c`.  0, or -1 with the reason in err (one line:
 * "FILE:LINE: what"). */
int mstat_webconfig_load(struct mstat_webconfig *c, const char *path,
			 char *err, size_t errlen);
/* A configuration with nothing in it: plain HTTP, no auth. */
void mstat_webconfig_init(struct mstat_webconfig *c);
void mstat_webconfig_free(struct mstat_webconfig *c);

/* Whether `user` and `password` are those of a basic_auth_users entry.
 * A bcrypt check costs tens of milliseconds: a password that passed is
 * remembered (as a keyed hash) so that a scraper's every request does not
 * pay it again; a wrong or unknown one always pays it.  Thread-safe. */
bool mstat_webconfig_auth(struct mstat_webconfig *c, const char *user,
			  const char *password);

#endif /* MSTAT_EXPORTER_WEBCONFIG_H */
