/* SPDX-License-Identifier: MIT */
/*
 * fields.c - the fields of a process row: their values, from the list
 * of fields.h.
 */
#include "core/fields.h"

#include <stddef.h>

#define SET_INT(v, x) ((v)->i = (int64_t)(x))
#define SET_I64(v, x) ((v)->i = (int64_t)(x))
#define SET_STATE(v, x) ((v)->i = (int64_t)(x))
#define SET_U64(v, x) ((v)->u = (uint64_t)(x))
#define SET_REAL(v, x) ((v)->d = (double)(x))
#define SET_TEXT(v, x) ((v)->s = (x))
#define SET_NAME(v, x) ((v)->s = (x))
#define SET_COUNTERS(v, x) ((void)(x))
#define SET_CLASSES(v, x) ((void)(x))
#define SET_MEMORY(v, x) ((void)(x))

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
mstat_fields_at(enum mstat_field_id id)
{
	return (unsigned)id < MSTAT_FIELD_COUNT ? &fields[id] : NULL;
}

void
mstat_fields_get(enum mstat_field_id id, const struct mstat_model_row *r,
		 uint64_t now, struct mstat_field_value *v)
{
	*v = (struct mstat_field_value){ 0 };
	fields[id].get(r, now, v);
}

double
mstat_fields_number(enum mstat_field_type type, const struct mstat_field_value *v)
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
