/* SPDX-License-Identifier: MIT */
/*
 * view.c - draws `struct mstat_ui` with ncurses.  Drawing only: no I/O but
 * the terminal's, no decision but layout.  Attributes are reverse, bold
 * and underline, so it reads the same on a terminal without colours; every
 * line is cut to the width, so it works from 80x24 down.  The process
 * table's columns are those of columns.h: those that do not fit a narrow
 * screen give way, in the order the table says.
 */
#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/columns.h"
#include "core/text.h"
#include "top/ui.h"
#include "core/units.h"

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
	char raw[1024], buf[1024];
	va_list ap;

	if (y < 0 || y >= LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	mstat_text_escape(buf, sizeof(buf), raw, MSTAT_TEXT_PLAIN);
	attrset(attr);
	move(y, 0);
	/* Cut by characters, not bytes: a UTF-8 character is one cell. */
	int x = 0;
	for (const char *p = buf; *p && x < COLS; x++) {
		size_t n = 1;
		while ((p[n] & 0xc0) == 0x80)
			n++;
		addnstr(p, (int)n);
		p += n;
	}
	if (attr & A_REVERSE) /* a bar across the whole width */
		for (; x < COLS; x++)
			addch(' ');
	attrset(A_NORMAL);
}

static const char *
fmt(char *buf, unsigned unit, bool known, double v)
{
	return mstat_units_format(buf, MSTAT_UNIT_MAX, unit, known, v);
}

#define BYTES MSTAT_UNIT_BYTES
#define COUNT MSTAT_UNIT_COUNT
#define GROWTH (MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED)
#define BYTES_RATE (MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE)
#define COUNT_RATE (MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE)

static void
draw_header(struct mstat_ui *ui)
{
	struct mstat_model_totals t;
	char when[16] = "--:--:--", v[8][MSTAT_UNIT_MAX], src[160];
	time_t secs = (time_t)(ui->tick_wall_ms / 1000);
	struct tm tm;

	if (ui->tick_wall_ms && localtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	mstat_model_totals(ui->rows, ui->nrows, &t);
	if (ui->replay)
		snprintf(src, sizeof(src), "replay %s  tick %llu%s  x%g",
			 ui->replay->file, (unsigned long long)ui->replay->tick,
			 ui->replay->ended ? " (end)" : "", ui->replay->speed);
	else
		snprintf(src, sizeof(src), "every %.2gs", ui->interval_ms / 1000.0);
	/* --baseline: growth counts from when each process was first seen
	 * until its baseline is taken; said until then. */
	char pending[48] = "";
	uint64_t in_ns;
	if (mstat_model_baseline_pending(&ui->model, &in_ns))
		snprintf(pending, sizeof(pending), "  baseline in %.0fs",
			 ceil((double)in_ns / 1e9));
	line(0, A_BOLD, "mstat-top  %s  %s%s  sort %s%s%s", when, src, pending,
	     mstat_columns_sort_name(ui->sort), ui->reverse ? " (reversed)" : "",
	     ui->paused ? "  [paused]" : "");
	unsigned hidden = ui->core ? mstat_core_namespaces_unreadable(ui->core)
				   : 0;
	char unread[48] = "";
	if (hidden)
		snprintf(unread, sizeof(unread), "; %u namespace%s not read",
			 hidden, hidden == 1 ? "" : "s");
	line(1, A_NORMAL, "processes %zu, %zu running, %u threads; live %s in "
			  "%s objects%s",
	     t.processes, t.running, t.threads,
	     fmt(v[0], BYTES, true, (double)t.live_bytes),
	     fmt(v[1], COUNT, true, (double)t.live_objects), unread);
	line(2, A_NORMAL, "allocs %s  frees %s  net %s  growth %s  %s (%.0fs)",
	     fmt(v[2], COUNT_RATE, t.have_rates, t.alloc_rate),
	     fmt(v[3], COUNT_RATE, t.have_rates, t.free_rate),
	     fmt(v[4], BYTES_RATE, t.have_rates, t.net_bytes_rate),
	     fmt(v[5], GROWTH, t.have_growth, (double)t.growth_bytes),
	     fmt(v[6], BYTES_RATE, t.have_growth_rate, t.growth_bytes_rate),
	     (double)ui->model.window_ns / 1e9);
}

void
mstat_view_table(struct mstat_ui *ui)
{
	bool shown[MSTAT_SORT_COUNT];
	int nw = mstat_columns_fit(COLS - 1, ui->sort, shown);
	int y0 = HEAD + 1, rows = LINES - y0 - 1;
	uint64_t now_ns = ui->model.wall_ns;
	const char *ellipsis = ui->utf8 ? "\u2026" : "~";

	ui->page = rows > 0 ? (size_t)rows : 0;
	/* The header: the sorted column underlined and bold. */
	line(HEAD, A_REVERSE, "%s", "");
	for (int k = 0, x = 0; k < MSTAT_SORT_COUNT && x < COLS; k++) {
		const struct mstat_column *c = mstat_columns_at(k);
		char buf[256];
		if (!shown[k])
			continue;
		int w = k == MSTAT_SORT_NAME ? nw : c->width;
		mstat_columns_pad(k, c->title, w, ellipsis, buf, sizeof(buf));
		attrset(A_REVERSE | (k == (int)ui->sort ? A_BOLD | A_UNDERLINE : 0));
		mvaddnstr(HEAD, x, buf, COLS - x);
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
		size_t r = ui->scroll + (size_t)i;
		char text[1024] = "";
		size_t at = 0;
		for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
			const struct mstat_column *c = mstat_columns_at(k);
			char buf[256];
			if (!shown[k])
				continue;
			mstat_columns_cell(k, ui->rows[r], now_ns,
					   k == MSTAT_SORT_NAME ? nw : c->width,
					   ellipsis, buf, sizeof(buf));
			at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s",
					       at ? " " : "", buf);
			if (at >= sizeof(text))
				break;
		}
		line(y0 + i, r == ui->sel ? A_REVERSE : A_NORMAL, "%s", text);
	}
	if (ui->nrows == 0)
		line(y0, A_NORMAL, "%s", ui->filter[0]
			     ? "  no process matches the filter"
			     : "  no instrumented process found (run one with "
			       "libmstatshm; see mstat-top(1))");
}

