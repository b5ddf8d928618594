/* SPDX-License-Identifier: MIT */
/* sites.c - the top call sites of a profile; see sites.h. */
#include "sites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "symbols.h"

static int
by_pc(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int
by_live_bytes(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	return by_pc(a, b);
}

int
mstat_sites_read(struct mstat_reader *r, size_t n, struct mstat_site *out,
		 size_t *got)
{
	struct mstat_profile p;
	int rc;

	*got = 0;
	if ((rc = mstat_reader_profile(r, &p)) < 0)
		return rc;
	struct mstat_site *all = calloc(p.nstacks ? p.nstacks : 1, sizeof(*all));
	if (!all) {
		mstat_profile_release(&p);
		return -ENOMEM;
	}
	/* One per stack, then those of one call site summed. */
	for (uint32_t i = 0; i < p.nstacks; i++) {
		const struct mstat_profile_stack *s = &p.stacks[i];
		struct mstat_site *t = &all[i];
		t->pc = s->frames[0];
		mstat_pprof_scale(s->allocs, s->alloc_bytes, p.sample_bytes,
				  &t->alloc_objects, &t->alloc_bytes);
		mstat_pprof_scale(s->allocs - s->frees, s->alloc_bytes - s->free_bytes,
				  p.sample_bytes, &t->live_objects, &t->live_bytes);
	}
	qsort(all, p.nstacks, sizeof(*all), by_pc);
	size_t m = 0;
	for (uint32_t i = 0; i < p.nstacks; i++) {
		if (m && all[m - 1].pc == all[i].pc) {
			all[m - 1].live_bytes += all[i].live_bytes;
			all[m - 1].live_objects += all[i].live_objects;
			all[m - 1].alloc_bytes += all[i].alloc_bytes;
			all[m - 1].alloc_objects += all[i].alloc_objects;
		} else {
			all[m++] = all[i];
		}
	}
	qsort(all, m, sizeof(*all), by_live_bytes);
	if (n > m)
		n = m;
	/* Named last: only the ones shown. */
	struct mstat_symbols *sym = n ? mstat_symbols_new(&p) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct mstat_frame f;
		out[i] = all[i];
		if (!sym)
			continue;
		mstat_symbols_lookup(sym, out[i].pc, &f);
		snprintf(out[i].function, sizeof(out[i].function), "%s",
			 f.function ? f.function : "");
		snprintf(out[i].file, sizeof(out[i].file), "%s", f.file ? f.file : "");
		out[i].line = f.line;
		snprintf(out[i].module, sizeof(out[i].module), "%s",
			 f.module ? f.module->path : "");
	}
	*got = n;
	mstat_symbols_free(sym);
	free(all);
	mstat_profile_release(&p);
	return 0;
}
