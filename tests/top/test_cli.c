/* SPDX-License-Identifier: MIT */
/*
 * test_cli.c - the option lists' parser and --help (core/cli.c): every
 * kind's values taken and refused, with the exact line each refusal
 * says; defaults; what getopt complains of, as one line; --help wrapped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/cli.h"

struct opts {
	bool flag, neg;
	uint64_t count, bytes;
	double seconds;
	const char *text;
	const char *file;
	int list[4];
	size_t nlist;
	int colour;
};

/* A comma-separated list of 1 to 4 digits "1".."9", appended. */
static int
digits(const char *v, void *dst, char *why, size_t len)
{
	struct opts *o = (struct opts *)((char *)dst - offsetof(struct opts, list));
	const char *all = v;

	for (; *v; v++) {
		if (*v == ',')
			continue;
		if (*v < '1' || *v > '9')
			return -1; /* say .want */
		if (o->nlist == 4) {
			/* The value, then the reason, as a file's is said:
			 * the line says the value once. */
			snprintf(why, len, "%s: at most 4 of them", all);
			return -1;
		}
		o->list[o->nlist++] = *v - '0';
	}
	return 0;
}

static const char *
words(void)
{
	return "1, 2, ..., 9";
}

static int
colour(const char *v)
{
	return strcmp(v, "red") == 0 ? 0 : strcmp(v, "blue") == 0 ? 1 : -1;
}

static const char *
colours(void)
{
	return "red, blue";
}

static const struct mstat_cli_option options[] = {
	{ .name = "flag", .letter = 'f', MSTAT_CLI_FLAG(struct opts, flag),
	  .help = "a flag" },
	{ .name = "neg", MSTAT_CLI_FLAG(struct opts, neg), .negatable = true,
	  .help = "a flag that can be turned off" },
	{ .name = "count", .letter = 'c', .arg = "N",
	  MSTAT_CLI_NUMBER(struct opts, count, 1, 1000), .want = "a count",
	  .dflt = "7", .help = "how many times the thing is done, which takes "
	  "more words than a line holds" },
	{ .name = "bytes", .arg = "N",
	  MSTAT_CLI_NUMBER(struct opts, bytes, 0, UINT64_MAX),
	  .want = "a number of bytes", .help = "bytes, any number of them" },
	{ .name = "seconds", .arg = "SECONDS",
	  MSTAT_CLI_REAL(struct opts, seconds, 0.1, 31536000), .want = "seconds",
	  .help = "how long" },
	{ .name = "text", .letter = 't', .arg = "TEXT",
	  MSTAT_CLI_TEXT(struct opts, text, 5), .help = "some text" },
	{ .name = "a-rather-long-option-name", .arg = "FILE",
	  MSTAT_CLI_TEXT(struct opts, file, 0), .want = "a file",
	  .dflt_text = "none", .help = "a file" },
	{ .name = "digit", .letter = 'd', .arg = "D[,D..]",
	  MSTAT_CLI_PARSE(struct opts, list, digits), .want = "digits",
	  .values = words, .help = "digits" },
	{ .name = "colour", .arg = "COLOUR",
	  MSTAT_CLI_CHOICE(struct opts, colour, colour), .want = "a colour",
	  .values = colours, .dflt = "blue", .help = "paint it" },
	{ .name = "help", .letter = 'h', .kind = MSTAT_CLI_KIND_HELP,
	  .help = "this text" },
	{ .name = "version", .letter = 'V', .kind = MSTAT_CLI_KIND_VERSION,
	  .help = "the version" },
};

static const struct mstat_cli cli = {
	.program = "prog",
	.version = "1.2.3",
	.synopsis = "prog [options]",
	.about = "Does things.",
	.epilogue = "More is said in prog(1).\n",
	.options = options,
	.n = sizeof(options) / sizeof(options[0]),
	.column = 24,
};

/* What a parse said on stderr, and its result. */
static char said[4096];

