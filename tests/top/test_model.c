/* SPDX-License-Identifier: MIT */
/*
 * test_model.c - the observer's model and outputs, on made-up snapshots:
 * rates, history, sorting, filtering, lifecycle, and the exact bytes of
 * the table, JSON and OpenMetrics renderings.  Text a process or a file
 * name supplies is escaped in each of them, and in notes.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/columns.h"
#include "core/exposition.h"
#include "core/model.h"
#include "core/output.h"
#include "core/record.h"
#include "core/text.h"
#include "core/core.h"
#include "core/sampler.h" /* a core of its own notes only */
#include "core/units.h"

#define SEC UINT64_C(1000000000)

/* A snapshot with two classes used: (0,16] and (96,112]. */
static void
snap_fill(struct mstat_snapshot *s, uint64_t a16, uint64_t f16, uint64_t a112,
	  uint64_t f112, uint32_t threads, uint32_t state)
{
	memset(s, 0, sizeof(*s));
	s->state = state;
	s->threads = threads;
	s->class_count = 8;
	for (unsigned c = 0; c < 8; c++)
		s->class_max_size[c] = c * 16;
	s->class_max_size[7] = 112;
	s->classes[1] = (struct mstat_counts){ .alloc_count = a16,
		.alloc_bytes = a16 * 16, .free_count = f16, .free_bytes = f16 * 16 };
	s->classes[7] = (struct mstat_counts){ .alloc_count = a112,
		.alloc_bytes = a112 * 100, .free_count = f112,
		.free_bytes = f112 * 100 };
	for (unsigned c = 0; c < 8; c++) {
		s->total.alloc_count += s->classes[c].alloc_count;
		s->total.alloc_bytes += s->classes[c].alloc_bytes;
		s->total.free_count += s->classes[c].free_count;
		s->total.free_bytes += s->classes[c].free_bytes;
	}
	s->requested_bytes = s->total.alloc_bytes - a112;
}

#define CONTAINER "6f0a3b24e1c5d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4"

static struct mstat_model_input
input(const char *key, pid_t pid, const char *name, enum mstat_model_live l,
      uint64_t t_ns, const struct mstat_snapshot *s)
{
	return (struct mstat_model_input){ .key = key, .pid = pid, .name = name,
		.live = l, .err = "", .t_ns = t_ns, .snap = s };
}

static void
test_rates(void **state)
{
	struct mstat_model m;
	struct mstat_snapshot s;
	struct mstat_model_input in;
	(void)state;

	mstat_model_init(&m, 5 * SEC);
	snap_fill(&s, 100, 40, 0, 0, 2, MSTAT_RUNNING);
	in = input("a", 10, "alpha", MSTAT_LIVE_RUNNING, 1 * SEC, &s);
	assert_int_equal(mstat_model_update(&m, &in, 1, 1 * SEC), 0);
	assert_int_equal(m.n, 1);
	const struct mstat_model_row *r = mstat_model_find(&m, "a");
	assert_non_null(r);
	assert_false(r->have_rates); /* one snapshot: no rate yet */
	assert_int_equal(mstat_model_live_bytes(r), 60 * 16);
	assert_int_equal(mstat_model_live_objects(r), 60);

	/* Two seconds later: +200 allocs (+3200 B), +60 frees (+960 B) in
	 * class 16, and 10 allocations of 100 B in class 112. */
	snap_fill(&s, 300, 100, 10, 0, 3, MSTAT_RUNNING);
	in.t_ns = 3 * SEC;
	assert_int_equal(mstat_model_update(&m, &in, 1, 3 * SEC), 0);
	assert_true(r->have_rates);
	assert_float_equal(r->alloc_rate, 105.0, 1e-9);
	assert_float_equal(r->free_rate, 30.0, 1e-9);
	assert_float_equal(r->alloc_bytes_rate, (3200.0 + 1000.0) / 2, 1e-9);
	assert_float_equal(r->free_bytes_rate, 480.0, 1e-9);
	assert_float_equal(r->net_bytes_rate, (3200.0 + 1000.0 - 960.0) / 2, 1e-9);
	assert_float_equal(r->classes[1].alloc_rate, 100.0, 1e-9);
	assert_float_equal(r->classes[1].free_rate, 30.0, 1e-9);
	assert_float_equal(r->classes[1].net_bytes_rate, 1120.0, 1e-9);
	assert_float_equal(r->classes[7].alloc_rate, 5.0, 1e-9);
	assert_int_equal(r->classes[7].max_size, 112);
	assert_int_equal(r->threads, 3);
	assert_int_equal(r->history_len, 2);
	assert_int_equal(r->history[0], 60 * 16);
	assert_int_equal(r->history[1], 200 * 16 + 1000);

	/* The same snapshot again (the display refreshed between ticks):
	 * nothing moves, no history point. */
	assert_int_equal(mstat_model_update(&m, &in, 1, 4 * SEC), 0);
	assert_int_equal(r->history_len, 2);
	assert_float_equal(r->alloc_rate, 105.0, 1e-9);

	/* Frees outrun allocations: net growth is negative. */
	snap_fill(&s, 300, 300, 10, 10, 3, MSTAT_RUNNING);
	in.t_ns = 7 * SEC;
	assert_int_equal(mstat_model_update(&m, &in, 1, 7 * SEC), 0);
	assert_float_equal(r->net_bytes_rate, -(200.0 * 16 + 1000) / 4, 1e-9);
	assert_float_equal(r->alloc_rate, 0.0, 1e-9);
	mstat_model_fini(&m);
}

static void
test_history_is_bounded(void **state)
{
	struct mstat_model m;
	struct mstat_snapshot s;
	(void)state;

	mstat_model_init(&m, SEC);
	for (unsigned i = 1; i <= MSTAT_MODEL_HISTORY + 10; i++) {
		snap_fill(&s, i, 0, 0, 0, 1, MSTAT_RUNNING);
		struct mstat_model_input in =
			input("a", 1, "a", MSTAT_LIVE_RUNNING, i * SEC, &s);
		assert_int_equal(mstat_model_update(&m, &in, 1, i * SEC), 0);
	}
	const struct mstat_model_row *r = m.rows[0];
	assert_int_equal(r->history_len, MSTAT_MODEL_HISTORY);
	assert_int_equal(r->history[0], 11 * 16);  /* oldest kept */
	assert_int_equal(r->history[MSTAT_MODEL_HISTORY - 1],
			 (MSTAT_MODEL_HISTORY + 10) * 16);
	mstat_model_fini(&m);
}

/* Three processes; returns the pids in view order as a string. */
static const char *
order(struct mstat_model *m, const char *filter, enum mstat_model_sort k,
      bool reverse)
{
	static char buf[64];
	const struct mstat_model_row *rows[8];
	size_t n = mstat_columns_view(m, filter, k, reverse, rows);

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%d",
			 i ? " " : "", (int)rows[i]->pid);
	return buf;
}

static void
three(struct mstat_model *m)
{
	static struct mstat_snapshot s[3][2];
	struct mstat_model_input in[3];

	mstat_model_init(m, 5 * SEC);
	/* pid 30 "Zeta": most live bytes, fewest threads, growing fastest;
	 * pid 10 "alpha": most objects, fastest allocating;
	 * pid 20 "beta": stalled, most threads, shrinking. */
	snap_fill(&s[0][0], 0, 0, 0, 0, 1, MSTAT_RUNNING);
	snap_fill(&s[0][1], 0, 0, 50, 0, 1, MSTAT_RUNNING);     /* +5000 B */
	snap_fill(&s[1][0], 0, 0, 0, 0, 2, MSTAT_RUNNING);
	snap_fill(&s[1][1], 1000, 900, 0, 0, 2, MSTAT_RUNNING); /* +1600 B */
	snap_fill(&s[2][0], 100, 0, 0, 0, 5, MSTAT_RUNNING);
	snap_fill(&s[2][1], 140, 100, 0, 0, 5, MSTAT_RUNNING);  /* -960 B */
	for (int t = 0; t < 2; t++) {
		in[0] = input("z", 30, "Zeta", MSTAT_LIVE_RUNNING, (t + 1) * SEC, &s[0][t]);
		in[1] = input("a", 10, "alpha", MSTAT_LIVE_RUNNING, (t + 1) * SEC, &s[1][t]);
		in[2] = input("b", 20, "beta", t ? MSTAT_LIVE_STALLED : MSTAT_LIVE_RUNNING,
			      (t + 1) * SEC, &s[2][t]);
		assert_int_equal(mstat_model_update(m, in, 3, (t + 1) * SEC), 0);
	}
}

