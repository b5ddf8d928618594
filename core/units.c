/* SPDX-License-Identifier: MIT */
/*
 * units.c - numbers as people read them.  See units.h.
 */
#include "core/units.h"

#include <math.h>
#include <stdio.h>

/* Three significant digits of a (>= 0) scaled by `base` into one of
 * `units`; the prefix index goes to *u. */
static double
scale(double a, double base, unsigned nunits, unsigned *u)
{
	*u = 0;
	/* 999.5 and above would print as 1000: the next unit then. */
	while (a >= 999.5 && *u + 1 < nunits) {
		a /= base;
		(*u)++;
	}
	return a;
}

static int
digits(double a)
{
	return a < 9.995 ? 2 : a < 99.95 ? 1 : 0;
}

static const char *
age(char *buf, size_t len, double v)
{
	unsigned long long s = v > 0 ? (unsigned long long)v : 0;

	if (s < 60)
		snprintf(buf, len, "%llus", s);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lluh%02llum", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%llud%02lluh", s / 86400, s / 3600 % 24);
	return buf;
}

/* Seconds, three digits in the largest of ns, us, ms and s below a
 * minute, an age from there. */
static const char *
duration(char *buf, size_t len, double v)
{
	static const char *const sub[] = { "ns", "us", "ms", "s" };
	unsigned p;

	if (v >= 59.5)
		return age(buf, len, v);
	double a = scale(v > 0 ? v * 1e9 : 0, 1000.0, sizeof(sub) / sizeof(sub[0]), &p);
	snprintf(buf, len, "%.*f%s", p ? digits(a) : 0, a, sub[p]);
	return buf;
}

const char *
mstat_units_format(char *buf, size_t len, unsigned u, bool known, double v)
{
	static const char *const si[] = { "", "k", "M", "G", "T", "P", "E" };
	static const char *const iec[] = { "B", "KiB", "MiB", "GiB", "TiB",
					   "PiB", "EiB" };
	const char *rate = u & MSTAT_UNIT_RATE ? "/s" : "";
	const char *sign = v < 0 ? "-" : u & MSTAT_UNIT_SIGNED && v > 0 ? "+" : "";
	unsigned p;

	if (!known || isnan(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	if ((u & MSTAT_UNIT_KIND) == MSTAT_UNIT_SECONDS)
		return age(buf, len, v);
	if ((u & MSTAT_UNIT_KIND) == MSTAT_UNIT_PERCENT) {
		snprintf(buf, len, "%s%.*f%%", sign, fabs(v) < 9.95 ? 1 : 0, fabs(v));
		return buf;
	}
	if ((u & MSTAT_UNIT_KIND) == MSTAT_UNIT_DURATION)
		return duration(buf, len, v);
	double a = fabs(v);
	if ((u & MSTAT_UNIT_KIND) == MSTAT_UNIT_BYTES) {
		a = scale(a, 1024.0, sizeof(iec) / sizeof(iec[0]), &p);
		if (a >= 999.5) /* past the last unit: no counter gets there */
			snprintf(buf, len, "%s>999%s%s", sign, iec[p], rate);
		else if (p == 0) /* whole bytes */
			snprintf(buf, len, "%s%.0f%s%s", sign, a, iec[0], rate);
		else
			snprintf(buf, len, "%s%.*f%s%s", sign, digits(a), a,
				 iec[p], rate);
		return buf;
	}
	a = scale(a, 1000.0, sizeof(si) / sizeof(si[0]), &p);
	if (a >= 999.5)
		snprintf(buf, len, "%s>999%s%s", sign, si[p], rate);
	else if (p == 0 && (u & MSTAT_UNIT_RATE) && a < 9.995 && a != floor(a))
		snprintf(buf, len, "%s%.1f%s", sign, a, rate); /* 0.5/s */
	else if (p == 0)
		snprintf(buf, len, "%s%.0f%s", sign, a, rate);
	else
		snprintf(buf, len, "%s%.*f%s%s", sign, digits(a), a, si[p], rate);
	return buf;
}
