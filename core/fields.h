/* SPDX-License-Identifier: MIT */
/*
 * fields.h - a process row's fields, listed once.
 *
 * Every figure a row of the model has, and every face it shows in: the
 * table's columns (columns.c), the metric families (exposition.c), the
 * JSON (output.c) and the recording (record.c) are generated from this
 * list, each output in its own documented order.  A new figure is a line
 * F here, its value read from the row, and a line for each face it
 * shows in.
 *
 *   F(ID, json, type, known, value)
 *	the field: its name in JSON output ("process" of
 *	docs/mstat-top-json.md), NULL if it is not there; its type (below);
 *	whether it is known, and its value, as expressions of the row `r`
 *	(and `now`, CLOCK_REALTIME, for ages).  JSON writes what is not
 *	known as null; a metric family writes no sample of it.  The list's
 *	order is the JSON's.
 *   COL(ID, pos, name, title, width, unit, drop, help)
 *	a column of the table: its position (0, 1, ...: the table's
 *	order), the name -s and the help know it by, its title and width,
 *	how its values are written and when it gives way (columns.h).
 *   FAM(ID, pos, name, type, unit, help)
 *	a metric family: its position (0, 1, ...: the exposition's order),
 *	its name without the type's suffix, its type, its unit or NULL, its
 *	help (exposition.h).
 *   REC(ID, pos, name, member, type)
 *	recorded: its position in a recorded target (0, 1, ...), its name
 *	there, the member of struct mstat_model_input it is read from and
 *	into, and how it is written (record.c; docs/mstat-top-record.md).
 *
 * Types of F:
 *   INT      an integer (pid)
 *   U64      a count; I64 a signed count; REAL a number (rates, seconds)
 *   TEXT     words a process or a file supplied (escaped where shown)
 *   NAME     the process's name; its column adds its comm
 *   STATE    the process's state (enum mstat_model_live): a word, which
 *            sorts in the enum's order
 *   COUNTERS the counters of MSTAT_CLASS_COUNTERS, then those of
 *            MSTAT_TOTAL_COUNTERS (mstatshm_counters.h), each a field of
 *            its own, named by that list
 *   CLASSES  the size classes, each with its counters (per-size-class
 *            families)
 *   MEMORY   resident memory in parts (memory.h): an object of byte
 *            counts in JSON, a sample per part (a `part` label) in its
 *            family
 */
#ifndef MSTAT_CORE_FIELDS_H
#define MSTAT_CORE_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "core/where.h"

