/* SPDX-License-Identifier: MIT */
/*
 * report.c - the report protocol between the launcher and the library,
 * both ends; see report.h.  The sending end runs inside the library's
 * host process, during its start: it allocates nothing and uses no stdio.
 */
#include "shm/report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shm/clock.h"

/* The abstract address of `name` into *sa: its length, or 0 if the name
 * is empty or too long for the format. */
static socklen_t
address(struct sockaddr_un *sa, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= MSTAT_REPORT_NAME_MAX || n >= sizeof(sa->sun_path) - 1)
		return 0;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] stays NUL: an abstract name. */
	memcpy(sa->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int
mstat_report_listen(char *name, size_t len)
{
	struct sockaddr_un sa;
	socklen_t sl;
	int s, rc;

	snprintf(name, len, "mstat-run.%d.%llx", (int)getpid(),
		 (unsigned long long)mstat_clock_ns(CLOCK_MONOTONIC));
	if (!(sl = address(&sa, name)))
		return -EINVAL;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sa, sl) < 0 || listen(s, 64) < 0) {
		rc = -errno;
		close(s);
		return rc;
	}
	return s;
}

int
mstat_report_send(const char *name, const char *status, int fd)
{
	struct sockaddr_un sa;
	struct ucred peer;
	socklen_t plen = sizeof(peer), sl = address(&sa, name);
	size_t n = strlen(status);
	int s, rc = 0;

	if (!sl || n == 0 || n >= MSTAT_REPORT_STATUS_MAX)
		return -EINVAL;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sl) < 0 ||
	    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0) {
		rc = -errno;
		goto out;
	}
	if (peer.uid != geteuid()) {
		rc = -EPERM;
		goto out;
	}
	struct iovec iov = { .iov_base = (void *)status, .iov_len = n };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 }; /* its padding after the descriptor is sent too */
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = fd >= 0 ? ctl.buf : NULL,
		.msg_controllen = fd >= 0 ? sizeof(ctl.buf) : 0,
	};
	if (fd >= 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(s, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		rc = -errno;
out:
	close(s);
	return rc;
}

/* The one datagram of connection `conn` into *rep; false if it carried
 * none. */
static bool
receive(int conn, struct mstat_report *rep)
{
	struct iovec iov = { .iov_base = rep->status,
			     .iov_len = sizeof(rep->status) - 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 }; /* its padding after the descriptor is sent too */
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n = recvmsg(conn, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	rep->fd = -1;
	if (n <= 0)
		return false;
	rep->status[n] = '\0';
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&rep->fd, CMSG_DATA(c), sizeof(int));
	return true;
}

bool
mstat_report_take(int listener, pid_t pid, struct mstat_report *last)
{
	struct mstat_report rep;
	bool have = false;
	int conn;

	last->fd = -1;
	while ((conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		struct ucred peer;
		socklen_t plen = sizeof(peer);

		if (receive(conn, &rep) &&
		    getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &plen) == 0 &&
		    peer.pid == pid && peer.uid == geteuid()) {
			if (last->fd >= 0)
				close(last->fd);
			*last = rep;
			have = true;
		} else if (rep.fd >= 0) {
			close(rep.fd);
		}
		close(conn);
	}
	return have;
}
