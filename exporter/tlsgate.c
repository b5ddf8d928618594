/* SPDX-License-Identifier: MIT */
/*
 * tlsgate.c - the door of a TLS listening socket; see tlsgate.h.
 *
 * One thread polls the listening socket and the connections that have
 * not yet said which protocol they speak.  A connection whose first byte
 * could begin one of the HTTP requests below is read (it can be no TLS
 * record: those begin with a content type, 20 to 25, or a byte with the
 * high bit set, SSL 2's); any other first byte hands it on unread.
 */
#include "exporter/tlsgate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "shm/clock.h"

/* What Go's net/http takes for plain HTTP at a TLS port
 * (tlsRecordHeaderLooksLikeHTTP), and its answer. */
#define PREFIX_LEN 5
static const char *const http_prefixes[] = {
	"GET /", "HEAD ", "POST ", "PUT /", "OPTIO",
};
const char mstat_tlsgate_reply[] =
	"HTTP/1.0 400 Bad Request\r\n\r\n"
	"Client sent an HTTP request to an HTTPS server.\n";

struct pending {
	int fd;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint64_t deadline_ms;
	unsigned char head[PREFIX_LEN]; /* read, once it is known not TLS */
	size_t got;
};

struct mstat_tlsgate {
	int listen_fd;
	int wake_fd;
	struct MHD_Daemon *daemon;
	unsigned max_pending;
	uint64_t idle_ms;
	struct pending *pending;
	size_t n;
	struct pollfd *pfd;
	pthread_t thread;
};

enum mstat_tlsgate_verdict
mstat_tlsgate_classify(const unsigned char *b, size_t n)
{
	bool prefix = false;

	if (n > PREFIX_LEN)
		n = PREFIX_LEN;
	for (size_t i = 0; i < sizeof(http_prefixes) / sizeof(http_prefixes[0]); i++)
		if (memcmp(b, http_prefixes[i], n) == 0) {
			if (n == PREFIX_LEN)
				return MSTAT_TLSGATE_HTTP;
			prefix = true;
		}
	if (prefix)
		return MSTAT_TLSGATE_MORE;
	for (size_t i = 0; i < sizeof(http_prefixes) / sizeof(http_prefixes[0]); i++)
		if (b[0] == (unsigned char)http_prefixes[i][0])
			return MSTAT_TLSGATE_NEITHER;
	return MSTAT_TLSGATE_TLS;
}

/* Plain HTTP: what the client sent so far is read (closing a socket with
 * unread input resets it, and the reply could be lost), then the reply. */
