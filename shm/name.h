/* SPDX-License-Identifier: MIT */
/*
 * name.h - how segments are named, and how a process is told from a later
 * one with the same pid.
 *
 * A segment is /dev/shm/mstat.<pid>.<starttime>, starttime being field 22
 * of /proc/<pid>/stat: within one pid namespace the pair names one process
 * for the life of the machine.  Processes in other pid namespaces sharing
 * /dev/shm can collide with it, and anyone may create a name first: the
 * creator then takes the same name with a suffix, .1 to .7, and if those
 * are taken too, a random one (64 bits), which nobody can guess.  Names say
 * who made a segment; whether its maker lives is the owner lock's to say
 * (owner.h), never the pid's.
 *
 * These functions neither allocate nor use stdio: the writer calls them
 * while it sets up, from inside malloc.
 */
#ifndef MSTAT_SHM_NAME_H
#define MSTAT_SHM_NAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MSTAT_SHM_NAME_MAX 64 /* with the NUL */

/* Writes "mstat.<pid>.<start_time>", and ".<suffix>" if suffix is not 0,
 * into buf; returns its length, or -ENAMETOOLONG. */
int mstat_shm_name(char *buf, size_t len, pid_t pid, uint64_t start_time,
		   uint64_t suffix);

/* Parses a name made by mstat_shm_name(), and nothing else: 0 or -EINVAL. */
int mstat_shm_parse_name(const char *name, pid_t *pid, uint64_t *start_time);

/* Formats v in decimal at buf (at least 21 bytes); returns the length.
 * Inline: every path of /proc and every name is made with it, and it
 * calls nothing. */
static inline size_t
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

#endif /* MSTAT_SHM_NAME_H */
