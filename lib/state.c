/* SPDX-License-Identifier: MIT */
/* state.c - the library's shared state, defined, and its layout checked;
 * see state.h. */
#include "lib/state.h"

#include <stddef.h>

struct mstat_writer_config mstat_writer_config MSTAT_STARTUP;
struct mstat_next mstat_next MSTAT_STARTUP;
_Thread_local struct mstat_thread mstat_thread MSTAT_TLS_MODEL;
alignas(4096) struct mstat_proc mstat_proc = {
	.fork_lock = PTHREAD_MUTEX_INITIALIZER,
	.self_lock = PTHREAD_MUTEX_INITIALIZER,
};

_Static_assert(offsetof(struct mstat_thread, sample_left) < MSTAT_CACHELINE,
	       "the fast path's fields share one line");
_Static_assert(offsetof(struct mstat_proc,
			early[MSTAT_SC(MSTAT_TABLE_MAX / 16) + 1]) <= 4096,
	       "a process that starts writes more than one page of mstat_proc");
