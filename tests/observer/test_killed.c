/* SPDX-License-Identifier: MIT */
/*
 * test_killed.c - what the tools tell of a killed process, from fixture
 * files: its memory cgroup as /proc/<pid>/cgroup names it (v1, v2, a
 * hybrid machine), whether its cgroup's count of OOM kills rose
 * (cgroup/v1: memory.oom_control; cgroup/v2: memory.events, and its
 * parent's when it is gone), and which
 * names are post-mortem files (killed.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "killed.h"
#include "procfs.h"

static void
memcg(void **state)
{
	char path[64];
	bool v2;

	(void)state;
	/* A hybrid machine: the memory controller on v1, the unified
	 * hierarchy mounted too; v1's path is the one. */
	assert_int_equal(mstat_memcg_parse("9:name=systemd:/\n0::/u\n"
					   "4:memory:/app.slice/svc\n3:cpuset:/\n",
					   path, sizeof(path), &v2), 0);
	assert_string_equal(path, "/app.slice/svc");
	assert_false(v2);
	/* Controllers bound together. */
	assert_int_equal(mstat_memcg_parse("5:cpu,memory,pids:/a\n", path,
					   sizeof(path), &v2), 0);
	assert_string_equal(path, "/a");
	assert_false(v2);
	/* Only v2. */
	assert_int_equal(mstat_memcg_parse("0::/app.slice/svc\n", path,
					   sizeof(path), &v2), 0);
	assert_string_equal(path, "/app.slice/svc");
	assert_true(v2);
	/* "memoryx" is not "memory"; no memory and no v2 line: none. */
	assert_int_equal(mstat_memcg_parse("4:memoryx:/a\n3:cpu:/b\n", path,
					   sizeof(path), &v2), -ENOENT);
	assert_int_equal(mstat_memcg_parse("", path, sizeof(path), &v2), -ENOENT);
	assert_int_equal(mstat_memcg_parse("0::/a-long-path\n", path, 8, &v2),
			 -ENAMETOOLONG);
}

static void
keyed(void **state)
{
	uint64_t n = 0;

	(void)state;
	assert_int_equal(mstat_keyed_count("oom 2\noom_kill 7\n", "oom_kill", &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(mstat_keyed_count("oom 2\noom_kill 7\n", "oom", &n), 0);
	assert_int_equal(n, 2);
	/* oom_group_kill is not oom_kill, nor oom_kill_disable. */
	assert_int_equal(mstat_keyed_count("oom_group_kill 1\noom_kill_disable 0\n",
					   "oom_kill", &n), -ENOENT);
	assert_int_equal(mstat_keyed_count("oom_kill x\n", "oom_kill", &n), -ENOENT);
}

/* A watch taken while the process lived, `kills` then. */
static enum mstat_oom
ended(const char *root, bool v2, const char *cg, uint64_t kills, char *why,
      size_t len)
{
	struct mstat_oom_watch w = { .have_cg = true, .v2 = v2, .cg_kills = kills };
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/tests/observer/cgroup/%s",
		 getenv("MSTAT_SOURCE_ROOT"), root);
	mstat_cgroup_root = dir;
	snprintf(w.cg, sizeof(w.cg), "%s", cg);
	return mstat_oom_watch_end(&w, why, len);
}

/* The same for a v2 cgroup gone since, whose parent's count was read. */
static enum mstat_oom
parent_ended(uint64_t parent_kills, char *why, size_t len)
{
	struct mstat_oom_watch w = { .have_cg = true, .v2 = true,
				     .have_parent = true,
				     .parent_kills = parent_kills };
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/tests/observer/cgroup/v2",
		 getenv("MSTAT_SOURCE_ROOT"));
	mstat_cgroup_root = dir;
	snprintf(w.cg, sizeof(w.cg), "/app.slice/gone");
	return mstat_oom_watch_end(&w, why, len);
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

static void
names(void **state)
{
	(void)state;
	assert_true(mstat_postmortem_name("api-4242-20261126T212000Z.pb.gz"));
	assert_true(mstat_postmortem_name("a-b-1-20261126T212000Z.pb.gz"));
	assert_false(mstat_postmortem_name("-4242-20261126T212000Z.pb.gz"));
	assert_false(mstat_postmortem_name("api--20261126T212000Z.pb.gz"));
	assert_false(mstat_postmortem_name("api-4242-20261126T2120000.pb.gz"));
	assert_false(mstat_postmortem_name("api-4242-20261126T212000Z.pb"));
	assert_false(mstat_postmortem_name("notes.txt"));
	assert_false(mstat_postmortem_name(".pb.gz"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memcg),
		cmocka_unit_test(keyed),
		cmocka_unit_test(oom),
		cmocka_unit_test(names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
