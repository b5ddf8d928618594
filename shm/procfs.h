/* SPDX-License-Identifier: MIT */
/*
 * procfs.h - what /proc says of a process: when it started (which tells
 * it from a later process with the same pid), its state, the names a
 * user recognises it by, its namespaces, root, uids and cgroups, the
 * processes there are, and this process's pid namespace and the
 * machine's boot time.  The one place /proc is read.
 *
 * A pid is only meaningful in the caller's own pid namespace: callers
 * check that before asking about another process.  What a process chose
 * (its comm, its executable's name) is text: callers escape it (text.h)
 * before showing it.
 *
 * These functions neither allocate nor use stdio: the writer calls them
 * while it sets up, from inside malloc.
 */
#ifndef MSTAT_SHM_PROCFS_H
#define MSTAT_SHM_PROCFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of `pid` (0: this process), in clock ticks after boot
 * (/proc/<pid>/stat field 22): 0 or -errno. */
int mstat_procfs_start_time(pid_t pid, uint64_t *start_time);

/* The same, and its state letter (field 3: R, S, T, Z for a zombie, ...). */
int mstat_procfs_stat(pid_t pid, uint64_t *start_time, char *state);

/* Whether `pid` is exiting (PF_EXITING, in /proc/<pid>/stat field 9):
 * dying, its descriptors (and so its locks) closed or being closed, not
 * a zombie yet.  False if it cannot tell. */
bool mstat_procfs_exiting(pid_t pid);

/* What /proc/<pid>/stat says of a process's life (of its main thread's),
 * or /proc/<pid>/task/<tid>/stat of thread `tid` if not 0. */
struct mstat_proc_life {
	char state;            /* field 3: R, S, D, T, t, Z (zombie), X (dead) */
	uint64_t flags;        /* field 9: the kernel's PF_ flags, below */
	uint64_t threads;      /* field 20: the process's threads */
	uint64_t start_time;   /* field 22 */
};
#define MSTAT_PF_EXITING 0x4u        /* in do_exit(): it is ending */
#define MSTAT_PF_KTHREAD 0x200000u   /* a kernel thread */
/* 0 or -errno (-ENOENT or -ESRCH: no such process, or thread). */
int mstat_procfs_life(pid_t pid, pid_t tid, struct mstat_proc_life *l);

/* Whether state letter `state` is a zombie's or a dead task's. */
static inline bool
mstat_proc_state_ended(char state)
{
	return state == 'Z' || state == 'X';
}

/* Whether `state` (/proc/<pid>/stat field 3) is a stopped process. */
static inline bool
mstat_proc_state_stopped(char state)
{
	return state == 'T' || state == 't';
}

/* The inode of this process's pid namespace (/proc/self/ns/pid): 0 or
 * -errno.  Two processes whose namespaces have the same inode see the
 * same pids. */
int mstat_procfs_pid_ns(uint64_t *ino);

/* What /proc/<pid>/status says of a process's identity. */
struct mstat_proc_status {
	uid_t euid;     /* effective uid, as this process's user namespace
			 * sees it */
	pid_t nspid;    /* its pid in its own pid namespace (the last of
			 * NSpid); the pid asked about in ours */
	unsigned depth; /* pid namespaces it is nested in below ours */
};
/* 0 or -errno (-EPROTO: a line missing). */
int mstat_procfs_status(pid_t pid, struct mstat_proc_status *st);

/* Opens the root directory of `pid` (O_PATH | O_DIRECTORY), the view of
 * the file system it has, mounts of its mount namespace included: the
 * descriptor, or -errno (as mstat_procfs_place()). */
int mstat_procfs_root_open(pid_t pid);

/* /proc/<pid>/cgroup into buf (NUL-terminated, cut to `len` - 1 bytes):
 * its length, or -errno. */
ssize_t mstat_procfs_cgroup(pid_t pid, char *buf, size_t len);

/* The uid that `outside`, a uid as this process sees it, is inside the
 * user namespace of `pid` (/proc/<pid>/uid_map): 0 or -errno (-ERANGE:
 * not mapped there). */
int mstat_procfs_uid_inside(pid_t pid, uid_t outside, uid_t *inside);

/* The id of the first mount /proc/<pid>/mountinfo lists, which anyone
 * may read: two processes with different ids live in different mount
 * namespaces (or roots), when their namespaces cannot be inspected.
 * 0 or -errno. */
int mstat_procfs_mount_id(pid_t pid, uint64_t *id);

/* Where a process lives: its namespaces and root, which tell the
 * /dev/shm it sees.  When those are not ours to read (-EACCES, -EPERM),
 * only `mount_id` (mstat_procfs_mount_id()) is known, which tells its
 * mount namespace apart all the same; otherwise `mount_id` is 0. */
struct mstat_proc_place {
	uint64_t mnt_ns, pid_ns, root_dev, root_ino;
	uint64_t mount_id;
};
/* Fills `pl` for `pid` (0: this process), from /proc/<pid>/ns/mnt,
 * ns/pid and root: 0 or -errno.  Those links are another process's to
 * show: -EACCES or -EPERM without ptrace access to it (another user's
 * process, without CAP_SYS_PTRACE), -ENOENT once it is a zombie. */
int mstat_procfs_place(pid_t pid, struct mstat_proc_place *pl);

/* Opens again, with `flags`, the file open at `fd` (an O_PATH
 * descriptor), through /proc/self/fd: the same file, whatever its name
 * leads to by now.  The descriptor, or -errno. */
int mstat_procfs_reopen(int fd, int flags);

/* The processes of /proc, a getdents64 at a time, into the caller's
 * buffer: no allocation. */
