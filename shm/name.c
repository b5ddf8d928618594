/* SPDX-License-Identifier: MIT */
/* name.c - segment names; see name.h. */
#include "shm/name.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "shm/layout.h"

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
