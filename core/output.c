/* SPDX-License-Identifier: MIT */
/*
 * output.c - table, JSON, OpenMetrics and Prometheus text renderings of
 * the model's rows; the last two are exposition.c's, which mstat-exporter
 * shares.
 *
 * The table's columns are those of columns.h.  Counter names come from
 * MSTAT_CLASS_COUNTERS, so a counter added to the
 * list appears in JSON and OpenMetrics without an edit here.  The formats
 * are documented in docs/mstat-top-json.md and docs/mstat-top-openmetrics.md:
 * change them together.
 */
#include "output.h"
#include "sites.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "exposition.h"
#include "text.h"
#include "units.h"

int
mstat_output_parse_format(const char *s)
{
	if (strcmp(s, "table") == 0)
		return MSTAT_FORMAT_TABLE;
	if (strcmp(s, "json") == 0)
		return MSTAT_FORMAT_JSON;
	if (strcmp(s, "openmetrics") == 0)
		return MSTAT_FORMAT_OPENMETRICS;
	if (strcmp(s, "prometheus") == 0)
		return MSTAT_FORMAT_PROMETHEUS;
	return -1;
}

/*
 * Writes `s` in double quotes, as a JSON string or an OpenMetrics label
 * value: both quote the same way once text.c has replaced control
 * characters and bytes that are not UTF-8 (a name is whatever its process
 * wrote; an error can hold a file name from /dev/shm).
 */
static void
put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	mstat_text_put(f, s, MSTAT_TEXT_QUOTED);
	fputc('"', f);
}

static int
done(FILE *f)
{
	return ferror(f) ? -EIO : 0;
}

/* ---- table ---- */

int
mstat_output_table(FILE *f, const struct mstat_output_tick *t,
		   const struct mstat_model_row *const *rows, size_t n)
{
	struct mstat_model_totals tot;
	char when[32], v[6][MSTAT_UNIT_MAX];
	time_t secs = (time_t)(t->time_ms / 1000);
	uint64_t now_ns = t->time_ms * 1000000u;
	struct tm tm;

	mstat_model_totals(rows, n, &tot);
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "tick %" PRIu64 " at %s, %zu processes, live %s, "
		   "allocs %s, frees %s, net %s, growth %s, %s\n",
		t->seq, when, tot.processes,
		mstat_unit_format(v[0], sizeof(v[0]), MSTAT_UNIT_BYTES, true,
				  (double)tot.live_bytes),
		mstat_unit_format(v[1], sizeof(v[1]),
				  MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE,
				  tot.have_rates, tot.alloc_rate),
		mstat_unit_format(v[2], sizeof(v[2]),
				  MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE,
				  tot.have_rates, tot.free_rate),
		mstat_unit_format(v[3], sizeof(v[3]), MSTAT_UNIT_BYTES |
				  MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE,
				  tot.have_rates, tot.net_bytes_rate),
		mstat_unit_format(v[4], sizeof(v[4]),
				  MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED,
				  tot.have_growth, (double)tot.growth_bytes),
		mstat_unit_format(v[5], sizeof(v[5]), MSTAT_UNIT_BYTES |
				  MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE,
				  tot.have_growth_rate, tot.growth_bytes_rate));
	/* Every column of columns.h, the same as the terminal's. */
	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		const struct mstat_column *c = mstat_column(k);
		int w = k == MSTAT_SORT_NAME ? MSTAT_OUTPUT_NAME_WIDTH : c->width;
		if (k == MSTAT_SORT_COUNT - 1)
			fprintf(f, "%s\n", c->title);
		else if (c->unit & MSTAT_COLUMN_TEXT)
			fprintf(f, "%-*s ", w, c->title);
		else
			fprintf(f, "%*s ", w, c->title);
	}
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];
		for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
			const struct mstat_column *c = mstat_column(k);
			int w = k == MSTAT_SORT_NAME ? MSTAT_OUTPUT_NAME_WIDTH
						     : c->width;
			char cell[256];
			/* What a process wrote, made safe; cut and padded
			 * to the column by characters, as on the screen;
			 * the last column as it is. */
			mstat_column_cell(k, r, now_ns,
					  k == MSTAT_SORT_COUNT - 1 ? 0 : w,
					  "\u2026", cell, sizeof(cell));
			fputs(cell, f);
			if (k != MSTAT_SORT_COUNT - 1)
				fputc(' ', f);
		}
		if (r->err[0]) {
			fputs(": ", f);
			mstat_text_put(f, r->err, MSTAT_TEXT_PLAIN);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
	return done(f);
}

/* ---- JSON ---- */

static void
json_rate(FILE *f, const char *name, bool have, double v)
{
	if (have)
		fprintf(f, ",\"%s\":%.3f", name, v);
	else
		fprintf(f, ",\"%s\":null", name);
}

static void
json_count(FILE *f, const char *name, bool have, uint64_t v)
{
	if (have)
		fprintf(f, ",\"%s\":%" PRIu64, name, v);
	else
		fprintf(f, ",\"%s\":null", name);
}

static void
json_signed(FILE *f, const char *name, bool have, int64_t v)
{
	if (have)
		fprintf(f, ",\"%s\":%" PRId64, name, v);
	else
		fprintf(f, ",\"%s\":null", name);
}

