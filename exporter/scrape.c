/* SPDX-License-Identifier: MIT */
/*
 * scrape.c - the reader thread and the scrape; see scrape.h.
 *
 * Ticks are numbered.  Under `lock`:
 *   started    ticks the reader has begun;
 *   finished   ticks whose results are in the model;
 *   wanted     the tick some scrape waits for.
 * A scrape arriving sets wanted = started + 1 (the next tick to begin,
 * which begins after it arrived) and waits until finished reaches it;
 * every scrape arriving before that tick begins wants the same one.
 *
 * Profile requests (mstat_scrape_profile()) queue under `lock` too, and
 * the reader serves them between ticks: a handle of the process's
 * profile (profiles.h) is all it does for one, and the request reads it
 * in its own thread.  A request for a pid the core does not hold, or
 * whose process ended since the last tick, waits for a tick that begins
 * after it arrived (the process may have started, or ended, since the
 * last), and is answered after it.
 *
 * waiting_since is when scrapes (or profile requests) began to wait for
 * the reader with no tick finishing since (0 while none waits): the
 * first to wait sets it; a finished tick restarts it if scrapes still
 * wait, for the next; requests answered between ticks clear it if none
 * waits for a tick.
 * Written under `lock`, read without it by mstat_scrape_health().
 */
#include "exporter/scrape.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm/clock.h"
#include "core/columns.h"
#include "core/model.h"
#include "shm/reader.h"
#include "core/core.h"
#include "core/profiles.h"

/* A profile request, on the stack of the thread that waits for it. */
struct profile_request {
	struct profile_request *next;
	pid_t pid;
	uint64_t tick;       /* the first tick that began after it arrived */
	bool done;
	int rc;
	struct mstat_core_profile *h;
	char err[256];
};

struct mstat_scraper {
	struct mstat_scrape_options opt;
	pthread_t thread;

	/* The reader thread's own. */
	struct mstat_core *core;
	struct mstat_core_scratch scratch;

	pthread_mutex_t lock;
	pthread_cond_t wake;   /* the reader waits for `wanted` */
	pthread_cond_t done;   /* scrapes wait for `finished` */
	/* Under lock. */
	uint64_t started, finished, wanted;
	bool stop;
	/* Written under lock; read without it. */
	_Atomic uint64_t waiting_since;
	struct mstat_model model;            /* as the last tick left it */
	const struct mstat_model_row **rows; /* room for model.n */
	size_t caprows;
	double tick_s;                       /* how long the last tick took */
	uint64_t errors[MSTAT_CORE_ERR_COUNT];
	unsigned unreadable;                 /* namespaces the last tick could
					      * not read */
	uint64_t scrapes;
	bool failed;                         /* the last tick ran out of memory */
	struct profile_request *requests;    /* not answered yet */
	bool untried;                        /* some not tried since they came,
					      * or since the last tick */
};

/* Tries every queued request, under the lock, in the reader thread: the
 * core holds the process (a handle for it), or a tick that began after
 * the request arrived has ended without it (-ENOENT), or it waits for
 * that tick. */
static void
serve_requests(struct mstat_scraper *s)
{
	struct profile_request **q = &s->requests;

	s->untried = false;
	while (*q) {
		struct profile_request *r = *q;
		r->rc = mstat_core_profile_open(s->core, r->pid, &r->h, r->err,
						sizeof(r->err));
		if ((r->rc == -ENOENT || r->rc == -ESTALE) &&
		    s->finished < r->tick) {
			if (s->wanted < r->tick)
				s->wanted = r->tick;
			q = &r->next;
			continue;
		}
		r->done = true;
		*q = r->next;
	}
	/* Answered between ticks: if none waits for a tick now, none
	 * waits.  Relaxed: as where a tick's end writes it. */
	if (s->wanted <= s->finished)
		atomic_store_explicit(&s->waiting_since, 0, memory_order_relaxed);
	pthread_cond_broadcast(&s->done);
}

/* With the lock held: waits for the reader's wake-up; true once a tick
 * of its own is due (with a post-mortem directory, MSTAT_SCRAPER_WATCH_S
 * after the last tick began, `last_ns`). */
