/* SPDX-License-Identifier: MIT */
/* tracee.c - one thread of a running process, taken with ptrace; see
 * tracee.h. */
#include "attach/tracee.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XSTATE_MAX 65536u
#define RED_ZONE 128u
#define EFLAGS_TF 0x100u
#define EFLAGS_DF 0x400u

uint64_t
mstat_tracee_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
mstat_tracee_setup(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGCHLD);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

int
mstat_tracee_seize(struct tracee *t, pid_t pid, pid_t tid, char *err, size_t len)
{
	char path[64];

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->mem = -1;
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) < 0) {
		int e = errno;
		snprintf(err, len, "ptrace: %s", strerror(e));
		return -e;
	}
	t->seized = true;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	t->mem = open(path, O_RDWR | O_CLOEXEC);
	if (t->mem < 0) {
		int e = errno;
		snprintf(err, len, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

/* Waits for the next event of the thread, by `deadline` (0: none): its
 * status, 0 if none came in time, -ESRCH if it is gone. */
static int
next_event(struct tracee *t, uint64_t deadline, int *status)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(t->tid, status, __WALL | WNOHANG);
		if (r == t->tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -ESRCH;
		uint64_t now = mstat_tracee_now();
		if (deadline && now >= deadline)
			return 0;
		uint64_t wait = deadline ? deadline - now : 1000000000u;
		if (wait > 100000000u)
			wait = 100000000u; /* a SIGCHLD taken by another wait */
		struct timespec ts = { (time_t)(wait / 1000000000u),
				       (long)(wait % 1000000000u) };
		(void)sigtimedwait(&chld, NULL, &ts);
	}
}

/* An event that is not the one waited for: a signal for the thread goes
 * on to it; a stop of the process's (SIGSTOP) is let pass.  False if the
 * thread is gone or the process exec()ed. */
static bool
pass(struct tracee *t, int st)
{
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		t->gone = true;
		t->stopped = false;
		return false;
	}
	unsigned event = (unsigned)st >> 16;
	if (event == PTRACE_EVENT_EXEC) {
		t->execed = true;
		return false;
	}
	int sig = event == 0 ? WSTOPSIG(st) : 0;
	(void)ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)sig);
	return true;
}

int
mstat_tracee_stop(struct tracee *t, uint64_t deadline)
{
	int st;

	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0)
		return -errno;
	for (;;) {
		int rc = next_event(t, deadline, &st);
		if (rc <= 0)
			return rc == 0 ? -ETIMEDOUT : rc;
		if (WIFSTOPPED(st) && ((unsigned)st >> 16) == PTRACE_EVENT_STOP) {
			t->stopped = true;
			t->stopped_at = mstat_tracee_now();
			/* A group-stop (SIGSTOP, SIGTSTP...): the process is
			 * stopped, not by us. */
			return WSTOPSIG(st) == SIGTRAP ? 0 : -EAGAIN;
		}
		if (!pass(t, st))
			return t->execed ? -ENOEXEC : -ESRCH;
	}
}

int
mstat_tracee_read(struct tracee *t, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(t->mem, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

int
mstat_tracee_write(struct tracee *t, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = pwrite(t->mem, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

int
mstat_tracee_save(struct tracee *t)
{
	struct tracee_state *s = &t->saved;
	struct iovec iov;

	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &s->regs) < 0)
		return -errno;
	s->xstate = calloc(1, XSTATE_MAX);
	if (!s->xstate)
		return -ENOMEM;
	iov.iov_base = s->xstate;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) < 0)
		return -errno;
	s->xlen = iov.iov_len;
	if (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(s->sigmask), &s->sigmask) < 0)
		return -errno;
	t->have_saved = true;
	t->sp = (s->regs.rsp - RED_ZONE) & ~(uint64_t)15;
	/* Every signal blocked while the calls run, but the faults: one on a
	 * blocked signal would reset the process's handler of it. */
	uint64_t mask = ~(uint64_t)0;
	for (int sig = 1; sig <= 64; sig++)
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
		    sig == SIGTRAP)
			mask &= ~((uint64_t)1 << (sig - 1));
	if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) < 0)
		return -errno;
	return 0;
}

uint64_t
mstat_tracee_push(struct tracee *t, const void *data, size_t len)
{
	uint64_t at = (t->sp - len) & ~(uint64_t)15;

	if (at < t->stack_floor || at > t->sp || mstat_tracee_write(t, at, data, len) < 0)
		return 0;
	t->sp = at;
	return at;
}