static enum mstat_cli_result
parse_with(const struct mstat_cli *c, struct opts *o, int *next, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "prog";
	va_start(ap, next);
	for (char *a; (a = va_arg(ap, char *)); )
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;

	FILE *err = tmpfile();
	assert_non_null(err);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	memset(o, 0, sizeof(*o));
	enum mstat_cli_result r = mstat_cli_parse(c, o, argc, argv, next);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(err);
	size_t n = fread(said, 1, sizeof(said) - 1, err);
	said[n] = '\0';
	fclose(err);
	return r;
}

#define PARSE(o, ...) parse_with(&cli, (o), &next, __VA_ARGS__, (char *)NULL)

/* Refused, saying exactly `line`. */
#define REFUSED(line, ...)                                                    \
	do {                                                                  \
		struct opts o_;                                               \
		int next;                                                     \
		assert_int_equal(PARSE(&o_, __VA_ARGS__), MSTAT_CLI_REFUSED); \
		assert_string_equal(said, line "\n");                         \
	} while (0)

static void
test_values(void **state)
{
	struct opts o;
	int next;

	(void)state;
	assert_int_equal(PARSE(&o, "-f", "--count=12", "--seconds", "0.5",
			       "-t", "abcde", "--neg", "--no-neg", "-d", "1,2",
			       "--digit=3", "--a-rather=x"),
			 MSTAT_CLI_OK);
	assert_string_equal(said, "");
	assert_true(o.flag);
	assert_false(o.neg);
	assert_int_equal(o.count, 12);
	assert_true(o.seconds == 0.5);
	assert_string_equal(o.text, "abcde");
	assert_string_equal(o.file, "x");
	assert_int_equal(o.nlist, 3);
	assert_int_equal(o.list[2], 3);
	assert_int_equal(next, 13);

	/* The defaults, and bounds that are taken. */
	assert_int_equal(PARSE(&o, "--neg"), MSTAT_CLI_OK);
	assert_true(o.neg);
	assert_int_equal(o.count, 7);
	assert_int_equal(o.colour, 1);
	assert_int_equal(PARSE(&o, "--colour=red"), MSTAT_CLI_OK);
	assert_int_equal(o.colour, 0);
	assert_null(o.text);
	assert_int_equal(PARSE(&o, "-c", "1", "-c", "1000", "--seconds",
			       "31536000", "--bytes=18446744073709551615"),
			 MSTAT_CLI_OK);
	assert_true(o.bytes == UINT64_MAX);
	assert_int_equal(o.count, 1000);
	assert_true(o.seconds == 31536000);
	assert_int_equal(PARSE(&o, "--seconds=.1"), MSTAT_CLI_OK);
	assert_true(o.seconds == 0.1);
}

