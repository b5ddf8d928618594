/* SPDX-License-Identifier: MIT */
/*
 * attach.c - one attach; see attach.h, and docs/attach.md for why each
 * step is safe.
 *
 *   1. The process is read, not stopped: it must be dynamically linked
 *      with glibc new enough for the library, glibc's malloc must be the
 *      one its calls bind to, it must not count already, and its
 *      /dev/shm must be there.
 *   2. A thread is taken: one at a time, the threads most likely idle
 *      first, each stopped, unwound and let go again at once unless it
 *      may run the attach (safe.h); its seccomp filter is checked.
 *   3. In that thread, the library is written into a memfd and loaded
 *      (dlopen), started, published; the memfd is closed.  Every other
 *      thread runs on meanwhile.
 *   4. The thread gets its state back, errno included, and is let go.
 */
#include "attach/attach.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "attach/image.h"
#include "shm/procfs.h"
#include "shm/inject.h"
#include "attach/safe.h"
#include "attach/seccomp.h"
#include "attach/tracee.h"

#define TIDS_MAX 4096u
#define STOP_BUDGET_NS (100u * 1000u * 1000u) /* for one thread to stop */
#define PUBLISH_BUDGET_S 10u /* the segment made */
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#endif
#define MFD_EXEC_FLAG 0x10u /* Linux 6.3: executable, whatever vm.memfd_noexec */

/* One attach's state. */
struct job {
	pid_t pid;
	const struct payload *p;
	const struct inject_options *o;
	struct inject_result *r;
	struct image im;
	const struct image_object *libc;
	struct safe *safe;
	struct tracee t;
	uint64_t errno_at;      /* the thread's errno, and its value */
	int32_t errno_was;
	int64_t memfd;          /* in the target, -1 if none */
	uint64_t handle;        /* the library's, 0 if not loaded */
	uint64_t base;          /* where it is loaded */
};

static int
say(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What is said of a process that changed while being attached
 * (mstat_image_fate()). */
static const char *const changed[] = {
	[IMAGE_EXITED] = "it exited while being attached",
	[IMAGE_EXECED] = "it exec()ed while being attached",
	[IMAGE_LEADERLESS] = "its main thread has exited, and the others run on: "
			     "its memory is read through that thread",
};

static int
say(struct job *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->r->what, sizeof(j->r->what), fmt, ap);
	va_end(ap);
	return -1;
}

static long
read_long(const char *path)
{
	char buf[32];
	long v = -1;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtol(buf, NULL, 10);
		fclose(f);
	}
	return v;
}

/* The line `key` of status file `path`, after the key, into buf. */
static bool
status_field(const char *path, const char *key, char *buf, size_t len)
{
	char line[512];
	size_t k = strlen(key);
	bool found = false;

	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (strncmp(line, key, k) == 0 && line[k] == ':') {
			snprintf(buf, len, "%s", line + k + 1 + strspn(line + k + 1, " \t"));
			buf[strcspn(buf, "\n")] = '\0';
			found = true;
		}
	fclose(f);
	return found;
}

/* The line `key` of /proc/<pid>/status. */
static bool
status_line(pid_t pid, const char *key, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return status_field(path, key, buf, len);
}

/* Why this program may not read or trace `pid`. */
static int
not_allowed(struct job *j)
{
	char uid[128] = "";
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope");
	struct stat st;
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/%d", (int)j->pid);
	(void)status_line(j->pid, "Uid", uid, sizeof(uid));
	if (stat(proc, &st) == 0 && st.st_uid != geteuid() && geteuid() != 0)
		return say(j, "it is uid %u's; attaching to another user's process "
			   "needs CAP_SYS_PTRACE (run as root)", (unsigned)st.st_uid);
	if (scope >= 3)
		return say(j, "Yama's ptrace_scope is %ld: no process may be attached "
			   "to, until the machine restarts", scope);
	if (scope == 2 && geteuid() != 0)
		return say(j, "Yama's ptrace_scope is 2: only CAP_SYS_PTRACE may attach "
			   "(run as root)");
	if (scope == 1 && geteuid() != 0)
		return say(j, "Yama's ptrace_scope is 1: only an ancestor of it, or "
			   "CAP_SYS_PTRACE, may attach (run as root, or set "
			   "kernel.yama.ptrace_scope=0)");
	return say(j, "it may not be traced by this user: not dumpable (set-user-ID, "
		   "capabilities, or prctl(PR_SET_DUMPABLE)), or CAP_SYS_PTRACE is "
		   "missing");
}

/* Step 1: what refuses the process before anything is touched (a
 * process that exited or exec()ed meanwhile is told apart afterwards,
 * in mstat_attach_inject()). */
