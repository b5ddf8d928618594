/* SPDX-License-Identifier: MIT */
/*
 * report.h - how a process mstat-run starts hands it its segment: the
 * report protocol between the launcher and the library, both sides.
 *
 * The launcher's word is the environment of the command it runs:
 *
 *   MSTAT_REPORT      the abstract unix socket it listens on
 *                     (SOCK_SEQPACKET), named without the leading NUL:
 *                     1 to MSTAT_REPORT_NAME_MAX - 1 bytes
 *   MSTAT_REPORT_PID  the pid, in decimal, of the process that reports:
 *                     the command, and each image it exec()s
 *   MSTAT_NAME        the name readers show (mstat-run --name)
 *
 * The library of that process (and of no other: its children inherit the
 * environment, not the pid) makes its segment at start and reports once
 * it has, or has given up: it connects, and sends one datagram
 *
 *   data     its status line (mstat_self_status()), no NUL: 1 to
 *            MSTAT_REPORT_STATUS_MAX - 1 bytes;
 *   control  if it counts, one SCM_RIGHTS message of one descriptor:
 *            its segment, opened anew, read-write.  Not the descriptor
 *            the library keeps: the owner lock belongs to that open
 *            file, and a copy of it held by the launcher would keep
 *            the process alive to every reader after its death.  No
 *            descriptor: it counts nothing, and the status says why.
 *
 * Abstract names are open to every user of the network namespace: the
 * sender hands its segment only to a listener of its own user, and the
 * listener takes only reports of its user from the pid it named, the
 * last one (an exec()ed image reports its own segment).  Everything is
 * non-blocking: a launcher gone, or a full socket, loses the report and
 * nothing else.
 */
#ifndef MSTAT_SHM_REPORT_H
#define MSTAT_SHM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MSTAT_ENV_REPORT "MSTAT_REPORT"
#define MSTAT_ENV_REPORT_PID "MSTAT_REPORT_PID"
#define MSTAT_ENV_NAME "MSTAT_NAME"

#define MSTAT_REPORT_NAME_MAX 100   /* the socket's name, with its NUL */
#define MSTAT_REPORT_STATUS_MAX 400 /* the status line, with its NUL */

/* What a process reported: its status line, and its segment's
 * descriptor (the receiver's to close), or -1 if it counts nothing. */
struct mstat_report {
	int fd;
	char status[MSTAT_REPORT_STATUS_MAX];
};

/* The launcher: listens on a new abstract name, made unique with its pid
 * and the clock, which goes into `name` (`len` bytes) for MSTAT_REPORT.
 * The listening descriptor (non-blocking, close-on-exec), or -errno. */
int mstat_report_listen(char *name, size_t len);

/* The library: sends `status` and, unless it is -1, descriptor `fd` to
 * the listener on `name`, if it is of this user.  0, or -errno (-EPERM:
 * another user's; -EINVAL: a name or status the format does not hold). */
int mstat_report_send(const char *name, const char *status, int fd);

/* The launcher, once the process `pid` has ended: the last report it sent
 * (to `listener`) into *last; false if it sent none.  Every other report
 * is dropped, its descriptor closed. */
bool mstat_report_take(int listener, pid_t pid, struct mstat_report *last);

#endif /* MSTAT_SHM_REPORT_H */
