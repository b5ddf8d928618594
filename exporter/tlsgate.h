/* SPDX-License-Identifier: MIT */
/*
 * tlsgate.h - the door of a TLS listening socket.
 *
 * A client that speaks plain HTTP to a TLS port gets a plain 400 saying
 * so, as Go's net/http answers it, not a failed handshake it cannot read.
 * The gate accepts each connection itself and waits, without blocking
 * anyone else, for its first five bytes: if they begin an HTTP request
 * ("GET /", "HEAD ", "POST ", "PUT /", "OPTIO", the prefixes Go checks),
 * the connection is answered
 *
 *     HTTP/1.0 400 Bad Request
 *
 *     Client sent an HTTP request to an HTTPS server.
 *
 * and closed; a connection whose first byte begins none of them (a TLS
 * handshake begins 0x16) goes, unread, to the libmicrohttpd daemon,
 * whose TLS handles it as if the daemon had accepted it.  Connections that have
 * said nothing yet are at most max_pending (beyond that a new one is
 * closed as soon as accepted, as the daemon does beyond its limit), and
 * each is closed after idle_s seconds of silence.
 */
#ifndef MSTAT_EXPORTER_TLSGATE_H
#define MSTAT_EXPORTER_TLSGATE_H

#include <stddef.h>

struct MHD_Daemon;
struct mstat_tlsgate;

/* Starts the gate's thread on listen_fd (which it owns from then on,
 * whatever the result), handing TLS connections to `daemon` (started
 * with MHD_USE_NO_LISTEN_SOCKET and MHD_USE_ITC).  0, or -1 with why in
 * err. */
int mstat_tlsgate_start(struct mstat_tlsgate **out, int listen_fd,
			struct MHD_Daemon *daemon, unsigned max_pending,
			unsigned idle_s, char *err, size_t errlen);
/* Stops the thread and closes the listening socket and the connections
 * not handed on; before the daemon is stopped. */
void mstat_tlsgate_stop(struct mstat_tlsgate *g);

enum mstat_tlsgate_verdict {
	MSTAT_TLSGATE_MORE,   /* a prefix of an HTTP request: wait for more */
	MSTAT_TLSGATE_HTTP,   /* plain HTTP: answer 400 */
	MSTAT_TLSGATE_NEITHER,/* begun as a request would, then not: no TLS
			       * record begins so either; closed */
	MSTAT_TLSGATE_TLS,    /* anything else: the daemon's TLS, unread */
};

/* What the first n bytes of a connection (n >= 1) say. */
enum mstat_tlsgate_verdict mstat_tlsgate_classify(const unsigned char *b,
						   size_t n);

/* The reply to plain HTTP, whole. */
extern const char mstat_tlsgate_reply[];

#endif /* MSTAT_EXPORTER_TLSGATE_H */
