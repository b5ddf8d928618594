/* SPDX-License-Identifier: MIT */
/*
 * safe.h - whether a stopped thread is at a point where it may run the
 * attach (safe.c): its stack unwound with libdw (the call frame
 * information of every object, read from the files the process maps),
 * each frame placed, and the rules of docs/attach.md ("The thread the
 * attach takes") applied.  In short, the thread is refused if:
 *
 *   - a frame is in the dynamic loader (loading, binding lazily, giving
 *     a thread its TLS: the attach loads a library);
 *   - a frame is in one of glibc's functions that hold a lock the
 *     attach takes, or whose state it reads: the allocator, the dl*
 *     functions, fork and its handlers, exit and its handlers, thread
 *     creation and exit, the environment's setters, locales;
 *   - the frames of glibc it is executing were entered through none of
 *     glibc's exported functions (glibc's own internals: a thread
 *     exiting, unwinding for cancellation);
 *   - it is in a signal handler;
 *   - its stack cannot be unwound to its end (no frame can be said not
 *     to be one of the above), or has too little room below it.
 *
 * A refusal is never wrong for safety, only for time: the attach lets
 * the thread go and tries another, or later.
 */
#ifndef MSTAT_ATTACH_SAFE_H
#define MSTAT_ATTACH_SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/image.h"

/* Bytes of stack the attach needs below the thread's stack pointer. */
#define SAFE_STACK_ROOM (256u * 1024u)

struct safe;

/* Reports the process's objects to libdw and reads their frame
 * information, before any thread is stopped: 0, or -errno with a reason
 * in err. */
int mstat_safe_open(struct safe **out, pid_t pid, const struct image *im, char *err,
		    size_t len);
void mstat_safe_close(struct safe *s);

/* Thread `tid`, stopped by this program, with stack pointer `sp`: true
 * if it may run the attach; else false and why in `why`.  *floor: the
 * lowest address its stack may be used down to. */
bool mstat_safe_thread(struct safe *s, pid_t tid, uint64_t sp, uint64_t *floor,
		       char *why, size_t len);

#endif /* MSTAT_ATTACH_SAFE_H */
