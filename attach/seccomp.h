/* SPDX-License-Identifier: MIT */
/*
 * seccomp.h - whether a process's seccomp filters let the attach and the
 * injected library make the system calls they make (seccomp.c).
 *
 * A filter may kill the process at a call it refuses: the attach must
 * know before it makes one.  The filters are read with ptrace (which
 * takes CAP_SYS_ADMIN: without it a filtered process is refused) and run
 * here, a classic BPF program per filter, on each call the attach makes
 * and those the library makes afterwards, with the arguments it passes;
 * every filter must allow each, as the kernel runs them all.  A call the
 * library does without (membarrier: it counts fenced; getrandom) may
 * also be refused with an error.
 */
#ifndef MSTAT_ATTACH_SECCOMP_H
#define MSTAT_ATTACH_SECCOMP_H

#include <stddef.h>
#include <sys/types.h>

/* Thread `tid` of `pid`, stopped by this program: 0 if every call is
 * allowed (or there is no filter); -EPERM with the call refused and the
 * filter's verdict in err; -EACCES if the filters cannot be read. */
int mstat_seccomp_check(pid_t pid, pid_t tid, char *err, size_t len);

#endif /* MSTAT_ATTACH_SECCOMP_H */
