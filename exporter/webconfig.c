/* SPDX-License-Identifier: MIT */
/*
 * webconfig.c - the exporter web configuration file; see webconfig.h.
 *
 * The YAML is read whole with libyaml's document API, then walked: every
 * key is one the exporter-toolkit knows, or the file is refused, as the
 * toolkit refuses unknown fields.  Certificates and keys are loaded into
 * memory and checked with GnuTLS now, so that a bad file stops the start
 * with its reason instead of failing every handshake later.
 */
#include "exporter/webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

#define FILE_MAX (1u << 20) /* a certificate chain is a few KiB */

struct mstat_webuser {
	char *name, *hash;
	bool have_mac;
	unsigned char mac[32]; /* HMAC-SHA256 of the password last accepted */
};

/* The walk's state: the document, and where errors go. */
struct walk {
	yaml_document_t *doc;
	const char *path;
	char *err;
	size_t errlen;
	char dir[4096];   /* the file's directory, for relative paths */
};

static unsigned char mac_key[32]; /* random, per process */
static char dummy_hash[128];      /* checked for unknown users */

static int
fail(struct walk *w, const yaml_node_t *at, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (at)
		snprintf(w->err, w->errlen, "%s:%lu: %s", w->path,
			 (unsigned long)at->start_mark.line + 1, what);
	else
		snprintf(w->err, w->errlen, "%s: %s", w->path, what);
	return -1;
}

static yaml_node_t *
node(struct walk *w, int id)
{
	return yaml_document_get_node(w->doc, id);
}

/* A scalar's text, or NULL if `n` is not a scalar. */
static const char *
scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
						: NULL;
}

/* `key:` with nothing after it: a null, as if absent. */
static bool
is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0);
}

static int
mapping(struct walk *w, const yaml_node_t *n, const char *what)
{
	if (n->type != YAML_MAPPING_NODE)
		return fail(w, n, "%s must be a mapping", what);
	return 0;
}

static int
boolean(struct walk *w, const yaml_node_t *n, const char *key, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };
	const char *s = scalar(n);

	for (size_t i = 0; s && i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return fail(w, n, "%s must be true or false", key);
}

/* Reads a whole file (a path relative to the configuration's directory)
 * into a new string. */
