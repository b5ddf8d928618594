/* SPDX-License-Identifier: MIT */
/*
 * reader.c - open a segment, validate it, and take consistent snapshots.
 *
 * A read, under an exclusive flock() on the segment (the kernel drops it if
 * the reader dies):
 *
 *   1. if synced_epoch != epoch, an earlier reader rotated and did not
 *      finish: handshake for it first, then synced_epoch = epoch
 *   2. base = generation (epoch + 1) % 3 of every slot: no writer has
 *      touched it since the last handshake, and writers move into it next
 *   3. epoch++                                          (D)
 *      membarrier, for targets in membarrier mode        (M)
 *   4. handshake: each slot whose seq is odd is waited on until seq moves (E)
 *   5. snapshot = base + the two other generations; synced_epoch = epoch (G)
 *
 * A reader writes nothing but `epoch` and `synced_epoch`, and merges or
 * clears nothing, so dying at any point leaves a segment the next reader
 * reads exactly.  docs/design.md gives the argument.
 */
#include "reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
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

#include "name.h"
#include "sum.h"
#include "validate.h"

#define SHM_DIR "/dev/shm"

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

static int
fail(struct mstat_reader *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return rc;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
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

static int
attach(struct mstat_reader *r, const char *shm_name)
{
	struct mstat_shm_header h;
	struct stat st;
	pid_t name_pid;
	uint64_t name_start;
	char why[200];
	int rc;

	if (mstat_shm_parse_name(shm_name, &name_pid, &name_start) < 0)
		return fail(r, -EINVAL, "%s: not an mstat segment name", shm_name);

	/* O_NOFOLLOW: a symlink planted in /dev/shm is refused, not followed. */
	r->fd = shm_open(shm_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (r->fd < 0)
		return fail(r, -errno, "%s: %s", shm_name, strerror(errno));
	if (fstat(r->fd, &st) < 0)
		return fail(r, -errno, "%s: %s", shm_name, strerror(errno));
	rc = mstat_validate_stat(&st, geteuid(), why, sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", shm_name, why);

	r->ctl = mmap(NULL, MSTAT_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      r->fd, 0);
	if (r->ctl == MAP_FAILED) {
		r->ctl = NULL;
		return fail(r, -errno, "%s: mmap: %s", shm_name, strerror(errno));
	}
	/* (P) acquire: pairs with the creator's release of magic; the
	 * identity fields written before it are then complete. */
	uint64_t magic = atomic_load_explicit(&r->ctl->magic, memory_order_acquire);
	memset(&h, 0, sizeof(h));
	memcpy((char *)&h + sizeof(h.magic), (const char *)r->ctl + sizeof(h.magic),
	       MSTAT_HEADER_IDENTITY_SIZE - sizeof(h.magic));
	atomic_init(&h.magic, magic);
	rc = mstat_validate_header(&h, (uint64_t)st.st_size, geteuid(), why,
				   sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", shm_name, why);
	if (h.pid != name_pid || h.start_time != name_start)
		return fail(r, -EPROTO,
			    "%s: says it belongs to pid %d started at %llu",
			    shm_name, (int)h.pid,
			    (unsigned long long)h.start_time);

	r->size = h.segment_size;
	r->data = mmap(NULL, r->size - MSTAT_PAGE, PROT_READ, MAP_SHARED, r->fd,
		       MSTAT_PAGE);
	if (r->data == MAP_FAILED) {
		r->data = NULL;
		return fail(r, -errno, "%s: mmap: %s", shm_name, strerror(errno));
	}
	r->class_count = h.class_count;
	r->slot_count = h.slot_count;
	r->slot_size = h.slot_size;
	r->slots_offset = h.slots_offset;
	memcpy(r->class_max, r->data + (h.classes_offset - MSTAT_PAGE),
	       (size_t)h.class_count * sizeof(uint64_t));
	rc = mstat_validate_classes(r->class_max, h.class_count, why, sizeof(why));
	if (rc < 0)
		return fail(r, rc, "%s: %s", shm_name, why);

	struct mstat_target_info *in = &r->info;
	in->pid = h.pid;
	in->uid = h.uid;
	in->start_time = h.start_time;
	in->created_ns = h.created_ns;
	in->writer_mode = h.writer_mode;
	in->slot_count = h.slot_count;
	in->version_major = h.version_major;
	in->version_minor = h.version_minor;
	memcpy(in->name, h.name, sizeof(in->name)); /* NUL checked above */
	snprintf(in->shm_name, sizeof(in->shm_name), "%s", shm_name);
	return 0;
}

static void
copy_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int
mstat_reader_open_name(struct mstat_reader **out, const char *shm_name,
		       char *err, size_t errlen)
{
	struct mstat_reader *r = calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (!r) {
		copy_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->magic = MSTAT_READER_MAGIC;
	r->fd = -1;
	r->wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US;
	rc = attach(r, shm_name);
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
mstat_reader_open_pid(struct mstat_reader **out, pid_t pid, char *err,
		      size_t errlen)
{
	char found[MSTAT_SHM_NAME_MAX] = "";
	uint64_t start = 0;
	int have_start, matches = 0;
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
	have_start = mstat_proc_start_time(pid, &start) == 0;
	d = opendir(SHM_DIR);
	if (!d) {
		int rc = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", SHM_DIR, strerror(errno));
		return rc;
	}
	while ((de = readdir(d))) {
		pid_t p;
		uint64_t st;

		if (mstat_shm_parse_name(de->d_name, &p, &st) < 0 || p != pid)
			continue;
		if (have_start && st != start)
			continue;
		if (strlen(de->d_name) < sizeof(found))
			strcpy(found, de->d_name);
		matches++;
	}
	closedir(d);
	if (matches == 0) {
		if (err && errlen)
			snprintf(err, errlen,
				 "pid %d: no segment (is it %s with libmstatshm?)",
				 (int)pid, have_start ? "running" : "alive");
		return -ENOENT;
	}
	if (matches > 1) {
		if (err && errlen)
			snprintf(err, errlen,
				 "pid %d is gone and left %d segments; open one by name",
				 (int)pid, matches);
		return -ENOENT;
	}
	return mstat_reader_open_name(out, found, err, errlen);
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

	if (atomic_load_explicit(&r->ctl->magic, memory_order_relaxed) !=
	    MSTAT_SHM_MAGIC)
		return fail(r, -EPROTO, "%s: header was overwritten",
			    r->info.shm_name);
	/* A segment shrunk under us would raise SIGBUS on the next load. */
	if (fstat(r->fd, &st) < 0 || (uint64_t)st.st_size != r->size)
		return fail(r, -EPROTO, "%s: was truncated", r->info.shm_name);
	return 0;
}

static void
add_generation(const struct mstat_reader *r, uint32_t n, unsigned gen,
	       uint64_t (*sum)[MSTAT_ROW_COUNTERS])
{
	mstat_sum_generation(r->data + (r->slots_offset - MSTAT_PAGE),
			     r->slot_size, n, r->class_count, gen, sum);
}

static void
handshake_start(struct mstat_reader *r)
{
	r->hs_next = 0;
	r->hs_odd = 0;
}

bool
mstat_reader_poll(struct mstat_reader *r)
{
	while (r->hs_next < r->used) {
		const struct mstat_shm_slot *s = slot_at(r, r->hs_next);
		/* (E) seq_cst: with (D) against the writer's (A)/(B), if this
		 * load misses a section's odd seq, that section loads the new
		 * epoch.  Also acquire: pairs with (C), so the counters of every
		 * section that ended before are visible to the sum. */
		uint64_t v = atomic_load_explicit(&s->head.seq, memory_order_seq_cst);

		step(MSTAT_STEP_HANDSHAKE);
		/* Even: not in a section, any section after this one loads the
		 * new epoch.  Odd but moved since first seen: the section seen
		 * then has ended (seq is a counter, not a flag). */
		if (!(v & 1) || (r->hs_odd && v != r->hs_odd)) {
			r->hs_next++;
			r->hs_odd = 0;
			continue;
		}
		r->hs_odd = v;
		return true;
	}
	return false;
}

/* Polls until the handshake is done or `budget_us` has passed. */
static bool
handshake_wait(struct mstat_reader *r, unsigned budget_us)
{
	uint64_t deadline = 0;
	unsigned spins = 0;

	while (mstat_reader_poll(r)) {
		if (++spins < 128) {
			cpu_relax();
			continue;
		}
		uint64_t t = now_us();
		if (!deadline)
			deadline = t + budget_us;
		if (t >= deadline)
			return false;
		sched_yield(); /* on a busy CPU the writer may need ours */
	}
	return true;
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
	return r->info.writer_mode == MSTAT_MODE_MEMBARRIER;
}

static int
unlock_with(struct mstat_reader *r, int rc)
{
	r->rotated = false;
	flock(r->fd, LOCK_UN);
	return rc;
}

int
mstat_reader_begin(struct mstat_reader *r, unsigned catchup_budget_us)
{
	uint64_t e, synced;
	uint32_t used = 0;
	int rc;

	if (r->rotated)
		unlock_with(r, 0);
	if (flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return fail(r, -EBUSY, "%s: another reader is reading it",
				    r->info.shm_name);
		return fail(r, -errno, "%s: flock: %s", r->info.shm_name,
			    strerror(errno));
	}
	step(MSTAT_STEP_LOCKED);
	rc = check_live(r);
	if (rc < 0)
		return unlock_with(r, rc);

	e = atomic_load_explicit(&r->ctl->epoch, memory_order_seq_cst);
	/* (G) acquire: pairs with the release of the last reader that
	 * finished (the flock orders them as well). */
	synced = atomic_load_explicit(&r->ctl->synced_epoch, memory_order_acquire);
	if (synced != e) {
		/* Step 1: a reader rotated to `e` and died or gave up before
		 * its handshake ended.  Finish it, or generation (e + 1) % 3
		 * may still have a writer in it. */
		if (mstat_reader_needs_barrier(r) && (rc = mstat_reader_barrier()) < 0)
			return unlock_with(r, fail(r, rc, "membarrier: %s",
						   strerror(-rc)));
		if ((rc = load_used(r, &r->used)) < 0)
			return unlock_with(r, rc);
		handshake_start(r);
		if (!handshake_wait(r, catchup_budget_us))
			return mstat_reader_abandon(r);
		atomic_store_explicit(&r->ctl->synced_epoch, e, memory_order_release);
		step(MSTAT_STEP_CAUGHT_UP);
	}

	/* Step 2: the base.  Slots raised into use after this load start
	 * with that generation zero: only generation e % 3 is written until
	 * the rotation below. */
	if ((rc = load_used(r, &used)) < 0)
		return unlock_with(r, rc);
	memset(r->base, 0, sizeof(r->base));
	add_generation(r, used, (unsigned)((e + 1) % MSTAT_GENS), r->base);
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
	int rc = load_used(r, &r->used);

	if (rc < 0)
		return unlock_with(r, rc);
	handshake_start(r);
	return 0;
}

int
mstat_reader_abandon(struct mstat_reader *r)
{
	const struct mstat_shm_slot *s = slot_at(r, r->hs_next);
	unsigned tid = atomic_load_explicit(&s->head.tid, memory_order_relaxed);

	fail(r, -EAGAIN,
	     "pid %d: slot %u (tid %u) stayed inside an update (stopped or "
	     "killed there?); will finish on a later read",
	     (int)r->info.pid, r->hs_next, tid);
	return unlock_with(r, -EAGAIN);
}

void
mstat_reader_finish(struct mstat_reader *r, struct mstat_snapshot *out)
{
	uint64_t (*acc)[MSTAT_ROW_COUNTERS] = r->base;
	const unsigned cc = r->class_count;

	/* Step 5: the two generations no writer can touch now, added to the
	 * base.  Still under the lock: the next rotation makes one of them
	 * writable again. */
	add_generation(r, r->used, (unsigned)((r->epoch + 2) % MSTAT_GENS), acc);
	add_generation(r, r->used, (unsigned)((r->epoch + 1) % MSTAT_GENS), acc);

	memset(out, 0, sizeof(*out));
	out->epoch = r->epoch;
	out->state = atomic_load_explicit(&r->ctl->state, memory_order_relaxed);
	out->threads = atomic_load_explicit(&r->ctl->threads, memory_order_relaxed);
	out->overflowed = atomic_load_explicit(&r->ctl->overflowed,
					       memory_order_relaxed);
	out->slots_used = r->used;
	out->class_count = cc;
	for (unsigned c = 0; c < cc; c++) {
		out->class_max_size[c] = r->class_max[c];
#define MSTAT_X(e, f, h)                                                     \
	out->classes[c].f = acc[c][MSTAT_C_##e];                             \
	out->total.f += acc[c][MSTAT_C_##e];
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	}
#define MSTAT_X(e, f, h) out->f = acc[cc][MSTAT_T_##e];
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	step(MSTAT_STEP_SUMMED);

	/* (G) release: the next reader's acquire finds this epoch synced. */
	atomic_store_explicit(&r->ctl->synced_epoch, r->epoch, memory_order_release);
	step(MSTAT_STEP_SYNCED);
	unlock_with(r, 0);
}

int
mstat_reader_snapshot(struct mstat_reader *r, struct mstat_snapshot *out)
{
	uint64_t deadline = now_us() + MSTAT_LOCK_BUDGET_US;
	int rc;

	if (!r || r->magic != MSTAT_READER_MAGIC)
		return -EINVAL;
	while ((rc = mstat_reader_begin(r, r->wait_budget_us)) == -EBUSY) {
		if (now_us() >= deadline)
			return rc;
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	if (rc < 0)
		return rc;
	if (mstat_reader_needs_barrier(r) && (rc = mstat_reader_barrier()) < 0)
		return unlock_with(r, fail(r, rc, "membarrier: %s", strerror(-rc)));
	if ((rc = handshake_begin(r)) < 0)
		return rc;
	if (!handshake_wait(r, r->wait_budget_us))
		return mstat_reader_abandon(r);
	mstat_reader_finish(r, out);
	return 0;
}

void
mstat_reader_snapshot_many(struct mstat_reader **rs, size_t n,
			   struct mstat_snapshot *outs, int *rcs,
			   unsigned budget_us)
{
	bool barrier = false, pending = true;
	uint64_t deadline = 0;
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
				rcs[i] = unlock_with(rs[i], fail(rs[i], rc,
					"membarrier: %s", strerror(-rc)));
	}
	for (size_t i = 0; i < n; i++)
		if (rcs[i] == 0)
			rcs[i] = handshake_begin(rs[i]);

	/* One wait for all: a stalled target costs the tick one budget. */
	while (pending) {
		pending = false;
		for (size_t i = 0; i < n; i++)
			if (rcs[i] == 0 && rs[i]->rotated && mstat_reader_poll(rs[i]))
				pending = true;
		if (!pending)
			break;
		if (++spins < 128) {
			cpu_relax();
			continue;
		}
		uint64_t t = now_us();
		if (!deadline)
			deadline = t + budget_us;
		if (t >= deadline)
			break;
		sched_yield();
	}
	for (size_t i = 0; i < n; i++) {
		if (rcs[i] != 0)
			continue;
		if (mstat_reader_poll(rs[i]))
			rcs[i] = mstat_reader_abandon(rs[i]);
		else
			mstat_reader_finish(rs[i], &outs[i]);
	}
}
