/* SPDX-License-Identifier: MIT */
/*
 * test_killed.c - what the tools tell of a killed process, from fixture
 * files: its memory cgroup as /proc/<pid>/cgroup names it (v1, v2, a
 * hybrid machine), whether its cgroup's count of OOM kills rose
 * (cgroup/v1: memory.oom_control; cgroup/v2: memory.events, and its
 * parent's when it is gone), and which
 * names are post-mortem files (killed.h); the kernel's log of OOM kills
 * as /dev/kmsg gives it, and which kill is taken for which process
 * (oomlog.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/killed.h"
#include "core/oomlog.h"
#include "shm/procfs.h"

static void
memcg(void **state)
{
	char path[64];
	bool v2;

	(void)state;
	/* A hybrid machine: the memory controller on v1, the unified
	 * hierarchy mounted too; v1's path is the one. */
	assert_int_equal(mstat_procfs_memcg_parse("9:name=systemd:/\n0::/u\n"
						  "4:memory:/app.slice/svc\n3:cpuset:/\n",
						  path, sizeof(path), &v2), 0);
	assert_string_equal(path, "/app.slice/svc");
	assert_false(v2);
	/* Controllers bound together. */
	assert_int_equal(mstat_procfs_memcg_parse("5:cpu,memory,pids:/a\n", path,
						  sizeof(path), &v2), 0);
	assert_string_equal(path, "/a");
	assert_false(v2);
	/* Only v2. */
	assert_int_equal(mstat_procfs_memcg_parse("0::/app.slice/svc\n", path,
						  sizeof(path), &v2), 0);
	assert_string_equal(path, "/app.slice/svc");
	assert_true(v2);
	/* "memoryx" is not "memory"; no memory and no v2 line: none. */
	assert_int_equal(mstat_procfs_memcg_parse("4:memoryx:/a\n3:cpu:/b\n", path,
						  sizeof(path), &v2), -ENOENT);
	assert_int_equal(mstat_procfs_memcg_parse("", path, sizeof(path), &v2), -ENOENT);
	assert_int_equal(mstat_procfs_memcg_parse("0::/a-long-path\n", path, 8, &v2),
			 -ENAMETOOLONG);
}

static void
keyed(void **state)
{
	uint64_t n = 0;

	(void)state;
	assert_int_equal(mstat_procfs_keyed_count("oom 2\noom_kill 7\n", "oom_kill", &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(mstat_procfs_keyed_count("oom 2\noom_kill 7\n", "oom", &n), 0);
	assert_int_equal(n, 2);
	/* oom_group_kill is not oom_kill, nor oom_kill_disable. */
	assert_int_equal(mstat_procfs_keyed_count("oom_group_kill 1\noom_kill_disable 0\n",
						  "oom_kill", &n), -ENOENT);
	assert_int_equal(mstat_procfs_keyed_count("oom_kill x\n", "oom_kill", &n), -ENOENT);
}

/* A watch taken while the process lived, `kills` then. */
static enum mstat_oom
ended(const char *root, bool v2, const char *cg, uint64_t kills, char *why,
      size_t len)
{
	struct mstat_oom_watch w = { .have_cg = true, .v2 = v2, .cg_kills = kills };
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/tests/top/cgroup/%s",
		 getenv("MSTAT_SOURCE_ROOT"), root);
	mstat_cgroup_root = dir;
	snprintf(w.cg, sizeof(w.cg), "%s", cg);
	return mstat_killed_oom_watch_end(&w, why, len);
}

/* The same for a v2 cgroup gone since, whose parent's count was read. */
static enum mstat_oom
parent_ended(uint64_t parent_kills, char *why, size_t len)
{
	struct mstat_oom_watch w = { .have_cg = true, .v2 = true,
				     .have_parent = true,
				     .parent_kills = parent_kills };
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/tests/top/cgroup/v2",
		 getenv("MSTAT_SOURCE_ROOT"));
	mstat_cgroup_root = dir;
	snprintf(w.cg, sizeof(w.cg), "/app.slice/gone");
	return mstat_killed_oom_watch_end(&w, why, len);
}

