/* SPDX-License-Identifier: MIT */
/*
 * record.c - writing ticks to a recording and reading them back.  See
 * record.h; the format is docs/mstat-top-record.md.  Reading uses json-c:
 * it parses integers up to 2^64 - 1 exactly, which counters need.
 */
#include "core/record.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/fields.h"
#include "core/text.h"

/* How a recorded field is written and read (the REC lines of fields.h). */
enum rec_type {
	REC_PID,    /* a process id: 1 to 2^31 - 1 */
	REC_OPTPID, /* the same, or 0: not known; 0 if absent or null */
	REC_KEY,    /* a string that is not empty */
	REC_STR,    /* a string; "" if absent or null */
	REC_STATE,  /* a state's word (enum mstat_model_live) */
	REC_U64,
	REC_OPTU64, /* the same, or 0: recorded by an mstat-top that did not
		     * know it (absent, or null) */
	REC_MEMORY, /* resident memory in parts (memory.h), or null */
};

struct recorded {
	const char *name;
	enum rec_type type;
	size_t at;  /* in struct mstat_model_input */
};

#define MSTAT_X(...) +1
enum { NRECORDED = 0 MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_FIELD_NONE,
				  MSTAT_FIELD_NONE, MSTAT_X) };
#undef MSTAT_X

/* A target's fields, in their order in a recording. */
static const struct recorded recorded[NRECORDED] = {
#define MSTAT_X(id, pos, n, m, t)                                             \
	[pos] = { n, REC_##t, offsetof(struct mstat_model_input, m) },
	MSTAT_FIELDS(MSTAT_FIELD_NONE, MSTAT_FIELD_NONE, MSTAT_FIELD_NONE,
		     MSTAT_X)
#undef MSTAT_X
};

/* A snapshot's fields before its counters, in their order in a
 * recording: X(field, how it is read). */
#define SNAP_FIELDS(X)                                                        \
	X(epoch, get_u64)                                                     \
	X(state, get_u32)                                                     \
	X(threads, get_u32)                                                   \
	X(slots_used, get_u32)                                                \
	X(overflowed, get_u32)                                                \
	X(cut, get_u32)                                                       \
	X(class_count, get_u32)

/* ---- writing ---- */

/* A target's memory: the parts, and how they were found. */
static void
put_memory(FILE *f, const struct mstat_memory *m)
{
	const char *a;

	if (!m) {
		fputs("null", f);
		return;
	}
	a = mstat_memory_allocator_name(m->allocator);
	fprintf(f, "{\"rss\":%" PRIu64, m->rss);
	for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++)
		fprintf(f, ",\"%s\":%" PRIu64, mstat_memory_part_name(p), m->part[p]);
	fprintf(f, ",\"live_not_resident\":%" PRIu64 ",\"allocator\":", m->live_not_resident);
	if (a)
		fprintf(f, "\"%s\"", a);
	else
		fputs("null", f);
	fprintf(f, ",\"source\":\"%s\",\"time_ns\":%" PRIu64 ",\"allocator_ns\":%"
		   PRIu64 "}", mstat_memory_source_name(m->source), m->time_ns,
		m->allocator_ns);
}

/* A target's field `rec` of `in`, after a comma unless it is the first. */
static void
put_field(FILE *f, const struct recorded *rec,
	  const struct mstat_model_input *in, bool first)
{
	const char *at = (const char *)in + rec->at;
	const char *s;
	uint64_t u;
	pid_t pid;
	enum mstat_model_live live;
	const struct mstat_memory *mem;

	fprintf(f, "%s\"%s\":", first ? "" : ",", rec->name);
	switch (rec->type) {
	case REC_PID:
	case REC_OPTPID:
		memcpy(&pid, at, sizeof(pid));
		fprintf(f, "%d", (int)pid);
		break;
	case REC_KEY:
	case REC_STR:
		memcpy(&s, at, sizeof(s));
		fputc('"', f);
		mstat_text_put(f, s ? s : "", MSTAT_TEXT_QUOTED);
		fputc('"', f);
		break;
	case REC_STATE:
		memcpy(&live, at, sizeof(live));
		fprintf(f, "\"%s\"", mstat_model_live_name(live));
		break;
	case REC_U64:
	case REC_OPTU64:
		memcpy(&u, at, sizeof(u));
		fprintf(f, "%" PRIu64, u);
		break;
	case REC_MEMORY:
		memcpy(&mem, at, sizeof(mem));
		put_memory(f, mem);
		break;
	}
}

