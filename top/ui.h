/* SPDX-License-Identifier: MIT */
/*
 * ui.h - the interactive side of mstat-top: what the screen shows and the
 * keys change.  Owned by the main thread.
 *
 * Layers:
 *   ui.c       this state: the rows shown, the selection, the screens
 *              open and which is on top, moving in each, what keys ask
 *              of the model (baseline, dismiss)
 *   view.c     draws it with ncurses, and nothing else
 *   keys.c     one table of keys: it dispatches, and the help screen
 *              shows it
 *   screens.c  the table of screens: what each draws (view.c), how it
 *              moves (ui.c), which keys it takes itself (keys.c)
 *   main.c     options, and the loops that feed the model (live or
 *              replayed)
 *
 * The screens are a stack over the process table: a process's classes
 * (Enter), its call sites (s: over the table or the classes) and the
 * help (over any).  The one on top is drawn and takes the keys; closing
 * it shows the one under it.
 */
#ifndef MSTAT_TOP_UI_H
#define MSTAT_TOP_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/columns.h"
#include "core/model.h"
#include "core/core.h"

#define MSTAT_UI_FILTER_MAX 64

/*
 * The screens, one list: X(ID, draw, step, key), in which
 *   draw  draws it under the header (view.c);
 *   step  moves in it: Up, Down, PgUp, PgDn, Home, End (ui.c);
 *   key   takes every key while it is on top; NULL: the key table does
 *         (keys.c).
 * enum mstat_screen and the table of screens.c are made from it: a
 * screen cannot be without its row.
 */
#define MSTAT_SCREENS(X)                                                      \
	/* the processes */                                                   \
	X(TABLE, mstat_view_table, mstat_ui_move_table, NULL)                 \
	/* one process: its classes, its history */                           \
	X(DETAIL, mstat_view_detail, mstat_ui_move_detail, NULL)              \
	/* one process's call sites */                                        \
	X(SITES, mstat_view_sites, mstat_ui_move_sites, NULL)                 \
	/* the keys and the columns */                                        \
	X(HELP, mstat_view_help, mstat_ui_move_help, mstat_keys_help)

enum mstat_screen {
#define MSTAT_X(id, ...) MSTAT_SCREEN_##id,
	MSTAT_SCREENS(MSTAT_X)
#undef MSTAT_X
	MSTAT_SCREEN_COUNT
};

/* What a key did. */
enum mstat_key_result {
	MSTAT_KEY_IGNORED = 0,
	MSTAT_KEY_REDRAW = 1,     /* the screen must be drawn again */
	MSTAT_KEY_RESELECT = 2,   /* rows changed: pick them again */
};

struct mstat_ui;

struct mstat_key_binding {
	int keys[3];              /* 0-terminated unless full */
	const char *names;        /* as the help screen shows them */
	const char *help;
	int (*fn)(struct mstat_ui *ui); /* returns enum mstat_key_result bits */
};

/* Playing a recording back, instead of watching live. */
struct mstat_ui_replay {
	const char *file;         /* as given, for the header */
	double speed;             /* 1: as recorded */
	uint64_t tick;            /* the last one shown */
	bool step;                /* one tick more, paused or not */
	bool ended;
};

struct mstat_ui {
	struct mstat_core *core;                /* NULL when replaying */
	struct mstat_ui_replay *replay;       /* NULL when live */
	struct mstat_model model;
	struct mstat_core_scratch scratch;
	const struct mstat_key_binding *keys; /* for the help screen */
	size_t nkeys;

	/* The process table: the model's rows that match, in order. */
	const struct mstat_model_row **rows;
	size_t nrows, caprows;
	size_t sel, scroll;                   /* selected row, first shown */
	char sel_key[MSTAT_KEY_MAX];    /* follows the process on re-sort */
	bool sel_moved;                 /* by the user: until then the
					 * selection is the top row */
	size_t page;                          /* rows on screen, set by the view */

	enum mstat_model_sort sort;
	bool reverse;
	char filter[MSTAT_UI_FILTER_MAX];
	char filter_given[MSTAT_UI_FILTER_MAX]; /* -F: what Esc goes back to */
	bool editing;                         /* typing a filter */
	char edit[MSTAT_UI_FILTER_MAX];