static int
check(struct job *j)
{
	char err[256], v[128];
	int rc = mstat_image_read(&j->im, j->pid, err, sizeof(err));

	if (rc == -EPERM || rc == -EACCES)
		return not_allowed(j);
	if (rc < 0)
		return say(j, "%s", err);
	j->libc = mstat_image_by_soname(&j->im, "libc.so.6");
	if (!j->libc || !mstat_image_symbol(&j->im, j->libc, "gnu_get_libc_version"))
		return say(j, "its C library is not glibc: the attach runs glibc's "
			   "loader and follows glibc's allocator only");
	for (unsigned i = 0; i < j->p->nversions; i++)
		if (!mstat_image_has_version(&j->im, j->libc, j->p->versions[i]) &&
		    !mstat_image_has_version(&j->im, mstat_image_by_soname(&j->im, "ld-linux-x86-64.so.2")
							   ? mstat_image_by_soname(&j->im, "ld-linux-x86-64.so.2")
							   : j->libc,
				       j->p->versions[i]))
			return say(j, "its glibc is older than the library needs "
				   "(no %s)", j->p->versions[i]);
	const struct image_object *m;
	if ((m = mstat_image_defining(&j->im, "mstat_attach_start")))
		return say(j, "it counts already: mstat-attach attached it before");
	if ((m = mstat_image_defining(&j->im, "mstat_self_status")))
		return say(j, "it counts already: libmstatshm is loaded (%s)",
			   m->name[0] ? m->name : "linked into the program");
	m = mstat_image_defining(&j->im, "malloc");
	if (m != j->libc)
		return say(j, "its malloc is not glibc's but %s's: the attach follows "
			   "glibc's allocator only", m ? (m->name[0] ? m->name : "the program")
						 : "nobody");
	if (status_line(j->pid, "SigIgn", v, sizeof(v)) &&
	    (strtoull(v, NULL, 16) & (1ull << (SIGSEGV - 1))))
		return say(j, "it ignores SIGSEGV, which the attach's calls end with");
	if (status_line(j->pid, "x86_Thread_features", v, sizeof(v)) && strstr(v, "shstk"))
		return say(j, "it runs with a shadow stack, which the attach's calls "
			   "do not keep");
	char shm[64];
	struct stat st;
	snprintf(shm, sizeof(shm), "/proc/%d/root/dev/shm", (int)j->pid);
	if (stat(shm, &st) < 0 || !S_ISDIR(st.st_mode))
		return say(j, "it has no /dev/shm to make its segment in");
	return 0;
}

/* The process's threads, those most likely idle first: waiting in a
 * call the kernel restarts after a stop (a futex, a read), then running
 * (in no call), then the rest; the main thread first of its kind. */
static size_t
candidates(pid_t pid, pid_t *tids, size_t max)
{
	char path[64], line[128];
	int rank[TIDS_MAX];
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	for (struct dirent *e; n < max && (e = readdir(d));) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
		FILE *f = fopen(path, "re");
		int r = 2;
		if (f && fgets(line, sizeof(line), f)) {
			long nr = strncmp(line, "running", 7) == 0 ? -2 : strtol(line, NULL, 10);
			r = nr == 202 /* futex */ || nr == 0 /* read */ || nr == 45 || nr == 47 ||
					    nr == 43 || nr == 288 || nr == 61 || nr == 247 ||
					    nr == 34 || nr == 130
				    ? 0
				    : nr == -2 ? 1 : 2;
		}
		if (f)
			fclose(f);
		rank[n] = r * 2 + (tid != pid);
		tids[n++] = tid;
	}
	closedir(d);
	for (size_t i = 1; i < n; i++) /* few: insertion sort by rank */
		for (size_t k = i; k > 0 && rank[k] < rank[k - 1]; k--) {
			int r = rank[k];
			pid_t t = tids[k];
			rank[k] = rank[k - 1], tids[k] = tids[k - 1];
			rank[k - 1] = r, tids[k - 1] = t;
		}
	return n;
}

/* Why thread `tid`, stopped with status `rc`, may not run the attach;
 * "" if it may. */
static void
judge(struct job *j, pid_t tid, int rc, char *why, size_t len)
{
	struct user_regs_struct regs;
	uint64_t floor;

	why[0] = '\0';
	if (rc == -EAGAIN) {
		snprintf(why, len, "it is stopped (SIGSTOP): attach it once it runs");
	} else if (rc == -ETIMEDOUT) {
		snprintf(why, len, "it did not stop within %u ms (asleep in the kernel)",
			 STOP_BUDGET_NS / 1000000u);
	} else if (rc < 0) {
		snprintf(why, len, "it is gone");
	} else if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) < 0) {
		snprintf(why, len, "its registers cannot be read: %s", strerror(errno));
	} else if (mstat_safe_thread(j->safe, tid, regs.rsp, &floor, why, len)) {
		j->t.stack_floor = floor;
		why[0] = '\0';
	}
}

