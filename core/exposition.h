/* SPDX-License-Identifier: MIT */
/*
 * exposition.h - the metrics writer: the model's rows as an OpenMetrics
 * 1.0.0 text or as Prometheus's text format 0.0.4.
 *
 * One writer for every face that exports metrics: mstat-top's batch
 * output (-o openmetrics, -o prometheus) and mstat-exporter's /metrics.
 * The metrics are listed in docs/mstat-top-openmetrics.md; change them
 * together.
 *
 * The two formats differ in how a family is declared, and this file is
 * the one place that knows how:
 *
 *                     OpenMetrics 1.0.0            text 0.0.4
 *   counter family    # TYPE mstat_allocs counter  # TYPE mstat_allocs_total counter
 *   its samples       mstat_allocs_total           mstat_allocs_total
 *   info family       # TYPE mstat_process info    # TYPE mstat_process_info gauge
 *   its samples       mstat_process_info ... 1     mstat_process_info ... 1
 *   unit              # UNIT mstat_live_bytes bytes  (none)
 *   end               # EOF                        (nothing)
 *
 * Sample names, label names and values are the same in both, so a query
 * reads the same whichever format a scraper took.  No sample carries a
 * timestamp: the scraper stamps the scrape.  Label values are text a
 * process supplied, escaped by text.c's quoted rule (which leaves no
 * control character, so neither format's "\n" escape is needed).
 */
#ifndef MSTAT_CORE_EXPOSITION_H
#define MSTAT_CORE_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/model.h"

enum mstat_expo_format {
	MSTAT_EXPO_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
	MSTAT_EXPO_PROMETHEUS,  /* text/plain; version=0.0.4 */
};

/* The Content-Type of a format, for HTTP. */
const char *mstat_exposition_content_type(enum mstat_expo_format fmt);

enum mstat_expo_type {
	MSTAT_EXPO_COUNTER,
	MSTAT_EXPO_GAUGE,
	MSTAT_EXPO_INFO,
};

struct mstat_expo {
	FILE *f;
	enum mstat_expo_format format;
	bool classes;         /* per-size-class series too (cardinality:
			       * one series per class a process used) */
	bool memory;          /* resident memory's families (memory.h) */
};

/*
 * Declares a family: `name` without the type's suffix (no "_total" on a
 * counter, no "_info" on an info), `unit` ("bytes", "seconds") or NULL
 * (the name must then end in "_<unit>"), `help` a constant text without
 * '\\', '"' or a line feed.  Then its samples, each:
 *	mstat_exposition_sample(e, name, type);   the sample's name
 *	... "{label=\"value\",...}" written by the caller ...
 *	fprintf(e->f, " %value\n");
 */
void mstat_exposition_family(const struct mstat_expo *e, const char *name,
			     enum mstat_expo_type type, const char *unit,
			     const char *help);
void mstat_exposition_sample(const struct mstat_expo *e, const char *name,
			     enum mstat_expo_type type);
/* `,key="value"` (or without the comma if `first`), the value escaped by
 * text.c's quoted rule. */
void mstat_exposition_label(const struct mstat_expo *e, bool first, const char *key,
			    const char *value);

/*
 * The labels that name a process's series, in order: fn(arg, key, value)
 * for each, the value as the row holds it (not escaped).  Every face that
 * names a process by labels takes them from here: the metrics, and
 * mstat-exporter's list of profile targets; a label added here appears
 * in both.
 */
void mstat_exposition_process_labels(const struct mstat_model_row *r,
				     void (*fn)(void *arg, const char *key,
					  const char *value),
			       void *arg);

/* Every per-process family, over `rows`.  0, or -ENOMEM (nothing
 * written). */
int mstat_exposition_processes(const struct mstat_expo *e,
			  const struct mstat_model_row *const *rows, size_t n);

/* Ends the exposition ("# EOF" in OpenMetrics).  0, or -EIO if the stream
 * failed anywhere. */
int mstat_exposition_end(const struct mstat_expo *e);

#endif /* MSTAT_CORE_EXPOSITION_H */