/* The top of a fixed scale for v: a power of two, so that it moves
 * seldom and reads round (1 KiB, 2 KiB, 4 KiB, ...). */
static uint64_t
scale_top(uint64_t v)
{
	uint64_t top = 1;

	while (top < v && top < (UINT64_C(1) << 63))
		top <<= 1;
	return top;
}

/* `n` points of history, newest on the right, on a scale from 0 to
 * `top`: eighths of a cell as block characters, or ASCII levels where
 * the terminal has no UTF-8. */
static void
sparkline(char *out, size_t len, int width, const uint64_t *v, unsigned n,
	  uint64_t top, bool utf8)
{
	static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583",
		"\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = " _.-:=+*#";
	unsigned from = n > (unsigned)width ? n - (unsigned)width : 0;
	size_t k = 0;

	for (unsigned i = from; i < n && k + 4 < len; i++) {
		unsigned l = (unsigned)((double)v[i] * 8 / (double)top + 0.5);
		if (l > 8)
			l = 8;
		if (v[i] && !l)
			l = 1;
		if (utf8) {
			memcpy(out + k, blocks[l], strlen(blocks[l]));
			k += strlen(blocks[l]);
		} else {
			out[k++] = ascii[l];
		}
	}
	out[k] = '\0';
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

/* Classes by growth since the baseline, largest first; then by live
 * bytes, then by size. */
static int
cmp_growth(const void *pa, const void *pb)
{
	const struct mstat_model_class *a = *(const struct mstat_model_class *const *)pa;
	const struct mstat_model_class *b = *(const struct mstat_model_class *const *)pb;

	if (a->growth_bytes != b->growth_bytes)
		return a->growth_bytes < b->growth_bytes ? 1 : -1;
	uint64_t la = mstat_live_bytes(&a->c), lb = mstat_live_bytes(&b->c);
	if (la != lb)
		return la < lb ? 1 : -1;
	return (a->max_size > b->max_size) - (a->max_size < b->max_size);
}

/* Process r's live bytes at line y, a history on a fixed scale from 0:
 * a steady heap is a flat line, wherever it stands. */
static void
draw_history(const struct mstat_ui *ui, const struct mstat_model_row *r, int y)
{
	char top_s[MSTAT_UNIT_MAX], label[64], spark[1024];
	uint64_t max = 0;

	for (unsigned i = 0; i < r->history_len; i++)
		max = r->history[i] > max ? r->history[i] : max;
	uint64_t top = scale_top(max);
	int ll = snprintf(label, sizeof(label), "live, 0 to %s: ",
			  fmt(top_s, BYTES, true, (double)top));
	int sw = COLS - ll - 1;
	if (sw < 1)
		sw = 1;
	sparkline(spark, sizeof(spark), sw, r->history, r->history_len, top,
		  ui->utf8);
	line(y, A_NORMAL, "%s%s", label, spark);
}

/* Process r's resident memory from line y, its parts filling the
 * width, on at most `max` lines: the lines used. */
static int
draw_memory(const struct mstat_model_row *r, uint64_t now_ns, int y, int max)
{
	char text[256], v[MSTAT_UNIT_MAX], age[MSTAT_UNIT_MAX];
	int n = 0;

	if (!r->have_memory) {
		line(y, A_NORMAL, "memory: %s",
		     mstat_model_gone(r->live) ? "gone" : "not read yet");
		return 1;
	}
	/* How the heap was told from the rest (memory.h). */
	static const char *const how[MSTAT_MEMORY_SOURCE_COUNT] = {
		[MSTAT_MEMORY_NONE] = "heap not told apart",
		[MSTAT_MEMORY_GLIBC] = "heap from its maps",
		[MSTAT_MEMORY_GLIBC_PARTIAL] = "heap from its maps, without "
					       "its mmapped chunks",
		[MSTAT_MEMORY_ALLOCATOR] = "heap as its allocator counts it",
	};
	const struct mstat_memory *m = &r->memory;
	const char *a = mstat_memory_allocator_name(m->allocator);
	double ago = now_ns > m->time_ns ? (double)(now_ns - m->time_ns) / 1e9 : 0;
	size_t at = (size_t)snprintf(text, sizeof(text), "memory %s (%s, %s), read %s ago:",
				     fmt(v, BYTES, true, (double)m->rss),
				     a ? a : "allocator not known",
				     m->source < MSTAT_MEMORY_SOURCE_COUNT ? how[m->source] : "?",
				     fmt(age, MSTAT_UNIT_SECONDS, true, ago));
	/* Each part, then the live bytes no page holds, if any. */
	for (int p = 0; p <= MSTAT_MEMORY_PART_COUNT && at < sizeof(text); p++) {
		char part[64];
		if (p < MSTAT_MEMORY_PART_COUNT)
			snprintf(part, sizeof(part), " %s %s", mstat_memory_part_name(p),
				 fmt(v, BYTES, true, (double)m->part[p]));
		else if (m->live_not_resident)
			snprintf(part, sizeof(part), " (live not resident %s)",
				 fmt(v, BYTES, true, (double)m->live_not_resident));
		else
			break;
		if (at + strlen(part) > (size_t)COLS && n + 1 < max) {
			line(y + n++, A_NORMAL, "%s", text);
			at = (size_t)snprintf(text, sizeof(text), " ");
		}
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s", part);
	}
	line(y + n++, A_NORMAL, "%s", text);
	return n;
}

/* Counting since mstat-attach: when, and what became of the blocks made
 * before, which no count above holds. */
static void
draw_attached(const struct mstat_model_row *r, int y)
{
	char when[32], v[4][MSTAT_UNIT_MAX];
	time_t t = (time_t)(r->attached_ns / 1000000000u);
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	line(y, A_NORMAL, "attached at %s: counts since; made before, freed %s "
	     "objects (%s), reallocated %s (%s)", when,
	     fmt(v[0], COUNT, r->have_snap, (double)r->prior.prior_frees),
	     fmt(v[1], BYTES, r->have_snap, (double)r->prior.prior_free_bytes),
	     fmt(v[2], COUNT, r->have_snap, (double)r->prior.prior_reallocs),
	     fmt(v[3], BYTES, r->have_snap, (double)r->prior.prior_realloc_bytes));
}

/* The classes of row r that were used, by growth, from line y; a bar
 * of live bytes against the largest class. */
static void
detail_classes(struct mstat_ui *ui, const struct mstat_model_row *r, int y)
{
	const struct mstat_model_class *used[MSTAT_MAX_CLASSES];
	size_t nused = 0;
	uint64_t max_b = 0;
	for (uint32_t c = 0; c < r->class_count; c++) {
		const struct mstat_model_class *k = &r->classes[c];
		if (k->c.alloc_count == 0)
			continue;
		used[nused++] = k;
		uint64_t b = mstat_live_bytes(&k->c);
		max_b = b > max_b ? b : max_b;
	}
	qsort(used, nused, sizeof(used[0]), cmp_growth);
	int bw = COLS - 74;
	if (bw > 40)
		bw = 40;
	line(y++, A_REVERSE, "%8s %8s %9s %6s %7s %8s %8s %10s %s", "SIZE<=",
	     "LIVE", "GROWTH", "OBJS", "+OBJS", "ALLOC/s", "FREE/s", "NET/s",
	     bw > 0 ? "LIVE" : "");
	int rows = LINES - y - 1;
	if (ui->detail_scroll + (size_t)(rows > 0 ? rows : 0) > nused)
		ui->detail_scroll = nused > (size_t)rows ? nused - (size_t)rows : 0;
	ui->page = rows > 0 ? (size_t)rows : 0;
	bool hr = r->have_rates;
	for (size_t i = ui->detail_scroll; i < nused && y < LINES - 1; i++) {
		const struct mstat_model_class *k = used[i];
		char sz[MSTAT_UNIT_MAX], b[64] = "", w[8][MSTAT_UNIT_MAX];
		if (k->max_size == UINT64_MAX)
			snprintf(sz, sizeof(sz), "huge");
		else
			fmt(sz, BYTES, true, (double)k->max_size);
		if (bw > 0)
			bar(b, bw, mstat_live_bytes(&k->c), max_b);
		line(y++, A_NORMAL, "%8s %8s %9s %6s %7s %8s %8s %10s %s", sz,
		     fmt(w[0], BYTES, true, (double)mstat_live_bytes(&k->c)),
		     fmt(w[1], GROWTH, true, (double)k->growth_bytes),
		     fmt(w[2], COUNT, true, (double)mstat_live_objects(&k->c)),
		     fmt(w[3], COUNT | MSTAT_UNIT_SIGNED, true,
			 (double)k->growth_objects),
		     fmt(w[4], COUNT_RATE, hr, k->alloc_rate),
		     fmt(w[5], COUNT_RATE, hr, k->free_rate),
		     fmt(w[6], BYTES_RATE, hr, k->net_bytes_rate), b);
	}
}

void
mstat_view_detail(struct mstat_ui *ui)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);
	char v[10][MSTAT_UNIT_MAX], name[128];

	if (!r) {
		line(HEAD, A_NORMAL, "  dismissed: Esc goes back to the table");
		return;
	}
	bool h = r->have_snap;
	mstat_columns_text(MSTAT_SORT_NAME, r, ui->model.wall_ns, name, sizeof(name));
	/* Where it runs: its pid there, its container and pod, or its
	 * unit. */
	char where[160] = "", inner[32] = "";
	if (r->nspid && r->nspid != r->pid)
		snprintf(inner, sizeof(inner), " (%d in its namespace)",
			 (int)r->nspid);
	if (r->where.container_id[0])
		snprintf(where, sizeof(where), " in container %s%s%s",
			 r->where.container_short,
			 r->where.pod_uid[0] ? " of pod " : "", r->where.pod_uid);
	else if (r->where.systemd_unit[0])
		snprintf(where, sizeof(where), " in %.140s",
			 r->where.systemd_unit);
	line(HEAD, A_BOLD, "pid %d%s %s%s%s%s: %s, threads %s, age %s",
	     (int)r->pid, inner, name, r->exe[0] ? " exe " : "", r->exe, where,
	     mstat_model_live_name(r->live), fmt(v[0], COUNT, h, r->threads),
	     mstat_columns_text(MSTAT_SORT_AGE, r, ui->model.wall_ns, v[1],
				sizeof(v[1])));
	line(HEAD + 1, A_NORMAL, "live %s, %s objs  growth %s, %s objs, %s (%.0fs)",
	     fmt(v[2], BYTES, h, (double)mstat_model_live_bytes(r)),
	     fmt(v[3], COUNT, h, (double)mstat_model_live_objects(r)),
	     fmt(v[4], GROWTH, h, (double)r->growth_bytes),
	     fmt(v[5], COUNT | MSTAT_UNIT_SIGNED, h, (double)r->growth_objects),
	     fmt(v[6], BYTES_RATE, r->have_growth_rate, r->growth_bytes_rate),
	     (double)ui->model.window_ns / 1e9);
	draw_history(ui, r, HEAD + 2);
	int y = HEAD + 3;
	y += draw_memory(r, ui->model.wall_ns, y, 3);
	if (r->end_ns) {
		/* When it ended: began to exit, or was found killed. */
		char when[32];
		time_t t = (time_t)(r->end_ns / 1000000000u);
		struct tm tm;
		strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&t, &tm));
		line(y, A_NORMAL, "%s at %s: final counts; %s in %s objects "
		     "never freed (x dismisses)", mstat_model_live_name(r->live),
		     when, fmt(v[8], BYTES, h, (double)mstat_model_live_bytes(r)),
		     fmt(v[9], COUNT, h, (double)mstat_model_live_objects(r)));
	} else if (r->err[0]) {
		line(y, A_NORMAL, "%s", r->err);
	} else if (r->attached_ns) {
		draw_attached(r, y);
	}
	detail_classes(ui, r, y + 1);
}

