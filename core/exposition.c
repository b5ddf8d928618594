/* SPDX-License-Identifier: MIT */
/*
 * exposition.c - the metrics writer; see exposition.h.
 *
 * The per-process families are the FAM lines of the list of fields
 * (fields.h): their positions are the order of the output, and each says
 * how the family is named, typed and helped; its values are the field's.
 * The counters' families come from MSTAT_CLASS_COUNTERS and
 * MSTAT_TOTAL_COUNTERS, where the list puts COUNTERS and CLASSES, so a
 * counter added to those lists is exported without an edit here but its
 * name below.
 */
#include "core/exposition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/fields.h"
#include "core/text.h"

const char *
mstat_exposition_content_type(enum mstat_expo_format fmt)
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
mstat_exposition_family(const struct mstat_expo *e, const char *name,
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
mstat_exposition_sample(const struct mstat_expo *e, const char *name,
			enum mstat_expo_type type)
{
	fputs(name, e->f);
	fputs(suffix(type), e->f);
}

void
mstat_exposition_label(const struct mstat_expo *e, bool first, const char *key,
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

struct family {
	const char *name, *unit, *help;
	enum mstat_expo_type type;
	enum mstat_field_id field; /* what it shows */
};

/* The families of the counters, then of the counters per class: where
 * the list of fields puts COUNTERS and CLASSES. */
static const struct family counters[] = {
#define MSTAT_X(e, fld, h)                                                    \
	{ "mstat_" OM_NAME_##fld, OM_UNIT_##fld, h, MSTAT_EXPO_COUNTER,        \
	  MSTAT_FIELD_COUNTERS },
	MSTAT_CLASS_COUNTERS(MSTAT_X)
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
};

static const struct family class_counters[] = {
#define MSTAT_X(e, fld, h)                                                    \
	{ "mstat_class_" OM_NAME_##fld, OM_UNIT_##fld,                         \
	  h ", per size class (size: its largest size)", MSTAT_EXPO_COUNTER,  \
	  MSTAT_FIELD_CLASSES },
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
};

/* The `k`th counter of a row, or of a class: in the order of the two
 * tables above. */
static uint64_t
counter_of(const struct mstat_model_row *r, size_t k)
{
	static const size_t at[] = {
#define MSTAT_X(e, fld, h) offsetof(struct mstat_model_row, total.fld),
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
#define MSTAT_X(e, fld, h) offsetof(struct mstat_model_row, fld),
		MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	};
	uint64_t v;

	memcpy(&v, (const char *)r + at[k], sizeof(v));
	return v;
}

static uint64_t
class_counter_of(const struct mstat_counts *c, size_t k)
{
	static const size_t at[] = {
#define MSTAT_X(e, fld, h) offsetof(struct mstat_counts, fld),
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	};
	uint64_t v;

	memcpy(&v, (const char *)c + at[k], sizeof(v));
	return v;
}

/* The labels of an info family: of mstat_process, the segment's writer
 * mode and layout; of mstat_killed, how the process died (its state's
 * word) and the post-mortem profile written of it, if one was. */
static void
info_labels(const struct mstat_expo *e, enum mstat_field_id field,
	    const struct mstat_model_row *r)
{
	char layout[24];

	if (field == MSTAT_FIELD_KILLED) {
		mstat_exposition_label(e, false, "how", mstat_model_live_name(r->live));
		if (r->postmortem)
			mstat_exposition_label(e, false, "postmortem", r->postmortem);
		return;
	}

	snprintf(layout, sizeof(layout), "%" PRIu32 ".%" PRIu32,
		 r->layout_major, r->layout_minor);
	mstat_exposition_label(e, false, "mode",
			       r->writer_mode == 1   ? "fenced"
			       : r->writer_mode == 2 ? "membarrier"
					       : "unknown");
	mstat_exposition_label(e, false, "layout", layout);
}

/* The families of the list of fields (fields.h), in the exposition's
 * order. */
#define MSTAT_X(...) +1
enum { NFAMILIES = 0 MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_X,
				  MSTAT_FIELD_NONE) };
#undef MSTAT_X
static const struct family families[NFAMILIES] = {
#define MSTAT_X(id, pos, n, t, u, h)                                          \
	[pos] = { n, u, h, MSTAT_EXPO_##t, MSTAT_FIELD_##id },
	MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_X, MSTAT_FIELD_NONE)
#undef MSTAT_X
};

void
mstat_exposition_process_labels(const struct mstat_model_row *r,
				void (*fn)(void *arg, const char *key, const char *value),
				void *arg)
{
	static const struct {
		const char *name;
		enum mstat_field_id field;
	} labels[] = {
#define MSTAT_X(n, id) { n, MSTAT_FIELD_##id },
		MSTAT_LABELS(MSTAT_X)
#undef MSTAT_X
	};

	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		struct mstat_field_value v;
		char num[24];

		mstat_fields_get(labels[i].field, r, 0, &v);
		if (!v.known)
			continue; /* Prometheus reads it as "" */
		switch (mstat_fields_at(labels[i].field)->type) {
		case MSTAT_TYPE_TEXT:
		case MSTAT_TYPE_NAME:
			fn(arg, labels[i].name, v.s);
			break;
		case MSTAT_TYPE_U64:
			snprintf(num, sizeof(num), "%" PRIu64, v.u);
			fn(arg, labels[i].name, num);
			break;
		default:
			snprintf(num, sizeof(num), "%" PRId64, v.i);
			fn(arg, labels[i].name, num);
			break;
		}
	}
}