static int
slurp(struct walk *w, const yaml_node_t *at, const char *key, const char *file,
      char **out)
{
	char path[8192];
	FILE *f;

	if (file[0] == '/' || !w->dir[0])
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/%s", w->dir, file);
	if (!(f = fopen(path, "re")))
		return fail(w, at, "%s %s: %s", key, path, strerror(errno));
	char *buf = malloc(FILE_MAX + 1);
	size_t n = buf ? fread(buf, 1, FILE_MAX + 1, f) : 0;
	bool bad = ferror(f);
	fclose(f);
	if (!buf)
		return fail(w, at, "out of memory");
	if (bad || n > FILE_MAX) {
		free(buf);
		return fail(w, at, "%s %s: %s", key, path,
			    bad ? "cannot be read" : "larger than 1 MiB");
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

static int
tls_version(struct walk *w, const yaml_node_t *n, const char *key, int *out)
{
	static const char *const names[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	const char *s = scalar(n);

	for (int i = 0; s && i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return *out = i, 0;
	return fail(w, n, "%s must be TLS10, TLS11, TLS12 or TLS13", key);
}

static int
tls_server_config(struct walk *w, struct mstat_webconfig *c, yaml_node_t *m)
{
	char *cert_file = NULL, *key_file = NULL;
	int min = 2, max = 3; /* TLS12 .. TLS13, the toolkit's defaults */
	bool prefer = false;
	int rc = -1;

	if (mapping(w, m, "tls_server_config") < 0)
		return -1;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(w, p->key), *v = node(w, p->value);
		const char *key = scalar(k);
		if (!key)
			return fail(w, k, "a key must be a string");
		if (is_null(v))
			continue;
		if (strcmp(key, "cert_file") == 0 || strcmp(key, "key_file") == 0) {
			if (!scalar(v))
				return fail(w, v, "%s must be a file name", key);
			*(key[0] == 'c' ? &cert_file : &key_file) = (char *)scalar(v);
		} else if (strcmp(key, "min_version") == 0) {
			if (tls_version(w, v, key, &min) < 0)
				return -1;
		} else if (strcmp(key, "max_version") == 0) {
			if (tls_version(w, v, key, &max) < 0)
				return -1;
		} else if (strcmp(key, "prefer_server_cipher_suites") == 0) {
			if (boolean(w, v, key, &prefer) < 0)
				return -1;
		} else if (strcmp(key, "client_auth_type") == 0) {
			if (!scalar(v) || strcmp(scalar(v), "NoClientCert") != 0)
				return fail(w, v, "client_auth_type %s: mstat-exporter "
					    "does not verify client certificates "
					    "(only NoClientCert)",
					    scalar(v) ? scalar(v) : "");
		} else if (strcmp(key, "client_ca_file") == 0 ||
			   strcmp(key, "client_allowed_sans") == 0 ||
			   strcmp(key, "cipher_suites") == 0 ||
			   strcmp(key, "curve_preferences") == 0 ||
			   strcmp(key, "cert") == 0 || strcmp(key, "key") == 0) {
			return fail(w, k, "%s: not supported by mstat-exporter", key);
		} else {
			return fail(w, k, "unknown key %s in tls_server_config", key);
		}
	}
	if (!cert_file && !key_file)
		return 0; /* no TLS, as the toolkit does */
	if (!cert_file || !key_file)
		return fail(w, m, "tls_server_config needs both cert_file and "
			    "key_file");
	if (min > max)
		return fail(w, m, "min_version is above max_version");
	if (slurp(w, m, "cert_file", cert_file, &c->cert_pem) < 0 ||
	    slurp(w, m, "key_file", key_file, &c->key_pem) < 0)
		goto out;

	/* The pair, checked now: a wrong file fails the start, not every
	 * handshake. */
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cd = { (unsigned char *)c->cert_pem,
			      (unsigned)strlen(c->cert_pem) };
	gnutls_datum_t kd = { (unsigned char *)c->key_pem,
			      (unsigned)strlen(c->key_pem) };
	if (gnutls_certificate_allocate_credentials(&cred) < 0) {
		fail(w, m, "out of memory");
		goto out;
	}
	int g = gnutls_certificate_set_x509_key_mem(cred, &cd, &kd,
						    GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	if (g < 0) {
		fail(w, m, "cert_file %s and key_file %s: %s", cert_file,
		     key_file, gnutls_strerror(g));
		goto out;
	}
	static const char *const vers[] = { "+VERS-TLS1.0", "+VERS-TLS1.1",
					    "+VERS-TLS1.2", "+VERS-TLS1.3" };
	size_t len = (size_t)snprintf(c->priorities, sizeof(c->priorities),
				      "NORMAL:-VERS-ALL");
	for (int i = min; i <= max; i++)
		len += (size_t)snprintf(c->priorities + len,
					sizeof(c->priorities) - len, ":%s", vers[i]);
	if (prefer)
		snprintf(c->priorities + len, sizeof(c->priorities) - len,
			 ":%%SERVER_PRECEDENCE");
	rc = 0;
out:
	if (rc < 0) {
		free(c->cert_pem);
		free(c->key_pem);
		c->cert_pem = c->key_pem = NULL;
	}
	return rc;
}

/* The headers the exporter-toolkit lets a configuration set. */
static const char *const allowed_headers[] = {
	"Strict-Transport-Security", "X-Content-Type-Options",
	"X-Frame-Options", "X-XSS-Protection", "Content-Security-Policy",
};

static int
http_server_config(struct walk *w, struct mstat_webconfig *c, yaml_node_t *m)
{
	if (mapping(w, m, "http_server_config") < 0)
		return -1;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(w, p->key), *v = node(w, p->value);
		const char *key = scalar(k);
		bool http2;
		if (!key)
			return fail(w, k, "a key must be a string");
		if (is_null(v))
			continue;
		if (strcmp(key, "http2") == 0) {
			/* HTTP/1.1 is served either way; Prometheus scrapes
			 * over HTTP/1.1 unless told otherwise. */
			if (boolean(w, v, key, &http2) < 0)
				return -1;
			continue;
		}
		if (strcmp(key, "headers") != 0)
			return fail(w, k, "unknown key %s in http_server_config", key);
		if (mapping(w, v, "headers") < 0)
			return -1;
		size_t n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
		c->headers = calloc(n ? n : 1, sizeof(*c->headers));
		if (!c->headers)
			return fail(w, v, "out of memory");
		for (yaml_node_pair_t *h = v->data.mapping.pairs.start;
		     h < v->data.mapping.pairs.top; h++) {
			const char *name = scalar(node(w, h->key));
			const char *value = scalar(node(w, h->value));
			size_t a = 0;
			while (name && a < sizeof(allowed_headers) / sizeof(*allowed_headers) &&
			       strcasecmp(name, allowed_headers[a]) != 0)
				a++;
			if (!name || a == sizeof(allowed_headers) / sizeof(*allowed_headers))
				return fail(w, node(w, h->key), "header %s may not be "
					    "set", name ? name : "?");
			if (!value || strpbrk(value, "\r\n"))
				return fail(w, node(w, h->value), "header %s: its "
					    "value must be one line", name);
			struct mstat_webheader *hd = &c->headers[c->nheaders++];
			hd->name = strdup(allowed_headers[a]);
			hd->value = strdup(value);
			if (!hd->name || !hd->value)
				return fail(w, v, "out of memory");
		}
	}
	return 0;
}

/* Whether crypt() takes `hash` as a bcrypt hash. */
static bool
bcrypt_hash(const char *hash)
{
	struct crypt_data *cd;
	bool ok;

	if (strncmp(hash, "$2a$", 4) && strncmp(hash, "$2b$", 4) &&
	    strncmp(hash, "$2y$", 4))
		return false;
	if (!(cd = calloc(1, sizeof(*cd))))
		return false;
	const char *out = crypt_r("", hash, cd);
	ok = out && out[0] != '*' && strlen(out) == strlen(hash);
	free(cd);
	return ok;
}

static int
basic_auth_users(struct walk *w, struct mstat_webconfig *c, yaml_node_t *m)
{
	if (mapping(w, m, "basic_auth_users") < 0)
		return -1;
	size_t n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
	if (!(c->users = calloc(n ? n : 1, sizeof(*c->users))))
		return fail(w, m, "out of memory");
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(w, p->key), *v = node(w, p->value);
		const char *user = scalar(k), *hash = scalar(v);
		if (!user || !*user || strchr(user, ':'))
			return fail(w, k, "a user name must be a string without ':'");
		for (size_t i = 0; i < c->nusers; i++)
			if (strcmp(c->users[i].name, user) == 0)
				return fail(w, k, "user %s twice", user);
		if (!hash || !bcrypt_hash(hash))
			return fail(w, v, "user %s: the password must be a bcrypt "
				    "hash ($2a$, $2b$ or $2y$; htpasswd -nB makes "
				    "one)", user);
		struct mstat_webuser *u = &c->users[c->nusers++];
		u->name = strdup(user);
		u->hash = strdup(hash);
		if (!u->name || !u->hash)
			return fail(w, k, "out of memory");
	}
	/* Unknown users are checked against this, so that a wrong name
	 * takes as long as a wrong password. */
	if (!dummy_hash[0]) {
		struct crypt_data *cd = calloc(1, sizeof(*cd));
		const char *salt = crypt_gensalt("$2b$", 10, NULL, 0);
		const char *h = cd && salt ? crypt_r("", salt, cd) : NULL;
		if (h && h[0] != '*')
			snprintf(dummy_hash, sizeof(dummy_hash), "%s", h);
		free(cd);
	}
	if (gnutls_rnd(GNUTLS_RND_KEY, mac_key, sizeof(mac_key)) < 0 ||
	    !dummy_hash[0])
		return fail(w, m, "no random numbers for the password cache");
	return 0;
}

void
mstat_webconfig_init(struct mstat_webconfig *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->users_lock, NULL);
}

int
mstat_webconfig_load(struct mstat_webconfig *c, const char *path, char *err,
		     size_t errlen)
{
	struct walk w = { .path = path, .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_document_t doc;
	int rc = -1;
	FILE *f;

	mstat_webconfig_init(c);
	/* Relative file names are relative to the file's directory. */
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) : 0;
	if (dirlen >= sizeof(w.dir))
		return fail(&w, NULL, "the file's directory is too long");
	memcpy(w.dir, path, dirlen);
	w.dir[dirlen] = '\0';
	if (slash == path)
		w.dir[0] = '/', w.dir[1] = '\0';
	if (!(f = fopen(path, "re")))
		return fail(&w, NULL, "%s", strerror(errno));
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "%s:%lu: %s", path,
			 (unsigned long)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		return -1;
	}
	w.doc = &doc;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || is_null(root)) {
		rc = 0; /* an empty file: nothing asked for */
		goto out;
	}
	if (mapping(&w, root, "the file") < 0)
		goto out;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(&w, p->key), *v = node(&w, p->value);
		const char *key = scalar(k);
		int r;
		if (!key) {
			fail(&w, k, "a key must be a string");
			goto out;
		}
		if (is_null(v))
			continue;
		if (strcmp(key, "tls_server_config") == 0)
			r = tls_server_config(&w, c, v);
		else if (strcmp(key, "http_server_config") == 0)
			r = http_server_config(&w, c, v);
		else if (strcmp(key, "basic_auth_users") == 0)
			r = basic_auth_users(&w, c, v);
		else
			r = fail(&w, k, "unknown key %s", key);
		if (r < 0)
			goto out;
	}
	rc = 0;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	if (rc < 0)
		mstat_webconfig_free(c);
	return rc;
}

