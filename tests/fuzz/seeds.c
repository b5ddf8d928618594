/* SPDX-License-Identifier: MIT */
/*
 * seeds.c - writes the seed corpus of tests/fuzz/fuzz_reader.c into a
 * directory: segments as a writer makes them, in the states a reader must
 * handle, and segments one change away from those that the reader must
 * refuse, so that the fuzzer starts where the reader's checks and read
 * paths are, not in front of the magic number.
 *
 *	seeds DIR
 *
 * Each file is the start of a segment: the header, the class table and
 * the first few slots (counters in every generation, touched bits, odd and
 * even seqs); the fuzz target gives the file the size its header claims.
 * Some carry a heap profile after that, at FUZZ_PROFILE_AT (run.sh), which
 * the fuzz target puts where the header says the profile region is:
 * stacks, frames and modules as the writer makes them, and changes of
 * them the reader must skip.
 * Headers name the user running this, as a writer's do: run it as the
 * user that runs the fuzzer.  Built from layout.h, so the seeds follow
 * the format when it changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/layout.h"
#include "shm/sizeclass.h"

#if !defined(FUZZ_PROFILE_AT) || !defined(FUZZ_PROFILE_BYTES)
#error "FUZZ_PROFILE_AT, FUZZ_PROFILE_BYTES: the input's layout (run.sh)"
#endif

struct seg {
	unsigned char *buf;         /* the start of the segment */
	size_t len;                 /* bytes of it written to the file */
	struct mstat_shm_header *h; /* at buf */
	unsigned char *prof;        /* its profile region in buf, or NULL */
};

static const char *dir;
static unsigned written;