static int
flushed(FILE *f)
{
	return fflush(f) == EOF || ferror(f) ? -EIO : 0;
}

int
mstat_record_begin(FILE *f, uint64_t time_ms)
{
	fprintf(f, "{\"format\":\"%s\",\"version\":%d,\"time_ms\":%" PRIu64 "}\n",
		MSTAT_RECORD_FORMAT, MSTAT_RECORD_VERSION, time_ms);
	return flushed(f);
}

static void
put_snap(FILE *f, const struct mstat_snapshot *s)
{
	const char *sep = "{";

	fputs(",\"snap\":", f);
#define MSTAT_X(fld, get)                                                     \
	fprintf(f, "%s\"" #fld "\":%" PRIu64, sep, (uint64_t)s->fld);          \
	sep = ",";
	SNAP_FIELDS(MSTAT_X)
#undef MSTAT_X
#define MSTAT_X(e, fld, h) fprintf(f, ",\"" #fld "\":%" PRIu64, s->fld);
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	fputs(",\"classes\":[", f);
	bool first = true;
	for (uint32_t c = 0; c < s->class_count && c < MSTAT_MAX_CLASSES; c++) {
		const struct mstat_counts *k = &s->classes[c];
		if (!k->alloc_count && !k->alloc_bytes && !k->free_count &&
		    !k->free_bytes)
			continue; /* never used: all zero on reading */
		fprintf(f, "%s[%u,", first ? "" : ",", c);
		first = false;
		if (s->class_max_size[c] == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%" PRIu64, s->class_max_size[c]);
#define MSTAT_X(e, fld, h) fprintf(f, ",%" PRIu64, k->fld);
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
		fputc(']', f);
	}
	fputs("]}", f);
}

int
mstat_record_write(FILE *f, const struct mstat_record_tick *t)
{
	fprintf(f, "{\"tick\":%" PRIu64 ",\"time_ms\":%" PRIu64 ",\"now_ns\":%"
		   PRIu64 ",\"interval_s\":%.3f,\"targets\":[",
		t->seq, t->time_ms, t->now_ns, t->interval_s);
	for (size_t i = 0; i < t->n; i++) {
		const struct mstat_model_input *in = &t->in[i];
		fputs(i ? ",{" : "{", f);
		for (size_t k = 0; k < NRECORDED; k++)
			put_field(f, &recorded[k], in, k == 0);
		if (in->snap)
			put_snap(f, in->snap);
		else
			fputs(",\"snap\":null", f);
		fputc('}', f);
	}
	fputs("]}\n", f);
	return flushed(f);
}

/* ---- reading ---- */

#define LINE_MAX_BYTES (UINT64_C(256) << 20)

struct mstat_replay {
	FILE *f;
	char path[256];
	unsigned long line;
	uint64_t last_now;
	char *buf;
	size_t cap;
	json_object *tick;             /* the tick handed out: its strings */
	struct mstat_model_input *in;
	struct mstat_snapshot **snaps;
	struct mstat_memory *memory;   /* each target's, if recorded */
	size_t capin;
};

/* The reason a line is refused, with where. */
__attribute__((format(printf, 4, 5))) static int
bad(struct mstat_replay *r, char *err, size_t errlen, const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s:%lu: %s", r->path, r->line, why);
	return -1;
}

/* The next line, without its '\n': its length, 0 at the end, -1 if it is
 * longer than anything a recording holds. */
static ssize_t
next_line(struct mstat_replay *r)
{
	ssize_t n;

	r->line++;
	if ((n = getline(&r->buf, &r->cap, r->f)) < 0)
		return 0;
	if ((uint64_t)n > LINE_MAX_BYTES)
		return -1;
	if (n && r->buf[n - 1] == '\n')
		r->buf[--n] = '\0';
	return n ? n : 1; /* an empty line is refused by the parser */
}

static json_object *
parse(const char *s)
{
	enum json_tokener_error e;

	return json_tokener_parse_verbose(s, &e);
}

/* Fields, checked. */
static bool
get_u64(json_object *o, const char *k, uint64_t *v)
{
	json_object *x;

	if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_int))
		return false;
	if (json_object_get_int64(x) < 0)
		return false;
	*v = json_object_get_uint64(x);
	return true;
}

static bool
get_u32(json_object *o, const char *k, uint32_t *v)
{
	uint64_t w;

	if (!get_u64(o, k, &w) || w > UINT32_MAX)
		return false;
	*v = (uint32_t)w;
	return true;
}