/* Tries thread `tid`: true if it is stopped, taken, its state saved;
 * else it is let go, as it was, and why is said. */
static bool
try_thread(struct job *j, pid_t tid, bool *filtered, char *why, size_t len)
{
	char err[256];

	if (mstat_tracee_seize(&j->t, j->pid, tid, err, sizeof(err)) < 0) {
		char path[64], tracer[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)j->pid,
			 (int)tid);
		(void)status_field(path, "TracerPid", tracer, sizeof(tracer));
		if (atoi(tracer) > 0)
			snprintf(why, len, "it is traced by pid %d (a debugger, or "
				 "another mstat-attach)", atoi(tracer));
		else
			snprintf(why, len, "%s", err);
		mstat_tracee_release(&j->t);
		return false;
	}
	j->r->tries++;
	int rc = mstat_tracee_stop(&j->t, mstat_tracee_now() + STOP_BUDGET_NS);
	if (rc == 0 && !mstat_image_same(&j->im, j->pid)) {
		/* It exec()ed between step 1 and the seize, or is ending: the
		 * image read is not its own.  Which of the two,
		 * mstat_attach_inject() tells once the thread is let go.  From
		 * the seize on an exec is reported. */
		j->t.execed = true;
		snprintf(why, len, "%s", changed[IMAGE_EXECED]);
		mstat_tracee_release(&j->t);
		return false;
	}
	if (rc == 0 && !*filtered) {
		/* Its seccomp filters, which every thread shares (a thread's
		 * own added later too: this one is checked). */
		*filtered = true;
		if (mstat_seccomp_check(j->pid, tid, err, sizeof(err)) < 0) {
			snprintf(why, len, "%s", err);
			mstat_tracee_release(&j->t);
			return false;
		}
	}
	judge(j, tid, rc, why, len);
	if (!why[0] && mstat_tracee_save(&j->t) == 0) {
		j->r->tid = tid;
		return true;
	}
	if (!why[0])
		snprintf(why, len, "its state cannot be saved");
	mstat_tracee_release(&j->t);
	return false;
}

/* Step 2: a thread taken, by the deadline.  Threads are tried one at a
 * time, and one that may not run the attach is let go at once: no
 * thread is stopped for longer than it takes to unwind it. */
static int
take_thread(struct job *j)
{
	uint64_t deadline = mstat_tracee_now() + j->o->timeout_ns;
	static pid_t tids[TIDS_MAX];
	char why[256] = "it has no thread";
	pid_t last = 0;
	bool filtered = false;

	for (unsigned round = 0;; round++) {
		size_t n = candidates(j->pid, tids, TIDS_MAX), traced = 0;
		if (n == 0 && kill(j->pid, 0) < 0)
			return say(j, "%s", changed[IMAGE_EXITED]);
		for (size_t i = 0; i < n; i++) {
			uint64_t t0 = mstat_tracee_now();
			if (try_thread(j, tids[i], &filtered, why, sizeof(why)))
				return 0;
			if (mstat_tracee_now() - t0 > j->r->let_go_ns)
				j->r->let_go_ns = mstat_tracee_now() - t0;
			last = tids[i];
			traced += strncmp(why, "it is traced", 12) == 0;
			if (strncmp(why, "its seccomp", 11) == 0 ||
			    strncmp(why, "it runs", 7) == 0 ||
			    strncmp(why, "it is stopped", 13) == 0 ||
			    strncmp(why, "ptrace:", 7) == 0 ||
			    j->t.execed || (traced == n && i + 1 == n))
				return say(j, "%s", why);
			if (mstat_tracee_now() >= deadline)
				break;
		}
		if (mstat_tracee_now() >= deadline)
			return say(j, "no thread could run the attach within %.1f s "
				   "(thread %d: %s)", (double)j->o->timeout_ns / 1e9,
				   (int)last, why);
		/* Let it run a moment: a thread in the allocator leaves it
		 * within microseconds. */
		struct timespec ts = { 0, (long)(200000u + 100000u * (round % 20)) };
		nanosleep(&ts, NULL);
	}
}

/* A function of glibc's, by name. */
static uint64_t
libc_fn(struct job *j, const char *name)
{
	return mstat_image_symbol(&j->im, j->libc, name);
}

