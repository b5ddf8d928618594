/* SPDX-License-Identifier: MIT */
/*
 * exposition.c - the metrics writer; see exposition.h.
 *
 * The per-process families are one table, `families` below: its order is
 * the order of the output, and each entry says how the family is named,
 * typed and helped, and where its value comes from.  The class counters
 * come from MSTAT_CLASS_COUNTERS and the per-process ones from
 * MSTAT_TOTAL_COUNTERS, so a counter added to those lists is exported
 * without an edit here but its name below.
 */
#include "exposition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

const char *
mstat_expo_content_type(enum mstat_expo_format fmt)
{
	return fmt == MSTAT_EXPO_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

static const char *
type_word(const struct mstat_expo *e, enum mstat_expo_type type)
{
	switch (type) {
	case MSTAT_EXPO_COUNTER: return "counter";
	case MSTAT_EXPO_INFO:
		/* Text 0.0.4 has no info type: an info is a gauge of value 1,
		 * as Prometheus's client libraries write it. */
		return e->format == MSTAT_EXPO_OPENMETRICS ? "info" : "gauge";
	case MSTAT_EXPO_GAUGE: break;
	}
	return "gauge";
}

static const char *
suffix(enum mstat_expo_type type)
{
	return type == MSTAT_EXPO_COUNTER ? "_total"
	       : type == MSTAT_EXPO_INFO  ? "_info"
					  : "";
}

void
mstat_expo_family(const struct mstat_expo *e, const char *name,
		  enum mstat_expo_type type, const char *unit, const char *help)
{
	/* OpenMetrics names the family, text 0.0.4 its samples. */
	const char *sfx = e->format == MSTAT_EXPO_OPENMETRICS ? "" : suffix(type);

	fprintf(e->f, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, sfx, help, name,
		sfx, type_word(e, type));
	if (unit && e->format == MSTAT_EXPO_OPENMETRICS)
		fprintf(e->f, "# UNIT %s %s\n", name, unit);
}

void
mstat_expo_sample(const struct mstat_expo *e, const char *name,
		  enum mstat_expo_type type)
{
	fputs(name, e->f);
	fputs(suffix(type), e->f);
}

void
mstat_expo_label(const struct mstat_expo *e, bool first, const char *key,
		 const char *value)
{
	fprintf(e->f, "%s%s=\"", first ? "" : ",", key);
	mstat_text_put(e->f, value, MSTAT_TEXT_QUOTED);
	fputc('"', e->f);
}

/* ---- per-process families ---- */

/* Metric names of the class counters: "allocs" reads better than
 * "alloc_count_total", and a name ending in _count would collide with the
 * suffix of summaries and histograms. */
#define OM_NAME_alloc_count "allocs"
#define OM_NAME_alloc_bytes "alloc_bytes"
#define OM_NAME_free_count "frees"
#define OM_NAME_free_bytes "free_bytes"
#define OM_NAME_requested_bytes "requested_bytes"
#define OM_UNIT_alloc_count NULL
#define OM_UNIT_alloc_bytes "bytes"
#define OM_UNIT_free_count NULL
#define OM_UNIT_free_bytes "bytes"
#define OM_UNIT_requested_bytes "bytes"

/* Which samples a family has. */
enum when {
	KNOWN,     /* processes read at least once: counters are known */
	ALWAYS,    /* every process */
	PER_CLASS, /* every class a process used, with a `size` label */
};

struct family {
	const char *name, *unit, *help;
	enum mstat_expo_type type;
	enum when when;
	/* Exactly one of these gives the value. */
	uint64_t (*count)(const struct mstat_model_row *r);
	double (*real)(const struct mstat_model_row *r);
	size_t class_field; /* PER_CLASS: offsetof(struct mstat_counts, ...) */
	void (*labels)(const struct mstat_expo *e, const struct mstat_model_row *r);
};

#define MSTAT_X(e, fld, h)                                                    \
	static uint64_t get_##fld(const struct mstat_model_row *r)            \
	{                                                                     \
		return r->total.fld;                                          \
	}
MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
#define MSTAT_X(e, fld, h)                                                    \
	static uint64_t get_##fld(const struct mstat_model_row *r)            \
	{                                                                     \
		return r->fld;                                                \
	}
MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X

static uint64_t
get_live_bytes(const struct mstat_model_row *r)
{
	return mstat_model_live_bytes(r);
}

static uint64_t
get_live_objects(const struct mstat_model_row *r)
{
	return mstat_model_live_objects(r);
}

static uint64_t
get_threads(const struct mstat_model_row *r)
{
	return r->threads;
}

static uint64_t
get_running(const struct mstat_model_row *r)
{
	return !mstat_model_gone(r->live);
}

static uint64_t
get_one(const struct mstat_model_row *r)
{
	(void)r;
	return 1;
}

static double
get_start_time(const struct mstat_model_row *r)
{
	return (double)r->start_ns / 1e9;
}

static void
info_labels(const struct mstat_expo *e, const struct mstat_model_row *r)
{
	char layout[24];

	snprintf(layout, sizeof(layout), "%" PRIu32 ".%" PRIu32,
		 r->layout_major, r->layout_minor);
	mstat_expo_label(e, false, "mode",
			 r->writer_mode == 1   ? "fenced"
			 : r->writer_mode == 2 ? "membarrier"
					       : "unknown");
	mstat_expo_label(e, false, "layout", layout);
}

static const struct family families[] = {
#define MSTAT_X(e, fld, h)                                                    \
	{ "mstat_" OM_NAME_##fld, OM_UNIT_##fld, h, MSTAT_EXPO_COUNTER,        \
	  KNOWN, get_##fld, NULL, 0, NULL },
	MSTAT_CLASS_COUNTERS(MSTAT_X)
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
#define MSTAT_X(e, fld, h)                                                    \
	{ "mstat_class_" OM_NAME_##fld, OM_UNIT_##fld,                         \
	  h ", per size class (size: its largest size)", MSTAT_EXPO_COUNTER,  \
	  PER_CLASS, NULL, NULL, offsetof(struct mstat_counts, fld), NULL },
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	{ "mstat_live_bytes", "bytes", "bytes allocated and not yet freed",
	  MSTAT_EXPO_GAUGE, KNOWN, get_live_bytes, NULL, 0, NULL },
	{ "mstat_live_objects", NULL, "allocations not yet freed",
	  MSTAT_EXPO_GAUGE, KNOWN, get_live_objects, NULL, 0, NULL },
	{ "mstat_threads", NULL, "threads counting into a slot of their own",
	  MSTAT_EXPO_GAUGE, KNOWN, get_threads, NULL, 0, NULL },
	{ "mstat_running", NULL,
	  "1 while the process runs, 0 once it exited or died",
	  MSTAT_EXPO_GAUGE, ALWAYS, get_running, NULL, 0, NULL },
	{ "mstat_process_start_time_seconds", "seconds",
	  "when the process started, since the Unix epoch",
	  MSTAT_EXPO_GAUGE, ALWAYS, NULL, get_start_time, 0, NULL },
	{ "mstat_process", NULL,
	  "the process's writer mode and segment layout version",
	  MSTAT_EXPO_INFO, ALWAYS, get_one, NULL, 0, info_labels },
};

/* `{pid="..",name=".."` of a row, escaped once per exposition rather
 * than once per sample: a name is at most 63 bytes, each escaped to at
 * most 2. */
#define LABELS_MAX (sizeof("{pid=\"-2147483648\",name=\"\"") + 2 * 64)

static void
process_labels(char *buf, const struct mstat_model_row *r)
{
	int k = snprintf(buf, LABELS_MAX, "{pid=\"%d\",name=\"", (int)r->pid);
	k += (int)mstat_text_escape(buf + k, LABELS_MAX - (size_t)k - 1, r->name,
				    MSTAT_TEXT_QUOTED);
	buf[k++] = '"';
	buf[k] = '\0';
}

static void
write_family(const struct mstat_expo *e, const struct family *fam,
	     const struct mstat_model_row *const *rows, size_t n,
	     const char (*labels)[LABELS_MAX])
{
	mstat_expo_family(e, fam->name, fam->type, fam->unit, fam->help);
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];

		if (fam->when == PER_CLASS) {
			for (uint32_t c = 0; c < r->class_count; c++) {
				const struct mstat_model_class *k = &r->classes[c];
				uint64_t v;
				char size[24];

				if (k->c.alloc_count == 0)
					continue; /* never used */
				memcpy(&v, (const char *)&k->c + fam->class_field,
				       sizeof(v));
				if (k->max_size == UINT64_MAX)
					snprintf(size, sizeof(size), "+Inf");
				else
					snprintf(size, sizeof(size), "%" PRIu64,
						 k->max_size);
				mstat_expo_sample(e, fam->name, fam->type);
				fputs(labels[i], e->f);
				mstat_expo_label(e, false, "size", size);
				fprintf(e->f, "} %" PRIu64 "\n", v);
			}
			continue;
		}
		/* Nothing known (never read): no sample, which is how the
		 * format says so; a 0 would read as a counter reset. */
		if (fam->when == KNOWN && !r->have_snap)
			continue;
		if (fam->real && fam->real(r) <= 0)
			continue; /* not known */
		mstat_expo_sample(e, fam->name, fam->type);
		fputs(labels[i], e->f);
		if (fam->labels)
			fam->labels(e, r);
		if (fam->real)
			fprintf(e->f, "} %.2f\n", fam->real(r));
		else
			fprintf(e->f, "} %" PRIu64 "\n", fam->count(r));
	}
}

int
mstat_expo_processes(const struct mstat_expo *e,
		     const struct mstat_model_row *const *rows, size_t n)
{
	char (*labels)[LABELS_MAX] = malloc((n ? n : 1) * sizeof(*labels));

	if (!labels)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		process_labels(labels[i], rows[i]);
	/* One family at a time, every sample of it together: both formats
	 * want that. */
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++)
		if (families[k].when != PER_CLASS || e->classes)
			write_family(e, &families[k], rows, n,
				     (const char (*)[LABELS_MAX])labels);
	free(labels);
	return 0;
}

int
mstat_expo_end(const struct mstat_expo *e)
{
	if (e->format == MSTAT_EXPO_OPENMETRICS)
		fputs("# EOF\n", e->f);
	return ferror(e->f) ? -EIO : 0;
}
