/* SPDX-License-Identifier: MIT */
/*
 * cli.h - a program's command-line options, listed once.
 *
 * Each program (mstat-top, mstat-exporter, mstat-run) lists its options
 * in one array of struct mstat_cli_option: the option's names, its
 * value's kind, range and default, where the value lands in the
 * program's struct of options, and what it does.  That list makes
 *
 *   mstat_cli_parse()  the parser (getopt_long's tables are made from
 *                      it): every value checked, and refused in one
 *                      place with one line that says what the option
 *                      takes, "mstat-top: bad value '0' for -n: a
 *                      number of ticks, 1 or more"; an empty value is
 *                      refused for every option, so that `-p "$PID"`
 *                      with PID unset is an error, not "every process";
 *   mstat_cli_usage()  --help: the options in the list's order, each with
 *                      its range and default;
 *
 * and the man pages' OPTIONS are checked against --help (tests/docs/).
 * As lib/config.h is to the environment.  To add an option: a member of
 * the program's struct of options and a line in its list; a paragraph in
 * its man page.
 */
#ifndef MSTAT_CORE_CLI_H
#define MSTAT_CORE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mstat_cli_kind {
	MSTAT_CLI_KIND_FLAG,    /* no value: a bool, set true (--no-NAME:
				 * false, with .negatable) */
	MSTAT_CLI_KIND_NUMBER,  /* decimal digits, .min to .max: a uint64_t */
	MSTAT_CLI_KIND_REAL,    /* a decimal number, .lo to .hi: a double */
	MSTAT_CLI_KIND_TEXT,    /* 1 to .max bytes (0: any length), as it
				 * is: a const char * into argv */
	MSTAT_CLI_KIND_CHOICE,  /* a word .choose() knows: the int it gives */
	MSTAT_CLI_KIND_PARSE,   /* .parse() reads it into what .at names */
	MSTAT_CLI_KIND_HELP,    /* prints --help; the program exits 0 */
	MSTAT_CLI_KIND_VERSION, /* prints "PROGRAM VERSION"; exits 0 */
};

/*
 * Reads `value` into `dst` (the program's member the option names): 0,
 * or -1 with why in `why` ("" to say the option's .want).
 */
typedef int mstat_cli_parse_fn(const char *value, void *dst, char *why,
			       size_t whylen);

struct mstat_cli_option {
	const char *name;        /* --name */
	char letter;             /* -l, or 0 */
	enum mstat_cli_kind kind;
	size_t at;               /* offsetof() the member it lands in */
	const char *arg;         /* the value's name in --help ("SECONDS");
				  * NULL for a FLAG */
	uint64_t min, max;       /* NUMBER; TEXT: max, its bytes */
	double lo, hi;           /* REAL */
	const char *dflt;        /* read as a value before the command line;
				  * NULL: the program's struct has it */
	const char *dflt_text;   /* the default in words, where .dflt does
				  * not say it (the environment's): --help
				  * says "default: WORDS", not "default
				  * VALUE" */
	const char *help;        /* what it does, for --help */
	const char *want;        /* what a value is, for a refusal: "a
				  * number of ticks", "seconds" */
	const char *(*values)(void); /* the words a value may be, listed
				      * after .want and .help */
	mstat_cli_parse_fn *parse;
	int (*choose)(const char *value); /* CHOICE: 0 or more, or -1 */
	bool negatable;          /* FLAG: --no-NAME too, shown --[no-]NAME */
};

/* The offset of `member` of `type`, which must be of type `t`: another
 * type stops the build (a negative array size). */
#define MSTAT_CLI_LANDS(type, member, t)                                      \
	(offsetof(type, member) +                                             \
	 0 * sizeof(char[_Generic(((type *)0)->member, t: 1, default: -1)]))

/* The kind and where it lands, checked, for a line of a list. */
#define MSTAT_CLI_FLAG(type, member)                                          \
	.kind = MSTAT_CLI_KIND_FLAG, .at = MSTAT_CLI_LANDS(type, member, bool)
#define MSTAT_CLI_NUMBER(type, member, lo_, hi_)                              \
	.kind = MSTAT_CLI_KIND_NUMBER,                                        \
	.at = MSTAT_CLI_LANDS(type, member, uint64_t), .min = (lo_),          \
	.max = (hi_)
#define MSTAT_CLI_REAL(type, member, lo_, hi_)                                \
	.kind = MSTAT_CLI_KIND_REAL,                                          \
	.at = MSTAT_CLI_LANDS(type, member, double), .lo = (lo_), .hi = (hi_)
#define MSTAT_CLI_TEXT(type, member, max_)                                    \
	.kind = MSTAT_CLI_KIND_TEXT,                                          \
	.at = MSTAT_CLI_LANDS(type, member, const char *), .max = (max_)
#define MSTAT_CLI_CHOICE(type, member, fn)                                    \
	.kind = MSTAT_CLI_KIND_CHOICE,                                        \
	.at = MSTAT_CLI_LANDS(type, member, int), .choose = (fn)
#define MSTAT_CLI_PARSE(type, member, fn)                                     \
	.kind = MSTAT_CLI_KIND_PARSE, .at = offsetof(type, member), .parse = (fn)

/* A program's options. */
struct mstat_cli {
	const char *program;     /* "mstat-top": every line begins with it */
	const char *version;     /* what --version prints after the name */
	const char *synopsis;    /* --help's first line, after "usage: " */
	const char *about;       /* then this, before the options */
	const char *epilogue;    /* and this after them, or NULL */
	const struct mstat_cli_option *options;
	size_t n;
	int column;              /* where --help's text of an option begins */
	bool operands;           /* arguments after the options: the parser
				  * stops at the first (mstat-run's command) */
};

/* Where mstat_cli_parse() stopped. */
enum mstat_cli_result { /* a program's parse_options() returns it */
	MSTAT_CLI_REFUSED = -1,  /* said why on stderr */
	MSTAT_CLI_OK = 0,        /* `opts` is filled; *next: the first operand */
	MSTAT_CLI_DONE = 1,      /* --help or --version printed: exit 0 */
};

/*
 * Reads argv into `opts`, the program's struct of options, which holds
 * the defaults of the options without a .dflt: each .dflt first, then
 * each option given, in order (a later one wins; a repeated PARSE
 * option is given each value).  *next is set to the index of the first
 * operand.
 */
enum mstat_cli_result mstat_cli_parse(const struct mstat_cli *cli, void *opts,
				      int argc, char **argv, int *next);

/* Prints --help. */
void mstat_cli_usage(const struct mstat_cli *cli, FILE *f);

/* What a value of `o` is, as a refusal says it ("seconds, 0.1 to 3600"),
 * into buf; returns buf. */
const char *mstat_cli_want(const struct mstat_cli_option *o, char *buf,
			   size_t len);

#endif /* MSTAT_CORE_CLI_H */
