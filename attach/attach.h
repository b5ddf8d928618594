/* SPDX-License-Identifier: MIT */
/*
 * attach.h - one attach (attach.c): the checks that refuse a process
 * before anything is touched, the thread taken, the library loaded and
 * started in it (shm/inject.h), and the thread given back as it was.
 */
#ifndef MSTAT_ATTACH_ATTACH_H
#define MSTAT_ATTACH_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/payload.h"

struct inject_options {
	const char *name;       /* the name readers show, or NULL */
	uint64_t timeout_ns;    /* to find a thread that may run the attach */
};

struct inject_result {
	char what[512];         /* what was done, or why nothing was */
	pid_t tid;              /* the thread taken, 0 if none */
	uint64_t held_ns;       /* from its stop to its release */
	uint64_t took_ns;       /* the whole attach */
	unsigned tries;         /* threads stopped and let go to find it */
	uint64_t let_go_ns;     /* the longest stop of those, from the
				 * seize to the release */
};

/* Attaches process `pid`: 0; -1, the process is left as it was (the
 * reason in r->what); -2, attached, but counting without a segment. */
int mstat_attach_inject(pid_t pid, const struct payload *p,
			const struct inject_options *o,
			struct inject_result *r);

#endif /* MSTAT_ATTACH_ATTACH_H */
