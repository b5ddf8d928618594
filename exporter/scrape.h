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
 *   - the segments are read when scraped, and only then;
 *   - concurrent scrapes never read a segment twice at once, and what
 *     they print is one consistent tick;
 *   - only the reader thread touches the core (ticks, RCU), so HTTP
 *     threads need no RCU registration.
 * Whether the reader keeps up is known without it (mstat_scraper_health):
 * a health check reads one timestamp, and starts no tick.
 */
#ifndef MSTAT_EXPORTER_SCRAPE_H
#define MSTAT_EXPORTER_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exposition.h"
#include "procs.h"

struct mstat_scraper;

struct mstat_scrape_options {
	unsigned wait_budget_us; /* for stalled and busy targets, per tick */
	bool classes;            /* per-size-class series */
	struct mstat_namespaces namespaces; /* whose /dev/shm (procs.h) */
	/* One-line notes of the core (a segment refused); the reader's
	 * thread. */
	void (*note)(void *arg, const char *line);
	void *note_arg;
};

/* Starts the reader thread.  0 or -errno. */
int mstat_scraper_start(struct mstat_scraper **out,
			const struct mstat_scrape_options *o);
/* Stops it and frees everything; scrapes must have ended.  From a thread
 * not registered with RCU (it registers itself for the while). */
void mstat_scraper_stop(struct mstat_scraper *s);

/* Reads every segment (a tick that begins after this call) and writes the
 * exposition to `f`: the processes, then the exporter's own metrics.
 * 0, -ENOMEM, -EIO (the stream), -ESHUTDOWN (stopping). */
int mstat_scraper_scrape(struct mstat_scraper *s, FILE *f,
			 enum mstat_expo_format fmt);

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
int mstat_scraper_health(struct mstat_scraper *s, char *why, size_t len);

/* The rule: `waiting_since_ns` is when scrapes began to wait for the
 * reader's next tick (0: none waits), `now_ns` the time, both
 * CLOCK_MONOTONIC. */
int mstat_scraper_health_rule(uint64_t waiting_since_ns, uint64_t now_ns,
			      unsigned wait_budget_us, char *why, size_t len);

#endif /* MSTAT_EXPORTER_SCRAPE_H */
