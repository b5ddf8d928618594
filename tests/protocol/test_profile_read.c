/* SPDX-License-Identifier: MIT */
/*
 * test_profile_read.c - mstat_reader_profile() on heap profile regions
 * written by hand: what a writer makes is read exactly, and every entry a
 * writer cannot make (a count, an offset, a depth, a length out of bounds,
 * more frees, freed objects or freed weight than allocations) is skipped
 * or bounded, so that what reader.h promises of a profile holds whatever
 * the region says.
 *
 * Each segment is a memfd of this user, mode 0600, with a valid header,
 * two slots and a small profile (16 stacks, 256 frames, 4 modules).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/layout.h"
#include <mstatshm.h>
#include "shm/reader.h"
#include "shm/sizeclass.h"

#define STACKS 16u
#define FRAMES 256u
#define MODULES 4u
#define SLOTS 2u

struct seg {
	int fd;
	unsigned char *map; /* the whole segment, read-write */
	size_t size;
	struct mstat_shm_header *h;
	struct mstat_shm_profile *prof;
	struct mstat_shm_stack *stacks;
	_Atomic uint64_t *frames;
	struct mstat_shm_module *modules;
	struct mstat_shm_lifetimes *lifetimes;
	_Atomic uint64_t *births;
};

/* A segment as a writer makes it, its profile empty. */
static struct seg
seg_new(void)
{
	struct seg s;
	struct mstat_shm_header *h;

	s.size = MSTAT_PROFILE_OFFSET(MSTAT_CLASS_COUNT, SLOTS) +
		 MSTAT_PROFILE_SIZE(STACKS, FRAMES, MODULES);
	s.fd = memfd_create("mstat-test-profile", MFD_CLOEXEC);
	assert_true(s.fd >= 0);
	assert_int_equal(fchmod(s.fd, 0600), 0);
	assert_int_equal(ftruncate(s.fd, (off_t)s.size), 0);
	s.map = mmap(NULL, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
	assert_true(s.map != MAP_FAILED);
	s.h = h = (struct mstat_shm_header *)s.map;
	mstat_header_geometry(h, MSTAT_CLASS_COUNT, SLOTS, STACKS, FRAMES, MODULES);
	h->writer_mode = MSTAT_MODE_FENCED;
	h->pid = getpid();
	h->uid = (uint32_t)geteuid();
	strcpy(h->name, "profile");
	for (unsigned c = 0; c < MSTAT_CLASS_COUNT; c++)
		((uint64_t *)(s.map + MSTAT_CLASSES_OFFSET))[c] = mstat_class_max_size(c);
	atomic_store(&h->magic, MSTAT_SHM_MAGIC);

	unsigned char *p = s.map + h->profile_offset;
	s.prof = (struct mstat_shm_profile *)p;
	s.stacks = (struct mstat_shm_stack *)(p + MSTAT_PROFILE_STACKS_OFFSET);
	s.frames = (_Atomic uint64_t *)(p + MSTAT_PROFILE_FRAMES_OFFSET(STACKS));
	s.modules = (struct mstat_shm_module *)(p + MSTAT_PROFILE_MODULES_OFFSET(
							 STACKS, FRAMES));
	s.lifetimes = (struct mstat_shm_lifetimes *)(
		p + MSTAT_PROFILE_LIFETIMES_OFFSET(STACKS, FRAMES, MODULES));
	s.births = (_Atomic uint64_t *)(p + MSTAT_PROFILE_BIRTHS_OFFSET(
						STACKS, FRAMES, MODULES));
	return s;
}

static void
seg_free(struct seg *s)
{
	munmap(s->map, s->size);
	close(s->fd);
}

/* A stack entry as the writer makes one: the next entry, the next frames. */
static struct mstat_shm_stack *
add_stack(struct seg *s, const uint64_t *f, uint32_t depth, uint64_t allocs,
	  uint64_t bytes, uint64_t frees, uint64_t freed)
{
	uint32_t e = atomic_load(&s->prof->stacks_used);
	uint32_t off = atomic_load(&s->prof->frames_used);
	struct mstat_shm_stack *st = &s->stacks[e];

	for (uint32_t k = 0; k < depth; k++)
		atomic_store(&s->frames[off + k], f[k]);
	st->frames_offset = off;
	atomic_store(&st->depth, depth);
	atomic_store(&st->allocs, allocs);
	atomic_store(&st->alloc_bytes, bytes);
	atomic_store(&st->frees, frees);
	atomic_store(&st->free_bytes, freed);
	atomic_store(&s->prof->stacks_used, e + 1);
	atomic_store(&s->prof->frames_used, off + depth);
	return st;
}

/* The weights of entry `st`: allocated, and freed (in one lifetime
 * bucket: the writer's free adds its weight to one). */
static struct mstat_shm_stack *
weigh(struct seg *s, struct mstat_shm_stack *st, uint64_t alloc_weight,
      uint64_t free_weight)
{
	atomic_store(&st->alloc_weight, alloc_weight);
	atomic_store(&s->lifetimes[st - s->stacks].freed[20], free_weight);
	return st;
}

/* The objects of entry `st` (6.1), in MSTAT_OBJECT_UNITS. */
static struct mstat_shm_stack *
objects(struct mstat_shm_stack *st, uint64_t alloc_objects, uint64_t free_objects)
{
	atomic_store(&st->alloc_objects, alloc_objects);
	atomic_store(&st->free_objects, free_objects);
	return st;
}

/* A live sample of entry `st`, born `t` units after tick0, in live
 * entry `i`. */
static void
birth(struct seg *s, uint32_t i, const struct mstat_shm_stack *st, uint64_t t)
{
	atomic_store(&s->births[i],
		     (uint64_t)(st - s->stacks + 1) << MSTAT_BIRTH_BITS | t);
}

static struct mstat_shm_module *
add_module(struct seg *s, uint64_t start, uint64_t end, const char *path,
	   uint32_t id_len)
{
	uint32_t n = atomic_load(&s->prof->modules_used);
	struct mstat_shm_module *m = &s->modules[n];

	m->start = start;
	m->end = end;
	m->bias = start;
	m->build_id_len = id_len;
	for (uint32_t i = 0; i < MSTAT_BUILD_ID_MAX; i++)
		m->build_id[i] = (uint8_t)(0xa0 + i);
	strcpy(m->path, path);
	atomic_store(&s->prof->modules_used, n + 1);
	return m;
}

/* The profile of the segment, read by a reader of its own. */
static void
read_profile(struct seg *s, struct mstat_profile *p)
{
	struct mstat_reader *r;
	char err[256] = "";

	assert_int_equal(mstat_reader_open_fd(&r, dup(s->fd), "profile", err,
					      sizeof(err)), 0);
	assert_int_equal(mstat_reader_profile(r, p), 0);
	mstat_reader_close(r);
}

/* The stack of `p` whose leaf frame is `pc`. */
static const struct mstat_profile_stack *
stack_at(const struct mstat_profile *p, uint64_t pc)
{
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].frames[0] == pc)
			return &p->stacks[i];
	fail_msg("no stack at 0x%llx", (unsigned long long)pc);
	return NULL;
}

