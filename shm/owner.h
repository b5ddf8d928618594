/* SPDX-License-Identifier: MIT */
/*
 * owner.h - whether a segment's process still lives, and removing the
 * segments of processes that are gone.
 *
 * A target holds an open-file-description read lock on byte
 * MSTAT_OWNER_LOCK_BYTE of its segment for as long as it lives (layout.h).
 * The kernel drops the lock when the last descriptor of that open file
 * goes, which is when the process dies, by exit, _exit, a signal or
 * SIGKILL, in any pid namespace.  So "can someone take a write lock on
 * that byte?" answers "is its owner gone?" without a pid, and a reused or
 * foreign pid cannot fool it.
 *
 * Removing a segment: take the write lock (the owner cannot come back, and
 * no second remover can hold it at the same time), check that the name
 * still leads to the file locked, unlink it.  A creator locks its new file
 * right after making it, and checks that it is still linked once it holds
 * the lock; if a remover got there first, it makes another (segment.c).
 *
 * Nothing here allocates or uses stdio: the library calls it while it
 * starts, possibly from inside malloc.
 */
#ifndef MSTAT_SHM_OWNER_H
#define MSTAT_SHM_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The target takes its owner lock on `fd`: 0, or -errno (-EAGAIN: a
 * remover holds the byte; the file is being removed). */
int mstat_owner_lock(int fd);

/* 1 if the owner of the segment open at `fd` lives, 0 if it is gone, or
 * -errno. */
int mstat_owner_alive(int fd);

/* Who made a segment, as its header says, and how it ended. */
struct mstat_reaped {
	bool published;     /* a whole header of this format: who made it */
	bool cut;           /* shorter than a header: truncated */
	pid_t pid;
	uint64_t start_time;
	uint64_t pid_ns;
	uint32_t state;     /* enum mstat_target_state, 0 if unpublished */
};

enum mstat_reap {
	MSTAT_REAP_KEPT = 0,    /* its owner lives, or it is not ours to judge */
	MSTAT_REAP_REMOVED = 1, /* its owner was gone; the name is unlinked */
};

/*
 * If `name` in directory `dirfd` is a segment of user `uid` (a regular
 * file of any size, of a format since the owner lock's or not yet
 * published) whose owner is gone, unlinks it.  If `succeeded` is not NULL and the segment is that process's own
 * (same pid, start time and pid namespace: the image before an exec),
 * marks it MSTAT_STATE_EXECED first, for readers that still have it.
 * Returns enum mstat_reap, or -errno; `out` (if not NULL) says what the
 * header held.
 */
int mstat_reap_at(int dirfd, const char *name, uid_t uid,
		  const struct mstat_reaped *succeeded, struct mstat_reaped *out);

/* The same for the file open (for reading and writing) at `fd`, which
 * the caller opened as `name` in `dirfd` (beneath.h, in a directory of
 * another mount namespace); `fd` stays open. */
int mstat_reap_file(int dirfd, const char *name, int fd, uid_t uid,
		    const struct mstat_reaped *succeeded,
		    struct mstat_reaped *out);

/* The same for a segment a reader has open at `fd` under `name` in
 * `dirfd`: unlinks the name if the owner is gone and the name still leads
 * to this file.  The descriptor stays open, its mapping readable. */
int mstat_reap_fd(int dirfd, const char *name, int fd);

/*
 * Bounded cleanup, for a process that starts: reads one batch of names
 * from /dev/shm (a single getdents64) and, among at most `probes`
 * segment names whose pid does not exist in this pid namespace, removes
 * those whose owner is gone.  Returns how many it removed.
 */
unsigned mstat_reap_some(uid_t uid, unsigned probes);

#endif /* MSTAT_SHM_OWNER_H */