static bool
wait_wake(struct mstat_scraper *s, uint64_t last_ns)
{
	if (!s->opt.postmortem_dir) {
		pthread_cond_wait(&s->wake, &s->lock);
		return false;
	}
	uint64_t due = last_ns + (uint64_t)MSTAT_SCRAPER_WATCH_S * 1000000000u;
	if (!last_ns || mstat_clock_mono_ns() >= due)
		return true;
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000u),
			       .tv_nsec = (long)(due % 1000000000u) };
	/* s->wake runs on CLOCK_MONOTONIC (mstat_scrape_start()). */
	return pthread_cond_timedwait(&s->wake, &s->lock, &ts) == ETIMEDOUT;
}

static void *
reader_main(void *arg)
{
	struct mstat_scraper *s = arg;
	uint64_t last_ns = 0; /* when the last tick began */

	rcu_register_thread();
	pthread_mutex_lock(&s->lock);
	for (;;) {
		bool own = false;
		/* A scrape waits when it wants a tick not begun yet; the
		 * watch's own ticks run `started` past `wanted`. */
		while (!s->stop && s->wanted <= s->started && !s->untried &&
		       !own)
			own = wait_wake(s, last_ns);
		if (s->stop)
			break;
		if (s->untried) {
			serve_requests(s);
			continue;
		}
		uint64_t tick = ++s->started;
		pthread_mutex_unlock(&s->lock);

		uint64_t t0 = last_ns = mstat_clock_mono_ns();
		mstat_core_tick(s->core);

		pthread_mutex_lock(&s->lock);
		/* Into the model under the lock: no scrape prints a model
		 * half folded. */
		int rc = mstat_core_collect(s->core, &s->model, &s->scratch,
					   mstat_clock_mono_ns());
		if (rc == 0 && s->caprows < s->model.n + 1) {
			size_t cap = 2 * (s->model.n + 1);
			void *p = realloc(s->rows, cap * sizeof(*s->rows));
			if (p) {
				s->rows = p;
				s->caprows = cap;
			} else {
				rc = -ENOMEM;
			}
		}
		s->failed = rc < 0;
		s->tick_s = (double)(mstat_clock_mono_ns() - t0) / 1e9;
		mstat_core_errors(s->core, s->errors);
		s->unreadable = mstat_core_namespaces_unreadable(s->core);
		s->finished = tick;
		/* Those waiting for this tick: the core holds what it found. */
		s->untried = s->requests != NULL;
		/* Relaxed: a lone timestamp, which orders nothing;
		 * mstat_scrape_health() reads it alone. */
		atomic_store_explicit(&s->waiting_since, s->wanted > tick ?
				      mstat_clock_mono_ns() : 0,
				      memory_order_relaxed);
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->lock);
	rcu_unregister_thread();
	return NULL;
}

int
mstat_scrape_start(struct mstat_scraper **out,
		   const struct mstat_scrape_options *o)
{
	struct mstat_scraper *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->opt = *o;
	struct mstat_core_options to = {
		.interval_ms = 1000, /* unused: ticks are asked for */
		.wait_budget_us = o->wait_budget_us,
		.namespaces = o->namespaces,
		/* An exited process is gone from the next scrape: its row
		 * does not linger. */
		.linger_ns = 0,
		/* A killed process's profile is served, and its row shown
		 * (mstat_killed_info), while its segment is kept for its
		 * grace. */
		.killed_linger_ns = o->grace.seconds * 1000000000u,
		.note = o->note,
		.note_arg = o->note_arg,
		.grace = o->grace,
		.postmortem_dir = o->postmortem_dir,
		.postmortem_bytes = o->postmortem_bytes,
		/* A scrape costs at most about twice as much with them. */
		.memory_share = o->memory ? 100 : 0,
	};
	if ((rc = mstat_core_new(&s->core, &to)) < 0) {
		free(s);
		return rc;
	}
	mstat_model_init(&s->model, 0);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->done, NULL);
	if ((rc = pthread_create(&s->thread, NULL, reader_main, s)) != 0) {
		/* mstat_core_free() walks RCU lists: a registered thread. */
		rcu_register_thread();
		mstat_core_free(s->core);
		rcu_unregister_thread();
		mstat_model_fini(&s->model);
		free(s);
		return -rc;
	}
	/* For top -H, and a debugger looking for the thread that reads. */
	pthread_setname_np(s->thread, "mstat-reader");
	*out = s;
	return 0;
}

