/* SPDX-License-Identifier: MIT */
/*
 * attach_object.c - mstat-bench-attach-object.so: one of the loaded
 * objects of bench/attach_target.c, which loads a hundred copies of it
 * (each a file of its own, so an object of its own, with its own slots
 * for the attach to patch).  obj_work() allocates through them.
 */
#include <stdlib.h>
#include <string.h>

unsigned obj_work(unsigned n);

unsigned
obj_work(unsigned n)
{
	unsigned sum = 0;

	for (unsigned i = 0; i < n; i++) {
		size_t size = 16 + (i * 37u) % 2000u;
		unsigned char *p = malloc(size);
		if (!p)
			return 0;
		memset(p, (int)i, size);
		sum += p[size - 1];
		char *q = realloc(p, size * 2);
		if (!q) {
			free(p);
			return 0;
		}
		free(q);
	}
	return sum;
}