void
mstat_webconfig_free(struct mstat_webconfig *c)
{
	free(c->cert_pem);
	free(c->key_pem);
	for (size_t i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	for (size_t i = 0; i < c->nheaders; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	free(c->headers);
	pthread_mutex_destroy(&c->users_lock);
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->users_lock, NULL);
}

/* Compares without stopping at the first difference. */
static bool
same(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

bool
mstat_webconfig_auth(struct mstat_webconfig *c, const char *user,
		     const char *password)
{
	struct mstat_webuser *u = NULL;
	unsigned char mac[32];
	bool ok = false;

	for (size_t i = 0; i < c->nusers && !u; i++)
		if (strcmp(c->users[i].name, user) == 0)
			u = &c->users[i];
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, mac_key, sizeof(mac_key),
			     password, strlen(password), mac) < 0)
		return false;
	if (u) {
		pthread_mutex_lock(&c->users_lock);
		ok = u->have_mac && same(u->mac, mac, sizeof(mac));
		pthread_mutex_unlock(&c->users_lock);
		if (ok)
			return true;
	}
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	const char *hash = u ? u->hash : dummy_hash;
	const char *out = crypt_r(password, hash, cd);
	ok = u && out && strlen(out) == strlen(hash) &&
	     same(out, hash, strlen(hash));
	free(cd);
	if (ok) {
		pthread_mutex_lock(&c->users_lock);
		memcpy(u->mac, mac, sizeof(mac));
		u->have_mac = true;
		pthread_mutex_unlock(&c->users_lock);
	}
	return ok;
}