#define MSTAT_FIELDS(F, COL, FAM, REC)                                        \
	F(PID, "pid", INT, true, r->pid)                                      \
	COL(PID, 0, "pid", "PID", 7, MSTAT_COLUMN_ID, 0,                      \
	    "process id (on the host, for a process in a container)")         \
	REC(PID, 0, "pid", pid, PID)                                          \
	F(NAME, "name", NAME, true, r->name)                                  \
	COL(NAME, 1, "name", "NAME", 12, MSTAT_COLUMN_TEXT, 0,                \
	    "MSTAT_NAME or the program's name, [its comm] where that "        \
	    "differs")                                                        \
	REC(NAME, 3, "name", name, STR)                                       \
	F(WHERE, NULL, TEXT, mstat_where_short(&r->where)[0] != '\0',         \
	  mstat_where_short(&r->where))                                       \
	COL(WHERE, 2, "where", "WHERE", 12, MSTAT_COLUMN_TEXT, 9,             \
	    "where it runs: its container (short id), or its systemd unit")   \
	F(STATE, "state", STATE, true, r->live)                               \
	COL(STATE, 15, "state", "STATE", 7, MSTAT_COLUMN_TEXT, 0,             \
	    "running, stopped, stalled, busy, exiting, exited, killed, "       \
	    "oomkill")                                                        \
	REC(STATE, 6, "state", live, STATE)                                   \
	F(ERROR, "error", TEXT, r->err[0] != '\0', r->err)                    \
	REC(ERROR, 7, "error", err, STR)                                      \
	F(THREADS, "threads", U64, r->have_snap, r->threads)                  \
	COL(THREADS, 4, "threads", "THR", 4, MSTAT_UNIT_COUNT, 7,             \
	    "threads counting into a slot of their own")                      \
	FAM(THREADS, 4, "mstat_threads", GAUGE, NULL,                         \
	    "threads counting into a slot of their own")                      \
	F(COUNTERS, NULL, COUNTERS, r->have_snap, 0)                          \
	FAM(COUNTERS, 0, NULL, COUNTER, NULL, NULL)                           \
	F(LIVE_OBJECTS, "live_objects", U64, r->have_snap,                    \
	  mstat_model_live_objects(r))                                        \
	COL(LIVE_OBJECTS, 6, "live-objs", "OBJS", 6, MSTAT_UNIT_COUNT, 5,     \
	    "allocations not yet freed")                                      \
	FAM(LIVE_OBJECTS, 3, "mstat_live_objects", GAUGE, NULL,               \
	    "allocations not yet freed")                                      \
	F(LIVE_BYTES, "live_bytes", U64, r->have_snap,                        \
	  mstat_model_live_bytes(r))                                          \
	COL(LIVE_BYTES, 5, "live-bytes", "LIVE", 8, MSTAT_UNIT_BYTES, 1,      \
	    "bytes allocated and not yet freed")                              \
	FAM(LIVE_BYTES, 2, "mstat_live_bytes", GAUGE, "bytes",                \
	    "bytes allocated and not yet freed")                              \
	F(ALLOC_RATE, "alloc_rate", REAL, r->have_rates, r->alloc_rate)       \
	COL(ALLOC_RATE, 7, "alloc/s", "ALLOC/s", 8,                           \
	    MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE, 10, "allocations per second")  \
	F(FREE_RATE, "free_rate", REAL, r->have_rates, r->free_rate)          \
	COL(FREE_RATE, 8, "free/s", "FREE/s", 8,                              \
	    MSTAT_UNIT_COUNT | MSTAT_UNIT_RATE, 11, "frees per second")       \
	F(ALLOC_BYTES_RATE, "alloc_bytes_rate", REAL, r->have_rates,          \
	  r->alloc_bytes_rate)                                                \
	F(FREE_BYTES_RATE, "free_bytes_rate", REAL, r->have_rates,            \
	  r->free_bytes_rate)                                                 \
	F(NET_RATE, "net_bytes_rate", REAL, r->have_rates, r->net_bytes_rate) \
	COL(NET_RATE, 9, "net/s", "NET/s", 10,                                \
	    MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE, 6,        \
	    "growth of live bytes per second, since the last tick")           \
	F(CLASSES, "classes", CLASSES, true, 0)                               \
	FAM(CLASSES, 1, NULL, COUNTER, NULL, NULL)                            \
	F(END_TIME, "end_time_s", REAL, r->end_ns != 0,                       \
	  (double)r->end_ns / 1e9)                                            \
	REC(END_TIME, 9, "end_ns", end_ns, U64)                               \
	F(START_TIME, "start_time_s", REAL, r->start_ns != 0,                 \
	  (double)r->start_ns / 1e9)                                          \
	FAM(START_TIME, 6, "mstat_process_start_time_seconds", GAUGE,         \
	    "seconds", "when the process started, since the Unix epoch")      \
	REC(START_TIME, 10, "start_ns", start_ns, U64)                        \
	F(GROWTH_BYTES, "growth_bytes", I64, r->have_snap, r->growth_bytes)   \
	COL(GROWTH_BYTES, 10, "growth", "GROWTH", 9,                           \
	    MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED, 2,                          \
	    "live bytes gained since the baseline (b, B, --baseline)")        \
	F(GROWTH_OBJECTS, "growth_objects", I64, r->have_snap,                \
	  r->growth_objects)                                                  \
	COL(GROWTH_OBJECTS, 11, "growth-objs", "+OBJS", 7,                    \
	    MSTAT_UNIT_COUNT | MSTAT_UNIT_SIGNED, 8,                          \
	    "live objects gained since the baseline")                         \
	F(GROWTH_RATE, "growth_bytes_per_s", REAL, r->have_growth_rate,       \
	  r->growth_bytes_rate)                                               \
	COL(GROWTH_RATE, 12, "growth/s", "GROWTH/s", 10,                      \
	    MSTAT_UNIT_BYTES | MSTAT_UNIT_SIGNED | MSTAT_UNIT_RATE, 4,        \
	    "growth of live bytes per second over the window (--window)")     \
	/* Added after the fields above: JSON keeps its order. */           \
	F(NSPID, "nspid", INT, r->nspid != 0, r->nspid)                       \
	REC(NSPID, 11, "nspid", nspid, OPTPID)                                \
	F(CONTAINER_ID, "container_id", TEXT, r->where.container_id[0] != 0,  \
	  r->where.container_id)                                              \
	REC(CONTAINER_ID, 12, "container_id", container_id, STR)              \
	F(POD_UID, "pod_uid", TEXT, r->where.pod_uid[0] != 0, r->where.pod_uid) \
	REC(POD_UID, 13, "pod_uid", pod_uid, STR)                             \
	F(QOS_CLASS, "qos_class", TEXT, r->where.qos_class[0] != 0,           \
	  r->where.qos_class)                                                 \
	REC(QOS_CLASS, 14, "qos_class", qos_class, STR)                       \
	F(SYSTEMD_UNIT, "systemd_unit", TEXT, r->where.systemd_unit[0] != 0,  \
	  r->where.systemd_unit)                                              \
	REC(SYSTEMD_UNIT, 15, "systemd_unit", systemd_unit, STR)              \
	F(ATTACHED, "attached_time_s", REAL, r->attached_ns != 0,             \
	  (double)r->attached_ns / 1e9)                                       \
	FAM(ATTACHED, 11, "mstat_attached_time_seconds", GAUGE, "seconds",    \
	    "when mstat-attach made the process count, since the Unix "       \
	    "epoch: its counts are of what it did since")                     \
	REC(ATTACHED, 17, "attached_ns", attached_ns, OPTU64)                 \
	F(PRIOR_FREES, "prior_frees", U64, r->have_snap && r->attached_ns,    \
	  r->prior.prior_frees)                                               \
	FAM(PRIOR_FREES, 12, "mstat_prior_frees", COUNTER, NULL,              \
	    "frees of blocks made before the attach")                         \
	REC(PRIOR_FREES, 18, "prior_frees", prior.prior_frees, OPTU64)        \
	F(PRIOR_FREE_BYTES, "prior_free_bytes", U64,                          \
	  r->have_snap && r->attached_ns, r->prior.prior_free_bytes)          \
	FAM(PRIOR_FREE_BYTES, 13, "mstat_prior_free_bytes", COUNTER, "bytes", \
	    "their bytes (usable size)")                                      \
	REC(PRIOR_FREE_BYTES, 19, "prior_free_bytes", prior.prior_free_bytes, \
	    OPTU64)                                                           \
	F(PRIOR_REALLOCS, "prior_reallocs", U64,                              \
	  r->have_snap && r->attached_ns, r->prior.prior_reallocs)            \
	FAM(PRIOR_REALLOCS, 14, "mstat_prior_reallocs", COUNTER, NULL,        \
	    "reallocs of blocks made before the attach")                      \
	REC(PRIOR_REALLOCS, 20, "prior_reallocs", prior.prior_reallocs, OPTU64)  \
	F(PRIOR_REALLOC_BYTES, "prior_realloc_bytes", U64,                    \
	  r->have_snap && r->attached_ns, r->prior.prior_realloc_bytes)       \
	FAM(PRIOR_REALLOC_BYTES, 15, "mstat_prior_realloc_bytes", COUNTER,    \
	    "bytes", "the old blocks' bytes (usable size)")                   \
	REC(PRIOR_REALLOC_BYTES, 21, "prior_realloc_bytes",                   \
	    prior.prior_realloc_bytes, OPTU64)                                \
	F(AGE, NULL, REAL, mstat_field_age_known(r, now),                     \
	  mstat_field_age(r, now))                                            \
	COL(AGE, 3, "age", "AGE", 6, MSTAT_COLUMN_AGE, 3,                     \
	    "time since the process started (its lifetime, once gone)")       \
	F(RUNNING, NULL, U64, true, !mstat_model_gone(r->live))               \
	FAM(RUNNING, 5, "mstat_running", GAUGE, NULL,                         \
	    "1 while the process runs, 0 once it exited or died")             \
	F(PROCESS, NULL, U64, true, 1)                                        \
	FAM(PROCESS, 7, "mstat_process", INFO, NULL,                          \
	    "the process's writer mode and segment layout version")           \
	F(KILLED, NULL, U64,                                                  \
	  r->live == MSTAT_LIVE_KILLED || r->live == MSTAT_LIVE_OOM, 1)       \
	FAM(KILLED, 10, "mstat_killed", INFO, NULL,                            \
	    "the process was killed by a signal: how (killed, or oomkill), "  \
	    "and its post-mortem profile where one was written")              \
	F(KEY, NULL, TEXT, true, r->key)                                      \
	REC(KEY, 1, "key", key, KEY)                                          \
	F(IMAGE, NULL, TEXT, r->image[0] != '\0', r->image)                   \
	REC(IMAGE, 2, "image", image, STR)                                    \
	F(COMM, NULL, TEXT, r->comm[0] != '\0', r->comm)                      \
	REC(COMM, 4, "comm", comm, STR)                                       \
	F(EXE, NULL, TEXT, r->exe[0] != '\0', r->exe)                         \
	REC(EXE, 5, "exe", exe, STR)                                          \
	F(TIME, NULL, U64, r->have_snap, r->t_ns)                             \
	REC(TIME, 8, "t_ns", t_ns, U64)                                       \
	/* Resident memory in parts (memory.h; docs/memory.md). */          \
	F(MEMORY, "memory", MEMORY, r->have_memory, 0)                        \
	FAM(MEMORY, 9, "mstat_memory_bytes", GAUGE, "bytes",                  \
	    "resident memory by part (live, allocator_free, "                 \
	    "allocator_overhead, not_heap, file, shmem, library): the parts " \
	    "add up to mstat_resident_memory_bytes")                          \
	REC(MEMORY, 16, "memory", memory, MEMORY)                             \
	F(RSS, NULL, U64, r->have_memory, r->memory.rss)                      \
	COL(RSS, 13, "rss", "RSS", 8, MSTAT_UNIT_BYTES, 12,                   \
	    "resident memory (VmRSS); the detail view (Enter) shows its "     \
	    "parts")                                                          \
	FAM(RSS, 8, "mstat_resident_memory_bytes", GAUGE, "bytes",            \
	    "resident memory (VmRSS)")                                        \
	F(FREE_SHARE, NULL, REAL, r->have_memory && r->memory.rss,            \
	  mstat_field_free_share(r))                                          \
	COL(FREE_SHARE, 14, "free%", "FREE%", 5, MSTAT_UNIT_PERCENT, 13,      \
	    "resident memory the allocator holds free (allocator_free), in "  \
	    "% of RSS")                                                       \
	F(ALLOCATOR, "allocator", TEXT,                                       \
	  r->have_memory && mstat_memory_allocator_name(r->memory.allocator), \
	  mstat_memory_allocator_name(r->memory.allocator))                   \
	F(MEMORY_SOURCE, "memory_source", TEXT, r->have_memory,               \
	  mstat_memory_source_name(r->memory.source))                         \
	F(MEMORY_TIME, "memory_time_s", REAL, r->have_memory,                 \
	  (double)r->memory.time_ns / 1e9)                                    \
	F(ALLOCATOR_TIME, "allocator_time_s", REAL,                           \
	  r->have_memory && r->memory.allocator_ns,                           \
	  (double)r->memory.allocator_ns / 1e9)

