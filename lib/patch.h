/* SPDX-License-Identifier: MIT */
/*
 * patch.h - in an attached process, the slots through which every loaded
 * object calls the allocator (patch.c), pointed at the library's
 * functions (attached.h).
 *
 * A library injected into a running process comes last in the loader's
 * order, and every object's calls of malloc are bound already: it
 * interposes nothing by being loaded.  So the slots those calls go
 * through are written: the GOT entries of each object of the base
 * namespace, libc's own included (glibc calls its malloc through them,
 * so that it can be interposed), that the loader filled for a function
 * of the list (JUMP_SLOT, GLOB_DAT relocations), and the words of data
 * that hold such a function's address (64-bit absolute relocations).  A
 * slot is written only if it holds what the loader put there: the
 * function glibc has under that name (dlsym(RTLD_DEFAULT)), or, a call
 * not bound yet, the object's own lazy stub for that very relocation,
 * told by its bytes.  Any other value (an object of another namespace,
 * with a libc of its own; a word the program changed; an object that
 * defines the function itself) is left as it is.  Slots the loader makes
 * read-only after relocation (RELRO) are made writable for the writes,
 * and read-only again.
 *
 * Objects loaded later (dlopen, dlmopen: their slots in every object
 * lead to the library's, which jump on to glibc's with the caller's
 * return address untouched, so that the loader finds the caller's search
 * path) are patched by the next allocation of any thread once their load
 * is complete: until then, their allocations reach glibc directly, and
 * are blocks made before the attach (shadow.h).  So are the objects glibc
 * loads for itself (a module of its name service), found by the rescan
 * that follows the next dlopen().
 */
#ifndef MSTAT_LIB_PATCH_H
#define MSTAT_LIB_PATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/state.h"

/* Lists the slots of every loaded object (in the constructor, inside
 * dlopen: the list of objects cannot change).  0, or -1 with a reason in
 * err. */
int mstat_patch_prepare(char *err, size_t len) MSTAT_HIDDEN;

/* Writes them, and those of objects loaded since (the attach: the
 * program's threads run on; patch.c says in what order, and why that
 * keeps every count whole).  0; or -1 with a reason in err, every slot
 * as it was. */
int mstat_patch_apply(char *err, size_t len) MSTAT_HIDDEN;

/* Set when objects may have been loaded that are not patched yet. */
extern _Atomic bool mstat_patch_pending MSTAT_HIDDEN;

void mstat_patch_rescan(void) MSTAT_HIDDEN;

/* At every entry of the allocator: patches what was loaded since. */
static inline void
mstat_patch_check(void)
{
	if (UNLIKELY(atomic_load_explicit(&mstat_patch_pending, memory_order_relaxed)))
		mstat_patch_rescan();
}

#endif /* MSTAT_LIB_PATCH_H */
