/* SPDX-License-Identifier: MIT */
/*
 * sampler.c - the tick: read every target once, publish what was read; the
 * sampler thread; and the consumer's side, mstat_core_collect().  The
 * sharing rules are in sampler.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "shm/reader.h"
#include "core/text.h"
#include "core/core.h"
#include "core/sampler.h"
#include "core/sites.h"
#include "core/tsan.h"

/* Looks at /proc for stopped processes: at most this many a tick, each
 * at most this often. */
#define STOP_CHECKS 16
#define STOP_CHECK_NS UINT64_C(1000000000)

static const char *const error_names[MSTAT_CORE_ERR_COUNT] = {
#define MSTAT_X(e, n, h) [MSTAT_CORE_ERR_##e] = #n,
	MSTAT_CORE_ERRORS(MSTAT_X)
#undef MSTAT_X
};

const char *
mstat_core_error_name(enum mstat_core_error e)
{
	return (unsigned)e < MSTAT_CORE_ERR_COUNT ? error_names[e] : "?";
}

static void
status_free(struct rcu_head *head)
{
	free(caa_container_of(head, struct mstat_core_status, rcu));
}

/* A note, as formatted, made safe and delivered: the whole line, not
 * its arguments, is escaped, since a note names files anyone can plant
 * in /dev/shm and quotes what segments say, and it goes to a terminal
 * (stderr, the status line). */
static void
note_line(void *arg, const char *raw)
{
	struct mstat_core *core = arg;
	char line[256];

	mstat_text_escape(line, sizeof(line), raw, MSTAT_TEXT_PLAIN);
	if (core->opt.note) {
		core->opt.note(core->opt.note_arg, line);
		return;
	}
	struct mstat_core_status *s = malloc(sizeof(*s)), *old = core->status;
	if (!s)
		return;
	s->seq = ++core->status_seq;
	snprintf(s->line, sizeof(s->line), "%s", line);
	MSTAT_PUBLISHING(s);
	rcu_assign_pointer(core->status, s);
	if (old)
		call_rcu(&old->rcu, status_free);
}