	bool paused, quit;
	/* The screens open over the table, the last on top. */
	enum mstat_screen over[MSTAT_SCREEN_COUNT - 1];
	size_t nover;
	size_t help_scroll;
	size_t detail_scroll;
	/* The call sites: the last the sampler published, copied at each
	 * tick while they are open. */
	enum mstat_core_sites_order sites_order;
	size_t sites_scroll;
	struct mstat_core_sites *sites_seen;   /* NULL until one arrives */
	bool utf8;                            /* the terminal's charset */

	char status[256];                     /* last note of the sampler */
	uint64_t status_seq;
	char said[256];                       /* what the last key did */
	uint64_t tick_wall_ms;                /* when the model last changed */
	unsigned interval_ms;
};

/* What a screen does. */
struct mstat_screen_ops {
	void (*draw)(struct mstat_ui *ui);
	/* Up or down `d` lines (Up, Down, PgUp, PgDn, Home, End). */
	int (*step)(struct mstat_ui *ui, long d);
	/* Every key, while it is on top; NULL: the key table (keys.c). */
	int (*key)(struct mstat_ui *ui, int ch);
};

/* The screen `s`'s operations (screens.c). */
const struct mstat_screen_ops *mstat_screens_ops(enum mstat_screen s);

/* The screen on top: the one drawn, which takes the keys. */
enum mstat_screen mstat_ui_screen(const struct mstat_ui *ui);
/* Whether `s` is open, on top or under another. */
bool mstat_ui_shows(const struct mstat_ui *ui, enum mstat_screen s);
/* Whether one process is open (its classes or its sites): the selection
 * stays on it whatever the table does. */
bool mstat_ui_process_open(const struct mstat_ui *ui);
/* Opens `s` on top. */
void mstat_ui_open(struct mstat_ui *ui, enum mstat_screen s);
/* Closes `s`, and what is open over it, if it is open. */
void mstat_ui_close(struct mstat_ui *ui, enum mstat_screen s);

/* Moving in each screen: the selection in the table, a scroll in the
 * others (the view bounds it). */
int mstat_ui_move_table(struct mstat_ui *ui, long d);
int mstat_ui_move_detail(struct mstat_ui *ui, long d);
int mstat_ui_move_sites(struct mstat_ui *ui, long d);
int mstat_ui_move_help(struct mstat_ui *ui, long d);

/* Picks and orders the rows to show from the model; keeps the selection
 * on the same process. */
void mstat_ui_select_rows(struct mstat_ui *ui);
/* The row selected (in the detail view: the one open), or NULL. */
const struct mstat_model_row *mstat_ui_selected(const struct mstat_ui *ui);

/* Key actions on the model, each saying what it did in ui->said. */
int mstat_ui_rebase(struct mstat_ui *ui, bool all);
int mstat_ui_dismiss(struct mstat_ui *ui, bool all);
/* Opens the selected process's call sites, or, open, switches their
 * order (live bytes, growth); closes them. */
int mstat_ui_sites(struct mstat_ui *ui);
void mstat_ui_sites_close(struct mstat_ui *ui);
/* Copies the sites the sampler published last into ui->sites_seen, if
 * they are the selected process's; at each tick, while they are open. */
void mstat_ui_sites_fetch(struct mstat_ui *ui);

/* The key table, in help-screen order (keys.c). */
const struct mstat_key_binding *mstat_keys_table(size_t *n);
/* Handles one key from getch(); returns enum mstat_key_result bits. */
int mstat_keys_dispatch(struct mstat_ui *ui, int ch);
/* The help screen's keys: it closes, or scrolls; nothing else acts
 * behind it. */
int mstat_keys_help(struct mstat_ui *ui, int ch);

/* Draws the header, the screen on top and the status line. */
void mstat_view_draw(struct mstat_ui *ui);
/* Each screen, under the header. */
void mstat_view_table(struct mstat_ui *ui);
void mstat_view_detail(struct mstat_ui *ui);
void mstat_view_sites(struct mstat_ui *ui);
void mstat_view_help(struct mstat_ui *ui);

#endif /* MSTAT_TOP_UI_H */
