/* SPDX-License-Identifier: MIT */
/*
 * model.c - rates, history, growth, per-class tables, filtering and the
 * lifecycle of rows.  See model.h.
 */
#include "core/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/index.h"

static const char *const live_names[MSTAT_LIVE_COUNT] = {
	[MSTAT_LIVE_RUNNING] = "running",
	[MSTAT_LIVE_STALLED] = "stalled",
	[MSTAT_LIVE_STOPPED] = "stopped",
	[MSTAT_LIVE_BUSY] = "busy",
	[MSTAT_LIVE_EXITING] = "exiting",
	[MSTAT_LIVE_EXITED] = "exited",
	[MSTAT_LIVE_KILLED] = "killed",
	[MSTAT_LIVE_OOM] = "oomkill",
};

const char *
mstat_model_live_name(enum mstat_model_live l)
{
	return (unsigned)l < MSTAT_LIVE_COUNT ? live_names[l] : "?";
}

int
mstat_model_live_parse(const char *s)
{
	for (int l = 0; l < MSTAT_LIVE_COUNT; l++)
		if (strcmp(s, live_names[l]) == 0)
			return l;
	return -1;
}

static void
row_free(struct mstat_model_row *r)
{
	free(r->postmortem);
	free(r);
}

void
mstat_model_init(struct mstat_model *m, uint64_t linger_ns)
{
	memset(m, 0, sizeof(*m));
	m->linger_ns = linger_ns;
	m->window_ns = MSTAT_MODEL_WINDOW_DEFAULT_NS;
}

void
mstat_model_fini(struct mstat_model *m)
{
	for (size_t i = 0; i < m->n; i++)
		row_free(m->rows[i]);
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

const struct mstat_model_row *
mstat_model_find(const struct mstat_model *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!m->rows[i]->dismissed && strcmp(m->rows[i]->key, key) == 0)
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

/* The growth window: points at least window/(N-2) apart, trimmed to
 * the newest one at least `window_ns` old and those after it; the rate
 * is from that one to now (from the oldest, for a process seen for
 * less). */
static void
window_push(struct mstat_model_row *r, uint64_t t_ns, uint64_t live,
	    uint64_t window_ns)
{
	uint64_t spacing = window_ns / (MSTAT_MODEL_WINDOW - 2);

	if (r->window_len == 0 ||
	    t_ns - r->window[r->window_len - 1].t_ns >= spacing) {
		if (r->window_len == MSTAT_MODEL_WINDOW) { /* cannot happen */
			memmove(r->window, r->window + 1,
				(MSTAT_MODEL_WINDOW - 1) * sizeof(r->window[0]));
			r->window_len--;
		}
		r->window[r->window_len++] =
			(struct mstat_model_point){ t_ns, live };
	}
	unsigned drop = 0;
	while (drop + 1 < r->window_len && t_ns >= window_ns &&
	       r->window[drop + 1].t_ns <= t_ns - window_ns)
		drop++;
	if (drop) {
		memmove(r->window, r->window + drop,
			(r->window_len - drop) * sizeof(r->window[0]));
		r->window_len -= drop;
	}
	const struct mstat_model_point *o = &r->window[0];
	r->have_growth_rate = t_ns > o->t_ns;
	r->growth_bytes_rate = r->have_growth_rate
		? ((double)live - (double)o->live_bytes) * 1e9 /
			  (double)(t_ns - o->t_ns)
		: 0.0;
}

/* Live minus base, as a signed difference. */
static int64_t
delta(uint64_t now, uint64_t base)
{
	return now >= base ? (int64_t)(now - base) : -(int64_t)(base - now);
}

static void
growth(struct mstat_model_row *r)
{
	r->growth_bytes = delta(mstat_live_bytes(&r->total), r->base_bytes);
	r->growth_objects = delta(mstat_live_objects(&r->total), r->base_objects);
	for (uint32_t c = 0; c < r->class_count; c++) {
		struct mstat_model_class *k = &r->classes[c];
		k->growth_bytes = delta(mstat_live_bytes(&k->c), k->base_bytes);
		k->growth_objects = delta(mstat_live_objects(&k->c), k->base_objects);
	}
}

/* The baseline: the counts now, or nothing. */
static void
rebase(struct mstat_model_row *r, bool from_nothing)
{
	r->base_t_ns = r->t_ns;
	r->base_bytes = from_nothing ? 0 : mstat_live_bytes(&r->total);
	r->base_objects = from_nothing ? 0 : mstat_live_objects(&r->total);
	for (uint32_t c = 0; c < r->class_count; c++) {
		struct mstat_model_class *k = &r->classes[c];
		k->base_bytes = from_nothing ? 0 : mstat_live_bytes(&k->c);
		k->base_objects = from_nothing ? 0 : mstat_live_objects(&k->c);
	}
	growth(r);
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
	      uint64_t t_ns, uint64_t window_ns)
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
	/* A class first used now starts from nothing at the baseline. */
	for (uint32_t c = r->class_count; c < cc; c++)
		r->classes[c].base_bytes = r->classes[c].base_objects = 0;
	r->class_count = cc;
	r->total = s->total;
	r->requested_bytes = s->requested_bytes;
	r->threads = s->threads;
	r->epoch = s->epoch;
	r->t_ns = t_ns;
	bool first = !r->have_snap;
	r->have_snap = true;
	history_push(r, mstat_live_bytes(&s->total));
	window_push(r, t_ns, mstat_live_bytes(&s->total), window_ns);
	if (first)
		rebase(r, false); /* first seen */
	else
		growth(r);
}