void
mstat_core_note(struct mstat_core *core, const char *fmt, ...)
{
	char raw[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	note_line(core, raw);
}

int
mstat_core_new(struct mstat_core **out, const struct mstat_core_options *opt)
{
	struct mstat_core *core = calloc(1, sizeof(*core));

	*out = NULL;
	if (!core)
		return -ENOMEM;
	core->opt = *opt;
	CDS_INIT_LIST_HEAD(&core->targets);
	atomic_init(&core->interval_ms, opt->interval_ms);
	core->wake_fd = -1;
	if (mstat_discover_init(&core->disc, opt->pids, opt->npids,
				&opt->namespaces, opt->wait_budget_us,
				note_line, core) < 0) {
		free(core);
		return -ENOMEM;
	}
	core->disc.grace = opt->grace;
	mstat_oomlog_open(&core->oomlog);
	core->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (core->wake_fd < 0) {
		int rc = -errno;
		mstat_oomlog_close(&core->oomlog);
		mstat_discover_fini(&core->disc);
		free(core);
		return rc;
	}
	*out = core;
	/* A target costs a descriptor: as many as the hard limit allows. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	return 0;
}

static void
free_sample(struct rcu_head *head)
{
	free(caa_container_of(head, struct mstat_core_sample, rcu));
}

/* The bytes of a snapshot of `classes` classes: a read writes no more,
 * and nobody reads more. */
static size_t
snap_size(uint32_t classes)
{
	return offsetof(struct mstat_snapshot, classes) +
	       classes * sizeof(struct mstat_counts);
}

/* A sample with room for a snapshot of `classes` classes. */
static struct mstat_core_sample *
sample_new(uint32_t classes)
{
	return malloc(offsetof(struct mstat_core_sample, snap) + snap_size(classes));
}

/* A target whose memory may be read, by when it was last: `tick` 0
 * never. */
struct memory_turn {
	uint64_t tick;
	size_t i;
};

static int
grow(struct mstat_core *core, size_t n)
{
	if (n <= core->cap)
		return 0;
	size_t cap = n < 16 ? 16 : 2 * n;
	void *b = realloc(core->batch, cap * sizeof(*core->batch));
	if (b)
		core->batch = b;
	void *r = realloc(core->readers, cap * sizeof(*core->readers));
	if (r)
		core->readers = r;
	void *s = realloc(core->fresh, cap * sizeof(*core->fresh));
	if (s)
		core->fresh = s;
	void *o = realloc(core->outs, cap * sizeof(*core->outs));
	if (o)
		core->outs = o;
	void *c = realloc(core->rcs, cap * sizeof(*core->rcs));
	if (c)
		core->rcs = c;
	void *m = realloc(core->memory_due, cap * sizeof(*core->memory_due));
	if (m)
		core->memory_due = m;
	void *mt = realloc(core->memory_turns, cap * sizeof(*core->memory_turns));
	if (mt)
		core->memory_turns = mt;
	if (!b || !r || !s || !o || !c || !m || !mt)
		return -ENOMEM;
	core->cap = cap;
	return 0;
}

/*
 * What a failed read means, by what it returned: the reason it is
 * counted under (MSTAT_CORE_ERRORS), the state the target shows (RUNNING:
 * what its last snapshot says), and whether the target is dropped: its
 * segment cannot be trusted any more.  Other failures (membarrier refused
 * to us) are the reader's: the target stays, and says why it is not read.
 */
struct failure {
	int rc;
	enum mstat_core_error error;
	enum mstat_model_live live;
	bool drop;
};

static const struct failure failures[] = {
	{ -EAGAIN, MSTAT_CORE_ERR_STALLED, MSTAT_LIVE_STALLED, false },
	{ -EBUSY, MSTAT_CORE_ERR_BUSY, MSTAT_LIVE_BUSY, false },
	{ -EPROTO, MSTAT_CORE_ERR_DROPPED, MSTAT_LIVE_RUNNING, true },
	{ -EFAULT, MSTAT_CORE_ERR_DROPPED, MSTAT_LIVE_RUNNING, true },
	{ 0, MSTAT_CORE_ERR_READ, MSTAT_LIVE_RUNNING, false }, /* any other */
};

/* The failure a read's `rc` is, or NULL if it succeeded. */
static const struct failure *
failure_of(int rc)
{
	size_t i = 0;

	if (rc == 0)
		return NULL;
	while (failures[i].rc && failures[i].rc != rc)
		i++;
	return &failures[i];
}

/* The state of a target whose read failed as `f` (NULL: it succeeded),
 * whose sample is `s`: what its snapshot says of its end first. */
static enum mstat_model_live
sample_live(const struct failure *f, const struct mstat_core_sample *s)
{
	uint32_t state = s->have_snap ? s->snap.state : MSTAT_RUNNING;

	if (state == MSTAT_EXITED)
		return MSTAT_LIVE_EXITED;
	if (state == MSTAT_KILLED)
		return MSTAT_LIVE_KILLED;
	if (f && f->live != MSTAT_LIVE_RUNNING)
		return f->live;
	return state == MSTAT_EXITING ? MSTAT_LIVE_EXITING : MSTAT_LIVE_RUNNING;
}

/* When the process ended, CLOCK_REALTIME: the time it began to exit, as
 * it wrote it, or, killed, when it was first found gone (`killed_ns`, by
 * whichever reader or process did; 0: by us, now). */
static uint64_t
end_time(const struct mstat_core_target *t, enum mstat_model_live live,
	 uint64_t killed_ns)
{
	uint64_t exit_ns = mstat_reader_exit_ns(t->reader);

	if (live == MSTAT_LIVE_EXITED && exit_ns)
		return exit_ns;
	return killed_ns ? killed_ns : mstat_clock_wall_ns();
}

static void
free_want(struct rcu_head *head)
{
	free(caa_container_of(head, struct mstat_core_sites_want, rcu));
}

static void
free_sites(struct rcu_head *head)
{
	free(caa_container_of(head, struct mstat_core_sites, rcu));
}

/* Publishes `s` as the sites the consumer asked for: pairs with the
 * rcu_dereference() of mstat_core_sites_latest(). */
static void
sites_publish(struct mstat_core *core, struct mstat_core_sites *s)
{
	struct mstat_core_sites *old = core->sites;

	if (s)
		MSTAT_PUBLISHING(s);
	rcu_assign_pointer(core->sites, s);
	if (old)
		call_rcu(&old->rcu, free_sites);
}

/*
 * The call sites of target t, for its baseline and for the consumer, if
 * either wants them: one read of its profile serves both.  `want`: the
 * consumer asked for t's sites; `final`: t's process is gone (this is
 * the last read).
 */
static void
sites_read(struct mstat_core *core, struct mstat_core_target *t, bool want,
	   bool final)
{
	/* The tick this is (the sampler's own count). */
	uint64_t tick = atomic_load_explicit(&core->ticks, memory_order_relaxed);
	bool rebase = false;
	if (core->opt.site_baselines)
		/* Relaxed: a request with no data behind it (the profile is
		 * read here); pairs with the store in
		 * mstat_core_sites_rebase(). */
		rebase = !t->sites_based ||
			 atomic_exchange_explicit(&t->sites_rebase, false,
						  memory_order_relaxed);
	if (rebase && t->sites_last && t->sites_last_tick + 1 == tick) {
		/* Shown at the last tick: the consumer reset the model's
		 * baseline to that tick's counts, and the sites' goes to
		 * that tick's sites. */
		mstat_sites_base_free(t->sites_base);
		t->sites_base = t->sites_last;
		t->sites_last = NULL;
		rebase = false;
	}
	if (!want && !rebase)
		return;
	struct mstat_profile p;
	struct mstat_site *all = NULL;
	size_t m = 0;
	int rc = mstat_reader_profile(t->reader, &p);
	if (rc == 0 && (rc = mstat_sites_sum(&p, &all, &m)) < 0)
		mstat_reader_profile_release(&p);
	if (rebase) {
		struct mstat_sites_base *b =
			rc == 0 ? mstat_sites_base_new(all, m) : NULL;
		if (b) {
			mstat_sites_base_free(t->sites_base);
			t->sites_base = b;
			t->sites_based = true;
		} else if (t->sites_based) {
			/* Not read: again at the next tick. */
			atomic_store_explicit(&t->sites_rebase, true,
					      memory_order_relaxed);
		}
	}
	struct mstat_core_sites *s = want ? calloc(1, sizeof(*s)) : NULL;
	if (s) {
		snprintf(s->key, sizeof(s->key), "%s", t->key);
		s->rc = rc;
		s->final = final;
	}
	if (s && rc == 0) {
		mstat_sites_base_free(t->sites_last);
		t->sites_last = mstat_sites_base_new(all, m);
		t->sites_last_tick = tick;
		s->sample_bytes = p.sample_bytes;
		s->samples = p.samples;
		s->nsites = m;
		s->have_growth = t->sites_base != NULL;
		if (s->have_growth)
			mstat_sites_growth(t->sites_base, all, m);
		for (int o = 0; o < 2; o++) {
			if (o == MSTAT_CORE_SITES_GROWTH && !s->have_growth)
				break;
			mstat_sites_sort(all, m, o == MSTAT_CORE_SITES_GROWTH
						 ? MSTAT_SITES_BY_GROWTH
						 : MSTAT_SITES_BY_LIVE);
			s->n[o] = m < MSTAT_CORE_SITES_MAX ? m : MSTAT_CORE_SITES_MAX;
			memcpy(s->top[o], all, s->n[o] * sizeof(*all));
			mstat_sites_name(&p, s->top[o], s->n[o]);
		}
	}
	if (s)
		sites_publish(core, s);
	free(all);
	if (rc == 0)
		mstat_reader_profile_release(&p);
}

/* Whether the consumer asks for the sites of t. */
static bool
sites_wanted(const struct mstat_core *core, const struct mstat_core_target *t)
{
	return core->sites_key[0] && strcmp(core->sites_key, t->key) == 0;
}

/* Whether a read of `t` into `s` (rc 0) found its process exec()ed: the
 * new image makes a segment of its own, found by the scan as a new
 * target, and goes on in the same row (the key is the process's).  Not
 * a kill, although the old image's lock went as if it were. */
static bool
execed(struct mstat_core *core, const struct mstat_core_target *t, int rc,
       const struct mstat_core_sample *s)
{
	return rc == 0 && (s->snap.state == MSTAT_EXECED ||
			   (s->snap.state == MSTAT_KILLED &&
			    mstat_discover_execed(&core->disc, t)));
}

/* Fills sample `s` of a read that returned `rc`: its snapshot, or, the
 * read failed, the last good one (of the same segment: as many classes)
 * and why. */
static void
sample_fill(struct mstat_core_sample *s, const struct mstat_core_sample *old,
	    const struct mstat_core_target *t, int rc, uint64_t t_ns)
{
	s->err[0] = '\0';
	s->end_ns = 0;
	s->postmortem = NULL;
	if (rc == 0) {
		s->have_snap = true;
		s->t_ns = t_ns;
		mstat_reader_prior(t->reader, &s->prior);
		return;
	}
	s->have_snap = old && old->have_snap;
	if (s->have_snap) {
		memcpy(&s->snap, &old->snap, snap_size(old->snap.class_count));
		s->prior = old->prior;
	}
	s->t_ns = old ? old->t_ns : 0;
	snprintf(s->err, sizeof(s->err), "%s", mstat_reader_error(t->reader));
}

/* Is it stopped?  Only an idle process can be (a process whose counts
 * move ran), so a busy one costs no look at /proc; an idle one stays as
 * it was last seen until its counts move or it is looked at again, at
 * most once a second and STOP_CHECKS targets a tick (about 10 us each). */
static void
check_stopped(struct mstat_core *core, struct mstat_core_target *t,
	      const struct mstat_core_sample *old, struct mstat_core_sample *s,
	      uint64_t t_ns)
{
	bool idle = !old || !old->have_snap ||
		    (old->snap.total.alloc_count == s->snap.total.alloc_count &&
		     old->snap.total.free_count == s->snap.total.free_count);

	if (s->live != MSTAT_LIVE_RUNNING || !idle)
		return;
	if (old && old->live == MSTAT_LIVE_STOPPED)
		s->live = MSTAT_LIVE_STOPPED;
	if (core->stop_checks &&
	    (!t->checked_ns || t_ns - t->checked_ns >= STOP_CHECK_NS)) {
		core->stop_checks--;
		t->checked_ns = t_ns;
		s->live = mstat_discover_stopped(&core->disc, t) ? MSTAT_LIVE_STOPPED
								 : MSTAT_LIVE_RUNNING;
	}
}

/* Whether the OOM killer killed it: the kernel's log if it names it,
 * else its memory cgroup's count (killed.h); `why` says what said so. */
static enum mstat_oom
oom_cause(const struct mstat_core *core, const struct mstat_core_target *t,
	  char *why, size_t len)
{
	uint64_t start_us = t->start_time * 1000000u /
			    (uint64_t)sysconf(_SC_CLK_TCK);
	const struct mstat_oom_kill *k =
		t->pid_ours ? mstat_oomlog_find(&core->oomlog, t->pid, start_us,
						t->first_tick)
			    : NULL;

	if (!k)
		return mstat_killed_oom_watch_end(&t->oom, why, len);
	snprintf(why, len, "killed by the OOM killer: the kernel's log at "
		 "%llu.%06llu s says \"%s: Killed process %d (%s)\"%s%s",
		 (unsigned long long)(k->ts_us / 1000000u),
		 (unsigned long long)(k->ts_us % 1000000u), k->constraint,
		 (int)k->pid, k->comm, k->memcg[0] ? ", memory cgroup " : "",
		 k->memcg);
	return MSTAT_OOM_LOG;
}

/* Killed: whether the OOM killer did it, said in its state (the kernel's
 * log, its cgroup's count) or a note (the machine's count: a hint); with
 * --postmortem-dir, its profile to a file, once. */
static void
postmortem(struct mstat_core *core, struct mstat_core_target *t,
	   struct mstat_core_sample *s)
{
	char why[640], path[4096], err[256];
	enum mstat_oom oom = oom_cause(core, t, why, sizeof(why));

	if (oom == MSTAT_OOM_CGROUP || oom == MSTAT_OOM_LOG)
		s->live = MSTAT_LIVE_OOM;
	if (oom != MSTAT_OOM_NO)
		mstat_core_note(core, "pid %d (%s) %s", (int)t->pid, t->name, why);
	if (!core->opt.postmortem_dir)
		return;
	if (mstat_killed_postmortem_write(core->opt.postmortem_dir,
					  core->opt.postmortem_bytes, t->reader, t->name,
					  t->pid, s->end_ns, oom != MSTAT_OOM_NO ? why
					  : "killed", path, sizeof(path), err,
					  sizeof(err)) < 0)
		mstat_core_note(core, "pid %d (%s): no post-mortem profile: %s",
				(int)t->pid, t->name, err);
	else {
		mstat_core_note(core, "pid %d (%s) killed: its profile is in %s",
				(int)t->pid, t->name, path);
		/* The sample borrows it: published with it, freed with t. */
		t->postmortem = strdup(path); /* NULL: not named, no harm */
		s->postmortem = t->postmortem;
	}
}

/* Gone: these counts are final.  Its name goes now, or, killed, once
 * its grace is over (owner.h).  A killed one keeps its mapping while its
 * row lingers, for its sites and profile; an exited one's goes now (a
 * descriptor each: many short processes end), its sites read first if
 * they are asked for. */
static void
finish(struct mstat_core *core, struct mstat_core_target *t,
       struct mstat_core_sample *s, uint64_t t_ns)
{
	t->final = true;
	t->end_ns = t_ns;
	uint64_t killed_ns = mstat_discover_reap(&core->disc, t, true);
	s->end_ns = end_time(t, s->live, killed_ns);
	if (s->live == MSTAT_LIVE_KILLED) {
		postmortem(core, t, s);
		return;
	}
	if (sites_wanted(core, t))
		sites_read(core, t, true, true);
	mstat_reader_close(t->reader);
	t->reader = NULL;
}

/* Publishes the filled sample `s` as t's: pairs with rcu_dereference() in
 * mstat_core_gather().  The sample it replaces is freed once no consumer
 * can hold it. */
static void
sample_publish(struct mstat_core_target *t, struct mstat_core_sample *s)
{
	struct mstat_core_sample *old = t->sample;

	MSTAT_PUBLISHING(s);
	rcu_assign_pointer(t->sample, s);
	if (old)
		call_rcu(&old->rcu, free_sample);
}

static int
older_first(const void *a, const void *b)
{
	const struct memory_turn *x = a, *y = b;

	return x->tick != y->tick ? (x->tick > y->tick) - (x->tick < y->tick)
				  : (x->i > y->i) - (x->i < y->i);
}

/* The memory of the tick's n targets read just now (their snapshots
 * good, their processes live and found in this pid namespace, so that
 * their pid is ours to look at in /proc), into their fresh samples, and
 * marked in memory_due[]: every one never read, then those read longest
 * ago while the CPU time this takes is under memory_share % of what the
 * rest of a tick takes, and at least MSTAT_CORE_MEMORY_MIN.  Returns the
 * CPU time it took. */
static uint64_t
memory_read_all(struct mstat_core *core, size_t n)
{
	uint64_t tick = atomic_load_explicit(&core->ticks, memory_order_relaxed) + 1;
	uint64_t start = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID), spent = 0;
	uint64_t budget = core->tick_cpu_ns / 100 * core->opt.memory_share;
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		const struct mstat_core_target *t = core->batch[i];
		core->memory_due[i] = false;
		if (core->opt.memory_share && core->rcs[i] == 0 && t->verified &&
		    core->fresh[i]->snap.state == MSTAT_RUNNING)
			core->memory_turns[m++] = (struct memory_turn){ t->memory_tick, i };
	}
	if (m > 1)
		qsort(core->memory_turns, m, sizeof(core->memory_turns[0]), older_first);
	for (size_t k = 0; k < m; k++) {
		const struct memory_turn *turn = &core->memory_turns[k];
		struct mstat_core_target *t = core->batch[turn->i];
		struct mstat_core_sample *s = core->fresh[turn->i];
		if (turn->tick && k >= MSTAT_CORE_MEMORY_MIN && spent >= budget)
			break;
		/* What it was, to stand if nothing it went by moved. */
		if (t->sample && t->sample->have_memory)
			s->memory = t->sample->memory;
		else
			t->memory_mark = (struct mstat_memory_mark){ 0 };
		t->memory_tick = tick;
		int rc = mstat_memory_read(t->reader, t->pid, &s->snap,
					   &t->memory_mark, &s->memory);
		core->memory_due[turn->i] = rc >= 0;
		core->memory_reads++;
		core->memory_looks += rc == 1;
		spent = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
	}
	return spent;
}

