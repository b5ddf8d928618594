/* SPDX-License-Identifier: MIT */
/*
 * procfs.h - what /proc says of a target's process: the names a user
 * recognises it by, whether it is stopped, and when it started.
 *
 * Only meaningful for a process in the observer's own pid namespace: the
 * caller checks that before asking.  Everything here is text the process
 * chose (its comm, its executable's name): callers escape it (text.h)
 * before showing it.
 */
#ifndef MSTAT_SHM_PROCFS_H
#define MSTAT_SHM_PROCFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct mstat_proc_identity {
	char comm[16];  /* /proc/<pid>/comm, "" if unknown */
	char exe[64];   /* the executable's file name, "" if unknown */
};

/* Fills `id` for `pid` (what cannot be read stays ""). */
void mstat_proc_identity(pid_t pid, struct mstat_proc_identity *id);

/* CLOCK_REALTIME nanoseconds of boot (from /proc/stat), or 0. */
uint64_t mstat_proc_boot_ns(void);

/* CLOCK_REALTIME nanoseconds a process started, from its start time in
 * clock ticks after boot (/proc/<pid>/stat field 22); 0 if unknown. */
uint64_t mstat_proc_start_ns(uint64_t boot_ns, uint64_t start_ticks);

/* Whether `state` (/proc/<pid>/stat field 3) is a stopped process. */
static inline bool
mstat_proc_state_stopped(char state)
{
	return state == 'T' || state == 't';
}

#endif /* MSTAT_SHM_PROCFS_H */
