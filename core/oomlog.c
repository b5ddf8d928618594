/* SPDX-License-Identifier: MIT */
/* oomlog.c - the kernel's record of its OOM kills; see oomlog.h. */
#include "core/oomlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "shm/procfs.h"

/* The initial pid namespace's inode number, fixed by the kernel
 * (PROC_PID_INIT_INO). */
#define INIT_PID_NS 0xEFFFFFFCu

void
mstat_oomlog_open_fd(struct mstat_oomlog *l, int fd)
{
	memset(l, 0, sizeof(*l));
	l->fd = fd;
}

void
mstat_oomlog_open(struct mstat_oomlog *l)
{
	uint64_t ns;
	int fd = -1;

	/* Its pids are the initial namespace's: elsewhere they would name
	 * other processes. */
	if (mstat_procfs_pid_ns(&ns) == 0 && ns == INIT_PID_NS)
		fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	mstat_oomlog_open_fd(l, fd);
}

void
mstat_oomlog_close(struct mstat_oomlog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

/* The unsigned number at *p, moving *p past it; false if none. */
static bool
number(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;

	while (s < end && *s >= '0' && *s <= '9' && n < UINT64_MAX / 10)
		n = n * 10 + (uint64_t)(*s++ - '0');
	if (s == *p)
		return false;
	*p = s;
	*v = n;
	return true;
}

/* Copies [s, e) into out (len bytes), cut to fit. */
static void
copy(char *out, size_t len, const char *s, const char *e)
{
	size_t n = (size_t)(e - s);

	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* Where `needle` is in [s, e), or NULL. */
static const char *
find(const char *s, const char *e, const char *needle)
{
	size_t n = strlen(needle);

	for (; s + n <= e; s++)
		if (memcmp(s, needle, n) == 0)
			return s;
	return NULL;
}

/* "oom-kill:constraint=...,task_memcg=/x,task=api,pid=4242,uid=0".  The
 * comm after task= is its process's to choose, and may hold commas: the
 * memory cgroup is the first task_memcg= field, before it, and the pid
 * the last pid= field, after it. */
static int
summary(const char *s, const char *e, struct mstat_oom_kill *k)
{
	const char *memcg = NULL, *memcg_end = NULL;
	uint64_t pid = 0;
	bool have_pid = false;

	s += strlen("oom-kill:");
	while (s < e) {
		const char *f = memchr(s, ',', (size_t)(e - s));
		if (!f)
			f = e;
		if (!memcg && f - s > 11 && memcmp(s, "task_memcg=", 11) == 0) {
			memcg = s + 11;
			memcg_end = f;
		} else if (f - s > 4 && memcmp(s, "pid=", 4) == 0) {
			const char *p = s + 4;
			have_pid = number(&p, f, &pid) && p == f;
		}
		s = f + 1;
	}
	if (!have_pid || !memcg || pid == 0 || pid > INT32_MAX)
		return 0;
	k->pid = (pid_t)pid;
	copy(k->memcg, sizeof(k->memcg), memcg, memcg_end);
	return 2;
}

/* What the kernel says before ": Killed process" (mm/oom_kill.c), the
 * whole of what precedes it: a line that only contains one of them
 * carries what a user wrote (a file's name in a segfault's line). */
static const char *const constraints[] = {
	"Out of memory",
	"Memory cgroup out of memory",
	"Out of memory (oom_kill_allocating_task)",
};

/* "Memory cgroup out of memory: Killed process 4242 (api) total-vm:...",
 * or "Out of memory: Killed process ...", or with a reason in brackets:
 * the line is [s, e), `colon` where ": Killed process " is in it. */
static int
kill_line(const char *s, const char *e, const char *colon,
	  struct mstat_oom_kill *k)
{
	bool known = false;
	uint64_t pid;

	for (size_t i = 0; i < sizeof(constraints) / sizeof(constraints[0]); i++)
		known |= (size_t)(colon - s) == strlen(constraints[i]) &&
			 memcmp(s, constraints[i], strlen(constraints[i])) == 0;
	if (!known)
		return 0;
	const char *p = colon + strlen(": Killed process ");
	if (!number(&p, e, &pid) || pid == 0 || pid > INT32_MAX ||
	    e - p < 3 || memcmp(p, " (", 2) != 0)
		return 0;
	/* A comm is at most 15 bytes, and may hold ") ": the last ")"
	 * before the end or a space or comma within reach. */
	const char *c = p + 2, *close = NULL;
	for (const char *q = c; q < e && q <= c + 15; q++)
		if (*q == ')' && (q + 1 == e || q[1] == ' ' || q[1] == ','))
			close = q;
	if (!close)
		return 0;
	k->pid = (pid_t)pid;
	copy(k->comm, sizeof(k->comm), c, close);
	copy(k->constraint, sizeof(k->constraint), s, colon);
	return 1;
}

int
mstat_oomlog_parse(const char *rec, size_t len, struct mstat_oom_kill *k)
{
	const char *s = rec, *e = rec + len;
	uint64_t pri, seq, ts;

	memset(k, 0, sizeof(*k));
	/* "PRI,SEQ,TS,FLAGS[,...];TEXT": the kernel's facility is 0; what
	 * user space writes has another. */
	if (!number(&s, e, &pri) || s == e || *s++ != ',' || pri >> 3 != 0 ||
	    !number(&s, e, &seq) || s == e || *s++ != ',' ||
	    !number(&s, e, &ts))
		return 0;
	const char *text = memchr(s, ';', (size_t)(e - s));
	if (!text)
		return 0;
	text++;
	const char *end = memchr(text, '\n', (size_t)(e - text));
	if (!end)
		end = e;
	k->ts_us = ts;
	/* Its first field, which no comm of 15 bytes can begin a line
	 * with (a segfault's line begins with the comm). */
	if (end - text > 20 && memcmp(text, "oom-kill:constraint=", 20) == 0)
		return summary(text, end, k);
	const char *colon = find(text, end, ": Killed process ");
	return colon ? kill_line(text, end, colon, k) : 0;
}

void
mstat_oomlog_read(struct mstat_oomlog *l, uint64_t tick)
{
	char buf[8192];

	if (l->fd < 0)
		return;
	if (!l->first_tick)
		l->first_tick = tick;
	for (;;) {
		ssize_t n = read(l->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EPIPE))
			continue; /* EPIPE: records were overwritten unread */
		if (n <= 0)
			return; /* EAGAIN: all read */
		struct mstat_oom_kill k;
		switch (mstat_oomlog_parse(buf, (size_t)n, &k)) {
		case 2:
			l->summary_pid = k.pid;
			memcpy(l->summary_memcg, k.memcg, sizeof(k.memcg));
			break;
		case 1:
			k.tick = tick;
			if (k.pid == l->summary_pid)
				memcpy(k.memcg, l->summary_memcg, sizeof(k.memcg));
			l->summary_pid = 0;
			l->v[l->next] = k;
			l->next = (l->next + 1) % MSTAT_OOMLOG_KILLS;
			if (l->n < MSTAT_OOMLOG_KILLS)
				l->n++;
			break;
		}
	}
}

const struct mstat_oom_kill *
mstat_oomlog_find(const struct mstat_oomlog *l, pid_t pid, uint64_t start_us,
		  uint64_t first_tick)
{
	/* The log's clock stops in a suspend, CLOCK_BOOTTIME does not. */
	uint64_t boot = mstat_clock_ns(CLOCK_BOOTTIME) / 1000u;
	uint64_t mono = mstat_clock_ns(CLOCK_MONOTONIC) / 1000u;
	uint64_t suspended = boot > mono ? boot - mono : 0;

	/* The newest first. */
	for (size_t i = 0; i < l->n; i++) {
		const struct mstat_oom_kill *k =
			&l->v[(l->next + MSTAT_OOMLOG_KILLS - 1 - i) %
			      MSTAT_OOMLOG_KILLS];
		if (k->pid != pid)
			continue;
		if (k->tick == l->first_tick)
			return k->ts_us + suspended +
				       (uint64_t)MSTAT_OOMLOG_SLACK_S * 1000000u >=
					       start_us
				       ? k : NULL;
		return k->tick >= first_tick ? k : NULL;
	}
	return NULL;
}