struct mstat_proc_iter {
	int fd;
	long len, off;
	char buf[16384];
};
/* A process of /proc: its pid, and the inode of its /proc entry (a
 * process that replaced another under the same pid has another inode). */
struct mstat_proc_entry {
	pid_t pid;
	uint64_t ino;
};
/* 0 or -errno. */
int mstat_procfs_iter_open(struct mstat_proc_iter *it);
/* The next processes, up to `max` of them, into `e`: how many (0 at the
 * end), or -errno.  A batch at a time, so that the caller's loop over
 * the machine's processes stays in its own code. */
long mstat_procfs_iter_next(struct mstat_proc_iter *it,
			    struct mstat_proc_entry *e, size_t max);
void mstat_procfs_iter_close(struct mstat_proc_iter *it);

struct mstat_proc_identity {
	char comm[16];  /* /proc/<pid>/comm, "" if unknown */
	char exe[64];   /* the executable's file name, "" if unknown */
};

/* Fills `id` for `pid` (what cannot be read stays ""). */
void mstat_procfs_identity(pid_t pid, struct mstat_proc_identity *id);

/* CLOCK_REALTIME nanoseconds of boot (from /proc/stat), or 0. */
uint64_t mstat_procfs_boot_ns(void);
/* The same from a file like /proc/stat open at `fd`, read to its
 * "btime" line. */
uint64_t mstat_procfs_boot_ns_fd(int fd);

/* The memory cgroup of a process, as /proc/<pid>/cgroup names it: the
 * path in the v1 memory hierarchy if the memory controller is bound to
 * one (`*v2` false), else its path in the unified (v2) hierarchy.  0 or
 * -errno (-ENOENT: none named). */
int mstat_procfs_memcg(pid_t pid, char *path, size_t len, bool *v2);
/* The same from the text of such a file. */
int mstat_procfs_memcg_parse(const char *text, char *path, size_t len, bool *v2);

/* The number on the line "<key> <number>" of `text` (memory.events,
 * memory.oom_control, /proc/vmstat): 0 or -ENOENT. */
int mstat_procfs_keyed_count(const char *text, const char *key, uint64_t *out);

/* The file at `path` (of /sys or /proc), up to len - 1 bytes, with a NUL:
 * its length, or -errno. */
ssize_t mstat_procfs_read_small(const char *path, char *buf, size_t len);

/* How many processes the OOM killer has killed since boot, on the whole
 * machine, cgroup limits included (/proc/vmstat oom_kill): 0 or
 * -errno. */
int mstat_procfs_vmstat_oom(uint64_t *n);

/* What /proc/<pid>/status says of a process's resident memory, in
 * bytes: VmRSS and the three counters the kernel adds it up from, so that
 * rss == anon + file + shmem. */
struct mstat_proc_rss {
	uint64_t rss, anon, file, shmem;
};
/* 0 or -errno (-EPROTO: a line missing, as for a zombie or a kernel
 * thread). */
int mstat_procfs_rss(pid_t pid, struct mstat_proc_rss *out);
/* The same from the text of such a file. */
int mstat_procfs_rss_parse(const char *text, struct mstat_proc_rss *out);
/* Its resident pages and those of them that are files' or shared memory
 * (/proc/<pid>/statm: the same counters as the status's, a third of its
 * cost to read): 0 or -errno. */
int mstat_procfs_statm(pid_t pid, uint64_t *resident, uint64_t *shared);

/*
 * The mappings of a process, as /proc/<pid>/maps lists them (in address
 * order), a line at a time through the caller's buffer: no allocation.
 * Reading them needs ptrace access to the process in read mode (its
 * user, or CAP_SYS_PTRACE): -EACCES otherwise.
 */
struct mstat_proc_map {
	uint64_t start, end, offset, ino;
	uint32_t dev_major, dev_minor;
	char perms[5];      /* "rw-p" */
	const char *name;   /* "" if anonymous; "[heap]", "[stack]", a path:
			     * in the iterator's buffer until the next call,
			     * cut where its line is longer than that */
};
struct mstat_proc_maps {
	int fd;
	size_t len, off;
	bool eof;
	bool cut;           /* the last line was cut: its rest is passed over */
	char buf[8192];
};
/* 0 or -errno. */
int mstat_procfs_maps_open(struct mstat_proc_maps *m, pid_t pid);
/* The next mapping into *out: 1, 0 at the end, or -errno (-EPROTO: a
 * line that is not one). */
int mstat_procfs_maps_next(struct mstat_proc_maps *m, struct mstat_proc_map *out);
void mstat_procfs_maps_close(struct mstat_proc_maps *m);
/* One line of it, NUL-terminated, into *out: 0 or -EPROTO. */
int mstat_procfs_map_parse(char *line, struct mstat_proc_map *out);

/* /proc/<pid>/pagemap, opened (the same access as its maps): the
 * descriptor, or -errno. */
int mstat_procfs_pagemap_open(pid_t pid);
/*
 * The pages of [start, end) (page-aligned) that are in memory, as the
 * kernel counts a process's resident pages: present, and not the shared
 * zero page (told apart where the kernel has PAGEMAP_SCAN, Linux 6.7;
 * before it, from pagemap's entries, which count that page too).  Their
 * bytes, or -errno; `run`, if not NULL, is called with each run of them
 * in address order.
 */
int64_t mstat_procfs_resident(int pagemap, uint64_t start, uint64_t end,
			      void (*run)(void *arg, uint64_t start, uint64_t end),
			      void *arg);

/* CLOCK_REALTIME nanoseconds a process started, from its start time in
 * clock ticks after boot; 0 if unknown. */
uint64_t mstat_procfs_start_ns(uint64_t boot_ns, uint64_t start_ticks);

#endif /* MSTAT_SHM_PROCFS_H */
