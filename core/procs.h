/* SPDX-License-Identifier: MIT */
/*
 * procs.h - the machine's processes, as /proc shows them, and the
 * /dev/shm directories they see: the places discovery looks for
 * segments (docs/design.md, "Namespaces").
 *
 * A sweep, once per tick, walks /proc once (one getdents64 pass) and
 * keeps what it learns of each process, keyed by its pid and the inode
 * of its /proc entry: a process is read when it is new (its start time,
 * its status, its namespaces, its root) and never again while it lives,
 * but for a slice of them each sweep whose mount namespace and root are
 * looked at again (a process may unshare(2) or chroot(2) after its
 * start).  Processes are grouped by mount namespace and root; each
 * group's /dev/shm is opened once per sweep through one live process of
 * it (/proc/<pid>/root, then beneath.h), and groups whose directory is
 * the same one (a container sharing the host's /dev/shm, a mount
 * namespace that kept its parent's) are one directory, listed once.
 * This process's own group is the plain /dev/shm path.
 *
 * Not every process can be looked at: its namespaces and root are
 * another user's to show without CAP_SYS_PTRACE (ptrace(2), "access
 * mode checking").  Those, and the groups whose /dev/shm could not be
 * opened, are counted as namespaces not read; a process that cannot be
 * looked at is told apart by the first mount of its mountinfo, which
 * anyone may read.
 *
 * Everything here belongs to the sampler's thread.
 */
#ifndef MSTAT_CORE_PROCS_H
#define MSTAT_CORE_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/procfs.h"

/* A directory of segments: this process's /dev/shm, or that of another
 * mount namespace, opened safely (beneath.h).  Held by the sweep while
 * a group sees it, and by each target found in it (to remove its
 * segment once its process is gone, through this very directory). */
struct mstat_shmdir {
	int fd;              /* O_RDONLY | O_DIRECTORY */
	uint64_t dev, ino;
	unsigned refs;
	bool own;            /* this process's /dev/shm */
	uint64_t mnt_ns;     /* the mount namespace it was opened in; 0 own */
	uint32_t listed;     /* the sweep that last listed it */
	char where[40];      /* in messages: "" own, else "in mnt:[<ino>]" */
	void *scan;          /* discovery's, during a scan */
};

/* What is known of one process. */
struct mstat_proc {
	pid_t pid;           /* in our pid namespace */
	pid_t nspid;         /* in its own */
	uint64_t d_ino;      /* of its /proc entry */
	uint64_t start;      /* start time, clock ticks after boot */
	uid_t euid;
	bool inspectable;    /* its namespaces and root could be read */
	struct mstat_proc_place place;
	uint32_t seen;       /* the sweep that last saw it */
	struct mstat_nsgroup *group; /* this sweep's; NULL if none */
};

/* The processes of one mount namespace with one root. */
struct mstat_nsgroup {
	uint64_t mnt_ns, root_dev, root_ino;
	pid_t via;           /* a process of it, this sweep */
	bool own;            /* this process's: its dir is procs' `own` */
	int err;             /* why its /dev/shm was not opened: 0 or -errno */
	struct mstat_shmdir *dir; /* opened this sweep; NULL if not (or own) */
	uint64_t mount_id;   /* of `via`, once asked; 0 not read */
	uint32_t seen;
	bool wanted;         /* the sweep's: a namespace asked for */
	pid_t first;         /* the sweep's: its first process */
	bool via_lives;      /* the sweep's: `via` is still one of it */
};

/* Which mount namespaces' /dev/shm are read: "all" (the default, all
 * zero), "own" (this process's only), or those of some processes, by
 * pid, with this process's own ("PID[,PID...]"). */
#define MSTAT_NAMESPACES_PIDS_MAX 64
struct mstat_namespaces {
	bool own;
	size_t npids;
	pid_t pids[MSTAT_NAMESPACES_PIDS_MAX]; /* sorted */
};

/* A list of process ids, "PID[,PID...]", each 1 to 2147483647, at most
 * `max` of them, into pids[] in the order given; *n is how many.  0, or
 * -1 if `s` is not such a list (an empty one is not). */
int mstat_procs_pids_parse(const char *s, pid_t *pids, size_t max, size_t *n);

/* Parses "all", "own" or "PID[,PID...]": 0, or -1 if it is none. */
int mstat_procs_namespaces_parse(const char *s, struct mstat_namespaces *ns);

