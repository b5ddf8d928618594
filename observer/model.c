/* SPDX-License-Identifier: MIT */
/*
 * model.c - rates, history, per-class tables, sorting, filtering and the
 * lifecycle of rows.  See model.h.
 */
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "index.h"

static const char *const live_names[MSTAT_LIVE_COUNT] = {
	[MSTAT_LIVE_RUNNING] = "running",
	[MSTAT_LIVE_STALLED] = "stalled",
	[MSTAT_LIVE_BUSY] = "busy",
	[MSTAT_LIVE_EXITING] = "exiting",
	[MSTAT_LIVE_EXITED] = "exited",
	[MSTAT_LIVE_KILLED] = "killed",
};

const char *
mstat_model_live_name(enum mstat_model_live l)
{
	return (unsigned)l < MSTAT_LIVE_COUNT ? live_names[l] : "?";
}

void
mstat_model_init(struct mstat_model *m, uint64_t linger_ns)
{
	memset(m, 0, sizeof(*m));
	m->linger_ns = linger_ns;
}

void
mstat_model_fini(struct mstat_model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->rows[i]);
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

const struct mstat_model_row *
mstat_model_find(const struct mstat_model *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->rows[i]->key, key) == 0)
			return m->rows[i];
	return NULL;
}

static struct mstat_model_row *
row_add(struct mstat_model *m, const struct mstat_model_input *in)
{
	struct mstat_model_row *r;

	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct mstat_model_row **rows = realloc(m->rows, cap * sizeof(*rows));
		if (!rows)
			return NULL;
		m->rows = rows;
		m->cap = cap;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->key, sizeof(r->key), "%s", in->key);
	m->rows[m->n++] = r;
	return r;
}

/* Per second, from two cumulative readings `dt_ns` apart; a counter that
 * went backwards (it never should) reads as no change. */
static double
rate(uint64_t now, uint64_t before, uint64_t dt_ns)
{
	return now > before ? (double)(now - before) * 1e9 / (double)dt_ns : 0.0;
}

static double
signed_rate(uint64_t now, uint64_t before, uint64_t dt_ns)
{
	return now >= before ? rate(now, before, dt_ns)
			     : -rate(before, now, dt_ns);
}

static void
history_push(struct mstat_model_row *r, uint64_t v)
{
	if (r->history_len == MSTAT_MODEL_HISTORY) {
		memmove(r->history, r->history + 1,
			(MSTAT_MODEL_HISTORY - 1) * sizeof(r->history[0]));
		r->history_len--;
	}
	r->history[r->history_len++] = v;
}

/* A snapshot newer than the row's: new counters, rates and history. */
static void
fold_snapshot(struct mstat_model_row *r, const struct mstat_snapshot *s,
	      uint64_t t_ns)
{
	uint32_t cc = s->class_count <= MSTAT_MAX_CLASSES ? s->class_count
							  : MSTAT_MAX_CLASSES;
	uint64_t dt = r->have_snap && t_ns > r->t_ns ? t_ns - r->t_ns : 0;

	r->have_rates = dt > 0;
	if (dt) {
		r->alloc_rate = rate(s->total.alloc_count, r->total.alloc_count, dt);
		r->free_rate = rate(s->total.free_count, r->total.free_count, dt);
		r->alloc_bytes_rate = rate(s->total.alloc_bytes,
					   r->total.alloc_bytes, dt);
		r->free_bytes_rate = rate(s->total.free_bytes,
					  r->total.free_bytes, dt);
		r->net_bytes_rate = signed_rate(mstat_live_bytes(&s->total),
						mstat_live_bytes(&r->total), dt);
	}
	for (uint32_t c = 0; c < cc; c++) {
		struct mstat_model_class *k = &r->classes[c];
		const struct mstat_counts *now = &s->classes[c];

		/* A class table that changed (a new segment under the same
		 * key cannot happen, but costs nothing to allow) has no rates. */
		if (dt && c < r->class_count) {
			k->alloc_rate = rate(now->alloc_count, k->c.alloc_count, dt);
			k->free_rate = rate(now->free_count, k->c.free_count, dt);
			k->net_bytes_rate = signed_rate(mstat_live_bytes(now),
							mstat_live_bytes(&k->c), dt);
		} else {
			k->alloc_rate = k->free_rate = k->net_bytes_rate = 0;
		}
		k->max_size = s->class_max_size[c];
		k->c = *now;
	}
	r->class_count = cc;
	r->total = s->total;
	r->requested_bytes = s->requested_bytes;
	r->threads = s->threads;
	r->epoch = s->epoch;
	r->t_ns = t_ns;
	r->have_snap = true;
	history_push(r, mstat_live_bytes(&s->total));
}

