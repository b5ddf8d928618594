/* SPDX-License-Identifier: MIT */
/* beneath.c - opening inside another mount namespace; see beneath.h. */
#include "shm/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm/procfs.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* openat2(2), which glibc does not wrap: the descriptor or -errno. */
static int
openat2_(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = resolve,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN); /* a rename raced a ".." */
	return fd < 0 ? -errno : (int)fd;
}

int
mstat_beneath_shm_dir(int rootfd)
{
	return openat2_(rootfd, "dev/shm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
			RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
				RESOLVE_NO_SYMLINKS);
}

/* Copies `msg` into why. */
static int
say(int rc, char *why, size_t len, const char *msg)
{
	size_t n = strlen(msg);

	if (why && len) {
		if (n >= len)
			n = len - 1;
		memcpy(why, msg, n);
		why[n] = '\0';
	}
	return rc;
}

/* mstat_beneath_open(), and, if `ino` is not NULL, only the file of
 * that inode. */
static int
open_file(int dirfd, uint64_t dev, const uint64_t *ino, const char *name,
	  char *why, size_t whylen)
{
	struct stat st;
	int fd, rc;

	/* O_PATH: nothing is opened yet, whatever the name is (a FIFO
	 * opened for reading waits for a writer; a device's open may do
	 * what the device does). */
	fd = openat2_(dirfd, name, O_PATH | O_NOFOLLOW,
		      RESOLVE_BENEATH | RESOLVE_NO_XDEV |
			      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS);
	if (fd == -ENOSYS) { /* before Linux 5.6: one component, no link */
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	if (fd == -EXDEV)
		return say(-EXDEV, why, whylen,
			   "is a mount point: something is mounted over it");
	if (fd < 0)
		return say(fd, why, whylen, strerror(-fd));
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return say(rc, why, whylen, strerror(-rc));
	}
	if (S_ISLNK(st.st_mode))
		rc = say(-ELOOP, why, whylen, "is a symbolic link");
	else if (!S_ISREG(st.st_mode))
		rc = say(-EINVAL, why, whylen, "is not a regular file");
	else if ((uint64_t)st.st_dev != dev)
		rc = say(-EXDEV, why, whylen, "is on another file system than "
			 "its directory (a mount)");
	else if (ino && (uint64_t)st.st_ino != *ino)
		rc = say(-ESTALE, why, whylen, "is another file than the one "
			 "found there before");
	else
		/* The file just checked, not whatever the name leads to
		 * by now. */
		rc = mstat_procfs_reopen(fd, O_RDWR | O_NOCTTY);
	if (rc < 0 && rc != -ELOOP && rc != -EINVAL && rc != -EXDEV &&
	    rc != -ESTALE)
		say(rc, why, whylen, strerror(-rc));
	close(fd);
	return rc;
}

int
mstat_beneath_open(int dirfd, uint64_t dir_dev, const char *name, char *why,
		   size_t whylen)
{
	return open_file(dirfd, dir_dev, NULL, name, why, whylen);
}

int
mstat_beneath_reopen(int dirfd, uint64_t dev, uint64_t ino, const char *name,
		     char *why, size_t whylen)
{
	return open_file(dirfd, dev, &ino, name, why, whylen);
}
