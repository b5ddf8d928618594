/* SPDX-License-Identifier: MIT */
/*
 * oomlog.h - the kernel's own record of its OOM kills, read from its log
 * (/dev/kmsg): the one record that names a killed process by pid after
 * its death, whoever saw it alive.
 *
 * killed.h's counts need the process's memory cgroup, which /proc gives
 * only while it lives: a process that started and was killed between
 * two ticks is first seen dead, and they cannot tell.  The kernel logs
 * every kill it makes, as it makes it and before the process dies:
 *
 *   Memory cgroup out of memory: Killed process 4242 (api) total-vm:...
 *
 * (the pid in the initial pid namespace), most often after a summary
 * line naming the victim's memory cgroup ("oom-kill:...,task_memcg=/x,
 * task=api,pid=4242,uid=0"; rate-limited, so not always).  A reader
 * drains the log at the start of every tick, so the record of a process
 * it then finds killed has been read, and keeps the last
 * MSTAT_OOMLOG_KILLS kills.  Only lines the kernel wrote count: what
 * user space writes to /dev/kmsg bears another facility.  And only
 * those that begin as the OOM killer's do: other lines of the kernel's
 * carry text any user chooses (a segfault's line names the file its
 * address is in, and the process's comm).
 *
 * Reading the log takes CAP_SYSLOG where kernel.dmesg_restrict is 1
 * (Debian's default), and its pids are those of the initial pid
 * namespace: a reader without either reads nothing here, and knows only
 * what killed.h's counts tell.
 *
 * A pid is reused: a record is taken for a process only if the reader
 * read it at or after the tick that first found the process; or, read
 * from what the log held when the reader started (a process killed
 * before then, whose segment was kept), if it is not older than the
 * process by more than MSTAT_OOMLOG_SLACK_S (the log's clock does not
 * count a suspend, and drifts from the one process start times are
 * taken with).
 */
#ifndef MSTAT_CORE_OOMLOG_H
#define MSTAT_CORE_OOMLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MSTAT_OOMLOG_KILLS 64
#define MSTAT_OOMLOG_SLACK_S 600

struct mstat_oom_kill {
	pid_t pid;            /* in the initial pid namespace */
	uint64_t ts_us;       /* when, by the log's clock: since boot */
	uint64_t tick;        /* the reader's tick that read it */
	char comm[16];        /* the process's comm, as the kernel says */
	char constraint[64];  /* "Memory cgroup out of memory", ... */
	char memcg[256];      /* its memory cgroup, if the summary said */
};

struct mstat_oomlog {
	int fd;               /* the log, or -1: nothing is read */
	uint64_t first_tick;  /* the tick of the first read: the backlog */
	size_t n, next;       /* kills kept; where the next goes */
	struct mstat_oom_kill v[MSTAT_OOMLOG_KILLS];
	/* The last summary line, for the kill line after it. */
	pid_t summary_pid;
	char summary_memcg[256];
};

/* Opens /dev/kmsg if this process's pid namespace is the initial one and
 * it may read the log; else fd is -1, and nothing is ever found. */
void mstat_oomlog_open(struct mstat_oomlog *l);

/* The same, reading records from `fd` (one record a read, as /dev/kmsg
 * gives them; -1 none): for the tests. */
void mstat_oomlog_open_fd(struct mstat_oomlog *l, int fd);

void mstat_oomlog_close(struct mstat_oomlog *l);

/* Reads every record logged since the last read, in tick `tick` (ticks
 * count from 1 and increase). */
void mstat_oomlog_read(struct mstat_oomlog *l, uint64_t tick);

/*
 * The kill of the process `pid` (of the initial pid namespace), started
 * at `start_us` (since boot, by CLOCK_BOOTTIME) and first found in tick
 * `first_tick`, as the rules above take it; NULL if none.
 */
const struct mstat_oom_kill *mstat_oomlog_find(const struct mstat_oomlog *l,
					       pid_t pid, uint64_t start_us,
					       uint64_t first_tick);

/*
 * One record of the log as /dev/kmsg gives it ("PRI,SEQ,TS,FLAGS;TEXT\n"
 * and continuation lines), `len` bytes.  1: a kill, in *k (its tick 0);
 * 2: a summary line naming a victim's memory cgroup, in k->pid and
 * k->memcg; 0: anything else, or not the kernel's.
 */
int mstat_oomlog_parse(const char *rec, size_t len, struct mstat_oom_kill *k);

#endif /* MSTAT_CORE_OOMLOG_H */
