/* SPDX-License-Identifier: MIT */
/*
 * scrape.h - mstat-exporter's one observer, and what a scrape reads.
 *
 * The exporter runs one core (struct mstat_core, as mstat-top
 * does), owned by a thread of its own, the reader.  A scrape, in
 * whatever HTTP thread serves it, asks the reader for a tick that begins
 * after the scrape arrived, waits for it, and writes the model it left.
 * Scrapes that arrive together share one tick; a scrape never gets a
 * tick that began before it arrived.  So:
 *   - the segments are read when scraped, and only then; but with a
 *     post-mortem directory, the reader also ticks on its own,
 *     MSTAT_SCRAPER_WATCH_S after the last tick began, so that a
 *     killed process is found, and its profile written with what
 *     killed it, within about that, scraped or not;
 *   - concurrent scrapes never read a segment twice at once, and what
 *     they print is one consistent tick;
 *   - only the reader thread touches the core (ticks, RCU), so HTTP
 *     threads need no RCU registration.
 * A heap profile is read in the thread that asks for it: the reader
 * thread only hands it, between ticks, a handle of the process's
 * profile (core/profiles.h), which the asking thread reads, names and
 * encodes without the core; ticks never wait for that.
 * Whether the reader keeps up is known without it (mstat_scrape_health):
 * a health check reads one timestamp, and starts no tick.
 */
#ifndef MSTAT_EXPORTER_SCRAPE_H
#define MSTAT_EXPORTER_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/types.h>

#include "core/exposition.h"
#include "core/model.h"
#include "shm/owner.h"
#include "core/procs.h"

struct mstat_scraper;
struct mstat_core_profile;

struct mstat_scrape_options {
	unsigned wait_budget_us; /* for stalled and busy targets, per tick */
	bool classes;            /* per-size-class series */
	bool memory;             /* resident memory by part, every process's
				  * read at each scrape (core.h) */
	struct mstat_namespaces namespaces; /* whose /dev/shm (procs.h) */
	/* One-line notes of the core (a segment refused); the reader's
	 * thread. */
	void (*note)(void *arg, const char *line);
	void *note_arg;
	/* How long killed processes' segments are kept (owner.h); where
	 * their profiles go, and how many bytes of them (killed.h). */
	struct mstat_grace grace;
	const char *postmortem_dir;
	uint64_t postmortem_bytes;
};

/* Starts the reader thread.  0 or -errno. */
int mstat_scrape_start(struct mstat_scraper **out,
		       const struct mstat_scrape_options *o);
/* Stops it and frees everything; scrapes must have ended.  From a thread
 * not registered with RCU (it registers itself for the while). */
void mstat_scrape_stop(struct mstat_scraper *s);

/* Reads every segment (a tick that begins after this call) and writes the
 * exposition to `f`: the processes, then the exporter's own metrics.
 * 0, -ENOMEM, -EIO (the stream), -ESHUTDOWN (stopping). */
int mstat_scrape_write(struct mstat_scraper *s, FILE *f,
		       enum mstat_expo_format fmt);

/* Reads every segment (a tick that begins after this call), then calls
 * fn(arg, rows, n) with the processes, by pid, under the scraper's lock:
 * fn must be quick, and keep nothing of them.  fn's result, or -ENOMEM,
 * -ESHUTDOWN. */
int mstat_scrape_rows(struct mstat_scraper *s,
		      int (*fn)(void *arg,
				 const struct mstat_model_row *const *rows,
				 size_t n),
		       void *arg);

/* A handle of the heap profile of the process `pid` (the pid of its
 * row), from the reader thread, between ticks; if the core holds none,
 * after a tick that began after this call (a process started since).
 * The caller reads and closes it (core/profiles.h).  0; -ENOENT with
 * why in `err`; -ESTALE if the process ended between that tick and the
 * handing out; -ESHUTDOWN; another -errno with why. */
int mstat_scrape_profile(struct mstat_scraper *s, pid_t pid,
			 struct mstat_core_profile **out, char *err,
			 size_t errlen);

/* With a post-mortem directory: how long the reader goes without a
 * tick.  A tick of 1000 processes costs about 11 ms of CPU
 * (docs/performance.md): 1.1 % of a core, once a second. */
#define MSTAT_SCRAPER_WATCH_S 1

/* How long, beyond the wait budget, scrapes may wait for the reader
 * without a tick finishing before it counts as stuck.  A tick of 1000
 * processes costs about 15 ms of CPU (docs/performance.md): ten seconds
 * is hundreds of times that, even with a tenth of a core. */
#define MSTAT_SCRAPER_STUCK_S 10

/* Whether the reader keeps up: 0; or -1, with why in one line, when
 * scrapes have waited for it longer than the wait budget and
 * MSTAT_SCRAPER_STUCK_S, with no tick finishing meanwhile (a reader
 * stuck in a tick, or never starting one).  Takes no lock and starts
 * no tick: it answers while the reader is busy, or stuck.  Any thread. */
int mstat_scrape_health(struct mstat_scraper *s, char *why, size_t len);

/* The rule: `waiting_since_ns` is when scrapes began to wait for the
 * reader's next tick (0: none waits), `now_ns` the time, both
 * CLOCK_MONOTONIC. */
int mstat_scrape_health_rule(uint64_t waiting_since_ns, uint64_t now_ns,
			     unsigned wait_budget_us, char *why, size_t len);

#endif /* MSTAT_EXPORTER_SCRAPE_H */
