/* SPDX-License-Identifier: MIT */
/*
 * index.h - finding things by name within one pass.
 *
 * Discovery looks every name of /dev/shm up among the targets it has, and
 * the model looks every target up among its rows, once per tick: done by
 * walking a list, that is quadratic, and a few thousand segments take
 * seconds.  An index is built at the start of a pass from what exists
 * (linear), answers each lookup in constant time, and is thrown away at
 * the end.  It holds pointers it does not own; it never allocates during
 * lookups.
 */
#ifndef MSTAT_CORE_INDEX_H
#define MSTAT_CORE_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct mstat_index {
	const void **slot; /* open addressing, linear probing */
	size_t mask;
	const char *(*name_of)(const void *);
	uint64_t (*id_of)(const void *);  /* NULL: names alone are keys */
};

/* An index for up to `n` items.  0 or -ENOMEM. */
int mstat_index_init(struct mstat_index *x, size_t n,
		     const char *(*name_of)(const void *),
		     uint64_t (*id_of)(const void *));
void mstat_index_fini(struct mstat_index *x);

/* Adds an item (its name, and id if the index has ids, are its key; a key
 * added twice keeps the first).  Never more than the `n` of init. */
void mstat_index_add(struct mstat_index *x, const void *item);

/* The item with this key, or NULL. */
const void *mstat_index_find(const struct mstat_index *x, const char *name,
			     uint64_t id);

#endif /* MSTAT_CORE_INDEX_H */