static void
oom(void **state)
{
	char why[320];

	(void)state;
	/* v1: oom_kill 3 in the fixture. */
	assert_int_equal(ended("v1", false, "/app.slice/svc", 2, why, sizeof(why)),
			 MSTAT_OOM_CGROUP);
	assert_string_equal(why, "killed by the OOM killer: memory cgroup "
			    "/app.slice/svc (v1) oom_kill 2 -> 3");
	assert_int_equal(ended("v1", false, "/app.slice/svc", 3, why, sizeof(why)),
			 MSTAT_OOM_NO);
	assert_string_equal(why, "");
	/* v2: oom_kill 2 in memory.events. */
	assert_int_equal(ended("v2", true, "/app.slice/svc", 0, why, sizeof(why)),
			 MSTAT_OOM_CGROUP);
	assert_string_equal(why, "killed by the OOM killer: memory cgroup "
			    "/app.slice/svc (v2) oom_kill 0 -> 2");
	assert_int_equal(ended("v2", true, "/app.slice/svc", 2, why, sizeof(why)),
			 MSTAT_OOM_NO);
	/* A cgroup removed since: nothing known; on v2, its parent's count
	 * (oom_kill 5 in the fixture), if it was read. */
	assert_int_equal(ended("v2", true, "/app.slice/gone", 0, why, sizeof(why)),
			 MSTAT_OOM_NO);
	assert_int_equal(parent_ended(4, why, sizeof(why)), MSTAT_OOM_CGROUP);
	assert_string_equal(why, "killed by the OOM killer: memory cgroup "
			    "/app.slice/gone (v2, gone; its parent's) oom_kill "
			    "4 -> 5");
	assert_int_equal(parent_ended(5, why, sizeof(why)), MSTAT_OOM_NO);
	/* The hierarchy of the other version is not read. */
	assert_int_equal(ended("v2", false, "/app.slice/svc", 0, why, sizeof(why)),
			 MSTAT_OOM_NO);
}

/* Records as /dev/kmsg gives them, from a kernel's OOM kills. */
#define SUMMARY "6,1052,584443372,-;oom-kill:constraint=CONSTRAINT_MEMCG," \
	"nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/box," \
	"task_memcg=/box/app,task=api,pid=4242,uid=0\n"
#define KILL(pid, comm) "3,1053,584443385,-;Memory cgroup out of memory: " \
	"Killed process " pid " (" comm ") total-vm:399984kB, anon-rss:" \
	"261376kB, file-rss:1848kB, shmem-rss:0kB, UID:0 pgtables:588kB " \
	"oom_score_adj:0\n SUBSYSTEM=memory\n"

static int
parse(const char *rec, struct mstat_oom_kill *k)
{
	return mstat_oomlog_parse(rec, strlen(rec), k);
}

