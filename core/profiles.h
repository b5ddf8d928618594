/* SPDX-License-Identifier: MIT */
/*
 * profiles.h - a process's heap profile, handed out by the core to
 * another thread (an HTTP thread of mstat-exporter) to be read there, at
 * that thread's pace.
 *
 * The sampler owns the targets and their readers, and its ticks must not
 * wait for a profile request, nor a request for the ticks.  So the
 * sampler hands out, between ticks, a handle of what it holds of the
 * process: a reader of the handle's own on the process's segment, opened
 * on a copy of the descriptor the core holds.  It shares nothing with
 * the core's reader (its own mapping, its own state) and takes no lock:
 * the profile region is read without the flock (shm/reader.h), so a
 * handle's reads never delay a tick, and a tick never delays them.  The
 * handle keeps the segment mapped while it lives: a process that ends
 * meanwhile is read as it ended.
 */
#ifndef MSTAT_CORE_PROFILES_H
#define MSTAT_CORE_PROFILES_H

#include <stddef.h>
#include <sys/types.h>

#include "core/core.h"
#include "shm/reader.h"

struct mstat_core_profile;

/* The profile of the process `pid` (the pid its row shows) as the core
 * holds it, into *out: a live one's, or a killed one's while the core
 * keeps it (core.h, killed_linger_ns).  In the sampler's thread, between
 * ticks.  0; -ENOENT if the core holds none (no process of that pid
 * counts, or the core was not given it, or it is gone); -ESTALE if the process
 * ended since the last tick, which decides what the core holds of it
 * (and of a process that took its pid since); another -errno with why
 * in `err`. */
int mstat_core_profile_open(struct mstat_core *core, pid_t pid,
			    struct mstat_core_profile **out, char *err,
			    size_t errlen);

/* Reads it into *p (mstat_reader_profile_release() frees it).  From any thread,
 * one at a time per handle.  0, or -errno with why in `err`. */
int mstat_core_profile_read(struct mstat_core_profile *h,
			    struct mstat_profile *p, char *err, size_t errlen);

/* The process's name, as its row shows it (not escaped). */
const char *mstat_core_profile_name(const struct mstat_core_profile *h);

/* From any thread. */
void mstat_core_profile_close(struct mstat_core_profile *h);

#endif /* MSTAT_CORE_PROFILES_H */
