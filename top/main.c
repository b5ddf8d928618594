/* SPDX-License-Identifier: MIT */
/*
 * main.c - mstat-top's options, and its loops: interactive (a sampler
 * thread ticks, this thread draws), batch (this thread ticks and prints),
 * and both again from a recording instead of live.  See mstat-top(1).
 */
#include <ctype.h>
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"
#include "shm/clock.h"
#include "core/columns.h"
#include "core/killed.h"
#include "core/outfile.h"
#include "core/output.h"
#include "core/pprof.h"
#include "core/sites.h"
#include "shm/reader.h"
#include "core/record.h"
#include "core/text.h"
#include "core/core.h"
#include "top/ui.h"

#define MAX_PIDS 256
#define MAX_SITES 1000
/* What reading processes' memory may add to a tick, in % of the rest of
 * it (core.h; docs/performance.md, "Resident memory"). */
#define MSTAT_TOP_MEMORY_SHARE 10
#define SAMPLE_UNASKED UINT64_MAX /* --sample-bytes not given */

struct pid_list {
	pid_t v[MAX_PIDS];
	size_t n;
};

struct options {
	bool batch, gc;
	uint64_t count;             /* ticks to print; 0: until stopped */
	double delay_s;
	int format;                 /* enum mstat_output_format */
	int sort;                   /* enum mstat_model_sort */
	const char *filter;         /* "": every process */
	struct pid_list pids;
	double linger_s, window_s, baseline_s;
	const char *record, *replay;
	struct mstat_namespaces namespaces; /* --namespaces */
	const char *pprof;          /* --pprof: write the profile and exit */
	uint64_t sites;             /* --sites: per process in JSON; 0 none */
	uint64_t sample_bytes;      /* --sample-bytes, or SAMPLE_UNASKED */
	struct mstat_grace grace;   /* the environment's, --killed-grace */
	const char *postmortem;     /* --postmortem-dir */
	uint64_t postmortem_bytes;
};

#define complain(...) mstat_text_say("mstat-top", __VA_ARGS__)

static int
parse_pids(const char *v, void *dst, char *why, size_t len)
{
	struct pid_list *p = dst;

	(void)why;
	(void)len;
	return mstat_procs_pids_parse(v, p->v, MAX_PIDS, &p->n);
}