/* A frame as "function file:line" (file and module by their base
 * names); "0x..." for a function not known. */
static void
frame_text(char *buf, size_t len, uint64_t pc, const char *function,
	   const char *path, int line_no, const char *module)
{
	const char *file = strrchr(path, '/'), *mod = strrchr(module, '/');

	file = file ? file + 1 : path;
	mod = mod ? mod + 1 : module;
	int n = function[0] ? snprintf(buf, len, "%s", function)
			    : snprintf(buf, len, "0x%llx", (unsigned long long)pc);
	size_t k = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
	if (file[0] && line_no)
		snprintf(buf + k, len - k, " %s:%d", file, line_no);
	else if (file[0])
		snprintf(buf + k, len - k, " %s", file);
	else if (mod[0])
		snprintf(buf + k, len - k, " (%s)", mod);
}

/* Where a site is, in `w` columns at most: its frame, then its caller's
 * after " < " if there is room; else its frame, cut at the end of the
 * function's name (the least telling part) so its file:line stays. */
static void
site_text(char *buf, size_t len, int w, const struct mstat_site *k)
{
	char self[400], caller[400] = "";

	frame_text(self, sizeof(self), k->pc, k->function, k->file, k->line,
		   k->module);
	if (k->caller_pc)
		frame_text(caller, sizeof(caller), k->caller_pc,
			   k->caller_function, k->caller_file, k->caller_line, "");
	if (caller[0] && (int)(strlen(self) + 3 + strlen(caller)) <= w) {
		snprintf(buf, len, "%s < %s", self, caller);
		return;
	}
	if ((int)strlen(self) <= w || w < 12) {
		snprintf(buf, len, "%s", self);
		return;
	}
	/* Cut the name: keep what follows it (file:line).  A C++ name has
	 * spaces of its own ("f(unsigned long)"). */
	size_t fl = strlen(k->function);
	const char *where = fl && fl < strlen(self) && self[fl] == ' '
				    ? self + fl : NULL;
	int wl = where ? (int)strlen(where) : 0;
	int room = w - wl - 2;
	if (room < 4)
		room = 4;
	snprintf(buf, len, "%.*s..%s", room, self, where ? where : "");
}

