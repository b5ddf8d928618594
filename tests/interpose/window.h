/* SPDX-License-Identifier: MIT */
/*
 * window.h - for white-box tests of the interposer: open the window in which
 * the next allocator is being resolved again, and close it.
 */
#ifndef MSTAT_TEST_WINDOW_H
#define MSTAT_TEST_WINDOW_H

/* Opens the resolution window again (state `s`): as before resolution,
 * no thread may take the fast path, which assumes a resolved glibc. */
static struct mstat_shm_slot *saved_fast;

static void
window_open(int s)
{
	mstat_slots_header_sizes(false);
	saved_fast = mstat_thread.fast;
	mstat_thread.fast = NULL;
	atomic_store(&mstat_next.state, s);
}

static void
window_close(int ready)
{
	atomic_store(&mstat_next.state, ready);
	mstat_slots_header_sizes(ready == MSTAT_NEXT_HEADER);
	mstat_thread.fast = saved_fast;
}

#endif /* MSTAT_TEST_WINDOW_H */
