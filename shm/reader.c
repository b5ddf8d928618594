/* SPDX-License-Identifier: MIT */
/*
 * reader.c - open a segment, validate it, and take consistent snapshots.
 *
 * A read, under an exclusive flock() on the segment (the kernel drops it if
 * the reader dies):
 *
 *   1. if synced_epoch != epoch, an earlier reader rotated and did not
 *      finish: handshake for it first, then synced_epoch = epoch
 *   2. base = generation (epoch + 1) % 4 of every slot: no writer has
 *      touched it since the last handshake, and writers move into it next
 *   3. epoch++                                          (D)
 *      membarrier, for targets in membarrier mode        (M)
 *   4. handshake: each slot whose seq is odd is waited on until seq moves (E)
 *   5. snapshot = base + the three other generations; synced_epoch = epoch (G)
 *
 * A reader writes nothing but `epoch` and `synced_epoch`, and merges or
 * clears nothing, so dying at any point leaves a segment the next reader
 * reads exactly.  docs/design.md gives the argument.
 *
 * Every load from segment memory runs under a guard (guard.h): a segment
 * truncated after it was validated makes the call fail with -EFAULT, not
 * the process die of SIGBUS.
 *
 * Once the target is gone (its owner lock is free, owner.h), there is no
 * writer left to wait for: a read adds up the four generations as they
 * are.  A slot still odd then was cut by the process's death inside an
 * update, and is counted in `cut`.
 */
#include "shm/reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/answer.h"
#include "shm/clock.h"
#include "shm/guard.h"
#include "shm/handshake.h"
#include "shm/name.h"
#include "shm/procfs.h"
#include "shm/owner.h"
#include "shm/sum.h"
#include "shm/validate.h"

/* Private: others hold a pointer and call the functions of reader.h. */
struct mstat_reader {
	uint32_t magic;                  /* MSTAT_READER_MAGIC while open */
	int fd;                          /* the segment; flock()ed while reading */
	struct mstat_shm_header *ctl;    /* control page, read-write */
	const unsigned char *data;       /* from MSTAT_PAGE on, read-only */
	uint64_t size;                   /* bytes of the segment */
	struct mstat_target_info info;
	uint32_t class_count, slot_count, slot_size, slots_offset;
	uint32_t profile_offset, stack_capacity, frame_capacity, module_capacity;
	uint16_t version_minor;
	uint64_t class_max[MSTAT_MAX_CLASSES];
	unsigned wait_budget_us;

	/* The read in progress, between begin and finish. */
	bool rotated;
	bool dead;           /* the owner is gone: a final read, no rotation */
	bool finished;       /* the last read that began got to its end */
	uint64_t epoch;      /* the epoch this read rotated to */
	uint32_t used;       /* slots to handshake and sum */
	struct mstat_handshake hs;
	uint64_t base[MSTAT_ROWS(MSTAT_MAX_CLASSES)][MSTAT_ROW_COUNTERS];
	/* The prior row of the last read that got to its end. */
	uint64_t prior[MSTAT_PRIOR_COUNT];

	char err[256];
};

static void (*step_hook)(enum mstat_read_step, void *);
static void *step_hook_arg;

void
mstat_reader_set_step_hook(void (*hook)(enum mstat_read_step, void *), void *arg)
{
	step_hook = hook;
	step_hook_arg = arg;
}

static inline void
step(enum mstat_read_step s)
{
	if (step_hook)
		step_hook(s, step_hook_arg);
}

/* Epochs at or above this are refused (mstat_reader_begin()). */
#define EPOCH_LIMIT (UINT64_C(1) << 63)

static int
fail(struct mstat_reader *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return rc;
}

static const struct mstat_shm_slot *
slot_at(const struct mstat_reader *r, uint32_t i)
{
	return (const struct mstat_shm_slot *)(r->data +
					       (r->slots_offset - MSTAT_PAGE) +
					       (size_t)i * r->slot_size);
}

/* ---- open and close ---- */

void
mstat_reader_unmap(struct mstat_reader *r)
{
	if (r->data)
		munmap((void *)r->data, r->size - MSTAT_PAGE);
	if (r->ctl)
		munmap(r->ctl, MSTAT_PAGE);
	if (r->fd >= 0)
		close(r->fd);
	r->data = NULL;
	r->ctl = NULL;
	r->fd = -1;
}

struct copy_identity {
	const struct mstat_shm_header *from;
	struct mstat_shm_header *to;
};

/* Under a guard: a private copy of the identity part of the header. */
static void
copy_identity(void *arg)
{
	struct copy_identity *c = arg;
	/* (P) acquire: pairs with the creator's release of magic; the
	 * identity fields written before it are then complete. */
	uint64_t magic = atomic_load_explicit(&c->from->magic, memory_order_acquire);

	memset(c->to, 0, sizeof(*c->to));
	memcpy((char *)c->to + sizeof(c->to->magic),
	       (const char *)c->from + sizeof(c->to->magic),
	       MSTAT_HEADER_IDENTITY_SIZE - sizeof(c->to->magic));
	/* The profile's geometry, written with the identity. */
	memcpy(&c->to->profile_offset, &c->from->profile_offset,
	       offsetof(struct mstat_shm_header, sample_bytes) -
		       offsetof(struct mstat_shm_header, profile_offset));
	atomic_init(&c->to->magic, magic);
}

struct copy_classes {
	struct mstat_reader *r;
	uint32_t classes_offset;
};

/* Under a guard: a private copy of the class table (its size validated). */
static void
copy_classes(void *arg)
{
	struct copy_classes *c = arg;

	memcpy(c->r->class_max, c->r->data + (c->classes_offset - MSTAT_PAGE),
	       (size_t)c->r->class_count * sizeof(uint64_t));
}

/* Validates and maps the segment open at r->fd, called `label`, whose
 * owner must be `uid` (MSTAT_UID_CALLER: the caller checks it). */
