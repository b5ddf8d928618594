/* SPDX-License-Identifier: MIT */
/*
 * tracee.h - one thread of a running process, taken with ptrace
 * (tracee.c): seized, stopped, its whole state saved (registers, the
 * extended state of the FPU and vector registers, the signal mask),
 * functions of the process called in it, its state put back exactly,
 * let go.  Only one thread of the target is ever traced: the others run
 * on (docs/attach.md says why that is enough).
 *
 * Waits are bounded (SIGCHLD, blocked in this program, is waited for
 * with a deadline) but for a called function's return, which cannot be
 * abandoned: the thread would return to nowhere.
 *
 * A call returns to address 0: the fault stops the thread before any
 * handler of the process runs, and the signal is discarded.  SIGSEGV is
 * left unblocked in the thread meanwhile (a fault on a blocked signal
 * would reset the process's handler), every other one blocked: a signal
 * for the thread waits in the kernel until its mask is put back, one for
 * the process goes to another thread.
 */
#ifndef MSTAT_ATTACH_TRACEE_H
#define MSTAT_ATTACH_TRACEE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* What a thread was doing when it stopped. */
struct tracee_state {
	struct user_regs_struct regs;
	unsigned char *xstate;  /* NT_X86_XSTATE */
	size_t xlen;
	uint64_t sigmask;
};

struct tracee {
	pid_t pid, tid;
	int mem;               /* /proc/<pid>/mem, read-write */
	bool seized, stopped;
	bool gone;             /* the thread (or the process) ended */
	bool execed;           /* the process exec()ed */
	struct tracee_state saved;
	bool have_saved;
	uint64_t sp;           /* the next free byte below the saved stack's
				* red zone: where pushed data goes */
	uint64_t stack_floor;  /* the lowest address pushed data may take */
	uint64_t stopped_at;   /* CLOCK_MONOTONIC ns of its stop */
};

/* Blocks SIGCHLD in this program, whose arrival the waits wait for.
 * Once, before anything else. */
void mstat_tracee_setup(void);

/* Seizes thread `tid` of process `pid` (not stopping it): 0, or -errno
 * (-EPERM: not allowed, said in err). */
int mstat_tracee_seize(struct tracee *t, pid_t pid, pid_t tid, char *err, size_t len);

/* Stops it (PTRACE_INTERRUPT), by `deadline` (CLOCK_MONOTONIC ns): 0;
 * -ETIMEDOUT, still running (its stop comes later, and is let go);
 * -EAGAIN, stopped, but by a stop of the process's (SIGSTOP); -ESRCH,
 * gone; -ENOEXEC, the process exec()ed. */
int mstat_tracee_stop(struct tracee *t, uint64_t deadline);

/* Saves its state (once stopped), and sets the signal mask the calls
 * run with. */
int mstat_tracee_save(struct tracee *t);

/* Copies `len` bytes below the saved stack pointer (and its red zone),
 * 16-aligned: their address, or 0 if the stack has no room left. */
uint64_t mstat_tracee_push(struct tracee *t, const void *data, size_t len);

int mstat_tracee_read(struct tracee *t, uint64_t addr, void *buf, size_t len);
int mstat_tracee_write(struct tracee *t, uint64_t addr, const void *buf, size_t len);

/* Calls `fn` with up to six integer arguments in the thread; its
 * return value in *ret.  0; -ESRCH, the thread is gone; -EFAULT, the
 * call faulted (said in err). */
int mstat_tracee_call(struct tracee *t, uint64_t fn, const uint64_t *args, unsigned n,
		      uint64_t *ret, char *err, size_t len);

/* Puts the saved state back (a system call that our stop cut short with
 * EINTR made to restart, as if the stop had come before it, unless a
 * signal of its own is pending) and lets the thread go. */
void mstat_tracee_release(struct tracee *t);

/* The current CLOCK_MONOTONIC time, in ns. */
uint64_t mstat_tracee_now(void);

#endif /* MSTAT_ATTACH_TRACEE_H */
