/* SPDX-License-Identifier: MIT */
/*
 * output.c - table, JSON, OpenMetrics and Prometheus text renderings of
 * the model's rows; the last two are exposition.c's, which mstat-exporter
 * shares.
 *
 * The table's columns are those of columns.h, and a process's JSON
 * fields those of the list of fields (fields.h) with a JSON name, in its
 * order; counter names come from MSTAT_CLASS_COUNTERS, so a counter added
 * to the list appears in JSON and OpenMetrics without an edit here.  The
 * formats are documented in docs/mstat-top-json.md and
 * docs/mstat-top-openmetrics.md: change them together.
 */
#include "core/output.h"
#include "core/sites.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/exposition.h"
#include "core/fields.h"
#include "core/text.h"
#include "core/units.h"

/* The formats' names, as -o takes them. */
static const char *const format_names[MSTAT_FORMAT_COUNT] = {
	[MSTAT_FORMAT_TABLE] = "table",
	[MSTAT_FORMAT_JSON] = "json",
	[MSTAT_FORMAT_OPENMETRICS] = "openmetrics",
	[MSTAT_FORMAT_PROMETHEUS] = "prometheus",
};

int
mstat_output_parse_format(const char *s)
{
	for (int i = 0; i < MSTAT_FORMAT_COUNT; i++)
		if (strcmp(s, format_names[i]) == 0)
			return i;
	return -1;
}