/* A new image (the process exec()ed): its counters start from nothing,
 * so nothing of the old image's carries over. */
static void
new_image(struct mstat_model_row *r)
{
	r->have_snap = r->have_rates = r->have_growth_rate = false;
	r->class_count = 0;
	memset(&r->total, 0, sizeof(r->total));
	r->history_len = r->window_len = 0;
}

static void
fold_input(struct mstat_model_row *r, const struct mstat_model_input *in,
	   uint64_t now_ns, uint64_t window_ns)
{
	if (in->image && strcmp(in->image, r->image) != 0) {
		if (r->image[0])
			new_image(r);
		snprintf(r->image, sizeof(r->image), "%s", in->image);
	}
	r->pid = in->pid;
	r->nspid = in->nspid;
	snprintf(r->where.container_id, sizeof(r->where.container_id), "%s",
		 in->container_id ? in->container_id : "");
	memcpy(r->where.container_short, r->where.container_id,
	       sizeof(r->where.container_short) - 1);
	r->where.container_short[sizeof(r->where.container_short) - 1] = '\0';
	snprintf(r->where.pod_uid, sizeof(r->where.pod_uid), "%s",
		 in->pod_uid ? in->pod_uid : "");
	snprintf(r->where.qos_class, sizeof(r->where.qos_class), "%s",
		 in->qos_class ? in->qos_class : "");
	snprintf(r->where.systemd_unit, sizeof(r->where.systemd_unit), "%s",
		 in->systemd_unit ? in->systemd_unit : "");
	snprintf(r->name, sizeof(r->name), "%s", in->name ? in->name : "");
	snprintf(r->comm, sizeof(r->comm), "%s", in->comm ? in->comm : "");
	snprintf(r->exe, sizeof(r->exe), "%s", in->exe ? in->exe : "");
	snprintf(r->err, sizeof(r->err), "%s", in->err ? in->err : "");
	r->start_ns = in->start_ns;
	r->live = in->live;
	r->have_memory = in->memory != NULL;
	if (in->memory)
		r->memory = *in->memory;
	if (in->snap && (!r->have_snap || in->t_ns > r->t_ns)) {
		fold_snapshot(r, in->snap, in->t_ns, window_ns);
		r->prior = in->prior;
	}
	if (mstat_model_gone(r->live)) {
		/* Gone: nothing moves any more. */
		r->threads = 0;
		r->alloc_rate = r->free_rate = 0;
		r->alloc_bytes_rate = r->free_bytes_rate = r->net_bytes_rate = 0;
		r->growth_bytes_rate = 0;
		for (uint32_t c = 0; c < r->class_count; c++)
			r->classes[c].alloc_rate = r->classes[c].free_rate =
				r->classes[c].net_bytes_rate = 0;
	}
	r->gone_ns = mstat_model_gone(r->live) ? now_ns : 0;
	r->end_ns = in->end_ns;
	if (in->postmortem && !r->postmortem)
		r->postmortem = strdup(in->postmortem); /* NULL: not named */
	r->writer_mode = in->writer_mode;
	r->layout_major = in->layout_major;
	r->layout_minor = in->layout_minor;
	r->attached_ns = in->attached_ns;
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
	if (mstat_index_init(&rows, m->n + n, row_key, NULL) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		m->rows[i]->seen = false;
		mstat_index_add(&rows, m->rows[i]);
	}
	if (m->updates == 0)
		m->first_ns = now_ns;
	for (size_t i = 0; i < n; i++) {
		struct mstat_model_row *r =
			(struct mstat_model_row *)mstat_index_find(&rows, in[i].key, 0);
		if (!r) {
			if (!(r = row_add(m, &in[i]))) {
				rc = -ENOMEM;
				continue;
			}
			/* Two inputs of one process (its old image not yet
			 * dropped) fold into one row. */
			mstat_index_add(&rows, r);
		}
		/* A row gone keeps the time it was first seen gone. */
		uint64_t gone = r->gone_ns;
		fold_input(r, &in[i], now_ns, m->window_ns ? m->window_ns : 1);
		if (gone && r->gone_ns)
			r->gone_ns = gone;
		r->seen = true;
	}
	/* Lifecycle: rows not seen go, unless they are gone (exited or
	 * killed) and still linger; those go once they have lingered long
	 * enough, unless their input goes on (mstat-exporter lingers 0: its
	 * killed rows stay while the core serves their profiles).  A
	 * dismissed row goes once its input stops. */
	size_t kept = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct mstat_model_row *r = m->rows[i];
		bool keep = r->dismissed ? r->seen
			  : mstat_model_gone(r->live)
				    ? r->seen || now_ns - r->gone_ns < m->linger_ns
				    : r->seen;
		if (keep)
			m->rows[kept++] = r;
		else
			row_free(r);
	}
	m->n = kept;
	m->now_ns = now_ns;
	m->updates++;
	if (m->baseline_after_ns && !m->rebased &&
	    now_ns - m->first_ns >= m->baseline_after_ns) {
		mstat_model_rebase(m, NULL, false);
		m->rebased = true;
	}
	mstat_index_fini(&rows);
	return rc;
}