/* Target t's memory in sample s: as read now (memory_due[i]), or as
 * read last, while it lives. */
static void
memory_fill(struct mstat_core *core, size_t i, struct mstat_core_target *t,
	    struct mstat_core_sample *s)
{
	const struct mstat_core_sample *old = t->sample;

	s->have_memory = !mstat_model_gone(s->live) && core->memory_due[i];
	if (!s->have_memory && !mstat_model_gone(s->live) && old && old->have_memory) {
		s->memory = old->memory;
		s->have_memory = true;
	}
}

/* The sample core->fresh[i], read into (its snapshot, if the read
 * returned 0), becomes the target's; or the target goes. */
static void
publish(struct mstat_core *core, size_t i, uint64_t t_ns)
{
	struct mstat_core_target *t = core->batch[i];
	struct mstat_core_sample *s = core->fresh[i];
	int rc = core->rcs[i];
	const struct failure *f = failure_of(rc);

	if (f)
		core->errors[f->error]++;
	if (f && f->drop) {
		mstat_core_note(core, "dropped %s", mstat_reader_error(t->reader));
		mstat_discover_detach(&core->disc, t);
		free(s);
		return;
	}
	if (execed(core, t, rc, s)) {
		(void)mstat_discover_reap(&core->disc, t, false);
		mstat_discover_detach(&core->disc, t);
		free(s);
		return;
	}
	sample_fill(s, t->sample, t, rc, t_ns);
	s->live = sample_live(f, s);
	if (rc == 0)
		check_stopped(core, t, t->sample, s, t_ns);
	memory_fill(core, i, t, s);
	if (mstat_model_gone(s->live))
		finish(core, t, s, t_ns);
	sample_publish(t, s);
}

