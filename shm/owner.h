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
 * still leads to the file locked, unlink it.  Only what the library can be
 * shown to have made is removed: a regular file of the remover's user,
 * mode 0600, whose bytes begin with the segment's magic and a format
 * since the owner lock's, and, if its whole header is there, name the
 * process its name does.  A creator makes its file without a name, locks
 * it, and names it only once published (lib/segment.h): a file under a
 * segment's name without the magic (empty, cut before it, anything else)
 * is no segment the library made, or one an older library left, and is
 * left where it is, said (`found`).
 *
 * A killed process (gone without exiting: SIGKILL, the OOM killer) leaves
 * its segment, its final counts and profile, for readers that were not
 * running when it died.  Removers keep it for a grace period, bounded in
 * time and in the bytes all such segments hold (struct mstat_grace): the
 * first remover to find it dead writes when into the header (`killed_s`),
 * and every remover counts the grace from there.  A segment of a process
 * that exited is gone already (its owner unlinks it); one that exec()ed,
 * or that is not a whole segment of this format, goes at once.
 *
 * A name is opened as discovery opens one (beneath.h): beneath its
 * directory, through no link, crossing no mount, a regular file on the
 * directory's file system; and a segment kept is opened again only while
 * its name leads to the very file kept (device and inode, as recorded
 * when it was kept).  A container's /dev/shm is its own to fill: what it
 * mounts or puts under a kept name later is left alone, never locked,
 * written or removed.
 *
 * Nothing here allocates or uses stdio: the library calls it while it
 * starts, possibly from inside malloc.
 */
#ifndef MSTAT_SHM_OWNER_H
#define MSTAT_SHM_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/name.h"

/* How long the segment of a killed process is kept, and how many bytes of
 * /dev/shm all such segments may hold (docs/design.md, "Killed
 * processes").  The library and the tools read the same variables, with
 * the same defaults: five minutes outlast a scrape interval, a restart
 * of the exporter and a person coming back to a terminal; 16 MiB is a
 * quarter of a container's default /dev/shm (64 MiB), about 290
 * one-thread segments. */
#define MSTAT_ENV_KILLED_GRACE "MSTAT_KILLED_GRACE"
#define MSTAT_ENV_KILLED_BYTES "MSTAT_KILLED_BYTES"
#define MSTAT_KILLED_GRACE_DEFAULT 300u          /* seconds; 0: none */
#define MSTAT_KILLED_GRACE_MAX 86400u
#define MSTAT_KILLED_BYTES_DEFAULT (16u << 20)

struct mstat_grace {
	uint64_t seconds;   /* 0: a killed process's segment goes at once */
	uint64_t max_bytes; /* of /dev/shm, of the killed segments kept */
};

/* Parses a decimal number in 0..max (a variable's or an option's value):
 * 0 or -EINVAL. */
int mstat_owner_grace_parse(const char *s, uint64_t max, uint64_t *out);

/* The target takes its owner lock on `fd`: 0, or -errno (-EAGAIN: a
 * remover holds the byte; the file is being removed). */
int mstat_owner_lock(int fd);

/* 1 if the owner of the segment open at `fd` lives, 0 if it is gone, or
 * -errno. */
int mstat_owner_alive(int fd);

/* What a remover found under a segment's name. */
enum mstat_found {
	MSTAT_FOUND_SEGMENT = 0, /* a segment the library made */
	MSTAT_FOUND_NOT_FILE,    /* not a regular file */
	MSTAT_FOUND_OTHER_USER,  /* a file of another user (`uid`) */
	MSTAT_FOUND_MODE,        /* a file of mode `mode`, not 0600 */
	MSTAT_FOUND_EMPTY,       /* an empty file */
	MSTAT_FOUND_NO_MAGIC,    /* `size` bytes without the segment's magic */
	MSTAT_FOUND_FORMAT,      /* a segment of format `version_major`, whose
				  * liveness is not told by the lock (1, or
				  * newer than this code); 0: cut before its
				  * format */
	MSTAT_FOUND_MISNAMED,    /* a whole header naming another process
				  * (`pid`, `start_time`) than its name */
	MSTAT_FOUND_MOUNT,       /* something mounted over the name, or a
				  * file of another file system */
	MSTAT_FOUND_REPLACED,    /* a segment kept: its name leads to
				  * another file than the one kept (mounted
				  * over it, a link, a file put there since) */
};

/* Who made a segment, as its header says, and how it ended. */
struct mstat_reaped {
	enum mstat_found found;
	bool published;     /* a whole header of this format: who made it */
	bool cut;           /* shorter than a header: truncated */
	uint16_t version_major;
	uint32_t mode, uid; /* the file's */
	uint64_t size;      /* the file's, in bytes */
	pid_t pid;
	uint64_t start_time;
	uint64_t pid_ns;
	uint32_t state;     /* enum mstat_target_state, 0 if unpublished */
	uint64_t created_ns;
	/* MSTAT_REAP_KILLED: CLOCK_REALTIME the owner was first found
	 * killed; the file's bytes (of /dev/shm) and inode. */
	uint64_t killed_ns;
	uint64_t bytes;
	uint64_t dev, ino;
};

