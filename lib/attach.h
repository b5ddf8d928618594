/* SPDX-License-Identifier: MIT */
/*
 * attach.h - the library injected into a running process by mstat-attach
 * (libmstatshm-attach.so): its entry points (shm/inject.h), and the
 * attach's own state (attach.c).
 *
 * The library is this one's sources built again (MSTAT_ATTACH), with the
 * malloc family of attached.c, the slots of patch.c and the map of
 * shadow.c in place of the interposer, and general-dynamic TLS
 * (state.h).  Its constructor prepares; nothing is counted until
 * MSTAT_ATTACH_START patches the slots, and the segment is then made by
 * a thread of the library's, as a process that starts makes it.
 */
#ifndef MSTAT_LIB_ATTACH_H
#define MSTAT_LIB_ATTACH_H

#include "lib/state.h"

/* The constructor's part (start.c): everything the attach needs that
 * may take a lock or allocate, while the process's other threads run.
 * What it could not do is said by MSTAT_ATTACH_START. */
void mstat_attach_prepare(void) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_ATTACH_H */