/* Exchanges entries i and j of the tick's arrays. */
static void
swap_batch(struct mstat_core *core, size_t i, size_t j)
{
#define SWAP(a)                                                               \
	do {                                                                  \
		__typeof__(core->a[0]) tmp_ = core->a[i];                       \
		core->a[i] = core->a[j];                                        \
		core->a[j] = tmp_;                                             \
	} while (0)
	SWAP(batch);
	SWAP(readers);
	SWAP(fresh);
	SWAP(outs);
	SWAP(rcs);
#undef SWAP
}

/*
 * Reads the tick's n targets.  A target another reader holds (-EBUSY: its
 * flock is taken, by mstat-top and mstat-exporter alike, for one pass over
 * its targets) is tried again until it is free or `deadline_us` passes;
 * each retry is a pass of its own over the busy ones, moved to the front
 * of the arrays.  The whole wait, stalled and busy targets together,
 * stays within the wait budget.
 */
static void
read_all(struct mstat_core *core, size_t n, uint64_t deadline_us)
{
	mstat_reader_snapshot_many(core->readers, n, core->outs, core->rcs,
				   core->opt.wait_budget_us);
	for (;;) {
		size_t busy = 0;
		for (size_t i = 0; i < n; i++)
			if (core->rcs[i] == -EBUSY)
				swap_batch(core, busy++, i);
		uint64_t now = mstat_clock_mono_ns() / 1000u;
		if (busy == 0 || now >= deadline_us)
			return;
		/* The other reader's pass takes microseconds per target:
		 * look again soon, without spinning on a CPU it may need. */
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
		now = mstat_clock_mono_ns() / 1000u;
		if (now >= deadline_us)
			return;
		mstat_reader_snapshot_many(core->readers, busy, core->outs,
					   core->rcs, (unsigned)(deadline_us - now));
	}
}

