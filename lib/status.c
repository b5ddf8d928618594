/* SPDX-License-Identifier: MIT */
/* status.c - what the library says of itself; see status.h.  Its texts
 * are mstat_proc's (status, state, warnings, log), on the page a process
 * writes as it starts. */
#include "lib/status.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/name.h"

/* Appends NULL-terminated `parts` to the string in dst (len bytes,
 * truncated). */
static void
append(char *dst, size_t len, const char *const *parts)
{
	size_t n = strlen(dst);

	for (; *parts; parts++)
		for (const char *p = *parts; *p && n + 1 < len; p++)
			dst[n++] = *p;
	dst[n] = '\0';
}

MSTAT_START_TEXT void
mstat_status_join(char *dst, size_t len, const char *const *parts)
{
	dst[0] = '\0';
	append(dst, len, parts);
}

/* The file MSTAT_LOG names, opened to append, or -1: made mode 0600 if
 * new; never through a symbolic link planted under the name, never a
 * FIFO or device (O_NONBLOCK: a FIFO's open would wait for a reader,
 * inside the program's malloc), never a file of another user. */
static int
open_log(void)
{
	struct stat st;
	int fd = open(mstat_proc.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
				O_NOCTTY | O_NOFOLLOW | O_NONBLOCK, 0600);

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
			st.st_uid != geteuid())) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void
mstat_status_log(const char *what, const char *why)
{
	char line[400], pid[24];
	int fd = STDERR_FILENO;

	if (!mstat_proc.log[0])
		return;
	if (strcmp(mstat_proc.log, "stderr") != 0 && (fd = open_log()) < 0)
		return;
	mstat_utoa(pid, (uint64_t)getpid());
	mstat_status_join(line, sizeof(line), (const char *const[]){
		"mstatshm: ", mstat_proc.name, "[", pid, "]: ", what, ": ", why, "\n",
		NULL });
	(void)!write(fd, line, strlen(line));
	if (fd != STDERR_FILENO)
		close(fd);
}

/* mstat_self_status(): the state, then the warnings so far. */
static void
compose(void)
{
	mstat_status_join(mstat_proc.status, sizeof(mstat_proc.status), (const char *const[]){
		mstat_proc.state, mstat_proc.warnings[0] ? "; " : "",
		mstat_proc.warnings, NULL });
}

void
mstat_status_warn(const char *what, const char *why)
{
	append(mstat_proc.warnings, sizeof(mstat_proc.warnings), (const char *const[]){
		mstat_proc.warnings[0] ? "; " : "", what, ": ", why, NULL });
	compose();
	mstat_status_log(what, why);
}

MSTAT_START_TEXT void
mstat_status_set(const char *const *parts)
{
	mstat_status_join(mstat_proc.state, sizeof(mstat_proc.state), parts);
	compose();
}