bool
mstat_model_baseline_pending(const struct mstat_model *m, uint64_t *in_ns)
{
	if (!m->baseline_after_ns || m->rebased)
		return false;
	/* Before the first update, the whole wait is ahead. */
	uint64_t waited = m->updates ? m->now_ns - m->first_ns : 0;
	*in_ns = waited < m->baseline_after_ns ? m->baseline_after_ns - waited : 0;
	return true;
}

size_t
mstat_model_rebase(struct mstat_model *m, const char *key, bool from_nothing)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct mstat_model_row *r = m->rows[i];
		if (r->dismissed || (key && strcmp(r->key, key) != 0))
			continue;
		if (r->have_snap)
			rebase(r, from_nothing);
		n++;
	}
	return n;
}

size_t
mstat_model_dismiss(struct mstat_model *m, const char *key)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct mstat_model_row *r = m->rows[i];
		if (r->dismissed || !mstat_model_gone(r->live) ||
		    (key && strcmp(r->key, key) != 0))
			continue;
		r->dismissed = true;
		n++;
	}
	return n;
}

bool
mstat_model_match(const struct mstat_model_row *r, const char *filter)
{
	char pid[16];

	if (r->dismissed)
		return false;
	if (!filter || !*filter)
		return true;
	snprintf(pid, sizeof(pid), "%d", (int)r->pid);
	return strcasestr(r->name, filter) || strcasestr(r->comm, filter) ||
	       strcasestr(r->exe, filter) ||
	       strcasestr(r->where.container_id, filter) ||
	       strcasestr(r->where.pod_uid, filter) ||
	       strcasestr(r->where.systemd_unit, filter) ||
	       strcmp(pid, filter) == 0;
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
		t->have_rates |= r->have_rates;
		t->have_growth |= r->have_snap;
		t->growth_bytes += r->have_snap ? r->growth_bytes : 0;
		t->have_growth_rate |= r->have_growth_rate;
		t->growth_bytes_rate += r->have_growth_rate ? r->growth_bytes_rate : 0;
	}
}
