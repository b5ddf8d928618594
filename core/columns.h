/*
 * columns.h - the process table's columns.
 *
 * The columns are the COL lines of the list of fields (fields.h): each
 * says its position, the name -s and the help know it by, its title, its
 * width, how its values are written (units.h), when it gives way on a
 * narrow screen, and what it means.  The terminal's header and rows, the
 * batch table, the sort keys (-s, F6, < >) and the help screen all read
 * that one list; a new column is a COL line there.
 *
 * unit: enum mstat_unit bits, or MSTAT_COLUMN_ID (a number written
 * whole), MSTAT_COLUMN_TEXT (words) or MSTAT_COLUMN_AGE (seconds since
 * the value, a time).  Numbers and ages sort largest first (the oldest
 * first), ids and words smallest first (a state in the order of enum
 * mstat_model_live), and "-" last.  drop: the order in which columns
 * give way on a screen too narrow for all, the highest first (the sorted
 * column stays); 0 for those that always stay, as htop keeps its most
 * telling ones: PID, NAME and STATE (a killed row must not read as a
 * running one).  NAME's width is what it gets when there is room: it
 * takes what is left, up to MSTAT_COLUMN_NAME_MAX, and narrows, down to
 * MSTAT_COLUMN_NAME_MIN, before STATE is cut.
 */
#ifndef MSTAT_CORE_COLUMNS_H
#define MSTAT_CORE_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fields.h"
#include "core/model.h"
#include "core/units.h"

#define MSTAT_COLUMN_ID 0x100
#define MSTAT_COLUMN_TEXT 0x200
#define MSTAT_COLUMN_AGE 0x400
#define MSTAT_COLUMN_NAME_MAX 24
#define MSTAT_COLUMN_NAME_MIN 6

/* Sort keys, which are the columns: MSTAT_SORT_<field>, in the table's
 * order. */
enum mstat_model_sort {
#define MSTAT_X(id, pos, ...) MSTAT_SORT_##id = pos,
	MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_X, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X
#define MSTAT_X(...) +1
	MSTAT_SORT_COUNT = 0 MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_X,
					  MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X
};

/* A row's value in a column: a number, or words. */
struct mstat_cell {
	bool known;          /* false: "-" (never read; no rate yet) */
	double v;
	const char *text;    /* words, for MSTAT_COLUMN_TEXT */
	char buf[96];
};

struct mstat_column {
	const char *name, *title, *help;
	int width;
	unsigned unit;
	unsigned drop;
	enum mstat_field_id field; /* what it shows */
};

/* The column `k`, or NULL. */
const struct mstat_column *mstat_columns_at(enum mstat_model_sort k);

/* Writes the cell of row `r` in column `k` (unpadded, not cut): the
 * value in its unit, or "-".  Returns buf. */
const char *mstat_columns_text(enum mstat_model_sort k,
			       const struct mstat_model_row *r, uint64_t now_ns,
			       char *buf, size_t len);

/*
 * Row r's cell in column k as a table shows it, `width` characters
 * (width 0: as it is): escaped by text.h's plain rule, padded (text to
 * the left, numbers to the right), and words longer than the width cut,
 * ending in `ellipsis` (one character).  NAME gives up its [comm] before
 * its name: "demo-churning [mst…]", "demo-churning", "demo-chu…".
 * Numbers are never cut.  Returns buf, which holds any cell (256 bytes).
 */
const char *mstat_columns_cell(enum mstat_model_sort k,
			       const struct mstat_model_row *r, uint64_t now_ns,
			       int width, const char *ellipsis, char *buf,
			       size_t len);

/* The same for text of column `k` given as it is (a title). */
const char *mstat_columns_pad(enum mstat_model_sort k, const char *text,
			      int width, const char *ellipsis, char *buf,
			      size_t len);

/* The title of column `k` ("LIVE"), or "?". */
const char *mstat_columns_sort_name(enum mstat_model_sort k);
/* A column's name or title, any case, '_' for '-' allowed: the key, or
 * -1. */
int mstat_columns_parse_sort(const char *s);

/*
 * Fills `out` (room for m->n) with the rows that match `filter`, sorted
 * by column `key` (then by pid), and returns how many.  Ages are at
 * m->wall_ns.  The pointers stay valid until the next
 * mstat_model_update().
 */
size_t mstat_columns_view(const struct mstat_model *m, const char *filter,
			  enum mstat_model_sort key, bool reverse,
			  const struct mstat_model_row **out);

/*
 * Which columns fit `width` characters (separated by one space): fills
 * shown[] (MSTAT_SORT_COUNT entries) and returns NAME's width.  The
 * sorted column `keep` always stays, and so do those whose drop is 0.
 */
int mstat_columns_fit(int width, enum mstat_model_sort keep, bool *shown);

#endif /* MSTAT_CORE_COLUMNS_H */
