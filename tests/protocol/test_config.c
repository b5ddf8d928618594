/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - the MSTAT_* variables as the library reads them
 * (lib/config.c, by the list in config.h): each kind at and past its
 * bounds, what is ignored said in the status, and docs/libmstatshm.3
 * documenting exactly the variables of the list.
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/config.h"

static const char *const names[] = {
#define MSTAT_X(id, name, ...) [MSTAT_CONF_##id] = name,
	MSTAT_CONFIG(MSTAT_X)
#undef MSTAT_X
};

/* Variable `c` set to `value` (NULL: unset), its warnings cleared. */
static void
set(enum mstat_conf c, const char *value)
{
	if (value)
		setenv(names[c], value, 1);
	else
		unsetenv(names[c]);
	mstat_proc.warnings[0] = '\0';
}

static void
number_is(enum mstat_conf c, const char *value, uint64_t want, const char *warning)
{
	set(c, value);
	assert_int_equal(mstat_config_number(c), want);
	assert_string_equal(mstat_proc.warnings, warning);
}

static void
text_is(enum mstat_conf c, const char *value, const char *want, const char *warning)
{
	set(c, value);
	const char *got = mstat_config_text(c);
	if (want)
		assert_string_equal(got, want);
	else
		assert_null(got);
	assert_string_equal(mstat_proc.warnings, warning);
}

static void
flags(void **state)
{
	(void)state;
	number_is(MSTAT_CONF_EAGER, NULL, 0, "");
	number_is(MSTAT_CONF_EAGER, "", 0, "");
	number_is(MSTAT_CONF_EAGER, "0", 0, "");
	number_is(MSTAT_CONF_EAGER, "1", 1, "");
	number_is(MSTAT_CONF_DISABLE, "yes", 1, "");
}

static void
numbers(void **state)
{
	(void)state;
	const char *bad = "MSTAT_SLOTS ignored: not a number in 2..4096";

	number_is(MSTAT_CONF_SLOTS, NULL, 4096, "");
	number_is(MSTAT_CONF_SLOTS, "", 4096, "");
	number_is(MSTAT_CONF_SLOTS, "2", 2, "");
	number_is(MSTAT_CONF_SLOTS, "4096", 4096, "");
	number_is(MSTAT_CONF_SLOTS, "1", 4096, bad);
	number_is(MSTAT_CONF_SLOTS, "4097", 4096, bad);
	number_is(MSTAT_CONF_SLOTS, "-3", 4096, bad);
	number_is(MSTAT_CONF_SLOTS, "12x", 4096, bad);
	number_is(MSTAT_CONF_SLOTS, "99999999999999999999999", 4096, bad);
	number_is(MSTAT_CONF_REPORT_PID, "4242", 4242, "");
	number_is(MSTAT_CONF_REPORT_PID, "0", 0,
		  "MSTAT_REPORT_PID ignored: not a number in 1..2147483647");
}

static void
bytes(void **state)
{
	(void)state;
	const char *bad = "MSTAT_SAMPLE_BYTES ignored: not a number of bytes";

	number_is(MSTAT_CONF_SAMPLE_BYTES, NULL, 524288, "");
	number_is(MSTAT_CONF_SAMPLE_BYTES, "0", 0, "");
	number_is(MSTAT_CONF_SAMPLE_BYTES, "1", 1, "");
	number_is(MSTAT_CONF_SAMPLE_BYTES, "1099511627776", UINT64_C(1) << 40, "");
	/* Larger: the largest. */
	number_is(MSTAT_CONF_SAMPLE_BYTES, "1099511627777", UINT64_C(1) << 40, "");
	number_is(MSTAT_CONF_SAMPLE_BYTES, "-1", 524288, bad);
	number_is(MSTAT_CONF_SAMPLE_BYTES, "1k", 524288, bad);
	number_is(MSTAT_CONF_SAMPLE_BYTES, "99999999999999999999999", 524288, bad);
}

static void
modes(void **state)
{
	(void)state;
	number_is(MSTAT_CONF_MODE, NULL, MSTAT_DEFAULT_MODE, "");
	number_is(MSTAT_CONF_MODE, "fenced", MSTAT_MODE_FENCED, "");
	number_is(MSTAT_CONF_MODE, "membarrier", MSTAT_MODE_MEMBARRIER, "");
	number_is(MSTAT_CONF_MODE, "Fenced", MSTAT_DEFAULT_MODE,
		  "MSTAT_MODE ignored: use fenced or membarrier");
}

static void
texts(void **state)
{
	char longest[256], longer[257], name[200];

	(void)state;
	memset(longest, 'l', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	memset(longer, 'l', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	text_is(MSTAT_CONF_LOG, NULL, NULL, "");
	text_is(MSTAT_CONF_LOG, "", NULL, "");
	text_is(MSTAT_CONF_LOG, "stderr", "stderr", "");
	text_is(MSTAT_CONF_LOG, longest, longest, "");
	text_is(MSTAT_CONF_LOG, longer, NULL, "MSTAT_LOG ignored: longer than 255 bytes");
	/* A name of any length: the writer cuts it. */
	text_is(MSTAT_CONF_NAME, name, name, "");
}

/* The ENVIRONMENT section of docs/libmstatshm.3 names every variable of
 * the list, and no other. */
static void
documented(void **state)
{
	char path[4096], line[1024];
	bool seen[MSTAT_CONF_COUNT] = { false }, in = false;
	regex_t re;
	regmatch_t m;

	(void)state;
	snprintf(path, sizeof(path), "%s/docs/libmstatshm.3", getenv("MSTAT_SOURCE_ROOT"));
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(regcomp(&re, "MSTAT_[A-Z_]+", REG_EXTENDED), 0);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, ".SH ", 4) == 0)
			in = strncmp(line, ".SH ENVIRONMENT", 15) == 0;
		for (const char *p = line; in && regexec(&re, p, 1, &m, 0) == 0;
		     p += m.rm_eo) {
			int n = (int)(m.rm_eo - m.rm_so), c;
			for (c = 0; c < MSTAT_CONF_COUNT; c++)
				if ((int)strlen(names[c]) == n &&
				    strncmp(p + m.rm_so, names[c], (size_t)n) == 0)
					break;
			if (c == MSTAT_CONF_COUNT)
				fail_msg("%.*s is documented but not read", n, p + m.rm_so);
			seen[c] = true;
		}
	}
	fclose(f);
	regfree(&re);
	for (int c = 0; c < MSTAT_CONF_COUNT; c++)
		if (!seen[c])
			fail_msg("%s is read but not in %s", names[c], path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flags),   cmocka_unit_test(numbers),
		cmocka_unit_test(bytes),   cmocka_unit_test(modes),
		cmocka_unit_test(texts),   cmocka_unit_test(documented),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
