/* SPDX-License-Identifier: MIT */
/* outfile.c - private output files, never written through what is planted
 * under their name; see outfile.h. */
#include "core/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int
refuse(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* What a file that is not a regular one is, for the reason. */
static const char *
kind(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory"
	     : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
	     : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a regular file";
}

/* Whether the name asked for may be replaced: absent, or a regular file
 * of this user. */
static int
check_target(const struct mstat_outfile *o, char *err, size_t errlen)
{
	struct stat st;

	if (fstatat(o->dirfd, o->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
		     : refuse(err, errlen, -errno, "%s: %s", o->path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return refuse(err, errlen, -EEXIST, "%s: is %s; not written "
			      "through (remove it, or name another file)",
			      o->path, kind(st.st_mode));
	if (st.st_uid != geteuid())
		return refuse(err, errlen, -EPERM, "%s: belongs to uid %u; not "
			      "replaced", o->path, (unsigned)st.st_uid);
	return 0;
}

/* Renames the temporary file over the name asked for. */
static int
place(struct mstat_outfile *o, char *err, size_t errlen)
{
	int rc = check_target(o, err, errlen);

	if (rc < 0)
		return rc;
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->base) < 0)
		return refuse(err, errlen, -errno, "%s: %s", o->path, strerror(errno));
	o->placed = true;
	return 0;
}

static uint64_t
random64(void)
{
	uint64_t v;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
	       (uint64_t)getpid() << 16;
}

/* Fills o->path, o->base and o->dirfd for `path`. */
static int
locate(struct mstat_outfile *o, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char dir[4096];

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->dirfd = -1;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return refuse(err, errlen, -EISDIR, "%s: names a directory, not "
			      "a file", path);
	if (strlen(base) >= sizeof(o->base))
		return refuse(err, errlen, -ENAMETOOLONG, "%s: %s", path,
			      strerror(ENAMETOOLONG));
	memcpy(o->base, base, strlen(base) + 1);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		return refuse(err, errlen, -ENAMETOOLONG, "%s: %s", path,
			      strerror(ENAMETOOLONG));
	o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0)
		return refuse(err, errlen, -errno, "%s: %s: %s", path, dir,
			      strerror(errno));
	return 0;
}

int
mstat_outfile_check(const char *path, char *err, size_t errlen)
{
	struct mstat_outfile o;
	int rc = locate(&o, path, err, errlen);

	if (rc == 0)
		rc = check_target(&o, err, errlen);
	if (o.dirfd >= 0)
		close(o.dirfd);
	return rc;
}

int
mstat_outfile_open(struct mstat_outfile *o, const char *path,
		   enum mstat_outfile_mode mode, char *err, size_t errlen)
{
	int fd = -1, rc = locate(o, path, err, errlen);

	if (rc < 0)
		return rc;
	/* Refused before anything is made or written. */
	if ((rc = check_target(o, err, errlen)) < 0)
		goto fail;
	/* A name nobody can have made first: O_EXCL makes it ours, new,
	 * or fails; O_NOFOLLOW is implied by O_EXCL, and said. */
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		snprintf(o->tmp, sizeof(o->tmp), ".%.200s.%016" PRIx64, o->base,
			 random64());
		fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0 && errno != EEXIST) {
			rc = refuse(err, errlen, -errno, "%s: %s", path,
				    strerror(errno));
			goto fail;
		}
	}
	if (fd < 0) {
		rc = refuse(err, errlen, -EEXIST, "%s: no temporary name is free "
			    "in its directory", path);
		goto fail;
	}
	/* The umask may have narrowed the mode: exactly 0600, the owner's
	 * only. */
	if (fchmod(fd, 0600) < 0 || !(o->f = fdopen(fd, "w"))) {
		rc = refuse(err, errlen, -errno, "%s: %s", path, strerror(errno));
		close(fd);
		goto unlink;
	}
	if (mode == MSTAT_OUTFILE_STREAM && (rc = place(o, err, errlen)) < 0) {
		fclose(o->f);
		o->f = NULL;
		goto unlink;
	}
	return 0;
unlink:
	unlinkat(o->dirfd, o->tmp, 0);
fail:
	close(o->dirfd);
	o->dirfd = -1;
	return rc;
}

int
mstat_outfile_close(struct mstat_outfile *o, char *err, size_t errlen)
{
	int rc = 0;

	if (!o->f)
		return 0;
	errno = 0;
	if (fflush(o->f) == EOF || ferror(o->f)) {
		int e = errno ? errno : EIO;
		rc = refuse(err, errlen, -e, "%s: %s", o->path, strerror(e));
	}
	if (fclose(o->f) != 0 && rc == 0)
		rc = refuse(err, errlen, -errno, "%s: %s", o->path, strerror(errno));
	o->f = NULL;
	if (!o->placed && (rc < 0 || (rc = place(o, err, errlen)) < 0))
		unlinkat(o->dirfd, o->tmp, 0);
	close(o->dirfd);
	o->dirfd = -1;
	return rc;
}

void
mstat_outfile_discard(struct mstat_outfile *o)
{
	if (!o->f)
		return;
	fclose(o->f);
	o->f = NULL;
	if (!o->placed)
		unlinkat(o->dirfd, o->tmp, 0);
	close(o->dirfd);
	o->dirfd = -1;
}
