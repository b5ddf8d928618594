/* SPDX-License-Identifier: MIT */
/*
 * units.h - numbers as people read them, the same in every face.
 *
 *   counts     SI: 999, 1.23k, 12.3M            (k = 1000)
 *   bytes      IEC: 999B, 1.23KiB, 12.3MiB      (KiB = 1024)
 *   seconds    an age: 42s, 12m05s, 3h07m, 2d04h
 *   percent    a share: 0.5%, 42%, 100%
 *   duration   seconds, from nanoseconds: 287ns, 1.23us, 12.3ms, 4.56s,
 *              then as an age from a minute on (a block's lifetime)
 *
 * Three significant digits and at most three before the point, so a
 * value keeps its width as it grows.  MSTAT_UNIT_SIGNED writes a sign
 * (+12KiB, -3, 0B: growth), MSTAT_UNIT_RATE appends "/s".  What is not
 * known yet is "-", whatever the unit.
 */
#ifndef MSTAT_CORE_UNITS_H
#define MSTAT_CORE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

enum mstat_unit {
	MSTAT_UNIT_COUNT = 0,
	MSTAT_UNIT_BYTES = 1,
	MSTAT_UNIT_SECONDS = 2,
	MSTAT_UNIT_PERCENT = 3,
	MSTAT_UNIT_DURATION = 4,
	MSTAT_UNIT_KIND = 7,       /* the bits above */
	MSTAT_UNIT_SIGNED = 1 << 3,
	MSTAT_UNIT_RATE = 1 << 4,
};

/* The longest text a unit makes, with its NUL: "-1023.9PiB/s". */
#define MSTAT_UNIT_MAX 16

/* Writes v in unit `u` (enum mstat_unit bits) into buf, or "-" if not
 * `known`; returns buf. */
const char *mstat_units_format(char *buf, size_t len, unsigned u, bool known,
			       double v);

#endif /* MSTAT_CORE_UNITS_H */
