/* SPDX-License-Identifier: MIT */
/*
 * columns.c - the process table's columns: the values, the table, and
 * sorting by a column.  See columns.h.
 */
#include "core/columns.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

/* ---- the value of each column ---- */

/* The name a user recognises the process by: the one it gave itself
 * (MSTAT_NAME, or its program's), and its comm where that tells more (a
 * name inherited by helpers it runs, a program that renamed itself).
 * comm is cut at 15 bytes, so a name it begins is the same name. */
static bool
name_with_comm(const struct mstat_model_row *r)
{
	return r->comm[0] && strncmp(r->name, r->comm, strlen(r->comm)) != 0 &&
	       strcmp(r->name, r->exe) != 0;
}

/* ---- the table ---- */

static const struct mstat_column columns[MSTAT_SORT_COUNT] = {
#define MSTAT_X(id, pos, n, t, w, u, d, h)                                    \
	[pos] = { .name = n, .title = t, .help = h, .width = w, .unit = u,    \
		  .drop = d, .field = MSTAT_FIELD_##id },
	MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_X, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X
};

/* The value of row `r` in column `col` at `now_ns` (CLOCK_REALTIME, for
 * ages). */
static void
cell_of(const struct mstat_column *col, const struct mstat_model_row *r,
	uint64_t now_ns, struct mstat_cell *c)
{
	enum mstat_field_type type = mstat_fields_at(col->field)->type;
	struct mstat_field_value v;

	mstat_fields_get(col->field, r, now_ns, &v);
	c->known = v.known;
	switch (type) {
	case MSTAT_TYPE_NAME:
		c->text = v.s;
		if (name_with_comm(r)) {
			snprintf(c->buf, sizeof(c->buf), "%s [%s]", r->name,
				 r->comm);
			c->text = c->buf;
		}
		break;
	case MSTAT_TYPE_STATE:
		c->v = (double)v.i; /* sorts in the order of enum mstat_model_live */
		c->text = mstat_model_live_name((enum mstat_model_live)v.i);
		break;
	case MSTAT_TYPE_TEXT:
		c->text = v.s;
		break;
	default:
		c->v = v.known ? mstat_fields_number(type, &v) : 0;
		break;
	}
}

const struct mstat_column *
mstat_columns_at(enum mstat_model_sort k)
{
	return (unsigned)k < MSTAT_SORT_COUNT ? &columns[k] : NULL;
}

const char *
mstat_columns_sort_name(enum mstat_model_sort k)
{
	return (unsigned)k < MSTAT_SORT_COUNT ? columns[k].title : "?";
}

const char *
mstat_columns_text(enum mstat_model_sort k, const struct mstat_model_row *r,
		   uint64_t now_ns, char *buf, size_t len)
{
	const struct mstat_column *col = mstat_columns_at(k);
	struct mstat_cell c = { 0 };

	if (!col) {
		snprintf(buf, len, "?");
		return buf;
	}
	cell_of(col, r, now_ns, &c);
	if (col->unit & MSTAT_COLUMN_TEXT)
		snprintf(buf, len, "%s", c.known ? c.text : "-");
	else if (col->unit & MSTAT_COLUMN_ID)
		snprintf(buf, len, c.known ? "%.0f" : "-", c.v);
	else if (col->unit & MSTAT_COLUMN_AGE)
		mstat_units_format(buf, len, MSTAT_UNIT_SECONDS, c.known, c.v);
	else
		mstat_units_format(buf, len, col->unit, c.known, c.v);
	return buf;
}

/* ---- cells: cut and padded by characters ---- */

/* Characters of UTF-8 text (which text.h's rules leave): a character is
 * one cell. */
static int
chars(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += (*s & 0xc0) != 0x80;
	return n;
}

/* The bytes of the first `n` characters of `s`. */
static int
prefix(const char *s, int n)
{
	int b = 0;

	for (; s[b] && n > 0; n--)
		for (b++; (s[b] & 0xc0) == 0x80; b++)
			;
	return b;
}

/* `s`, or, longer than `w` characters, its first w - 1 and the
 * ellipsis. */
static void
cut(char *out, size_t len, const char *s, int w, const char *ellipsis)
{
	if (w <= 0 || chars(s) <= w)
		snprintf(out, len, "%s", s);
	else
		snprintf(out, len, "%.*s%s", prefix(s, w - 1), s, ellipsis);
}

/* NAME in `w` characters: whole if it fits; else the name and as much of
 * its [comm] as fits, marked cut; else the name alone; else the name,
 * cut.  The program's own name stays readable as long as it can. */
static void
name_cell(char *out, size_t len, const struct mstat_model_row *r, int w,
	  const char *ellipsis)
{
	/* The plain rule never lengthens text. */
	char name[sizeof(r->name)], comm[sizeof(r->comm)];

	mstat_text_escape(name, sizeof(name), r->name, MSTAT_TEXT_PLAIN);
	if (!name_with_comm(r)) {
		cut(out, len, name, w, ellipsis);
		return;
	}
	mstat_text_escape(comm, sizeof(comm), r->comm, MSTAT_TEXT_PLAIN);
	int nn = chars(name), room = w - nn - 4; /* " [", the ellipsis, "]" */
	if (w <= 0 || nn + 3 + chars(comm) <= w)
		snprintf(out, len, "%s [%s]", name, comm);
	else if (room >= 0)
		snprintf(out, len, "%s [%.*s%s]", name, prefix(comm, room), comm,
			 ellipsis);
	else
		cut(out, len, name, w, ellipsis);
}

/* `text` (escaped, cut if words) padded to `w` characters. */
static const char *
pad(const struct mstat_column *c, const char *text, int w, char *buf,
    size_t len)
{
	int n = chars(text), fill = w > n ? w - n : 0;

	if (c->unit & MSTAT_COLUMN_TEXT)
		snprintf(buf, len, "%s%*s", text, fill, "");
	else
		snprintf(buf, len, "%*s%s", fill, "", text);
	return buf;
}

const char *
mstat_columns_pad(enum mstat_model_sort k, const char *text, int width,
		  const char *ellipsis, char *buf, size_t len)
{
	const struct mstat_column *col = mstat_columns_at(k);
	char esc[256], shown[256];

	mstat_text_escape(esc, sizeof(esc), text, MSTAT_TEXT_PLAIN);
	if (!col) {
		snprintf(buf, len, "%s", esc);
		return buf;
	}
	if (col->unit & MSTAT_COLUMN_TEXT)
		cut(shown, sizeof(shown), esc, width, ellipsis);
	else
		snprintf(shown, sizeof(shown), "%s", esc); /* never cut */
	return pad(col, shown, width, buf, len);
}

const char *
mstat_columns_cell(enum mstat_model_sort k, const struct mstat_model_row *r,
		   uint64_t now_ns, int width, const char *ellipsis, char *buf,
		   size_t len)
{
	char text[256];

	if (k != MSTAT_SORT_NAME) {
		mstat_columns_text(k, r, now_ns, text, sizeof(text));
		return mstat_columns_pad(k, text, width, ellipsis, buf, len);
	}
	name_cell(text, sizeof(text), r, width, ellipsis);
	return pad(&columns[k], text, width, buf, len);
}

/* Whether `s` names `n`: any case, '_' for '-'. */
static bool
names(const char *s, const char *n)
{
	size_t i = 0;

	while (s[i] && n[i] &&
	       (tolower((unsigned char)s[i]) == tolower((unsigned char)n[i]) ||
		(s[i] == '_' && n[i] == '-')))
		i++;
	return !s[i] && !n[i];
}

int
mstat_columns_parse_sort(const char *s)
{
	for (int k = 0; k < MSTAT_SORT_COUNT; k++)
		if (names(s, columns[k].name) || names(s, columns[k].title))
			return k;
	return -1;
}

/* ---- sorting ---- */

struct sort_ctx {
	enum mstat_model_sort key;
	bool reverse;
	uint64_t now_ns;
};

static int
cmp_double(double a, double b)
{
	return (a > b) - (a < b);
}

static int
cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct mstat_model_row *a = *(const struct mstat_model_row *const *)pa;
	const struct mstat_model_row *b = *(const struct mstat_model_row *const *)pb;
	const struct sort_ctx *ctx = arg;
	const struct mstat_column *col = &columns[ctx->key];
	struct mstat_cell x = { 0 }, y = { 0 };
	int c;

	cell_of(col, a, ctx->now_ns, &x);
	cell_of(col, b, ctx->now_ns, &y);
	if (x.known != y.known) {
		c = x.known ? -1 : 1; /* what is not known yet goes last */
	} else if (col->unit & MSTAT_COLUMN_TEXT &&
		   mstat_fields_at(col->field)->type != MSTAT_TYPE_STATE) {
		c = x.known ? strcmp(x.text, y.text) : 0;
	} else if (col->unit & (MSTAT_COLUMN_ID | MSTAT_COLUMN_TEXT)) {
		c = cmp_double(x.v, y.v);
	} else {
		/* Numbers largest first; ages too: the oldest first. */
		c = -cmp_double(x.v, y.v);
	}
	if (c == 0)
		c = (a->pid > b->pid) - (a->pid < b->pid);
	if (c == 0)
		c = strcmp(a->key, b->key);
	return ctx->reverse ? -c : c;
}