static void
oomlog_lines(void **state)
{
	struct mstat_oom_kill k;

	(void)state;
	assert_int_equal(parse(SUMMARY, &k), 2);
	assert_int_equal(k.pid, 4242);
	assert_string_equal(k.memcg, "/box/app");
	assert_int_equal(parse(KILL("4242", "api"), &k), 1);
	assert_int_equal(k.pid, 4242);
	assert_int_equal(k.ts_us, 584443385);
	assert_string_equal(k.comm, "api");
	assert_string_equal(k.constraint, "Memory cgroup out of memory");
	/* A comm of 15 bytes, with ") " in it. */
	assert_int_equal(parse(KILL("7", "a) b(c) d e f g"), &k), 1);
	assert_string_equal(k.comm, "a) b(c) d e f g");
	/* The machine's OOM killer, and an old kernel's form. */
	assert_int_equal(parse("3,9,5,-;Out of memory: Killed process 12 (x), "
			       "UID 0, total-vm:1kB\n", &k), 1);
	assert_int_equal(k.pid, 12);
	assert_string_equal(k.constraint, "Out of memory");
	assert_string_equal(k.comm, "x");
	assert_int_equal(parse("3,9,5,-;Out of memory (oom_kill_allocating_"
			       "task): Killed process 13 (y) total-vm:1kB", &k), 1);
	assert_string_equal(k.constraint,
			    "Out of memory (oom_kill_allocating_task)");
	/* What user space writes to the log bears its facility (LOG_USER:
	 * priority 8 and up), whatever it says. */
	assert_int_equal(parse("11,9,5,-;Memory cgroup out of memory: Killed "
			       "process 4242 (api) total-vm:1kB", &k), 0);
	assert_int_equal(parse("14,9,5,-;oom-kill:task_memcg=/x,pid=1", &k), 0);
	/* Not kills: the reaper, a pid of 0, a missing comm, no prefix. */
	assert_int_equal(parse("6,9,5,-;oom_reaper: reaped process 4242 (api), "
			       "now anon-rss:0kB", &k), 0);
	assert_int_equal(parse("3,9,5,-;Out of memory: Killed process 0 (x) t",
			       &k), 0);
	assert_int_equal(parse("3,9,5,-;Out of memory: Killed process 5 x", &k),
			 0);
	assert_int_equal(parse("3,9,5,-;Killed process 5 (x) total-vm:1kB", &k),
			 0);
	assert_int_equal(parse("Out of memory: Killed process 5 (x) t", &k), 0);
	assert_int_equal(parse("3,9,5,-;oom-kill:constraint=X,pid=5", &k), 0);
	/* The kernel's lines that carry what any user chooses: a segfault
	 * names the file its address is in, and the comm of the process
	 * (show_unhandled_signals, on by default), a file named so by a
	 * program that jumps into its mapping.  Neither is a kill, nor a
	 * summary. */
	assert_int_equal(parse("6,9662,10056528103,-;jump[4096]: segfault at "
			       "7fd3200d9000 ip 00007fd3200d9000 sp 00007ffd53d0b7c8 "
			       "error 15 in x: Out of memory: Killed process 4242 "
			       "(api) y[0,7fd3200d9000+1000] likely on CPU 0", &k), 0);
	assert_int_equal(parse("6,9,5,-;Out of memory[4096]: segfault at 0 ip 0 "
			       "sp 0 error 4 in x: Killed process 4242 (api) y"
			       "[0,5000+1000]", &k), 0);
	assert_int_equal(parse("6,9,5,-;oom-kill:[4096]: segfault at 0 ip 0 sp "
			       "0 error 4 in ,task_memcg=/x,task=api,pid=4242,"
			       "uid=0,[0,5000+1000]", &k), 0);
	/* A comm with commas in a summary: the kernel's fields stand. */
	assert_int_equal(parse("6,9,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,"
			       "task_memcg=/box/app,task=x,task_memcg=/y,pid=4242,"
			       "uid=0", &k), 2);
	assert_string_equal(k.memcg, "/box/app");
	assert_int_equal(k.pid, 4242);
}

/* Records sent one a read, as /dev/kmsg gives them. */
static void
send_records(int fd, const char *const *recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(send(fd, recs[i], strlen(recs[i]), 0),
				 (ssize_t)strlen(recs[i]));
}

