/* SPDX-License-Identifier: MIT */
/*
 * fields.c - the fields of a process row: their values, from the list
 * of fields.h.
 */
#include "fields.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#define SET_INT(v, x) ((v)->i = (int64_t)(x))
#define SET_I64(v, x) ((v)->i = (int64_t)(x))
#define SET_STATE(v, x) ((v)->i = (int64_t)(x))
#define SET_U64(v, x) ((v)->u = (uint64_t)(x))
#define SET_REAL(v, x) ((v)->d = (double)(x))
#define SET_TEXT(v, x) ((v)->s = (x))
#define SET_NAME(v, x) ((v)->s = (x))
#define SET_COUNTERS(v, x) ((void)(x))
#define SET_CLASSES(v, x) ((void)(x))

#define MSTAT_X(id, j, t, k, x)                                               \
	static void get_##id(const struct mstat_model_row *r, uint64_t now,   \
			     struct mstat_field_value *v)                     \
	{                                                                     \
		(void)now;                                                    \
		v->known = (k);                                               \
		SET_##t(v, x);                                                \
	}
MSTAT_FIELDS(MSTAT_X, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X

static const struct mstat_field fields[MSTAT_FIELD_COUNT] = {
#define MSTAT_X(id, j, type, ...)                                             \
	[MSTAT_FIELD_##id] = { j, MSTAT_TYPE_##type, get_##id },
	MSTAT_FIELDS(MSTAT_X, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X
};

const struct mstat_field *
mstat_field(enum mstat_field_id id)
{
	return (unsigned)id < MSTAT_FIELD_COUNT ? &fields[id] : NULL;
}

void
mstat_field_get(enum mstat_field_id id, const struct mstat_model_row *r,
		uint64_t now, struct mstat_field_value *v)
{
	*v = (struct mstat_field_value){ 0 };
	fields[id].get(r, now, v);
}

double
mstat_field_number(enum mstat_field_type type, const struct mstat_field_value *v)
{
	switch (type) {
	case MSTAT_TYPE_INT:
	case MSTAT_TYPE_I64:
	case MSTAT_TYPE_STATE: return (double)v->i;
	case MSTAT_TYPE_U64: return (double)v->u;
	case MSTAT_TYPE_REAL: return v->d;
	default: break;
	}
	return 0;
}

size_t
mstat_field_labels(const struct mstat_model_row *r, struct mstat_label *out,
		   char *buf)
{
	static const struct {
		const char *name;
		enum mstat_field_id field;
	} labels[MSTAT_LABEL_MAX] = {
#define MSTAT_X(n, id) { n, MSTAT_FIELD_##id },
		MSTAT_LABELS(MSTAT_X)
#undef MSTAT_X
	};
	size_t n = 0;

	for (size_t i = 0; i < MSTAT_LABEL_MAX; i++) {
		const struct mstat_field *f = mstat_field(labels[i].field);
		struct mstat_field_value v;

		mstat_field_get(labels[i].field, r, 0, &v);
		if (!v.known)
			continue;
		out[n].name = labels[i].name;
		switch (f->type) {
		case MSTAT_TYPE_TEXT:
		case MSTAT_TYPE_NAME:
			out[n].value = v.s;
			break;
		case MSTAT_TYPE_U64:
			snprintf(buf + 24 * i, 24, "%" PRIu64, v.u);
			out[n].value = buf + 24 * i;
			break;
		default:
			snprintf(buf + 24 * i, 24, "%" PRId64, v.i);
			out[n].value = buf + 24 * i;
			break;
		}
		n++;
	}
	return n;
}