void
mstat_scrape_stop(struct mstat_scraper *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	rcu_register_thread();
	mstat_core_free(s->core);
	rcu_unregister_thread();
	mstat_model_fini(&s->model);
	free(s->scratch.in);
	free(s->rows);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The exporter's own families, after the processes'. */
static void
self_metrics(struct mstat_scraper *s, const struct mstat_expo *e, size_t n)
{
	mstat_exposition_family(e, "mstat_exporter_build", MSTAT_EXPO_INFO, NULL,
				"mstat-exporter's version");
	mstat_exposition_sample(e, "mstat_exporter_build", MSTAT_EXPO_INFO);
	fputc('{', e->f);
	mstat_exposition_label(e, true, "version", MSTAT_VERSION);
	fputs("} 1\n", e->f);

	mstat_exposition_family(e, "mstat_exporter_scrapes", MSTAT_EXPO_COUNTER,
				NULL, "scrapes served");
	mstat_exposition_sample(e, "mstat_exporter_scrapes", MSTAT_EXPO_COUNTER);
	fprintf(e->f, " %" PRIu64 "\n", s->scrapes);

	mstat_exposition_family(e, "mstat_exporter_ticks", MSTAT_EXPO_COUNTER,
				NULL, "reads of every segment: for scrapes, and "
				"with --postmortem-dir one a second of its own");
	mstat_exposition_sample(e, "mstat_exporter_ticks", MSTAT_EXPO_COUNTER);
	fprintf(e->f, " %" PRIu64 "\n", s->finished);

	mstat_exposition_family(e, "mstat_exporter_scrape_duration_seconds",
				MSTAT_EXPO_GAUGE, "seconds",
				"how long reading every segment took for this scrape");
	mstat_exposition_sample(e, "mstat_exporter_scrape_duration_seconds",
				MSTAT_EXPO_GAUGE);
	fprintf(e->f, " %.6f\n", s->tick_s);

	mstat_exposition_family(e, "mstat_exporter_scrape_errors", MSTAT_EXPO_COUNTER,
				NULL, "segments not read, by reason, since the "
				"exporter started");
	for (int r = 0; r < MSTAT_CORE_ERR_COUNT; r++) {
		mstat_exposition_sample(e, "mstat_exporter_scrape_errors",
					MSTAT_EXPO_COUNTER);
		fputc('{', e->f);
		mstat_exposition_label(e, true, "reason",
				       mstat_core_error_name((enum mstat_core_error)r));
		fprintf(e->f, "} %" PRIu64 "\n", s->errors[r]);
	}

	mstat_exposition_family(e, "mstat_exporter_processes", MSTAT_EXPO_GAUGE, NULL,
				"processes in this scrape");
	mstat_exposition_sample(e, "mstat_exporter_processes", MSTAT_EXPO_GAUGE);
	fprintf(e->f, " %zu\n", n);

	mstat_exposition_family(e, "mstat_exporter_namespaces_unreadable",
				MSTAT_EXPO_GAUGE, NULL,
				"mount namespaces whose /dev/shm this scrape could "
				"not read (permissions: mstat-exporter(1))");
	mstat_exposition_sample(e, "mstat_exporter_namespaces_unreadable",
				MSTAT_EXPO_GAUGE);
	fprintf(e->f, " %u\n", s->unreadable);
}

/* With the lock held: a request begins to wait for the reader, which
 * mstat_scrape_health() counts from, if none waits yet. */
static void
began_waiting(struct mstat_scraper *s)
{
	/* Relaxed: as where the reader writes it. */
	if (atomic_load_explicit(&s->waiting_since, memory_order_relaxed) == 0)
		atomic_store_explicit(&s->waiting_since, mstat_clock_mono_ns(),
				      memory_order_relaxed);
}

/* With the lock held: asks for a tick that begins after now and waits
 * for it.  0, -ESHUTDOWN (stopping) or -ENOMEM (the tick ran out of
 * memory); the lock is held on return. */
static int
fresh_tick(struct mstat_scraper *s)
{
	uint64_t tick = s->started + 1;

	if (s->wanted < tick) {
		s->wanted = tick;
		pthread_cond_signal(&s->wake);
	}
	began_waiting(s);
	while (!s->stop && s->finished < tick)
		pthread_cond_wait(&s->done, &s->lock);
	return s->stop ? -ESHUTDOWN : s->failed ? -ENOMEM : 0;
}

int
mstat_scrape_write(struct mstat_scraper *s, FILE *f,
		   enum mstat_expo_format fmt)
{
	struct mstat_expo e = { .f = f, .format = fmt, .classes = s->opt.classes,
				.memory = s->opt.memory };
	int rc;

	pthread_mutex_lock(&s->lock);
	if ((rc = fresh_tick(s)) == 0) {
		s->scrapes++;
		size_t n = mstat_columns_view(&s->model, "", MSTAT_SORT_PID, false,
					      s->rows);
		rc = mstat_exposition_processes(&e, s->rows, n);
		if (rc == 0) {
			self_metrics(s, &e, n);
			rc = mstat_exposition_end(&e);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
mstat_scrape_rows(struct mstat_scraper *s,
		  int (*fn)(void *arg, const struct mstat_model_row *const *rows,
			     size_t n),
		   void *arg)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	if ((rc = fresh_tick(s)) == 0) {
		size_t n = mstat_columns_view(&s->model, "", MSTAT_SORT_PID, false,
					      s->rows);
		rc = fn(arg, s->rows, n);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
mstat_scrape_profile(struct mstat_scraper *s, pid_t pid,
		     struct mstat_core_profile **out, char *err, size_t errlen)
{
	struct profile_request r = { .pid = pid };

	*out = NULL;
	pthread_mutex_lock(&s->lock);
	r.tick = s->started + 1;
	r.next = s->requests;
	s->requests = &r;
	s->untried = true;
	pthread_cond_signal(&s->wake);
	began_waiting(s);
	while (!s->stop && !r.done)
		pthread_cond_wait(&s->done, &s->lock);
	if (!r.done) {
		/* Stopping: no longer in the queue. */
		struct profile_request **q = &s->requests;
		while (*q != &r)
			q = &(*q)->next;
		*q = r.next;
		r.rc = -ESHUTDOWN;
		snprintf(r.err, sizeof(r.err), "shutting down");
	}
	pthread_mutex_unlock(&s->lock);
	*out = r.h;
	if (r.rc < 0)
		snprintf(err, errlen, "%s", r.err);
	return r.rc;
}

int
mstat_scrape_health_rule(uint64_t waiting_since_ns, uint64_t now_ns,
			 unsigned wait_budget_us, char *why, size_t len)
{
	uint64_t limit = (uint64_t)wait_budget_us * 1000u +
			 (uint64_t)MSTAT_SCRAPER_STUCK_S * 1000000000u;

	if (waiting_since_ns == 0 || now_ns <= waiting_since_ns ||
	    now_ns - waiting_since_ns <= limit)
		return 0;
	snprintf(why, len, "the reader is stuck: scrapes have waited %.1f s "
		 "for it, more than %d s beyond its wait budget of %g s",
		 (double)(now_ns - waiting_since_ns) / 1e9,
		 MSTAT_SCRAPER_STUCK_S, wait_budget_us / 1e6);
	return -1;
}

int
mstat_scrape_health(struct mstat_scraper *s, char *why, size_t len)
{
	/* Relaxed: as where it is written; a value a moment old is as
	 * good. */
	return mstat_scrape_health_rule(
		atomic_load_explicit(&s->waiting_since, memory_order_relaxed),
		mstat_clock_mono_ns(), s->opt.wait_budget_us, why, len);
}
