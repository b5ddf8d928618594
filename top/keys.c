/* SPDX-License-Identifier: MIT */
/*
 * keys.c - the keys of mstat-top: one table that both dispatches and makes
 * the help screen, so the two cannot disagree.  Keys change the state of
 * ui.h; the view draws it.
 */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "top/ui.h"

#define KEY_ESC 27
#define KEY_CTRL_U 21
#define FAR (1L << 30) /* further than any table: move_by() clamps */

/* Moves in the screen on top. */
static int
move_by(struct mstat_ui *ui, long d)
{
	return mstat_screens_ops(mstat_ui_screen(ui))->step(ui, d);
}

static long
page(const struct mstat_ui *ui)
{
	return ui->page > 1 ? (long)ui->page - 1 : 1;
}

static int
key_up(struct mstat_ui *ui)
{
	return move_by(ui, -1);
}

static int
key_down(struct mstat_ui *ui)
{
	return move_by(ui, 1);
}

static int
key_pgup(struct mstat_ui *ui)
{
	return move_by(ui, -page(ui));
}

static int
key_pgdn(struct mstat_ui *ui)
{
	return move_by(ui, page(ui));
}

static int
key_home(struct mstat_ui *ui)
{
	return move_by(ui, -FAR);
}

static int
key_end(struct mstat_ui *ui)
{
	return move_by(ui, FAR);
}

/* The process's classes: opened from the table, or from its sites;
 * closed, open. */
static int
key_enter(struct mstat_ui *ui)
{
	switch (mstat_ui_screen(ui)) {
	case MSTAT_SCREEN_SITES:
		mstat_ui_sites_close(ui);
		mstat_ui_open(ui, MSTAT_SCREEN_DETAIL);
		break;
	case MSTAT_SCREEN_DETAIL:
		mstat_ui_close(ui, MSTAT_SCREEN_DETAIL);
		break;
	default:
		if (!mstat_ui_selected(ui))
			return MSTAT_KEY_IGNORED;
		mstat_ui_open(ui, MSTAT_SCREEN_DETAIL);
		break;
	}
	ui->detail_scroll = 0;
	return MSTAT_KEY_REDRAW;
}

/* Back to the screen under this one: from the sites to where they were
 * opened (the table or the process's classes), from the classes to the
 * table. */
static int
key_back(struct mstat_ui *ui)
{
	switch (mstat_ui_screen(ui)) {
	case MSTAT_SCREEN_SITES:
		mstat_ui_sites_close(ui);
		return MSTAT_KEY_REDRAW;
	case MSTAT_SCREEN_DETAIL:
		mstat_ui_close(ui, MSTAT_SCREEN_DETAIL);
		return MSTAT_KEY_REDRAW;
	default:
		return MSTAT_KEY_IGNORED;
	}
}

static int
key_sites(struct mstat_ui *ui)
{
	return mstat_ui_sites(ui);
}

static int
key_sort_next(struct mstat_ui *ui)
{
	ui->sort = (ui->sort + 1) % MSTAT_SORT_COUNT;
	return MSTAT_KEY_RESELECT;
}

static int
key_sort_prev(struct mstat_ui *ui)
{
	ui->sort = (ui->sort + MSTAT_SORT_COUNT - 1) % MSTAT_SORT_COUNT;
	return MSTAT_KEY_RESELECT;
}

static int
key_reverse(struct mstat_ui *ui)
{
	ui->reverse = !ui->reverse;
	return MSTAT_KEY_RESELECT;
}

static int
key_filter(struct mstat_ui *ui)
{
	ui->editing = true;
	snprintf(ui->edit, sizeof(ui->edit), "%s", ui->filter);
	return MSTAT_KEY_REDRAW;
}

static int
key_sort_growth(struct mstat_ui *ui)
{
	ui->sort = MSTAT_SORT_GROWTH_BYTES;
	ui->reverse = false;
	return MSTAT_KEY_RESELECT;
}

static int
key_pause(struct mstat_ui *ui)
{
	ui->paused = !ui->paused;
	return MSTAT_KEY_REDRAW;
}

static int
key_step(struct mstat_ui *ui)
{
	if (!ui->replay) {
		snprintf(ui->said, sizeof(ui->said), "stepping is for replays "
			 "(--replay)");
		return MSTAT_KEY_REDRAW;
	}
	ui->paused = true;
	ui->replay->step = true;
	return MSTAT_KEY_REDRAW;
}

static int
key_rebase(struct mstat_ui *ui)
{
	return mstat_ui_rebase(ui, false);
}

static int
key_rebase_all(struct mstat_ui *ui)
{
	return mstat_ui_rebase(ui, true);
}

static int
key_dismiss(struct mstat_ui *ui)
{
	return mstat_ui_dismiss(ui, false);
}

static int
key_dismiss_all(struct mstat_ui *ui)
{
	return mstat_ui_dismiss(ui, true);
}

/* A replay's speed, between 1/8 and 64 times as recorded. */
static int
set_speed(struct mstat_ui *ui, double speed)
{
	ui->replay->speed = speed < 0.125 ? 0.125 : speed > 64 ? 64 : speed;
	return MSTAT_KEY_REDRAW;
}

static int
set_interval(struct mstat_ui *ui, unsigned ms)
{
	if (ms < 100)
		ms = 100;
	if (ms > 60000)
		ms = 60000;
	ui->interval_ms = ms;
	mstat_core_set_interval_ms(ui->core, ms);
	return MSTAT_KEY_REDRAW;
}

static int
key_slower(struct mstat_ui *ui)
{
	if (ui->replay)
		return set_speed(ui, ui->replay->speed / 2);
	return set_interval(ui, ui->interval_ms * 2);
}

