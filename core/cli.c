/* SPDX-License-Identifier: MIT */
/*
 * cli.c - a program's options read by its list; see cli.h.
 */
#include "core/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

/* getopt_long's values: a long option is VAL_LONG + its index, its
 * negation VAL_NO + its index; a letter is itself. */
#define VAL_LONG 256
#define VAL_NO 4096
#define WIDTH 79 /* of --help */

#define say(cli, ...) mstat_text_say((cli)->program, __VA_ARGS__)

/* A number as a range says it: whole ones without a point or an
 * exponent ("31536000", not "3.1536e+07"). */
static const char *
number(char *buf, size_t len, double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%g", v);
	return buf;
}

/* "MIN to MAX", or "MIN or more" without an upper bound; "" if the kind
 * has no range, or a number has none. */
static const char *
range(const struct mstat_cli_option *o, char *buf, size_t len)
{
	char lo[32], hi[32];

	buf[0] = '\0';
	if (o->kind == MSTAT_CLI_KIND_NUMBER && o->min == 0 &&
	    o->max == UINT64_MAX) {
		return buf; /* any number: its kind says it */
	} else if (o->kind == MSTAT_CLI_KIND_NUMBER) {
		snprintf(lo, sizeof(lo), "%llu", (unsigned long long)o->min);
		snprintf(hi, sizeof(hi), "%llu", (unsigned long long)o->max);
	} else if (o->kind == MSTAT_CLI_KIND_REAL) {
		number(lo, sizeof(lo), o->lo);
		number(hi, sizeof(hi), o->hi);
	} else if (o->kind == MSTAT_CLI_KIND_TEXT && o->max) {
		snprintf(buf, len, "1 to %llu bytes",
			 (unsigned long long)o->max);
		return buf;
	} else {
		return buf;
	}
	if (o->kind == MSTAT_CLI_KIND_NUMBER && o->max == UINT64_MAX)
		snprintf(buf, len, "%s or more", lo);
	else
		snprintf(buf, len, "%s to %s", lo, hi);
	return buf;
}

const char *
mstat_cli_want(const struct mstat_cli_option *o, char *buf, size_t len)
{
	char r[96];
	const char *noun = o->want ? o->want
			 : o->kind == MSTAT_CLI_KIND_TEXT ? "text" : "a number";

	range(o, r, sizeof(r));
	if (o->kind == MSTAT_CLI_KIND_PARSE || o->kind == MSTAT_CLI_KIND_CHOICE ||
	    !r[0])
		snprintf(buf, len, "%s%s%s", o->want ? o->want : "",
			 o->values ? ": " : "", o->values ? o->values() : "");
	else
		snprintf(buf, len, "%s, %s", noun, r);
	return buf;
}

/* Reads `v` into o's member of `opts`: 0, or -1 with why ("" for
 * o->want). */
static int
set(const struct mstat_cli_option *o, void *opts, const char *v, char *why,
    size_t len)
{
	void *dst = (char *)opts + o->at;
	char *end;

	why[0] = '\0';
	if (!*v)
		return -1; /* nothing an option can mean */
	switch (o->kind) {
	case MSTAT_CLI_KIND_NUMBER: {
		if (!isdigit((unsigned char)v[0]))
			return -1; /* no sign, no space */
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || *end || x < o->min || x > o->max)
			return -1;
		*(uint64_t *)dst = x;
		return 0;
	}
	case MSTAT_CLI_KIND_REAL: {
		if (!isdigit((unsigned char)v[0]) && v[0] != '.')
			return -1; /* no sign, no space, no "inf" */
		double x = strtod(v, &end);
		if (*end || !(x >= o->lo && x <= o->hi))
			return -1;
		*(double *)dst = x;
		return 0;
	}
	case MSTAT_CLI_KIND_TEXT:
		if (o->max && strlen(v) > o->max)
			return -1;
		*(const char **)dst = v;
		return 0;
	case MSTAT_CLI_KIND_CHOICE: {
		int k = o->choose(v);
		if (k < 0)
			return -1;
		*(int *)dst = k;
		return 0;
	}
	case MSTAT_CLI_KIND_PARSE:
		return o->parse(v, dst, why, len);
	default:
		return -1;
	}
}

/* Whether the option takes a value. */
static bool
valued(const struct mstat_cli_option *o)
{
	return o->kind == MSTAT_CLI_KIND_NUMBER || o->kind == MSTAT_CLI_KIND_REAL ||
	       o->kind == MSTAT_CLI_KIND_TEXT || o->kind == MSTAT_CLI_KIND_CHOICE ||
	       o->kind == MSTAT_CLI_KIND_PARSE;
}

