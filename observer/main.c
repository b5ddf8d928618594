/* SPDX-License-Identifier: MIT */
/*
 * main.c - mstat-top's options, and its two loops: interactive (a sampler
 * thread ticks, this thread draws) and batch (this thread ticks and
 * prints).  See mstat-top(1).
 */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "reader.h"
#include "text.h"
#include "top.h"
#include "ui.h"

#define MAX_PIDS 256

struct options {
	bool batch, gc;
	long count;                 /* ticks to print; -1: until stopped */
	double delay_s;
	int format;
	enum mstat_model_sort sort;
	char filter[MSTAT_UI_FILTER_MAX];
	pid_t pids[MAX_PIDS];
	size_t npids;
	double linger_s;
};

static void
usage(FILE *f)
{
	fputs("usage: mstat-top [options]\n"
	      "Live heap statistics of processes running libmstatshm.\n\n"
	      "  -b, --batch            print instead of drawing (the default when\n"
	      "                         stdout is not a terminal)\n"
	      "  -n, --iterations=N     stop after N ticks\n"
	      "  -d, --delay=SECONDS    interval between ticks (default 1)\n"
	      "  -o, --format=FORMAT    batch output: table, json, openmetrics,\n"
	      "                         prometheus (text format 0.0.4)\n"
	      "  -p, --pid=PID[,PID..]  watch only these processes\n"
	      "  -F, --filter=TEXT      show only names containing TEXT (or pid TEXT)\n"
	      "  -s, --sort=COLUMN      pid, name, threads, live-bytes, live-objs,\n"
	      "                         alloc/s, free/s, net/s, state\n"
	      "      --linger=SECONDS   keep exited and killed processes this long\n"
	      "                         (default 5)\n"
	      "      --gc               remove every segment of a process that is\n"
	      "                         gone, then exit (each tick removes those it\n"
	      "                         reads anyway)\n"
	      "  -h, --help             this text\n", f);
}

/* A line on stderr that quotes an argument: escaped as notes are, so that
 * what it echoes is shown, not obeyed by the terminal. */
