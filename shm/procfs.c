/* SPDX-License-Identifier: MIT */
/*
 * procfs.c - what /proc says of a process.  See procfs.h.
 */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads a small /proc file into buf (NUL-terminated): its length or -1. */
static ssize_t
slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* As much of src as fits dst with its NUL. */
static void
copy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

void
mstat_proc_identity(pid_t pid, struct mstat_proc_identity *id)
{
	char path[64], buf[4096];
	ssize_t n;

	memset(id, 0, sizeof(*id));
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((n = slurp(path, buf, sizeof(id->comm) + 1)) > 0) {
		if (buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		copy(id->comm, sizeof(id->comm), buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		/* An executable replaced while it runs reads "... (deleted)":
		 * still the name the user knows it by. */
		const char *del = " (deleted)";
		size_t dl = strlen(del);
		if ((size_t)n > dl && strcmp(buf + n - dl, del) == 0)
			buf[n - dl] = '\0';
		const char *slash = strrchr(buf, '/');
		copy(id->exe, sizeof(id->exe), slash ? slash + 1 : buf);
	}
}

uint64_t
mstat_proc_boot_ns(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned long long btime = 0;

	if (!f)
		return 0;
	/* Line by line: the "intr" line before it can be long. */
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	free(line);
	fclose(f);
	return (uint64_t)btime * 1000000000u;
}

uint64_t
mstat_proc_start_ns(uint64_t boot_ns, uint64_t start_ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (!boot_ns || hz <= 0)
		return 0;
	return boot_ns + start_ticks / (uint64_t)hz * 1000000000u +
	       start_ticks % (uint64_t)hz * 1000000000u / (uint64_t)hz;
}