/* Calls `fn` in the thread; -1 if it cannot be called (said). */
static int
call(struct job *j, uint64_t fn, const uint64_t *args, unsigned n, uint64_t *ret)
{
	char err[256];

	if (!fn)
		return say(j, "a function of its glibc is missing");
	int rc = mstat_tracee_call(&j->t, fn, args, n, ret, err, sizeof(err));
	if (rc == -ESRCH)
		return say(j, "%s", changed[j->t.execed ? IMAGE_EXECED : IMAGE_EXITED]);
	if (rc < 0)
		return say(j, "%s", err);
	return 0;
}

/* Pushes string `s` on the thread's stack: its address, 0 if no room. */
static uint64_t
push_string(struct job *j, const char *s)
{
	return mstat_tracee_push(&j->t, s, strlen(s) + 1);
}

/* Step 3, the library loaded: written into a memfd of the process (a
 * file in no file system: nothing is left in the target's), loaded from
 * /proc/self/fd, which its loader opens in its own mount namespace. */
static int
load(struct job *j)
{
	uint64_t name = push_string(j, "mstat-attach"), ret;
	char path[64];

	if (!name)
		return say(j, "no room on its stack");
	uint64_t args[2] = { name, MFD_CLOEXEC | MFD_EXEC_FLAG };
	if (call(j, libc_fn(j, "memfd_create"), args, 2, &ret) < 0)
		return -1;
	if ((int64_t)ret < 0) { /* before Linux 6.3: no MFD_EXEC */
		args[1] = MFD_CLOEXEC;
		if (call(j, libc_fn(j, "memfd_create"), args, 2, &ret) < 0)
			return -1;
	}
	if ((int64_t)(int32_t)ret < 0)
		return say(j, "memfd_create() failed in it");
	j->memfd = (int32_t)ret;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)j->pid, (int)j->memfd);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, j->p->bytes, j->p->size) != (ssize_t)j->p->size) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return say(j, "cannot write the library into its memfd: %s", strerror(e));
	}
	close(fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)j->memfd);
	uint64_t at = push_string(j, path), h;
	if (!at)
		return say(j, "no room on its stack");
	uint64_t a[2] = { at, RTLD_NOW | RTLD_LOCAL };
	if (call(j, libc_fn(j, "dlopen"), a, 2, &h) < 0)
		return -1;
	if (!h) {
		char msg[256] = "";
		uint64_t e;
		if (call(j, libc_fn(j, "dlerror"), NULL, 0, &e) == 0 && e)
			(void)mstat_tracee_read(&j->t, e, msg, sizeof(msg) - 1);
		msg[sizeof(msg) - 1] = '\0';
		return say(j, "its loader did not load the library: %s", msg);
	}
	j->handle = h;
	return 0;
}

/* Calls entry point `off` of the library with the arguments; its answer
 * in *a. */
static int
entry(struct job *j, uint64_t off, struct mstat_attach_args *a, uint64_t *ret)
{
	if (!j->base && mstat_tracee_read(&j->t, j->handle, &j->base, sizeof(j->base)) < 0)
		return say(j, "cannot read the library's link map");
	uint64_t at = mstat_tracee_push(&j->t, a, sizeof(*a));
	if (!at)
		return say(j, "no room on its stack");
	if (call(j, j->base + off, &at, 1, ret) < 0)
		return -1;
	if (mstat_tracee_read(&j->t, at, a, sizeof(*a)) < 0)
		return say(j, "cannot read the library's answer");
	a->err[sizeof(a->err) - 1] = '\0';
	return 0;
}

/* Step 4: the thread as it was: its errno, the memfd closed (the
 * library closes it once loaded), its registers and mask; let go. */
static void
give_back(struct job *j, bool unload)
{
	uint64_t ret;

	if (j->t.stopped && !j->t.gone) {
		if (unload && j->handle)
			(void)call(j, libc_fn(j, "dlclose"), &j->handle, 1, &ret);
		if (j->memfd >= 0) {
			uint64_t fd = (uint64_t)j->memfd;
			(void)call(j, libc_fn(j, "close"), &fd, 1, &ret);
		}
		if (j->errno_at)
			(void)mstat_tracee_write(&j->t, j->errno_at, &j->errno_was,
						 sizeof(j->errno_was));
	}
	if (j->r->tid)
		j->r->held_ns = mstat_tracee_now() - j->t.stopped_at;
	mstat_tracee_release(&j->t);
}

static int published(struct job *j);

