/* SPDX-License-Identifier: MIT */
/* sites.c - the top call sites of a profile, and their growth; see
 * sites.h. */
#include "core/sites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof.h"
#include "core/symbols.h"

/* A site's live values at the baseline. */
struct base_site {
	uint64_t pc;
	double live_bytes, live_objects;
};

struct mstat_sites_base {
	size_t n;
	struct base_site v[]; /* ordered by pc */
};

static int
by_pc(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* By pc, then the heaviest first: the stack whose caller a site shows. */
static int
by_pc_heaviest(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	if (x->alloc_bytes != y->alloc_bytes)
		return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
	return x->caller_pc < y->caller_pc ? -1 : x->caller_pc > y->caller_pc;
}

static int
by_live_bytes(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	return by_pc(a, b);
}

static int
by_growth_bytes(const void *a, const void *b)
{
	const struct mstat_site *x = a, *y = b;

	if (x->growth_bytes != y->growth_bytes)
		return x->growth_bytes > y->growth_bytes ? -1 : 1;
	return by_pc(a, b);
}

int
mstat_sites_sum(const struct mstat_profile *p, struct mstat_site **out,
		size_t *got)
{
	*out = NULL;
	*got = 0;
	struct mstat_site *all = calloc(p->nstacks ? p->nstacks : 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	/* One per stack, then those of one call site summed. */
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct mstat_profile_stack *s = &p->stacks[i];
		struct mstat_site *t = &all[i];
		t->pc = s->frames[0];
		t->caller_pc = s->depth > 1 ? s->frames[1] : 0;
		mstat_pprof_unbias(p, s, false, &t->alloc_objects, &t->alloc_bytes);
		mstat_pprof_unbias(p, s, true, &t->live_objects, &t->live_bytes);
		mstat_lifetime_add(&t->life, s);
	}
	qsort(all, p->nstacks, sizeof(*all), by_pc_heaviest);
	size_t m = 0;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		if (m && all[m - 1].pc == all[i].pc) {
			all[m - 1].live_bytes += all[i].live_bytes;
			all[m - 1].live_objects += all[i].live_objects;
			all[m - 1].alloc_bytes += all[i].alloc_bytes;
			all[m - 1].alloc_objects += all[i].alloc_objects;
			mstat_lifetime_merge(&all[m - 1].life, &all[i].life);
		} else {
			all[m++] = all[i];
		}
	}
	for (size_t i = 0; i < m; i++)
		mstat_lifetime_summarise(&all[i].life, p, all[i].alloc_bytes,
					 &all[i].lifetimes);
	*out = all;
	*got = m;
	return 0;
}

void
mstat_sites_sort(struct mstat_site *s, size_t n, enum mstat_sites_order by)
{
	qsort(s, n, sizeof(*s),
	      by == MSTAT_SITES_BY_GROWTH ? by_growth_bytes : by_live_bytes);
}

void
mstat_sites_name(const struct mstat_profile *p, struct mstat_site *s, size_t n)
{
	struct mstat_symbols *sym = n ? mstat_symbols_new(p) : NULL;

	for (size_t i = 0; sym && i < n; i++) {
		struct mstat_frame f;
		mstat_symbols_lookup(sym, s[i].pc, &f);
		snprintf(s[i].function, sizeof(s[i].function), "%s",
			 f.function ? f.function : "");
		snprintf(s[i].file, sizeof(s[i].file), "%s", f.file ? f.file : "");
		s[i].line = f.line;
		snprintf(s[i].module, sizeof(s[i].module), "%s",
			 f.module ? f.module->path : "");
		if (!s[i].caller_pc)
			continue;
		mstat_symbols_lookup(sym, s[i].caller_pc, &f);
		snprintf(s[i].caller_function, sizeof(s[i].caller_function), "%s",
			 f.function ? f.function : "");
		snprintf(s[i].caller_file, sizeof(s[i].caller_file), "%s",
			 f.file ? f.file : "");
		s[i].caller_line = f.line;
	}
	mstat_symbols_free(sym);
}

int
mstat_sites_read(struct mstat_reader *r, size_t n, struct mstat_site *out,
		 size_t *got)
{
	struct mstat_profile p;
	struct mstat_site *all;
	size_t m;
	int rc;

	*got = 0;
	if ((rc = mstat_reader_profile(r, &p)) < 0)
		return rc;
	if ((rc = mstat_sites_sum(&p, &all, &m)) < 0) {
		mstat_reader_profile_release(&p);
		return rc;
	}
	mstat_sites_sort(all, m, MSTAT_SITES_BY_LIVE);
	if (n > m)
		n = m;
	memcpy(out, all, n * sizeof(*out));
	/* Named last: only the ones shown. */
	mstat_sites_name(&p, out, n);
	*got = n;
	free(all);
	mstat_reader_profile_release(&p);
	return 0;
}

struct mstat_sites_base *
mstat_sites_base_new(const struct mstat_site *all, size_t n)
{
	struct mstat_sites_base *b = malloc(sizeof(*b) + n * sizeof(b->v[0]));

	if (!b)
		return NULL;
	b->n = n;
	for (size_t i = 0; i < n; i++)
		b->v[i] = (struct base_site){ all[i].pc, all[i].live_bytes,
					      all[i].live_objects };
	return b;
}

void
mstat_sites_base_free(struct mstat_sites_base *b)
{
	free(b);
}

static const struct base_site *
base_find(const struct mstat_sites_base *b, uint64_t pc)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->v[mid].pc == pc)
			return &b->v[mid];
		if (b->v[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void
mstat_sites_growth(const struct mstat_sites_base *b, struct mstat_site *s,
		   size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct base_site *o = base_find(b, s[i].pc);
		s[i].growth_bytes = s[i].live_bytes - (o ? o->live_bytes : 0);
		s[i].growth_objects = s[i].live_objects - (o ? o->live_objects : 0);
	}
}
