/* SPDX-License-Identifier: MIT */
/* name.c - segment names and process start times; see name.h. */
#include "name.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"

size_t
mstat_utoa(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

int
mstat_shm_name(char *buf, size_t len, pid_t pid, uint64_t start_time,
	       uint64_t suffix)
{
	char tmp[MSTAT_SHM_NAME_MAX];
	size_t n = sizeof(MSTAT_SHM_PREFIX) - 1;

	memcpy(tmp, MSTAT_SHM_PREFIX, n);
	n += mstat_utoa(tmp + n, (uint64_t)pid);
	tmp[n++] = '.';
	n += mstat_utoa(tmp + n, start_time);
	if (suffix) {
		tmp[n++] = '.';
		n += mstat_utoa(tmp + n, suffix);
	}
	if (n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, n + 1);
	return (int)n;
}

/* Parses a decimal number without sign or leading zeros, ending at '.' or
 * at the end of the string. */
static int
parse_u64(const char **p, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (d > max || v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*s != '.' && *s != '\0')
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

int
mstat_shm_parse_name(const char *name, pid_t *pid, uint64_t *start_time)
{
	size_t n = sizeof(MSTAT_SHM_PREFIX) - 1;
	uint64_t p, st, suffix = 0;

	if (strncmp(name, MSTAT_SHM_PREFIX, n) != 0)
		return -EINVAL;
	name += n;
	if (parse_u64(&name, INT32_MAX, &p) < 0 || p == 0 || *name++ != '.')
		return -EINVAL;
	if (parse_u64(&name, UINT64_MAX, &st) < 0)
		return -EINVAL;
	if (*name == '.') {
		name++;
		if (parse_u64(&name, UINT64_MAX, &suffix) < 0 ||
		    suffix == 0 || *name != '\0')
			return -EINVAL;
	}
	*pid = (pid_t)p;
	*start_time = st;
	return 0;
}

int
mstat_proc_stat(pid_t pid, uint64_t *start_time, char *state)
{
	char path[40] = "/proc/";
	char buf[1024];
	ssize_t len;
	int fd;

	if (pid == 0)
		strcpy(path + 6, "self");
	else
		mstat_utoa(path + 6, (uint64_t)pid);
	strcat(path, "/stat");

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		len = read(fd, buf, sizeof(buf) - 1);
	while (len < 0 && errno == EINTR);
	int saved = errno;
	close(fd);
	if (len < 0)
		return -saved;
	buf[len] = '\0';

	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	 * so fields are counted from the last ')'.  starttime is field 22. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	if (state)
		*state = p[2];
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EPROTO;
	}
	p++;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EPROTO;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	*start_time = v;
	return 0;
}

int
mstat_proc_start_time(pid_t pid, uint64_t *start_time)
{
	return mstat_proc_stat(pid, start_time, NULL);
}

int
mstat_pid_ns(uint64_t *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}
