/* SPDX-License-Identifier: MIT */
/*
 * killed.h - what the tools keep of a process that was killed: how long
 * its segment stays (the grace, owner.h), whether the OOM killer did it,
 * and its post-mortem heap profile.
 *
 * OOM: once a process has died, /proc/<pid>/cgroup is gone, so its
 * memory cgroup and that cgroup's count of OOM kills (oom_kill in
 * memory.events on cgroup v2, in memory.oom_control on v1) are read
 * while it lives, and again once it is found killed: a count that rose
 * says the OOM killer killed a process of its cgroup while it lived, and
 * a SIGKILLed process there is taken for that one.  On v2, where the
 * cgroup is gone by then (a container's, removed with its last
 * process), its parent's count says it, for it counts its children's.  /proc/vmstat's
 * oom_kill, the machine's count, rising is a hint only: some process
 * somewhere was killed for memory meanwhile.  A process first seen dead
 * has no count to compare with: only the kernel's log can name it
 * (oomlog.h), and the readers ask it first.
 *
 * Post-mortem profiles (--postmortem-dir=DIR): a killed process's heap
 * profile, read from its segment, is written once to
 * DIR/NAME-PID-TIME.pb.gz (TIME: when it was found killed, UTC,
 * YYYYMMDDTHHMMSSZ), a private file (outfile.h: mode 0600, never
 * through a link); then the oldest such files go while they hold more
 * than the cap.  No other file of DIR is touched.
 */
#ifndef MSTAT_CORE_KILLED_H
#define MSTAT_CORE_KILLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/cli.h"
#include "shm/owner.h"
#include "shm/reader.h"

/* The grace the environment asks for (MSTAT_KILLED_GRACE,
 * MSTAT_KILLED_BYTES), the defaults where unset: 0, or -EINVAL with a
 * one-line reason. */
int mstat_killed_env(struct mstat_grace *g, char *err, size_t errlen);

/* The kept segments of killed processes a reader has read: not attached
 * again, removed once their grace is over, or the oldest while all of
 * them are over the byte bound (owner.h). */
struct mstat_kept_list {
	struct mstat_kept *v;
	size_t n, cap;
};

/* Remembers a segment kept in directory `dirfd` (`r`, as mstat_reap_*()
 * said), once. */
void mstat_killed_kept_add(struct mstat_kept_list *l, int dirfd, const char *name,
			   const struct mstat_reaped *r);

/* After a scan that marked the ones it saw (`seen`; the others were
 * removed by someone else, and are forgotten): removes those whose grace
 * `g` is over, then the oldest while they hold more than its bytes; one
 * note each (`note(arg, line)`, if not NULL).  A name that no longer
 * leads to the very file kept (something mounted over it, a link,
 * another file: mstat_owner_reap_kept()) is left alone and forgotten,
 * and said.  dirfd_of(darg, dev) is the directory of the /dev/shm whose
 * device is `dev`, as the scan has it open, or -1.  Clears the marks. */
void mstat_killed_kept_tick(struct mstat_kept_list *l,
			    int (*dirfd_of)(void *darg, uint64_t dev), void *darg,
			    const struct mstat_grace *g,
			    void (*note)(void *arg, const char *line), void *arg);

/* Only the byte bound, over every one remembered (mstat-top --gc), the
 * same way; how many it removed. */
size_t mstat_killed_kept_bound(struct mstat_kept_list *l, const struct mstat_grace *g,
			       void (*note)(void *arg, const char *line), void *arg);

/* A process's memory cgroup and its OOM kills, as read while it lived. */
struct mstat_oom_watch {
	bool have_cg;            /* its cgroup and count were read */
	bool v2;
	char cg[256];            /* its path in the hierarchy */
	uint64_t cg_kills;       /* the cgroup's oom_kill then */
	bool have_parent;        /* v2: its parent's, read then too: a
				  * container's cgroup goes with its last
				  * process, and v2 counts a child's kills
				  * in its parent's memory.events */
	uint64_t parent_kills;
	bool have_vm;
	uint64_t vm_kills;       /* /proc/vmstat's oom_kill then */
};

enum mstat_oom {
	MSTAT_OOM_NO,            /* nothing says so */
	MSTAT_OOM_HINT,          /* the machine's count rose: perhaps */
	MSTAT_OOM_CGROUP,        /* its cgroup's count rose */
	MSTAT_OOM_LOG,           /* the kernel's log names it (oomlog.h) */
};

/* Where the cgroup hierarchies are mounted: /sys/fs/cgroup, or a
 * directory of fixtures in the tests.  Read by mstat_oom_watch_*(). */
extern const char *mstat_cgroup_root;

/* While `pid` (of this pid namespace) lives: what to compare with. */
void mstat_killed_oom_watch_start(struct mstat_oom_watch *w, pid_t pid);

/* Once it is found killed: whether the OOM killer did it; `why` gets a
 * line saying what rose ("memory cgroup /x: oom_kill 0 -> 1"). */
enum mstat_oom mstat_killed_oom_watch_end(const struct mstat_oom_watch *w, char *why,
					  size_t len);

/*
 * The options of what is kept of killed processes, the same in
 * mstat-top and mstat-exporter: three lines of an option list
 * (core/cli.h), landing in members `grace` (a struct mstat_grace,
 * mstat_killed_env()'s), `dir` (const char *) and `bytes` (uint64_t) of
 * the struct `type`.
 */
#define MSTAT_KILLED_OPTIONS(type, grace, dir, bytes)                         \
	{ .name = "killed-grace", .arg = "SECONDS",                           \
	  MSTAT_CLI_NUMBER(type, grace.seconds, 0, MSTAT_KILLED_GRACE_MAX),   \
	  .want = "seconds",                                                  \
	  .dflt_text = "its MSTAT_KILLED_GRACE, or 300",                      \
	  .help = "keep a killed process's segment this long for later "     \
		  "readers; 0: remove it" },                                  \
	{ .name = "postmortem-dir", .arg = "DIR",                             \
	  MSTAT_CLI_PARSE(type, dir, mstat_killed_dir_option),                \
	  .want = "a directory this user may write",                         \
	  .help = "write each killed process's heap profile to "             \
		  "DIR/NAME-PID-TIME.pb.gz" },                                \
	{ .name = "postmortem-bytes", .arg = "N",                             \
	  MSTAT_CLI_NUMBER(type, bytes, 0, UINT64_MAX),                       \
	  .want = "a number of bytes", .dflt = "67108864",                    \
	  .help = "keep at most N bytes of them in DIR, the oldest go first" }

/*
 * Writes the profile of the killed process read by `r` (`name`, `pid`,
 * found killed at `end_ns`, CLOCK_REALTIME) into `dir`, with `comment`
 * (or NULL) as the profile's comment, then trims `dir`'s post-mortem
 * files to `max_bytes`, oldest first, never the one just written.  0, or
 * -errno with a one-line reason in `err`.  `path` gets the file's path.
 */
int mstat_killed_postmortem_write(const char *dir, uint64_t max_bytes,
				  struct mstat_reader *r, const char *name, pid_t pid,
				  uint64_t end_ns, const char *comment, char *path,
				  size_t pathlen, char *err, size_t errlen);

/* --postmortem-dir, as core/cli.h parses an option: `v` a directory
 * this process can write into, into `dst` (a const char *); 0, or -1
 * with the reason. */
int mstat_killed_dir_option(const char *v, void *dst, char *why, size_t len);

/* Whether `file` is the name of a post-mortem profile (NAME-PID-TIME.pb.gz). */
bool mstat_killed_postmortem_name(const char *file);

#endif /* MSTAT_CORE_KILLED_H */