/* One process's call sites, by live bytes or by growth. */
void
mstat_view_sites(struct mstat_ui *ui)
{
	const struct mstat_model_row *r = mstat_ui_selected(ui);
	const struct mstat_core_sites *s = ui->sites_seen;
	bool growth = ui->sites_order == MSTAT_CORE_SITES_GROWTH;
	char v[6][MSTAT_UNIT_MAX], name[128];

	if (!r) {
		line(HEAD, A_NORMAL, "  dismissed: Esc goes back to the table");
		return;
	}
	mstat_columns_text(MSTAT_SORT_NAME, r, ui->model.wall_ns, name, sizeof(name));
	line(HEAD, A_BOLD, "pid %d %s: call sites by %s (s: by %s)", (int)r->pid,
	     name, growth ? "growth since the baseline" : "live bytes",
	     growth ? "live bytes" : "growth");
	if (!s) {
		line(HEAD + 1, A_NORMAL, "reading its heap profile...");
		return;
	}
	if (s->rc == -ENOENT) {
		line(HEAD + 1, A_NORMAL, s->final || mstat_model_gone(r->live)
		     ? "it ended before its call sites were read: they are read "
		       "while the sites are shown"
		     : "its call sites are not read: it is not a live process "
		       "here");
		return;
	}
	if (s->rc < 0) {
		line(HEAD + 1, A_NORMAL, "cannot read its heap profile: %s",
		     strerror(-s->rc));
		return;
	}
	if (s->sample_bytes == 0)
		line(HEAD + 1, A_NORMAL, "sampling is off in pid %d "
		     "(MSTAT_SAMPLE_BYTES=0): mstat-top -p %d --sample-bytes=524288 "
		     "turns it on", (int)r->pid, (int)r->pid);
	else if (s->nsites == 0)
		line(HEAD + 1, A_NORMAL, "no samples yet: one allocation in every "
		     "%s allocated is sampled", fmt(v[0], BYTES, true,
						    (double)s->sample_bytes));
	else
		line(HEAD + 1, A_NORMAL, "%s%zu sites, %llu samples, one every %s%s",
		     s->final ? "final, as it ended: " : "", s->nsites,
		     (unsigned long long)s->samples,
		     fmt(v[0], BYTES, true, (double)s->sample_bytes),
		     growth ? "; growth since the baseline (b resets it)" : "");
	if (growth && !s->have_growth) {
		line(HEAD + 2, A_NORMAL, "no baseline of its sites was read: "
		     "b takes one");
		return;
	}
	size_t n = s->n[ui->sites_order];
	const struct mstat_site *top = s->top[ui->sites_order];
	/* SHORT: the share of its bytes freed within a millisecond;
	 * LIFETIME: the median lifetime of those freed (lifetime.h). */
	line(HEAD + 2, A_REVERSE, "%9s %8s %9s %9s %5s %8s  %s", "LIVE", "OBJS",
	     "ALLOC", "GROWTH", "SHORT", "LIFETIME", "SITE (function file:line)");
	int y = HEAD + 3, rows = LINES - y - 1;
	if (ui->sites_scroll + (size_t)(rows > 0 ? rows : 0) > n)
		ui->sites_scroll = n > (size_t)rows ? n - (size_t)rows : 0;
	ui->page = rows > 0 ? (size_t)rows : 0;
	for (size_t i = ui->sites_scroll; i < n && y < LINES - 1; i++) {
		const struct mstat_site *k = &top[i];
		char where[1024];
		site_text(where, sizeof(where), COLS - 55, k);
		line(y++, A_NORMAL, "%9s %8s %9s %9s %5s %8s  %s",
		     fmt(v[0], BYTES, true, k->live_bytes),
		     fmt(v[1], COUNT, true, k->live_objects),
		     fmt(v[2], BYTES, true, k->alloc_bytes),
		     fmt(v[3], GROWTH, s->have_growth, k->growth_bytes),
		     fmt(v[4], MSTAT_UNIT_PERCENT, true,
			 100 * k->lifetimes.short_share),
		     fmt(v[5], MSTAT_UNIT_DURATION, true,
			 k->lifetimes.median_ns / 1e9),
		     where);
	}
}

