/* SPDX-License-Identifier: MIT */
/*
 * outfile.h - the files the tools write where a user asks: mstat-top's
 * --pprof and --record, mstat-run's --summary.
 *
 * They hold code addresses, names, command lines: they are private, and
 * nothing planted under the name asked for is ever written through.  A
 * file is made under a temporary name in the directory asked for
 * (O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode 0600), and renamed
 * over the name asked for: a rename replaces a directory entry and never
 * follows it, so a symbolic link there is not written through, and the
 * file linked to is left as it was.  A name that exists and is not a
 * regular file of this user (a symbolic link, a FIFO, a directory, a
 * device, another user's file) is refused, with a reason, before anything
 * is written.
 *
 * A file written whole (a profile, a summary) is renamed once it is
 * complete: a write that fails leaves what was there.  A stream (a
 * recording, read while it grows) is renamed at once, then written.
 */
#ifndef MSTAT_CORE_OUTFILE_H
#define MSTAT_CORE_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct mstat_outfile {
	FILE *f;              /* write here */
	const char *path;     /* as asked for */
	int dirfd;            /* its directory */
	bool placed;          /* renamed into place */
	char base[256];       /* its name in dirfd */
	char tmp[256];        /* the temporary name in dirfd */
};

enum mstat_outfile_mode {
	MSTAT_OUTFILE_WHOLE,  /* renamed into place by mstat_outfile_close() */
	MSTAT_OUTFILE_STREAM, /* renamed into place now */
};

/* Whether `path` may be written: its directory opens, and the name is
 * free or a regular file of this user.  0, or -errno with the reason. */
int mstat_outfile_check(const char *path, char *err, size_t errlen);

/* Makes the file for `path`: 0, or -errno with a one-line reason
 * ("PATH: ...") in `err`. */
int mstat_outfile_open(struct mstat_outfile *o, const char *path,
		       enum mstat_outfile_mode mode, char *err, size_t errlen);

/* Flushes and closes it, and puts a whole file in place: 0, or -errno
 * with the reason in `err` (the temporary file is then removed, and what
 * was under the name is left as it was). */
int mstat_outfile_close(struct mstat_outfile *o, char *err, size_t errlen);

/* Closes it and removes a whole file not yet in place: for a writer that
 * failed on its own. */
void mstat_outfile_discard(struct mstat_outfile *o);

#endif /* MSTAT_CORE_OUTFILE_H */