int
mstat_core_sites(struct mstat_core *core, const char *key, size_t n,
		struct mstat_site *out, size_t *got)
{
	struct mstat_core_target *t;

	*got = 0;
	cds_list_for_each_entry(t, &core->targets, node)
		if (strcmp(t->key, key) == 0 && t->reader)
			return mstat_sites_read(t->reader, n, out, got);
	return -ENOENT;
}

/* The call sites of the tick: baselines to take, and those asked for.  A
 * killed process is read while its row lingers (its mapping stays), and
 * only if asked for: its sites no longer change.  An exited one's were
 * read as it ended, if asked for then. */
static void
sites_tick(struct mstat_core *core)
{
	struct mstat_core_target *t;
	bool found = false, gone = false;

	cds_list_for_each_entry(t, &core->targets, node) {
		bool want = sites_wanted(core, t);
		gone |= want && t->final;
		if (!t->reader || (t->final && !want))
			continue;
		found |= want;
		sites_read(core, t, want, t->final);
	}
	const struct mstat_core_sites *had = core->sites;
	if (!core->sites_key[0]) {
		/* The final sites of a process whose mapping is gone cannot
		 * be read again: they stay until others are asked for. */
		if (had && !had->final)
			sites_publish(core, NULL);
		return;
	}
	/* Read just now; or a process not read any more: its final sites
	 * stay, or what says they were not read. */
	if (found || (had && strcmp(had->key, core->sites_key) == 0 &&
		      (had->final || had->rc == -ENOENT)))
		return;
	struct mstat_core_sites *s = calloc(1, sizeof(*s));
	if (!s)
		return;
	snprintf(s->key, sizeof(s->key), "%s", core->sites_key);
	s->rc = -ENOENT;
	s->final = gone;
	sites_publish(core, s);
}