/*
 * The labels of every series of a process, in their order: its name in
 * the exposition and the field it shows (text, or a number in decimal).
 * A label whose field is not known is left out of the series: Prometheus
 * reads a missing label and an empty one alike.  The names follow
 * cAdvisor and kube-state-metrics (docs/mstat-top-openmetrics.md):
 * container_id is the 64 hex digits of kube_pod_container_info's
 * container_id after its "<runtime>://", pod_uid the pod's uid (kube-
 * state-metrics' `uid`), qos_class as kube_pod_status_qos_class has it.
 * mstat_exposition_process_labels() (exposition.h) hands them out.
 */
#define MSTAT_LABELS(L)                                                       \
	L("pid", PID)                                                         \
	L("name", NAME)                                                       \
	L("container_id", CONTAINER_ID)                                       \
	L("pod_uid", POD_UID)                                                 \
	L("qos_class", QOS_CLASS)                                             \
	L("systemd_unit", SYSTEMD_UNIT)

/* What a line of the list does not say. */
#define MSTAT_FIELD_NONE(...)

enum mstat_field_id {
#define MSTAT_X(id, ...) MSTAT_FIELD_##id,
	MSTAT_FIELDS(MSTAT_X, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE)
#undef MSTAT_X
	MSTAT_FIELD_COUNT
};