/* getopt_long's tables, made from the list; NULL out of memory. */
static struct option *
longs_new(const struct mstat_cli *cli, char *shorts, size_t len,
	  char ***names)
{
	struct option *l = calloc(2 * cli->n + 1, sizeof(*l));
	size_t k = 0, s = 0;

	*names = calloc(cli->n + 1, sizeof(**names));
	if (!l || !*names) {
		free(l);
		free(*names);
		return NULL;
	}
	if (cli->operands)
		shorts[s++] = '+'; /* the first operand ends the options */
	shorts[s++] = ':';         /* a value missing: ':', not '?' */
	for (size_t i = 0; i < cli->n; i++) {
		const struct mstat_cli_option *o = &cli->options[i];
		int has = valued(o) ? required_argument : no_argument;
		l[k++] = (struct option){ o->name, has, NULL, VAL_LONG + (int)i };
		if (o->negatable && asprintf(&(*names)[i], "no-%s", o->name) > 0)
			l[k++] = (struct option){ (*names)[i], no_argument, NULL,
						  VAL_NO + (int)i };
		if (o->letter && s + 3 < len) {
			shorts[s++] = o->letter;
			if (has == required_argument)
				shorts[s++] = ':';
		}
	}
	shorts[s] = '\0';
	return l;
}

static void
longs_free(const struct mstat_cli *cli, struct option *l, char **names)
{
	for (size_t i = 0; names && i < cli->n; i++)
		free(names[i]);
	free(names);
	free(l);
}

/* The option getopt_long returned `c` for, and the name it was given by
 * ("-n", "--iterations"). */
static const struct mstat_cli_option *
option_of(const struct mstat_cli *cli, int c, char *name, size_t len)
{
	if (c >= VAL_NO) {
		snprintf(name, len, "--no-%s", cli->options[c - VAL_NO].name);
		return &cli->options[c - VAL_NO];
	}
	if (c >= VAL_LONG) {
		snprintf(name, len, "--%s", cli->options[c - VAL_LONG].name);
		return &cli->options[c - VAL_LONG];
	}
	for (size_t i = 0; i < cli->n; i++)
		if (cli->options[i].letter == c) {
			snprintf(name, len, "-%c", c);
			return &cli->options[i];
		}
	return NULL;
}

/* getopt_long's complaint (':' or '?', optopt) as one line. */
static void
complain(const struct mstat_cli *cli, int c, char **argv)
{
	char name[80], want[512];
	const struct mstat_cli_option *o =
		optopt ? option_of(cli, optopt, name, sizeof(name)) : NULL;

	if (c == ':' && o)
		say(cli, "%s needs a value: %s", name,
		    mstat_cli_want(o, want, sizeof(want)));
	else if (o && optopt >= VAL_LONG)
		say(cli, "%s takes no value", name);
	else if (optopt && optopt < VAL_LONG)
		say(cli, "unknown option '-%c': %s --help lists them", optopt,
		    cli->program);
	else
		say(cli, "unknown option '%s': %s --help lists them",
		    argv[optind - 1], cli->program);
}

/* The defaults the list gives. */
static int
defaults(const struct mstat_cli *cli, void *opts)
{
	char why[256], want[512];

	for (size_t i = 0; i < cli->n; i++) {
		const struct mstat_cli_option *o = &cli->options[i];
		if (o->dflt && set(o, opts, o->dflt, why, sizeof(why)) < 0) {
			say(cli, "the default of --%s, '%s', is refused: %s",
			    o->name, o->dflt, why[0] ? why
			    : mstat_cli_want(o, want, sizeof(want)));
			return -1;
		}
	}
	return 0;
}

/* One option given, `c` as getopt_long returned it. */
static enum mstat_cli_result
take(const struct mstat_cli *cli, void *opts, int c)
{
	char name[80], why[512], want[512];
	const struct mstat_cli_option *o = option_of(cli, c, name, sizeof(name));

	switch (o->kind) {
	case MSTAT_CLI_KIND_FLAG:
		*(bool *)((char *)opts + o->at) = c < VAL_NO;
		return MSTAT_CLI_OK;
	case MSTAT_CLI_KIND_HELP:
		mstat_cli_usage(cli, stdout);
		return MSTAT_CLI_DONE;
	case MSTAT_CLI_KIND_VERSION:
		printf("%s %s\n", cli->program, cli->version);
		return MSTAT_CLI_DONE;
	default:
		break;
	}
	if (set(o, opts, optarg, why, sizeof(why)) == 0)
		return MSTAT_CLI_OK;
	/* A reason that begins with the value, as a file's does ("/x: No
	 * such file or directory"), is said without it: the line has it. */
	size_t n = strlen(optarg);
	const char *r = strncmp(why, optarg, n) == 0 &&
			strncmp(why + n, ": ", 2) == 0 ? why + n + 2 : why;
	say(cli, "bad value '%s' for %s: %s", optarg, name,
	    r[0] ? r : mstat_cli_want(o, want, sizeof(want)));
	return MSTAT_CLI_REFUSED;
}

