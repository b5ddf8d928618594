/* SPDX-License-Identifier: MIT */
/* owner.c - the owner lock and removing dead segments; see owner.h. */
#include "owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "name.h"

static struct flock
owner_byte(short type)
{
	struct flock l = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = MSTAT_OWNER_LOCK_BYTE,
		.l_len = 1,
	};
	return l;
}

int
mstat_owner_lock(int fd)
{
	struct flock l = owner_byte(F_RDLCK);

	return fcntl(fd, F_OFD_SETLK, &l) < 0 ? -errno : 0;
}

int
mstat_owner_alive(int fd)
{
	struct flock l = owner_byte(F_WRLCK);

	/* F_OFD_GETLK says F_UNLCK when our write lock could be placed: no
	 * one holds the byte, so the owner is gone.  A lock this very open
	 * file holds does not conflict with itself. */
	if (fcntl(fd, F_OFD_GETLK, &l) < 0)
		return -errno;
	return l.l_type != F_UNLCK;
}

/* Format 2 brought the owner lock on byte MSTAT_OWNER_LOCK_BYTE, and
 * every format since has kept it (layout.h).  Format 1 told liveness by
 * pid. */
#define OWNER_LOCK_SINCE_MAJOR 2

/*
 * Whether the segment at `fd`, `size` bytes, is judged by the owner lock,
 * and what its header says (`out`).  False if it is of a format whose
 * liveness is not ours to judge (format 1, one newer than this code), or
 * is cut too short to say which format it is.  Bytes that are no segment
 * of any format (a header someone wrote over, a file not yet written by
 * its creator) are judged by the lock alone: every creator since format
 * 2 locks its file before it gives it any size (docs/design.md,
 * "Removing dead segments").
 */
static bool
read_identity(int fd, off_t size, struct mstat_reaped *out)
{
	struct mstat_shm_header h;
	ssize_t n = pread(fd, &h, offsetof(struct mstat_shm_header, name), 0);
	uint32_t state = 0;

	memset(out, 0, sizeof(*out));
	out->cut = size > 0 && size < (off_t)MSTAT_PAGE;
	if (n < (ssize_t)sizeof(h.magic))
		return true; /* made, not yet sized: its creator died there;
			      * or cut before its magic */
	uint64_t magic = atomic_load_explicit(&h.magic, memory_order_relaxed);
	if (magic != MSTAT_SHM_MAGIC)
		return true; /* not published yet, and its creator is gone;
			      * or not a segment, and nobody holds it */
	if (n < (ssize_t)(offsetof(struct mstat_shm_header, version_major) +
			  sizeof(h.version_major)))
		return false; /* cut inside the magic's header: which format,
			       * and so whose rules, it no longer says */
	if (h.version_major < OWNER_LOCK_SINCE_MAJOR ||
	    h.version_major > MSTAT_SHM_VERSION_MAJOR)
		return false; /* liveness by another format's rules */
	/* An owner of any format since the lock's holds it for life,
	 * whatever the file's size now: judged by the lock.  Who it was is
	 * read only from a whole header of this format. */
	if (h.version_major != MSTAT_SHM_VERSION_MAJOR ||
	    n < (ssize_t)offsetof(struct mstat_shm_header, name) ||
	    size < (off_t)MSTAT_PAGE ||
	    pread(fd, &state, sizeof(state),
		  offsetof(struct mstat_shm_header, state)) != sizeof(state))
		return true;
	out->published = true;
	out->pid = h.pid;
	out->start_time = h.start_time;
	out->pid_ns = h.pid_ns;
	out->state = state;
	return true;
}

/* Holding the write lock on `fd`: unlinks `name` if it still leads there. */
static int
unlink_locked(int dirfd, const char *name, int fd)
{
	struct stat a, b;

	if (fstat(fd, &a) < 0)
		return -errno;
	/* Every unlink of a live name is made by a holder of the lock byte
	 * (its owner at exit, or a remover like this one), so the name cannot
	 * change between this check and the unlink. */
	if (fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? MSTAT_REAP_KEPT : -errno;
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return MSTAT_REAP_KEPT;
	if (unlinkat(dirfd, name, 0) < 0)
		return errno == ENOENT ? MSTAT_REAP_KEPT : -errno;
	return MSTAT_REAP_REMOVED;
}

static int
lock_dead(int fd)
{
	struct flock l = owner_byte(F_WRLCK);

	if (fcntl(fd, F_OFD_SETLK, &l) == 0)
		return 1;
	return errno == EAGAIN || errno == EACCES ? 0 : -errno;
}

static void
unlock(int fd)
{
	struct flock l = owner_byte(F_UNLCK);

	(void)fcntl(fd, F_OFD_SETLK, &l);
}

int
mstat_reap_fd(int dirfd, const char *name, int fd)
{
	int rc = lock_dead(fd);

	if (rc <= 0)
		return rc;
	rc = unlink_locked(dirfd, name, fd);
	unlock(fd);
	return rc;
}

int
mstat_reap_file(int dirfd, const char *name, int fd, uid_t uid,
		const struct mstat_reaped *succeeded, struct mstat_reaped *out)
{
	struct mstat_reaped id;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != uid)
		return MSTAT_REAP_KEPT;
	rc = lock_dead(fd);
	if (rc <= 0)
		return rc;
	if (!read_identity(fd, st.st_size, &id)) {
		rc = MSTAT_REAP_KEPT;
		goto unlock;
	}
	if (succeeded && id.published && id.pid == succeeded->pid &&
	    id.start_time == succeeded->start_time &&
	    id.pid_ns == succeeded->pid_ns) {
		uint32_t execed = MSTAT_STATE_EXECED;
		(void)!pwrite(fd, &execed, sizeof(execed),
			      offsetof(struct mstat_shm_header, state));
		id.state = execed;
	}
	if (out)
		*out = id;
	rc = unlink_locked(dirfd, name, fd);
unlock:
	unlock(fd);
	return rc;
}

int
mstat_reap_at(int dirfd, const char *name, uid_t uid,
	      const struct mstat_reaped *succeeded, struct mstat_reaped *out)
{
	int fd, rc;

	fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == EACCES || errno == ELOOP
			       ? MSTAT_REAP_KEPT : -errno;
	rc = mstat_reap_file(dirfd, name, fd, uid, succeeded, out);
	close(fd);
	return rc;
}

unsigned
mstat_reap_some(uid_t uid, unsigned probes)
{
	/* On the stack: this runs in a starting process, maybe inside malloc.
	 * About a hundred names fit. */
	char buf[4096];
	unsigned removed = 0;
	int dirfd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return 0;
	ssize_t len = getdents64(dirfd, buf, sizeof(buf));
	for (ssize_t off = 0; probes && off < len;) {
		const struct dirent64 *de = (const struct dirent64 *)(buf + off);
		pid_t pid;
		uint64_t start;

		off += de->d_reclen;
		if ((de->d_type != DT_REG && de->d_type != DT_UNKNOWN) ||
		    mstat_shm_parse_name(de->d_name, &pid, &start) < 0)
			continue;
		/* A pid that exists here is likely the owner, alive: left to
		 * observers, which judge every segment by its lock.  One that
		 * does not is worth a look. */
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		probes--;
		if (mstat_reap_at(dirfd, de->d_name, uid, NULL, NULL) ==
		    MSTAT_REAP_REMOVED)
			removed++;
	}
	close(dirfd);
	return removed;
}