static void
die(const char *what)
{
	fprintf(stderr, "seeds: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A segment as a writer makes it: `classes` classes, `slots` slots, the
 * first `in_file` of them in the file; every slot with pages in use.  The
 * class table at `classes_offset`, the slots on the page after it. */
static struct seg
seg_at(uint32_t classes, uint32_t slots, uint32_t in_file, uint32_t mode,
       uint32_t classes_offset)
{
	struct seg s;
	struct mstat_shm_header *h;
	uint64_t *table;
	uint32_t slots_offset = MSTAT_ALIGN_UP(classes_offset + classes * 8,
					       MSTAT_PAGE);

	s.len = slots_offset + (size_t)in_file * MSTAT_SLOT_SIZE(classes);
	/* Page-aligned: the header and slots hold aligned atomics. */
	s.buf = aligned_alloc(MSTAT_PAGE, s.len);
	if (!s.buf)
		die("aligned_alloc");
	memset(s.buf, 0, s.len);
	s.prof = NULL;
	s.h = h = (struct mstat_shm_header *)s.buf;
	/* The smallest profile a reader accepts (one page); the class
	 * table moved to `classes_offset`, and what follows it with it. */
	mstat_header_geometry(h, classes, slots, 1, 1, 1);
	h->classes_offset = classes_offset;
	h->slots_offset = slots_offset;
	h->profile_offset = slots_offset + slots * h->slot_size;
	h->segment_size = (uint64_t)h->profile_offset + h->profile_size;
	h->writer_mode = mode;
	h->pid = 4242;
	h->uid = (uint32_t)geteuid();
	h->start_time = 987654321;
	h->created_ns = UINT64_C(1700000000000000000);
	h->pid_ns = 4026531836u;
	strcpy(h->name, "svc");
	atomic_store_explicit(&h->state, MSTAT_STATE_RUNNING, memory_order_relaxed);
	atomic_store_explicit(&h->threads, in_file ? in_file - 1 : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&h->slots_used, in_file, memory_order_relaxed);
	atomic_store_explicit(&h->epoch, 6, memory_order_relaxed);
	atomic_store_explicit(&h->synced_epoch, 6, memory_order_relaxed);

	/* The real bounds for the real class count; strictly increasing
	 * ones otherwise. */
	table = (uint64_t *)(s.buf + classes_offset);
	for (uint32_t c = 0; c < classes; c++)
		table[c] = classes == MSTAT_CLASS_COUNT ? mstat_class_max_size(c)
							: (uint64_t)c * 16;
	atomic_store_explicit(&h->magic, MSTAT_SHM_MAGIC, memory_order_relaxed);
	return s;
}

static struct seg
seg_new(uint32_t classes, uint32_t slots, uint32_t in_file, uint32_t mode)
{
	return seg_at(classes, slots, in_file, mode, MSTAT_CLASSES_OFFSET);
}

static struct mstat_shm_slot *
slot(struct seg *s, uint32_t i)
{
	return (struct mstat_shm_slot *)(s->buf + s->h->slots_offset +
					 (size_t)i * s->h->slot_size);
}

/* Adds to one row of one generation of a slot, marking the row touched,
 * as a writer's section does. */
static void
count(struct seg *s, uint32_t i, unsigned gen, uint32_t row, uint64_t n,
      uint64_t bytes, uint64_t freed, uint64_t freed_bytes)
{
	struct mstat_shm_slot *sl = slot(s, i);
	uint32_t classes = s->h->class_count;
	_Atomic uint64_t *c = sl->acc + (size_t)gen * MSTAT_GEN_COUNTERS(classes) +
			      (size_t)row * MSTAT_ROW_COUNTERS;
	uint64_t v[MSTAT_ROW_COUNTERS] = { n, bytes, freed, freed_bytes };

	if (row == classes) { /* the totals: requested bytes, in the head */
		atomic_fetch_add_explicit(&sl->head.requested[gen], n,
					  memory_order_relaxed);
		return;
	}

	for (unsigned k = 0; k < MSTAT_ROW_COUNTERS; k++)
		atomic_fetch_add_explicit(&c[k], v[k], memory_order_relaxed);
	atomic_fetch_or_explicit(&sl->head.touched[row / 64],
				 UINT64_C(1) << (row % 64), memory_order_relaxed);
}

static void
set_seq(struct seg *s, uint32_t i, uint64_t seq, uint32_t tid)
{
	atomic_store_explicit(&slot(s, i)->head.seq, seq, memory_order_relaxed);
	atomic_store_explicit(&slot(s, i)->head.tid, tid, memory_order_relaxed);
}

/* A running process's counts: early counts in slot 0, generation 0; a
 * few classes and the totals row in every generation of the others. */
static void
fill(struct seg *s)
{
	uint32_t classes = s->h->class_count;
	uint32_t used = atomic_load_explicit(&s->h->slots_used,
					     memory_order_relaxed);
	uint32_t in_file = (uint32_t)((s->len - s->h->slots_offset) /
				      s->h->slot_size);

	for (uint32_t i = 0; i < used && i < in_file; i++) {
		for (unsigned g = 0; g < MSTAT_GENS; g++) {
			if (i == 0 && g > 0)
				break;
			for (uint32_t row = i % 3; row < classes; row += 5 + i) {
				uint64_t n = 10 + row + g, size = 16 * (row + 1);

				count(s, i, g, row, n, n * size, 3 + g,
				      (3 + g) * size);
			}
			/* The totals: requested bytes. */
			count(s, i, g, classes, 1000 * (g + 1), 0, 0, 0);
		}
		set_seq(s, i, 2 * (100 + i), i ? 1000 + i : 0);
	}
}

/* ---- the heap profile ---- */

/* Gives the segment a profile region of these capacities, placed in the
 * seed where the fuzz target takes it from: at its own offset below
 * FUZZ_PROFILE_AT, else at FUZZ_PROFILE_AT; at most FUZZ_PROFILE_BYTES
 * of it are written. */
static void
with_profile(struct seg *s, uint32_t stacks, uint32_t frames, uint32_t modules)
{
	struct mstat_shm_header *h = s->h;
	uint64_t size = MSTAT_PROFILE_SIZE(stacks, frames, modules);
	size_t at = h->profile_offset < FUZZ_PROFILE_AT ? h->profile_offset
							: FUZZ_PROFILE_AT;
	unsigned char *buf;

	if (s->len > at) {
		errno = EINVAL;
		die("slots over the profile");
	}
	h->stack_capacity = stacks;
	h->frame_capacity = frames;
	h->module_capacity = modules;
	h->profile_size = (uint32_t)size;
	h->segment_size = (uint64_t)h->profile_offset + size;
	atomic_store_explicit(&h->sample_bytes, MSTAT_SAMPLE_DEFAULT,
			      memory_order_relaxed);
	buf = aligned_alloc(MSTAT_PAGE, at + size);
	if (!buf)
		die("aligned_alloc");
	memset(buf, 0, at + size);
	memcpy(buf, s->buf, s->len);
	free(s->buf);
	s->buf = buf;
	s->h = (struct mstat_shm_header *)buf;
	s->prof = buf + at;
	s->len = at + (size < FUZZ_PROFILE_BYTES ? size : FUZZ_PROFILE_BYTES);
}

static struct mstat_shm_profile *
prof_head(struct seg *s)
{
	return (struct mstat_shm_profile *)s->prof;
}

static struct mstat_shm_stack *
prof_stack(struct seg *s, uint32_t i)
{
	return (struct mstat_shm_stack *)(s->prof + MSTAT_PROFILE_STACKS_OFFSET) + i;
}

static _Atomic uint64_t *
prof_frames(struct seg *s)
{
	return (_Atomic uint64_t *)(s->prof +
				    MSTAT_PROFILE_FRAMES_OFFSET(s->h->stack_capacity));
}

static struct mstat_shm_module *
prof_module(struct seg *s, uint32_t i)
{
	return (struct mstat_shm_module *)(s->prof +
					   MSTAT_PROFILE_MODULES_OFFSET(
						   s->h->stack_capacity,
						   s->h->frame_capacity)) + i;
}

static struct mstat_shm_lifetimes *
prof_lifetimes(struct seg *s, uint32_t i)
{
	return (struct mstat_shm_lifetimes *)(s->prof + MSTAT_PROFILE_LIFETIMES_OFFSET(
						      s->h->stack_capacity,
						      s->h->frame_capacity,
						      s->h->module_capacity)) + i;
}

static _Atomic uint64_t *
prof_births(struct seg *s)
{
	return (_Atomic uint64_t *)(s->prof + MSTAT_PROFILE_BIRTHS_OFFSET(
					    s->h->stack_capacity,
					    s->h->frame_capacity,
					    s->h->module_capacity));
}

#define PROF_SET(s, field, v)                                                \
	atomic_store_explicit(&prof_head(s)->field, (v), memory_order_relaxed)
#define PROF_GET(s, field)                                                   \
	atomic_load_explicit(&prof_head(s)->field, memory_order_relaxed)

/* A module entry, as the writer appends it; its build id `id_len` bytes. */
static void
add_module(struct seg *s, uint64_t start, uint64_t end, const char *path,
	   uint32_t id_len)
{
	uint32_t n = PROF_GET(s, modules_used);
	struct mstat_shm_module *m = prof_module(s, n);

	m->start = start;
	m->end = end;
	m->bias = start;
	m->build_id_len = id_len;
	for (uint32_t i = 0; i < id_len; i++)
		m->build_id[i] = (uint8_t)(0x5a + 17 * i + n);
	snprintf(m->path, sizeof(m->path), "%s", path);
	PROF_SET(s, modules_used, n + 1);
}

/* A stack entry and its frames, as the writer makes one, with its
 * counters, its samples weighing 8 times their bytes (the freed ones in
 * two lifetime buckets); returns its index. */
static uint32_t
add_stack(struct seg *s, const uint64_t *f, uint32_t depth, uint64_t allocs,
	  uint64_t bytes, uint64_t frees, uint64_t freed)
{
	uint32_t e = PROF_GET(s, stacks_used), off = PROF_GET(s, frames_used);
	struct mstat_shm_stack *st = prof_stack(s, e);

	for (uint32_t k = 0; k < depth; k++)
		atomic_store_explicit(&prof_frames(s)[off + k], f[k],
				      memory_order_relaxed);
	st->frames_offset = off;
	atomic_store_explicit(&st->depth, depth, memory_order_relaxed);
	atomic_store_explicit(&st->allocs, allocs, memory_order_relaxed);
	atomic_store_explicit(&st->alloc_bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&st->frees, frees, memory_order_relaxed);
	atomic_store_explicit(&st->free_bytes, freed, memory_order_relaxed);
	atomic_store_explicit(&st->alloc_weight, 8 * bytes, memory_order_relaxed);
	atomic_store_explicit(&st->alloc_objects, 8 * MSTAT_OBJECT_UNITS * allocs,
			      memory_order_relaxed);
	atomic_store_explicit(&st->free_objects, 8 * MSTAT_OBJECT_UNITS * frees,
			      memory_order_relaxed);
	atomic_store_explicit(&prof_lifetimes(s, e)->freed[3], 3 * freed,
			      memory_order_relaxed);
	atomic_store_explicit(&prof_lifetimes(s, e)->freed[MSTAT_LIFETIMES - 1],
			      5 * freed, memory_order_relaxed);
	PROF_SET(s, stacks_used, e + 1);
	PROF_SET(s, frames_used, off + depth);
	PROF_SET(s, samples, PROF_GET(s, samples) + allocs);
	return e;
}

#define EXE UINT64_C(0x555555554000)
#define LIBC UINT64_C(0x7ffff7d80000)

/* A process that sampled a few stacks: three modules (one without a
 * build id), a stack entered twice, a frame outside every module, one of
 * the deepest stacks, an entry taken and not yet published, and one
 * published before its first count. */
static void
profile_fill(struct seg *s)
{
	uint64_t a[] = { EXE + 0x1100, EXE + 0x1200, LIBC + 0x29d90 };
	uint64_t b[] = { EXE + 0x1300 };
	uint64_t c[] = { UINT64_C(0xdeadbeef000), EXE + 0x1400 };
	uint64_t deep[MSTAT_STACK_DEPTH];

	for (uint32_t k = 0; k < MSTAT_STACK_DEPTH; k++)
		deep[k] = EXE + 0x2000 + 16 * k;
	add_module(s, EXE, EXE + 0x4000, "/usr/bin/svc", MSTAT_BUILD_ID_MAX);
	add_module(s, LIBC, LIBC + 0x180000,
		   "/usr/lib/x86_64-linux-gnu/libc.so.6", MSTAT_BUILD_ID_MAX);
	add_module(s, UINT64_C(0x7ffff7fc1000), UINT64_C(0x7ffff7fc3000),
		   "linux-vdso.so.1", 0);
	add_stack(s, a, 3, 5, 5 * 4096, 2, 2 * 4096);
	add_stack(s, b, 1, 1, 100, 0, 0);
	add_stack(s, a, 3, 3, 3 * 4096, 3, 3 * 4096);
	add_stack(s, c, 2, 7, 7 * 64, 1, 64);
	add_stack(s, deep, MSTAT_STACK_DEPTH, 2, 2 * 1024 * 1024, 1, 1024 * 1024);
	add_stack(s, b, 1, 0, 0, 0, 0);
	/* Live samples' births: of entries 0 and 3, of the entry the reader
	 * skips below (5, no allocation), of one past those taken, and of
	 * none (entry 0xfffe). */
	prof_births(s)[0] = (UINT64_C(1) << MSTAT_BIRTH_BITS) | 1000;
	prof_births(s)[7] = (UINT64_C(1) << MSTAT_BIRTH_BITS) | 12;
	prof_births(s)[8] = (UINT64_C(4) << MSTAT_BIRTH_BITS) | 5;
	prof_births(s)[9] = (UINT64_C(6) << MSTAT_BIRTH_BITS) | 5;
	prof_births(s)[10] = (UINT64_C(9) << MSTAT_BIRTH_BITS) | 5;
	prof_births(s)[11] = UINT64_MAX;
	prof_head(s)->tick0 = 1;
	/* Taken, its frames not yet written nor published. */
	PROF_SET(s, stacks_used, PROF_GET(s, stacks_used) + 1);
	PROF_SET(s, frames_used, PROF_GET(s, frames_used) + 2);
	PROF_SET(s, dropped, 2);
}

/* Capacities of a small profile: its region fits FUZZ_PROFILE_BYTES, but
 * for most of its births (a fixed 256 KiB: the rest of them are holes). */
#define SMALL_STACKS 16u
#define SMALL_FRAMES 256u
#define SMALL_MODULES 4u
_Static_assert(MSTAT_PROFILE_BIRTHS_OFFSET(SMALL_STACKS, SMALL_FRAMES,
					   SMALL_MODULES) + 512 <= FUZZ_PROFILE_BYTES,
	       "a small profile is whole in a seed, and its first births");

static void
emit(const char *name, struct seg *s, size_t len)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%02u-%s", dir, written++, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);
	if (write(fd, s->buf, len) != (ssize_t)len)
		die(path);
	close(fd);
}

static void
done(const char *name, struct seg *s)
{
	emit(name, s, s->len);
	free(s->buf);
}

/* The default segment with three slots in use: the base of the changes
 * below. */
static struct seg
base(void)
{
	struct seg s = seg_new(MSTAT_CLASS_COUNT, 8, 3, MSTAT_MODE_FENCED);

	fill(&s);
	return s;
}

#define H(s) ((s).h)
#define SET(s, field, v) atomic_store_explicit(&(s).h->field, (v), memory_order_relaxed)

static void
valid_segments(void)
{
	struct seg s;

	s = base();
	done("fenced", &s);

	s = seg_new(MSTAT_CLASS_COUNT, 2, 2, MSTAT_MODE_MEMBARRIER);
	fill(&s);
	done("membarrier-two-slots", &s);

	/* The default capacity: 64 MiB and 8 KiB, three slots with pages. */
	s = seg_new(MSTAT_CLASS_COUNT, MSTAT_SLOTS_DEFAULT, 3, MSTAT_MODE_MEMBARRIER);
	fill(&s);
	done("default-capacity", &s);

	/* A writer stopped inside an update. */
	s = base();
	set_seq(&s, 1, 201, 1001);
	done("odd-seq", &s);
	s = seg_new(MSTAT_CLASS_COUNT, 4, 3, MSTAT_MODE_MEMBARRIER);
	fill(&s);
	set_seq(&s, 0, 77, 0);
	set_seq(&s, 2, 203, 1002);
	done("odd-seqs-membarrier", &s);

	/* An exit that could not wait for one slot, and one whose exit_cut
	 * is more than the slots it has. */
	s = base();
	SET(s, state, MSTAT_STATE_EXITING);
	SET(s, exit_cut, 1);
	SET(s, exit_ns, UINT64_C(1700000001000000000));
	set_seq(&s, 2, 205, 1002);
	done("exiting-cut", &s);
	s = base();
	SET(s, state, MSTAT_STATE_EXITING);
	SET(s, exit_cut, 100);
	done("exiting-cut-beyond", &s);

	s = base();
	SET(s, state, MSTAT_STATE_EXECED);
	done("execed", &s);
	s = base();
	SET(s, state, 9);
	done("unknown-state", &s);

	/* A reader rotated and died before its handshake: the next catches
	 * up, with or without a slot still inside an update. */
	s = base();
	SET(s, epoch, 7);
	done("catch-up", &s);
	s = base();
	SET(s, epoch, 7);
	set_seq(&s, 1, 211, 1001);
	done("catch-up-odd", &s);

	/* Epochs at the end of their range. */
	s = base();
	SET(s, epoch, UINT64_MAX - 1);
	SET(s, synced_epoch, UINT64_MAX - 1);
	done("epoch-wraps", &s);

	/* Counters that wrap when the generations are added. */
	s = base();
	count(&s, 1, 0, 5, UINT64_MAX, UINT64_MAX, UINT64_MAX, 1);
	count(&s, 1, 1, 5, 2, 2, 2, UINT64_MAX);
	count(&s, 2, 2, 5, UINT64_MAX, 1, 0, 0);
	done("counters-wrap", &s);

	/* Touched bits beyond the last row: masked off, never followed. */
	s = seg_new(3, 4, 3, MSTAT_MODE_FENCED);
	fill(&s);
	for (unsigned w = 0; w < MSTAT_TOUCHED_WORDS; w++)
		atomic_store_explicit(&slot(&s, 1)->head.touched[w], UINT64_MAX,
				      memory_order_relaxed);
	done("touched-beyond-rows", &s);
	s = seg_new(1, 2, 2, MSTAT_MODE_MEMBARRIER);
	fill(&s);
	atomic_store_explicit(&slot(&s, 1)->head.touched[0], UINT64_MAX,
			      memory_order_relaxed);
	done("one-class", &s);
	s = seg_new(63, 2, 2, MSTAT_MODE_FENCED);
	fill(&s);
	for (unsigned w = 0; w < MSTAT_TOUCHED_WORDS; w++)
		atomic_store_explicit(&slot(&s, 1)->head.touched[w], UINT64_MAX,
				      memory_order_relaxed);
	done("rows-fill-one-word", &s);

	/* The most classes a snapshot holds: 28 KiB slots. */
	s = seg_new(MSTAT_MAX_CLASSES, 3, 3, MSTAT_MODE_FENCED);
	fill(&s);
	for (unsigned w = 0; w < MSTAT_TOUCHED_WORDS; w++)
		atomic_store_explicit(&slot(&s, 2)->head.touched[w], UINT64_MAX,
				      memory_order_relaxed);
	done("most-classes", &s);

	/* No slot used yet, and every slot used. */
	s = base();
	SET(s, slots_used, 0);
	done("no-slot-used", &s);
	s = seg_new(MSTAT_CLASS_COUNT, 3, 3, MSTAT_MODE_FENCED);
	fill(&s);
	done("every-slot-used", &s);

	/* A header that only starts the file: the rest is holes. */
	s = base();
	emit("header-only", &s, sizeof(struct mstat_shm_header));
	emit("header-and-classes", &s, MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT));
	free(s.buf);

	/* A class table a page further up, and one right after the header's
	 * page but not at its start: the format allows both. */
	s = seg_at(MSTAT_CLASS_COUNT, 2, 2, MSTAT_MODE_FENCED, 2 * MSTAT_PAGE);
	fill(&s);
	done("classes-moved", &s);
	s = seg_at(MSTAT_CLASS_COUNT, 2, 2, MSTAT_MODE_MEMBARRIER, MSTAT_PAGE + 8);
	fill(&s);
	done("classes-unaligned-page", &s);

	/* Heap profiles: a small one after eight slots (moved up by the fuzz
	 * target), one after two slots (in the input's reach as it is), one
	 * after two slots of one page each (a seed of 24 KiB, a third of it
	 * the profile: where mutations land most often in it), one of the
	 * writer's capacities (its first stack entries in the seed), and one
	 * whose counts went past its capacities. */
	s = base();
	with_profile(&s, SMALL_STACKS, SMALL_FRAMES, SMALL_MODULES);
	profile_fill(&s);
	done("profile", &s);
	s = seg_new(MSTAT_CLASS_COUNT, 2, 2, MSTAT_MODE_MEMBARRIER);
	fill(&s);
	with_profile(&s, SMALL_STACKS, SMALL_FRAMES, SMALL_MODULES);
	profile_fill(&s);
	done("profile-two-slots", &s);
	s = seg_new(1, 2, 2, MSTAT_MODE_FENCED);
	fill(&s);
	with_profile(&s, SMALL_STACKS, SMALL_FRAMES, SMALL_MODULES);
	profile_fill(&s);
	done("profile-small-segment", &s);
	s = base();
	with_profile(&s, MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES);
	profile_fill(&s);
	done("profile-default", &s);
	s = base();
	with_profile(&s, SMALL_STACKS, SMALL_FRAMES, SMALL_MODULES);
	profile_fill(&s);
	PROF_SET(&s, stacks_used, SMALL_STACKS + 5);
	PROF_SET(&s, frames_used, SMALL_FRAMES + 100);
	PROF_SET(&s, modules_used, SMALL_MODULES + 1);
	done("profile-past-capacity", &s);
}

