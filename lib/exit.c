/* SPDX-License-Identifier: MIT */
/*
 * exit.c - the exit, counted to its end: every way out that runs code of
 * the library's, and the exiting thread's last count.  See exit.h.
 */
#include "lib/exit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/shared.h"
#include "lib/stop.h"

/* The next _exit in the chain (glibc's, or a tool's), looked up at
 * start: every process writes it. */
static void (*next_exit)(int) MSTAT_STARTUP;

/*
 * Every way out that runs code of ours: exit() and a return from main
 * (atexit; for the library, its own destructor), quick_exit()
 * (at_quick_exit), _exit() and _Exit() (defined below).
 *
 * The thread that calls it runs the rest of the exit: the atexit
 * handlers after ours, every library's destructors (one that is
 * finalised after this library frees what its constructor allocated),
 * and finally exit_group(), which kills every other thread wherever it
 * is.  So the totals can be final and whole only if no other thread is
 * inside an update when that comes, and complete only if this one counts
 * to the end.  retire() stops every other thread's sections, waits for
 * those in flight (exit_cut: how many it could not wait for), marks the
 * segment EXITING and unlinks its name.  From then on:
 *
 *   - this thread counts on, through the shared slot, under shared_lock
 *     (exit_section()): each of its updates is whole when it calls
 *     exit_group(), for it makes none after its last;
 *   - every other thread counts into process memory (`early`), under
 *     the same lock, where no death can leave half an update in the
 *     segment; this thread adds those counts in with its next count.
 *     What they count after its last count is lost;
 *   - finish(), at the very end, adds in what is left and says DONE.
 *
 * A reader that finds the owner gone reads the final totals (shm/
 * reader.c): exited if DONE; killed if not (a signal during the exit),
 * with one update more cut if BUSY.  A process that dies by a signal
 * before its exit runs none of this: its owner lock goes with it, and
 * the next process that starts, or an observer, removes the segment.  A
 * process that exits before it made its segment counts on in process
 * memory, and makes none.
 */
static MSTAT_START_TEXT void
retire(void)
{
	bool mine, first = false, ready = false;

	if (!mstat_proc.started || mstat_proc.disabled ||
	    getpid() != mstat_proc.pid || /* a vfork or posix_spawn() child,
					  * sharing our memory */
	    atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed))
		return;
	/* A fork of another thread ends first: its parent handler would let
	 * the sections go again.  Not this thread's own (a signal handler
	 * inside it exits): it never gets back there. */
	if (!mstat_thread.holds_fork_lock)
		pthread_mutex_lock(&mstat_proc.fork_lock);
	/* Under shared_lock: a thread that begins a section of the shared
	 * slot after this sees the exit first (mstat_shared_open()), and so does
	 * a start (mstat_start_publish(), start()).  Not if this is a signal handler of
	 * the holder: it never gets back there either. */
	mine = mstat_ownlock_mine(&mstat_proc.shared_lock, mstat_shared_tid());
	if (!mine)
		mstat_ownlock_lock(&mstat_proc.shared_lock, mstat_shared_tid());
	if (!atomic_exchange_explicit(&mstat_proc.retired, true, memory_order_relaxed)) {
		first = true;
		atomic_fetch_or_explicit(&mstat_writer_config.stop, MSTAT_STOP_EXIT,
					 memory_order_relaxed);
		mstat_thread.exiting = true;
		ready = atomic_load_explicit(&mstat_proc.ready, memory_order_relaxed);
	}
	if (!mine)
		mstat_ownlock_unlock(&mstat_proc.shared_lock);
	if (first && ready)
		mstat_segment_retire(&mstat_proc.seg, mstat_stop(MSTAT_STOP_EXIT));
	if (!mstat_thread.holds_fork_lock)
		pthread_mutex_unlock(&mstat_proc.fork_lock);
}

/*
 * The end of the exit: exit_group() comes next.  A last section of the
 * exiting thread adds in what other threads counted since its last
 * count, and says DONE.  Called by another thread (its _exit() while the
 * exiting thread runs destructors), it becomes the exiting thread, and
 * keeps shared_lock: the other one begins no update of which exit_group()
 * could cut half.
 */
