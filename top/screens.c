/* SPDX-License-Identifier: MIT */
/*
 * screens.c - the screens of mstat-top, one table: what each draws, how
 * it moves, and whether it takes the keys itself, made from the list
 * MSTAT_SCREENS of ui.h.
 */
#include "top/ui.h"

static const struct mstat_screen_ops screens[MSTAT_SCREEN_COUNT] = {
#define MSTAT_X(id, draw, step, key) [MSTAT_SCREEN_##id] = { draw, step, key },
	MSTAT_SCREENS(MSTAT_X)
#undef MSTAT_X
};

const struct mstat_screen_ops *
mstat_screens_ops(enum mstat_screen s)
{
	return &screens[(unsigned)s < MSTAT_SCREEN_COUNT ? s : MSTAT_SCREEN_TABLE];
}