void
mstat_core_sites_want(struct mstat_core *core, const char *key)
{
	struct mstat_core_sites_want *w = NULL;

	if (key && (w = calloc(1, sizeof(*w))))
		snprintf(w->key, sizeof(w->key), "%s", key);
	/* Publishes the request: pairs with the rcu_dereference() at the
	 * start of the sampler's sites_tick(). */
	struct mstat_core_sites_want *old = rcu_xchg_pointer(&core->sites_want, w);
	if (old)
		call_rcu(&old->rcu, free_want);
}

void
mstat_core_sites_rebase(struct mstat_core *core, const char *key)
{
	struct mstat_core_target *t;

	rcu_read_lock();
	cds_list_for_each_entry_rcu(t, &core->targets, node)
		if (!key || strcmp(t->key, key) == 0)
			/* Relaxed: pairs with the exchange in sites_read(),
			 * which reads the profile itself. */
			atomic_store_explicit(&t->sites_rebase, true,
					      memory_order_relaxed);
	rcu_read_unlock();
}

void
mstat_core_tick(struct mstat_core *core)
{
	struct mstat_core_target *t, *tmp;
	uint64_t cpu = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	size_t n = 0;

	/* The kernel logs an OOM kill before its process dies: the record
	 * of any process this tick finds killed is read now (oomlog.h). */
	mstat_oomlog_read(&core->oomlog, ++core->tick_no);
	mstat_discover_scan(&core->disc, &core->targets);
	core->errors[MSTAT_CORE_ERR_REFUSED] = core->disc.refused_count;
	core->errors[MSTAT_CORE_ERR_DESCRIPTORS] = core->disc.no_fd_count;
	atomic_store_explicit(&core->namespaces_unreadable,
			      core->disc.procs.unreadable, memory_order_relaxed);
	cds_list_for_each_entry(t, &core->targets, node) {
		if (!t->first_tick)
			t->first_tick = core->tick_no;
		n += !t->final;
	}
	if (grow(core, n) < 0)
		return;
	n = 0;
	cds_list_for_each_entry(t, &core->targets, node) {
		if (t->final)
			continue;
		/* Read straight into the sample that will be published. */
		struct mstat_core_sample *s =
			sample_new(mstat_reader_class_count(t->reader));
		if (!s)
			continue; /* read on a later tick */
		core->batch[n] = t;
		core->readers[n] = t->reader;
		core->fresh[n] = s;
		core->outs[n] = &s->snap;
		n++;
	}
	core->stop_checks = STOP_CHECKS;
	/* A segment truncated under its mapping fails its read with -EFAULT
	 * (the reader's SIGBUS guard), and publish() drops it. */
	read_all(core, n, mstat_clock_mono_ns() / 1000u + core->opt.wait_budget_us);
	uint64_t memory_ns = memory_read_all(core, n);
	/* Whose sites the consumer asks for, this tick. */
	rcu_read_lock();
	struct mstat_core_sites_want *w = rcu_dereference(core->sites_want);
	snprintf(core->sites_key, sizeof(core->sites_key), "%s", w ? w->key : "");
	rcu_read_unlock();
	uint64_t t_ns = mstat_clock_mono_ns();
	for (size_t i = 0; i < n; i++)
		publish(core, i, t_ns);
	sites_tick(core);

	/* Exited and killed targets have shown their final totals long
	 * enough. */
	cds_list_for_each_entry_safe(t, tmp, &core->targets, node) {
		/* Killed: the one whose reader stays. */
		uint64_t linger = core->opt.linger_ns;
		if (t->reader && core->opt.killed_linger_ns > linger)
			linger = core->opt.killed_linger_ns;
		if (t->final && t_ns - t->end_ns >= linger)
			mstat_discover_detach(&core->disc, t);
	}
	/* What the tick took but its memory reads, the base of their budget
	 * (memory_read_all()): a moving average over about eight ticks that
	 * follows a cheaper tick at once (the first, which attaches every
	 * target, costs many later ones). */
	cpu = mstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu - memory_ns;
	core->tick_cpu_ns = core->tick_cpu_ns && cpu > core->tick_cpu_ns
				    ? (7 * core->tick_cpu_ns + cpu) / 8 : cpu;
	if (core->opt.after_tick)
		core->opt.after_tick(core->opt.after_tick_arg, core);
	/* Release: the tick is complete; pairs with the acquire load of
	 * mstat_core_ticks(), after which a consumer collects it. */
	atomic_fetch_add_explicit(&core->ticks, 1, memory_order_release);
}

