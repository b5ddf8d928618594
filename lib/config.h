/* SPDX-License-Identifier: MIT */
/*
 * config.h - every MSTAT_* variable the library reads, in one list:
 *
 *	X(id, name, kind, default, min, max, what it does)
 *
 * kind:   FLAG    set, and not "0": 1; else 0
 *         NUMBER  a decimal number in min..max
 *         BYTES   a decimal number of bytes, from min; above max, max
 *         MODE    "fenced" or "membarrier" (enum mstat_writer_mode)
 *         TEXT    min to max bytes, as it is
 *
 * A value that is not of its kind is ignored, and said
 * (mstat_status_warn(): "MSTAT_SLOTS ignored: not a number in
 * 2..4096"); unset or empty, a variable has its default.  The list drives
 * the parsing here and tests/protocol/test_config.c, which checks each
 * kind's bounds and that docs/libmstatshm.3 documents exactly these.
 * To add a variable: a line here, where it is used a call to
 * mstat_config_number() or mstat_config_text(), a paragraph in
 * docs/libmstatshm.3 and a row in README.md's table.
 */
#ifndef MSTAT_LIB_CONFIG_H
#define MSTAT_LIB_CONFIG_H

#include <stdint.h>

#include "shm/layout.h"
#include "shm/owner.h"
#include "shm/report.h"
#include "lib/state.h"

#ifndef MSTAT_DEFAULT_MODE /* meson_options.txt: default_mode */
#define MSTAT_DEFAULT_MODE MSTAT_MODE_MEMBARRIER
#endif

#define MSTAT_CONFIG(X)                                                       \
	X(NAME, MSTAT_ENV_NAME, TEXT, 0, 1, UINT64_MAX,                       \
	  "the name readers show (cut at 63 bytes); default: the program's")  \
	X(DISABLE, "MSTAT_DISABLE", FLAG, 0, 0, 1,                            \
	  "count nothing, make no segment, say nothing")                      \
	X(LOG, "MSTAT_LOG", TEXT, 0, 1, sizeof(mstat_proc.log) - 1,           \
	  "where to say why nothing is counted, or what was ignored: "        \
	  "stderr, or a file appended to")                                    \
	X(MODE, "MSTAT_MODE", MODE, MSTAT_DEFAULT_MODE, MSTAT_MODE_FENCED,    \
	  MSTAT_MODE_MEMBARRIER, "how a writer orders its update against "    \
	  "readers (docs/design.md, \"Fencing modes\")")                      \
	X(SLOTS, "MSTAT_SLOTS", NUMBER, MSTAT_SLOTS_DEFAULT, MSTAT_SLOTS_MIN,  \
	  MSTAT_SLOTS_MAX, "thread slots; more threads share one")           \
	X(EAGER, "MSTAT_EAGER", FLAG, 0, 0, 1,                                \
	  "make the segment at start, not once the process is worth watching") \
	X(SAMPLE_BYTES, "MSTAT_SAMPLE_BYTES", BYTES, MSTAT_SAMPLE_DEFAULT, 0, \
	  MSTAT_SAMPLE_MAX, "mean bytes allocated between two sampled "       \
	  "allocations; 0: none")                                             \
	X(KILLED_GRACE, MSTAT_ENV_KILLED_GRACE, NUMBER,                       \
	  MSTAT_KILLED_GRACE_DEFAULT, 0, MSTAT_KILLED_GRACE_MAX,              \
	  "seconds a killed process's segment is kept for readers; 0: "      \
	  "removed at once")                                                  \
	X(KILLED_BYTES, MSTAT_ENV_KILLED_BYTES, BYTES,                        \
	  MSTAT_KILLED_BYTES_DEFAULT, 0, UINT64_MAX, "bytes of /dev/shm the " \
	  "kept segments of killed processes may hold; the oldest go first")  \
	X(REPORT, MSTAT_ENV_REPORT, TEXT, 0, 1, MSTAT_REPORT_NAME_MAX - 1,    \
	  "set by mstat-run: the socket its command reports to "              \
	  "(shm/report.h)")                                                   \
	X(REPORT_PID, MSTAT_ENV_REPORT_PID, NUMBER, 0, 1, INT32_MAX,          \
	  "set by mstat-run: the process that reports")

enum mstat_conf {
#define MSTAT_X(id, ...) MSTAT_CONF_##id,
	MSTAT_CONFIG(MSTAT_X)
#undef MSTAT_X
	MSTAT_CONF_COUNT
};

/* Variable `v` read now, as a number (FLAG, NUMBER, BYTES, MODE): its
 * default where it is unset, empty or ignored. */
uint64_t mstat_config_number(enum mstat_conf v) MSTAT_HIDDEN;

/* Variable `v` read now, as text (TEXT): NULL where it is unset, empty or
 * ignored (the caller knows its default). */
const char *mstat_config_text(enum mstat_conf v) MSTAT_HIDDEN;

#endif /* MSTAT_LIB_CONFIG_H */