static void
refuse(int fd)
{
	char sink[4096];

	for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	(void)!send(fd, mstat_tlsgate_reply, sizeof(mstat_tlsgate_reply) - 1,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Looks at what p's client has sent: true while it is to wait. */
static bool
examine(struct mstat_tlsgate *g, struct pending *p)
{
	enum mstat_tlsgate_verdict v;
	ssize_t r;

	if (p->got == 0) {
		r = recv(p->fd, p->head, 1, MSG_PEEK);
		if (r == 1 && mstat_tlsgate_classify(p->head, 1) == MSTAT_TLSGATE_TLS) {
			/* MHD owns (and closes) the socket from here, whatever
			 * it answers; it logs why it could not serve it. */
			MHD_add_connection(g->daemon, p->fd,
					   (const struct sockaddr *)&p->addr,
					   p->addrlen);
			return false;
		}
	}
	r = recv(p->fd, p->head + p->got, PREFIX_LEN - p->got, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (r <= 0) { /* gone, or failed, before saying enough */
		close(p->fd);
		return false;
	}
	p->got += (size_t)r;
	v = mstat_tlsgate_classify(p->head, p->got);
	if (v == MSTAT_TLSGATE_MORE)
		return true;
	if (v == MSTAT_TLSGATE_HTTP)
		refuse(p->fd);
	close(p->fd);
	return false;
}

/* Takes every connection waiting; returns accept's errno at the end
 * (EAGAIN once all are taken). */
static int
accept_all(struct mstat_tlsgate *g, uint64_t now)
{
	for (;;) {
		struct pending *p = &g->pending[g->n];
		p->addrlen = sizeof(p->addr);
		int fd = accept4(g->listen_fd, (struct sockaddr *)&p->addr,
				 &p->addrlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return errno;
		if (g->n == g->max_pending) {
			close(fd); /* as the daemon does beyond its limit */
			continue;
		}
		p->fd = fd;
		p->got = 0;
		p->deadline_ms = now + g->idle_ms;
		g->n++;
	}
}

static void *
gate_main(void *arg)
{
	struct mstat_tlsgate *g = arg;
	/* A failing accept (out of descriptors) leaves the socket readable:
	 * it is left alone for a moment rather than spun on. */
	uint64_t listen_again = 0;

	for (;;) {
		uint64_t now = mstat_clock_mono_ns() / 1000000u;
		int timeout = -1;
		size_t k = 0;

		for (size_t i = 0; i < g->n; i++) {
			if (g->pending[i].deadline_ms <= now) {
				close(g->pending[i].fd); /* silent too long */
				continue;
			}
			g->pending[k++] = g->pending[i];
		}
		g->n = k;
		for (size_t i = 0; i < g->n; i++) {
			uint64_t left = g->pending[i].deadline_ms - now;
			if (timeout < 0 || left < (uint64_t)timeout)
				timeout = (int)left;
		}
		bool listening = now >= listen_again;
		if (!listening && (timeout < 0 || listen_again - now < (uint64_t)timeout))
			timeout = (int)(listen_again - now);
		g->pfd[0] = (struct pollfd){ .fd = g->wake_fd, .events = POLLIN };
		g->pfd[1] = (struct pollfd){ .fd = listening ? g->listen_fd : -1,
					     .events = POLLIN };
		for (size_t i = 0; i < g->n; i++)
			g->pfd[2 + i] = (struct pollfd){ .fd = g->pending[i].fd,
							 .events = POLLIN };
		if (poll(g->pfd, 2 + g->n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "mstat-exporter: TLS port: poll: %s\n",
				strerror(errno));
			break;
		}
		if (g->pfd[0].revents)
			break;
		k = 0;
		for (size_t i = 0; i < g->n; i++)
			if (!g->pfd[2 + i].revents || examine(g, &g->pending[i]))
				g->pending[k++] = g->pending[i];
		g->n = k;
		if (g->pfd[1].revents) {
			int e = accept_all(g, mstat_clock_mono_ns() / 1000000u);
			if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
				listen_again = mstat_clock_mono_ns() / 1000000u + 100;
		}
	}
	return NULL;
}

int
mstat_tlsgate_start(struct mstat_tlsgate **out, int listen_fd,
		    struct MHD_Daemon *daemon, unsigned max_pending,
		    unsigned idle_s, char *err, size_t errlen)
{
	struct mstat_tlsgate *g = calloc(1, sizeof(*g));
	int rc;

	if (g) {
		g->wake_fd = -1;
		g->pending = calloc(max_pending + 1, sizeof(*g->pending));
		g->pfd = calloc(max_pending + 2, sizeof(*g->pfd));
	}
	if (!g || !g->pending || !g->pfd) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	g->listen_fd = listen_fd;
	g->daemon = daemon;
	g->max_pending = max_pending;
	g->idle_ms = (uint64_t)idle_s * 1000;
	int fl = fcntl(listen_fd, F_GETFL);
	if ((g->wake_fd = eventfd(0, EFD_CLOEXEC)) < 0 || fl < 0 ||
	    fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "TLS port: %s", strerror(errno));
		goto fail;
	}
	if ((rc = pthread_create(&g->thread, NULL, gate_main, g)) != 0) {
		snprintf(err, errlen, "TLS port: cannot start a thread: %s",
			 strerror(rc));
		goto fail;
	}
	*out = g;
	return 0;
fail:
	close(listen_fd);
	if (g) {
		if (g->wake_fd >= 0)
			close(g->wake_fd);
		free(g->pending);
		free(g->pfd);
		free(g);
	}
	return -1;
}

void
mstat_tlsgate_stop(struct mstat_tlsgate *g)
{
	uint64_t one = 1;

	(void)!write(g->wake_fd, &one, sizeof(one));
	pthread_join(g->thread, NULL);
	for (size_t i = 0; i < g->n; i++)
		close(g->pending[i].fd);
	close(g->listen_fd);
	close(g->wake_fd);
	free(g->pending);
	free(g->pfd);
	free(g);
}