static MSTAT_START_TEXT void
finish(void)
{
	unsigned g;

	if (getpid() != mstat_proc.pid ||
	    !atomic_load_explicit(&mstat_proc.retired, memory_order_relaxed) ||
	    !atomic_load_explicit(&mstat_proc.ready, memory_order_acquire) ||
	    /* A signal handler of the holder: the update it cut stays BUSY. */
	    mstat_ownlock_mine(&mstat_proc.shared_lock, mstat_shared_tid()))
		return;
	bool last = !mstat_thread.exiting;
	mstat_thread.exiting = true;
	if (mstat_shared_open(&g) != MSTAT_INTO_EXIT)
		return;
	mstat_segment_ended(&mstat_proc.seg);
	mstat_shared_exit_end(true);
	if (!last)
		mstat_shared_unlock();
}

/* _exit() and _Exit(): the library's exit path, then the next _exit
 * (glibc's, or a tool's: valgrind's own interception of it is what keeps
 * a fork child from reporting its parent's threads as leaks).
 * Async-signal-safe, as _exit must be: nothing here allocates, the next
 * _exit was looked up at start, and no lock is waited for that this
 * thread holds. */
MSTAT_START_TEXT void
mstat_exit_now(int status)
{
	retire();
	finish();
	if (next_exit)
		next_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

MSTAT_START_TEXT MSTAT_EXPORT void
_exit(int status)
{
	mstat_exit_now(status);
}

MSTAT_START_TEXT MSTAT_EXPORT void
_Exit(int status)
{
	mstat_exit_now(status);
}

/*
 * retire() at exit and quick_exit.  With glibc, through the functions
 * libc.so itself exports: atexit() and at_quick_exit() are stubs that
 * libc_nonshared.a links into the library, at the end of its code, far
 * from the rest of what a start runs (MSTAT_START_TEXT), and they only
 * call these.
 */
#ifdef __GLIBC__
extern void *__dso_handle;
extern int __cxa_atexit(void (*)(void *), void *, void *);
extern int __cxa_at_quick_exit(void (*)(void *), void *);

static MSTAT_START_TEXT void
retire_at(void *unused)
{
	(void)unused;
	retire();
}

static MSTAT_START_TEXT void
finish_at(void *unused)
{
	(void)unused;
	retire();
	finish();
}

#if !MSTAT_ATTACH
/*
 * retire() runs with this library's destructor (its handler is this
 * object's: __cxa_finalize() runs it there, in _dl_fini()), after the
 * handlers registered since the program started and before the
 * destructors of the objects finalised after it.  finish() runs last:
 * registered with no object, before the program's entry point
 * registered _dl_fini() (this constructor runs from the loader, before
 * it), it comes after every destructor.  quick_exit() runs no
 * destructors: both at once.
 */
MSTAT_START_TEXT void
mstat_exit_handlers(void)
{
	*(void **)&next_exit = dlsym(RTLD_NEXT, "_exit");
	__cxa_atexit(finish_at, NULL, NULL);
	__cxa_atexit(retire_at, NULL, __dso_handle);
	__cxa_at_quick_exit(finish_at, __dso_handle);
}
#else
/*
 * Injected into a running process, the library is loaded after every
 * handler the program registered: its own run first.  retire() runs
 * with its atexit handler, the first at exit, and finish() with its
 * destructor, which _dl_fini() runs first of all (the object loaded
 * last), after every atexit handler: the program's handlers and the
 * other objects' destructors before it are counted, those after it not
 * (docs/attach.md).  Both belong to this object, which an attach that
 * gives up unloads: __cxa_finalize() then runs the first, which finds
 * nothing started, and the second does the same.  quick_exit()'s list is
 * not taken back at an unloading: its handler comes once the attach is
 * done.  The next _exit is the process's, by name.
 */
void
mstat_exit_handlers(void)
{
	*(void **)&next_exit = dlsym(RTLD_DEFAULT, "_exit");
	__cxa_atexit(retire_at, NULL, __dso_handle);
}

void
mstat_exit_handlers_attached(void)
{
	__cxa_at_quick_exit(finish_at, __dso_handle);
}

__attribute__((destructor)) static void
finish_last(void)
{
	retire();
	finish();
}
#endif
#else
static void
finish_now(void)
{
	retire();
	finish();
}

void
mstat_exit_handlers(void)
{
	*(void **)&next_exit = dlsym(RTLD_NEXT, "_exit");
	atexit(finish_now);
	atexit(retire);
	at_quick_exit(finish_now);
}
#endif