/* A process's fields, without the closing brace. */
static void
json_process_fields(FILE *f, const struct mstat_model_row *r)
{
	fprintf(f, "{\"pid\":%d,\"name\":", (int)r->pid);
	put_quoted(f, r->name);
	fprintf(f, ",\"state\":\"%s\",\"error\":", mstat_model_live_name(r->live));
	if (r->err[0])
		put_quoted(f, r->err);
	else
		fputs("null", f);
	/* Never read (stalled from the start, or refused): nothing is known,
	 * which is not 0. */
	bool h = r->have_snap;
	json_count(f, "threads", h, r->threads);
#define MSTAT_X(e, fld, _) json_count(f, #fld, h, r->total.fld);
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	json_count(f, "requested_bytes", h, r->requested_bytes);
	json_count(f, "live_objects", h, mstat_model_live_objects(r));
	json_count(f, "live_bytes", h, mstat_model_live_bytes(r));
	json_rate(f, "alloc_rate", r->have_rates, r->alloc_rate);
	json_rate(f, "free_rate", r->have_rates, r->free_rate);
	json_rate(f, "alloc_bytes_rate", r->have_rates, r->alloc_bytes_rate);
	json_rate(f, "free_bytes_rate", r->have_rates, r->free_bytes_rate);
	json_rate(f, "net_bytes_rate", r->have_rates, r->net_bytes_rate);
	fputs(",\"classes\":[", f);
	bool first = true;
	for (uint32_t c = 0; c < r->class_count; c++) {
		const struct mstat_model_class *k = &r->classes[c];
		if (k->c.alloc_count == 0)
			continue; /* never used: documented as omitted */
		fputs(first ? "{\"size\":" : ",{\"size\":", f);
		first = false;
		if (k->max_size == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%" PRIu64, k->max_size);
#define MSTAT_X(e, fld, h) fprintf(f, ",\"" #fld "\":%" PRIu64, k->c.fld);
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
		fprintf(f, ",\"growth_bytes\":%" PRId64 ",\"growth_objects\":%"
			   PRId64 "}", k->growth_bytes, k->growth_objects);
	}
	fputc(']', f);
	if (r->end_ns)
		fprintf(f, ",\"end_time_s\":%.3f", (double)r->end_ns / 1e9);
	else
		fputs(",\"end_time_s\":null", f);
	/* Added in version 1 after the fields above. */
	if (r->start_ns)
		fprintf(f, ",\"start_time_s\":%.3f", (double)r->start_ns / 1e9);
	else
		fputs(",\"start_time_s\":null", f);
	json_signed(f, "growth_bytes", h, r->growth_bytes);
	json_signed(f, "growth_objects", h, r->growth_objects);
	json_rate(f, "growth_bytes_per_s", r->have_growth_rate,
		  r->growth_bytes_rate);
}

void
mstat_output_json_process(FILE *f, const struct mstat_model_row *r)
{
	json_process_fields(f, r);
	fputc('}', f);
}

void
mstat_output_json_sites(FILE *f, const struct mstat_site *s, size_t n)
{
	if (!s) {
		fputs(",\"sites\":null", f);
		return;
	}
	fputs(",\"sites\":[", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"function\":" : "{\"function\":", f);
		put_quoted(f, s[i].function);
		fputs(",\"file\":", f);
		put_quoted(f, s[i].file);
		fprintf(f, ",\"line\":%d,\"module\":", s[i].line);
		put_quoted(f, s[i].module);
		fprintf(f, ",\"address\":%" PRIu64 ",\"live_bytes\":%.0f"
			   ",\"live_objects\":%.0f,\"alloc_bytes\":%.0f"
			   ",\"alloc_objects\":%.0f}",
			s[i].pc, s[i].live_bytes, s[i].live_objects,
			s[i].alloc_bytes, s[i].alloc_objects);
	}
	fputc(']', f);
}

int
mstat_output_json(FILE *f, const struct mstat_output_tick *t,
		  const struct mstat_model_row *const *rows, size_t n)
{
	fprintf(f, "{\"version\":%d,\"tick\":%" PRIu64 ",\"time_ms\":%" PRIu64
		   ",\"interval_s\":%.3f,\"processes\":[",
		MSTAT_JSON_VERSION, t->seq, t->time_ms, t->interval_s);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_process_fields(f, rows[i]);
		if (t->sites)
			t->sites(t->sites_arg, f, rows[i]);
		fputc('}', f);
	}
	fputs("]}\n", f);
	return done(f);
}

/* ---- OpenMetrics and text 0.0.4: exposition.c ---- */

static int
exposition(FILE *f, enum mstat_expo_format fmt,
	   const struct mstat_model_row *const *rows, size_t n)
{
	struct mstat_expo e = { .f = f, .format = fmt, .classes = true };

	int rc = mstat_expo_processes(&e, rows, n);

	return rc < 0 ? rc : mstat_expo_end(&e);
}

int
mstat_output_openmetrics(FILE *f, const struct mstat_output_tick *t,
			 const struct mstat_model_row *const *rows, size_t n)
{
	(void)t; /* no timestamps: the scraper stamps what it reads */
	return exposition(f, MSTAT_EXPO_OPENMETRICS, rows, n);
}

int
mstat_output_prometheus(FILE *f, const struct mstat_output_tick *t,
			const struct mstat_model_row *const *rows, size_t n)
{
	(void)t;
	return exposition(f, MSTAT_EXPO_PROMETHEUS, rows, n);
}

int
mstat_output_write(FILE *f, enum mstat_output_format fmt,
		   const struct mstat_output_tick *t,
		   const struct mstat_model_row *const *rows, size_t n)
{
	switch (fmt) {
	case MSTAT_FORMAT_JSON: return mstat_output_json(f, t, rows, n);
	case MSTAT_FORMAT_OPENMETRICS: return mstat_output_openmetrics(f, t, rows, n);
	case MSTAT_FORMAT_PROMETHEUS: return mstat_output_prometheus(f, t, rows, n);
	case MSTAT_FORMAT_TABLE: break;
	}
	return mstat_output_table(f, t, rows, n);
}