/* The names -s takes: the columns', in the table's order. */
static const char *
sort_names(void)
{
	static char list[256];

	if (!list[0])
		for (int i = 0; i < MSTAT_SORT_COUNT; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", i ? ", " : "", mstat_columns_at(i)->name);
	return list;
}

#define O struct options
static const struct mstat_cli_option options[] = {
	{ .name = "batch", .letter = 'b', MSTAT_CLI_FLAG(O, batch),
	  .help = "print instead of drawing (the default when stdout is not "
		  "a terminal)" },
	{ .name = "iterations", .letter = 'n', .arg = "N",
	  MSTAT_CLI_NUMBER(O, count, 1, UINT64_MAX), .want = "a number of ticks",
	  .dflt_text = "until stopped", .help = "stop after N ticks" },
	{ .name = "delay", .letter = 'd', .arg = "SECONDS",
	  MSTAT_CLI_REAL(O, delay_s, 0.1, 3600), .want = "seconds", .dflt = "1",
	  .help = "the interval between ticks" },
	{ .name = "format", .letter = 'o', .arg = "FORMAT",
	  MSTAT_CLI_CHOICE(O, format, mstat_output_parse_format),
	  .want = "a format",
	  .values = mstat_output_formats, .dflt = "table",
	  .help = "batch output" },
	{ .name = "pid", .letter = 'p', .arg = "PID[,PID..]",
	  MSTAT_CLI_PARSE(O, pids, parse_pids),
	  .want = "process ids, 1 to 2147483647, separated by commas, at most "
		  "256",
	  .help = "watch only these processes" },
	{ .name = "filter", .letter = 'F', .arg = "TEXT",
	  MSTAT_CLI_TEXT(O, filter, MSTAT_UI_FILTER_MAX - 1),
	  .help = "show only processes whose name, comm, executable, "
		  "container id, pod uid or systemd unit contains TEXT, or "
		  "whose pid is TEXT" },
	{ .name = "namespaces", .letter = 'N', .arg = "WHICH",
	  MSTAT_CLI_PARSE(O, namespaces, mstat_procs_namespaces_option),
	  .want = MSTAT_NAMESPACES_WANT, .dflt_text = "all, or MSTAT_NAMESPACES",
	  .help = MSTAT_NAMESPACES_HELP },
	{ .name = "sort", .letter = 's', .arg = "COLUMN",
	  MSTAT_CLI_CHOICE(O, sort, mstat_columns_parse_sort), .want = "a column",
	  .values = sort_names, .dflt = "live-bytes", .help = "sort by" },
	{ .name = "baseline", .arg = "SECONDS",
	  MSTAT_CLI_REAL(O, baseline_s, 0, 86400 * 365), .want = "seconds",
	  .help = "take every baseline again SECONDS after mstat-top's first "
		  "tick (a replay: the recording's); until then, and by "
		  "default, a process's baseline is when it is first seen" },
	{ .name = "window", .arg = "SECONDS",
	  MSTAT_CLI_REAL(O, window_s, 1, 86400), .want = "seconds", .dflt = "60",
	  .help = "the growth rate's window" },
	{ .name = "linger", .arg = "SECONDS",
	  MSTAT_CLI_REAL(O, linger_s, 0, 86400), .want = "seconds", .dflt = "300",
	  .help = "keep exited and killed processes this long" },
	{ .name = "record", .arg = "FILE", MSTAT_CLI_TEXT(O, record, 0),
	  .want = "a file name", .help = "write every tick to FILE (JSON Lines)" },
	{ .name = "replay", .arg = "FILE", MSTAT_CLI_TEXT(O, replay, 0),
	  .want = "a file name",
	  .help = "play a recording back instead of watching" },
	{ .name = "pprof", .arg = "FILE", MSTAT_CLI_TEXT(O, pprof, 0),
	  .want = "a file name",
	  .help = "write the heap profile of the one process given with -p to "
		  "FILE (gzipped pprof), and exit" },
	{ .name = "sites", .arg = "N", MSTAT_CLI_NUMBER(O, sites, 1, MAX_SITES),
	  .want = "a number of call sites",
	  .help = "batch JSON: the N call sites holding the most live bytes of "
		  "each process" },
	{ .name = "sample-bytes", .arg = "N",
	  MSTAT_CLI_NUMBER(O, sample_bytes, 0, MSTAT_SAMPLE_MAX),
	  .want = "bytes",
	  .help = "ask the processes given with -p to sample every N bytes "
		  "allocated on average; 0 stops sampling" },
	{ .name = "gc", MSTAT_CLI_FLAG(O, gc),
	  .help = "remove every segment of a process that is gone, then exit "
		  "(each tick removes those it reads anyway); a killed one's "
		  "once its grace is over" },
	MSTAT_KILLED_OPTIONS(O, grace, postmortem, postmortem_bytes),
	{ .name = "help", .letter = 'h', .kind = MSTAT_CLI_KIND_HELP,
	  .help = "this text" },
	{ .name = "version", .letter = 'V', .kind = MSTAT_CLI_KIND_VERSION,
	  .help = "the version" },
};
#undef O

static const struct mstat_cli cli = {
	.program = "mstat-top",
	.version = MSTAT_VERSION,
	.synopsis = "mstat-top [options]",
	.about = "Live heap statistics of processes running libmstatshm.",
	.options = options,
	.n = sizeof(options) / sizeof(options[0]),
	.column = 25,
};

/* What the options ask that cannot be done together, or that the
 * environment refuses: 0, or -1 having said why. */
static int
check_options(struct options *o)
{
	if (o->replay && (o->record || o->pids.n || o->gc)) {
		complain("--replay plays a recording: not with --record, -p or --gc");
		return -1;
	}
	if ((o->pprof || o->sample_bytes != SAMPLE_UNASKED) &&
	    (o->replay || o->gc)) {
		complain("--pprof and --sample-bytes read live processes: not with "
			 "--replay or --gc");
		return -1;
	}
	if (o->pprof && o->pids.n != 1) {
		complain("--pprof writes the profile of one process: give its pid "
			 "with -p");
		return -1;
	}
	if (o->postmortem && (o->replay || o->gc || o->pprof)) {
		complain("--postmortem-dir writes what the ticks find killed: not "
			 "with --replay, --gc or --pprof");
		return -1;
	}
	if (o->sample_bytes != SAMPLE_UNASKED && o->pids.n == 0) {
		complain("--sample-bytes changes the processes given with -p");
		return -1;
	}
	if (!isatty(STDOUT_FILENO))
		o->batch = true;
	if (o->sites && (!o->batch || o->format != MSTAT_FORMAT_JSON || o->replay)) {
		complain("--sites adds call sites to live batch JSON output: "
			 "with -b -o json, not --replay");
		return -1;
	}
	return 0;
}

/* The options: 0 to go on, 1 to exit 0 (--help, --version), -1 to exit
 * 2 (said why). */
static int
parse_options(struct options *o, int argc, char **argv)
{
	char why[200];
	int next;

	*o = (struct options){ .filter = "", .sample_bytes = SAMPLE_UNASKED };
	if (mstat_killed_env(&o->grace, why, sizeof(why)) < 0 ||
	    mstat_procs_namespaces_env(&o->namespaces, why, sizeof(why)) < 0) {
		complain("%s", why);
		return -1;
	}
	enum mstat_cli_result r = mstat_cli_parse(&cli, o, argc, argv, &next);
	return r == MSTAT_CLI_OK ? check_options(o) : (int)r;
}

static void
note_stderr(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "mstat-top: %s\n", line);
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void
model_init(struct mstat_model *m, const struct options *o)
{
	mstat_model_init(m, (uint64_t)(o->linger_s * 1e9));
	m->window_ns = (uint64_t)(o->window_s * 1e9);
	m->baseline_after_ns = (uint64_t)(o->baseline_s * 1e9);
}

/* ---- recording ---- */

struct recorder {
	FILE *f;
	struct mstat_outfile out;   /* f's, when recording */
	const char *path;
	struct mstat_core_scratch sc;
	uint64_t seq;
	bool failed;
	struct mstat_core *core;
};

static int
recorder_open(struct recorder *rec, const char *path)
{
	memset(rec, 0, sizeof(*rec));
	rec->path = path;
	if (!path)
		return 0;
	/* A stream: in place from the start, read while it grows. */
	char why[512];
	if (mstat_outfile_open(&rec->out, path, MSTAT_OUTFILE_STREAM, why,
			       sizeof(why)) < 0) {
		complain("%s", why);
		return -1;
	}
	rec->f = rec->out.f;
	if (mstat_record_begin(rec->f, mstat_clock_wall_ns() / 1000000u) < 0) {
		complain("%s: %s", path, strerror(errno));
		mstat_outfile_discard(&rec->out);
		rec->f = NULL;
		return -1;
	}
	return 0;
}

static void
recorder_close(struct recorder *rec)
{
	char why[512];

	if (rec->f && mstat_outfile_close(&rec->out, why, sizeof(why)) < 0 &&
	    !rec->failed)
		complain("%s", why);
	free(rec->sc.in);
}

struct tick_arg {
	struct recorder *rec;
	struct mstat_model *m;       /* NULL: record only */
	struct mstat_record_tick t;
};

/* One tick's inputs: recorded, then folded into the model, at the same
 * times, so that a replay makes the same model. */
static int
take_tick(void *arg, const struct mstat_model_input *in, size_t n)
{
	struct tick_arg *a = arg;

	a->t.in = in;
	a->t.n = n;
	if (a->rec && a->rec->f && !a->rec->failed &&
	    mstat_record_write(a->rec->f, &a->t) < 0) {
		a->rec->failed = true;
		if (a->rec->core) /* interactive: on the status line */
			mstat_core_note(a->rec->core, "%s: recording stopped: %s",
				       a->rec->path, strerror(errno));
		else
			complain("%s: recording stopped: %s", a->rec->path,
				 strerror(errno));
	}
	return a->m ? mstat_model_update(a->m, in, n, a->t.now_ns) : 0;
}

/* The sampler thread's end of tick, in interactive mode: the tick goes to
 * the recording. */
static void
record_after_tick(void *arg, struct mstat_core *core)
{
	struct recorder *rec = arg;
	struct tick_arg a = { rec, NULL, { ++rec->seq, mstat_clock_wall_ns() / 1000000u, mstat_clock_mono_ns(),
		mstat_core_interval_ms(core) / 1000.0, NULL, 0 } };

	if (!rec->failed)
		mstat_core_gather(core, &rec->sc, take_tick, &a);
}

/* ---- batch ---- */

/* -p names a process with no segment: say so once, and why (no such
 * process, another user's, one that does not count), or the output is
 * just empty.  False if -p names nothing that exists: no row, and no
 * process. */
static bool
note_missing(const struct options *o, const struct mstat_model *m)
{
	bool any = o->pids.n == 0;

	for (size_t k = 0; k < o->pids.n; k++) {
		bool found = false;
		char why[200];
		for (size_t i = 0; i < m->n && !found; i++)
			found = m->rows[i]->pid == o->pids.v[k];
		if (found) {
			any = true;
			continue;
		}
		any |= mstat_discover_why_none(o->pids.v[k], why, sizeof(why)) !=
		       -ESRCH;
		complain("%s", why);
	}
	return any;
}

/* Prints the model's rows for tick `t`: 0, or 1 if the output failed
 * (a closed pipe is the reader's choice: 0, and stop). */
/* --sites: a process's call sites, read where the sampler reads it. */
struct sites_arg {
	struct mstat_core *core;
	size_t n;
	struct mstat_site *buf;
};

static void
print_sites(void *arg, FILE *f, const struct mstat_model_row *r)
{
	struct sites_arg *a = arg;
	size_t got;

	if (mstat_core_sites(a->core, r->key, a->n, a->buf, &got) < 0)
		mstat_output_json_sites(f, NULL, 0);
	else
		mstat_output_json_sites(f, a->buf, got);
}

static int
print_tick(const struct options *o, struct mstat_model *m,
	   const struct mstat_record_tick *t, const struct mstat_model_row ***rows,
	   bool *stop, struct sites_arg *sites)
{
	const struct mstat_model_row **p = realloc(*rows, (m->n + 1) * sizeof(**rows));

	if (!p) {
		fprintf(stderr, "mstat-top: out of memory\n");
		*stop = true;
		return 1;
	}
	*rows = p;
	m->wall_ns = t->time_ms * 1000000u;
	size_t n = mstat_columns_view(m, o->filter, o->sort, false, p);
	struct mstat_output_tick ot = { t->seq, t->time_ms, t->interval_s,
					sites ? print_sites : NULL, sites };
	if (mstat_output_write(stdout, o->format, &ot, p, n) < 0 ||
	    fflush(stdout) == EOF) {
		*stop = true;
		return errno == EPIPE ? 0 : 1;
	}
	return 0;
}

static int
run_batch(struct mstat_core *core, const struct options *o)
{
	struct mstat_model m;
	struct mstat_core_scratch sc = { 0 };
	const struct mstat_model_row **rows = NULL;
	struct recorder rec;
	bool stop = false;
	int rc = 0;

	struct sites_arg sites = { core, (size_t)o->sites, NULL };

	if (o->sites && !(sites.buf = calloc(sites.n, sizeof(*sites.buf)))) {
		fprintf(stderr, "mstat-top: out of memory\n");
		return 1;
	}
	if (recorder_open(&rec, o->record) < 0) {
		free(sites.buf);
		return 1;
	}
	model_init(&m, o);
	for (uint64_t i = 0; !stop && (o->count == 0 || i < o->count); i++) {
		if (i)
			sleep_s(o->delay_s);
		mstat_core_tick(core);
		struct tick_arg a = { &rec, &m, { i + 1, mstat_clock_wall_ns() / 1000000u,
			mstat_clock_mono_ns(), o->delay_s, NULL, 0 } };
		if (mstat_core_gather(core, &sc, take_tick, &a) < 0) {
			fprintf(stderr, "mstat-top: out of memory\n");
			rc = 1;
			break;
		}
		if (i == 0 && !note_missing(o, &m)) {
			rc = 1; /* nothing to watch, ever */
			break;
		}
		rc = print_tick(o, &m, &a.t, &rows, &stop, o->sites ? &sites : NULL);
		if (rec.failed)
			rc = 1, stop = true;
	}
	free(rows);
	free(sc.in);
	free(sites.buf);
	mstat_model_fini(&m);
	recorder_close(&rec);
	return rc;
}

static int
run_batch_replay(const struct options *o)
{
	struct mstat_replay *r;
	struct mstat_record_tick t;
	struct mstat_model m;
	const struct mstat_model_row **rows = NULL;
	char err[512];
	bool stop = false;
	int rc = 0, got;

	if (mstat_record_replay_open(&r, o->replay, err, sizeof(err)) < 0) {
		fprintf(stderr, "mstat-top: %s\n", err);
		return 1;
	}
	model_init(&m, o);
	for (uint64_t i = 0; !stop && (o->count == 0 || i < o->count); i++) {
		if ((got = mstat_record_replay_next(r, &t, err, sizeof(err))) <= 0) {
			if (got < 0) {
				fprintf(stderr, "mstat-top: %s\n", err);
				rc = 1;
			}
			break;
		}
		if (mstat_model_update(&m, t.in, t.n, t.now_ns) < 0) {
			fprintf(stderr, "mstat-top: out of memory\n");
			rc = 1;
			break;
		}
		rc = print_tick(o, &m, &t, &rows, &stop, NULL);
	}
	free(rows);
	mstat_model_fini(&m);
	mstat_record_replay_close(r);
	return rc;
}

/* ---- interactive ---- */

/* Whether curses can draw on this terminal: it knows the terminal and can
 * move the cursor.  If not, why, for the one-line note. */
static bool
terminal_drawable(char *why, size_t len)
{
	const char *term = getenv("TERM");
	int err = 0;

	if (!term || !*term) {
		snprintf(why, len, "TERM is not set");
		return false;
	}
	if (setupterm(NULL, STDOUT_FILENO, &err) != OK) {
		snprintf(why, len, "terminal type '%s' is not known here", term);
		return false;
	}
	char *cup = tigetstr("cup");
	bool ok = cup && cup != (char *)-1 && !tigetflag("hc");
	del_curterm(cur_term);
	if (!ok)
		snprintf(why, len, "terminal type '%s' cannot move the cursor", term);
	return ok;
}

/* The next recorded tick into the model; false at the end or on an error
 * (said on the status line). */
static bool
replay_step(struct mstat_ui *ui, struct mstat_replay *r, double *interval_s)
{
	struct mstat_record_tick t;
	char err[sizeof(ui->status)];
	int got = mstat_record_replay_next(r, &t, err, sizeof(err));

	if (got <= 0) {
		ui->replay->ended = true;
		snprintf(ui->status, sizeof(ui->status), "%s",
			 got < 0 ? err : "end of the recording");
		return false;
	}
	mstat_model_update(&ui->model, t.in, t.n, t.now_ns);
	ui->model.wall_ns = t.time_ms * 1000000u;
	ui->tick_wall_ms = t.time_ms;
	ui->replay->tick = t.seq;
	*interval_s = t.interval_s;
	ui->interval_ms = (unsigned)(t.interval_s * 1000);
	return true;
}

static int
run_interactive(struct mstat_core *core, const struct options *o,
		struct mstat_replay *replay)
{
	struct mstat_ui_replay rp = { .file = o->replay, .speed = 1.0 };
	struct mstat_ui ui = { .core = core, .replay = replay ? &rp : NULL,
			       .sort = o->sort,
			       .interval_ms = (unsigned)(o->delay_s * 1000) };
	uint64_t seen_ticks = 0, next_ns = 0;
	double interval_s = o->delay_s;
	bool dirty = true;
	int rc;

	snprintf(ui.filter, sizeof(ui.filter), "%s", o->filter);
	snprintf(ui.filter_given, sizeof(ui.filter_given), "%s", o->filter);
	model_init(&ui.model, o);
	ui.keys = mstat_keys_table(&ui.nkeys);
	ui.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		fprintf(stderr, "mstat-top: cannot draw on this terminal\n");
		return 1;
	}
	set_term(scr);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(100);
	if (core && (rc = mstat_core_start(core)) < 0) {
		endwin();
		delscreen(scr);
		fprintf(stderr, "mstat-top: cannot start: %s\n", strerror(-rc));
		return 1;
	}
	while (!ui.quit) {
		if (replay) {
			/* The recording's own pace, at its speed; a step
			 * goes on paused. */
			uint64_t now = mstat_clock_mono_ns();
			if (!rp.ended && (rp.step || (!ui.paused && now >= next_ns))) {
				rp.step = false;
				if (replay_step(&ui, replay, &interval_s))
					mstat_ui_select_rows(&ui);
				next_ns = now + (uint64_t)(interval_s / rp.speed * 1e9);
				dirty = true;
			}
		} else {
			/* Once it changed, the tick's samples are there to
			 * collect. */
			uint64_t ticks = mstat_core_ticks(core);
			if (!ui.paused && ticks != seen_ticks) {
				seen_ticks = ticks;
				ui.tick_wall_ms = mstat_clock_wall_ns() / 1000000u;
				ui.model.wall_ns = ui.tick_wall_ms * 1000000u;
				bool rebased = ui.model.rebased;
				mstat_core_collect(core, &ui.model, &ui.scratch,
						  mstat_clock_mono_ns());
				if (ui.model.rebased != rebased) /* --baseline */
					mstat_core_sites_rebase(core, NULL);
				mstat_ui_select_rows(&ui);
				mstat_ui_sites_fetch(&ui);
				dirty = true;
			}
			uint64_t seq = mstat_core_status(core, ui.status,
							sizeof(ui.status));
			if (seq != ui.status_seq) {
				ui.status_seq = seq;
				dirty = true;
			}
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
	delscreen(scr);
	free(ui.rows);
	free(ui.scratch.in);
	free(ui.sites_seen);
	mstat_model_fini(&ui.model);
	return 0;
}

/* --sample-bytes: the request, to each process of -p. */
static int
request_sampling(const struct options *o)
{
	char why[256];
	int rc = 0;

	for (size_t i = 0; i < o->pids.n; i++) {
		struct mstat_reader *r;
		if (mstat_discover_open_pid(o->pids.v[i], &o->namespaces, &r,
					    why, sizeof(why)) < 0 ||
		    mstat_reader_request_sampling(r, (uint64_t)o->sample_bytes) < 0) {
			if (r)
				snprintf(why, sizeof(why), "%s", mstat_reader_error(r));
			fprintf(stderr, "mstat-top: %s\n", why);
			rc = -1;
		}
		mstat_reader_close(r);
	}
	return rc;
}

/* --pprof: the profile of the one process of -p, to a file. */
static int
write_pprof(const struct options *o)
{
	struct mstat_reader *r;
	struct mstat_profile prof;
	char why[256];
	int rc;

	if (mstat_discover_open_pid(o->pids.v[0], &o->namespaces, &r, why,
				    sizeof(why)) < 0) {
		fprintf(stderr, "mstat-top: %s\n", why);
		return 1;
	}
	rc = mstat_reader_profile(r, &prof);
	if (rc < 0) {
		fprintf(stderr, "mstat-top: %s\n", mstat_reader_error(r));
		mstat_reader_close(r);
		return 1;
	}
	struct mstat_symbols *sym = mstat_symbols_new(&prof);
	rc = mstat_pprof_write(&prof, sym, mstat_clock_wall_ns(), o->pprof, why,
			       sizeof(why));
	if (rc < 0)
		fprintf(stderr, "mstat-top: %s\n", why);
	else if (prof.samples == 0)
		fprintf(stderr, "mstat-top: pid %d has taken no samples yet%s\n",
			(int)o->pids.v[0],
			prof.sample_bytes ? "" : " (sampling is off)");
	mstat_symbols_free(sym);
	mstat_reader_profile_release(&prof);
	mstat_reader_close(r);
	return rc < 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct options o;
	struct mstat_core *core;
	struct recorder rec;
	char why[200];
	int rc;

	setlocale(LC_ALL, "");
	if ((rc = parse_options(&o, argc, argv)) != 0)
		return rc < 0 ? 2 : 0;
	if (o.sample_bytes != SAMPLE_UNASKED && request_sampling(&o) < 0)
		return 1;
	if (o.pprof)
		return write_pprof(&o);
	if (!o.batch && !o.gc && !terminal_drawable(why, sizeof(why))) {
		complain("%s: batch output instead", why);
		o.batch = true;
	}
	if (o.replay) {
		struct mstat_replay *r;
		if (o.batch)
			return run_batch_replay(&o);
		if (mstat_record_replay_open(&r, o.replay, why, sizeof(why)) < 0) {
			fprintf(stderr, "mstat-top: %s\n", why);
			return 1;
		}
		rc = run_interactive(NULL, &o, r);
		mstat_record_replay_close(r);
		return rc;
	}
	struct mstat_core_options to = {
		.pids = o.pids.v,
		.npids = o.pids.n,
		.namespaces = o.namespaces,
		.interval_ms = (unsigned)(o.delay_s * 1000),
		.wait_budget_us = MSTAT_WAIT_BUDGET_DEFAULT_US,
		.linger_ns = (uint64_t)(o.linger_s * 1e9),
		.grace = o.grace,
		.postmortem_dir = o.postmortem,
		.postmortem_bytes = o.postmortem_bytes,
		.memory_share = MSTAT_TOP_MEMORY_SHARE,
		/* Batch and --gc say why a segment was skipped on stderr; the
		 * interactive view on its status line. */
		.note = o.batch || o.gc ? note_stderr : NULL,
	};
	/* Interactive: the sampler thread records each tick as it ends
	 * (batch records in its own loop, with the times it prints). */
	if (!o.batch && !o.gc) {
		if (recorder_open(&rec, o.record) < 0)
			return 1;
		/* The sites view shows growth since each process's
		 * baseline. */
		to.site_baselines = true;
		if (rec.f) {
			to.after_tick = record_after_tick;
			to.after_tick_arg = &rec;
		}
	}
	if ((rc = mstat_core_new(&core, &to)) < 0) {
		fprintf(stderr, "mstat-top: %s\n", strerror(-rc));
		return 1;
	}
	if (!o.batch && !o.gc)
		rec.core = core;
	rcu_register_thread();
	if (o.gc) {
		mstat_core_gc(core);
		rc = 0;
	} else if (o.batch) {
		rc = run_batch(core, &o);
	} else {
		rc = run_interactive(core, &o, NULL);
	}
	mstat_core_free(core);
	if (!o.batch && !o.gc)
		recorder_close(&rec);
	rcu_unregister_thread();
	return rc;
}
