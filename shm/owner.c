/* SPDX-License-Identifier: MIT */
/* owner.c - the owner lock and removing dead segments; see owner.h. */
#include "shm/owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/beneath.h"
#include "shm/clock.h"
#include "shm/layout.h"
#include "shm/name.h"

int
mstat_owner_grace_parse(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (max - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

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

/* What the file `st` is, before its bytes are read: NOT_FILE,
 * OTHER_USER or MODE, or SEGMENT if it may be one of user `uid`'s. */
static enum mstat_found
judge_stat(const struct stat *st, uid_t uid, struct mstat_reaped *out)
{
	memset(out, 0, sizeof(*out));
	out->size = (uint64_t)st->st_size;
	out->mode = st->st_mode & 07777;
	out->uid = st->st_uid;
	out->cut = st->st_size > 0 && st->st_size < (off_t)MSTAT_PAGE;
	if (!S_ISREG(st->st_mode))
		return out->found = MSTAT_FOUND_NOT_FILE;
	if (st->st_uid != uid)
		return out->found = MSTAT_FOUND_OTHER_USER;
	if (out->mode != 0600)
		return out->found = MSTAT_FOUND_MODE;
	return MSTAT_FOUND_SEGMENT;
}

/*
 * What the bytes of the file at `fd` (`st`, named `name`) are, into `out`
 * (judge_stat() filled it): true if it is a segment the library made,
 * judged by the owner lock, whatever its size now; and, from a whole
 * header of this format, who made it.  Made by the library: its magic,
 * then a format since the lock's.  Every creator since that format locks
 * its file before it gives it any size, and this one names it only once
 * published (lib/segment.h), so a file without the magic is no segment
 * the library made, or an older library's that no lock can be judged by.
 * False, left (out->found says why): no magic (empty, cut before it, or
 * anything else), a format whose liveness is not told by the lock (1,
 * newer than this code, cut before its version), or a whole header that
 * names another process than `name`.
 */
static bool
read_identity(int fd, const struct stat *st, const char *name,
	      struct mstat_reaped *out)
{
	struct mstat_shm_header h;
	ssize_t n = pread(fd, &h, offsetof(struct mstat_shm_header, name), 0);
	uint32_t state = 0;
	pid_t pid;
	uint64_t start;

	if (st->st_size == 0) {
		out->found = MSTAT_FOUND_EMPTY;
		return false;
	}
	if (n < (ssize_t)sizeof(h.magic) ||
	    atomic_load_explicit(&h.magic, memory_order_relaxed) != MSTAT_SHM_MAGIC) {
		out->found = MSTAT_FOUND_NO_MAGIC;
		return false;
	}
	out->found = MSTAT_FOUND_FORMAT;
	if (n < (ssize_t)(offsetof(struct mstat_shm_header, version_major) +
			  sizeof(h.version_major)))
		return false; /* cut inside the magic's header: which format,
			       * and so whose rules, it no longer says */
	out->version_major = h.version_major;
	if (h.version_major < OWNER_LOCK_SINCE_MAJOR ||
	    h.version_major > MSTAT_SHM_VERSION_MAJOR)
		return false; /* liveness by another format's rules */
	out->found = MSTAT_FOUND_SEGMENT;
	/* An owner of any format since the lock's holds it for life,
	 * whatever the file's size now: judged by the lock.  Who it was is
	 * read only from a whole header of this format. */
	if (h.version_major != MSTAT_SHM_VERSION_MAJOR ||
	    n < (ssize_t)offsetof(struct mstat_shm_header, name) ||
	    st->st_size < (off_t)MSTAT_PAGE ||
	    pread(fd, &state, sizeof(state),
		  offsetof(struct mstat_shm_header, state)) != sizeof(state))
		return true;
	out->pid = h.pid;
	out->start_time = h.start_time;
	if (mstat_shm_parse_name(name, &pid, &start) == 0 &&
	    (pid != h.pid || start != h.start_time)) {
		out->found = MSTAT_FOUND_MISNAMED;
		return false;
	}
	out->published = true;
	out->pid_ns = h.pid_ns;
	out->created_ns = h.created_ns;
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

#define NS 1000000000u

/*
 * Holding the write lock on `fd`, whose header says `id` (a whole
 * segment of this format whose owner died without exiting): when it was
 * first found killed, written now if nobody has; whether the grace of
 * `grace_s` seconds since then is over.  A time written ahead of the
 * clock by more than the grace (the clock was set back) is written
 * again: the grace stays bounded.
 */
static bool
grace_over(int fd, struct mstat_reaped *id, const struct stat *st,
	   uint64_t grace_s)
{
	const off_t at = offsetof(struct mstat_shm_header, killed_s);
	uint64_t now = mstat_clock_wall_ns();
	uint32_t s = 0;

	id->bytes = (uint64_t)st->st_blocks * 512u;
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	if (grace_s > MSTAT_KILLED_GRACE_MAX)
		grace_s = MSTAT_KILLED_GRACE_MAX;
	if (pread(fd, &s, sizeof(s), at) != sizeof(s))
		return true;
	uint64_t when = s ? id->created_ns + (uint64_t)(s - 1) * NS : 0;
	id->killed_ns = when; /* what an earlier remover found, or 0 */
	if (grace_s == 0)
		return true;
	if (s == 0 || when > now + grace_s * NS) {
		uint64_t secs = now > id->created_ns ? (now - id->created_ns) / NS : 0;
		s = secs >= UINT32_MAX ? UINT32_MAX : (uint32_t)secs + 1;
		/* Relaxed, like every store of the word: see layout.h. */
		if (pwrite(fd, &s, sizeof(s), at) != sizeof(s))
			return true; /* it cannot be kept track of */
		when = id->created_ns + (uint64_t)(s - 1) * NS;
	}
	id->killed_ns = when;
	return now >= when && now - when >= grace_s * NS;
}

/* Whether a segment whose owner is gone was killed: a whole segment of
 * this format, still running (an exit unlinks the name before anything
 * else; a process killed inside its exit has no name left to keep). */
static bool
killed(const struct mstat_reaped *id)
{
	return id->published && id->state == MSTAT_STATE_RUNNING;
}

/* Holding the write lock on `fd` (`st`, read as `id`): unlinks `name`
 * unless it is a killed process's within the grace. */
static int
reap_locked(int dirfd, const char *name, int fd, const struct stat *st,
	    struct mstat_reaped *id, uint64_t grace_s)
{
	if (killed(id) && !grace_over(fd, id, st, grace_s)) {
		struct stat b;
		/* Only if the name still leads here, as for an unlink. */
		if (fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
		    b.st_ino != st->st_ino || b.st_dev != st->st_dev)
			return MSTAT_REAP_KEPT;
		return MSTAT_REAP_KILLED;
	}
	return unlink_locked(dirfd, name, fd);
}

int
mstat_owner_reap_fd(int dirfd, const char *name, int fd, uint64_t grace_s,
		    struct mstat_reaped *out)
{
	struct mstat_reaped id;
	struct stat st;
	int rc = lock_dead(fd);

	if (rc <= 0)
		return rc;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
	} else if (judge_stat(&st, st.st_uid, &id) != MSTAT_FOUND_SEGMENT ||
		   !read_identity(fd, &st, name, &id)) {
		rc = MSTAT_REAP_LEFT;
	} else {
		rc = reap_locked(dirfd, name, fd, &st, &id, grace_s);
	}
	if (rc >= 0 && out)
		*out = id;
	unlock(fd);
	return rc;
}

void
mstat_owner_kept_set(struct mstat_kept *k, int dirfd, const char *name,
		     const struct mstat_reaped *r)
{
	size_t n = strlen(name);

	if (n >= sizeof(k->name))
		n = sizeof(k->name) - 1;
	memcpy(k->name, name, n);
	k->name[n] = '\0';
	k->killed_ns = r->killed_ns;
	k->bytes = r->bytes;
	k->dev = r->dev;
	k->ino = r->ino;
	k->dirfd = dirfd;
	k->seen = true;
}

int
mstat_owner_reap_kept(const struct mstat_kept *k, uid_t uid, uint64_t grace_s,
		      struct mstat_reaped *out, char *why, size_t whylen)
{
	int fd, rc;

	if (why && whylen)
		why[0] = '\0';
	/* The very file kept, or nothing: a name is the directory's to
	 * change, and a file mounted over it or put under it since is no
	 * segment this remover found. */
	fd = mstat_beneath_reopen(k->dirfd, k->dev, k->ino, k->name, why, whylen);
	if (fd == -ENOENT)
		return MSTAT_REAP_KEPT;
	if (fd == -EXDEV || fd == -ELOOP || fd == -EINVAL || fd == -ESTALE) {
		if (out) {
			memset(out, 0, sizeof(*out));
			out->found = MSTAT_FOUND_REPLACED;
		}
		return MSTAT_REAP_LEFT;
	}
	if (fd < 0)
		return fd;
	rc = mstat_owner_reap_file(k->dirfd, k->name, fd, uid, NULL, grace_s, out);
	close(fd);
	if (rc == MSTAT_REAP_LEFT && why && whylen) {
		static const char changed[] = "has changed since it was kept, "
					      "and no longer shows a segment of "
					      "this user's";
		size_t n = sizeof(changed) < whylen ? sizeof(changed) : whylen;
		memcpy(why, changed, n);
		why[n - 1] = '\0';
	}
	return rc;
}

size_t
mstat_owner_kept_evict(uid_t uid, struct mstat_kept *k, size_t n, uint64_t max_bytes,
		       void (*done)(void *arg, const struct mstat_kept *k,
				    int rc, const char *why),
		       void *arg)
{
	uint64_t sum = 0;
	size_t off = 0;

	for (size_t i = 0; i < n; i++)
		sum += k[i].bytes;
	/* Oldest first, by selection: a few hundred at most, and no
	 * allocation (qsort may allocate). */
	while (sum > max_bytes && off < n) {
		size_t last = n - off - 1, old = 0;
		for (size_t i = 1; i <= last; i++)
			if (k[i].killed_ns < k[old].killed_ns)
				old = i;
		struct mstat_kept t = k[old];
		k[old] = k[last];
		k[last] = t;
		off++;
		sum -= t.bytes;
		/* Grace 0: removed if its owner is still gone, whatever the
		 * time; anything else under the name is left alone. */
		char why[96];
		int rc = mstat_owner_reap_kept(&k[last], uid, 0, NULL, why,
					       sizeof(why));
		if (done)
			done(arg, &k[last], rc, why);
	}
	return off;
}

int
mstat_owner_reap_file(int dirfd, const char *name, int fd, uid_t uid,
		      const struct mstat_reaped *succeeded, uint64_t grace_s,
		      struct mstat_reaped *out)
{
	struct mstat_reaped id;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		return -errno;
	/* What it is, first without the lock: a file the library did not
	 * make is left without being locked. */
	if (judge_stat(&st, uid, &id) != MSTAT_FOUND_SEGMENT ||
	    !read_identity(fd, &st, name, &id)) {
		if (out)
			*out = id;
		return MSTAT_REAP_LEFT;
	}
	rc = lock_dead(fd);
	if (rc <= 0)
		return rc;
	/* Again, holding the lock: its owner cannot change it any more. */
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto unlock;
	}
	if (judge_stat(&st, uid, &id) != MSTAT_FOUND_SEGMENT ||
	    !read_identity(fd, &st, name, &id)) {
		rc = MSTAT_REAP_LEFT;
		goto out;
	}
	if (succeeded && id.published && id.pid == succeeded->pid &&
	    id.start_time == succeeded->start_time &&
	    id.pid_ns == succeeded->pid_ns) {
		uint32_t execed = MSTAT_STATE_EXECED;
		(void)!pwrite(fd, &execed, sizeof(execed),
			      offsetof(struct mstat_shm_header, state));
		id.state = execed;
	}
	rc = reap_locked(dirfd, name, fd, &st, &id, grace_s);
out:
	if (out)
		*out = id;
unlock:
	unlock(fd);
	return rc;
}

int
mstat_owner_reap_at(int dirfd, const char *name, uid_t uid,
		    const struct mstat_reaped *succeeded, uint64_t grace_s,
		    struct mstat_reaped *out)
{
	struct stat dir;
	int fd, rc;

	if (fstat(dirfd, &dir) < 0)
		return -errno;
	/* As discovery opens it: a file mounted over the name, wherever
	 * from, is not this directory's to judge. */
	fd = mstat_beneath_open(dirfd, (uint64_t)dir.st_dev, name, NULL, 0);
	if (fd == -EXDEV || fd == -EINVAL) {
		if (out) {
			memset(out, 0, sizeof(*out));
			out->found = fd == -EXDEV ? MSTAT_FOUND_MOUNT
						  : MSTAT_FOUND_NOT_FILE;
		}
		return MSTAT_REAP_LEFT;
	}
	if (fd < 0)
		return fd == -ENOENT || fd == -EACCES || fd == -ELOOP
			       ? MSTAT_REAP_KEPT : fd;
	rc = mstat_owner_reap_file(dirfd, name, fd, uid, succeeded, grace_s, out);
	close(fd);
	return rc;
}

/* Killed segments mstat_owner_reap_some() keeps track of: as many as it
 * probes. */
#define SOME_KEPT 16u

/* Counts the segments the byte bound removed (unsigned at `arg`). */
static void
count_removed(void *arg, const struct mstat_kept *k, int rc, const char *why)
{
	(void)k;
	(void)why;
	*(unsigned *)arg += rc == MSTAT_REAP_REMOVED;
}

unsigned
mstat_owner_reap_some(uid_t uid, unsigned probes, const struct mstat_grace *g)
{
	/* On the stack: this runs in a starting process, maybe inside malloc.
	 * About a hundred names fit. */
	char buf[4096];
	struct mstat_kept kept[SOME_KEPT];
	size_t nkept = 0;
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
		struct mstat_reaped r;
		int rc = mstat_owner_reap_at(dirfd, de->d_name, uid, NULL, g->seconds, &r);
		if (rc == MSTAT_REAP_REMOVED)
			removed++;
		else if (rc == MSTAT_REAP_KILLED && nkept < SOME_KEPT)
			mstat_owner_kept_set(&kept[nkept++], dirfd, de->d_name, &r);
	}
	(void)mstat_owner_kept_evict(uid, kept, nkept, g->max_bytes, count_removed,
				     &removed);
	close(dirfd);
	return removed;
}