enum mstat_field_type {
	MSTAT_TYPE_INT,
	MSTAT_TYPE_U64,
	MSTAT_TYPE_I64,
	MSTAT_TYPE_REAL,
	MSTAT_TYPE_TEXT,
	MSTAT_TYPE_NAME,
	MSTAT_TYPE_STATE,
	MSTAT_TYPE_COUNTERS,
	MSTAT_TYPE_CLASSES,
	MSTAT_TYPE_MEMORY,
};

/* A field's value in a row: the member its type says. */
struct mstat_field_value {
	bool known;
	int64_t i;              /* INT, I64, STATE */
	uint64_t u;             /* U64 */
	double d;               /* REAL */
	const char *s;          /* TEXT, NAME */
};

struct mstat_field {
	const char *json;       /* NULL: not in JSON */
	enum mstat_field_type type;
	void (*get)(const struct mstat_model_row *r, uint64_t now,
		    struct mstat_field_value *v);
};

/* The field `id`, or NULL. */
const struct mstat_field *mstat_fields_at(enum mstat_field_id id);

/* Row r's value of field `id` at `now` (CLOCK_REALTIME, for ages). */
void mstat_fields_get(enum mstat_field_id id, const struct mstat_model_row *r,
		      uint64_t now, struct mstat_field_value *v);

/* A value as a number: what columns show and sort by. */
double mstat_fields_number(enum mstat_field_type type,
			   const struct mstat_field_value *v);

/* The age of the process at `now`, in seconds: until it ended, once
 * gone; known if its start is. */
static inline bool
mstat_field_age_known(const struct mstat_model_row *r, uint64_t now)
{
	uint64_t end = r->end_ns ? r->end_ns : now;

	return r->start_ns && end >= r->start_ns;
}

static inline double
mstat_field_age(const struct mstat_model_row *r, uint64_t now)
{
	uint64_t end = r->end_ns ? r->end_ns : now;

	return (double)(end - r->start_ns) / 1e9;
}

/* The allocator's free memory in % of RSS (known if RSS is). */
static inline double
mstat_field_free_share(const struct mstat_model_row *r)
{
	return 100.0 * (double)r->memory.part[MSTAT_MEMORY_ALLOCATOR_FREE] /
	       (double)r->memory.rss;
}

#endif /* MSTAT_CORE_FIELDS_H */