static int
key_faster(struct mstat_ui *ui)
{
	if (ui->replay)
		return set_speed(ui, ui->replay->speed * 2);
	return set_interval(ui, ui->interval_ms / 2);
}

static int
key_help(struct mstat_ui *ui)
{
	mstat_ui_open(ui, MSTAT_SCREEN_HELP);
	ui->help_scroll = 0;
	return MSTAT_KEY_REDRAW;
}

static int
key_quit(struct mstat_ui *ui)
{
	ui->quit = true;
	return MSTAT_KEY_REDRAW;
}

static const struct mstat_key_binding table[] = {
	{ { KEY_UP, 'k' }, "Up k", "move up (in a process: scroll)", key_up },
	{ { KEY_DOWN, 'j' }, "Down j", "move down (in a process: scroll)", key_down },
	{ { KEY_PPAGE }, "PgUp", "a page up", key_pgup },
	{ { KEY_NPAGE }, "PgDn", "a page down", key_pgdn },
	{ { KEY_HOME, 'g' }, "Home g", "first row", key_home },
	{ { KEY_END, 'G' }, "End G", "last row", key_end },
	{ { '\n', KEY_ENTER, '\r' }, "Enter", "open the process: size classes by growth, history; again to close", key_enter },
	{ { 's' }, "s", "call sites of the process; again: by growth since the baseline", key_sites },
	{ { KEY_ESC, KEY_BACKSPACE, KEY_LEFT }, "Esc Left", "back: from the sites, from the process", key_back },
	{ { KEY_F(6), '>' }, "F6 >", "sort by the next column", key_sort_next },
	{ { '<' }, "<", "sort by the previous column", key_sort_prev },
	{ { 'L' }, "L", "sort by growth since the baseline (leak hunting)", key_sort_growth },
	{ { 'r' }, "r", "reverse the order", key_reverse },
	{ { 'b' }, "b", "reset the selected process's baseline: growth from now", key_rebase },
	{ { 'B' }, "B", "reset the baseline of every process shown", key_rebase_all },
	{ { 'x', KEY_DC }, "x Del", "dismiss the selected process, once it ended", key_dismiss },
	{ { 'X' }, "X", "dismiss every process shown that ended", key_dismiss_all },
	{ { '/' }, "/", "filter by name, container, unit or pid (Enter keeps, Esc: back to -F)", key_filter },
	{ { ' ' }, "Space", "pause or resume the display", key_pause },
	{ { '.' }, ".", "replay: one tick forward (and pause)", key_step },
	{ { '+' }, "+", "longer interval (x2); replay: slower", key_slower },
	{ { '-' }, "-", "shorter interval (/2); replay: faster", key_faster },
	{ { 'h', '?', KEY_F(1) }, "h ? F1", "this help; q, Esc or h closes it", key_help },
	{ { 'q', KEY_F(10) }, "q F10", "quit", key_quit },
};

const struct mstat_key_binding *
mstat_keys_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

/* Typing a filter: printable characters, Backspace, Ctrl-U, Enter, Esc
 * (back to the filter of the command line). */
static int
edit_key(struct mstat_ui *ui, int ch)
{
	size_t len = strlen(ui->edit);

	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		snprintf(ui->filter, sizeof(ui->filter), "%s", ui->edit);
		ui->editing = false;
		return MSTAT_KEY_RESELECT;
	}
	if (ch == KEY_ESC) {
		/* Back to what the command line asked for (-F), not to every
		 * process of the user. */
		snprintf(ui->filter, sizeof(ui->filter), "%s", ui->filter_given);
		ui->edit[0] = '\0';
		ui->editing = false;
		return MSTAT_KEY_RESELECT;
	}
	if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (len)
			ui->edit[len - 1] = '\0';
	} else if (ch == KEY_CTRL_U) {
		ui->edit[0] = '\0';
	} else if (ch >= 0x20 && ch < 0x7f && len + 1 < sizeof(ui->edit)) {
		ui->edit[len] = (char)ch;
		ui->edit[len + 1] = '\0';
	} else {
		return MSTAT_KEY_IGNORED;
	}
	/* The table follows the filter as it is typed. */
	snprintf(ui->filter, sizeof(ui->filter), "%s", ui->edit);
	return MSTAT_KEY_RESELECT;
}

int
mstat_keys_help(struct mstat_ui *ui, int ch)
{
	if (ch == 'q' || ch == KEY_ESC || ch == 'h' || ch == '?' ||
	    ch == KEY_F(1) || ch == KEY_LEFT) {
		mstat_ui_close(ui, MSTAT_SCREEN_HELP);
		return MSTAT_KEY_REDRAW;
	}
	long d = ch == KEY_UP || ch == 'k' ? -1 : ch == KEY_DOWN || ch == 'j' ? 1
	       : ch == KEY_PPAGE ? -page(ui) : ch == KEY_NPAGE ? page(ui) : 0;
	return d ? move_by(ui, d) : MSTAT_KEY_IGNORED;
}

int
mstat_keys_dispatch(struct mstat_ui *ui, int ch)
{
	const struct mstat_screen_ops *s = mstat_screens_ops(mstat_ui_screen(ui));

	if (ui->editing)
		return edit_key(ui, ch);
	if (s->key)
		return s->key(ui, ch);
	ui->said[0] = '\0';
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		for (size_t k = 0; k < 3 && table[i].keys[k]; k++)
			if (table[i].keys[k] == ch)
				return table[i].fn(ui);
	return MSTAT_KEY_IGNORED;
}
