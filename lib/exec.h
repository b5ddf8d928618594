/* SPDX-License-Identifier: MIT */
/*
 * exec.h - exec(): the image's segment marked EXECED before the kernel
 * replaces the image (exec.c).
 *
 * exec() closes the segment's descriptor and, with it, drops the owner
 * lock, as a death does.  Whatever the new image then does (counts, counts
 * nothing, is static, ends at once), a reader that finds the lock gone
 * must not take the old image for killed: so every exec function of libc
 * marks the segment EXECED first, and back RUNNING if it returns (the
 * exec failed).  A reader takes EXECED to mean "replaced" only once the
 * lock is gone (shm/reader.c); a remover removes such a segment at once.
 */
#ifndef MSTAT_LIB_EXEC_H
#define MSTAT_LIB_EXEC_H

#include "lib/state.h"

/* start() has published the segment: if a thread has begun an exec()
 * meanwhile, the segment is marked as that exec() would have marked it. */
void mstat_exec_published(void) MSTAT_HIDDEN;

/* Finds the next definitions of the exec functions now, if not yet: a
 * forking parent, so that its child exec()s without the loader (dlsym()
 * takes its lock, which another thread of the parent may have held at
 * the fork, or the code a signal handler interrupted).  Otherwise each
 * is found at its first call (a vfork child may be the first: dlsym()
 * takes the lock and gives it back, and allocates nothing). */
void mstat_exec_resolve(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_EXEC_H */