static void
test_sorting(void **state)
{
	struct mstat_model m;
	(void)state;

	three(&m);
	assert_string_equal(order(&m, "", MSTAT_SORT_PID, false), "10 20 30");
	assert_string_equal(order(&m, "", MSTAT_SORT_PID, true), "30 20 10");
	assert_string_equal(order(&m, "", MSTAT_SORT_NAME, false), "30 10 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_THREADS, false), "20 10 30");
	assert_string_equal(order(&m, "", MSTAT_SORT_LIVE_BYTES, false), "30 10 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_LIVE_OBJECTS, false), "10 30 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_ALLOC_RATE, false), "10 30 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_FREE_RATE, false), "10 20 30");
	assert_string_equal(order(&m, "", MSTAT_SORT_NET_RATE, false), "30 10 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_STATE, false), "10 30 20");
	assert_string_equal(order(&m, "", MSTAT_SORT_STATE, true), "20 30 10");

	assert_int_equal(mstat_columns_parse_sort("live-bytes"), MSTAT_SORT_LIVE_BYTES);
	assert_int_equal(mstat_columns_parse_sort("NET/s"), MSTAT_SORT_NET_RATE);
	assert_int_equal(mstat_columns_parse_sort("live_objs"), MSTAT_SORT_LIVE_OBJECTS);
	assert_int_equal(mstat_columns_parse_sort("live"), MSTAT_SORT_LIVE_BYTES);
	assert_int_equal(mstat_columns_parse_sort("GROWTH/S"), MSTAT_SORT_GROWTH_RATE);
	assert_int_equal(mstat_columns_parse_sort("liv"), -1);
	mstat_model_fini(&m);
}

static void
test_filtering(void **state)
{
	struct mstat_model m;
	(void)state;

	three(&m);
	assert_string_equal(order(&m, "ETA", MSTAT_SORT_PID, false), "20 30");
	assert_string_equal(order(&m, "alp", MSTAT_SORT_PID, false), "10");
	assert_string_equal(order(&m, "20", MSTAT_SORT_PID, false), "20");
	assert_string_equal(order(&m, "2", MSTAT_SORT_PID, false), ""); /* pid: whole */
	assert_string_equal(order(&m, "nothing", MSTAT_SORT_PID, false), "");
	assert_string_equal(order(&m, NULL, MSTAT_SORT_PID, false), "10 20 30");

	struct mstat_model_totals t;
	const struct mstat_model_row *rows[3];
	size_t n = mstat_columns_view(&m, "", MSTAT_SORT_PID, false, rows);
	mstat_model_totals(rows, n, &t);
	assert_int_equal(t.processes, 3);
	assert_int_equal(t.running, 3);
	assert_int_equal(t.threads, 8);
	assert_int_equal(t.live_bytes, 5000 + 1600 + 640);
	assert_float_equal(t.net_bytes_rate, 5000.0 + 1600.0 - 960.0, 1e-9);
	mstat_model_fini(&m);
}

static void
test_lifecycle(void **state)
{
	struct mstat_model m;
	struct mstat_snapshot s1, s2;
	struct mstat_model_input in[2];
	(void)state;

	mstat_model_init(&m, 5 * SEC);
	snap_fill(&s1, 10, 0, 0, 0, 1, MSTAT_RUNNING);
	snap_fill(&s2, 20, 5, 0, 0, 1, MSTAT_RUNNING);
	in[0] = input("run", 1, "runner", MSTAT_LIVE_RUNNING, 1 * SEC, &s1);
	in[1] = input("exit", 2, "leaver", MSTAT_LIVE_RUNNING, 1 * SEC, &s1);
	assert_int_equal(mstat_model_update(&m, in, 2, 1 * SEC), 0);

	/* "exit" exits: its final totals stay, its rates and threads drop. */
	snap_fill(&s2, 20, 5, 0, 0, 0, MSTAT_EXITING);
	in[1] = input("exit", 2, "leaver", MSTAT_LIVE_EXITED, 2 * SEC, &s2);
	assert_int_equal(mstat_model_update(&m, in, 2, 2 * SEC), 0);
	const struct mstat_model_row *e = mstat_model_find(&m, "exit");
	assert_non_null(e);
	assert_int_equal(e->live, MSTAT_LIVE_EXITED);
	assert_int_equal(mstat_model_live_bytes(e), 15 * 16); /* leaked */
	assert_float_equal(e->alloc_rate, 0.0, 0);
	assert_int_equal(e->threads, 0);

	/* Its target is detached; the row lingers 5 s from when it was
	 * first seen exited, with its totals. */
	assert_int_equal(mstat_model_update(&m, in, 1, 6 * SEC), 0);
	assert_non_null(mstat_model_find(&m, "exit"));
	assert_int_equal(mstat_model_live_bytes(mstat_model_find(&m, "exit")), 240);
	assert_int_equal(mstat_model_update(&m, in, 1, 7 * SEC - 1), 0);
	assert_non_null(mstat_model_find(&m, "exit"));
	assert_int_equal(mstat_model_update(&m, in, 1, 7 * SEC), 0);
	assert_null(mstat_model_find(&m, "exit"));

	/* A running target that disappears (dropped as corrupt) goes at
	 * once; a killed one lingers as an exited one does. */
	in[0].live = MSTAT_LIVE_KILLED;
	assert_int_equal(mstat_model_update(&m, in, 1, 8 * SEC), 0);
	assert_non_null(mstat_model_find(&m, "run"));
	assert_int_equal(mstat_model_update(&m, in, 0, 13 * SEC - 1), 0);
	assert_non_null(mstat_model_find(&m, "run"));
	assert_int_equal(mstat_model_update(&m, in, 0, 13 * SEC), 0);
	assert_int_equal(m.n, 0);

	/* A target with no snapshot yet (its first read stalled) has a row
	 * with a reason and no counters. */
	in[0] = input("new", 3, "fresh", MSTAT_LIVE_STALLED, 0, NULL);
	in[0].err = "pid 3: slot 1 (tid 4) stayed inside an update";
	assert_int_equal(mstat_model_update(&m, in, 1, 61 * SEC), 0);
	e = mstat_model_find(&m, "new");
	assert_false(e->have_snap);
	assert_string_equal(e->err, in[0].err);
	mstat_model_fini(&m);

	/* Lingering 0 (mstat-exporter's): a gone row stays exactly while
	 * its input is given (the core keeps a killed target while its
	 * segment is kept), and goes with it. */
	mstat_model_init(&m, 0);
	in[0] = input("kill", 4, "victim", MSTAT_LIVE_KILLED, 1 * SEC, &s1);
	assert_int_equal(mstat_model_update(&m, in, 1, 1 * SEC), 0);
	assert_int_equal(mstat_model_update(&m, in, 1, 300 * SEC), 0);
	assert_non_null(mstat_model_find(&m, "kill"));
	assert_int_equal(mstat_model_update(&m, in, 0, 301 * SEC), 0);
	assert_int_equal(m.n, 0);
	mstat_model_fini(&m);
}

/*
 * A name as hostile as a process can write (MSTAT_NAME, or its header
 * directly): a screen clear, BEL, CSI as C1 (C2 9B), a byte that is not
 * UTF-8, DEL, a line feed, a quote, a backslash, an "é" that must stay,
 * an overlong CSI (E0 82 9B) and a surrogate (ED A0 80).  Split into
 * literals so that no hex escape runs into the next character.
 */
#define HOSTILE "we\x1b[2J" "\a" "\xc2\x9b" "1" "\xff" "\x7f" "\n" "\"" "\\" \
	"\xc3\xa9" "\xe0\x82\x9b" "\xed\xa0\x80" "z"
/* As terminals and logs get it: one '?' per control character and per
 * byte that is not UTF-8. */
#define HOSTILE_PLAIN "we?[2J??1???\"\\\xc3\xa9??????z"
/* Inside a JSON string or an OpenMetrics label value. */
#define HOSTILE_QUOTED "we?[2J??1???\\\"\\\\\xc3\xa9??????z"
/* A note about a file planted in /dev/shm. */
#define PLANTED "mstat.\x1b[31m.1"

/* Whether s holds only what a terminal shows: line feeds ending lines,
 * printable ASCII, and well-formed UTF-8 that is not C1.  Decoded here
 * afresh, not with text.c's decoder. */
static bool
clean(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		if (*s == '\n' || (*s >= 0x20 && *s < 0x7f)) {
			s++;
			continue;
		}
		unsigned n = *s >= 0xf0 ? 4 : *s >= 0xe0 ? 3 : *s >= 0xc0 ? 2 : 0;
		if (n == 0 || *s > 0xf4)
			return false;
		uint32_t cp = *s & (0x7f >> n);
		for (unsigned i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (cp < least[n] || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
			return false;
		s += n;
	}
	return true;
}

static void
test_text_rules(void **state)
{
	char b[128];
	(void)state;

	assert_false(clean(HOSTILE));
	assert_int_equal(mstat_text_escape(b, sizeof(b), HOSTILE, MSTAT_TEXT_PLAIN),
			 strlen(HOSTILE_PLAIN));
	assert_string_equal(b, HOSTILE_PLAIN);
	assert_true(clean(b));
	mstat_text_escape(b, sizeof(b), HOSTILE, MSTAT_TEXT_QUOTED);
	assert_string_equal(b, HOSTILE_QUOTED);
	assert_true(clean(b));

	/* Plain text stays as it is, in any script; so does what the plain
	 * rule made (it is idempotent). */
	mstat_text_escape(b, sizeof(b), "api-\xe6\x97\xa5\xf0\x9f\x90\x8d ok",
			  MSTAT_TEXT_PLAIN);
	assert_string_equal(b, "api-\xe6\x97\xa5\xf0\x9f\x90\x8d ok");
	mstat_text_escape(b, sizeof(b), HOSTILE_PLAIN, MSTAT_TEXT_PLAIN);
	assert_string_equal(b, HOSTILE_PLAIN);

	/* A character cut by the end of the text, or one above U+10FFFF, is
	 * not UTF-8; U+00A0, just past C1, is printable. */
	mstat_text_escape(b, sizeof(b), "x\xe6\x97", MSTAT_TEXT_PLAIN);
	assert_string_equal(b, "x??");
	mstat_text_escape(b, sizeof(b), "\xf4\x90\x80\x80|\xc2\x9f|\xc2\xa0",
			  MSTAT_TEXT_PLAIN);
	assert_string_equal(b, "????|?|\xc2\xa0");

	/* Cut short, never inside a character or an escape: with room for
	 * 15 bytes, 14 are written, as "é" needs two bytes and so does the
	 * escape of '\\'. */
	assert_int_equal(mstat_text_escape(b, 16, HOSTILE, MSTAT_TEXT_PLAIN), 14);
	assert_string_equal(b, "we?[2J??1???\"\\");
	assert_int_equal(mstat_text_escape(b, 16, HOSTILE, MSTAT_TEXT_QUOTED), 14);
	assert_string_equal(b, "we?[2J??1???\\\"");
	assert_int_equal(mstat_text_escape(b, 1, HOSTILE, MSTAT_TEXT_PLAIN), 0);
	assert_string_equal(b, "");
	assert_int_equal(mstat_text_escape(b, 0, HOSTILE, MSTAT_TEXT_PLAIN), 0);

	/* The stream form writes the same bytes. */
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(mstat_text_put(f, HOSTILE, MSTAT_TEXT_QUOTED), 0);
	fclose(f);
	assert_string_equal(out, HOSTILE_QUOTED);
	free(out);
}

static void
keep_note(void *arg, const char *line)
{
	snprintf(arg, 256, "%s", line);
}

/* A note is escaped whole, whatever its caller passed. */
static void
test_note_escaped(void **state)
{
	struct mstat_core *core = calloc(1, sizeof(*core));
	char got[256];
	(void)state;

	assert_non_null(core);
	core->opt.note = keep_note;
	core->opt.note_arg = got;
	mstat_core_note(core, "skipped %s: not an mstat segment name", PLANTED);
	assert_string_equal(got, "skipped mstat.?[31m.1: not an mstat segment name");
	mstat_core_note(core, "%s\n%s", HOSTILE, "\x1b]0;title\x07");
	assert_string_equal(got, HOSTILE_PLAIN "??]0;title?");
	assert_true(clean(got));
	free(core);
}

/* Renders into a string with open_memstream. */
static char *
render(int fmt, struct mstat_model *m, enum mstat_model_sort k)
{
	const struct mstat_model_row *rows[8];
	size_t n = mstat_columns_view(m, "", k, false, rows);
	struct mstat_output_tick t = { .seq = 7, .time_ms = 1700000000123u, .interval_s = 1.0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(mstat_output_write(f, fmt, &t, rows, n), 0);
	fclose(f);
	return buf;
}

/* Resident memory whose parts add up to its rss. */
static const struct mstat_memory MEMORY = {
	.rss = 2000000,
	.part = {
		[MSTAT_MEMORY_LIVE] = 280,
		[MSTAT_MEMORY_ALLOCATOR_FREE] = 130000,
		[MSTAT_MEMORY_ALLOCATOR_OVERHEAD] = 56,
		[MSTAT_MEMORY_NOT_HEAP] = 119664,
		[MSTAT_MEMORY_FILE] = 1700000,
		[MSTAT_MEMORY_SHMEM] = 0,
		[MSTAT_MEMORY_LIBRARY] = 50000,
	},
	.allocator = MSTAT_ALLOCATOR_GLIBC,
	.source = MSTAT_MEMORY_GLIBC,
	.time_ns = 1700000001500000000u,
};

/* Two rows: one with rates, its memory and a hostile name, one whose
 * first read stalled, with an error naming a file planted in /dev/shm. */
static void
two(struct mstat_model *m)
{
	static struct mstat_snapshot s[2];
	struct mstat_model_input in[2];

	mstat_model_init(m, 5 * SEC);
	snap_fill(&s[0], 4, 1, 0, 0, 2, MSTAT_RUNNING);
	snap_fill(&s[1], 6, 1, 2, 0, 2, MSTAT_RUNNING);
	s[1].class_max_size[1] = UINT64_MAX; /* as the huge class is */
	in[0] = input("q", 42, HOSTILE, MSTAT_LIVE_RUNNING, 1 * SEC, &s[0]);
	in[0].start_ns = 1699999990250000000u;
	in[1] = input("s", 7, "sleepy", MSTAT_LIVE_STALLED, 0, NULL);
	in[1].err = PLANTED ": is not initialised yet";
	in[0].writer_mode = 2;
	in[1].writer_mode = 1;
	in[0].layout_major = in[1].layout_major = 1;
	/* One in a container of a pod, one a service of the host. */
	in[0].nspid = 3;
	in[0].container_id = CONTAINER;
	in[0].pod_uid = "90d81341-92de-11e7-8cf2-507b9d4141fa";
	in[0].qos_class = "Burstable";
	in[1].nspid = 7;
	in[1].systemd_unit = "sleepy.service";
	/* One attached by mstat-attach, its blocks made before going. */
	in[0].attached_ns = 1699999995500000000u;
	in[0].prior = (struct mstat_prior){ 3, 120, 1, 40 };
	in[0].memory = &MEMORY;
	assert_int_equal(mstat_model_update(m, in, 2, 1 * SEC), 0);
	in[0].t_ns = 3 * SEC;
	in[0].snap = &s[1];
	assert_int_equal(mstat_model_update(m, in, 2, 3 * SEC), 0);
}

static void
test_json(void **state)
{
	struct mstat_model m;
	(void)state;

	two(&m);
	char *out = render(MSTAT_FORMAT_JSON, &m, MSTAT_SORT_PID);
	assert_true(clean(out));
	assert_string_equal(out,
		"{\"version\":1,\"tick\":7,\"time_ms\":1700000000123,"
		"\"interval_s\":1.000,\"processes\":["
		"{\"pid\":7,\"name\":\"sleepy\",\"state\":\"stalled\","
		"\"error\":\"mstat.?[31m.1: is not initialised yet\",\"threads\":null,"
		"\"alloc_count\":null,\"alloc_bytes\":null,\"free_count\":null,"
		"\"free_bytes\":null,\"requested_bytes\":null,\"live_objects\":null,"
		"\"live_bytes\":null,"
		"\"alloc_rate\":null,\"free_rate\":null,\"alloc_bytes_rate\":null,"
		"\"free_bytes_rate\":null,\"net_bytes_rate\":null,\"classes\":[],\"end_time_s\":null,"
		"\"start_time_s\":null,\"growth_bytes\":null,\"growth_objects\":null,"
		"\"growth_bytes_per_s\":null,\"nspid\":7,\"container_id\":null,"
		"\"pod_uid\":null,\"qos_class\":null,"
		"\"systemd_unit\":\"sleepy.service\",\"attached_time_s\":null,"
		"\"prior_frees\":null,\"prior_free_bytes\":null,"
		"\"prior_reallocs\":null,\"prior_realloc_bytes\":null,\"memory\":null,"
		"\"allocator\":null,\"memory_source\":null,"
		"\"memory_time_s\":null,\"allocator_time_s\":null},"
		"{\"pid\":42,\"name\":\"" HOSTILE_QUOTED "\",\"state\":\"running\","
		"\"error\":null,\"threads\":2,\"alloc_count\":8,"
		"\"alloc_bytes\":296,\"free_count\":1,\"free_bytes\":16,"
		"\"requested_bytes\":294,\"live_objects\":7,\"live_bytes\":280,"
		"\"alloc_rate\":2.000,\"free_rate\":0.000,"
		"\"alloc_bytes_rate\":116.000,\"free_bytes_rate\":0.000,"
		"\"net_bytes_rate\":116.000,\"classes\":["
		"{\"size\":null,\"alloc_count\":6,\"alloc_bytes\":96,"
		"\"free_count\":1,\"free_bytes\":16,\"growth_bytes\":32,"
		"\"growth_objects\":2},"
		"{\"size\":112,\"alloc_count\":2,\"alloc_bytes\":200,"
		"\"free_count\":0,\"free_bytes\":0,\"growth_bytes\":200,"
		"\"growth_objects\":2}],\"end_time_s\":null,"
		"\"start_time_s\":1699999990.250,\"growth_bytes\":232,"
		"\"growth_objects\":4,\"growth_bytes_per_s\":116.000,"
		"\"nspid\":3,\"container_id\":\"" CONTAINER "\","
		"\"pod_uid\":\"90d81341-92de-11e7-8cf2-507b9d4141fa\","
		"\"qos_class\":\"Burstable\",\"systemd_unit\":null,"
		"\"attached_time_s\":1699999995.500,\"prior_frees\":3,"
		"\"prior_free_bytes\":120,\"prior_reallocs\":1,"
		"\"prior_realloc_bytes\":40,"
		"\"memory\":{\"rss\":2000000,\"live\":280,"
		"\"allocator_free\":130000,\"allocator_overhead\":56,"
		"\"not_heap\":119664,\"file\":1700000,\"shmem\":0,"
		"\"library\":50000,\"live_not_resident\":0},"
		"\"allocator\":\"glibc\",\"memory_source\":\"glibc\","
		"\"memory_time_s\":1700000001.500,\"allocator_time_s\":null}]}\n");
	free(out);
	mstat_model_fini(&m);
}

/* mstat_exposition_process_labels(): "name=value," each. */
static void
add_label(void *arg, const char *key, const char *value)
{
	char *buf = arg;
	size_t n = strlen(buf);

	snprintf(buf + n, 512 - n, "%s=%s,", key, value);
}

/* -F finds a process by its container, pod or unit; its labels are
 * those it has, in their order. */
static void
test_where(void **state)
{
	struct mstat_model m;
	char l[512];
	(void)state;

	two(&m);
	const struct mstat_model_row *c = mstat_model_find(&m, "q");
	const struct mstat_model_row *u = mstat_model_find(&m, "s");
	assert_non_null(c);
	assert_non_null(u);
	assert_true(mstat_model_match(c, "6F0A3B24E1C5"));
	assert_false(mstat_model_match(u, "6f0a3b24e1c5"));
	assert_true(mstat_model_match(c, "90d81341-92de"));
	assert_true(mstat_model_match(u, "sleepy.service"));
	assert_false(mstat_model_match(c, "sleepy.service"));
	l[0] = '\0';
	mstat_exposition_process_labels(c, add_label, l);
	assert_string_equal(l, "pid=42,name=" HOSTILE ",container_id=" CONTAINER
			    ",pod_uid=90d81341-92de-11e7-8cf2-507b9d4141fa,"
			    "qos_class=Burstable,");
	l[0] = '\0';
	mstat_exposition_process_labels(u, add_label, l);
	assert_string_equal(l, "pid=7,name=sleepy,systemd_unit=sleepy.service,");
	mstat_model_fini(&m);
}

/* The per-process families common to both formats, after each
 * family's declaration (HELP, TYPE, UNIT) as `decl` writes it. */
#define L42 "{pid=\"42\",name=\"" HOSTILE_QUOTED "\",container_id=\"" \
	CONTAINER "\",pod_uid=\"90d81341-92de-11e7-8cf2-507b9d4141fa\"," \
	"qos_class=\"Burstable\""
#define L7 "{pid=\"7\",name=\"sleepy\",systemd_unit=\"sleepy.service\""
#define EXPOSITION(decl)                                                       \
	decl("mstat_allocs", counter, "_total", NONE, "allocations made")     \
	"mstat_allocs_total" L42 "} 8\n"                                        \
	decl("mstat_alloc_bytes", counter, "_total", bytes,                 \
	     "bytes allocated (usable size)")                                  \
	"mstat_alloc_bytes_total" L42 "} 296\n"                                 \
	decl("mstat_frees", counter, "_total", NONE, "allocations freed")     \
	"mstat_frees_total" L42 "} 1\n"                                         \
	decl("mstat_free_bytes", counter, "_total", bytes,                  \
	     "bytes freed (usable size)")                                      \
	"mstat_free_bytes_total" L42 "} 16\n"                                   \
	decl("mstat_requested_bytes", counter, "_total", bytes,             \
	     "bytes requested by callers")                                     \
	"mstat_requested_bytes_total" L42 "} 294\n"                             \
	decl("mstat_class_allocs", counter, "_total", NONE,                   \
	     "allocations made, per size class (size: its largest size)")      \
	"mstat_class_allocs_total" L42 ",size=\"+Inf\"} 6\n"                    \
	"mstat_class_allocs_total" L42 ",size=\"112\"} 2\n"                     \
	decl("mstat_class_alloc_bytes", counter, "_total", bytes,           \
	     "bytes allocated (usable size), per size class (size: its "       \
	     "largest size)")                                                  \
	"mstat_class_alloc_bytes_total" L42 ",size=\"+Inf\"} 96\n"              \
	"mstat_class_alloc_bytes_total" L42 ",size=\"112\"} 200\n"              \
	decl("mstat_class_frees", counter, "_total", NONE,                    \
	     "allocations freed, per size class (size: its largest size)")     \
	"mstat_class_frees_total" L42 ",size=\"+Inf\"} 1\n"                     \
	"mstat_class_frees_total" L42 ",size=\"112\"} 0\n"                      \
	decl("mstat_class_free_bytes", counter, "_total", bytes,            \
	     "bytes freed (usable size), per size class (size: its largest "   \
	     "size)")                                                          \
	"mstat_class_free_bytes_total" L42 ",size=\"+Inf\"} 16\n"               \
	"mstat_class_free_bytes_total" L42 ",size=\"112\"} 0\n"                 \
	decl("mstat_live_bytes", gauge, "", bytes,                          \
	     "bytes allocated and not yet freed")                              \
	"mstat_live_bytes" L42 "} 280\n"                                        \
	decl("mstat_live_objects", gauge, "", NONE,                           \
	     "allocations not yet freed")                                      \
	"mstat_live_objects" L42 "} 7\n"                                        \
	decl("mstat_threads", gauge, "", NONE,                                \
	     "threads counting into a slot of their own")                      \
	"mstat_threads" L42 "} 2\n"                                             \
	decl("mstat_running", gauge, "", NONE,                                \
	     "1 while the process runs, 0 once it exited or died")             \
	"mstat_running" L7 "} 1\n"                                              \
	"mstat_running" L42 "} 1\n"                                             \
	decl("mstat_process_start_time_seconds", gauge, "", seconds,        \
	     "when the process started, since the Unix epoch")                 \
	"mstat_process_start_time_seconds" L42 "} 1699999990.25\n"              \
	decl("mstat_process", info, "_info", NONE,                            \
	     "the process's writer mode and segment layout version")           \
	"mstat_process_info" L7 ",mode=\"fenced\",layout=\"1.0\"} 1\n"          \
	"mstat_process_info" L42 ",mode=\"membarrier\",layout=\"1.0\"} 1\n"        \
	decl("mstat_resident_memory_bytes", gauge, "", bytes,               \
	     "resident memory (VmRSS)")                                        \
	"mstat_resident_memory_bytes" L42 "} 2000000\n"                         \
	decl("mstat_memory_bytes", gauge, "", bytes,                        \
	     "resident memory by part (live, allocator_free, "                 \
	     "allocator_overhead, not_heap, file, shmem, library): the parts " \
	     "add up to mstat_resident_memory_bytes")                          \
	"mstat_memory_bytes" L42 ",part=\"live\"} 280\n"                       \
	"mstat_memory_bytes" L42 ",part=\"allocator_free\"} 130000\n"          \
	"mstat_memory_bytes" L42 ",part=\"allocator_overhead\"} 56\n"          \
	"mstat_memory_bytes" L42 ",part=\"not_heap\"} 119664\n"                \
	"mstat_memory_bytes" L42 ",part=\"file\"} 1700000\n"                   \
	"mstat_memory_bytes" L42 ",part=\"shmem\"} 0\n"                        \
	"mstat_memory_bytes" L42 ",part=\"library\"} 50000\n"                 \
	decl("mstat_killed", info, "_info", NONE, KILLED_HELP)               \
	decl("mstat_attached_time_seconds", gauge, "", seconds,             \
	     "when mstat-attach made the process count, since the Unix "       \
	     "epoch: its counts are of what it did since")                     \
	"mstat_attached_time_seconds" L42 "} 1699999995.50\n"                  \
	decl("mstat_prior_frees", counter, "_total", NONE,                    \
	     "frees of blocks made before the attach")                         \
	"mstat_prior_frees_total" L42 "} 3\n"                                  \
	decl("mstat_prior_free_bytes", counter, "_total", bytes,            \
	     "their bytes (usable size)")                                      \
	"mstat_prior_free_bytes_total" L42 "} 120\n"                           \
	decl("mstat_prior_reallocs", counter, "_total", NONE,                 \
	     "reallocs of blocks made before the attach")                      \
	"mstat_prior_reallocs_total" L42 "} 1\n"                               \
	decl("mstat_prior_realloc_bytes", counter, "_total", bytes,         \
	     "the old blocks' bytes (usable size)")                            \
	"mstat_prior_realloc_bytes_total" L42 "} 40\n"
#define KILLED_HELP                                                            \
	"the process was killed by a signal: how (killed, or oomkill), and "    \
	"its post-mortem profile where one was written"

/* OpenMetrics: the family is named without its samples' suffix, and
 * has a unit. */
#define OM_DECL(name, type, sfx, unit, help)                                   \
	"# HELP " name " " help "\n# TYPE " name " " #type "\n"                  \
	OM_UNIT(name, unit)
#define OM_UNIT(name, unit) OM_UNIT_##unit(name)
#define OM_UNIT_NONE(name) ""
#define OM_UNIT_bytes(name) "# UNIT " name " bytes\n"
#define OM_UNIT_seconds(name) "# UNIT " name " seconds\n"

static void
test_openmetrics(void **state)
{
	struct mstat_model m;
	(void)state;

	two(&m);
	char *out = render(MSTAT_FORMAT_OPENMETRICS, &m, MSTAT_SORT_PID);
	assert_true(clean(out));
	assert_string_equal(out, EXPOSITION(OM_DECL) "# EOF\n");
	free(out);
	mstat_model_fini(&m);
}

/* Text 0.0.4: the family is named as its samples are (counters with
 * _total), an info is a gauge, and there are no units and no # EOF. */
#define TEXT_DECL(name, type, sfx, unit, help)                                 \
	"# HELP " name sfx " " help "\n# TYPE " name sfx " " TEXT_TYPE_##type "\n"
#define TEXT_TYPE_counter "counter"
#define TEXT_TYPE_gauge "gauge"
#define TEXT_TYPE_info "gauge"

static void
test_prometheus_text(void **state)
{
	struct mstat_model m;
	(void)state;

	two(&m);
	char *out = render(MSTAT_FORMAT_PROMETHEUS, &m, MSTAT_SORT_PID);
	assert_true(clean(out));
	assert_string_equal(out, EXPOSITION(TEXT_DECL));
	free(out);
	mstat_model_fini(&m);
}

/* A killed process has an mstat_killed sample saying how it died, and
 * naming its post-mortem profile where one was written (the path, its
 * characters escaped as label values are); exited and running ones have
 * none. */
static void
test_killed(void **state)
{
	static struct mstat_snapshot s;
	struct mstat_model m;
	struct mstat_model_input in[4];
	(void)state;

	mstat_model_init(&m, 5 * SEC);
	snap_fill(&s, 4, 1, 0, 0, 1, MSTAT_KILLED);
	in[0] = input("a", 11, "api", MSTAT_LIVE_OOM, 1 * SEC, &s);
	in[0].postmortem = "/var/tmp/mstat \"pm\"/api-11-20231114T221320Z.pb.gz";
	in[1] = input("b", 12, "batch", MSTAT_LIVE_KILLED, 1 * SEC, &s);
	in[2] = input("c", 13, "cron", MSTAT_LIVE_EXITED, 1 * SEC, &s);
	in[3] = input("d", 14, "db", MSTAT_LIVE_RUNNING, 1 * SEC, &s);
	assert_int_equal(mstat_model_update(&m, in, 4, 1 * SEC), 0);
	static const char want[] =
		"mstat_killed_info{pid=\"11\",name=\"api\",how=\"oomkill\","
		"postmortem=\"/var/tmp/mstat \\\"pm\\\"/"
		"api-11-20231114T221320Z.pb.gz\"} 1\n"
		"mstat_killed_info{pid=\"12\",name=\"batch\",how=\"killed\"} 1\n";
	static const int formats[] = { MSTAT_FORMAT_OPENMETRICS,
				       MSTAT_FORMAT_PROMETHEUS };
	for (size_t i = 0; i < 2; i++) {
		char *out = render(formats[i], &m, MSTAT_SORT_PID);
		const char *k = strstr(out, "# TYPE mstat_killed");
		assert_non_null(k);
		k = strchr(k, '\n') + 1;
		assert_memory_equal(k, want, sizeof(want) - 1);
		free(out);
	}
	mstat_model_fini(&m);
}

static void
test_table(void **state)
{
	struct mstat_model m;
	(void)state;

	two(&m);
	char *out = render(MSTAT_FORMAT_TABLE, &m, MSTAT_SORT_LIVE_BYTES);
	assert_true(clean(out));
	assert_string_equal(out,
		"tick 7 at 2023-11-14T22:13:20Z, 2 processes, live 280B, "
		"allocs 2/s, frees 0/s, net +116B/s, growth +232B, +116B/s\n"
		"    PID NAME                 WHERE           AGE  THR     LIVE"
		"   OBJS  ALLOC/s   FREE/s      NET/s    GROWTH   +OBJS   GROWTH/s "
		"     RSS FREE% STATE\n"
		/* The name, cut to 20 characters (not bytes), ends in an
		 * ellipsis; so does a unit longer than WHERE. */
		"     42 we?[2J??1???\"\\\xc3\xa9????\xe2\x80\xa6 6f0a3b24e1c5"
		"     9s    2     280B      7"
		"      2/s      0/s    +116B/s     +232B      +4    +116B/s"
		"  1.91MiB  6.5% running\n"
		"      7 sleepy               sleepy.serv\xe2\x80\xa6"
		"      -    -        -      -"
		"        -        -          -         -       -          -"
		"        -     - stalled: mstat.?[31m.1: is not initialised yet\n\n");
	free(out);
	mstat_model_fini(&m);
}

/* NAME cut to a column: the program's name stays readable before its
 * [comm], and a cut ends in an ellipsis; numbers are never cut. */
static void
test_name_cells(void **state)
{
	struct mstat_model_row *r = calloc(1, sizeof(*r));
	char b[256];
	(void)state;

	assert_non_null(r);
	snprintf(r->name, sizeof(r->name), "demo-churning");
	snprintf(r->comm, sizeof(r->comm), "mstat-demo-work");
	snprintf(r->exe, sizeof(r->exe), "mstat-demo-workload");
#define CELL(k, w, want) assert_string_equal( \
	mstat_columns_cell(k, r, 0, w, "~", b, sizeof(b)), want)
	CELL(MSTAT_SORT_NAME, 0, "demo-churning [mstat-demo-work]");
	CELL(MSTAT_SORT_NAME, 32, "demo-churning [mstat-demo-work] ");
	CELL(MSTAT_SORT_NAME, 31, "demo-churning [mstat-demo-work]");
	CELL(MSTAT_SORT_NAME, 30, "demo-churning [mstat-demo-wo~]");
	CELL(MSTAT_SORT_NAME, 20, "demo-churning [mst~]");
	CELL(MSTAT_SORT_NAME, 17, "demo-churning [~]");
	CELL(MSTAT_SORT_NAME, 16, "demo-churning   ");
	CELL(MSTAT_SORT_NAME, 13, "demo-churning");
	CELL(MSTAT_SORT_NAME, 8, "demo-ch~");
	/* Characters, not bytes: "é" is one. */
	snprintf(r->name, sizeof(r->name), "d\xc3\xa9mo-churning");
	CELL(MSTAT_SORT_NAME, 20, "d\xc3\xa9mo-churning [mst~]");
	CELL(MSTAT_SORT_NAME, 4, "d\xc3\xa9m~");
	/* A name its comm begins: no brackets. */
	snprintf(r->comm, sizeof(r->comm), "d\xc3\xa9mo-chur");
	CELL(MSTAT_SORT_NAME, 10, "d\xc3\xa9mo-chur~");
	/* Numbers to the right, whole, even past their column. */
	r->pid = 1234567;
	CELL(MSTAT_SORT_PID, 9, "  1234567");
	CELL(MSTAT_SORT_PID, 3, "1234567");
	CELL(MSTAT_SORT_STATE, 9, "running  ");
#undef CELL
	free(r);
}

/* On a narrow screen PID, NAME and STATE stay (a killed row must not
 * read as a running one), and the sorted column; the rest give way, and
 * then NAME narrows. */
static void
test_narrow_columns(void **state)
{
	bool shown[MSTAT_SORT_COUNT];
	(void)state;

	struct {
		int width;
		enum mstat_model_sort sort;
		int name;
		const char *titles;
	} want[] = {
		{ 39, MSTAT_SORT_LIVE_BYTES, 14, "PID NAME LIVE STATE" },
		{ 39, MSTAT_SORT_GROWTH_BYTES, 13, "PID NAME GROWTH STATE" },
		{ 39, MSTAT_SORT_FREE_RATE, 14, "PID NAME FREE/s STATE" },
		{ 29, MSTAT_SORT_LIVE_BYTES, 6, "PID NAME LIVE STATE" },
		{ 29, MSTAT_SORT_PID, 13, "PID NAME STATE" },
		{ 79, MSTAT_SORT_LIVE_BYTES, 19,
		  "PID NAME AGE LIVE OBJS GROWTH GROWTH/s STATE" },
		/* WHERE gives way after ALLOC/s and FREE/s, before the
		 * rest. */
		{ 120, MSTAT_SORT_LIVE_BYTES, 14,
		  "PID NAME WHERE AGE THR LIVE OBJS ALLOC/s NET/s GROWTH +OBJS "
		  "GROWTH/s STATE" },
		/* RSS and FREE% give way first. */
		{ 200, MSTAT_SORT_LIVE_BYTES, 24,
		  "PID NAME WHERE AGE THR LIVE OBJS ALLOC/s FREE/s NET/s GROWTH "
		  "+OBJS GROWTH/s RSS FREE% STATE" },
		{ 140, MSTAT_SORT_LIVE_BYTES, 16,
		  "PID NAME WHERE AGE THR LIVE OBJS ALLOC/s FREE/s NET/s GROWTH "
		  "+OBJS GROWTH/s RSS STATE" },
		{ 135, MSTAT_SORT_LIVE_BYTES, 20,
		  "PID NAME WHERE AGE THR LIVE OBJS ALLOC/s FREE/s NET/s GROWTH "
		  "+OBJS GROWTH/s STATE" },
		{ 135, MSTAT_SORT_FREE_SHARE, 14,
		  "PID NAME WHERE AGE THR LIVE OBJS ALLOC/s FREE/s NET/s GROWTH "
		  "+OBJS GROWTH/s FREE% STATE" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char titles[256] = "";
		int name = mstat_columns_fit(want[i].width, want[i].sort, shown);
		for (int k = 0; k < MSTAT_SORT_COUNT; k++)
			if (shown[k])
				snprintf(titles + strlen(titles),
					 sizeof(titles) - strlen(titles), "%s%s",
					 titles[0] ? " " : "",
					 mstat_columns_at(k)->title);
		if (name != want[i].name || strcmp(titles, want[i].titles))
			fail_msg("width %d: NAME %d, %s; not %d, %s",
				 want[i].width, name, titles, want[i].name,
				 want[i].titles);
	}
}

static void
test_units(void **state)
{
	char b[MSTAT_UNIT_MAX];
	(void)state;

#define U(u, known, v, want) \
	assert_string_equal(mstat_units_format(b, sizeof(b), u, known, v), want)
	U(MSTAT_UNIT_COUNT, true, 0, "0");
	U(MSTAT_UNIT_COUNT, true, 999, "999");
	U(MSTAT_UNIT_COUNT, true, 1000, "1.00k");   /* SI: k = 1000 */
	U(MSTAT_UNIT_COUNT, true, 12345, "12.3k");
	U(MSTAT_UNIT_COUNT, true, 999499, "999k");
	U(MSTAT_UNIT_COUNT, true, 999500, "1.00M"); /* never "1000k" */
	U(MSTAT_UNIT_COUNT, true, 2.5e9, "2.50G");
	U(MSTAT_UNIT_BYTES, true, 0, "0B");
	U(MSTAT_UNIT_BYTES, true, 999, "999B");
	U(MSTAT_UNIT_BYTES, true, 1000, "0.98KiB"); /* IEC: KiB = 1024 */
	U(MSTAT_UNIT_BYTES, true, 1536, "1.50KiB");
	U(MSTAT_UNIT_BYTES, true, 150.0 * 1024 * 1024, "150MiB");
	U(MSTAT_UNIT_BYTES, true, 1023.0 * 1024, "1.00MiB");
	U(MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED, true, 2048, "+2.00KiB");
	U(MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED, true, -2048, "-2.00KiB");
	U(MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED, true, 0, "0B");
	U(MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE, true, 3e6,
	  "+2.86MiB/s");
	U(MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE, true, 0.5, "0.5/s");
	U(MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE, true, 12000, "12.0k/s");
	U(MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE, false, 12000, "-"); /* not yet */
	U(MSTAT_UNIT_BYTES, false, 1, "-");
	U(MSTAT_UNIT_SECONDS, true, 42, "42s");
	U(MSTAT_UNIT_SECONDS, true, 725, "12m05s");
	U(MSTAT_UNIT_SECONDS, true, 3 * 3600 + 7 * 60 + 9, "3h07m");
	U(MSTAT_UNIT_SECONDS, true, 2 * 86400 + 4 * 3600, "2d04h");
	U(MSTAT_UNIT_DURATION, true, 287e-9, "287ns");
	U(MSTAT_UNIT_DURATION, true, 1.234e-6, "1.23us");
	U(MSTAT_UNIT_DURATION, true, 999.6e-6, "1.00ms"); /* never "1000us" */
	U(MSTAT_UNIT_DURATION, true, 0.5, "500ms");
	U(MSTAT_UNIT_DURATION, true, 4.56, "4.56s");
	U(MSTAT_UNIT_DURATION, true, 725, "12m05s");
	U(MSTAT_UNIT_DURATION, true, 0, "0ns");
	U(MSTAT_UNIT_DURATION, true, NAN, "-");
	U(MSTAT_UNIT_PERCENT, true, 0, "0.0%");
	U(MSTAT_UNIT_PERCENT, true, 6.5, "6.5%");
	U(MSTAT_UNIT_PERCENT, true, 42.4, "42%");
	U(MSTAT_UNIT_PERCENT, true, 100, "100%");
	U(MSTAT_UNIT_PERCENT, false, 100, "-");
	U(MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE, true, -1e30,
	  "->999EiB/s"); /* no counter gets there */
#undef U
	assert_true(strlen(mstat_units_format(b, sizeof(b), MSTAT_UNIT_BYTES |
		    MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE, true, -1e300)) <
		    MSTAT_UNIT_MAX);
}

/* One row, "p": a class of 16 bytes and one of 112, fed snapshots. */
static void
feed(struct mstat_model *m, uint64_t t, uint64_t a16, uint64_t f16,
     uint64_t a112, uint64_t f112, enum mstat_model_live l, const char *image)
{
	static struct mstat_snapshot s;
	struct mstat_model_input in;

	snap_fill(&s, a16, f16, a112, f112, 1, MSTAT_RUNNING);
	in = input("p", 5, "proc", l, t * SEC, &s);
	in.image = image;
	assert_int_equal(mstat_model_update(m, &in, 1, t * SEC), 0);
}

static void
test_growth(void **state)
{
	struct mstat_model m;
	(void)state;

	mstat_model_init(&m, 5 * SEC);
	m.window_ns = 10 * SEC;
	/* First seen: the baseline; nothing grew yet, no rate yet. */
	feed(&m, 1, 10, 0, 0, 0, MSTAT_LIVE_RUNNING, "a");
	const struct mstat_model_row *r = mstat_model_find(&m, "p");
	assert_true(r->have_snap);
	assert_int_equal(r->growth_bytes, 0);
	assert_int_equal(r->growth_objects, 0);
	assert_false(r->have_growth_rate);

	/* +5 objects of 16 B, +2 of 100 B in a class first used now. */
	feed(&m, 3, 15, 0, 2, 0, MSTAT_LIVE_RUNNING, "a");
	assert_int_equal(r->growth_bytes, 5 * 16 + 200);
	assert_int_equal(r->growth_objects, 7);
	assert_int_equal(r->classes[1].growth_bytes, 80);
	assert_int_equal(r->classes[1].growth_objects, 5);
	assert_int_equal(r->classes[7].growth_bytes, 200);
	assert_true(r->have_growth_rate);
	assert_float_equal(r->growth_bytes_rate, 280.0 / 2, 1e-9);

	/* Shrinking is negative growth. */
	feed(&m, 5, 15, 12, 2, 0, MSTAT_LIVE_RUNNING, "a");
	assert_int_equal(r->growth_bytes, -7 * 16 + 200);
	assert_int_equal(r->classes[1].growth_objects, -7);

	/* The window: 10 s.  At 13 s the rate is from the newest point at
	 * least 10 s old (3 s: 15 + 2 objects), not from the first. */
	feed(&m, 13, 25, 12, 2, 0, MSTAT_LIVE_RUNNING, "a");
	assert_float_equal(r->growth_bytes_rate, (13.0 * 16 + 200 - (15 * 16 + 200)) / 10,
			   1e-9);
	assert_int_equal(r->window[0].t_ns, 3 * SEC);

	/* b: baseline from now. */
	assert_int_equal(mstat_model_rebase(&m, "p", false), 1);
	assert_int_equal(r->growth_bytes, 0);
	assert_int_equal(r->classes[7].growth_bytes, 0);
	feed(&m, 14, 26, 12, 2, 0, MSTAT_LIVE_RUNNING, "a");
	assert_int_equal(r->growth_bytes, 16);
	assert_int_equal(r->classes[1].growth_objects, 1);
	assert_int_equal(mstat_model_rebase(&m, "nobody", false), 0);
	/* From nothing (mstat-run): growth is everything live. */
	assert_int_equal(mstat_model_rebase(&m, NULL, true), 1);
	assert_int_equal(r->growth_bytes, 14 * 16 + 200);
	assert_int_equal(r->growth_objects, 16);

	/* exec(): a new image counts from nothing; the row goes on with a
	 * new baseline, no rate from the old image's counts. */
	feed(&m, 15, 3, 0, 0, 0, MSTAT_LIVE_RUNNING, "b");
	assert_ptr_equal(mstat_model_find(&m, "p"), r);
	assert_int_equal(m.n, 1);
	assert_false(r->have_rates);
	assert_false(r->have_growth_rate);
	assert_int_equal(r->growth_bytes, 0);
	assert_int_equal(r->history_len, 1);
	assert_int_equal(mstat_model_live_bytes(r), 48);
	assert_string_equal(r->image, "b");
	feed(&m, 16, 4, 0, 0, 0, MSTAT_LIVE_RUNNING, "b");
	assert_int_equal(r->growth_bytes, 16);
	assert_float_equal(r->alloc_rate, 1.0, 1e-9);
	mstat_model_fini(&m);
}

/* --baseline: every row's baseline moves once, at the first update that
 * long after the first one; a row first seen later starts its own. */
static void
test_baseline_after(void **state)
{
	struct mstat_model m;
	struct mstat_snapshot s[2];
	struct mstat_model_input in[2];
	(void)state;

	uint64_t in_ns = 1;
	mstat_model_init(&m, 5 * SEC);
	m.baseline_after_ns = 2 * SEC;
	/* Pending, and how long until it is taken (what the view shows):
	 * before the first update, all of it. */
	assert_true(mstat_model_baseline_pending(&m, &in_ns));
	assert_int_equal(in_ns, 2 * SEC);
	for (uint64_t t = 1; t <= 5; t++) {
		snap_fill(&s[0], 10 * t, 0, 0, 0, 1, MSTAT_RUNNING);
		snap_fill(&s[1], 100 * t, 0, 0, 0, 1, MSTAT_RUNNING);
		in[0] = input("old", 1, "old", MSTAT_LIVE_RUNNING, t * SEC, &s[0]);
		in[1] = input("new", 2, "new", MSTAT_LIVE_RUNNING, t * SEC, &s[1]);
		assert_int_equal(mstat_model_update(&m, in, t >= 4 ? 2 : 1,
						    t * SEC), 0);
		bool pending = mstat_model_baseline_pending(&m, &in_ns);
		assert_int_equal(pending, t < 3);
		if (pending)
			assert_int_equal(in_ns, (3 - t) * SEC);
	}
	/* old: rebased at 3 s (30 objects), now 50; new: first seen at 4 s. */
	assert_int_equal(mstat_model_find(&m, "old")->growth_objects, 20);
	assert_int_equal(mstat_model_find(&m, "new")->growth_objects, 100);
	assert_true(m.rebased);
	mstat_model_fini(&m);
	/* Without --baseline, nothing is pending. */
	mstat_model_init(&m, 5 * SEC);
	assert_false(mstat_model_baseline_pending(&m, &in_ns));
	mstat_model_fini(&m);
}

static void
test_dismiss(void **state)
{
	struct mstat_model m;
	struct mstat_snapshot s;
	struct mstat_model_input in[2];
	const struct mstat_model_row *rows[4];
	(void)state;

	mstat_model_init(&m, 300 * SEC);
	snap_fill(&s, 10, 2, 0, 0, 1, MSTAT_RUNNING);
	in[0] = input("run", 1, "runner", MSTAT_LIVE_RUNNING, 1 * SEC, &s);
	in[1] = input("gone", 2, "leaver", MSTAT_LIVE_EXITED, 1 * SEC, &s);
	assert_int_equal(mstat_model_update(&m, in, 2, 1 * SEC), 0);
	/* A running process cannot be dismissed. */
	assert_int_equal(mstat_model_dismiss(&m, "run"), 0);
	assert_int_equal(mstat_model_dismiss(&m, "gone"), 1);
	assert_null(mstat_model_find(&m, "gone"));
	assert_int_equal(mstat_columns_view(&m, "", MSTAT_SORT_PID, false, rows), 1);
	/* Its input still comes (the sampler keeps it while it lingers):
	 * it stays hidden, and goes when the input stops. */
	assert_int_equal(mstat_model_update(&m, in, 2, 2 * SEC), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(mstat_columns_view(&m, "", MSTAT_SORT_PID, false, rows), 1);
	assert_int_equal(mstat_model_update(&m, in, 1, 3 * SEC), 0);
	assert_int_equal(m.n, 1);
	/* An exited row lingers 300 s, with its final classes. */
	in[1] = input("gone2", 3, "leaver", MSTAT_LIVE_EXITED, 4 * SEC, &s);
	assert_int_equal(mstat_model_update(&m, in, 2, 4 * SEC), 0);
	assert_int_equal(mstat_model_update(&m, in, 1, 303 * SEC), 0);
	assert_non_null(mstat_model_find(&m, "gone2"));
	assert_int_equal(mstat_model_live_objects(mstat_model_find(&m, "gone2")), 8);
	assert_int_equal(mstat_model_update(&m, in, 1, 304 * SEC), 0);
	assert_null(mstat_model_find(&m, "gone2"));
	mstat_model_fini(&m);
}

/* Which columns a narrow screen shows: those that always stay, then the
 * others as room allows; NAME takes what is left, up to its bound. */
static void
test_columns_fit(void **state)
{
	bool shown[MSTAT_SORT_COUNT];
	(void)state;

	int nw = mstat_columns_fit(79, MSTAT_SORT_LIVE_BYTES, shown);
	int used = nw - 1;
	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		const struct mstat_column *c = mstat_columns_at(k);
		assert_non_null(c->name);
		assert_non_null(c->title);
		assert_non_null(c->help);
		assert_non_null(mstat_fields_at(c->field)->get);
		if (!c->drop)
			assert_true(shown[k]);
		if (shown[k] && k != MSTAT_SORT_NAME)
			used += c->width + 1;
	}
	assert_true(used <= 79);
	assert_false(shown[MSTAT_SORT_FREE_RATE]); /* the first to go */
	assert_true(shown[MSTAT_SORT_GROWTH_BYTES]);
	/* The sorted column stays, however low it ranks. */
	mstat_columns_fit(79, MSTAT_SORT_FREE_RATE, shown);
	assert_true(shown[MSTAT_SORT_FREE_RATE]);
	/* Wide: everything, and NAME no wider than its bound. */
	nw = mstat_columns_fit(400, MSTAT_SORT_PID, shown);
	for (int k = 0; k < MSTAT_SORT_COUNT; k++)
		assert_true(shown[k]);
	assert_int_equal(nw, MSTAT_COLUMN_NAME_MAX);
}

/* Renders the model's rows in `fmt` at tick `seq`. */
static char *
render_tick(int fmt, struct mstat_model *m, uint64_t seq, uint64_t time_ms)
{
	const struct mstat_model_row *rows[8];
	m->wall_ns = time_ms * 1000000u;
	size_t n = mstat_columns_view(m, "", MSTAT_SORT_GROWTH_BYTES, false, rows);
	struct mstat_output_tick t = { .seq = seq, .time_ms = time_ms, .interval_s = 0.5 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(mstat_output_write(f, fmt, &t, rows, n), 0);
	fclose(f);
	return buf;
}

/* Ticks written and read back make the same model: the same bytes in
 * every output, the hostile name and the huge class included. */
static void
test_record_replay(void **state)
{
	struct mstat_model live, replayed;
	struct mstat_snapshot s[3];
	char path[] = "/tmp/mstat-test-record-XXXXXX", err[256];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	(void)state;

	assert_non_null(f);
	assert_int_equal(mstat_record_begin(f, 1700000000000u), 0);
	mstat_model_init(&live, 5 * SEC);
	char *want[4][3];
	for (unsigned t = 0; t < 4; t++) {
		struct mstat_model_input in[2];
		snap_fill(&s[0], 4 + t, 1, t, 0, 2, MSTAT_RUNNING);
		s[0].class_max_size[7] = UINT64_MAX;
		/* Counts beyond 2^63, which a double or an int64 would not
		 * hold exactly. */
		s[0].classes[5] = (struct mstat_counts){
			(UINT64_C(1) << 63) + 5, (UINT64_C(1) << 63) + 80,
			(UINT64_C(1) << 63) + 5, (UINT64_C(1) << 63) + 80 };
		s[0].total.alloc_count += (UINT64_C(1) << 63) + 5;
		s[0].total.alloc_bytes += (UINT64_C(1) << 63) + 80;
		s[0].total.free_count += (UINT64_C(1) << 63) + 5;
		s[0].total.free_bytes += (UINT64_C(1) << 63) + 80;
		/* Times to the nanosecond, as the clock gives them. */
		in[0] = input("q", 42, HOSTILE, MSTAT_LIVE_RUNNING,
			      (t + 1) * SEC + 123457 * t, &s[0]);
		in[0].image = "mstat.42.1:7";
		in[0].comm = "\x1b[1mcomm";
		in[0].start_ns = 1699999990250000000u;
		in[1] = input("s", 7, "sleepy", t == 3 ? MSTAT_LIVE_KILLED
						       : MSTAT_LIVE_STALLED,
			      0, NULL);
		in[1].err = PLANTED ": is not initialised yet";
		in[1].end_ns = t == 3 ? 1700000003000000000u : 0;
		struct mstat_record_tick tick = { t + 1, 1700000000000u + t * 500,
			(t + 1) * SEC + 7, 0.5, in, 2 };
		assert_int_equal(mstat_record_write(f, &tick), 0);
		assert_int_equal(mstat_model_update(&live, in, 2, tick.now_ns), 0);
		for (int k = 0; k < 3; k++)
			want[t][k] = render_tick(k, &live, tick.seq, tick.time_ms);
	}
	fclose(f);

	struct mstat_replay *r;
	struct mstat_record_tick t;
	assert_int_equal(mstat_record_replay_open(&r, path, err, sizeof(err)), 0);
	mstat_model_init(&replayed, 5 * SEC);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(mstat_record_replay_next(r, &t, err, sizeof(err)), 1);
		assert_int_equal(t.seq, i + 1);
		assert_int_equal(t.n, 2);
		assert_int_equal(mstat_model_update(&replayed, t.in, t.n, t.now_ns), 0);
		for (int k = 0; k < 3; k++) {
			char *got = render_tick(k, &replayed, t.seq, t.time_ms);
			assert_true(clean(got));
			assert_string_equal(got, want[i][k]);
			free(got);
			free(want[i][k]);
		}
	}
	assert_int_equal(mstat_record_replay_next(r, &t, err, sizeof(err)), 0);
	mstat_record_replay_close(r);
	unlink(path);
	mstat_model_fini(&live);
	mstat_model_fini(&replayed);
}

/* A recording read back and written again is the same bytes: the
 * format of docs/mstat-top-record.md, field by field and in its order,
 * is what the list of fields (fields.h) writes and reads. */
static void
test_record_again(void **state)
{
	static const char *const ticks[] = {
		"{\"tick\":1,\"time_ms\":1700000000000,\"now_ns\":1000000007,"
		"\"interval_s\":0.500,\"targets\":[{\"pid\":42,"
		"\"key\":\"42.7@4026531836\",\"image\":\"mstat.42.7:9\","
		"\"name\":\"q\\\"\\\\\",\"comm\":\"comm\",\"exe\":\"prog\","
		"\"state\":\"running\",\"error\":\"\",\"t_ns\":1000000000,"
		"\"end_ns\":0,\"start_ns\":1699999990250000000,\"nspid\":3,"
		"\"container_id\":\"" CONTAINER "\","
		"\"pod_uid\":\"90d81341-92de-11e7-8cf2-507b9d4141fa\","
		"\"qos_class\":\"Burstable\",\"systemd_unit\":\"\","
		"\"memory\":{\"rss\":2000000,\"live\":280,"
		"\"allocator_free\":130000,\"allocator_overhead\":56,"
		"\"not_heap\":119664,\"file\":1700000,\"shmem\":0,"
		"\"library\":50000,\"live_not_resident\":0,"
		"\"allocator\":\"jemalloc\",\"source\":\"allocator\","
		"\"time_ns\":1700000001500000000,"
		"\"allocator_ns\":1700000001000000000},"
		"\"attached_ns\":1699999995500000000,\"prior_frees\":3,"
		"\"prior_free_bytes\":120,\"prior_reallocs\":1,"
		"\"prior_realloc_bytes\":40,\"snap\":{"
		"\"epoch\":4,\"state\":1,\"threads\":2,\"slots_used\":3,"
		"\"overflowed\":0,\"cut\":0,\"class_count\":3,"
		"\"requested_bytes\":40,\"classes\":[[0,16,2,32,1,16],"
		"[2,null,1,4096,0,0]]}},{\"pid\":7,\"key\":\"7.1@4026531836\","
		"\"image\":\"\",\"name\":\"sleepy\",\"comm\":\"\",\"exe\":\"\","
		"\"state\":\"killed\",\"error\":\"gone\",\"t_ns\":0,"
		"\"end_ns\":1700000003000000000,\"start_ns\":0,\"nspid\":0,"
		"\"container_id\":\"\",\"pod_uid\":\"\",\"qos_class\":\"\","
		"\"systemd_unit\":\"sleepy.service\",\"memory\":null,"
		"\"attached_ns\":0,"
		"\"prior_frees\":0,\"prior_free_bytes\":0,\"prior_reallocs\":0,"
		"\"prior_realloc_bytes\":0,\"snap\":null}]}\n",
		"{\"tick\":2,\"time_ms\":1700000000500,\"now_ns\":2000000007,"
		"\"interval_s\":1.250,\"targets\":[]}\n",
	};
	char path[] = "/tmp/mstat-test-again-XXXXXX", err[256];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	(void)state;

	assert_non_null(f);
	assert_int_equal(mstat_record_begin(f, 1700000000000u), 0);
	for (size_t i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++)
		fputs(ticks[i], f);
	fclose(f);

	struct mstat_replay *r;
	struct mstat_record_tick t;
	assert_int_equal(mstat_record_replay_open(&r, path, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		assert_int_equal(mstat_record_replay_next(r, &t, err, sizeof(err)), 1);
		assert_int_equal(mstat_record_write(m, &t), 0);
		fclose(m);
		assert_string_equal(buf, ticks[i]);
		free(buf);
	}
	assert_int_equal(mstat_record_replay_next(r, &t, err, sizeof(err)), 0);
	mstat_record_replay_close(r);

	/* A recording made before where a process runs was recorded: read
	 * as not known. */
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(mstat_record_begin(f, 1700000000000u), 0);
	fputs("{\"tick\":1,\"time_ms\":1700000000000,\"now_ns\":1,"
	      "\"interval_s\":0.500,\"targets\":[{\"pid\":7,\"key\":\"k\","
	      "\"image\":\"\",\"name\":\"sleepy\",\"comm\":\"\",\"exe\":\"\","
	      "\"state\":\"killed\",\"error\":\"\",\"t_ns\":0,\"end_ns\":0,"
	      "\"start_ns\":0,\"snap\":null}]}\n", f);
	fclose(f);
	assert_int_equal(mstat_record_replay_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(mstat_record_replay_next(r, &t, err, sizeof(err)), 1);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.in[0].nspid, 0);
	assert_string_equal(t.in[0].container_id, "");
	assert_string_equal(t.in[0].systemd_unit, "");
	mstat_record_replay_close(r);
	unlink(path);
}

/* A file to replay is input: whatever it holds is refused with where and
 * why, never trusted. */
static void
test_replay_refuses(void **state)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "", ":1: not a recording of mstat-top" },
		{ "{\"format\":\"other\",\"version\":1}\n", ":1: not a recording" },
		{ "{\"format\":\"mstat-top-record\",\"version\":2}\n",
		  ":1: recording format version 2; this mstat-top reads version 1" },
		{ "H\nnot json\n", ":2: not a JSON object" },
		{ "H\n{\"tick\":1}\n", ":2: a tick needs tick, time_ms, now_ns, "
				       "interval_s and targets" },
		{ "H\n{\"tick\":1,\"time_ms\":1,\"now_ns\":5,\"interval_s\":1,"
		  "\"targets\":[]}\n{\"tick\":2,\"time_ms\":1,\"now_ns\":4,"
		  "\"interval_s\":1,\"targets\":[]}\n", ":3: now_ns goes back" },
		{ "H\n{\"tick\":1,\"time_ms\":1,\"now_ns\":5,\"interval_s\":-1,"
		  "\"targets\":[]}\n", ":2: interval_s -1" },
		{ "H\nT[{\"pid\":-3}]}\n", ":2: target 0: needs pid" },
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"dancing\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"snap\":null}]}\n",
		  ":2: target 0: state \"dancing\"" },
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"running\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"snap\":{\"epoch\":1,\"state\":1,"
		  "\"threads\":1,\"slots_used\":1,\"overflowed\":0,\"cut\":0,"
		  "\"class_count\":4,\"requested_bytes\":0,\"classes\":"
		  "[[4,64,1,64,0,0]]}}]}\n", ":2: target 0: class 4 of 4" },
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"running\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"snap\":{\"epoch\":1,\"state\":1,"
		  "\"threads\":1,\"slots_used\":1,\"overflowed\":0,\"cut\":0,"
		  "\"class_count\":999,\"requested_bytes\":0,\"classes\":[]}}]}\n",
		  ":2: target 0: 999 classes, more than 191" },
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"running\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"snap\":{\"epoch\":1,\"state\":1,"
		  "\"threads\":1,\"slots_used\":1,\"overflowed\":0,\"cut\":0,"
		  "\"class_count\":4,\"requested_bytes\":0,\"classes\":"
		  "[[1,16,-1,0,0,0]]}}]}\n", ":2: target 0: class entry 0: not a count" },
		{ "H\n{\"tick\":1,\"time_ms\":1,\"now_ns\":5,\"interval_s\":1,"
		  "\"targets\":[", ":2: not a JSON object (the recording was cut short?)" },
		/* Memory whose parts do not add up to its rss. */
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"running\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"memory\":{\"rss\":10,\"live\":4,"
		  "\"allocator_free\":4,\"allocator_overhead\":0,\"not_heap\":0,"
		  "\"file\":0,\"shmem\":0,\"library\":0,\"live_not_resident\":0,"
		  "\"allocator\":\"glibc\",\"source\":\"glibc\",\"time_ns\":1,"
		  "\"allocator_ns\":0},\"snap\":null}]}\n",
		  ":2: target 0: needs pid, key, name, state, t_ns, end_ns, "
		  "start_ns and snap, and memory whose parts add up to its rss if "
		  "any" },
		{ "H\nT[{\"pid\":3,\"key\":\"k\",\"state\":\"running\",\"t_ns\":1,"
		  "\"end_ns\":0,\"start_ns\":0,\"memory\":{\"rss\":8,\"live\":4,"
		  "\"allocator_free\":4,\"allocator_overhead\":0,\"not_heap\":0,"
		  "\"file\":0,\"shmem\":0,\"library\":0,\"live_not_resident\":0,"
		  "\"allocator\":\"dlmalloc\",\"source\":\"glibc\",\"time_ns\":1,"
		  "\"allocator_ns\":0},\"snap\":null}]}\n",
		  ":2: target 0: needs pid" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[] = "/tmp/mstat-test-replay-XXXXXX", err[256] = "";
		char text[2048] = "";
		const char *p = cases[i].text;
		/* H: a good header; T: the start of a good tick. */
		for (; *p; p++) {
			if (*p == 'H' && (p == cases[i].text || p[-1] == '\n'))
				strcat(text, "{\"format\":\"mstat-top-record\","
					     "\"version\":1,\"time_ms\":1}");
			else if (*p == 'T' && p[-1] == '\n')
				strcat(text, "{\"tick\":1,\"time_ms\":1,\"now_ns\":5,"
					     "\"interval_s\":1,\"targets\":");
			else
				strncat(text, p, 1);
		}
		int fd = mkstemp(path);
		assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
		close(fd);
		struct mstat_replay *r;
		struct mstat_record_tick t;
		int rc = mstat_record_replay_open(&r, path, err, sizeof(err));
		if (rc == 0) {
			while ((rc = mstat_record_replay_next(r, &t, err, sizeof(err))) > 0)
				;
			mstat_record_replay_close(r);
		}
		unlink(path);
		if (rc == 0 || !strstr(err, cases[i].why))
			fail_msg("case %zu: %s, not \"%s\"", i, err, cases[i].why);
		assert_non_null(strstr(err, "/tmp/mstat-test-replay-"));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_history_is_bounded),
		cmocka_unit_test(test_sorting),
		cmocka_unit_test(test_filtering),
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_text_rules),
		cmocka_unit_test(test_note_escaped),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_where),
		cmocka_unit_test(test_openmetrics),
		cmocka_unit_test(test_killed),
		cmocka_unit_test(test_prometheus_text),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_name_cells),
		cmocka_unit_test(test_narrow_columns),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_baseline_after),
		cmocka_unit_test(test_dismiss),
		cmocka_unit_test(test_columns_fit),
		cmocka_unit_test(test_record_replay),
		cmocka_unit_test(test_record_again),
		cmocka_unit_test(test_replay_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
