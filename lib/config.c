/* SPDX-License-Identifier: MIT */
/* config.c - the MSTAT_* variables, read by the list in config.h. */
#include "lib/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shm/name.h"
#include "lib/status.h"

enum kind { KIND_FLAG, KIND_NUMBER, KIND_BYTES, KIND_MODE, KIND_TEXT };

/* The longest name a variable may have; a longer one stops the build. */
#define NAME_MAX_LEN 23

/* The list, without its documentation, and with no pointer: nothing the
 * loader relocates at every start. */
static const struct var {
	char name[NAME_MAX_LEN + 1];
	unsigned char kind; /* enum kind */
	uint64_t dflt, min, max;
} vars[] = {
#define MSTAT_X(id, name, kind, dflt, min, max, doc)                          \
	[MSTAT_CONF_##id] = { name, KIND_##kind, dflt, min, max },
	MSTAT_CONFIG(MSTAT_X)
#undef MSTAT_X
};

/* Each name with its terminating NUL fits: C would otherwise drop the
 * NUL of a name of exactly 24 bytes, and only warn of a longer one. */
#define MSTAT_X(id, name, ...)                                                \
	_Static_assert(sizeof(name) <= NAME_MAX_LEN + 1,                      \
		       name " is longer than NAME_MAX_LEN (lib/config.c)");
MSTAT_CONFIG(MSTAT_X)
#undef MSTAT_X

/* `v` is set to what its kind refuses, `why`: said, and ignored. */
static void
ignored(const struct var *v, const char *const *why)
{
	char what[sizeof(v->name) + 8], text[80];

	mstat_status_join(what, sizeof(what),
			  (const char *const[]){ v->name, " ignored", NULL });
	mstat_status_join(text, sizeof(text), why);
	mstat_status_warn(what, text);
}

/* `v`'s value, or NULL if it is unset or empty. */
static MSTAT_START_TEXT const char *
value(const struct var *v)
{
	const char *e = getenv(v->name);

	return e && *e ? e : NULL;
}

MSTAT_START_TEXT uint64_t
mstat_config_number(enum mstat_conf c)
{
	const struct var *v = &vars[c];
	const char *e = value(v);
	char *end, lo[24], hi[24];

	if (!e)
		return v->dflt;
	switch (v->kind) {
	case KIND_FLAG:
		return strcmp(e, "0") != 0;
	case KIND_MODE:
		if (strcmp(e, "fenced") == 0)
			return MSTAT_MODE_FENCED;
		if (strcmp(e, "membarrier") == 0)
			return MSTAT_MODE_MEMBARRIER;
		ignored(v, (const char *const[]){ "use fenced or membarrier", NULL });
		return v->dflt;
	default:
		break;
	}
	errno = 0;
	unsigned long long x = strtoull(e, &end, 10);
	if (*end || errno || e[0] == '-' || x < v->min ||
	    (v->kind == KIND_NUMBER && x > v->max)) {
		mstat_utoa(lo, v->min);
		mstat_utoa(hi, v->max);
		if (v->kind == KIND_BYTES)
			ignored(v, (const char *const[]){ "not a number of bytes", NULL });
		else
			ignored(v, (const char *const[]){ "not a number in ", lo, "..",
							  hi, NULL });
		return v->dflt;
	}
	return x > v->max ? v->max : x;
}

MSTAT_START_TEXT const char *
mstat_config_text(enum mstat_conf c)
{
	const struct var *v = &vars[c];
	const char *e = value(v);
	char hi[24];

	if (!e)
		return NULL;
	if (strlen(e) > v->max) {
		mstat_utoa(hi, v->max);
		ignored(v, (const char *const[]){ "longer than ", hi, " bytes", NULL });
		return NULL;
	}
	return e;
}
