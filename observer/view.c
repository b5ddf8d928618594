/* SPDX-License-Identifier: MIT */
/*
 * view.c - draws `struct mstat_ui` with ncurses.  Drawing only: no I/O but
 * the terminal's, no decision but layout.  Attributes are reverse, bold
 * and underline, so it reads the same on a terminal without colours; every
 * line is cut to the width, so it works from 80x24 down.
 */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "output.h"
#include "text.h"
#include "ui.h"


/* Widths of the process table's columns; NAME takes what is left. */
static const int widths[MSTAT_SORT_COUNT] = { 7, 0, 7, 10, 9, 7, 7, 7, 7 };
#define NAME_MIN 8
#define HEAD 3 /* lines above the tables: time and totals */

/*
 * Writes one line at y, cut to the screen's width.  Every line goes
 * through the plain rule of text.h, whatever it holds: names, errors and
 * notes are what processes and files in /dev/shm say, and a control
 * character reaching the terminal would be obeyed, not shown.
 */
static void
line(int y, int attr, const char *fmt, ...)
{
	char raw[512], buf[512];
	va_list ap;

	if (y < 0 || y >= LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	mstat_text_escape(buf, sizeof(buf), raw, MSTAT_TEXT_PLAIN);
	attrset(attr);
	mvaddnstr(y, 0, buf, COLS);
	if (attr & A_REVERSE) /* a bar across the whole width */
		for (int x = (int)strlen(buf); x < COLS; x++)
			mvaddch(y, x, ' ');
	attrset(A_NORMAL);
}

static const char *
human(char *buf, size_t len, double v)
{
	mstat_output_human(buf, len, v);
	return buf;
}

/* A 16-byte cell: human(v), or "-" when not known (never read; a rate
 * before the second snapshot). */
static const char *
known(char *buf, bool have, double v)
{
	return have ? human(buf, 16, v) : "-";
}

static int
name_width(void)
{
	int w = COLS - 1;
	for (int c = 0; c < MSTAT_SORT_COUNT; c++)
		w -= widths[c] + 1;
	return w < NAME_MIN ? NAME_MIN : w;
}

static void
draw_header(struct mstat_ui *ui)
{
	struct mstat_model_totals t;
	char when[16] = "--:--:--", lb[16], lo[16], ar[16], fr[16], nr[16];
	time_t secs = (time_t)(ui->tick_wall_ms / 1000);
	struct tm tm;

	if (ui->tick_wall_ms && localtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	mstat_model_totals(ui->rows, ui->nrows, &t);
	line(0, A_BOLD, "mstat-top  %s  every %.2gs  sort %s%s%s", when,
	     ui->interval_ms / 1000.0, mstat_model_sort_name(ui->sort),
	     ui->reverse ? " (reversed)" : "", ui->paused ? "  [paused]" : "");
	line(1, A_NORMAL, "processes %zu, %zu running, %u threads; live %sB in "
			  "%s objects",
	     t.processes, t.running, t.threads,
	     human(lb, sizeof(lb), (double)t.live_bytes),
	     human(lo, sizeof(lo), (double)t.live_objects));
	line(2, A_NORMAL, "allocs %s/s  frees %s/s  net %sB/s",
	     human(ar, sizeof(ar), t.alloc_rate), human(fr, sizeof(fr), t.free_rate),
	     human(nr, sizeof(nr), t.net_bytes_rate));
}

static void
draw_table(struct mstat_ui *ui)
{
	int nw = name_width(), y0 = HEAD + 1, rows = LINES - y0 - 1;

	ui->page = rows > 0 ? (size_t)rows : 0;
	/* The header: the sorted column underlined and bold. */
	line(HEAD, A_REVERSE, "%s", "");
	for (int c = 0, x = 0; c < MSTAT_SORT_COUNT && x < COLS; c++) {
		int w = c == MSTAT_SORT_NAME ? nw : widths[c];
		char cell[64];
		if (c == MSTAT_SORT_NAME || c == MSTAT_SORT_STATE)
			snprintf(cell, sizeof(cell), "%-*s", w, mstat_model_sort_name(c));
		else
			snprintf(cell, sizeof(cell), "%*s", w, mstat_model_sort_name(c));
		attrset(A_REVERSE | (c == (int)ui->sort ? A_BOLD | A_UNDERLINE : 0));
		mvaddnstr(HEAD, x, cell, COLS - x);
		x += w + 1;
	}
	attrset(A_NORMAL);

	if (rows <= 0)
		return;
	/* Keep the selection in sight and the window full. */
	if (ui->scroll + (size_t)rows > ui->nrows)
		ui->scroll = ui->nrows > (size_t)rows ? ui->nrows - (size_t)rows : 0;
	if (ui->sel < ui->scroll)
		ui->scroll = ui->sel;
	if (ui->sel >= ui->scroll + (size_t)rows)
		ui->scroll = ui->sel - (size_t)rows + 1;
	for (int i = 0; i < rows && ui->scroll + (size_t)i < ui->nrows; i++) {
		size_t k = ui->scroll + (size_t)i;
		const struct mstat_model_row *r = ui->rows[k];
		/* Cut to the column without splitting a character. */
		char name[sizeof(r->name)];
		mstat_text_escape(name, (size_t)nw + 1 < sizeof(name)
				  ? (size_t)nw + 1 : sizeof(name),
				  r->name, MSTAT_TEXT_PLAIN);
		char th[16], lb[16], lo[16], ar[16], fr[16], nr[16];
		bool h = r->have_snap, hr = r->have_rates;
		line(y0 + i, k == ui->sel ? A_REVERSE : A_NORMAL,
		     "%7d %-*s %7s %10s %9s %7s %7s %7s %s", (int)r->pid, nw,
		     name, known(th, h, r->threads),
		     known(lb, h, (double)mstat_model_live_bytes(r)),
		     known(lo, h, (double)mstat_model_live_objects(r)),
		     known(ar, hr, r->alloc_rate), known(fr, hr, r->free_rate),
		     known(nr, hr, r->net_bytes_rate),
		     mstat_model_live_name(r->live));
	}
	if (ui->nrows == 0)
		line(y0, A_NORMAL, "%s", ui->filter[0]
			     ? "  no process matches the filter"
			     : "  no instrumented process found (run one with "
			       "libmstatshm; see mstat-top(1))");
}

/* `n` points of history as a line of ASCII levels, newest on the right. */
static void
sparkline(char *out, int width, const uint64_t *v, unsigned n, uint64_t *max)
{
	static const char levels[] = " .:-=+*#%@";
	unsigned from = n > (unsigned)width ? n - (unsigned)width : 0;
	uint64_t lo = UINT64_MAX, hi = 0;

	for (unsigned i = from; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	int k = 0;
	for (unsigned i = from; i < n; i++) {
		unsigned l = hi > lo ? (unsigned)((v[i] - lo) * 8 / (hi - lo)) + 1 : 5;
		out[k++] = levels[l];
	}
	out[k] = '\0';
	*max = hi;
}

static void
bar(char *out, int width, uint64_t v, uint64_t max)
{
	int n = max ? (int)((double)v * width / (double)max + 0.5) : 0;
	if (v && n == 0)
		n = 1;
	for (int i = 0; i < width; i++)
		out[i] = i < n ? '#' : ' ';
	out[width] = '\0';
}

static void
draw_detail(struct mstat_ui *ui)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);
	char th[16], lb[16], lo[16], ar[16], fr[16], nr[16], spark[256];
	uint64_t max = 0, max_b = 0, max_o = 0;

	if (!r) {
		line(HEAD, A_NORMAL, "  the process is gone");
		return;
	}
	bool h = r->have_snap, hr = r->have_rates;
	line(HEAD, A_BOLD, "pid %d %s: %s, %s threads, live %sB in %s objects, "
			"%s allocs/s, %s frees/s, net %sB/s",
	     (int)r->pid, r->name, mstat_model_live_name(r->live),
	     known(th, h, r->threads),
	     known(lb, h, (double)mstat_model_live_bytes(r)),
	     known(lo, h, (double)mstat_model_live_objects(r)),
	     known(ar, hr, r->alloc_rate), known(fr, hr, r->free_rate),
	     known(nr, hr, r->net_bytes_rate));
	int sw = COLS - 26;
	if (sw > (int)sizeof(spark) - 1)
		sw = (int)sizeof(spark) - 1;
	if (sw < 1)
		sw = 1;
	sparkline(spark, sw, r->history, r->history_len, &max);
	line(HEAD + 1, A_NORMAL, "live bytes (max %6s): %s",
	     human(lb, sizeof(lb), (double)max), spark);
	if (r->end_ns) {
		/* When it ended: began to exit, or was found killed. */
		char when[32];
		time_t t = (time_t)(r->end_ns / 1000000000u);
		struct tm tm;
		strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&t, &tm));
		line(HEAD + 2, A_NORMAL, "%s at %s: its final counts; live is "
		     "what it never freed", mstat_model_live_name(r->live), when);
	} else if (r->err[0]) {
		line(HEAD + 2, A_NORMAL, "%s", r->err);
	}

	/* Bars: live bytes and objects of each class used, against the
	 * largest class. */
	for (uint32_t c = 0; c < r->class_count; c++) {
		uint64_t b = mstat_live_bytes(&r->classes[c].c);
		uint64_t o = mstat_live_objects(&r->classes[c].c);
		max_b = b > max_b ? b : max_b;
		max_o = o > max_o ? o : max_o;
	}
	int bw = (COLS - 7 * 6 - 8) / 2;
	if (bw < 4)
		bw = 4;
	if (bw > 60)
		bw = 60;
	line(HEAD + 3, A_REVERSE, "%7s %6s %-*s %6s %-*s %6s %6s %6s", "SIZE<=",
	     "LIVE-B", bw, "", "OBJS", bw, "", "ALLOC", "FREE", "NET/s");
	int y = HEAD + 4, rows = LINES - y - 1;
	size_t used = 0;
	for (uint32_t c = 0; c < r->class_count; c++)
		used += r->classes[c].c.alloc_count != 0;
	if (ui->detail_scroll + (size_t)(rows > 0 ? rows : 0) > used)
		ui->detail_scroll = used > (size_t)rows ? used - (size_t)rows : 0;
	ui->page = rows > 0 ? (size_t)rows : 0;
	size_t k = 0;
	for (uint32_t c = 0; c < r->class_count && y < LINES - 1; c++) {
		const struct mstat_model_class *m = &r->classes[c];
		char sz[16], b1[64], b2[64];
		if (m->c.alloc_count == 0 || k++ < ui->detail_scroll)
			continue;
		if (m->max_size == UINT64_MAX)
			snprintf(sz, sizeof(sz), "huge");
		else
			human(sz, sizeof(sz), (double)m->max_size);
		bar(b1, bw, mstat_live_bytes(&m->c), max_b);
		bar(b2, bw, mstat_live_objects(&m->c), max_o);
		line(y++, A_NORMAL, "%7s %6s %s %6s %s %6s %6s %6s", sz,
		     human(lb, sizeof(lb), (double)mstat_live_bytes(&m->c)), b1,
		     human(lo, sizeof(lo), (double)mstat_live_objects(&m->c)), b2,
		     human(ar, sizeof(ar), m->alloc_rate),
		     human(fr, sizeof(fr), m->free_rate),
		     human(nr, sizeof(nr), m->net_bytes_rate));
	}
}

static void
draw_help(void)
{
	size_t n;
	const struct mstat_key_binding *k = mstat_keys_table(&n);

	line(HEAD, A_BOLD, "Keys");
	for (size_t i = 0; i < n && (int)i + HEAD + 1 < LINES - 1; i++)
		line((int)i + HEAD + 1, A_NORMAL, "  %-10s %s", k[i].names, k[i].help);
}

/* The last line: the filter being typed; else the filter in force, then
 * the last note or, without one, the main keys. */
static void
draw_status(struct mstat_ui *ui)
{
	if (ui->editing) {
		line(LINES - 1, A_BOLD, "filter: %s_", ui->edit);
		return;
	}
	line(LINES - 1, A_NORMAL, "%s%s%s%s", ui->filter[0] ? "filter: " : "",
	     ui->filter, ui->filter[0] ? "  " : "",
	     ui->status[0] ? ui->status
			   : "h help  Enter open  F6 sort  / filter  Space pause"
			     "  q quit");
}

void
mstat_view_draw(struct mstat_ui *ui)
{
	erase();
	draw_header(ui);
	if (ui->help)
		draw_help();
	else if (ui->detail)
		draw_detail(ui);
	else
		draw_table(ui);
	draw_status(ui);
	refresh();
}