#define EXE UINT64_C(0x555555554000)

static void
writers_profile_is_read_exactly(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t a[] = { EXE + 0x100, EXE + 0x200, EXE + 0x300 };
	uint64_t b[] = { EXE + 0x400 };

	(void)state;
	atomic_store(&s.h->sample_bytes, 4096);
	add_module(&s, EXE, EXE + 0x1000, "/usr/bin/svc", MSTAT_BUILD_ID_MAX);
	add_module(&s, 0x7f0000000000, 0x7f0000100000, "linux-vdso.so.1", 0);
	objects(weigh(&s, add_stack(&s, a, 3, 5, 500, 2, 200), 51200, 20480),
		13000, 5000);
	objects(weigh(&s, add_stack(&s, b, 1, 1, 64, 0, 0), 32768, 0), 131072, 0);
	/* The same stack, entered twice. */
	objects(weigh(&s, add_stack(&s, a, 3, 3, 300, 3, 300), 30720, 30720),
		7800, 7800);
	add_stack(&s, b, 1, 0, 0, 0, 0);     /* published, not counted yet */
	atomic_store(&s.prof->samples, 9);
	atomic_store(&s.prof->dropped, 1);
	read_profile(&s, &p);

	assert_int_equal(p.sample_bytes, 4096);
	assert_true(p.weighted);
	assert_true(p.has_objects);
	assert_int_equal(p.samples, 9);
	assert_int_equal(p.dropped, 1);
	assert_int_equal(p.nstacks, 2);
	const struct mstat_profile_stack *x = stack_at(&p, a[0]);
	assert_int_equal(x->depth, 3);
	assert_memory_equal(x->frames, a, sizeof(a));
	assert_int_equal(x->allocs, 8);
	assert_int_equal(x->alloc_bytes, 800);
	assert_int_equal(x->frees, 5);
	assert_int_equal(x->free_bytes, 500);
	assert_int_equal(x->alloc_weight, 81920);
	assert_int_equal(x->free_weight, 51200);
	assert_int_equal(x->alloc_objects, 20800);
	assert_int_equal(x->free_objects, 12800);
	x = stack_at(&p, b[0]);
	assert_int_equal(x->depth, 1);
	assert_int_equal(x->allocs, 1);
	assert_int_equal(x->alloc_bytes, 64);
	assert_int_equal(x->alloc_weight, 32768);
	assert_int_equal(x->alloc_objects, 131072);
	assert_int_equal(x->free_objects, 0);
	assert_int_equal(x->frees, 0);
	assert_int_equal(x->free_weight, 0);
	assert_int_equal(p.nmodules, 2);
	assert_int_equal(p.modules[0].start, EXE);
	assert_int_equal(p.modules[0].end, EXE + 0x1000);
	assert_int_equal(p.modules[0].build_id_len, MSTAT_BUILD_ID_MAX);
	assert_int_equal(p.modules[0].build_id[3], 0xa3);
	assert_string_equal(p.modules[0].path, "/usr/bin/svc");
	assert_int_equal(p.modules[1].build_id_len, 0);
	assert_string_equal(p.modules[1].path, "linux-vdso.so.1");
	assert_ptr_equal(mstat_reader_profile_module_of(&p, a[1]), &p.modules[0]);
	assert_null(mstat_reader_profile_module_of(&p, EXE + 0x1000));
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

/* A free is never counted without its allocation (K): a stack that says
 * otherwise was not written by a writer, and is left out, not handed on
 * for a caller to subtract into 2^64 live bytes. */
static void
stack_freeing_more_than_it_allocated_is_skipped(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t a[] = { EXE + 0x100 }, b[] = { EXE + 0x200 }, c[] = { EXE + 0x300 };
	uint64_t d[] = { EXE + 0x400 }, e[] = { EXE + 0x500 };

	(void)state;
	add_stack(&s, a, 1, 1, 100, 2, 100);   /* more frees */
	add_stack(&s, b, 1, 2, 100, 1, 101);   /* more bytes freed */
	objects(weigh(&s, add_stack(&s, c, 1, 2, 100, 2, 100), 7, 7), 9, 9); /* kept */
	weigh(&s, add_stack(&s, d, 1, 2, 100, 1, 50), 900, 901); /* more weight */
	objects(add_stack(&s, e, 1, 2, 100, 1, 50), 9, 10); /* more objects */
	read_profile(&s, &p);
	assert_int_equal(p.nstacks, 1);
	assert_int_equal(p.stacks[0].frames[0], c[0]);
	assert_int_equal(p.stacks[0].frees, 2);
	assert_int_equal(p.stacks[0].free_bytes, 100);
	assert_int_equal(p.stacks[0].free_weight, 7);
	assert_int_equal(p.stacks[0].free_objects, 9);
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

/* Each stack's freed weights by lifetime, summing to its free_weight,
 * merged with its duplicate's; its live samples' births (words naming
 * it), merged too: how many, their sum and the least.  A word naming an
 * entry that is left out, past those taken, or none, ages nothing; the
 * counter's rate is measured from the head's tick0 and ns0. */
static void
lifetimes_and_births_are_read(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t a[] = { EXE + 0x100 }, b[] = { EXE + 0x200 }, c[] = { EXE + 0x300 };

	(void)state;
	s.prof->tick0 = 1000;
	s.prof->ns0 = 7;
	struct mstat_shm_stack *x = weigh(&s, add_stack(&s, a, 1, 6, 600, 3, 300),
					  600, 0);
	atomic_store(&s.lifetimes[0].freed[0], 100);
	atomic_store(&s.lifetimes[0].freed[MSTAT_LIFETIMES - 1], 200);
	struct mstat_shm_stack *y = weigh(&s, add_stack(&s, b, 1, 2, 100, 1, 50),
					  900, 901); /* more weight: out */
	struct mstat_shm_stack *z = weigh(&s, add_stack(&s, a, 1, 2, 200, 1, 100),
					  200, 0);
	atomic_store(&s.lifetimes[2].freed[5], 100);
	add_stack(&s, c, 1, 1, 10, 0, 0);
	birth(&s, 0, x, 40);
	birth(&s, 9, x, 10);
	birth(&s, 17, z, 30);
	birth(&s, 3, y, 1);               /* its stack is left out */
	birth(&s, 4, &s.stacks[6], 1);    /* past the entries taken */
	atomic_store(&s.births[5], (uint64_t)0xffff << MSTAT_BIRTH_BITS);
	atomic_store(&s.births[MSTAT_LIVE_SAMPLES - 1],
		     (uint64_t)4 << MSTAT_BIRTH_BITS | 5); /* entry 3: c */
	read_profile(&s, &p);

	assert_int_equal(p.nstacks, 2);
	assert_int_equal(p.tick0, 1000);
	assert_int_equal(p.ns0, 7);
	assert_true(p.now_tick > 0 && p.now_ns > 0);
	const struct mstat_profile_stack *m = stack_at(&p, a[0]);
	assert_int_equal(m->free_weight, 400);
	assert_int_equal(m->lifetimes[0], 100);
	assert_int_equal(m->lifetimes[5], 100);
	assert_int_equal(m->lifetimes[20], 0);
	assert_int_equal(m->lifetimes[MSTAT_LIFETIMES - 1], 200);
	assert_int_equal(m->born_n, 3);
	assert_int_equal(m->born_sum, 80);
	assert_int_equal(m->born_min, 10);
	m = stack_at(&p, c[0]);
	assert_int_equal(m->born_n, 1);
	assert_int_equal(m->born_sum, 5);
	assert_int_equal(m->born_min, 5);
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

/* One stack in two entries whose counts overflow 64 bits when merged:
 * the sums stop at 2^64 - 1, and frees stay at most allocations. */
static void
merged_counts_saturate(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t a[] = { EXE + 0x100, EXE + 0x200 };

	(void)state;
	objects(weigh(&s, add_stack(&s, a, 2, UINT64_MAX, UINT64_MAX, UINT64_MAX,
				    UINT64_MAX), UINT64_MAX, UINT64_MAX),
		UINT64_MAX, UINT64_MAX);
	objects(weigh(&s, add_stack(&s, a, 2, 1, 1, 0, 0), 1, 0), 1, 0);
	read_profile(&s, &p);
	assert_int_equal(p.nstacks, 1);
	assert_int_equal(p.stacks[0].allocs, UINT64_MAX);
	assert_int_equal(p.stacks[0].alloc_bytes, UINT64_MAX);
	assert_int_equal(p.stacks[0].frees, UINT64_MAX);
	assert_int_equal(p.stacks[0].free_bytes, UINT64_MAX);
	assert_int_equal(p.stacks[0].alloc_weight, UINT64_MAX);
	assert_int_equal(p.stacks[0].free_weight, UINT64_MAX);
	assert_int_equal(p.stacks[0].alloc_objects, UINT64_MAX);
	assert_int_equal(p.stacks[0].free_objects, UINT64_MAX);
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

/* A segment of format 6.0 has no objects: the words that are theirs in
 * 6.1 were reserved, and are not read, whatever they hold. */
static void
format_6_0_has_no_objects(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t a[] = { EXE + 0x100 };

	(void)state;
	s.h->version_minor = 0;
	objects(weigh(&s, add_stack(&s, a, 1, 2, 200, 1, 100), 5, 1), 5, 1000);
	read_profile(&s, &p);
	assert_true(p.weighted);
	assert_false(p.has_objects);
	assert_int_equal(p.nstacks, 1);
	assert_int_equal(p.stacks[0].alloc_weight, 5);
	assert_int_equal(p.stacks[0].alloc_objects, 0);
	assert_int_equal(p.stacks[0].free_objects, 0);
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

/* Depths, frame offsets, counts and lengths out of bounds: the entries
 * are skipped or bounded, the rest read. */
static void
entries_out_of_bounds_are_skipped(void **state)
{
	struct seg s = seg_new();
	struct mstat_profile p;
	uint64_t deep[MSTAT_STACK_DEPTH + 1];

	(void)state;
	for (uint32_t k = 0; k <= MSTAT_STACK_DEPTH; k++)
		deep[k] = EXE + 0x1000 + k;
	add_stack(&s, deep, MSTAT_STACK_DEPTH + 1, 1, 1, 0, 0); /* too deep */
	add_stack(&s, deep, MSTAT_STACK_DEPTH, 1, 1, 0, 0);     /* kept */
	struct mstat_shm_stack *e = add_stack(&s, deep + 1, 2, 1, 1, 0, 0);
	e->frames_offset = FRAMES - 1; /* its last frame past the pool */
	e = add_stack(&s, deep + 2, 2, 1, 1, 0, 0);
	e->frames_offset = UINT32_MAX;
	e = add_stack(&s, deep + 3, 1, 1, 1, 0, 0);
	e->frames_offset = FRAMES - 1; /* the pool's last frame: kept */
	atomic_store(&s.frames[FRAMES - 1], EXE + 0x9999);
	add_stack(&s, deep + 4, 0, 1, 1, 0, 0); /* no frame: being made */
	atomic_store(&s.prof->stacks_used, UINT32_MAX);

	add_module(&s, EXE, EXE + 0x1000, "a", MSTAT_BUILD_ID_MAX + 1);
	struct mstat_shm_module *m = add_module(&s, EXE + 0x1000, EXE + 0x2000, "", 7);
	memset(m->path, 'x', sizeof(m->path)); /* unterminated */
	add_module(&s, EXE + 0x3000, EXE + 0x3000, "empty", 0);
	add_module(&s, EXE + 0x4000, EXE + 0x3000, "reversed", 0);
	atomic_store(&s.prof->modules_used, UINT32_MAX);
	read_profile(&s, &p);

	assert_int_equal(p.nstacks, 2);
	assert_int_equal(stack_at(&p, deep[0])->depth, MSTAT_STACK_DEPTH);
	assert_int_equal(stack_at(&p, EXE + 0x9999)->depth, 1);
	assert_int_equal(p.nmodules, 2);
	assert_int_equal(p.modules[0].build_id_len, 0);
	assert_string_equal(p.modules[0].path, "a");
	assert_int_equal(p.modules[1].build_id_len, 7);
	assert_int_equal(strlen(p.modules[1].path), MSTAT_MODULE_PATH - 1);
	mstat_reader_profile_release(&p);
	seg_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(writers_profile_is_read_exactly),
		cmocka_unit_test(stack_freeing_more_than_it_allocated_is_skipped),
		cmocka_unit_test(lifetimes_and_births_are_read),
		cmocka_unit_test(merged_counts_saturate),
		cmocka_unit_test(format_6_0_has_no_objects),
		cmocka_unit_test(entries_out_of_bounds_are_skipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
