/* SPDX-License-Identifier: MIT */
/*
 * status.h - what the library says of itself: the status text
 * (mstat_self_status(), and what it reports to mstat-run), its warnings,
 * and the lines it logs where MSTAT_LOG asks, and only there: the
 * program's descriptors are its own, and its stderr may be a data file
 * or a protocol.
 *
 * No stdio and no allocation: a starting process need not fault in
 * stdio's code, and a warning may be said from inside malloc.
 */
#ifndef MSTAT_LIB_STATUS_H
#define MSTAT_LIB_STATUS_H

#include <stddef.h>
#include <string.h>

#include "lib/state.h"

/* The NULL-terminated `parts` into dst (len bytes, truncated). */
void mstat_status_join(char *dst, size_t len, const char *const *parts) MSTAT_HIDDEN;

/* What the library does now (the NULL-terminated `parts`): the status's
 * first part, the warnings after it. */
void mstat_status_set(const char *const *parts) MSTAT_HIDDEN;

/* Something the process should know that does not stop it counting (a
 * variable ignored, a fallback): kept in the status from now on, and
 * logged. */
void mstat_status_warn(const char *what, const char *why) MSTAT_HIDDEN;

/* One line where MSTAT_LOG asks (stderr, or appended to a file of the
 * user), nowhere otherwise: "mstatshm: NAME[PID]: what: why". */
void mstat_status_log(const char *what, const char *why) MSTAT_HIDDEN;

/* What an errno value means, in English, from inside malloc too:
 * strerrordesc_np(), never strerror().  strerror() translates, and the
 * translation takes glibc's locale lock, which setlocale() holds while it
 * allocates: a count there that makes the segment and fails left that
 * lock broken, and the program's next setlocale() waited for ever. */
static inline const char *
mstat_strerror(int e)
{
	const char *s = strerrordesc_np(e);

	return s ? s : "unknown error";
}

#endif /* MSTAT_LIB_STATUS_H */