const char *
mstat_output_formats(void)
{
	static char list[64];

	if (!list[0])
		for (int i = 0; i < MSTAT_FORMAT_COUNT; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", i ? ", " : "", format_names[i]);
	return list;
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
		mstat_units_format(v[0], sizeof(v[0]), MSTAT_UNIT_BYTES, true,
				   (double)tot.live_bytes),
		mstat_units_format(v[1], sizeof(v[1]),
				   MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE,
				   tot.have_rates, tot.alloc_rate),
		mstat_units_format(v[2], sizeof(v[2]),
				   MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE,
				   tot.have_rates, tot.free_rate),
		mstat_units_format(v[3], sizeof(v[3]), MSTAT_UNIT_BYTES |
				   MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE,
				   tot.have_rates, tot.net_bytes_rate),
		mstat_units_format(v[4], sizeof(v[4]),
				   MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED,
				   tot.have_growth, (double)tot.growth_bytes),
		mstat_units_format(v[5], sizeof(v[5]), MSTAT_UNIT_BYTES |
				   MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE,
				   tot.have_growth_rate, tot.growth_bytes_rate));
	/* Every column of columns.h, the same as the terminal's. */
	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		const struct mstat_column *c = mstat_columns_at(k);
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
			const struct mstat_column *c = mstat_columns_at(k);
			int w = k == MSTAT_SORT_NAME ? MSTAT_OUTPUT_NAME_WIDTH
						     : c->width;
			char cell[256];
			/* What a process wrote, made safe; cut and padded
			 * to the column by characters, as on the screen;
			 * the last column as it is. */
			mstat_columns_cell(k, r, now_ns,
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

/* `"name":v`, or null if not known; after a comma if `sep`. */
static void
json_count(FILE *f, bool sep, const char *name, bool have, uint64_t v)
{
	if (have)
		fprintf(f, "%s\"%s\":%" PRIu64, sep ? "," : "", name, v);
	else
		fprintf(f, "%s\"%s\":null", sep ? "," : "", name);
}

/* The size classes a process used. */
static void
json_classes(FILE *f, const struct mstat_model_row *r)
{
	bool first = true;

	fputs("[", f);
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
}

/* A process's memory: its RSS, its parts, and its live bytes not
 * resident, in bytes. */
static void
json_memory(FILE *f, const struct mstat_memory *m)
{
	fprintf(f, "{\"rss\":%" PRIu64, m->rss);
	for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++)
		fprintf(f, ",\"%s\":%" PRIu64, mstat_memory_part_name(p), m->part[p]);
	fprintf(f, ",\"live_not_resident\":%" PRIu64 "}", m->live_not_resident);
}

/* One field of a process, after a comma unless it is the first. */
static void
json_field(FILE *f, const struct mstat_field *fd,
	   const struct mstat_model_row *r, const struct mstat_field_value *v,
	   bool first)
{
	if (!first)
		fputc(',', f);
	if (fd->type == MSTAT_TYPE_COUNTERS) {
		/* Never read (stalled from the start, or refused): nothing
		 * is known, which is not 0. */
		bool h = v->known;
		bool sep = false;
#define MSTAT_X(e, fld, _)                                                    \
		json_count(f, sep, #fld, h, r->total.fld);                    \
		sep = true;
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
#define MSTAT_X(e, fld, _)                                                    \
		json_count(f, sep, #fld, h, r->fld);                          \
		sep = true;
		MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
		return;
	}
	fprintf(f, "\"%s\":", fd->json);
	if (!v->known && fd->type != MSTAT_TYPE_CLASSES) {
		fputs("null", f);
		return;
	}
	switch (fd->type) {
	case MSTAT_TYPE_INT: fprintf(f, "%d", (int)v->i); break;
	case MSTAT_TYPE_U64: fprintf(f, "%" PRIu64, v->u); break;
	case MSTAT_TYPE_I64: fprintf(f, "%" PRId64, v->i); break;
	case MSTAT_TYPE_REAL: fprintf(f, "%.3f", v->d); break;
	case MSTAT_TYPE_TEXT:
	case MSTAT_TYPE_NAME: put_quoted(f, v->s); break;
	case MSTAT_TYPE_STATE:
		put_quoted(f, mstat_model_live_name((enum mstat_model_live)v->i));
		break;
	case MSTAT_TYPE_CLASSES: json_classes(f, r); break;
	case MSTAT_TYPE_MEMORY: json_memory(f, &r->memory); break;
	case MSTAT_TYPE_COUNTERS: break;
	}
}

/* A process's fields (those of fields.h with a JSON name, in its order),
 * without the closing brace. */
static void
json_process_fields(FILE *f, const struct mstat_model_row *r)
{
	bool first = true;

	fputc('{', f);
	for (int id = 0; id < MSTAT_FIELD_COUNT; id++) {
		const struct mstat_field *fd = mstat_fields_at(id);
		struct mstat_field_value v;

		if (!fd->json && fd->type != MSTAT_TYPE_COUNTERS)
			continue;
		mstat_fields_get(id, r, 0, &v);
		json_field(f, fd, r, &v, first);
		first = false;
	}
}

void
mstat_output_json_process(FILE *f, const struct mstat_model_row *r)
{
	json_process_fields(f, r);
	fputc('}', f);
}

/* `,"name":` and a number, or null where it is not known (NAN). */
static void
json_number(FILE *f, const char *name, double v, const char *format)
{
	fprintf(f, ",\"%s\":", name);
	if (isnan(v))
		fputs("null", f);
	else
		fprintf(f, format, v);
}

/* A site's lifetimes (lifetime.h): what they say, and the bytes freed
 * by lifetime, bucket by bucket, where the counter's rate is known. */
static void
json_lifetimes(FILE *f, const struct mstat_site *s)
{
	const struct mstat_lifetime_summary *l = &s->lifetimes;

	json_number(f, "lifetime_median_ns", l->median_ns, "%.0f");
	json_number(f, "short_lived_share", l->short_share, "%.4f");
	json_number(f, "live_age_ns", l->live_age_ns, "%.0f");
	json_number(f, "oldest_live_age_ns", l->oldest_ns, "%.0f");
	if (l->ns_per_tick <= 0) {
		fputs(",\"lifetimes\":null", f);
		return;
	}
	fputs(",\"lifetimes\":[", f);
	bool first = true;
	for (unsigned b = 0; b < MSTAT_LIFETIMES; b++) {
		if (!s->life.freed[b])
			continue;
		fprintf(f, "%s{\"from_ns\":%.0f,\"to_ns\":", first ? "" : ",",
			mstat_lifetime_bound_ns(b, l->ns_per_tick));
		if (b + 1 < MSTAT_LIFETIMES)
			fprintf(f, "%.0f", mstat_lifetime_bound_ns(b + 1, l->ns_per_tick));
		else
			fputs("null", f);
		fprintf(f, ",\"bytes\":%" PRIu64 "}", s->life.freed[b]);
		first = false;
	}
	fputc(']', f);
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
			   ",\"alloc_objects\":%.0f",
			s[i].pc, s[i].live_bytes, s[i].live_objects,
			s[i].alloc_bytes, s[i].alloc_objects);
		json_lifetimes(f, &s[i]);
		fputc('}', f);
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
	struct mstat_expo e = { .f = f, .format = fmt, .classes = true,
				.memory = true };

	int rc = mstat_exposition_processes(&e, rows, n);

	return rc < 0 ? rc : mstat_exposition_end(&e);
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
	case MSTAT_FORMAT_TABLE:
	case MSTAT_FORMAT_COUNT: break;
	}
	return mstat_output_table(f, t, rows, n);
}
