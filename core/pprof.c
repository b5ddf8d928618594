/* SPDX-License-Identifier: MIT */
/*
 * pprof.c - the profile.proto encoder, the little of protocol buffers it
 * needs (varints and length-delimited fields), and gzip through zlib; see
 * pprof.h.
 */
#include "core/pprof.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/lifetime.h"
#include "core/outfile.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_NUM = 3, LABEL_NUM_UNIT = 4,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};
enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* The sample types, in the order of each sample's values. */
static const char *const sample_types[][2] = {
	{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
	{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
};
#define NVALUES (sizeof(sample_types) / sizeof(sample_types[0]))

struct buf {
	unsigned char *d;
	size_t n, cap;
	bool oom;
};

/* Room for n more bytes: false (and b->oom) if out of memory. */
static bool
reserve_slow(struct buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;

	while (cap < b->n + n)
		cap *= 2;
	unsigned char *d = realloc(b->d, cap);
	if (!d) {
		b->oom = true;
		return false;
	}
	b->d = d;
	b->cap = cap;
	return true;
}

static inline bool
reserve(struct buf *b, size_t n)
{
	if (b->oom)
		return false;
	return b->n + n <= b->cap || reserve_slow(b, n);
}

static void
put(struct buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static inline void
varint(struct buf *b, uint64_t v)
{
	if (!reserve(b, 10))
		return;
	unsigned char *c = b->d + b->n;
	while (v > 0x7f) {
		*c++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*c++ = (unsigned char)v;
	b->n = (size_t)(c - b->d);
}

static void
field_varint(struct buf *b, unsigned field, uint64_t v)
{
	varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	varint(b, v);
}

static void
field_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	varint(b, (uint64_t)field << 3 | WIRE_LEN);
	varint(b, n);
	put(b, p, n);
}

/* A nested message `m` as field `field` of `b`; `m` is emptied. */
static void
field_msg(struct buf *b, unsigned field, struct buf *m)
{
	field_bytes(b, field, m->d, m->n);
	b->oom |= m->oom;
	m->n = 0;
}

/* ---- tables: strings, locations, functions ---- */

static uint64_t
hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* Open addressing: keys to ids 1.., never removed.  A key is 64 bits:
 * a value itself (a pc; a function's two string ids), or the hash of a
 * string, which the caller's `same` then compares in full. */
struct map {
	uint64_t *keys;
	uint32_t *ids; /* 0: empty */
	uint32_t cap, n;
};

static inline uint32_t
map_slot(uint64_t key, uint32_t cap)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (uint32_t)key & (cap - 1);
}

static bool
map_grow(struct map *m)
{
	struct map g = { .cap = m->cap ? m->cap * 2 : 1024 };

	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.ids = calloc(g.cap, sizeof(*g.ids));
	if (!g.keys || !g.ids) {
		free(g.keys);
		free(g.ids);
		return false;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		if (!m->ids[i])
			continue;
		uint32_t k = map_slot(m->keys[i], g.cap);
		while (g.ids[k])
			k = (k + 1) & (g.cap - 1);
		g.keys[k] = m->keys[i];
		g.ids[k] = m->ids[i];
	}
	g.n = m->n;
	free(m->keys);
	free(m->ids);
	*m = g;
	return true;
}

/* The id of `key` (for which same(id) holds too, if `same`), or the slot
 * to put it in (*slot, returning 0); -1 if out of memory. */
static inline int64_t
map_find(struct map *m, uint64_t key, bool (*same)(void *, uint32_t), void *arg,
	 uint32_t *slot)
{
	if ((m->n + 1) * 2 > m->cap && !map_grow(m))
		return -1;
	uint32_t k = map_slot(key, m->cap);
	for (;; k = (k + 1) & (m->cap - 1)) {
		if (!m->ids[k]) {
			*slot = k;
			return 0;
		}
		if (m->keys[k] == key && (!same || same(arg, m->ids[k])))
			return m->ids[k];
	}
}

static void
map_put(struct map *m, uint32_t slot, uint64_t key, uint32_t id)
{
	m->keys[slot] = key;
	m->ids[slot] = id;
	m->n++;
}

static void
map_free(struct map *m)
{
	free(m->keys);
	free(m->ids);
}

struct enc {
	struct buf out;      /* the Profile message */
	struct buf m, sub;   /* scratch for nested messages */
	struct map strings, locations, functions;
	const char **str;    /* string table, [0] = "" */
	uint32_t nstr, capstr;
	uint64_t *loc_pc;    /* location id - 1 -> pc */
	uint32_t nloc, caploc;
	uint64_t *fn_key;    /* function id - 1 -> system name << 32 | file */
	uint64_t *fn_name;   /* function id - 1 -> name */
	uint32_t nfn, capfn, capfn_name;
	bool oom;
};

struct same_str {
	struct enc *e;
	const char *s;
};

static bool
same_str(void *arg, uint32_t id)
{
	struct same_str *q = arg;

	return strcmp(q->e->str[id - 1], q->s) == 0;
}

static bool
grow(void **a, uint32_t *cap, uint32_t n, size_t size)
{
	if (n < *cap)
		return true;
	uint32_t c = *cap ? *cap * 2 : 256;
	void *p = realloc(*a, (size_t)c * size);
	if (!p)
		return false;
	*a = p;
	*cap = c;
	return true;
}

/* The string table index of `s` (copied into the table: not owned). */
static uint64_t
string_id(struct enc *e, const char *s)
{
	struct same_str q = { e, s };
	uint64_t key = hash_bytes(s, strlen(s), UINT64_C(0xcbf29ce484222325));
	uint32_t slot;
	int64_t id = map_find(&e->strings, key, same_str, &q, &slot);

	if (id > 0)
		return (uint64_t)id - 1;
	char *copy = strdup(s);
	if (id < 0 || !copy ||
	    !grow((void **)&e->str, &e->capstr, e->nstr, sizeof(*e->str))) {
		free(copy);
		e->oom = true;
		return 0;
	}
	e->str[e->nstr++] = copy;
	map_put(&e->strings, slot, key, e->nstr);
	return e->nstr - 1;
}

/* The id of the function whose symbol is `system` in `file`, named
 * `name` (string ids), made if new. */
static uint64_t
function_id(struct enc *e, uint64_t name, uint64_t system, uint64_t file)
{
	uint64_t v = system << 32 | file;
	uint32_t slot;
	int64_t id = map_find(&e->functions, v, NULL, NULL, &slot);

	if (id > 0)
		return (uint64_t)id;
	if (id < 0 || !grow((void **)&e->fn_key, &e->capfn, e->nfn, sizeof(*e->fn_key)) ||
	    !grow((void **)&e->fn_name, &e->capfn_name, e->nfn, sizeof(*e->fn_name))) {
		e->oom = true;
		return 0;
	}
	e->fn_name[e->nfn] = name;
	e->fn_key[e->nfn++] = v;
	map_put(&e->functions, slot, v, e->nfn);
	return e->nfn;
}

/* The id of the location of frame `pc`, made if new. */
static uint64_t
location_id(struct enc *e, uint64_t pc)
{
	uint32_t slot;
	int64_t id = map_find(&e->locations, pc, NULL, NULL, &slot);

	if (id > 0)
		return (uint64_t)id;
	if (id < 0 || !grow((void **)&e->loc_pc, &e->caploc, e->nloc, sizeof(*e->loc_pc))) {
		e->oom = true;
		return 0;
	}
	e->loc_pc[e->nloc++] = pc;
	map_put(&e->locations, slot, pc, e->nloc);
	return e->nloc;
}

static void
value_type(struct enc *e, unsigned field, const char *type, const char *unit)
{
	uint64_t t = string_id(e, type), u = string_id(e, unit);

	field_varint(&e->m, VALUE_TYPE_TYPE, t);
	field_varint(&e->m, VALUE_TYPE_UNIT, u);
	field_msg(&e->out, field, &e->m);
}

static void
hex(char *out, const uint8_t *b, uint32_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (uint32_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void
mstat_pprof_unbias(const struct mstat_profile *p, const struct mstat_profile_stack *s,
		   bool live, double *objects, double *bytes)
{
	/* The reader guarantees frees <= allocs, and so on. */
	uint64_t n = live ? s->allocs - s->frees : s->allocs;
	uint64_t b = live ? s->alloc_bytes - s->free_bytes : s->alloc_bytes;
	uint64_t w = live ? s->alloc_weight - s->free_weight : s->alloc_weight;
	uint64_t o = live ? s->alloc_objects - s->free_objects : s->alloc_objects;

	if (p->has_objects) {
		/* Each sample's objects and bytes, summed (6.1). */
		*objects = (double)o / MSTAT_OBJECT_UNITS;
		*bytes = (double)w;
		return;
	}
	if (n == 0 || b == 0) {
		*objects = *bytes = 0;
		return;
	}
	if (p->weighted) {
		/* Format 6.0: bytes, the sum of the samples' weights;
		 * objects, as many as the average sample's bytes go into
		 * it, too few for a stack of many sizes. */
		*bytes = (double)w;
		*objects = (double)n * ((double)w / (double)b);
		return;
	}
	/* Format 5.0: Go's scaleHeapSample(), at the interval in effect. */
	if (p->sample_bytes <= 1) {
		*objects = (double)n;
		*bytes = (double)b;
		return;
	}
	double avg = (double)b / (double)n;
	double scale = 1.0 / -expm1(-avg / (double)p->sample_bytes);
	*objects = (double)n * scale;
	*bytes = (double)b * scale;
}

/* Stacks by depth, then frames: how a delta finds a stack in its base. */
static int
stack_cmp(const void *a, const void *b)
{
	const struct mstat_profile_stack *x = *(const struct mstat_profile_stack *const *)a;
	const struct mstat_profile_stack *y = *(const struct mstat_profile_stack *const *)b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->frames, y->frames, x->depth * sizeof(x->frames[0]));
}

/* A sample's numeric label `key` of `ns` nanoseconds, unless NAN. */
static void
duration_label(struct enc *e, uint64_t key, double ns, uint64_t unit)
{
	if (isnan(ns))
		return;
	field_varint(&e->sub, LABEL_KEY, key);
	field_varint(&e->sub, LABEL_NUM, (uint64_t)llround(ns));
	field_varint(&e->sub, LABEL_NUM_UNIT, unit);
	field_msg(&e->m, SAMPLE_LABEL, &e->sub);
}

/* The values of stack `s` of `p`, in the order of sample_types. */
static void
stack_values(const struct mstat_profile *p, const struct mstat_profile_stack *s,
	     double v[NVALUES])
{
	mstat_pprof_unbias(p, s, false, &v[0], &v[1]);
	mstat_pprof_unbias(p, s, true, &v[2], &v[3]);
}

/* The base's stacks, sorted (stack_cmp) for a delta to find a stack
 * in: NULL without a base, or out of memory (e->oom). */
static const struct mstat_profile_stack **
base_index(struct enc *e, const struct mstat_profile *base)
{
	const struct mstat_profile_stack **index;

	if (!base || !base->nstacks)
		return NULL;
	index = malloc(base->nstacks * sizeof(*index));
	if (!index) {
		e->oom = true;
		return NULL;
	}
	for (uint32_t i = 0; i < base->nstacks; i++)
		index[i] = &base->stacks[i];
	qsort(index, base->nstacks, sizeof(*index), stack_cmp);
	return index;
}

/* Samples, and the locations of their frames as they come; a delta
 * against `base` if it is given. */
static void
encode_samples(struct enc *e, const struct mstat_profile *p,
	       const struct mstat_profile *base, uint64_t bytes_key)
{
	const struct mstat_profile_stack **index = base_index(e, base);
	uint64_t lifetime_key = string_id(e, "lifetime");
	uint64_t age_key = string_id(e, "age");
	uint64_t ns_unit = string_id(e, "nanoseconds");

	if (e->oom)
		return;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct mstat_profile_stack *s = &p->stacks[i];
		double v[NVALUES], b[NVALUES];
		int64_t out[NVALUES];
		bool any = false;
		stack_values(p, s, v);
		const struct mstat_profile_stack *const *was =
			index ? bsearch(&s, index, base->nstacks, sizeof(*index),
					stack_cmp)
			      : NULL;
		if (was)
			stack_values(base, *was, b);
		for (size_t k = 0; k < NVALUES; k++) {
			out[k] = (int64_t)llround(v[k]) -
				 (was ? (int64_t)llround(b[k]) : 0);
			any |= out[k] != 0;
		}
		if (!any)
			continue; /* nothing happened there (a delta) */
		for (uint32_t k = 0; k < s->depth; k++)
			varint(&e->sub, location_id(e, s->frames[k]));
		field_msg(&e->m, SAMPLE_LOCATION_ID, &e->sub);
		for (size_t k = 0; k < NVALUES; k++)
			varint(&e->sub, (uint64_t)out[k]);
		field_msg(&e->m, SAMPLE_VALUE, &e->sub);
		/* Its average block, its bytes over its objects, as Go
		 * labels each sample with its blocks' size. */
		if (v[0] >= 1 && v[1] / v[0] >= 1) {
			field_varint(&e->sub, LABEL_KEY, bytes_key);
			field_varint(&e->sub, LABEL_NUM, (uint64_t)llround(v[1] / v[0]));
			field_msg(&e->m, SAMPLE_LABEL, &e->sub);
		}
		/* How long its blocks live (lifetime.h): the median lifetime
		 * of those freed, the mean age of those live. */
		struct mstat_lifetime life = { 0 };
		struct mstat_lifetime_summary sum;
		mstat_lifetime_add(&life, s);
		mstat_lifetime_summarise(&life, p, v[1], &sum);
		duration_label(e, lifetime_key, sum.median_ns, ns_unit);
		duration_label(e, age_key, sum.live_age_ns, ns_unit);
		field_msg(&e->out, PROFILE_SAMPLE, &e->m);
	}
	free(index);
}

/* Locations: named where the symbols know the frame.  named[i] is set
 * for each module i that one of them names a function in. */
static void
encode_locations(struct enc *e, const struct mstat_profile *p,
		 struct mstat_symbols *sym, bool *named)
{
	for (uint32_t i = 0; i < e->nloc; i++) {
		uint64_t pc = e->loc_pc[i];
		struct mstat_frame f = { 0 };
		if (sym)
			mstat_symbols_lookup(sym, pc, &f);
		else
			f.module = mstat_reader_profile_module_of(p, pc);
		field_varint(&e->m, LOCATION_ID, i + 1);
		if (f.module) {
			uint32_t mi = (uint32_t)(f.module - p->modules);
			field_varint(&e->m, LOCATION_MAPPING_ID, mi + 1);
			if (f.function)
				named[mi] = true;
		}
		/* The call instruction: a frame's pc is its return address. */
		field_varint(&e->m, LOCATION_ADDRESS, pc ? pc - 1 : 0);
		if (f.function) {
			/* The name as every view shows it; the symbol whole,
			 * as the object file has it (mangled, and with its
			 * clone suffixes); the file from / where the
			 * compilation directory says. */
			uint64_t name = string_id(e, f.function);
			uint64_t system = string_id(e, f.symbol);
			uint64_t file = string_id(e, f.path ? f.path : "");
			field_varint(&e->sub, LINE_FUNCTION_ID,
				     function_id(e, name, system, file));
			field_varint(&e->sub, LINE_LINE, (uint64_t)(f.line > 0 ? f.line : 0));
			field_msg(&e->m, LOCATION_LINE, &e->sub);
		}
		field_msg(&e->out, PROFILE_LOCATION, &e->m);
	}
}

/* Mappings: each module, with its build id; `named` as above. */
static void
encode_mappings(struct enc *e, const struct mstat_profile *p, const bool *named)
{
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct mstat_profile_module *m = &p->modules[i];
		char id[2 * MSTAT_BUILD_ID_MAX + 1];
		hex(id, m->build_id, m->build_id_len);
		uint64_t file = string_id(e, m->path), bid = string_id(e, id);
		field_varint(&e->m, MAPPING_ID, i + 1);
		field_varint(&e->m, MAPPING_MEMORY_START, m->start);
		field_varint(&e->m, MAPPING_MEMORY_LIMIT, m->end);
		field_varint(&e->m, MAPPING_FILE_OFFSET, 0);
		field_varint(&e->m, MAPPING_FILENAME, file);
		field_varint(&e->m, MAPPING_BUILD_ID, bid);
		if (named[i]) {
			field_varint(&e->m, MAPPING_HAS_FUNCTIONS, 1);
			field_varint(&e->m, MAPPING_HAS_FILENAMES, 1);
			field_varint(&e->m, MAPPING_HAS_LINE_NUMBERS, 1);
		}
		field_msg(&e->out, PROFILE_MAPPING, &e->m);
	}
}

static void
encode(struct enc *e, const struct mstat_profile *p, struct mstat_symbols *sym,
       const struct mstat_pprof_options *o)
{
	(void)string_id(e, ""); /* index 0, as the format demands */
	for (size_t i = 0; i < NVALUES; i++)
		value_type(e, PROFILE_SAMPLE_TYPE, sample_types[i][0], sample_types[i][1]);
	uint64_t bytes_key = string_id(e, "bytes");
	encode_samples(e, p, o->base, bytes_key);
	if (e->oom)
		return;
	bool *named = calloc(p->nmodules + 1, sizeof(*named));
	if (!named) {
		e->oom = true;
		return;
	}
	encode_locations(e, p, sym, named);
	encode_mappings(e, p, named);
	free(named);

	for (uint32_t i = 0; i < e->nfn; i++) {
		field_varint(&e->m, FUNCTION_ID, i + 1);
		field_varint(&e->m, FUNCTION_NAME, e->fn_name[i]);
		field_varint(&e->m, FUNCTION_SYSTEM_NAME, e->fn_key[i] >> 32);
		field_varint(&e->m, FUNCTION_FILENAME, e->fn_key[i] & 0xffffffffu);
		field_msg(&e->out, PROFILE_FUNCTION, &e->m);
	}

	field_varint(&e->out, PROFILE_TIME_NANOS, o->time_ns);
	if (o->duration_ns)
		field_varint(&e->out, PROFILE_DURATION_NANOS, o->duration_ns);
	value_type(e, PROFILE_PERIOD_TYPE, "space", "bytes");
	field_varint(&e->out, PROFILE_PERIOD, p->sample_bytes);
	if (o->comment)
		field_varint(&e->out, PROFILE_COMMENT, string_id(e, o->comment));
	if (o->default_sample_type)
		field_varint(&e->out, PROFILE_DEFAULT_SAMPLE_TYPE,
			     string_id(e, o->default_sample_type));
	/* Last: every string is known now. */
	for (uint32_t i = 0; i < e->nstr; i++)
		field_bytes(&e->out, PROFILE_STRING_TABLE, e->str[i], strlen(e->str[i]));
}

static int
refuse(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* `in` gzipped, as Go writes its profiles (at the fastest level: a
 * profile is served, not archived), into *out. */
static int
gzip_buf(const struct buf *in, unsigned char **out, size_t *len, char *err,
	 size_t errlen)
{
	z_stream z = { 0 };

	/* 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return refuse(err, errlen, -ENOMEM, "zlib: cannot start deflate");
	/* The gzip header and trailer beside deflate's bound. */
	size_t cap = deflateBound(&z, (uLong)in->n) + 32;
	unsigned char *d = malloc(cap);
	if (!d) {
		deflateEnd(&z);
		return refuse(err, errlen, -ENOMEM, "out of memory compressing "
			      "the profile");
	}
	z.next_in = in->d;
	z.avail_in = (uInt)in->n;
	z.next_out = d;
	z.avail_out = (uInt)cap;
	int zr = deflate(&z, Z_FINISH);
	*len = cap - z.avail_out;
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(d);
		return refuse(err, errlen, -ENOMEM, "zlib: deflate failed");
	}
	*out = d;
	return 0;
}

int
mstat_pprof_encode(const struct mstat_profile *p, struct mstat_symbols *sym,
		   const struct mstat_pprof_options *o, unsigned char **out,
		   size_t *len, char *err, size_t errlen)
{
	struct enc e = { 0 };
	int rc;

	*out = NULL;
	*len = 0;
	encode(&e, p, sym, o);
	if (e.oom || e.out.oom || e.m.oom || e.sub.oom)
		rc = refuse(err, errlen, -ENOMEM, "out of memory encoding the profile");
	else if (e.out.n > UINT32_MAX / 2)
		rc = refuse(err, errlen, -EFBIG, "a profile of %zu bytes is too "
			    "large to compress", e.out.n);
	else
		rc = gzip_buf(&e.out, out, len, err, errlen);
	for (uint32_t i = 0; i < e.nstr; i++)
		free((void *)e.str[i]);
	free(e.str);
	free(e.loc_pc);
	free(e.fn_key);
	free(e.fn_name);
	map_free(&e.strings);
	map_free(&e.locations);
	map_free(&e.functions);
	free(e.out.d);
	free(e.m.d);
	free(e.sub.d);
	return rc;
}

int
mstat_pprof_write(const struct mstat_profile *p, struct mstat_symbols *sym,
		  uint64_t time_ns, const char *path, char *err, size_t errlen)
{
	struct mstat_pprof_options o = { .time_ns = time_ns };

	return mstat_pprof_write_with(p, sym, &o, path, err, errlen);
}

int
mstat_pprof_write_with(const struct mstat_profile *p, struct mstat_symbols *sym,
		       const struct mstat_pprof_options *o, const char *path,
		       char *err, size_t errlen)
{
	struct mstat_outfile f;
	unsigned char *gz;
	size_t len;
	int rc = mstat_pprof_encode(p, sym, o, &gz, &len, err, errlen);

	if (rc < 0)
		return rc;
	rc = mstat_outfile_open(&f, path, MSTAT_OUTFILE_WHOLE, err, errlen);
	if (rc == 0 && fwrite(gz, 1, len, f.f) != len) {
		mstat_outfile_discard(&f);
		rc = refuse(err, errlen, -EIO, "%s: write failed", path);
	} else if (rc == 0) {
		rc = mstat_outfile_close(&f, err, errlen);
	}
	free(gz);
	return rc;
}
