/* SPDX-License-Identifier: MIT */
/*
 * exec.c - libc's exec functions, forwarded through RTLD_NEXT, with the
 * image's segment marked EXECED around them.  See exec.h.
 *
 * Every one is interposed, not execve() alone: glibc's execv(), execvp()
 * and execl() call its execve() inside libc, where no interposer sees
 * it.  Not seen: an exec by system call (syscall(SYS_execve)); readers
 * then tell the exec by the process still living with its start time
 * (core/sampler.c), and the new image, if it counts, marks the old
 * segment as it makes its own (shm/owner.h).
 */
#include "lib/exec.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <unistd.h>

#include "lib/segment.h"

/* Whether the calling process is the one `mstat_proc` describes, the
 * segment's owner: a vfork child shares its parent's memory, `mstat_proc`
 * included, and is not (its pid is not mstat_proc.pid). */
static bool
owner(void)
{
	return getpid() == mstat_proc.pid;
}

/* Sets `execing`, then marks the segment if there is one.  (I) seq_cst,
 * pairs with start()'s store of `ready` and load of `execing`
 * (mstat_exec_published()), a store-load pair each side (Dekker): either
 * this load sees the segment published, or start() sees `execing`, or
 * both. */
static bool
exec_begin(void)
{
	if (!owner())
		return false;
	atomic_store_explicit(&mstat_proc.execing, true, memory_order_seq_cst);
	if (atomic_load_explicit(&mstat_proc.ready, memory_order_seq_cst))
		mstat_segment_exec(&mstat_proc.seg, true);
	return true;
}

/* The exec() returned: it failed, and the image goes on. */
static void
exec_failed(bool began)
{
	int e = errno;

	if (!began)
		return;
	/* (I) seq_cst, as in exec_begin(): pairs with start()'s store of
	 * `ready` and load of `execing`; a segment published meanwhile is
	 * marked back here, or start() sees `execing` gone. */
	atomic_store_explicit(&mstat_proc.execing, false, memory_order_seq_cst);
	if (atomic_load_explicit(&mstat_proc.ready, memory_order_seq_cst))
		mstat_segment_exec(&mstat_proc.seg, false);
	errno = e;
}

void
mstat_exec_published(void)
{
	/* (I) seq_cst: pairs with exec_begin(); after (R), seq_cst too. */
	if (atomic_load_explicit(&mstat_proc.execing, memory_order_seq_cst))
		mstat_segment_exec(&mstat_proc.seg, true);
}

/* The functions forwarded, and their next definitions, found once. */
#define EXEC_FUNCTIONS(X)                                                    \
	X(execve) X(execv) X(execvp) X(execvpe) X(fexecve) X(execveat)
enum {
#define X(name) NEXT_##name,
	EXEC_FUNCTIONS(X)
#undef X
	NEXT_COUNT
};
static const char *const next_name[NEXT_COUNT] = {
#define X(name) #name,
	EXEC_FUNCTIONS(X)
#undef X
};
static _Atomic(void *) next_fn[NEXT_COUNT];

/* The next definition of function `i`.  Relaxed: every thread that looks
 * finds the same address, and nothing else is published with it. */
static void *
next(unsigned i)
{
	void *f = atomic_load_explicit(&next_fn[i], memory_order_relaxed);

	if (!f) {
		f = dlsym(RTLD_NEXT, next_name[i]);
		atomic_store_explicit(&next_fn[i], f, memory_order_relaxed);
	}
	if (!f)
		errno = ENOSYS;
	return f;
}

void
mstat_exec_resolve(void)
{
	for (unsigned i = 0; i < NEXT_COUNT; i++)
		(void)next(i);
}

/* Defines `name`, and call_name() for the functions below: its next
 * definition, called between exec_begin() and exec_failed(). */
#define EXEC(name, params, args)                                             \
	static int call_##name params                                        \
	{                                                                    \
		int (*f) params;                                             \
		*(void **)&f = next(NEXT_##name);                            \
		if (!f)                                                      \
			return -1;                                           \
		bool began = exec_begin();                                   \
		int rc = f args;                                             \
		exec_failed(began);                                          \
		return rc;                                                   \
	}                                                                    \
	int name params                                                      \
	{                                                                    \
		return call_##name args;                                     \
	}

EXEC(execve, (const char *path, char *const argv[], char *const envp[]),
     (path, argv, envp))
EXEC(execv, (const char *path, char *const argv[]), (path, argv))
EXEC(execvp, (const char *file, char *const argv[]), (file, argv))
EXEC(execvpe, (const char *file, char *const argv[], char *const envp[]),
     (file, argv, envp))
EXEC(fexecve, (int fd, char *const argv[], char *const envp[]),
     (fd, argv, envp))
EXEC(execveat, (int dirfd, const char *path, char *const argv[],
		char *const envp[], int flags),
     (dirfd, path, argv, envp, flags))

/*
 * execl(), execle() and execlp() take their arguments as a list, which
 * cannot be forwarded: made an array, as glibc makes it, for execv(),
 * execve() and execvp().  How many there are after `arg`, up to the NULL
 * (`ap` is a copy, used up), or -1 past INT_MAX.
 */
static long
count_args(va_list ap)
{
	long n = 0;

	while (va_arg(ap, char *))
		if (++n == INT_MAX - 1)
			return -1;
	return n;
}

/* argv[0..n+1): `arg`, the n after it from *ap, and NULL. */
static void
take_args(char **argv, long n, const char *arg, va_list *ap)
{
	argv[0] = (char *)arg;
	for (long i = 1; i <= n + 1; i++)
		argv[i] = va_arg(*ap, char *);
}

/* The list of execl(), execle() or execlp() as `argv`, in this scope. */
#define LIST_ARGS(arg, ap)                                                   \
	va_list copy_;                                                       \
	va_copy(copy_, ap);                                                  \
	long n_ = count_args(copy_);                                         \
	va_end(copy_);                                                       \
	if (n_ < 0) {                                                        \
		va_end(ap);                                                  \
		errno = E2BIG;                                               \
		return -1;                                                   \
	}                                                                    \
	char *argv[n_ + 2];                                                  \
	take_args(argv, n_, arg, &ap)

int
execl(const char *path, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap);
	va_end(ap);
	return call_execv(path, argv);
}

int
execle(const char *path, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return call_execve(path, argv, envp);
}

int
execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap);
	va_end(ap);
	return call_execvp(file, argv);
}
