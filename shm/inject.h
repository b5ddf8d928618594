/* SPDX-License-Identifier: MIT */
/*
 * inject.h - the attach protocol between mstat-attach and the library it
 * injects into a running process (libmstatshm-attach.so), both sides.
 *
 * mstat-attach has one thread of the target call, in turn, every other
 * thread running on (docs/attach.md says how, and why that is safe):
 *
 *   1. dlopen() of the library, written into a memfd of the target:
 *      its constructor reads the configuration, finds glibc's allocator
 *      and checks its header, registers the fork handlers, reserves the
 *      map of blocks made since the attach, and lists every slot of every
 *      loaded object it will patch.  No allocation is counted yet, and
 *      dlclose() would leave the process as it was.
 *   2. MSTAT_ATTACH_START(args): the memfd (args->memfd) closed; the
 *      slots patched, the attach is now.  From here the process counts,
 *      into process memory.  Non-zero: nothing was patched (args->err
 *      says why), and mstat-attach unloads the library.  Zero: the
 *      segment is being made, as a starting process's, by a thread of the
 *      library's own that ends then (its registration for membarrier
 *      waits 4 to 24 ms for the kernel: not in a thread of the
 *      program's).
 *   3. The outcome of that is in MSTAT_ATTACH_STATE, which mstat-attach
 *      reads from the process's memory once `done`, the thread it took
 *      given back: non-zero `rc`, the process counts and has no segment
 *      (`status` says why).
 *
 * The entry point and the state are found in the library's dynamic
 * symbols, at the load address its link map says; `args` is written by
 * mstat-attach into the calling thread's stack and read back from there.
 */
#ifndef MSTAT_SHM_INJECT_H
#define MSTAT_SHM_INJECT_H

#include <stdatomic.h>
#include <stdint.h>

#include "shm/layout.h"

#define MSTAT_ATTACH_START "mstat_attach_start"
#define MSTAT_ATTACH_STATE "mstat_attach_state"
/* The library's soname: a process that has it loaded is attached. */
#define MSTAT_ATTACH_SONAME "libmstatshm-attach.so.0"

#define MSTAT_ATTACH_ARGS_VERSION 1u
#define MSTAT_ATTACH_ERR_MAX 240u

struct mstat_attach_args {
	uint32_t version;   /* MSTAT_ATTACH_ARGS_VERSION */
	uint32_t size;      /* sizeof(struct mstat_attach_args) */
	char name[MSTAT_NAME_MAX]; /* the name readers show; "" keeps the
				    * program's (or MSTAT_NAME) */
	int32_t memfd;      /* the memfd the library was loaded from, to close
			     * (-1: none) */
	uint32_t reserved0;
	/* Out: why the call did not do its part, NUL-terminated; "" if it
	 * did. */
	char err[MSTAT_ATTACH_ERR_MAX];
};

/* The outcome of the publication: `done` 1 (stored with release) once
 * it is known. */
struct mstat_attach_state {
	_Atomic uint32_t done;
	int32_t rc;         /* 0: the segment is published */
	char status[MSTAT_ATTACH_ERR_MAX]; /* the library's status then */
};
extern struct mstat_attach_state mstat_attach_state;

/* The entry point (lib/attach.c): 0, or -1 with args->err set. */
int mstat_attach_start(struct mstat_attach_args *a);

#endif /* MSTAT_SHM_INJECT_H */