static void
complain(const char *fmt, ...)
{
	char raw[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	fputs("mstat-top: ", stderr);
	mstat_text_put(stderr, raw, MSTAT_TEXT_PLAIN);
	fputc('\n', stderr);
}

static int
parse_pids(struct options *o, const char *s)
{
	char *end;

	while (*s) {
		long v = strtol(s, &end, 10);
		if (end == s || v <= 0 || v > 0x7fffffff || o->npids == MAX_PIDS)
			return -1;
		o->pids[o->npids++] = (pid_t)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return 0;
}

static int
parse_options(struct options *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "batch", no_argument, NULL, 'b' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "filter", required_argument, NULL, 'F' },
		{ "sort", required_argument, NULL, 's' },
		{ "linger", required_argument, NULL, 'L' },
		{ "gc", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	*o = (struct options){ .count = -1, .delay_s = 1.0,
			       .format = MSTAT_FORMAT_TABLE,
			       .sort = MSTAT_SORT_LIVE_BYTES, .linger_s = 5.0 };
	while ((c = getopt_long(argc, argv, "bn:d:o:p:F:s:h", longs, NULL)) != -1) {
		switch (c) {
		case 'b': o->batch = true; break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count < 1)
				goto bad;
			break;
		case 'd':
			o->delay_s = strtod(optarg, &end);
			if (*end || !(o->delay_s >= 0.1 && o->delay_s <= 3600))
				goto bad;
			break;
		case 'o':
			if ((o->format = mstat_output_parse_format(optarg)) < 0)
				goto bad;
			break;
		case 'p':
			if (parse_pids(o, optarg) < 0)
				goto bad;
			break;
		case 'F': snprintf(o->filter, sizeof(o->filter), "%s", optarg); break;
		case 's': {
			int k = mstat_model_parse_sort(optarg);
			if (k < 0)
				goto bad;
			o->sort = (enum mstat_model_sort)k;
			break;
		}
		case 'L':
			o->linger_s = strtod(optarg, &end);
			if (*end || !(o->linger_s >= 0 && o->linger_s <= 3600))
				goto bad;
			break;
		case 'G': o->gc = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		complain("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!isatty(STDOUT_FILENO))
		o->batch = true;
	return 0;
bad:
	complain("bad value '%s' for -%c", optarg, c == 'L' ? 'L' : c);
	return -1;
}

static void
note_stderr(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "mstat-top: %s\n", line);
}

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- batch ---- */

/* -p names a process with no segment: say so once, or the output is just
 * empty. */
static void
note_missing(const struct options *o, const struct mstat_model *m)
{
	for (size_t k = 0; k < o->npids; k++) {
		bool found = false;
		for (size_t i = 0; i < m->n && !found; i++)
			found = m->rows[i]->pid == o->pids[k];
		if (!found)
			fprintf(stderr, "mstat-top: pid %d: no segment (is it "
					"counting with libmstatshm?)\n",
				(int)o->pids[k]);
	}
}

static int
run_batch(struct mstat_top *top, const struct options *o)
{
	struct mstat_model m;
	struct mstat_top_scratch sc = { 0 };
	const struct mstat_model_row **rows = NULL;
	int rc = 0;

	mstat_model_init(&m, (uint64_t)(o->linger_s * 1e9));
	for (long i = 0; o->count < 0 || i < o->count; i++) {
		if (i)
			sleep_s(o->delay_s);
		mstat_top_tick(top);
		if (mstat_top_collect(top, &m, &sc, mstat_top_now_ns()) < 0 ||
		    !(rows = realloc(rows, (m.n + 1) * sizeof(*rows)))) {
			fprintf(stderr, "mstat-top: out of memory\n");
			rc = 1;
			break;
		}
		if (i == 0)
			note_missing(o, &m);
		size_t n = mstat_model_view(&m, o->filter, o->sort, false, rows);
		struct mstat_output_tick t = { (uint64_t)i + 1, wall_ms(), o->delay_s };
		if (mstat_output_write(stdout, o->format, &t, rows, n) < 0 ||
		    fflush(stdout) == EOF) {
			rc = errno == EPIPE ? 0 : 1;
			break;
		}
	}
	free(rows);
	free(sc.in);
	mstat_model_fini(&m);
	return rc;
}

/* ---- interactive ---- */

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
	ui->nrows = mstat_model_view(&ui->model, ui->filter, ui->sort,
				     ui->reverse, ui->rows);
	/* The selection follows its process through re-sorting. */
	for (size_t i = 0; i < ui->nrows; i++)
		if (strcmp(ui->rows[i]->key, ui->sel_key) == 0) {
			ui->sel = i;
			return;
		}
	if (ui->sel >= ui->nrows)
		ui->sel = ui->nrows ? ui->nrows - 1 : 0;
	if (ui->nrows && !ui->detail)
		snprintf(ui->sel_key, sizeof(ui->sel_key), "%s",
			 ui->rows[ui->sel]->key);
}

const struct mstat_model_row *
mstat_ui_selected(const struct mstat_ui *ui)
{
	if (ui->detail)
		return mstat_model_find(&ui->model, ui->sel_key);
	return ui->nrows ? ui->rows[ui->sel] : NULL;
}

static int
run_interactive(struct mstat_top *top, const struct options *o)
{
	struct mstat_ui ui = { .top = top, .sort = o->sort,
			       .interval_ms = (unsigned)(o->delay_s * 1000) };
	uint64_t seen_ticks = 0;
	bool dirty = true;
	int rc;

	snprintf(ui.filter, sizeof(ui.filter), "%s", o->filter);
	mstat_model_init(&ui.model, (uint64_t)(o->linger_s * 1e9));
	setlocale(LC_ALL, "");
	if (!initscr())
		return 1;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(100);
	if ((rc = mstat_top_start(top)) < 0) {
		endwin();
		fprintf(stderr, "mstat-top: cannot start: %s\n", strerror(-rc));
		return 1;
	}
	while (!ui.quit) {
		/* Acquire: pairs with the sampler's release at the end of a
		 * tick; that tick's published samples are then visible. */
		uint64_t ticks = atomic_load_explicit(&top->ticks,
						      memory_order_acquire);
		if (!ui.paused && ticks != seen_ticks) {
			seen_ticks = ticks;
			mstat_top_collect(top, &ui.model, &ui.scratch,
					  mstat_top_now_ns());
			ui.tick_wall_ms = wall_ms();
			mstat_ui_select_rows(&ui);
			dirty = true;
		}
		uint64_t seq = mstat_top_status(top, ui.status, sizeof(ui.status));
		if (seq != ui.status_seq) {
			ui.status_seq = seq;
			dirty = true;
		}
		if (dirty) {
			mstat_view_draw(&ui);
			dirty = false;
		}
		int ch = getch();
		if (ch == ERR)
			continue;
		if (ch == KEY_RESIZE) {
			dirty = true;
			continue;
		}
		int r = mstat_keys_dispatch(&ui, ch);
		if (r & MSTAT_KEY_RESELECT)
			mstat_ui_select_rows(&ui);
		dirty |= r != MSTAT_KEY_IGNORED;
	}
	endwin();
	free(ui.rows);
	free(ui.scratch.in);
	mstat_model_fini(&ui.model);
	return 0;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct mstat_top top;
	int rc;

	if (parse_options(&o, argc, argv) < 0)
		return 2;
	struct mstat_top_options to = {
		.pids = o.pids,
		.npids = o.npids,
		.interval_ms = (unsigned)(o.delay_s * 1000),
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = (uint64_t)(o.linger_s * 1e9),
		/* Batch and --gc say why a segment was skipped on stderr; the
		 * interactive view on its status line. */
		.note = o.batch || o.gc ? note_stderr : NULL,
	};
	if ((rc = mstat_top_init(&top, &to)) < 0) {
		fprintf(stderr, "mstat-top: %s\n", strerror(-rc));
		return 1;
	}
	rcu_register_thread();
	if (o.gc) {
		mstat_discover_gc(&top);
		rc = 0;
	} else if (o.batch) {
		rc = run_batch(&top, &o);
	} else {
		rc = run_interactive(&top, &o);
	}
	mstat_top_fini(&top);
	rcu_unregister_thread();
	return rc;
}
