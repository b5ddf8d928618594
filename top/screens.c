/* SPDX-License-Identifier: MIT */
/*
 * screens.c - the screens of mstat-top, one table: what each draws, how
 * it moves, and whether it takes the keys itself.  See ui.h.
 */
#include "ui.h"

static const struct mstat_screen_ops screens[MSTAT_SCREEN_COUNT] = {
	[MSTAT_SCREEN_TABLE] = { mstat_view_table, mstat_ui_move_table, NULL },
	[MSTAT_SCREEN_DETAIL] = { mstat_view_detail, mstat_ui_move_detail, NULL },
	[MSTAT_SCREEN_SITES] = { mstat_view_sites, mstat_ui_move_sites, NULL },
	[MSTAT_SCREEN_HELP] = { mstat_view_help, mstat_ui_move_help,
				mstat_keys_help },
};

const struct mstat_screen_ops *
mstat_screen_ops(enum mstat_screen s)
{
	return &screens[(unsigned)s < MSTAT_SCREEN_COUNT ? s : MSTAT_SCREEN_TABLE];
}