/* A string field, or "" if absent or null. */
static bool
get_str(json_object *o, const char *k, const char **v)
{
	json_object *x;

	*v = "";
	if (!json_object_object_get_ex(o, k, &x) || !x)
		return true;
	if (!json_object_is_type(x, json_type_string))
		return false;
	*v = json_object_get_string(x);
	return true;
}

/* A target's memory, from `x` (an object, or null) into *m: true, or
 * false if it is not one.  *out is m, or NULL for null. */
static bool
get_memory(json_object *x, struct mstat_memory *m, const struct mstat_memory **out)
{
	const char *a, *src;
	int al, sr;

	*out = NULL;
	if (!x)
		return true;
	memset(m, 0, sizeof(*m));
	if (!json_object_is_type(x, json_type_object) || !get_u64(x, "rss", &m->rss) ||
	    !get_u64(x, "live_not_resident", &m->live_not_resident) ||
	    !get_u64(x, "time_ns", &m->time_ns) ||
	    !get_u64(x, "allocator_ns", &m->allocator_ns) ||
	    !get_str(x, "allocator", &a) || !get_str(x, "source", &src) ||
	    (al = mstat_memory_allocator_parse(a)) < 0 ||
	    (sr = mstat_memory_source_parse(src)) < 0)
		return false;
	uint64_t sum = 0;
	for (int p = 0; p < MSTAT_MEMORY_PART_COUNT; p++) {
		if (!get_u64(x, mstat_memory_part_name(p), &m->part[p]) ||
		    m->part[p] > m->rss - sum)
			return false; /* the parts add up to rss, or it is none */
		sum += m->part[p];
	}
	if (sum != m->rss)
		return false;
	m->allocator = (uint32_t)al;
	m->source = (uint32_t)sr;
	*out = m;
	return true;
}

/* A target's field `rec` into `in`, checked; a state's word into
 * *state, and its state into `in` if it is one; memory into *mem. */
static bool
get_field(json_object *x, const struct recorded *rec,
	  struct mstat_model_input *in, const char **state,
	  struct mstat_memory *mem)
{
	char *at = (char *)in + rec->at;
	const char *s;
	uint64_t u;
	pid_t pid;
	int live;

	switch (rec->type) {
	case REC_PID:
		if (!get_u64(x, rec->name, &u) || u == 0 || u > INT32_MAX)
			return false;
		pid = (pid_t)u;
		memcpy(at, &pid, sizeof(pid));
		return true;
	case REC_OPTPID: {
		json_object *v;
		pid = 0;
		if (json_object_object_get_ex(x, rec->name, &v) && v) {
			if (!get_u64(x, rec->name, &u) || u > INT32_MAX)
				return false;
			pid = (pid_t)u;
		}
		memcpy(at, &pid, sizeof(pid));
		return true;
	}
	case REC_KEY:
	case REC_STR:
		if (!get_str(x, rec->name, &s) || (rec->type == REC_KEY && !s[0]))
			return false;
		memcpy(at, &s, sizeof(s));
		return true;
	case REC_STATE:
		if (!get_str(x, rec->name, state))
			return false;
		if ((live = mstat_model_live_parse(*state)) >= 0) {
			enum mstat_model_live l = (enum mstat_model_live)live;
			memcpy(at, &l, sizeof(l));
		}
		return true;
	case REC_U64:
		if (!get_u64(x, rec->name, &u))
			return false;
		memcpy(at, &u, sizeof(u));
		return true;
	case REC_OPTU64: {
		json_object *v;
		u = 0;
		if (json_object_object_get_ex(x, rec->name, &v) && v &&
		    !get_u64(x, rec->name, &u))
			return false;
		memcpy(at, &u, sizeof(u));
		return true;
	}
	case REC_MEMORY: {
		json_object *v = NULL;
		const struct mstat_memory *m;
		/* Absent (a recording made before it): not known. */
		(void)json_object_object_get_ex(x, rec->name, &v);
		if (!get_memory(v, mem, &m))
			return false;
		memcpy(at, &m, sizeof(m));
		return true;
	}
	}
	return false;
}