/* Each one change from a segment the reader takes. */
static void
near_valid(void)
{
	struct seg s;

#define VARIANT(name, change)                                                \
	do {                                                                 \
		s = base();                                                  \
		change;                                                      \
		done(name, &s);                                              \
	} while (0)

	VARIANT("slots-used-beyond", SET(s, slots_used, H(s)->slot_count + 1));
	VARIANT("slots-used-huge", SET(s, slots_used, UINT32_MAX));
	VARIANT("magic-zero", SET(s, magic, 0));
	VARIANT("magic-bad", SET(s, magic, MSTAT_SHM_MAGIC ^ 1));
	VARIANT("version-1", H(s)->version_major = 1);
	VARIANT("version-minor", H(s)->version_minor = 9);
	VARIANT("header-size-small", H(s)->header_size = 16);
	VARIANT("header-size-large", H(s)->header_size = MSTAT_PAGE + 1);
	VARIANT("row-counters", H(s)->row_counters = MSTAT_ROW_COUNTERS + 1);
	VARIANT("classes-zero", H(s)->class_count = 0);
	VARIANT("classes-too-many", H(s)->class_count = MSTAT_MAX_CLASSES + 1);
	VARIANT("slot-count-one", H(s)->slot_count = 1);
	VARIANT("slot-count-huge", H(s)->slot_count = MSTAT_SLOTS_MAX + 1);
	/* Slots a page short of their rows, every slot in use, every row of
	 * the last touched, the sizes otherwise consistent: the slot size
	 * check alone stands between the reader and a read past the end. */
	s = seg_new(MSTAT_CLASS_COUNT, 3, 3, MSTAT_MODE_FENCED);
	fill(&s);
	for (unsigned w = 0; w < MSTAT_TOUCHED_WORDS; w++)
		atomic_store_explicit(&slot(&s, 2)->head.touched[w], UINT64_MAX,
				      memory_order_relaxed);
	H(s)->slot_size -= MSTAT_PAGE;
	H(s)->profile_offset = H(s)->slots_offset + 3 * H(s)->slot_size;
	H(s)->segment_size = (uint64_t)H(s)->profile_offset + H(s)->profile_size;
	done("slot-size-short", &s);
	VARIANT("slot-size-long", H(s)->slot_size += MSTAT_PAGE);
	VARIANT("classes-offset-low", H(s)->classes_offset = 64);
	VARIANT("classes-offset-odd", H(s)->classes_offset = MSTAT_PAGE + 4);
	VARIANT("slots-over-classes", H(s)->slots_offset = MSTAT_PAGE);
	VARIANT("slots-offset-unaligned", H(s)->slots_offset += 8);
	VARIANT("size-layout", H(s)->segment_size += MSTAT_PAGE);
	/* A layout too large to be given its size: the file is the input. */
	VARIANT("size-beyond-file",
		(H(s)->slots_offset = 1u << 30,
		 H(s)->profile_offset = (1u << 30) + H(s)->slot_count * H(s)->slot_size,
		 H(s)->segment_size = (uint64_t)H(s)->profile_offset + H(s)->profile_size));
	/* The file as long as the input, shorter than the header says (the
	 * fuzz target's switch, in a field readers ignore). */
	VARIANT("file-short", H(s)->reserved0 = 1);
	VARIANT("writer-mode", H(s)->writer_mode = 3);
	VARIANT("pid-zero", H(s)->pid = 0);
	VARIANT("uid-other", H(s)->uid += 1);
	VARIANT("name-unterminated", memset(H(s)->name, 'x', sizeof(H(s)->name)));
	VARIANT("classes-out-of-order",
		((uint64_t *)(s.buf + MSTAT_CLASSES_OFFSET))[5] =
			((uint64_t *)(s.buf + MSTAT_CLASSES_OFFSET))[4]);
#undef VARIANT

	/* Shorter than a header. */
	s = base();
	emit("short", &s, 100);
	free(s.buf);

	/* Each one change from a profile the reader takes: entries it must
	 * skip, counts it must bound, a geometry it must refuse. */
#define PVARIANT(name, change)                                               \
	do {                                                                 \
		s = base();                                                  \
		with_profile(&s, SMALL_STACKS, SMALL_FRAMES, SMALL_MODULES); \
		profile_fill(&s);                                            \
		change;                                                      \
		done("profile-" name, &s);                                   \
	} while (0)
#define STACK(i) prof_stack(&s, (i))
#define LIFETIMES(i) prof_lifetimes(&s, (i))
#define MODULE(i) prof_module(&s, (i))

	PVARIANT("depth-beyond", atomic_store(&STACK(0)->depth, MSTAT_STACK_DEPTH + 1));
	PVARIANT("depth-past-pool",
		 STACK(1)->frames_offset = SMALL_FRAMES - 1;
		 atomic_store(&STACK(1)->depth, 2));
	PVARIANT("frames-offset-huge", STACK(1)->frames_offset = UINT32_MAX);
	PVARIANT("stacks-used-huge", PROF_SET(&s, stacks_used, UINT32_MAX));
	PVARIANT("modules-used-huge", PROF_SET(&s, modules_used, UINT32_MAX));
	PVARIANT("frees-beyond", atomic_store(&STACK(1)->frees, 2));
	PVARIANT("freed-bytes-beyond",
		 atomic_store(&STACK(0)->free_bytes, 5 * 4096 + 1));
	PVARIANT("freed-weight-beyond",
		 atomic_store(&LIFETIMES(0)->freed[0], 1));
	/* Buckets whose sum wraps. */
	PVARIANT("lifetimes-wrap",
		 atomic_store(&LIFETIMES(0)->freed[1], UINT64_MAX));
	PVARIANT("freed-objects-beyond",
		 atomic_store(&STACK(0)->free_objects,
			      atomic_load(&STACK(0)->alloc_objects) + 1));
	/* Format 6.0: the words that are objects in 6.1 are not read (a 5.x
	 * writer kept its freed weight in one). */
	PVARIANT("minor-0", H(s)->version_minor = 0;
		 atomic_store(&STACK(0)->free_objects, UINT64_MAX));
	/* A stack entered twice whose counts wrap when merged. */
	PVARIANT("merge-wraps",
		 atomic_store(&STACK(0)->allocs, UINT64_MAX);
		 atomic_store(&STACK(0)->alloc_bytes, UINT64_MAX);
		 atomic_store(&STACK(0)->frees, UINT64_MAX);
		 atomic_store(&STACK(0)->free_bytes, UINT64_MAX);
		 atomic_store(&STACK(0)->alloc_objects, UINT64_MAX);
		 atomic_store(&STACK(0)->free_objects, UINT64_MAX);
		 atomic_store(&STACK(0)->alloc_weight, UINT64_MAX);
		 atomic_store(&LIFETIMES(0)->freed[3], UINT64_MAX - 8 * 5 * 4096);
		 atomic_store(&STACK(2)->frees, 0);
		 atomic_store(&STACK(2)->free_bytes, 0);
		 atomic_store(&STACK(2)->free_objects, 0);
		 atomic_store(&LIFETIMES(2)->freed[3], 0);
		 atomic_store(&LIFETIMES(2)->freed[MSTAT_LIFETIMES - 1], 0));
	PVARIANT("build-id-long", MODULE(0)->build_id_len = MSTAT_BUILD_ID_MAX + 1);
	PVARIANT("build-id-huge", MODULE(1)->build_id_len = UINT32_MAX);
	PVARIANT("path-unterminated",
		 memset(MODULE(0)->path, '/', sizeof(MODULE(0)->path)));
	PVARIANT("module-empty", MODULE(0)->end = MODULE(0)->start);
	PVARIANT("module-reversed", MODULE(1)->end = MODULE(1)->start - 1);
	PVARIANT("module-at-top",
		 MODULE(2)->start = UINT64_MAX - 4096; MODULE(2)->end = UINT64_MAX);
	PVARIANT("stacks-not-power-of-two", H(s)->stack_capacity = SMALL_STACKS - 1);
	PVARIANT("size-short", H(s)->profile_size -= MSTAT_PAGE;
		 H(s)->segment_size -= MSTAT_PAGE);
	PVARIANT("frames-beyond-limit", H(s)->frame_capacity = MSTAT_FRAMES_LIMIT + 1);
#undef MODULE
#undef STACK
#undef PVARIANT
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	valid_segments();
	near_valid();
	printf("seeds: %u files in %s\n", written, dir);
	return 0;
}