size_t
mstat_columns_view(const struct mstat_model *m, const char *filter,
		   enum mstat_model_sort key, bool reverse,
		   const struct mstat_model_row **out)
{
	struct sort_ctx ctx = { (unsigned)key < MSTAT_SORT_COUNT ? key
								 : MSTAT_SORT_PID,
				reverse, m->wall_ns };
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		if (mstat_model_match(m->rows[i], filter))
			out[n++] = m->rows[i];
	qsort_r(out, n, sizeof(*out), cmp_rows, &ctx);
	return n;
}

int
mstat_columns_fit(int width, enum mstat_model_sort keep, bool *shown)
{
	int used = -1; /* n columns take n - 1 separators */

	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		shown[k] = true;
		used += columns[k].width + 1;
	}
	/* Drop, highest first, until the rest fits. */
	while (used > width) {
		int worst = -1;
		for (int k = 0; k < MSTAT_SORT_COUNT; k++)
			if (shown[k] && columns[k].drop && k != (int)keep &&
			    (worst < 0 || columns[k].drop > columns[worst].drop))
				worst = k;
		if (worst < 0)
			break; /* only what always stays: NAME narrows */
		shown[worst] = false;
		used -= columns[worst].width + 1;
	}
	/* NAME takes what is left; or, too narrow still, narrows so that
	 * what comes after it (STATE) stays on screen. */
	int name = columns[MSTAT_SORT_NAME].width + (width - used);
	if (name < MSTAT_COLUMN_NAME_MIN)
		name = MSTAT_COLUMN_NAME_MIN;
	return name > MSTAT_COLUMN_NAME_MAX ? MSTAT_COLUMN_NAME_MAX : name;
}