static int
read_snap(struct mstat_replay *r, json_object *o, struct mstat_snapshot *s,
	  char *err, size_t errlen, size_t i)
{
	json_object *classes;

	memset(s, 0, sizeof(*s));
#define MSTAT_X(fld, get) || !get(o, #fld, &s->fld)
	if (0 SNAP_FIELDS(MSTAT_X))
		return bad(r, err, errlen, "target %zu: snapshot without its "
			   "epoch, state, threads, slots_used, overflowed, cut "
			   "and class_count", i);
#undef MSTAT_X
	if (s->class_count > MSTAT_MAX_CLASSES)
		return bad(r, err, errlen, "target %zu: %u classes, more than %d",
			   i, s->class_count, MSTAT_MAX_CLASSES);
#define MSTAT_X(e, fld, h)                                                   \
	if (!get_u64(o, #fld, &s->fld))                                      \
		return bad(r, err, errlen, "target %zu: no " #fld, i);
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	if (!json_object_object_get_ex(o, "classes", &classes) ||
	    !json_object_is_type(classes, json_type_array))
		return bad(r, err, errlen, "target %zu: no classes", i);
#define MSTAT_X(e, fld, h) +1
	enum { N = 2 MSTAT_CLASS_COUNTERS(MSTAT_X) }; /* index, size, counters */
#undef MSTAT_X
	size_t nc = json_object_array_length(classes);
	for (size_t k = 0; k < nc; k++) {
		json_object *c = json_object_array_get_idx(classes, k);
		uint64_t v[N];
		if (!json_object_is_type(c, json_type_array) ||
		    json_object_array_length(c) != N)
			return bad(r, err, errlen, "target %zu: class entry %zu is "
				   "not an array of %d", i, k, N);
		for (size_t j = 0; j < N; j++) {
			json_object *x = json_object_array_get_idx(c, j);
			if (j == 1 && !x) {
				v[j] = UINT64_MAX; /* the unbounded class */
				continue;
			}
			if (!json_object_is_type(x, json_type_int) ||
			    json_object_get_int64(x) < 0)
				return bad(r, err, errlen, "target %zu: class entry "
					   "%zu: not a count", i, k);
			v[j] = json_object_get_uint64(x);
		}
		if (v[0] >= s->class_count)
			return bad(r, err, errlen, "target %zu: class %" PRIu64
				   " of %u", i, v[0], s->class_count);
		s->class_max_size[v[0]] = v[1];
		struct mstat_counts *cnt = &s->classes[v[0]];
		size_t j = 2;
#define MSTAT_X(e, fld, h) cnt->fld = v[j++];
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	}
	/* Derived, as the reader derives it: the sum over the classes. */
	for (uint32_t c = 0; c < s->class_count; c++) {
#define MSTAT_X(e, fld, h) s->total.fld += s->classes[c].fld;
		MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	}
	return 0;
}

static int
grow(struct mstat_replay *r, size_t n)
{
	if (n <= r->capin)
		return 0;
	size_t cap = n < 16 ? 16 : 2 * n;
	void *in = realloc(r->in, cap * sizeof(*r->in));
	if (in)
		r->in = in;
	void *sn = realloc(r->snaps, cap * sizeof(*r->snaps));
	if (sn)
		r->snaps = sn;
	void *mem = realloc(r->memory, cap * sizeof(*r->memory));
	if (mem)
		r->memory = mem;
	if (!in || !sn || !mem)
		return -1;
	for (size_t i = r->capin; i < cap; i++)
		r->snaps[i] = NULL;
	r->capin = cap;
	return 0;
}

int
mstat_record_replay_open(struct mstat_replay **out, const char *path, char *err,
			 size_t errlen)
{
	struct mstat_replay *r = calloc(1, sizeof(*r));
	uint64_t version;
	const char *format;
	int rc;

	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	mstat_text_escape(r->path, sizeof(r->path), path, MSTAT_TEXT_PLAIN);
	if (!(r->f = fopen(path, "re"))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", r->path, strerror(errno));
		free(r);
		return rc;
	}
	ssize_t n = next_line(r);
	json_object *h = n > 0 ? parse(r->buf) : NULL;
	if (n <= 0 || !h || !json_object_is_type(h, json_type_object) ||
	    !get_str(h, "format", &format) || strcmp(format, MSTAT_RECORD_FORMAT) ||
	    !get_u64(h, "version", &version)) {
		bad(r, err, errlen, "not a recording of mstat-top (--record)");
		json_object_put(h);
		mstat_record_replay_close(r);
		return -EINVAL;
	}
	json_object_put(h);
	if (version != MSTAT_RECORD_VERSION) {
		bad(r, err, errlen, "recording format version %" PRIu64
		    "; this mstat-top reads version %d", version,
		    MSTAT_RECORD_VERSION);
		mstat_record_replay_close(r);
		return -EINVAL;
	}
	*out = r;
	return 0;
}

/* A tick's own fields, checked, and its targets. */
static bool
tick_head(json_object *o, struct mstat_record_tick *t, json_object **targets)
{
	json_object *iv;

	if (!get_u64(o, "tick", &t->seq) || !get_u64(o, "time_ms", &t->time_ms) ||
	    !get_u64(o, "now_ns", &t->now_ns) ||
	    !json_object_object_get_ex(o, "interval_s", &iv) ||
	    !(json_object_is_type(iv, json_type_double) ||
	      json_object_is_type(iv, json_type_int)) ||
	    !json_object_object_get_ex(o, "targets", targets) ||
	    !json_object_is_type(*targets, json_type_array))
		return false;
	t->interval_s = json_object_get_double(iv);
	return true;
}

/* The tick's target `i`, from `x`, into r->in[i]: 0, or -1 with why. */
static int
read_target(struct mstat_replay *r, json_object *x, size_t i, char *err,
	    size_t errlen)
{
	struct mstat_model_input *in = &r->in[i];
	const char *state = NULL;
	json_object *snap;
	bool ok = x && json_object_is_type(x, json_type_object);

	memset(in, 0, sizeof(*in));
	for (size_t k = 0; ok && k < NRECORDED; k++)
		ok = get_field(x, &recorded[k], in, &state, &r->memory[i]);
	if (!ok || !json_object_object_get_ex(x, "snap", &snap))
		return bad(r, err, errlen, "target %zu: needs pid, key, name, "
			   "state, t_ns, end_ns, start_ns and snap, and memory "
			   "whose parts add up to its rss if any", i);
	if (mstat_model_live_parse(state) < 0)
		return bad(r, err, errlen, "target %zu: state \"%.20s\"", i,
			   state);
	if (!in->image[0])
		in->image = NULL;
	if (!snap)
		return 0;
	if (!json_object_is_type(snap, json_type_object))
		return bad(r, err, errlen, "target %zu: snap", i);
	if (!r->snaps[i] && !(r->snaps[i] = malloc(sizeof(*r->snaps[i]))))
		return bad(r, err, errlen, "out of memory");
	if (read_snap(r, snap, r->snaps[i], err, errlen, i) < 0)
		return -1;
	in->snap = r->snaps[i];
	return 0;
}

int
mstat_record_replay_next(struct mstat_replay *r, struct mstat_record_tick *t,
			 char *err, size_t errlen)
{
	json_object *o, *targets;

	json_object_put(r->tick);
	r->tick = NULL;
	ssize_t n = next_line(r);
	if (n == 0)
		return 0;
	if (n < 0)
		return bad(r, err, errlen, "a line longer than %" PRIu64 " bytes",
			   LINE_MAX_BYTES);
	if (!(o = r->tick = parse(r->buf)) ||
	    !json_object_is_type(o, json_type_object))
		return bad(r, err, errlen, "not a JSON object%s",
			   feof(r->f) ? " (the recording was cut short?)" : "");
	memset(t, 0, sizeof(*t));
	if (!tick_head(o, t, &targets))
		return bad(r, err, errlen, "a tick needs tick, time_ms, now_ns, "
			   "interval_s and targets");
	if (!(t->interval_s > 0 && t->interval_s <= 86400))
		return bad(r, err, errlen, "interval_s %g", t->interval_s);
	if (t->now_ns < r->last_now)
		return bad(r, err, errlen, "now_ns goes back in time");
	r->last_now = t->now_ns;
	size_t nt = json_object_array_length(targets);
	if (grow(r, nt) < 0)
		return bad(r, err, errlen, "out of memory");
	for (size_t i = 0; i < nt; i++)
		if (read_target(r, json_object_array_get_idx(targets, i), i, err,
				errlen) < 0)
			return -1;
	t->in = r->in;
	t->n = nt;
	return 1;
}

void
mstat_record_replay_close(struct mstat_replay *r)
{
	if (!r)
		return;
	json_object_put(r->tick);
	for (size_t i = 0; i < r->capin; i++)
		free(r->snaps[i]);
	free(r->snaps);
	free(r->memory);
	free(r->in);
	free(r->buf);
	if (r->f)
		fclose(r->f);
	free(r);
}
