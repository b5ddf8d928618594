/* SPDX-License-Identifier: MIT */
/*
 * output.c - table, JSON, OpenMetrics and Prometheus text renderings of
 * the model's rows; the last two are exposition.c's, which mstat-exporter
 * shares.
 *
 * Counter names come from MSTAT_CLASS_COUNTERS, so a counter added to the
 * list appears in JSON and OpenMetrics without an edit here.  The formats
 * are documented in docs/mstat-top-json.md and docs/mstat-top-openmetrics.md:
 * change them together.
 */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "exposition.h"
#include "text.h"

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

void
mstat_output_human(char *buf, size_t len, double v)
{
	static const char units[] = " KMGTPE";
	double a = fabs(v);
	unsigned u = 0;

	while (a >= 9999.5 && u + 1 < sizeof(units) - 1) {
		a /= 1024.0;
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.*f%c", a < 99.95 ? 1 : 0, v, units[u]);
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

/* A cell of 24 bytes: the value, or "-" when it is not known (a process
 * never read, a rate before its second snapshot). */
static const char *
count_cell(char *c, bool have, uint64_t v)
{
	if (!have)
		return "-";
	snprintf(c, 24, "%" PRIu64, v);
	return c;
}

static const char *
rate_cell(char *c, bool have, double v)
{
	if (!have)
		return "-";
	snprintf(c, 24, "%.0f", v);
	return c;
}

int
mstat_output_table(FILE *f, const struct mstat_output_tick *t,
		   const struct mstat_model_row *const *rows, size_t n)
{
	struct mstat_model_totals tot;
	char when[32], lb[16], ar[16], fr[16], nr[16];
	time_t secs = (time_t)(t->time_ms / 1000);
	struct tm tm;

	mstat_model_totals(rows, n, &tot);
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	mstat_output_human(lb, sizeof(lb), (double)tot.live_bytes);
	mstat_output_human(ar, sizeof(ar), tot.alloc_rate);
	mstat_output_human(fr, sizeof(fr), tot.free_rate);
	mstat_output_human(nr, sizeof(nr), tot.net_bytes_rate);
	fprintf(f, "tick %" PRIu64 " at %s, %zu processes, live %sB, "
		   "%s allocs/s, %s frees/s, net %sB/s\n",
		t->seq, when, tot.processes, lb, ar, fr, nr);
	fprintf(f, "%7s %-16s %7s %10s %12s %9s %9s %9s %s\n", "PID", "NAME",
		"THREADS", "LIVE-BYTES", "LIVE-OBJECTS", "ALLOC/s", "FREE/s",
		"NET/s", "STATE");
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];
		/* Cut at 16 bytes without splitting a character. */
		char name[17], err[sizeof(r->err)];
		mstat_text_escape(name, sizeof(name), r->name, MSTAT_TEXT_PLAIN);
		mstat_text_escape(err, sizeof(err), r->err, MSTAT_TEXT_PLAIN);
		char c[6][24];
		bool h = r->have_snap, hr = r->have_rates;
		fprintf(f, "%7d %-16s %7s %10s %12s %9s %9s %9s %s%s%s\n",
			(int)r->pid, name, count_cell(c[0], h, r->threads),
			count_cell(c[1], h, mstat_model_live_bytes(r)),
			count_cell(c[2], h, mstat_model_live_objects(r)),
			rate_cell(c[3], hr, r->alloc_rate),
			rate_cell(c[4], hr, r->free_rate),
			rate_cell(c[5], hr, r->net_bytes_rate),
			mstat_model_live_name(r->live), err[0] ? ": " : "", err);
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
json_row(FILE *f, const struct mstat_model_row *r)
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
		fputc('}', f);
	}
	fputc(']', f);
	if (r->end_ns)
		fprintf(f, ",\"end_time_s\":%.3f", (double)r->end_ns / 1e9);
	else
		fputs(",\"end_time_s\":null", f);
	fputc('}', f);
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
		json_row(f, rows[i]);
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
