/* SPDX-License-Identifier: MIT */
/*
 * guard.h - reading segment memory that may be truncated under its
 * mapping.
 *
 * A reader validates a segment's size, but anyone of the same user can
 * shrink the file afterwards, and the next load from a page past the new
 * end raises SIGBUS.  Every access a reader makes to segment memory runs
 * inside mstat_guard_run(), which turns that SIGBUS into -EFAULT.
 *
 * The handler is process-wide, so it chains: a SIGBUS raised where no
 * guard is active in the faulting thread goes to the handler that was
 * installed before ours, or gets the default action (the process dies as
 * it would have).  It is installed on the first guarded call, and each
 * guarded call checks that it still is: a host program that installs its
 * own SIGBUS handler later finds ours put back in front of it, chaining to
 * its own.  A host whose handler must see every SIGBUS first should not
 * use the reader API from a thread that can fault for its own reasons
 * while a read is in progress; nothing else changes for it.
 */
#ifndef MSTAT_SHM_GUARD_H
#define MSTAT_SHM_GUARD_H

/* Runs fn(arg).  0, or -EFAULT if an access in it raised SIGBUS (it was
 * cut short where it stood: fn must hold no lock and own no memory it
 * has not recorded somewhere the caller can release), or -errno if the
 * handler could not be installed (fn did not run). */
int mstat_guard_run(void (*fn)(void *), void *arg);

#endif /* MSTAT_SHM_GUARD_H */