/* The keys, then the columns: from the key table and the column table,
 * scrolled by ui->help_scroll lines. */
void
mstat_view_help(struct mstat_ui *ui)
{
	int rows = LINES - HEAD - 1, total = (int)ui->nkeys + MSTAT_SORT_COUNT + 2;
	int y = HEAD, skip;

	if (rows < 1)
		return;
	if ((int)ui->help_scroll > total - rows)
		ui->help_scroll = total > rows ? (size_t)(total - rows) : 0;
	ui->page = (size_t)rows;
	skip = (int)ui->help_scroll;
	for (int i = 0; i < total && y < LINES - 1; i++) {
		if (i < skip)
			continue;
		int k = i - 1 - (int)ui->nkeys - 1;
		if (i == 0)
			line(y++, A_BOLD, "Keys (q, Esc or h closes this; "
					  "Up/Down scroll)");
		else if (i <= (int)ui->nkeys)
			line(y++, A_NORMAL, "  %-10s %s", ui->keys[i - 1].names,
			     ui->keys[i - 1].help);
		else if (i == (int)ui->nkeys + 1)
			line(y++, A_BOLD, "Columns (F6, < and > sort by them)");
		else
			line(y++, A_NORMAL, "  %-10s %s", mstat_columns_at(k)->title,
			     mstat_columns_at(k)->help);
	}
}

/* The last line: the filter being typed; else the filter in force, then
 * what the last key did, the last note or, without one, the main keys. */
static void
draw_status(struct mstat_ui *ui)
{
	if (ui->editing) {
		line(LINES - 1, A_BOLD, "filter: %s_", ui->edit);
		return;
	}
	line(LINES - 1, A_NORMAL, "%s%s%s%s", ui->filter[0] ? "filter: " : "",
	     ui->filter, ui->filter[0] ? "  " : "",
	     ui->said[0] ? ui->said : ui->status[0] ? ui->status
	     : "h help  Enter open  s sites  L growth  b baseline  x dismiss  / filter"
	       "  q quit");
}

void
mstat_view_draw(struct mstat_ui *ui)
{
	erase();
	draw_header(ui);
	mstat_screens_ops(mstat_ui_screen(ui))->draw(ui);
	draw_status(ui);
	refresh();
}
