/* SPDX-License-Identifier: MIT */
/*
 * beneath.h - opening what another mount namespace holds, without being
 * led out of it.
 *
 * A container is an untrusted neighbour: its /dev/shm, and every name in
 * it, are its to make.  Through /proc/<pid>/root a reader sees the
 * container's files, but a plain open() there resolves an absolute
 * symbolic link against the reader's own root: a link planted as
 * /dev/shm/mstat.1.2 -> /etc/shadow opens the host's file.  So:
 *
 *   - the directory is opened with openat2(2) from the root's descriptor,
 *     RESOLVE_IN_ROOT (".." and absolute links stay inside that root),
 *     RESOLVE_NO_MAGICLINKS and RESOLVE_NO_SYMLINKS (no link at all);
 *   - a name in it is opened as an O_PATH descriptor, beneath the
 *     directory, through no link, crossing no mount (RESOLVE_NO_XDEV: a
 *     file bind-mounted over the name is refused, whatever it is), and
 *     must be a regular file on the directory's own file system; only
 *     then is that very file opened for reading and writing, through
 *     /proc/self/fd: nothing else (a FIFO, a device) is ever opened, and
 *     a name swapped meanwhile changes nothing.
 *
 * The removers (owner.h) open a name the same way, in any directory: a
 * file mounted over a segment's name is never locked, written or taken
 * for the segment; and a segment they kept for its grace is opened again
 * only while its name leads to the very file kept (its device and inode),
 * never to a file put under the name since.
 *
 * openat2 is Linux 5.6 and later; without it, another namespace's
 * /dev/shm is not opened at all (-ENOSYS), and a name in a directory is
 * opened with openat(O_PATH | O_NOFOLLOW), which for one component is as
 * strict, the file system checked by its device.
 *
 * Nothing here allocates or uses stdio.
 */
#ifndef MSTAT_SHM_BENEATH_H
#define MSTAT_SHM_BENEATH_H

#include <stddef.h>
#include <stdint.h>

/* The directory /dev/shm of the root open at `rootfd`
 * (mstat_procfs_root_open()), O_RDONLY | O_DIRECTORY: its descriptor, or
 * -errno: -ELOOP a symbolic link on the way, -ENOENT none, -ENOSYS no
 * openat2 in this kernel. */
int mstat_beneath_shm_dir(int rootfd);

/* Opens `name` in the directory open at `dirfd`, whose st_dev is
 * `dir_dev`, for reading and writing, as above: the descriptor, or
 * -errno with why, in one line, in `why`: -ELOOP a symbolic link,
 * -EINVAL not a regular file, -EXDEV on another file system (a mount),
 * or what open said. */
int mstat_beneath_open(int dirfd, uint64_t dir_dev, const char *name,
		       char *why, size_t whylen);

/* The same for a file found there before, on device `dev` with inode
 * `ino` (a killed process's segment kept for its grace, owner.h): only
 * if the name still leads to that very file; -ESTALE "is another file
 * than the one found there before" if it leads to another. */
int mstat_beneath_reopen(int dirfd, uint64_t dev, uint64_t ino,
			 const char *name, char *why, size_t whylen);

#endif /* MSTAT_SHM_BENEATH_H */