enum mstat_reap {
	MSTAT_REAP_KEPT = 0,    /* its owner lives, or the name is gone */
	MSTAT_REAP_REMOVED = 1, /* its owner was gone; the name is unlinked */
	MSTAT_REAP_KILLED = 2,  /* its owner was killed within the grace:
				 * kept (`out` says since when) */
	MSTAT_REAP_LEFT = 3,    /* nothing shows the library made it, or it
				 * is of a format whose liveness the lock
				 * does not tell: left (`out->found` says
				 * what it is) */
};

/* A killed process's segment kept, as a remover remembers it. */
struct mstat_kept {
	char name[MSTAT_SHM_NAME_MAX];
	uint64_t killed_ns, bytes;
	uint64_t dev, ino;  /* the file kept: only it is opened again */
	int dirfd; /* the directory it is in, as the caller has it open */
	bool seen; /* the caller's mark (a name seen in its last scan) */
};

/* Remembers what mstat_reap_*() said of `name` in `dirfd`
 * (MSTAT_REAP_KILLED). */
void mstat_owner_kept_set(struct mstat_kept *k, int dirfd, const char *name,
			  const struct mstat_reaped *r);

/*
 * The segment kept `k` again, by the rules of mstat_owner_reap_at() and
 * a grace of `grace_s`: opened beneath its directory on the device
 * recorded (beneath.h), and only if its name still leads to the file
 * kept.  If it leads to another (a mount, a link, another file),
 * nothing is locked, written or removed: MSTAT_REAP_LEFT,
 * `out->found` MSTAT_FOUND_REPLACED.  MSTAT_REAP_KEPT if the name is
 * gone.  Whenever it returns MSTAT_REAP_LEFT, `why` (if not NULL) says
 * why in one line ("is a mount point: ...").
 */
int mstat_owner_reap_kept(const struct mstat_kept *k, uid_t uid, uint64_t grace_s,
			  struct mstat_reaped *out, char *why, size_t whylen);

/*
 * The byte bound: while the segments `k[0..n)` (kept, each in its
 * `dirfd`) hold more than `max_bytes`, removes the one killed longest
 * ago, if its owner is still gone and it is still the file kept
 * (mstat_owner_reap_kept(), grace 0).  Reorders `k`: the ones taken
 * off are moved to its end.  Returns how many it took off; if `done`
 * is not NULL, calls done(arg, k, rc, why) for each, with what
 * mstat_owner_reap_kept() returned and said.
 */
size_t mstat_owner_kept_evict(uid_t uid, struct mstat_kept *k, size_t n,
			      uint64_t max_bytes,
			      void (*done)(void *arg, const struct mstat_kept *k,
					   int rc, const char *why),
			      void *arg);

/*
 * If `name` in directory `dirfd` (opened beneath it: beneath.h) is a
 * segment the library made, of user `uid`, whose owner is gone, unlinks
 * it (a segment cut short too, if its magic and format are left); unless
 * its owner was killed less than `grace_s` seconds ago
 * (MSTAT_REAP_KILLED; the first to find it killed writes when).  If
 * `succeeded` is not NULL and the
 * segment is that process's own (same pid, start time and pid namespace:
 * the image before an exec), marks it MSTAT_STATE_EXECED first, for
 * readers that still have it, and removes it at once.  Returns enum
 * mstat_reap, or -errno; `out` (if not NULL) says what was found and
 * what the header held.  A name gone, a link, or a file this user may
 * not open: MSTAT_REAP_KEPT; not a regular file, or mounted over:
 * MSTAT_REAP_LEFT (MSTAT_FOUND_NOT_FILE, MSTAT_FOUND_MOUNT).
 */
int mstat_owner_reap_at(int dirfd, const char *name, uid_t uid,
			const struct mstat_reaped *succeeded, uint64_t grace_s,
			struct mstat_reaped *out);

/* The same for the file open (for reading and writing) at `fd`, which
 * the caller opened as `name` in `dirfd` (beneath.h, in a directory of
 * another mount namespace); `fd` stays open. */
int mstat_owner_reap_file(int dirfd, const char *name, int fd, uid_t uid,
			  const struct mstat_reaped *succeeded, uint64_t grace_s,
			  struct mstat_reaped *out);

/* The same for a segment a reader has open at `fd` under `name` in
 * `dirfd`: unlinks the name if the owner is gone (and, killed, the grace
 * is over) and the name still leads to this file.  The descriptor stays
 * open, its mapping readable. */
int mstat_owner_reap_fd(int dirfd, const char *name, int fd, uint64_t grace_s,
			struct mstat_reaped *out);

/*
 * Bounded cleanup, for a process that starts: reads one batch of names
 * from /dev/shm (a single getdents64) and, among at most `probes`
 * segment names whose pid does not exist in this pid namespace, removes
 * those whose owner is gone, by the rules of `g` (the byte bound among
 * the segments it looked at).  Returns how many it removed.
 */
unsigned mstat_owner_reap_some(uid_t uid, unsigned probes, const struct mstat_grace *g);

#endif /* MSTAT_SHM_OWNER_H */