static void
fold_input(struct mstat_model_row *r, const struct mstat_model_input *in,
	   uint64_t now_ns)
{
	r->pid = in->pid;
	snprintf(r->name, sizeof(r->name), "%s", in->name ? in->name : "");
	snprintf(r->err, sizeof(r->err), "%s", in->err ? in->err : "");
	r->live = in->live;
	if (in->snap && (!r->have_snap || in->t_ns > r->t_ns))
		fold_snapshot(r, in->snap, in->t_ns);
	if (mstat_model_gone(r->live)) {
		/* Gone: nothing moves any more. */
		r->threads = 0;
		r->alloc_rate = r->free_rate = 0;
		r->alloc_bytes_rate = r->free_bytes_rate = r->net_bytes_rate = 0;
		for (uint32_t c = 0; c < r->class_count; c++)
			r->classes[c].alloc_rate = r->classes[c].free_rate =
				r->classes[c].net_bytes_rate = 0;
	}
	r->gone_ns = mstat_model_gone(r->live) ? now_ns : 0;
	r->end_ns = in->end_ns;
	r->start_time_s = in->start_time_s;
	r->writer_mode = in->writer_mode;
	r->layout_major = in->layout_major;
	r->layout_minor = in->layout_minor;
}

static const char *
row_key(const void *item)
{
	return ((const struct mstat_model_row *)item)->key;
}

int
mstat_model_update(struct mstat_model *m, const struct mstat_model_input *in,
		   size_t n, uint64_t now_ns)
{
	struct mstat_index rows;
	int rc = 0;

	/* Rows by key: an update is linear in the number of targets. */
	if (mstat_index_init(&rows, m->n, row_key, NULL) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		m->rows[i]->seen = false;
		mstat_index_add(&rows, m->rows[i]);
	}
	for (size_t i = 0; i < n; i++) {
		struct mstat_model_row *r =
			(struct mstat_model_row *)mstat_index_find(&rows, in[i].key, 0);
		if (!r && !(r = row_add(m, &in[i]))) {
			rc = -ENOMEM;
			continue;
		}
		/* A row gone keeps the time it was first seen gone. */
		uint64_t gone = r->gone_ns;
		fold_input(r, &in[i], now_ns);
		if (gone && r->gone_ns)
			r->gone_ns = gone;
		r->seen = true;
	}
	/* Lifecycle: rows not seen go, unless they are gone (exited or
	 * killed) and still linger; those go once they have lingered long
	 * enough. */
	size_t kept = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct mstat_model_row *r = m->rows[i];
		bool keep = mstat_model_gone(r->live)
				    ? now_ns - r->gone_ns < m->linger_ns
				    : r->seen;
		if (keep)
			m->rows[kept++] = r;
		else
			free(r);
	}
	m->n = kept;
	m->now_ns = now_ns;
	m->updates++;
	mstat_index_fini(&rows);
	return rc;
}

bool
mstat_model_match(const struct mstat_model_row *r, const char *filter)
{
	char pid[16];

	if (!filter || !*filter)
		return true;
	snprintf(pid, sizeof(pid), "%d", (int)r->pid);
	return strcasestr(r->name, filter) != NULL || strcmp(pid, filter) == 0;
}