static int
attach_fd(struct mstat_reader *r, const char *label, uid_t uid)
{
	struct mstat_shm_header h;
	struct stat st;
	char why[200];
	int rc;

	if (fstat(r->fd, &st) < 0)
		return fail(r, -errno, "%s: %s", label, strerror(errno));
	rc = mstat_validate_stat(&st, uid, why, sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", label, why);

	r->ctl = mmap(NULL, MSTAT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      r->fd, 0);
	if (r->ctl == MAP_FAILED) {
		r->ctl = NULL;
		return fail(r, -errno, "%s: mmap: %s", label, strerror(errno));
	}
	struct copy_identity ci = { r->ctl, &h };
	if (mstat_guard_run(copy_identity, &ci) < 0)
		return fail(r, -EFAULT, "%s: truncated while being opened", label);
	rc = mstat_validate_header(&h, (uint64_t)st.st_size, uid, why,
				   sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", label, why);

	r->size = h.segment_size;
	r->data = mmap(NULL, r->size - MSTAT_PAGE, PROT_READ, MAP_SHARED, r->fd,
		       MSTAT_PAGE);
	if (r->data == MAP_FAILED) {
		r->data = NULL;
		return fail(r, -errno, "%s: mmap: %s", label, strerror(errno));
	}
	r->class_count = h.class_count;
	r->slot_count = h.slot_count;
	r->slot_size = h.slot_size;
	r->slots_offset = h.slots_offset;
	r->profile_offset = h.profile_offset;
	r->stack_capacity = h.stack_capacity;
	r->frame_capacity = h.frame_capacity;
	r->module_capacity = h.module_capacity;
	r->version_minor = h.version_minor;
	struct copy_classes cc = { r, h.classes_offset };
	if (mstat_guard_run(copy_classes, &cc) < 0)
		return fail(r, -EFAULT, "%s: truncated while being opened", label);
	rc = mstat_validate_classes(r->class_max, h.class_count, why, sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", label, why);

	struct mstat_target_info *in = &r->info;
	in->pid = h.pid;
	in->uid = h.uid;
	in->start_time = h.start_time;
	in->created_ns = h.created_ns;
	in->writer_mode = h.writer_mode;
	in->slot_count = h.slot_count;
	in->version_major = h.version_major;
	in->version_minor = h.version_minor;
	in->pid_ns = h.pid_ns;
	in->attached_ns = h.attached_ns;
	memcpy(in->name, h.name, sizeof(in->name)); /* NUL checked above */
	snprintf(in->shm_name, sizeof(in->shm_name), "%s", label);
	return 0;
}

static int
attach(struct mstat_reader *r, const char *shm_name)
{
	pid_t name_pid;
	uint64_t name_start;
	int rc;

	if (mstat_shm_parse_name(shm_name, &name_pid, &name_start) < 0)
		return fail(r, -EINVAL, "%s: not an mstat segment name", shm_name);

	/* O_NOFOLLOW: a symlink planted in /dev/shm is refused, not followed. */
	r->fd = shm_open(shm_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (r->fd < 0)
		return fail(r, -errno, "%s: %s", shm_name, strerror(errno));
	rc = attach_fd(r, shm_name, geteuid());
	if (rc < 0)
		return rc;
	if (r->info.pid != name_pid || r->info.start_time != name_start)
		return fail(r, -EPROTO,
			    "%s: says it belongs to pid %d started at %llu",
			    shm_name, (int)r->info.pid,
			    (unsigned long long)r->info.start_time);
	return 0;
}

static void
copy_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

static struct mstat_reader *
reader_new(char *err, size_t errlen)
{
	struct mstat_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		copy_err(err, errlen, "out of memory");
		return NULL;
	}
	r->magic = MSTAT_READER_MAGIC;
	r->fd = -1;
	r->wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US;
	return r;
}

static int
opened(struct mstat_reader **out, struct mstat_reader *r, int rc, char *err,
       size_t errlen)
{
	if (rc < 0) {
		copy_err(err, errlen, r->err);
		mstat_reader_unmap(r);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
mstat_reader_open_name(struct mstat_reader **out, const char *shm_name,
		       char *err, size_t errlen)
{
	struct mstat_reader *r = reader_new(err, errlen);

	*out = NULL;
	if (!r)
		return -ENOMEM;
	return opened(out, r, attach(r, shm_name), err, errlen);
}

/* A reader of the segment open at `fd` (which it takes), whose owner
 * must be `uid` (as attach_fd()). */
static int
open_fd_of(struct mstat_reader **out, int fd, const char *label, uid_t uid,
	   char *err, size_t errlen)
{
	struct mstat_reader *r = reader_new(err, errlen);

	*out = NULL;
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->fd = fd;
	return opened(out, r, attach_fd(r, label, uid), err, errlen);
}

int
mstat_reader_open_fd(struct mstat_reader **out, int fd, const char *label,
		     char *err, size_t errlen)
{
	return open_fd_of(out, fd, label, geteuid(), err, errlen);
}

int
mstat_reader_open_claimed(struct mstat_reader **out, int fd, const char *label,
			  char *err, size_t errlen)
{
	return open_fd_of(out, fd, label, MSTAT_UID_CALLER, err, errlen);
}

int
mstat_reader_why_none(pid_t pid, char *err, size_t errlen)
{
	char proc[32];
	struct stat st;
	int rc;

	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	/* kill(0) says whether the pid exists here, even where /proc hides
	 * other users' processes; /proc says whose it is, where it can. */
	if (kill(pid, 0) < 0 && errno == ESRCH)
		rc = -ESRCH;
	else if (stat(proc, &st) == 0 && st.st_uid != geteuid())
		rc = -EPERM;
	else
		rc = -ENOENT;
	if (err && errlen) {
		if (rc == -ESRCH)
			snprintf(err, errlen, "pid %d: no such process", (int)pid);
		else if (rc == -EPERM)
			snprintf(err, errlen, "pid %d: no segment of yours: it is "
				 "a process of uid %u, and only uid %u's are read",
				 (int)pid, (unsigned)st.st_uid,
				 (unsigned)geteuid());
		else
			snprintf(err, errlen, "pid %d: no segment: it does not "
				 "count with libmstatshm (mstat-run starts a "
				 "program that does)", (int)pid);
	}
	return rc;
}

int
mstat_reader_open_pid(struct mstat_reader **out, pid_t pid, char *err,
		      size_t errlen)
{
	struct mstat_reader *dead = NULL;
	uint64_t start = 0;
	int have_start, matches = 0, opened = 0, rc = -ENOENT;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	if (pid <= 0) {
		if (err && errlen)
			snprintf(err, errlen, "pid %d: not a process id", (int)pid);
		return -EINVAL;
	}
	/* A live process is matched by start time: a segment left by an
	 * earlier process with the same pid is not it. */
	have_start = mstat_procfs_start_time(pid, &start) == 0;
	d = opendir(MSTAT_SHM_DIR);
	if (!d) {
		rc = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		return rc;
	}
	/* Names with a suffix exist when the plain one was taken (another
	 * pid namespace, or squatted: any number of names, which do not
	 * validate): the segment whose owner lives is it.  Failing that, the
	 * only one that opens (a process gone, for its final read). */
	while ((de = readdir(d))) {
		struct mstat_reader *r;
		pid_t p;
		uint64_t st;

		if (mstat_shm_parse_name(de->d_name, &p, &st) < 0 || p != pid ||
		    (have_start && st != start))
			continue;
		matches++;
		rc = mstat_reader_open_name(&r, de->d_name, err, errlen);
		if (rc < 0)
			continue;
		opened++;
		if (mstat_reader_alive(r) == 1) {
			mstat_reader_close(dead);
			closedir(d);
			*out = r;
			return 0;
		}
		if (dead)
			mstat_reader_close(r);
		else
			dead = r;
	}
	closedir(d);
	if (opened == 1) {
		*out = dead;
		return 0;
	}
	mstat_reader_close(dead);
	if (matches == 0) {
		(void)mstat_reader_why_none(pid, err, errlen);
		return -ENOENT;
	}
	if (opened > 1) {
		if (err && errlen)
			snprintf(err, errlen,
				 "pid %d is gone and left %d segments; open one by name",
				 (int)pid, opened);
		rc = -ENOENT;
	}
	return rc;
}

void
mstat_reader_close(struct mstat_reader *r)
{
	if (!r || r->magic != MSTAT_READER_MAGIC)
		return;
	mstat_reader_unmap(r);
	r->magic = 0;
	free(r);
}

void
mstat_reader_set_wait_budget(struct mstat_reader *r, unsigned usec)
{
	r->wait_budget_us = usec;
}

const struct mstat_target_info *
mstat_reader_info(const struct mstat_reader *r)
{
	return &r->info;
}

const char *
mstat_reader_error(const struct mstat_reader *r)
{
	return r->err;
}

/* ---- a read ---- */

/* The target-written values a read depends on, bounded before use. */
static int
load_used(struct mstat_reader *r, uint32_t *used)
{
	/* (F) pairs with the writer's seq_cst raise of slots_used before its
	 * first section in a new slot: loaded after (D), it covers every slot
	 * whose writer could have seen the old epoch. */
	uint32_t u = atomic_load_explicit(&r->ctl->slots_used, memory_order_seq_cst);

	if (u > r->slot_count)
		return fail(r, -EPROTO, "%s: says %u slots used of %u",
			    r->info.shm_name, u, r->slot_count);
	*used = u;
	return 0;
}

static int
check_live(struct mstat_reader *r)
{
	struct stat st;

	/* Once refused for its size, always: a segment shrunk under us has
	 * faulted a read (the guard), and one that shrank between reads is
	 * found here.  One fstat per read. */
	if (fstat(r->fd, &st) < 0 || (uint64_t)st.st_size != r->size)
		return fail(r, -EPROTO, "%s: was truncated", r->info.shm_name);
	if (atomic_load_explicit(&r->ctl->magic, memory_order_relaxed) !=
	    MSTAT_SHM_MAGIC)
		return fail(r, -EPROTO, "%s: header was overwritten",
			    r->info.shm_name);
	return 0;
}

static void
add_generations(const struct mstat_reader *r, uint32_t n, unsigned gens,
		uint64_t (*sum)[MSTAT_ROW_COUNTERS])
{
	mstat_sum_generations(r->data + (r->slots_offset - MSTAT_PAGE),
			      r->slot_size, n, r->class_count, gens, sum);
}

static void
on_slot(void *unused)
{
	(void)unused;
	step(MSTAT_STEP_HANDSHAKE);
}

static void
handshake_start(struct mstat_reader *r)
{
	mstat_handshake_start(&r->hs, r->data + (r->slots_offset - MSTAT_PAGE),
			      r->slot_size, r->used);
	r->hs.on_slot = on_slot;
}

bool
mstat_reader_poll(struct mstat_reader *r)
{
	return !r->dead && mstat_handshake_poll(&r->hs);
}

int
mstat_reader_alive(const struct mstat_reader *r)
{
	return mstat_owner_alive(r->fd);
}

int
mstat_reader_fd(const struct mstat_reader *r)
{
	return r->fd;
}

struct load_exit {
	const struct mstat_reader *r;
	uint64_t ns;
};

static void
load_exit(void *arg)
{
	struct load_exit *l = arg;

	l->ns = atomic_load_explicit(&l->r->ctl->exit_ns, memory_order_relaxed);
}

uint32_t
mstat_reader_class_count(const struct mstat_reader *r)
{
	return r->class_count;
}

void
mstat_reader_prior(const struct mstat_reader *r, struct mstat_prior *out)
{
#define MSTAT_X(e, f, h) out->f = r->prior[MSTAT_P_##e];
	MSTAT_PRIOR_COUNTERS(MSTAT_X)
#undef MSTAT_X
}

uint64_t
mstat_reader_exit_ns(const struct mstat_reader *r)
{
	struct load_exit l = { r, 0 };

	return mstat_guard_run(load_exit, &l) == 0 ? l.ns : 0;
}

int
mstat_reader_barrier(void)
{
	/* (M) a full barrier on every CPU running a thread of a process
	 * registered for it (the targets in membarrier mode): pairs with the
	 * compiler barrier between their (A') and (B'). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) < 0)
		return -errno;
	return 0;
}

bool
mstat_reader_needs_barrier(const struct mstat_reader *r)
{
	return !r->dead && r->info.writer_mode == MSTAT_MODE_MEMBARRIER;
}

static int
unlock_with(struct mstat_reader *r, int rc)
{
	r->rotated = false;
	flock(r->fd, LOCK_UN);
	return rc;
}

/* This reader may not call membarrier (a seccomp profile, a kernel before
 * 4.16): no target in membarrier mode can be read by it.  Said for each,
 * with what to do. */
static int
barrier_failed(struct mstat_reader *r, int rc)
{
	return unlock_with(r, fail(r, rc, "membarrier refused to this reader "
				   "(%s): allow the system call, or start the "
				   "process with MSTAT_MODE=fenced",
				   strerror(-rc)));
}

int
mstat_reader_begin(struct mstat_reader *r, unsigned catchup_budget_us)
{
	uint64_t e, synced;
	uint32_t used = 0;
	int rc;

	if (r->rotated)
		unlock_with(r, 0);
	r->dead = false;
	r->finished = false;
	rc = check_live(r);
	if (rc < 0)
		return rc;
	rc = mstat_reader_alive(r);
	if (rc < 0)
		return fail(r, rc, "%s: owner lock: %s", r->info.shm_name,
			    strerror(-rc));
	if (rc == 0) {
		/* No writer is left: nothing to rotate or wait for. */
		r->dead = true;
		return load_used(r, &r->used);
	}
	if (flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return fail(r, -EBUSY, "%s: another reader is reading it",
				    r->info.shm_name);
		return fail(r, -errno, "%s: flock: %s", r->info.shm_name,
			    strerror(errno));
	}
	step(MSTAT_STEP_LOCKED);

	e = atomic_load_explicit(&r->ctl->epoch, memory_order_seq_cst);
	/* (G) acquire: pairs with the release of the last reader that
	 * finished (the flock orders them as well). */
	synced = atomic_load_explicit(&r->ctl->synced_epoch, memory_order_acquire);
	/* Readers move the epoch one rotation at a time from 0, each after
	 * the last one's handshake: it is `synced` or one more, and 2^63
	 * rotations are out of reach.  Anything else was written by someone
	 * else. */
	if (e >= EPOCH_LIMIT || (e != synced && e != synced + 1))
		return unlock_with(r, fail(r, -EPROTO,
			"%s: epoch %llu with %llu synced: not written by a reader",
			r->info.shm_name, (unsigned long long)e,
			(unsigned long long)synced));
	if (synced != e) {
		/* Step 1: a reader rotated to `e` and died or gave up before
		 * its handshake ended.  Finish it, or generation (e + 1) % 4
		 * may still have a writer in it. */
		if (mstat_reader_needs_barrier(r) && (rc = mstat_reader_barrier()) < 0)
			return barrier_failed(r, rc);
		if ((rc = load_used(r, &r->used)) < 0)
			return unlock_with(r, rc);
		handshake_start(r);
		if (!mstat_handshake_wait(&r->hs, catchup_budget_us, CLOCK_MONOTONIC))
			return mstat_reader_abandon(r);
		atomic_store_explicit(&r->ctl->synced_epoch, e, memory_order_release);
		step(MSTAT_STEP_CAUGHT_UP);
	}

	/* Step 2: the base.  Slots raised into use after this load start
	 * with that generation zero: only generation e % 4 is written until
	 * the rotation below. */
	if ((rc = load_used(r, &used)) < 0)
		return unlock_with(r, rc);
	memset(r->base, 0, MSTAT_ROWS(r->class_count) * sizeof(r->base[0]));
	add_generations(r, used, MSTAT_GEN_BIT(MSTAT_GEN_OF(e + 1)), r->base);
	step(MSTAT_STEP_BASE_READ);

	/* Step 3. (D) seq_cst RMW: pairs with (B) through (A)/(E); a full
	 * fence in itself, which fenced mode needs and no more. */
	r->epoch = atomic_fetch_add_explicit(&r->ctl->epoch, 1,
					     memory_order_seq_cst) + 1;
	r->rotated = true;
	step(MSTAT_STEP_ROTATED);
	return 0;
}

/* Step 4 set-up, after the barrier. */
static int
handshake_begin(struct mstat_reader *r)
{
	int rc = r->dead ? 0 : load_used(r, &r->used);

	if (rc < 0)
		return unlock_with(r, rc);
	handshake_start(r);
	if (r->dead)
		r->hs.used = 0; /* no writer left to wait for */
	return 0;
}

int
mstat_reader_abandon(struct mstat_reader *r)
{
	const struct mstat_shm_slot *s = slot_at(r, r->hs.next);
	unsigned tid = atomic_load_explicit(&s->head.tid, memory_order_relaxed);

	fail(r, -EAGAIN,
	     "pid %d: slot %u (tid %u) stayed inside an update (stopped?); "
	     "will finish on a later read", (int)r->info.pid, r->hs.next, tid);
	return unlock_with(r, -EAGAIN);
}

/* The exiting thread's exit_flags (every writer of format 6 keeps
 * them). */
static uint32_t
exit_flags(const struct mstat_reader *r)
{
	return atomic_load_explicit(&r->ctl->exit_flags, memory_order_relaxed);
}

/* The public state: the target's own word, and whether it lives.  Gone
 * after EXITING, it exited if its exit ran to its end; if not, a signal
 * killed it during its exit (its destructors, its atexit handlers). */
static uint32_t
public_state(const struct mstat_reader *r)
{
	uint32_t s = atomic_load_explicit(&r->ctl->state, memory_order_relaxed);

	/* EXECED says what its owner lock's going means: an exec(), not a
	 * death.  The image marks it before its exec() (lib/exec.c): while
	 * the lock is held, the exec() is under way, or failed.  (X')
	 * relaxed: pairs with the lock's going (the exec's system call is
	 * after the image's store), which `dead` was read from. */
	if (s == MSTAT_STATE_EXECED)
		return r->dead ? MSTAT_EXECED : MSTAT_RUNNING;
	if (!r->dead)
		return s == MSTAT_STATE_EXITING ? MSTAT_EXITING : MSTAT_RUNNING;
	return s == MSTAT_STATE_EXITING &&
			       (exit_flags(r) & (MSTAT_EXIT_BUSY | MSTAT_EXIT_DONE)) ==
				       MSTAT_EXIT_DONE
		       ? MSTAT_EXITED
		       : MSTAT_KILLED;
}

/* A final read: every generation as it is.  After an exit, the target
 * waited for the updates in flight and says which it could not wait for
 * (exit_cut); a seq still odd then is an update that stopped before it
 * added anything.  Its exiting thread counted on, and says whether its
 * death found it inside an update (MSTAT_EXIT_BUSY).  A process killed
 * before its exit says nothing: each slot still odd was cut by its death
 * inside an update. */
static uint32_t
sum_final(struct mstat_reader *r)
{
	uint32_t cut = 0;

	memset(r->base, 0, MSTAT_ROWS(r->class_count) * sizeof(r->base[0]));
	add_generations(r, r->used, MSTAT_GENS_ALL, r->base);
	/* (X) acquire, with the state: the target's exit_cut store is before
	 * its release store of EXITING.  exit_flags came later still, and
	 * the owner is gone: its last value is here. */
	if (atomic_load_explicit(&r->ctl->state, memory_order_acquire) ==
	    MSTAT_STATE_EXITING) {
		cut = atomic_load_explicit(&r->ctl->exit_cut, memory_order_relaxed);
		if (cut > r->used)
			cut = r->used;
		cut += (exit_flags(r) & MSTAT_EXIT_BUSY) != 0;
	} else {
		for (uint32_t i = 0; i < r->used; i++)
			cut += atomic_load_explicit(&slot_at(r, i)->head.seq,
						    memory_order_acquire) & 1;
	}
	r->epoch = atomic_load_explicit(&r->ctl->epoch, memory_order_relaxed);
	return cut;
}

static int
truncated(struct mstat_reader *r)
{
	if (r->rotated)
		unlock_with(r, 0);
	return fail(r, -EFAULT, "%s: truncated while being read",
		    r->info.shm_name);
}

int
mstat_reader_finish(struct mstat_reader *r, struct mstat_snapshot *out)
{
	uint64_t (*acc)[MSTAT_ROW_COUNTERS] = r->base;
	const unsigned cc = r->class_count;
	uint32_t cut = 0;

	if (r->dead) {
		cut = sum_final(r);
	} else {
		/* Step 5: the generations no writer can touch now, every one
		 * but the epoch's own, added to the base.  Still under the
		 * lock: the next rotation makes one of them writable again. */
		add_generations(r, r->used,
				MSTAT_GENS_ALL & ~MSTAT_GEN_BIT(MSTAT_GEN_OF(r->epoch)),
				acc);
	}

	/* Cut while being read and grown back since (a writer reserving a
	 * slot extends the file, with zeros): no fault said so, the size
	 * does.  A segment cut to its old size again is the scribbler's case
	 * (docs/design.md). */
	struct stat st;

	if (fstat(r->fd, &st) < 0 || (uint64_t)st.st_size != r->size)
		return truncated(r);

	/* Only what the snapshot holds: its header and class_count classes
	 * (a whole snapshot, zeroed, costs a tick over thousands of targets
	 * more than the reads do). */
	memset(out, 0, offsetof(struct mstat_snapshot, class_max_size));
	out->epoch = r->epoch;
	out->state = public_state(r);
	out->cut = cut;
	out->threads = r->dead ? 0 : atomic_load_explicit(&r->ctl->threads,
							  memory_order_relaxed);
	out->overflowed = atomic_load_explicit(&r->ctl->overflowed,
					       memory_order_relaxed);
	out->slots_used = r->used;
	out->class_count = cc;
	memcpy(out->class_max_size, r->class_max, cc * sizeof(r->class_max[0]));
	mstat_sum_counts(out, (const uint64_t (*)[MSTAT_ROW_COUNTERS])acc, cc);
	memcpy(r->prior, acc[MSTAT_PRIOR_ROW(cc)], sizeof(r->prior));
	step(MSTAT_STEP_SUMMED);
	if (!r->dead) {
		/* (G) release: the next reader's acquire finds this epoch
		 * synced. */
		atomic_store_explicit(&r->ctl->synced_epoch, r->epoch,
				      memory_order_release);
		step(MSTAT_STEP_SYNCED);
		unlock_with(r, 0);
	}
	r->finished = true;
	return 0;
}

/* After a guarded read was cut short by SIGBUS: the segment no longer has
 * the size it was validated with, and is not to be read again. */
struct snapshot_one {
	struct mstat_reader *r;
	struct mstat_snapshot *out;
	int rc;
};

static void
snapshot_one(void *arg)
{
	struct snapshot_one *a = arg;
	struct mstat_reader *r = a->r;
	uint64_t deadline = mstat_clock_us(CLOCK_MONOTONIC) + MSTAT_LOCK_BUDGET_US;
	int rc;

	while ((rc = mstat_reader_begin(r, r->wait_budget_us)) == -EBUSY) {
		if (mstat_clock_us(CLOCK_MONOTONIC) >= deadline) {
			a->rc = rc;
			return;
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	if (rc < 0) {
		a->rc = rc;
		return;
	}
	if (mstat_reader_needs_barrier(r) && (rc = mstat_reader_barrier()) < 0) {
		a->rc = barrier_failed(r, rc);
		return;
	}
	if ((rc = handshake_begin(r)) < 0) {
		a->rc = rc;
		return;
	}
	if (!mstat_handshake_wait(&r->hs, r->wait_budget_us,
				  CLOCK_MONOTONIC)) {
		a->rc = mstat_reader_abandon(r);
		return;
	}
	a->rc = mstat_reader_finish(r, a->out);
}

int
mstat_reader_snapshot(struct mstat_reader *r, struct mstat_snapshot *out)
{
	struct snapshot_one a = { r, out, 0 };
	int rc;

	if (!r || r->magic != MSTAT_READER_MAGIC)
		return -EINVAL;
	if ((rc = mstat_guard_run(snapshot_one, &a)) == -EFAULT)
		return truncated(r);
	if (rc < 0)
		return fail(r, rc, "SIGBUS guard: %s", strerror(-rc));
	return a.rc;
}

struct snapshot_many {
	struct mstat_reader **rs;
	size_t n;
	struct mstat_snapshot **outs;
	int *rcs;
	unsigned budget_us;
};

static void
snapshot_many(void *arg)
{
	struct snapshot_many *a = arg;
	struct mstat_reader **rs = a->rs;
	struct mstat_snapshot **outs = a->outs;
	int *rcs = a->rcs;
	size_t n = a->n;
	unsigned budget_us = a->budget_us;
	bool barrier = false, pending = true;
	uint64_t deadline;
	unsigned spins = 0;

	/* Catching up is not waited for here: a slot still stalled is
	 * reported now and retried on the next tick. */
	for (size_t i = 0; i < n; i++) {
		rcs[i] = mstat_reader_begin(rs[i], 0);
		if (rcs[i] == 0 && mstat_reader_needs_barrier(rs[i]))
			barrier = true;
	}
	if (barrier) {
		int rc = mstat_reader_barrier();
		for (size_t i = 0; rc < 0 && i < n; i++)
			if (rcs[i] == 0 && mstat_reader_needs_barrier(rs[i]))
				rcs[i] = barrier_failed(rs[i], rc);
	}
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			rcs[i] = handshake_begin(rs[i]);

	/* One wait for all: a stalled target costs the tick one budget,
	 * counted from here. */
	deadline = mstat_clock_us(CLOCK_MONOTONIC) + budget_us;
	while (pending) {
		pending = false;
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == 0 && rs[i]->rotated && mstat_reader_poll(rs[i]))
				pending = true;
		if (!pending)
			break;
		if (++spins < 128) {
			mstat_handshake_relax();
			continue;
		}
		if (mstat_clock_us(CLOCK_MONOTONIC) >= deadline)
			break;
		sched_yield();
	}
	for (size_t i = 0; i < n; i++) {
		if (rcs[i] != 0)
			continue;
		if (mstat_reader_poll(rs[i]))
			rcs[i] = mstat_reader_abandon(rs[i]);
		else
			rcs[i] = mstat_reader_finish(rs[i], outs[i]);
	}
}

void
mstat_reader_snapshot_many(struct mstat_reader **rs, size_t n,
			   struct mstat_snapshot **outs, int *rcs,
			   unsigned budget_us)
{
	struct snapshot_many a = { rs, n, outs, rcs, budget_us };
	int rc;

	for (size_t i = 0; i < n; i++)
		rcs[i] = -EINTR; /* not reached, if a SIGBUS cuts the pass */
	if ((rc = mstat_guard_run(snapshot_many, &a)) == 0)
		return;
	/* A SIGBUS cut the pass short: the segment that shrank under its
	 * mapping is dropped; the others catch up on the next pass. */
	for (size_t i = 0; i < n; i++) {
		struct mstat_reader *r = rs[i];
		struct stat st;

		if (rc == -EFAULT &&
		    (fstat(r->fd, &st) < 0 || (uint64_t)st.st_size != r->size)) {
			rcs[i] = truncated(r);
		} else if (rc == -EFAULT && r->finished && rcs[i] == 0) {
			continue; /* read whole before the fault */
		} else if (rc == -EFAULT) {
			if (r->rotated)
				mstat_reader_abandon(r);
			rcs[i] = fail(r, -EAGAIN, "%s: read cut short by another "
				      "segment's truncation", r->info.shm_name);
		} else {
			rcs[i] = fail(r, rc, "SIGBUS guard: %s", strerror(-rc));
		}
	}
}

/* ---- the sampled heap profile ---- */

struct read_profile {
	const struct mstat_reader *r;
	struct mstat_profile *out;
	uint32_t *kept; /* per stack entry: its index in out->stacks + 1, or
			 * 0 if left out */
};

/* a + b, or UINT64_MAX if that wraps: monotonic, so sums of counts with
 * frees <= allocs keep it. */
static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The live samples' births (layout.h) onto the stacks read: entries
 * `kept` says were. */
static void
read_births(const struct read_profile *a, const _Atomic uint64_t *births,
	    uint32_t entries)
{
	const uint64_t time = (UINT64_C(1) << MSTAT_BIRTH_BITS) - 1;

	for (uint32_t i = 0; i < MSTAT_LIVE_SAMPLES; i++) {
		/* (T) relaxed: a word, whole; its block live or gone. */
		uint64_t w = atomic_load_explicit(&births[i], memory_order_relaxed);
		uint64_t e = (w >> MSTAT_BIRTH_BITS) - 1;
		if (w == 0 || e >= entries || !a->kept[e])
			continue;
		struct mstat_profile_stack *s = &a->out->stacks[a->kept[e] - 1];
		uint64_t t = w & time;
		s->born_min = s->born_n == 0 || t < s->born_min ? t : s->born_min;
		s->born_sum += t; /* at most 2^15 words of 2^48 */
		s->born_n++;
	}
}

/* Under a guard: the profile's entries, each loaded in the order its
 * writer published it (lib/profile.c), into private memory, bounded by
 * the geometry validated at attach. */
static void
read_profile(void *arg)
{
	struct read_profile *a = arg;
	const struct mstat_reader *r = a->r;
	struct mstat_profile *out = a->out;
	const unsigned char *base = r->data + (r->profile_offset - MSTAT_PAGE);
	const struct mstat_shm_profile *hp = (const void *)base;
	const struct mstat_shm_stack *st =
		(const void *)(base + MSTAT_PROFILE_STACKS_OFFSET);
	const _Atomic uint64_t *frames =
		(const void *)(base + MSTAT_PROFILE_FRAMES_OFFSET(r->stack_capacity));
	const struct mstat_shm_module *mods = (const void *)(
		base + MSTAT_PROFILE_MODULES_OFFSET(r->stack_capacity, r->frame_capacity));
	const struct mstat_shm_lifetimes *lt = (const void *)(
		base + MSTAT_PROFILE_LIFETIMES_OFFSET(r->stack_capacity,
						      r->frame_capacity,
						      r->module_capacity));

	out->sample_bytes = atomic_load_explicit(&r->ctl->sample_bytes,
						 memory_order_relaxed);
	out->weighted = true; /* every segment of format 6 */
	out->has_objects = r->version_minor >= 1;
	/* The counter's rate: from when the target set its profile up to
	 * now.  Written before any entry is published (J). */
	out->tick0 = hp->tick0;
	out->ns0 = hp->ns0;
	out->now_tick = mstat_clock_ticks();
	out->now_ns = mstat_clock_mono_ns();
	/* Pages the target never wrote are holes: they read as zeros, an
	 * empty profile. */
	out->samples = atomic_load_explicit(&hp->samples, memory_order_relaxed);
	out->dropped = atomic_load_explicit(&hp->dropped, memory_order_relaxed);
	/* (L) acquire: pairs with the target's release after each entry. */
	uint32_t nm = atomic_load_explicit(&hp->modules_used, memory_order_acquire);
	if (nm > r->module_capacity)
		nm = r->module_capacity;
	for (uint32_t i = 0; i < nm; i++) {
		struct mstat_profile_module *m = &out->modules[out->nmodules];
		m->start = mods[i].start;
		m->end = mods[i].end;
		m->bias = mods[i].bias;
		m->build_id_len = mods[i].build_id_len <= MSTAT_BUILD_ID_MAX
					  ? mods[i].build_id_len : 0;
		memcpy(m->build_id, mods[i].build_id, sizeof(m->build_id));
		memcpy(m->path, mods[i].path, sizeof(m->path));
		m->path[sizeof(m->path) - 1] = '\0';
		if (m->start < m->end)
			out->nmodules++;
	}
	/* Relaxed: each entry is published on its own, by (J). */
	uint32_t ns = atomic_load_explicit(&hp->stacks_used, memory_order_relaxed);
	if (ns > r->stack_capacity)
		ns = r->stack_capacity;
	for (uint32_t i = 0; i < ns; i++) {
		const struct mstat_shm_stack *e = &st[i];
		/* (J) acquire: pairs with the release of depth after the
		 * frames; 0 for an entry free or being made. */
		uint32_t d = atomic_load_explicit(&e->depth, memory_order_acquire);
		uint32_t off = e->frames_offset;
		if (d == 0 || d > MSTAT_STACK_DEPTH || off > r->frame_capacity ||
		    d > r->frame_capacity - off)
			continue;
		struct mstat_profile_stack *s = &out->stacks[out->nstacks];
		/* (K) acquire, frees first: pairs with the release adds of a
		 * free, which follow its allocation's adds. */
		s->frees = atomic_load_explicit(&e->frees, memory_order_acquire);
		s->free_bytes = atomic_load_explicit(&e->free_bytes, memory_order_acquire);
		s->free_objects = out->has_objects
					  ? atomic_load_explicit(&e->free_objects,
								 memory_order_acquire)
					  : 0;
		s->free_weight = 0;
		for (uint32_t b = 0; b < MSTAT_LIFETIMES; b++) {
			s->lifetimes[b] = atomic_load_explicit(&lt[i].freed[b],
							       memory_order_acquire);
			s->free_weight = add_sat(s->free_weight, s->lifetimes[b]);
		}
		s->allocs = atomic_load_explicit(&e->allocs, memory_order_relaxed);
		s->alloc_bytes = atomic_load_explicit(&e->alloc_bytes, memory_order_relaxed);
		s->alloc_objects = out->has_objects
					   ? atomic_load_explicit(&e->alloc_objects,
								  memory_order_relaxed)
					   : 0;
		s->alloc_weight = out->weighted ? atomic_load_explicit(&e->alloc_weight,
									memory_order_relaxed) : 0;
		/* A writer never shows a free without its allocation (K):
		 * an entry that does was not written by one. */
		if (s->frees > s->allocs || s->free_bytes > s->alloc_bytes ||
		    s->free_objects > s->alloc_objects ||
		    s->free_weight > s->alloc_weight)
			continue;
		s->depth = d;
		for (uint32_t k = 0; k < d; k++)
			s->frames[k] = atomic_load_explicit(&frames[off + k],
							    memory_order_relaxed);
		if (s->allocs) {
			s->born_n = s->born_sum = s->born_min = 0;
			a->kept[i] = ++out->nstacks;
		}
	}
	read_births(a, (const void *)(base + MSTAT_PROFILE_BIRTHS_OFFSET(
					      r->stack_capacity, r->frame_capacity,
					      r->module_capacity)), ns);
}

static int
stack_order(const void *a, const void *b)
{
	const struct mstat_profile_stack *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->frames, y->frames, x->depth * sizeof(x->frames[0]));
}

int
mstat_reader_profile(struct mstat_reader *r, struct mstat_profile *out)
{
	memset(out, 0, sizeof(*out));
	out->stacks = calloc(r->stack_capacity, sizeof(*out->stacks));
	out->modules = calloc(r->module_capacity, sizeof(*out->modules));
	uint32_t *kept = calloc(r->stack_capacity, sizeof(*kept));
	if (!out->stacks || !out->modules || !kept) {
		free(kept);
		mstat_reader_profile_release(out);
		return fail(r, -ENOMEM, "out of memory");
	}
	struct read_profile a = { r, out, kept };
	int rc = mstat_guard_run(read_profile, &a);
	free(kept);
	if (rc < 0) {
		mstat_reader_profile_release(out);
		return fail(r, rc, "%s: cut while its profile was read",
			    r->info.shm_name);
	}
	/* Duplicates (one stack entered twice) side by side, then merged. */
	qsort(out->stacks, out->nstacks, sizeof(*out->stacks), stack_order);
	uint32_t n = 0;
	for (uint32_t i = 0; i < out->nstacks; i++) {
		struct mstat_profile_stack *s = &out->stacks[i];
		if (n && stack_order(&out->stacks[n - 1], s) == 0) {
			struct mstat_profile_stack *t = &out->stacks[n - 1];
			t->allocs = add_sat(t->allocs, s->allocs);
			t->alloc_bytes = add_sat(t->alloc_bytes, s->alloc_bytes);
			t->frees = add_sat(t->frees, s->frees);
			t->free_bytes = add_sat(t->free_bytes, s->free_bytes);
			t->alloc_objects = add_sat(t->alloc_objects, s->alloc_objects);
			t->free_objects = add_sat(t->free_objects, s->free_objects);
			t->alloc_weight = add_sat(t->alloc_weight, s->alloc_weight);
			t->free_weight = add_sat(t->free_weight, s->free_weight);
			for (uint32_t b = 0; b < MSTAT_LIFETIMES; b++)
				t->lifetimes[b] = add_sat(t->lifetimes[b],
							  s->lifetimes[b]);
			if (s->born_n && (!t->born_n || s->born_min < t->born_min))
				t->born_min = s->born_min;
			t->born_sum += s->born_sum;
			t->born_n += s->born_n;
		} else {
			if (n != i)
				out->stacks[n] = *s;
			n++;
		}
	}
	out->nstacks = n;
	return 0;
}

double
mstat_reader_profile_ns_per_tick(const struct mstat_profile *p)
{
	if (p->now_tick <= p->tick0 || p->now_ns <= p->ns0)
		return 0;
	return (double)(p->now_ns - p->ns0) / (double)(p->now_tick - p->tick0);
}

void
mstat_reader_profile_release(struct mstat_profile *p)
{
	free(p->stacks);
	free(p->modules);
	memset(p, 0, sizeof(*p));
}

struct request {
	struct mstat_shm_header *h;
	uint64_t v;
};

static void
store_request(void *arg)
{
	struct request *q = arg;

	/* (U) relaxed: a value the target bounds and applies; it publishes
	 * nothing else. */
	atomic_store_explicit(&q->h->sample_request, q->v, memory_order_relaxed);
}

int
mstat_reader_request_sampling(struct mstat_reader *r, uint64_t bytes)
{
	if (bytes > MSTAT_SAMPLE_MAX)
		return fail(r, -EINVAL, "a sampling interval of at most %llu bytes",
			    (unsigned long long)MSTAT_SAMPLE_MAX);
	struct request q = { r->ctl, MSTAT_SAMPLE_REQUEST | bytes };
	if (mstat_guard_run(store_request, &q) < 0)
		return fail(r, -EFAULT, "%s: cut while being written",
			    r->info.shm_name);
	return 0;
}

/* ---- the allocator (layout.h, struct mstat_shm_alloc) ---- */

/* Tries at an answer being written before a read gives it up. */
#define ALLOC_TRIES 4

struct alloc_read {
	struct mstat_shm_alloc *a;
	struct mstat_alloc_info *out;
	bool ask;
};

static void
load_alloc(void *arg)
{
	struct alloc_read *q = arg;
	struct mstat_shm_alloc *a = q->a;
	struct mstat_alloc_info *o = q->out;
	struct mstat_alloc_figures f;

	o->allocator = a->allocator;
	o->pool_own_offset = a->pool_own_offset;
	o->pool_size = a->pool_size;
	/* Relaxed: values, publishing nothing. */
	o->pool_base = atomic_load_explicit(&a->pool_base, memory_order_relaxed);
	o->answered = mstat_answer_read(a, &f, ALLOC_TRIES);
	if (o->answered) {
		o->answer_ns = f.answer_ns;
		o->resident = f.resident;
		o->metadata = f.metadata;
	}
	if (q->ask && (o->allocator == MSTAT_ALLOCATOR_JEMALLOC ||
		       o->allocator == MSTAT_ALLOCATOR_TCMALLOC))
		/* (N) relaxed: a value the target only compares; it
		 * publishes nothing. */
		atomic_fetch_add_explicit(&a->request, 1, memory_order_relaxed);
}

int
mstat_reader_alloc(struct mstat_reader *r, bool ask, struct mstat_alloc_info *out)
{
	struct alloc_read q = {
		(struct mstat_shm_alloc *)((char *)r->ctl + MSTAT_ALLOC_OFFSET),
		out, ask,
	};

	memset(out, 0, sizeof(*out));
	if (mstat_guard_run(load_alloc, &q) < 0) {
		memset(out, 0, sizeof(*out));
		return fail(r, -EFAULT, "%s: cut while being read", r->info.shm_name);
	}
	/* The target's to write: a pool no library makes is none. */
	if (out->pool_size == 0 || out->pool_size > MSTAT_POOL_SIZE_LIMIT ||
	    out->pool_own_offset > out->pool_size ||
	    out->pool_base > UINT64_MAX - out->pool_size)
		out->pool_base = out->pool_size = out->pool_own_offset = 0;
	return 0;
}

const struct mstat_profile_module *
mstat_reader_profile_module_of(const struct mstat_profile *p, uint64_t pc)
{
	for (uint32_t i = 0; i < p->nmodules; i++)
		if (pc - p->modules[i].start < p->modules[i].end - p->modules[i].start)
			return &p->modules[i];
	return NULL;
}