/* Steps 3 and 4 in the taken thread: four calls (errno's address, the
 * memfd, dlopen(), the library's start), each a return trip through the
 * scheduler. */
static int
run(struct job *j)
{
	struct mstat_attach_args a = { .version = MSTAT_ATTACH_ARGS_VERSION,
				       .size = sizeof(a), .memfd = -1 };
	uint64_t ret;

	if (call(j, libc_fn(j, "__errno_location"), NULL, 0, &j->errno_at) < 0)
		return -1;
	(void)mstat_tracee_read(&j->t, j->errno_at, &j->errno_was, sizeof(j->errno_was));
	if (load(j) < 0) {
		give_back(j, true);
		return -1;
	}
	if (j->o->name)
		snprintf(a.name, sizeof(a.name), "%s", j->o->name);
	a.memfd = (int32_t)j->memfd;
	j->memfd = -1; /* the library's to close now */
	if (entry(j, j->p->start, &a, &ret) < 0 || (int32_t)ret != 0) {
		if ((int32_t)ret != 0)
			say(j, "the library refused: %s", a.err);
		give_back(j, true);
		return -1;
	}
	give_back(j, false);
	return published(j);
}

/* Attached, but its state cannot be read: -2, and why. */
static int
gone_since(struct job *j)
{
	switch (mstat_image_fate(&j->im, j->pid)) {
	case IMAGE_EXITED:
		return say(j, "attached; it exited since"), -2;
	case IMAGE_EXECED:
		return say(j, "attached; it exec()ed since"), -2;
	default:
		return say(j, "attached; its state cannot be read"), -2;
	}
}

/* The segment, made by the library's own thread meanwhile: its outcome,
 * read from the process's memory once the library says it is known. */
static int
published(struct job *j)
{
	struct mstat_attach_state st;
	uint64_t deadline = mstat_tracee_now() + (uint64_t)PUBLISH_BUDGET_S * 1000000000u;

	for (;;) {
		if (mstat_image_peek(j->pid, j->base + j->p->state, &st, sizeof(st)) < 0)
			return gone_since(j);
		/* A copy read from the target, whose bytes come in no
		 * promised order: once one says `done`, the rest are read
		 * again, all after the target's release store of `done`
		 * (lib/attach.c), which they precede there. */
		if (atomic_load_explicit(&st.done, memory_order_relaxed)) {
			if (mstat_image_peek(j->pid, j->base + j->p->state, &st,
					     sizeof(st)) < 0 || !mstat_image_same(&j->im, j->pid))
				return gone_since(j);
			break;
		}
		if (mstat_tracee_now() >= deadline)
			return say(j, "attached; its segment is not made yet after %u s",
				   PUBLISH_BUDGET_S), -2;
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	st.status[sizeof(st.status) - 1] = '\0';
	if (st.rc != 0)
		return say(j, "attached, but it counts without a segment: %s", st.status), -2;
	return say(j, "attached: %s", st.status), 0;
}

int
mstat_attach_inject(pid_t pid, const struct payload *p,
		    const struct inject_options *o, struct inject_result *r)
{
	struct job j = { .pid = pid, .p = p, .o = o, .r = r, .memfd = -1 };
	uint64_t began = mstat_tracee_now();
	struct mstat_proc_life l;
	char err[256];
	int rc;

	memset(r, 0, sizeof(*r));
	j.t.mem = -1;
	bool life = mstat_procfs_life(pid, 0, &l) == 0;
	if (kill(pid, 0) < 0 && errno == ESRCH) {
		rc = say(&j, "no such process");
	} else if (life && mstat_proc_state_ended(l.state) && l.threads <= 1) {
		rc = say(&j, "it has exited: a zombie, its parent has not waited for it");
	} else if (life && (l.flags & MSTAT_PF_KTHREAD)) {
		rc = say(&j, "it is a kernel thread: it has no program to load a library into");
	} else {
		if ((rc = check(&j)) == 0 &&
		    mstat_safe_open(&j.safe, pid, &j.im, err, sizeof(err)) < 0)
			rc = say(&j, "%s", err);
		else if (rc == 0 && (rc = take_thread(&j)) == 0)
			rc = run(&j);
		/* Whatever a read of it made of a process that exited or
		 * exec()ed meanwhile, that is what happened: asked once no
		 * thread of it is held. */
		enum image_fate f = rc == -1 ? mstat_image_fate(&j.im, pid) : IMAGE_RUNS;
		if (f != IMAGE_RUNS)
			say(&j, "%s", changed[f]);
	}
	mstat_safe_close(j.safe);
	mstat_image_free(&j.im);
	r->took_ns = mstat_tracee_now() - began;
	return rc;
}
