/* SPDX-License-Identifier: MIT */
/*
 * ui.c - the interactive state: which rows are shown, which is selected,
 * and what keys ask of the model.  See ui.h.
 */
#include "top/ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mstat_screen
mstat_ui_screen(const struct mstat_ui *ui)
{
	return ui->nover ? ui->over[ui->nover - 1] : MSTAT_SCREEN_TABLE;
}

bool
mstat_ui_shows(const struct mstat_ui *ui, enum mstat_screen s)
{
	if (s == MSTAT_SCREEN_TABLE)
		return true;
	for (size_t i = 0; i < ui->nover; i++)
		if (ui->over[i] == s)
			return true;
	return false;
}

bool
mstat_ui_process_open(const struct mstat_ui *ui)
{
	return mstat_ui_shows(ui, MSTAT_SCREEN_DETAIL) ||
	       mstat_ui_shows(ui, MSTAT_SCREEN_SITES);
}

void
mstat_ui_open(struct mstat_ui *ui, enum mstat_screen s)
{
	if (s != MSTAT_SCREEN_TABLE && !mstat_ui_shows(ui, s) &&
	    ui->nover < sizeof(ui->over) / sizeof(ui->over[0]))
		ui->over[ui->nover++] = s;
}

void
mstat_ui_close(struct mstat_ui *ui, enum mstat_screen s)
{
	for (size_t i = 0; i < ui->nover; i++)
		if (ui->over[i] == s) {
			ui->nover = i;
			return;
		}
}

/* A scroll `d` lines further, not above the top. */
static int
scroll_by(size_t *scroll, long d)
{
	long s = (long)*scroll + d;

	*scroll = s < 0 ? 0 : (size_t)s;
	return MSTAT_KEY_REDRAW;
}

int
mstat_ui_move_table(struct mstat_ui *ui, long d)
{
	if (ui->nrows == 0)
		return MSTAT_KEY_IGNORED;
	long s = (long)ui->sel + d;
	if (s < 0)
		s = 0;
	if (s >= (long)ui->nrows)
		s = (long)ui->nrows - 1;
	ui->sel = (size_t)s;
	ui->sel_moved = true;
	snprintf(ui->sel_key, sizeof(ui->sel_key), "%s", ui->rows[ui->sel]->key);
	return MSTAT_KEY_REDRAW;
}

int
mstat_ui_move_detail(struct mstat_ui *ui, long d)
{
	return scroll_by(&ui->detail_scroll, d);
}

int
mstat_ui_move_sites(struct mstat_ui *ui, long d)
{
	return scroll_by(&ui->sites_scroll, d);
}

int
mstat_ui_move_help(struct mstat_ui *ui, long d)
{
	return scroll_by(&ui->help_scroll, d);
}

void
mstat_ui_select_rows(struct mstat_ui *ui)
{
	if (ui->caprows < ui->model.n + 1) {
		size_t cap = 2 * (ui->model.n + 1);
		void *p = realloc(ui->rows, cap * sizeof(*ui->rows));
		if (!p)
			return;
		ui->rows = p;
		ui->caprows = cap;
	}
	ui->nrows = mstat_columns_view(&ui->model, ui->filter, ui->sort,
				       ui->reverse, ui->rows);
	/* Until the user moves it, the selection is the top row, whatever
	 * process is there (by growth: the one growing most, which Enter
	 * then opens); once moved, or while its process is open, it follows
	 * its process through re-sorting. */
	bool follow = ui->sel_moved || mstat_ui_process_open(ui);
	if (!follow)
		ui->sel = 0;
	for (size_t i = 0; follow && i < ui->nrows; i++)
		if (strcmp(ui->rows[i]->key, ui->sel_key) == 0) {
			ui->sel = i;
			return;
		}
	if (ui->sel >= ui->nrows)
		ui->sel = ui->nrows ? ui->nrows - 1 : 0;
	if (ui->nrows && !mstat_ui_process_open(ui))
		snprintf(ui->sel_key, sizeof(ui->sel_key), "%s",
			 ui->rows[ui->sel]->key);
}

const struct mstat_model_row *
mstat_ui_selected(const struct mstat_ui *ui)
{
	if (mstat_ui_process_open(ui))
		return mstat_model_find(&ui->model, ui->sel_key);
	return ui->nrows ? ui->rows[ui->sel] : NULL;
}