struct label_text {
	FILE *f;
	bool first;
};

static void
label_text(void *arg, const char *key, const char *value)
{
	struct label_text *t = arg;

	fprintf(t->f, "%s%s=\"", t->first ? "{" : ",", key);
	mstat_text_put(t->f, value, MSTAT_TEXT_QUOTED);
	fputc('"', t->f);
	t->first = false;
}

/* `{pid="..",name=".."` of a row (mstat_exposition_process_labels()), escaped
 * once per exposition rather than once per sample; NULL if out of
 * memory. */
static char *
process_labels(const struct mstat_model_row *r)
{
	char *buf = NULL;
	size_t len = 0;
	struct label_text t = { open_memstream(&buf, &len), true };

	if (!t.f)
		return NULL;
	mstat_exposition_process_labels(r, label_text, &t);
	if (fclose(t.f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The `k`th counter per class: a sample for each class a process used,
 * with a `size` label. */
static void
write_class_family(const struct mstat_expo *e, const struct family *fam,
		   size_t k, const struct mstat_model_row *const *rows, size_t n,
		   char *const *labels)
{
	mstat_exposition_family(e, fam->name, fam->type, fam->unit, fam->help);
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];

		for (uint32_t c = 0; c < r->class_count; c++) {
			const struct mstat_model_class *cl = &r->classes[c];
			char size[24];

			if (cl->c.alloc_count == 0)
				continue; /* never used */
			if (cl->max_size == UINT64_MAX)
				snprintf(size, sizeof(size), "+Inf");
			else
				snprintf(size, sizeof(size), "%" PRIu64,
					 cl->max_size);
			mstat_exposition_sample(e, fam->name, fam->type);
			fputs(labels[i], e->f);
			mstat_exposition_label(e, false, "size", size);
			fprintf(e->f, "} %" PRIu64 "\n",
				class_counter_of(&cl->c, k));
		}
	}
}

/* A family of one sample per process whose field is known (the `k`th
 * counter, for the counters).  Nothing known (never read): no sample,
 * which is how the format says so; a 0 would read as a counter reset. */
static void
write_family(const struct mstat_expo *e, const struct family *fam, size_t k,
	     const struct mstat_model_row *const *rows, size_t n,
	     char *const *labels)
{
	enum mstat_field_type type = mstat_fields_at(fam->field)->type;

	mstat_exposition_family(e, fam->name, fam->type, fam->unit, fam->help);
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];
		struct mstat_field_value v;

		mstat_fields_get(fam->field, r, 0, &v);
		if (!v.known)
			continue;
		mstat_exposition_sample(e, fam->name, fam->type);
		fputs(labels[i], e->f);
		if (fam->type == MSTAT_EXPO_INFO)
			info_labels(e, fam->field, r);
		if (type == MSTAT_TYPE_COUNTERS)
			fprintf(e->f, "} %" PRIu64 "\n", counter_of(r, k));
		else if (type == MSTAT_TYPE_REAL)
			fprintf(e->f, "} %.2f\n", v.d);
		else
			fprintf(e->f, "} %" PRIu64 "\n", v.u);
	}
}

/* Resident memory by part: a sample per part, with a `part` label, for
 * each process whose memory is known. */
static void
write_memory_family(const struct mstat_expo *e, const struct family *fam,
		    const struct mstat_model_row *const *rows, size_t n,
		    char *const *labels)
{
	mstat_exposition_family(e, fam->name, fam->type, fam->unit, fam->help);
	for (size_t i = 0; i < n; i++) {
		if (!rows[i]->have_memory)
			continue;
		for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++) {
			mstat_exposition_sample(e, fam->name, fam->type);
			fputs(labels[i], e->f);
			mstat_exposition_label(e, false, "part", mstat_memory_part_name(p));
			fprintf(e->f, "} %" PRIu64 "\n", rows[i]->memory.part[p]);
		}
	}
}

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

int
mstat_exposition_processes(const struct mstat_expo *e,
			   const struct mstat_model_row *const *rows, size_t n)
{
	char **labels = calloc(n ? n : 1, sizeof(*labels));
	int rc = labels ? 0 : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!(labels[i] = process_labels(rows[i])))
			rc = -ENOMEM;
	if (rc < 0)
		goto out;
	/* One family at a time, every sample of it together: both formats
	 * want that. */
	for (size_t f = 0; f < NFAMILIES; f++) {
		switch (mstat_fields_at(families[f].field)->type) {
		case MSTAT_TYPE_COUNTERS:
			for (size_t k = 0; k < LEN(counters); k++)
				write_family(e, &counters[k], k, rows, n, labels);
			break;
		case MSTAT_TYPE_CLASSES:
			for (size_t k = 0; e->classes && k < LEN(class_counters);
			     k++)
				write_class_family(e, &class_counters[k], k,
						   rows, n, labels);
			break;
		case MSTAT_TYPE_MEMORY:
			if (e->memory)
				write_memory_family(e, &families[f], rows, n, labels);
			break;
		default:
			/* The other families of memory go with it. */
			if (!e->memory && families[f].field == MSTAT_FIELD_RSS)
				break;
			write_family(e, &families[f], 0, rows, n, labels);
			break;
		}
	}
out:
	for (size_t i = 0; labels && i < n; i++)
		free(labels[i]);
	free(labels);
	return rc;
}

int
mstat_exposition_end(const struct mstat_expo *e)
{
	if (e->format == MSTAT_EXPO_OPENMETRICS)
		fputs("# EOF\n", e->f);
	return ferror(e->f) ? -EIO : 0;
}
