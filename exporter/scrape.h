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
 */
#ifndef MSTAT_EXPORTER_SCRAPE_H
#define MSTAT_EXPORTER_SCRAPE_H

#include <stdbool.h>
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

#endif /* MSTAT_EXPORTER_SCRAPE_H */
