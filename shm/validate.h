/* SPDX-License-Identifier: MIT */
/*
 * validate.h - every check a reader makes before it trusts a segment.
 *
 * A segment is input from another process: anything in it may be wrong.
 * Each function returns 0, or a negative errno value and a one-line reason
 * in `err`:
 *   -ELOOP / -EINVAL  not a regular file (a symlink, a directory, ...)
 *   -EPERM            another owner, or a mode other than 0600
 *   -EAGAIN           the target has not finished creating it yet (empty,
 *                     or not published)
 *   -ENODATA          shorter than a header: cut short by someone (a
 *                     creator sizes its file whole before it writes it)
 *   -EPROTONOSUPPORT  a major version this reader does not know
 *   -EPROTO           anything else that does not add up
 */
#ifndef MSTAT_SHM_VALIDATE_H
#define MSTAT_SHM_VALIDATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "shm/layout.h"

/* The bytes of the header that never change once `magic` is published. */
#define MSTAT_HEADER_IDENTITY_SIZE offsetof(struct mstat_shm_header, state)

/* As `uid` below: the owner is the caller's to check (a segment of
 * another namespace, checked against the process it claims). */
#define MSTAT_UID_CALLER ((uid_t)-1)

/* The file: a regular file of `uid`, mode 0600, a header's size. */
int mstat_validate_stat(const struct stat *st, uid_t uid, char *err,
			size_t errlen);

/* `h` is a private copy of the identity part of the header (magic
 * included), read after an acquire load of magic; its uid must be `uid`
 * (unless MSTAT_UID_CALLER). */
int mstat_validate_header(const struct mstat_shm_header *h, uint64_t file_size,
			  uid_t uid, char *err, size_t errlen);

/* The class table: `n` strictly increasing upper bounds. */
int mstat_validate_classes(const uint64_t *max_size, uint32_t n, char *err,
			   size_t errlen);

#endif /* MSTAT_SHM_VALIDATE_H */