int
mstat_tracee_call(struct tracee *t, uint64_t fn, const uint64_t *args, unsigned n,
		  uint64_t *ret, char *err, size_t len)
{
	struct user_regs_struct r = t->saved.regs;
	uint64_t zero = 0;
	int st;

	/* A call's frame: the return address 0 at a 16-byte boundary less 8,
	 * as a call instruction leaves it. */
	uint64_t sp = (t->sp - 64) & ~(uint64_t)15;
	if (sp - 8 < t->stack_floor || mstat_tracee_write(t, sp - 8, &zero, 8) < 0) {
		snprintf(err, len, "no room on its stack");
		return -EFAULT;
	}
	r.rsp = sp - 8;
	r.rip = fn;
	unsigned long long *reg[6] = { &r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9 };
	for (unsigned i = 0; i < n && i < 6; i++)
		*reg[i] = args[i];
	r.rax = 0;            /* no vector arguments (a variadic callee) */
	r.orig_rax = (unsigned long long)-1; /* no system call to restart */
	r.eflags &= ~(unsigned long long)(EFLAGS_DF | EFLAGS_TF);
	if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) < 0 ||
	    ptrace(PTRACE_CONT, t->tid, NULL, NULL) < 0)
		return -errno;
	t->stopped = false;
	for (;;) {
		if (next_event(t, 0, &st) < 0) {
			t->gone = true;
			return -ESRCH;
		}
		if (WIFSTOPPED(st) && ((unsigned)st >> 16) == 0 && WSTOPSIG(st) == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, t->tid, NULL, &r) < 0)
				return -errno;
			t->stopped = true;
			if (r.rip == 0) {
				*ret = r.rax;
				return 0;
			}
			snprintf(err, len, "the call faulted at %#llx", r.rip);
			return -EFAULT;
		}
		if (WIFSTOPPED(st) && ((unsigned)st >> 16) == 0 &&
		    (WSTOPSIG(st) == SIGBUS || WSTOPSIG(st) == SIGILL ||
		     WSTOPSIG(st) == SIGFPE)) {
			t->stopped = true;
			snprintf(err, len, "the call faulted: %s", strsignal(WSTOPSIG(st)));
			return -EFAULT;
		}
		if (!pass(t, st))
			return -ESRCH;
	}
}

/* Whether a signal the thread does not block is pending, for it or its
 * process: then an EINTR it has is that signal's. */
static bool
signal_pending(struct tracee *t)
{
	char path[64], buf[4096];
	unsigned long long pnd = 0, shd = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid, (int)t->tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;
	while (fgets(buf, sizeof(buf), f)) {
		(void)sscanf(buf, "SigPnd: %llx", &pnd);
		(void)sscanf(buf, "ShdPnd: %llx", &shd);
	}
	fclose(f);
	return ((pnd | shd) & ~t->saved.sigmask) != 0;
}

/*
 * Our stop woke the thread from a system call that returns EINTR when
 * interrupted, not restarts (epoll_wait, semop, sigtimedwait): made to
 * restart instead, as the kernel restarts the others, by setting the
 * registers back to the system call (its number, the instruction
 * before).  The program then runs as if the stop had come just before
 * the call.  Not if a signal of its own is pending: that signal made the
 * EINTR, which is the program's to see.
 */
static void
restart_eintr(struct tracee *t, struct user_regs_struct *r)
{
	unsigned char insn[2];

	if ((long long)r->orig_rax < 0 || (long long)r->rax != -EINTR ||
	    mstat_tracee_read(t, r->rip - 2, insn, 2) < 0 || insn[0] != 0x0f ||
	    insn[1] != 0x05 || signal_pending(t))
		return;
	r->rax = r->orig_rax;
	r->rip -= 2;
}

void
mstat_tracee_release(struct tracee *t)
{
	if (t->seized && t->stopped && !t->gone) {
		if (t->have_saved) {
			struct iovec iov = { t->saved.xstate, t->saved.xlen };
			struct user_regs_struct r = t->saved.regs;
			restart_eintr(t, &r);
			(void)ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov);
			(void)ptrace(PTRACE_SETREGS, t->tid, NULL, &r);
			(void)ptrace(PTRACE_SETSIGMASK, t->tid,
				     (void *)sizeof(t->saved.sigmask), &t->saved.sigmask);
		} else {
			struct user_regs_struct r;
			if (ptrace(PTRACE_GETREGS, t->tid, NULL, &r) == 0) {
				t->saved.sigmask = 0;
				if (ptrace(PTRACE_GETSIGMASK, t->tid,
					   (void *)sizeof(t->saved.sigmask),
					   &t->saved.sigmask) == 0) {
					struct user_regs_struct was = r;
					restart_eintr(t, &r);
					if (memcmp(&was, &r, sizeof(r)))
						(void)ptrace(PTRACE_SETREGS, t->tid, NULL, &r);
				}
			}
		}
		(void)ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
	}
	/* A thread whose stop timed out (it sleeps in the kernel
	 * uninterruptibly) is let go once it comes; one that has not come in
	 * a second more, when this program ends: the kernel then drops the
	 * stop pending. */
	if (t->seized && !t->stopped && !t->gone) {
		int st;
		while (next_event(t, mstat_tracee_now() + 1000000000u, &st) > 0)
			if (!WIFSTOPPED(st) || ((unsigned)st >> 16) == PTRACE_EVENT_STOP ||
			    !pass(t, st)) {
				if (WIFSTOPPED(st))
					(void)ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
				break;
			}
	}
	if (t->mem >= 0)
		close(t->mem);
	free(t->saved.xstate);
	memset(&t->saved, 0, sizeof(t->saved));
	t->mem = -1;
	t->seized = t->stopped = t->have_saved = false;
}