enum mstat_cli_result
mstat_cli_parse(const struct mstat_cli *cli, void *opts, int argc, char **argv,
		int *next)
{
	char shorts[128], **names;
	enum mstat_cli_result r = MSTAT_CLI_OK;
	int c;

	*next = argc;
	if (defaults(cli, opts) < 0)
		return MSTAT_CLI_REFUSED;
	struct option *longs = longs_new(cli, shorts, sizeof(shorts), &names);
	if (!longs) {
		say(cli, "out of memory");
		return MSTAT_CLI_REFUSED;
	}
	optind = 0; /* glibc: start afresh, whatever was parsed before */
	opterr = 0; /* said here, in one line */
	while (r == MSTAT_CLI_OK &&
	       (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (c == ':' || c == '?') {
			complain(cli, c, argv);
			r = MSTAT_CLI_REFUSED;
		} else {
			r = take(cli, opts, c);
		}
	}
	longs_free(cli, longs, names);
	if (r == MSTAT_CLI_OK && !cli->operands && optind < argc) {
		say(cli, "unexpected argument '%s'", argv[optind]);
		r = MSTAT_CLI_REFUSED;
	}
	*next = optind;
	return r;
}

/* `text`'s words, wrapped at WIDTH: the first line goes on from column
 * `at`, the others begin at column `col`. */
static void
wrap(FILE *f, const char *text, int at, int col)
{
	const char *w = text;
	bool first = true; /* of its line */

	while (*w) {
		size_t n = strcspn(w, " ");
		if (!first && at + 1 + (int)n > WIDTH) {
			fprintf(f, "\n%*s", col, "");
			at = col;
			first = true;
		}
		if (!first)
			at += fprintf(f, " ");
		at += fprintf(f, "%.*s", (int)n, w);
		first = false;
		w += n;
		w += strspn(w, " ");
	}
	fputc('\n', f);
}

/* One option's lines of --help. */
static void
usage_option(const struct mstat_cli *cli, const struct mstat_cli_option *o,
	     bool letters, FILE *f)
{
	char text[1024], r[96];
	int at;

	if (o->letter)
		at = fprintf(f, "  -%c, --%s", o->letter, o->name);
	else
		at = fprintf(f, "%s--%s%s", letters ? "      " : "  ",
			     o->negatable ? "[no-]" : "", o->name);
	if (o->arg)
		at += fprintf(f, "=%s", o->arg);
	/* The text at its column, or two spaces after a long option. */
	at += fprintf(f, "%*s", at + 2 <= cli->column ? cli->column - at : 2, "");
	size_t k = (size_t)snprintf(text, sizeof(text), "%s", o->help);
	if (o->values && k < sizeof(text))
		k += (size_t)snprintf(text + k, sizeof(text) - k, ": %s",
				      o->values());
	range(o, r, sizeof(r));
	/* A default that is a value, "default 60"; one said in words,
	 * "default: its MSTAT_KILLED_GRACE, or 300". */
	const char *dflt = o->dflt_text ? o->dflt_text : o->dflt;
	if ((r[0] || dflt) && k < sizeof(text))
		snprintf(text + k, sizeof(text) - k, " (%s%s%s%s)", r,
			 r[0] && dflt ? "; " : "",
			 !dflt ? "" : o->dflt_text ? "default: " : "default ",
			 dflt ? dflt : "");
	wrap(f, text, at, cli->column);
}

void
mstat_cli_usage(const struct mstat_cli *cli, FILE *f)
{
	bool letters = false;

	for (size_t i = 0; i < cli->n; i++)
		letters |= cli->options[i].letter != 0;
	fprintf(f, "usage: %s\n%s\n\n", cli->synopsis, cli->about);
	for (size_t i = 0; i < cli->n; i++)
		usage_option(cli, &cli->options[i], letters, f);
	if (cli->epilogue)
		fprintf(f, "\n%s", cli->epilogue);
}