/* MSTAT_NAMESPACES, the default of the options below, into `ns`
 * (unset or empty: all zero): 0, or -1 with a line saying why. */
int mstat_procs_namespaces_env(struct mstat_namespaces *ns, char *why, size_t len);

/* The option that says whose /dev/shm to read (mstat-top's -N,
 * mstat-exporter's --reader.namespaces), as core/cli.h parses one:
 * what mstat_procs_namespaces_parse() takes, each pid a process that exists
 * now.  `dst` is a struct mstat_namespaces. */
int mstat_procs_namespaces_option(const char *v, void *dst, char *why, size_t len);
#define MSTAT_NAMESPACES_STR_(x) #x
#define MSTAT_NAMESPACES_STR(x) MSTAT_NAMESPACES_STR_(x)
#define MSTAT_NAMESPACES_WANT                                                 \
	"all, own, or process ids separated by commas, at most "              \
	MSTAT_NAMESPACES_STR(MSTAT_NAMESPACES_PIDS_MAX)
#define MSTAT_NAMESPACES_HELP                                                 \
	"all: the /dev/shm of every mount namespace this user may read; "     \
	"own: its own only; PID[,PID..]: those of these processes, and its own"

struct mstat_procs {
	struct mstat_namespaces which; /* whose /dev/shm to open */
	uid_t euid;
	struct mstat_proc_place place; /* this process's */
	uint32_t sweep;
	struct mstat_proc *procs; /* dense, in no order */
	size_t n, cap;
	uint32_t *by_pid;    /* 1 + index into procs; 0 empty */
	uint32_t *by_nspid;  /* the same, by (pid_ns, nspid), for processes
			      * of other pid namespaces */
	size_t mask;         /* of both: a power of 2 minus 1 */
	size_t recheck;      /* where the next slice to look at again begins */
	struct mstat_nsgroup **groups;
	size_t ngroups, capgroups, last_group;
	struct mstat_shmdir *own; /* this process's /dev/shm, this sweep */
	struct mstat_shmdir **dirs; /* every directory alive (held) */
	size_t ndirs, capdirs;
	struct mstat_shmdir **listed; /* this sweep's, this process's first */
	size_t nlisted;
	/* This sweep's: namespaces whose /dev/shm could not be read, and
	 * why (the first such error). */
	unsigned unreadable;
	int unreadable_err;
	struct mstat_proc_iter iter;
};

/* `which`: whose /dev/shm (NULL: all).  0 or -errno. */
int mstat_procs_init(struct mstat_procs *ps, const struct mstat_namespaces *which);
void mstat_procs_fini(struct mstat_procs *ps);

/* A sweep: every process, every group, every directory to list in
 * ps->listed (this process's /dev/shm first, if it can be opened). */
void mstat_procs_sweep(struct mstat_procs *ps);

/* The process with this pid (in ours), or NULL. */
struct mstat_proc *mstat_procs_find(struct mstat_procs *ps, pid_t pid);

/* The process with pid `nspid` in the pid namespace `pid_ns`, as a
 * segment's header names it, or NULL (not a process of this sweep, or
 * not one whose namespace could be read). */
struct mstat_proc *mstat_procs_find_ns(struct mstat_procs *ps, uint64_t pid_ns,
				       pid_t nspid);

/* The directory a process's segments are made in, as of this sweep, or
 * NULL. */
struct mstat_shmdir *mstat_procs_dir_of(const struct mstat_procs *ps,
				       const struct mstat_proc *p);

/* Whether `pid`'s /dev/shm is `dir`, asked of /proc now (not of the
 * sweep): 1, 0, or -errno. */
int mstat_procs_dir_is(const struct mstat_procs *ps, pid_t pid,
		       const struct mstat_shmdir *dir);

void mstat_procs_shmdir_ref(struct mstat_shmdir *d);
/* Drops a reference; the last closes it.  `ps` forgets it. */
void mstat_procs_shmdir_unref(struct mstat_procs *ps, struct mstat_shmdir *d);

/* Why namespaces were not read (ps->unreadable_err), in words, for the
 * header and notes: "" if they all were. */
const char *mstat_procs_unreadable_why(const struct mstat_procs *ps);

#endif /* MSTAT_CORE_PROCS_H */