static const char *const sort_names[MSTAT_SORT_COUNT] = {
	[MSTAT_SORT_PID] = "PID",
	[MSTAT_SORT_NAME] = "NAME",
	[MSTAT_SORT_THREADS] = "THREADS",
	[MSTAT_SORT_LIVE_BYTES] = "LIVE-BYTES",
	[MSTAT_SORT_LIVE_OBJECTS] = "LIVE-OBJS",
	[MSTAT_SORT_ALLOC_RATE] = "ALLOC/s",
	[MSTAT_SORT_FREE_RATE] = "FREE/s",
	[MSTAT_SORT_NET_RATE] = "NET/s",
	[MSTAT_SORT_STATE] = "STATE",
};

const char *
mstat_model_sort_name(enum mstat_model_sort k)
{
	return (unsigned)k < MSTAT_SORT_COUNT ? sort_names[k] : "?";
}

int
mstat_model_parse_sort(const char *s)
{
	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		const char *n = sort_names[k];
		size_t i = 0;
		while (s[i] && n[i] &&
		       (tolower((unsigned char)s[i]) == tolower((unsigned char)n[i]) ||
			(s[i] == '_' && n[i] == '-')))
			i++;
		if (!s[i] && !n[i])
			return k;
	}
	return -1;
}

struct sort_ctx {
	enum mstat_model_sort key;
	bool reverse;
};

static int
cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static int
cmp_double(double a, double b)
{
	return (a > b) - (a < b);
}

static int
cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct mstat_model_row *a = *(const struct mstat_model_row *const *)pa;
	const struct mstat_model_row *b = *(const struct mstat_model_row *const *)pb;
	const struct sort_ctx *ctx = arg;
	int c = 0;

	/* Numbers sort largest first, words and pids in their order. */
	switch (ctx->key) {
	case MSTAT_SORT_PID: break;
	case MSTAT_SORT_NAME: c = strcmp(a->name, b->name); break;
	case MSTAT_SORT_THREADS: c = -cmp_u64(a->threads, b->threads); break;
	case MSTAT_SORT_LIVE_BYTES:
		c = -cmp_u64(mstat_model_live_bytes(a), mstat_model_live_bytes(b));
		break;
	case MSTAT_SORT_LIVE_OBJECTS:
		c = -cmp_u64(mstat_model_live_objects(a),
			     mstat_model_live_objects(b));
		break;
	case MSTAT_SORT_ALLOC_RATE: c = -cmp_double(a->alloc_rate, b->alloc_rate); break;
	case MSTAT_SORT_FREE_RATE: c = -cmp_double(a->free_rate, b->free_rate); break;
	case MSTAT_SORT_NET_RATE:
		c = -cmp_double(a->net_bytes_rate, b->net_bytes_rate);
		break;
	case MSTAT_SORT_STATE: c = cmp_u64(a->live, b->live); break;
	case MSTAT_SORT_COUNT: break;
	}
	if (c == 0)
		c = cmp_u64((uint64_t)(int64_t)a->pid, (uint64_t)(int64_t)b->pid);
	if (c == 0)
		c = strcmp(a->key, b->key);
	return ctx->reverse ? -c : c;
}

size_t
mstat_model_view(const struct mstat_model *m, const char *filter,
		 enum mstat_model_sort key, bool reverse,
		 const struct mstat_model_row **out)
{
	struct sort_ctx ctx = { key, reverse };
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		if (mstat_model_match(m->rows[i], filter))
			out[n++] = m->rows[i];
	qsort_r(out, n, sizeof(*out), cmp_rows, &ctx);
	return n;
}

void
mstat_model_totals(const struct mstat_model_row *const *rows, size_t n,
		   struct mstat_model_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		const struct mstat_model_row *r = rows[i];
		t->processes++;
		if (!mstat_model_gone(r->live))
			t->running++;
		t->threads += r->threads;
		t->live_bytes += mstat_model_live_bytes(r);
		t->live_objects += mstat_model_live_objects(r);
		t->alloc_rate += r->alloc_rate;
		t->free_rate += r->free_rate;
		t->net_bytes_rate += r->net_bytes_rate;
	}
}