static void
oomlog_find(void **state)
{
	struct mstat_oomlog l;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0,
				    sv), 0);
	mstat_oomlog_open_fd(&l, sv[0]);
	/* What the log held when the reader started: pid 4242's kill at
	 * 584.4 s, after its summary; pid 99's at 5 s; a user's line. */
	const char *backlog[] = {
		"3,1,5000000,-;Out of memory: Killed process 99 (old) t\n",
		"12,2,6000000,-;Out of memory: Killed process 4242 (fake) t\n",
		SUMMARY, KILL("4242", "api"),
	};
	send_records(sv[1], backlog, 4);
	mstat_oomlog_read(&l, 1);
	const struct mstat_oom_kill *k = mstat_oomlog_find(&l, 4242, 584000000, 1);
	assert_non_null(k);
	assert_string_equal(k->comm, "api");
	assert_string_equal(k->memcg, "/box/app");
	/* From the backlog, a kill is taken for a process that started
	 * before it (or not long after, by the log's clock)... */
	assert_non_null(mstat_oomlog_find(&l, 99, 5000000, 1));
	assert_non_null(mstat_oomlog_find(&l, 99, 5000000 +
					  MSTAT_OOMLOG_SLACK_S * 1000000ull, 1));
	/* ... never for one that started long after: its pid was reused. */
	assert_null(mstat_oomlog_find(&l, 99, 5000000 +
				      (MSTAT_OOMLOG_SLACK_S + 60) * 1000000ull, 1));
	assert_null(mstat_oomlog_find(&l, 4243, 0, 1));

	/* Read later, a kill is taken for a process found in that tick or
	 * before, not for one found after it was read (its pid reused). */
	const char *later[] = { KILL("7", "svc") };
	send_records(sv[1], later, 1);
	mstat_oomlog_read(&l, 5);
	assert_non_null(mstat_oomlog_find(&l, 7, 0, 5));
	assert_non_null(mstat_oomlog_find(&l, 7, 0, 2));
	assert_null(mstat_oomlog_find(&l, 7, 0, 6));
	/* No summary before it: no memory cgroup. */
	assert_string_equal(mstat_oomlog_find(&l, 7, 0, 5)->memcg, "");
	/* The newest of a pid's kills is the one taken. */
	const char *again[] = { KILL("7", "svc2") };
	send_records(sv[1], again, 1);
	mstat_oomlog_read(&l, 9);
	assert_string_equal(mstat_oomlog_find(&l, 7, 0, 9)->comm, "svc2");

	/* Only the last MSTAT_OOMLOG_KILLS are kept. */
	for (int i = 0; i < MSTAT_OOMLOG_KILLS; i++) {
		char rec[128];
		const char *p = rec;
		snprintf(rec, sizeof(rec), "3,9,5,-;Out of memory: Killed "
			 "process %d (x) t\n", 1000 + i);
		send_records(sv[1], &p, 1);
	}
	mstat_oomlog_read(&l, 10);
	assert_null(mstat_oomlog_find(&l, 7, 0, 9));
	assert_non_null(mstat_oomlog_find(&l, 1000, 0, 10));
	assert_non_null(mstat_oomlog_find(&l, 1000 + MSTAT_OOMLOG_KILLS - 1, 0,
					  10));
	mstat_oomlog_close(&l);
	close(sv[1]);

	/* No log (not the initial pid namespace, no CAP_SYSLOG): nothing. */
	mstat_oomlog_open_fd(&l, -1);
	mstat_oomlog_read(&l, 1);
	assert_null(mstat_oomlog_find(&l, 4242, 0, 1));
}

static void
names(void **state)
{
	(void)state;
	assert_true(mstat_killed_postmortem_name("api-4242-20261126T212000Z.pb.gz"));
	assert_true(mstat_killed_postmortem_name("a-b-1-20261126T212000Z.pb.gz"));
	assert_false(mstat_killed_postmortem_name("-4242-20261126T212000Z.pb.gz"));
	assert_false(mstat_killed_postmortem_name("api--20261126T212000Z.pb.gz"));
	assert_false(mstat_killed_postmortem_name("api-4242-20261126T2120000.pb.gz"));
	assert_false(mstat_killed_postmortem_name("api-4242-20261126T212000Z.pb"));
	assert_false(mstat_killed_postmortem_name("notes.txt"));
	assert_false(mstat_killed_postmortem_name(".pb.gz"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memcg),
		cmocka_unit_test(keyed),
		cmocka_unit_test(oom),
		cmocka_unit_test(oomlog_lines),
		cmocka_unit_test(oomlog_find),
		cmocka_unit_test(names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
