/* SPDX-License-Identifier: MIT */
/*
 * output.h - batch outputs of mstat-top, all from the model: a plain
 * table, JSON (one object per tick, docs/mstat-top-json.md), and
 * OpenMetrics 1.0.0 or Prometheus text 0.0.4 (docs/mstat-top-openmetrics.md;
 * written by exposition.h, which mstat-exporter shares).
 *
 * Each function writes one tick's worth of rows to `f` and returns 0, or
 * -EIO if the stream failed.  They print only what is in the rows they are
 * given, so the same rows give the same bytes.
 */
#ifndef MSTAT_CORE_OUTPUT_H
#define MSTAT_CORE_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "core/columns.h"
#include "core/model.h"

enum mstat_output_format {
	MSTAT_FORMAT_TABLE = 0,
	MSTAT_FORMAT_JSON,
	MSTAT_FORMAT_OPENMETRICS,  /* OpenMetrics 1.0.0 */
	MSTAT_FORMAT_PROMETHEUS,   /* Prometheus's text format 0.0.4 */
	MSTAT_FORMAT_COUNT
};

#define MSTAT_JSON_VERSION 1

/* What a tick is, apart from its rows. */
struct mstat_output_tick {
	uint64_t seq;         /* 1 for the first tick printed */
	uint64_t time_ms;     /* CLOCK_REALTIME, milliseconds since the epoch */
	double interval_s;    /* the sampling interval */
	/* JSON: if set, called at the end of each process object to add its
	 * "sites" (mstat_output_json_sites()). */
	void (*sites)(void *arg, FILE *f, const struct mstat_model_row *r);
	void *sites_arg;
};

struct mstat_site;
/* `,"sites":[...]` (docs/mstat-top-json.md, "site"), or `,"sites":null`
 * when `s` is NULL: the profile could not be read. */
void mstat_output_json_sites(FILE *f, const struct mstat_site *s, size_t n);

/* "table", "json", "openmetrics", "prometheus" -> the format, or -1. */
int mstat_output_parse_format(const char *s);
/* The formats' names, as a list: "table, json, ...". */
const char *mstat_output_formats(void);

int mstat_output_table(FILE *f, const struct mstat_output_tick *t,
		       const struct mstat_model_row *const *rows, size_t n);
int mstat_output_json(FILE *f, const struct mstat_output_tick *t,
		      const struct mstat_model_row *const *rows, size_t n);
int mstat_output_openmetrics(FILE *f, const struct mstat_output_tick *t,
			     const struct mstat_model_row *const *rows, size_t n);
int mstat_output_prometheus(FILE *f, const struct mstat_output_tick *t,
			    const struct mstat_model_row *const *rows, size_t n);
int mstat_output_write(FILE *f, enum mstat_output_format fmt,
		       const struct mstat_output_tick *t,
		       const struct mstat_model_row *const *rows, size_t n);

/* One process as a JSON object (docs/mstat-top-json.md, "process"):
 * what mstat-top prints per process and mstat-run's summary holds. */
void mstat_output_json_process(FILE *f, const struct mstat_model_row *r);

/* Width of the batch table's NAME column. */
#define MSTAT_OUTPUT_NAME_WIDTH 20

#endif /* MSTAT_CORE_OUTPUT_H */