static void
test_refused(void **state)
{
	(void)state;
	REFUSED("prog: bad value '0' for -c: a count, 1 to 1000", "-c", "0");
	REFUSED("prog: bad value '1001' for --count: a count, 1 to 1000",
		"--count=1001");
	REFUSED("prog: bad value '' for --count: a count, 1 to 1000",
		"--count=");
	REFUSED("prog: bad value '-1' for -c: a count, 1 to 1000", "-c", "-1");
	REFUSED("prog: bad value ' 5' for -c: a count, 1 to 1000", "-c", " 5");
	REFUSED("prog: bad value '5x' for -c: a count, 1 to 1000", "-c", "5x");
	REFUSED("prog: bad value '18446744073709551617' for -c: a count, 1 to "
		"1000", "-c", "18446744073709551617");
	REFUSED("prog: bad value '-1' for --bytes: a number of bytes",
		"--bytes=-1");
	REFUSED("prog: bad value '18446744073709551616' for --bytes: a number "
		"of bytes", "--bytes=18446744073709551616");
	REFUSED("prog: bad value '0.05' for --seconds: seconds, 0.1 to 31536000",
		"--seconds=0.05");
	REFUSED("prog: bad value 'inf' for --seconds: seconds, 0.1 to 31536000",
		"--seconds=inf");
	REFUSED("prog: bad value 'nan' for --seconds: seconds, 0.1 to 31536000",
		"--seconds=nan");
	REFUSED("prog: bad value '-1' for --seconds: seconds, 0.1 to 31536000",
		"--seconds=-1");
	REFUSED("prog: bad value '1s' for --seconds: seconds, 0.1 to 31536000",
		"--seconds=1s");
	REFUSED("prog: bad value '' for -t: text, 1 to 5 bytes", "-t", "");
	REFUSED("prog: bad value 'abcdef' for -t: text, 1 to 5 bytes", "-t",
		"abcdef");
	REFUSED("prog: bad value '' for --a-rather-long-option-name: a file",
		"--a-rather-long-option-name=");
	/* A parse function's own reason, or the option's want. */
	REFUSED("prog: bad value '0' for -d: digits: 1, 2, ..., 9", "-d", "0");
	REFUSED("prog: bad value 'green' for --colour: a colour: red, blue",
		"--colour=green");
	REFUSED("prog: bad value '' for -d: digits: 1, 2, ..., 9", "-d", "");
	REFUSED("prog: bad value '5' for --digit: at most 4 of them",
		"-d", "1,2,3,4", "--digit", "5");
	/* What getopt finds. */
	REFUSED("prog: unknown option '--what': prog --help lists them",
		"--what");
	REFUSED("prog: unknown option '-x': prog --help lists them", "-x");
	REFUSED("prog: --count needs a value: a count, 1 to 1000", "--count");
	REFUSED("prog: -c needs a value: a count, 1 to 1000", "-c");
	REFUSED("prog: --flag takes no value", "--flag=1");
	REFUSED("prog: --no-neg takes no value", "--no-neg=1");
	REFUSED("prog: unexpected argument 'x'", "-f", "x");
}

static void
test_operands(void **state)
{
	struct mstat_cli c = cli;
	struct opts o;
	int next;

	(void)state;
	c.operands = true;
	/* The first operand ends the options: its own are its own. */
	assert_int_equal(parse_with(&c, &o, &next, "-f", "cmd", "-c", "0",
				    (char *)NULL), MSTAT_CLI_OK);
	assert_int_equal(next, 2);
	assert_int_equal(o.count, 7);
	assert_int_equal(parse_with(&c, &o, &next, "-c", "3", "--", "-c",
				    (char *)NULL), MSTAT_CLI_OK);
	assert_int_equal(next, 4);
	assert_int_equal(o.count, 3);
}

/* A default the list's own kind refuses is said at once. */
static void
test_bad_default(void **state)
{
	struct mstat_cli_option bad[] = { options[2] };
	struct mstat_cli c = cli;
	struct opts o;
	int next;

	(void)state;
	bad[0].dflt = "0";
	c.options = bad;
	c.n = 1;
	assert_int_equal(parse_with(&c, &o, &next, (char *)NULL),
			 MSTAT_CLI_REFUSED);
	assert_string_equal(said, "prog: the default of --count, '0', is "
			    "refused: a count, 1 to 1000\n");
}

static const char usage[] =
	"usage: prog [options]\n"
	"Does things.\n"
	"\n"
	"  -f, --flag            a flag\n"
	"      --[no-]neg        a flag that can be turned off\n"
	"  -c, --count=N         how many times the thing is done, which takes more\n"
	"                        words than a line holds (1 to 1000; default 7)\n"
	"      --bytes=N         bytes, any number of them\n"
	"      --seconds=SECONDS  how long (0.1 to 31536000)\n"
	"  -t, --text=TEXT       some text (1 to 5 bytes)\n"
	"      --a-rather-long-option-name=FILE  a file (default: none)\n"
	"  -d, --digit=D[,D..]   digits: 1, 2, ..., 9\n"
	"      --colour=COLOUR   paint it: red, blue (default blue)\n"
	"  -h, --help            this text\n"
	"  -V, --version         the version\n"
	"\n"
	"More is said in prog(1).\n";

static void
test_usage(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	mstat_cli_usage(&cli, f);
	fclose(f);
	assert_string_equal(buf, usage);
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_operands),
		cmocka_unit_test(test_bad_default),
		cmocka_unit_test(test_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