static void *
sampler_main(void *arg)
{
	struct mstat_core *core = arg;

	rcu_register_thread();
	while (!atomic_load(&core->stop)) {
		mstat_core_tick(core);
		struct pollfd p = { .fd = core->wake_fd, .events = POLLIN };
		if (poll(&p, 1, (int)atomic_load(&core->interval_ms)) > 0) {
			uint64_t v;
			if (read(core->wake_fd, &v, sizeof(v)) < 0)
				continue;
		}
	}
	rcu_unregister_thread();
	return NULL;
}

int
mstat_core_start(struct mstat_core *core)
{
	int rc = pthread_create(&core->thread, NULL, sampler_main, core);

	if (rc != 0)
		return -rc;
	core->thread_started = true;
	return 0;
}

void
mstat_core_wake(struct mstat_core *core)
{
	uint64_t one = 1;

	if (write(core->wake_fd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the sampler is awake anyway */
}

unsigned
mstat_core_interval_ms(struct mstat_core *core)
{
	return atomic_load(&core->interval_ms);
}

void
mstat_core_set_interval_ms(struct mstat_core *core, unsigned ms)
{
	/* Seq_cst, as any request: the sampler reads it at its next poll,
	 * which the wake ends at once. */
	atomic_store(&core->interval_ms, ms);
	mstat_core_wake(core);
}

uint64_t
mstat_core_ticks(struct mstat_core *core)
{
	/* Acquire: pairs with the release at the end of mstat_core_tick();
	 * that tick's published samples are then visible. */
	return atomic_load_explicit(&core->ticks, memory_order_acquire);
}

unsigned
mstat_core_namespaces_unreadable(struct mstat_core *core)
{
	/* Relaxed: a count, shown as it is; it publishes nothing else
	 * (stored relaxed in mstat_core_tick()). */
	return atomic_load_explicit(&core->namespaces_unreadable,
				    memory_order_relaxed);
}

void
mstat_core_errors(struct mstat_core *core, uint64_t out[MSTAT_CORE_ERR_COUNT])
{
	memcpy(out, core->errors, sizeof(core->errors));
}

size_t
mstat_core_gc(struct mstat_core *core)
{
	return mstat_discover_gc(&core->disc);
}

const struct mstat_core_sites *
mstat_core_sites_latest(struct mstat_core *core)
{
	/* Pairs with the rcu_assign_pointer() of sites_publish(). */
	return rcu_dereference(core->sites);
}

void
mstat_core_free(struct mstat_core *core)
{
	struct mstat_core_target *t, *tmp;

	if (!core)
		return;
	if (core->thread_started) {
		atomic_store(&core->stop, true);
		mstat_core_wake(core);
		pthread_join(core->thread, NULL);
		core->thread_started = false;
	}
	/* The sampler has stopped: this thread is the updater now. */
	cds_list_for_each_entry_safe(t, tmp, &core->targets, node)
		mstat_discover_detach(&core->disc, t);
	struct mstat_core_status *s = core->status;
	rcu_assign_pointer(core->status, NULL);
	if (s)
		call_rcu(&s->rcu, status_free);
	mstat_core_sites_want(core, NULL);
	sites_publish(core, NULL);
	rcu_barrier(); /* every call_rcu callback has run */
	free(core->batch);
	free(core->readers);
	free(core->fresh);
	free(core->outs);
	free(core->rcs);
	free(core->memory_due);
	free(core->memory_turns);
	mstat_discover_fini(&core->disc);
	mstat_oomlog_close(&core->oomlog);
	if (core->wake_fd >= 0)
		close(core->wake_fd);
	free(core);
}

int
mstat_core_gather(struct mstat_core *core, struct mstat_core_scratch *sc,
		 int (*fn)(void *arg, const struct mstat_model_input *in, size_t n),
		 void *arg)
{
	struct mstat_core_target *t;
	size_t n = 0;
	int rc = 0;

	rcu_read_lock();
	cds_list_for_each_entry_rcu(t, &core->targets, node) {
		MSTAT_RECEIVED(t);
		const struct mstat_core_sample *s = rcu_dereference(t->sample);
		if (!s)
			continue; /* not read yet */
		MSTAT_RECEIVED(s);
		if (n == sc->cap) {
			size_t cap = sc->cap ? 2 * sc->cap : 16;
			void *p = realloc(sc->in, cap * sizeof(*sc->in));
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			sc->in = p;
			sc->cap = cap;
		}
		sc->in[n++] = (struct mstat_model_input){
			.key = t->key,
			.pid = t->pid,
			.nspid = t->nspid,
			.container_id = t->where.container_id,
			.pod_uid = t->where.pod_uid,
			.qos_class = t->where.qos_class,
			.systemd_unit = t->where.systemd_unit,
			.name = t->name,
			.live = s->live,
			.err = s->err,
			.t_ns = s->t_ns,
			.end_ns = s->end_ns,
			.postmortem = s->postmortem,
			.snap = s->have_snap ? &s->snap : NULL,
			.image = t->image,
			.comm = t->id.comm,
			.exe = t->id.exe,
			.start_ns = t->start_ns,
			.writer_mode = t->writer_mode,
			.layout_major = t->layout_major,
			.layout_minor = t->layout_minor,
			.attached_ns = t->attached_ns,
			.prior = s->prior,
			.memory = s->have_memory ? &s->memory : NULL,
		};
	}
	/* The inputs point into samples: hand them over before unlocking. */
	if (rc == 0)
		rc = fn(arg, sc->in, n);
	rcu_read_unlock();
	return rc;
}

struct collect {
	struct mstat_model *m;
	uint64_t now_ns;
};

static int
collect_fn(void *arg, const struct mstat_model_input *in, size_t n)
{
	struct collect *c = arg;

	return mstat_model_update(c->m, in, n, c->now_ns);
}

int
mstat_core_collect(struct mstat_core *core, struct mstat_model *m,
		  struct mstat_core_scratch *sc, uint64_t now_ns)
{
	struct collect c = { m, now_ns };

	return mstat_core_gather(core, sc, collect_fn, &c);
}

uint64_t
mstat_core_status(struct mstat_core *core, char *buf, size_t len)
{
	uint64_t seq = 0;

	rcu_read_lock();
	const struct mstat_core_status *s = rcu_dereference(core->status);
	if (s) {
		MSTAT_RECEIVED(s);
		snprintf(buf, len, "%s", s->line);
		seq = s->seq;
	} else if (len) {
		buf[0] = '\0';
	}
	rcu_read_unlock();
	return seq;
}
