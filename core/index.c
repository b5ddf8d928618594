/* SPDX-License-Identifier: MIT */
/* index.c - finding things by name within one pass; see index.h. */
#include "core/index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t
key_hash(const char *name, uint64_t id)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ id; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * UINT64_C(0x100000001b3);
	return h ^ (h >> 29);
}

int
mstat_index_init(struct mstat_index *x, size_t n,
		 const char *(*name_of)(const void *),
		 uint64_t (*id_of)(const void *))
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	x->slot = calloc(cap, sizeof(*x->slot));
	x->mask = cap - 1;
	x->name_of = name_of;
	x->id_of = id_of;
	return x->slot ? 0 : -ENOMEM;
}

void
mstat_index_fini(struct mstat_index *x)
{
	free(x->slot);
	x->slot = NULL;
}

static uint64_t
id_of(const struct mstat_index *x, const void *item)
{
	return x->id_of ? x->id_of(item) : 0;
}

void
mstat_index_add(struct mstat_index *x, const void *item)
{
	const char *name = x->name_of(item);
	uint64_t id = id_of(x, item);

	for (size_t i = key_hash(name, id) & x->mask;; i = (i + 1) & x->mask) {
		if (!x->slot[i]) {
			x->slot[i] = item;
			return;
		}
		if (id_of(x, x->slot[i]) == id &&
		    strcmp(x->name_of(x->slot[i]), name) == 0)
			return;
	}
}

const void *
mstat_index_find(const struct mstat_index *x, const char *name, uint64_t id)
{
	if (!x->slot)
		return NULL;
	for (size_t i = key_hash(name, id) & x->mask; x->slot[i];
	     i = (i + 1) & x->mask)
		if (id_of(x, x->slot[i]) == id &&
		    strcmp(x->name_of(x->slot[i]), name) == 0)
			return x->slot[i];
	return NULL;
}
