/* SPDX-License-Identifier: MIT */
/*
 * test_kept.c - a killed process's segment kept for its grace is opened
 * again only while its name leads to the very file kept.
 *
 * A remover keeps a segment (mstat_owner_reap_at(): its owner is gone,
 * its grace not over), then the name is made to lead elsewhere, as a
 * container may do in its /dev/shm: another file renamed over it, a
 * hard link to another file, a symbolic link.  The other file is a
 * whole segment of a killed process under that very name, nobody has
 * found killed yet: a remover that took it for the one kept would write
 * when into it, and remove it once the grace is over.  Neither the
 * grace's nor the byte bound's look at the name touches it: its bytes
 * stay, it stays, and why is said.  The file kept, still under its name,
 * is removed by the byte bound.  (A file mounted over the name:
 * kept.py, which needs a mount namespace.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/layout.h"
#include "shm/name.h"
#include "shm/owner.h"

#define PID 999999
#define START 4242u
#define GRACE 300u

static char dir[] = "/tmp/mstat-test-kept-XXXXXX";
static char name[MSTAT_SHM_NAME_MAX];

/* A whole segment of a killed process, `name`'s, at `path` in `dirfd`
 * (nobody holds its owner lock, nobody has found it killed). */
static void
plant(int dirfd, const char *path)
{
	struct mstat_shm_header h;
	int fd = openat(dirfd, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	memset(&h, 0, sizeof(h));
	mstat_header_geometry(&h, MSTAT_CLASS_COUNT, 1, MSTAT_STACKS,
			      MSTAT_FRAMES, MSTAT_MODULES);
	h.pid = PID;
	h.start_time = START;
	h.uid = (uint32_t)geteuid();
	h.created_ns = 1;
	atomic_store(&h.state, MSTAT_STATE_RUNNING);
	atomic_store(&h.magic, MSTAT_SHM_MAGIC);
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(ftruncate(fd, 4 * MSTAT_PAGE), 0);
	close(fd);
}

static void
read_all(int dirfd, const char *path, unsigned char *buf, size_t len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

/* What a test left in the directory, failed or not, goes. */
static int
opendir_clean(void)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(dirfd >= 0);
	unlinkat(dirfd, name, 0);
	unlinkat(dirfd, "other", 0);
	return dirfd;
}

/* The byte bound's account of what it did. */
struct done {
	unsigned calls;
	int rc;
	char why[96];
};

static void
done(void *arg, const struct mstat_kept *k, int rc, const char *why)
{
	struct done *d = arg;

	assert_string_equal(k->name, name);
	d->calls++;
	d->rc = rc;
	snprintf(d->why, sizeof(d->why), "%s", why);
}

/* Keeps the segment planted under `name`: what a remover remembers. */
static void
keep(int dirfd, struct mstat_kept *k)
{
	struct mstat_reaped r;

	plant(dirfd, name);
	assert_int_equal(mstat_owner_reap_at(dirfd, name, geteuid(), NULL, GRACE,
					     &r), MSTAT_REAP_KILLED);
	assert_true(r.killed_ns > 0);
	mstat_owner_kept_set(k, dirfd, name, &r);
}

enum how { RENAMED, LINKED, SYMLINK };

static void
replaced(enum how how, const char *why)
{
	unsigned char before[4 * MSTAT_PAGE], after[4 * MSTAT_PAGE];
	struct mstat_kept k;
	struct mstat_reaped r;
	struct done d = { 0 };
	char said[96];
	int dirfd = opendir_clean();

	keep(dirfd, &k);
	plant(dirfd, "other");
	read_all(dirfd, "other", before, sizeof(before));
	switch (how) {
	case RENAMED:
		assert_int_equal(renameat(dirfd, "other", dirfd, name), 0);
		break;
	case LINKED:
		assert_int_equal(unlinkat(dirfd, name, 0), 0);
		assert_int_equal(linkat(dirfd, "other", dirfd, name, 0), 0);
		break;
	case SYMLINK:
		assert_int_equal(unlinkat(dirfd, name, 0), 0);
		assert_int_equal(symlinkat("other", dirfd, name), 0);
		break;
	}
	const char *other = how == RENAMED ? name : "other";

	/* The grace's look, then the byte bound's (grace 0). */
	assert_int_equal(mstat_owner_reap_kept(&k, geteuid(), GRACE, &r, said,
					       sizeof(said)), MSTAT_REAP_LEFT);
	assert_int_equal(r.found, MSTAT_FOUND_REPLACED);
	assert_string_equal(said, why);
	assert_int_equal(mstat_owner_kept_evict(geteuid(), &k, 1, 0, done, &d), 1);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.rc, MSTAT_REAP_LEFT);
	assert_string_equal(d.why, why);
	/* The other file: there, and as it was. */
	read_all(dirfd, other, after, sizeof(after));
	assert_memory_equal(before, after, sizeof(before));
	assert_int_equal(faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW), 0);
	close(dirfd);
}

static void
test_renamed(void **state)
{
	(void)state;
	replaced(RENAMED, "is another file than the one found there before");
}

static void
test_linked(void **state)
{
	(void)state;
	replaced(LINKED, "is another file than the one found there before");
}

static void
test_symlink(void **state)
{
	(void)state;
	replaced(SYMLINK, "is a symbolic link");
}

/* The very file kept: kept within its grace, removed by the byte bound;
 * a name gone is nothing to do. */
static void
test_same(void **state)
{
	struct mstat_kept k;
	struct mstat_reaped r;
	struct done d = { 0 };
	int dirfd = opendir_clean();

	(void)state;
	keep(dirfd, &k);
	assert_int_equal(mstat_owner_reap_kept(&k, geteuid(), GRACE, &r, NULL, 0),
			 MSTAT_REAP_KILLED);
	assert_int_equal(r.ino, k.ino);
	assert_int_equal(r.killed_ns, k.killed_ns);
	assert_int_equal(mstat_owner_kept_evict(geteuid(), &k, 1, k.bytes, done, &d), 0);
	assert_int_equal(d.calls, 0);
	assert_int_equal(mstat_owner_kept_evict(geteuid(), &k, 1, 0, done, &d), 1);
	assert_int_equal(d.rc, MSTAT_REAP_REMOVED);
	assert_int_equal(faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(mstat_owner_reap_kept(&k, geteuid(), GRACE, &r, NULL, 0),
			 MSTAT_REAP_KEPT);
	close(dirfd);
}

static int
setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	return mstat_shm_name(name, sizeof(name), PID, START, 0) > 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	close(opendir_clean());
	return rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_linked),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_same),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