int
mstat_ui_rebase(struct mstat_ui *ui, bool all)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);

	if (!all && !r)
		return MSTAT_KEY_IGNORED;
	if (!all) {
		mstat_model_rebase(&ui->model, r->key, false);
		if (ui->core)
			mstat_core_sites_rebase(ui->core, r->key);
		snprintf(ui->said, sizeof(ui->said), "baseline of pid %d reset: "
			 "growth counts from now", (int)r->pid);
		return MSTAT_KEY_RESELECT;
	}
	/* Every process shown (the filter says which). */
	size_t n = 0;
	for (size_t i = 0; i < ui->nrows; i++) {
		n += mstat_model_rebase(&ui->model, ui->rows[i]->key, false);
		if (ui->core)
			mstat_core_sites_rebase(ui->core, ui->rows[i]->key);
	}
	snprintf(ui->said, sizeof(ui->said), "baseline reset for the %zu "
		 "processes shown: growth counts from now", n);
	return MSTAT_KEY_RESELECT;
}

int
mstat_ui_dismiss(struct mstat_ui *ui, bool all)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);

	if (!all && (!r || !mstat_model_gone(r->live))) {
		snprintf(ui->said, sizeof(ui->said),
			 "only a process that ended can be dismissed");
		return MSTAT_KEY_REDRAW;
	}
	if (!all) {
		pid_t pid = r->pid;
		mstat_model_dismiss(&ui->model, r->key);
		snprintf(ui->said, sizeof(ui->said), "dismissed pid %d", (int)pid);
		mstat_ui_sites_close(ui);
		mstat_ui_close(ui, MSTAT_SCREEN_DETAIL);
		return MSTAT_KEY_RESELECT;
	}
	/* Every ended process shown.  (The rows point into the model, and
	 * dismissing frees nothing until the next update.) */
	size_t n = 0;
	for (size_t i = 0; i < ui->nrows; i++)
		n += mstat_model_dismiss(&ui->model, ui->rows[i]->key);
	snprintf(ui->said, sizeof(ui->said), "dismissed %zu ended processes", n);
	mstat_ui_sites_close(ui);
	mstat_ui_close(ui, MSTAT_SCREEN_DETAIL);
	return MSTAT_KEY_RESELECT;
}

int
mstat_ui_sites(struct mstat_ui *ui)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);

	if (mstat_ui_screen(ui) == MSTAT_SCREEN_SITES) {
		ui->sites_order = ui->sites_order == MSTAT_CORE_SITES_LIVE
					  ? MSTAT_CORE_SITES_GROWTH
					  : MSTAT_CORE_SITES_LIVE;
		ui->sites_scroll = 0;
		return MSTAT_KEY_REDRAW;
	}
	if (!r)
		return MSTAT_KEY_IGNORED;
	if (!ui->core) {
		snprintf(ui->said, sizeof(ui->said), "call sites are read from "
			 "live processes, not from recordings");
		return MSTAT_KEY_REDRAW;
	}
	snprintf(ui->sel_key, sizeof(ui->sel_key), "%s", r->key);
	mstat_ui_open(ui, MSTAT_SCREEN_SITES);
	ui->sites_order = MSTAT_CORE_SITES_LIVE;
	ui->sites_scroll = 0;
	free(ui->sites_seen);
	ui->sites_seen = NULL;
	mstat_core_sites_want(ui->core, r->key);
	mstat_core_wake(ui->core); /* read them now, not a tick later */
	return MSTAT_KEY_REDRAW;
}

void
mstat_ui_sites_close(struct mstat_ui *ui)
{
	if (!mstat_ui_shows(ui, MSTAT_SCREEN_SITES))
		return;
	mstat_ui_close(ui, MSTAT_SCREEN_SITES);
	free(ui->sites_seen);
	ui->sites_seen = NULL;
	mstat_core_sites_want(ui->core, NULL);
}

void
mstat_ui_sites_fetch(struct mstat_ui *ui)
{
	if (!mstat_ui_shows(ui, MSTAT_SCREEN_SITES))
		return;
	rcu_read_lock();
	const struct mstat_core_sites *s = mstat_core_sites_latest(ui->core);
	if (s && strcmp(s->key, ui->sel_key) == 0) {
		if (!ui->sites_seen)
			ui->sites_seen = malloc(sizeof(*ui->sites_seen));
		if (ui->sites_seen)
			memcpy(ui->sites_seen, s, sizeof(*s));
	}
	rcu_read_unlock();
}
