/* SPDX-License-Identifier: MIT */
/*
 * fuzz_reader.c - a libFuzzer target over segment validation and the reader.
 *
 * A segment is input from another process (validate.h): anything in it may
 * be wrong, and a reader must refuse it or read it, never crash, read out of
 * bounds, leak or hang.  The input here is the start of a segment file.  It
 * is written into a memfd (mode 0600, of this user, as a target makes it),
 * which is then sized as its header claims, if that claim is one a segment
 * can have, so that a short input still stands for a whole, sparse segment;
 * otherwise the file is the input's length and the reader must refuse it.
 * Bit 0 of the header's `reserved0`, which no reader looks at, keeps the
 * file at the input's length whatever the header says: a file shorter than
 * its header claims must be refused, not read into SIGBUS.
 *
 * The heap profile lies after the slots, further up than an input reaches
 * in most layouts.  So the input's bytes from FUZZ_PROFILE_AT (run.sh) on
 * are the profile region: they land at the header's `profile_offset` when
 * that lies above FUZZ_PROFILE_AT in a file of the size the header claims,
 * and the file between is a hole (zeros), as the unused slots of a target's
 * segment are.  Otherwise every byte of the input is at its own offset.
 *
 * On that file, mstat_reader_open_fd(), and if it attaches, snapshots:
 *   - with no owner lock held: the final read of a dead target;
 *   - with the owner lock held on a second open file description of the
 *     memfd, as a live target holds it: catch-up, rotation and handshake,
 *     by mstat_reader_snapshot() and mstat_reader_snapshot_many().  The
 *     wait budget is 0, so an odd seq makes a read give up, not wait.
 * Then mstat_reader_profile(), twice (before and after the live reads),
 * on whatever the profile region holds, and mstat_reader_profile_module_of() on
 * every frame it returns.
 * And mstat_validate_header() and mstat_validate_classes() directly on a
 * copy of the input's header and class table, in buffers of exactly their
 * size, so that AddressSanitizer sees any read beyond them.
 *
 * The reader reads the segment through mmap(), which AddressSanitizer does
 * not watch, and a read past the end of one mapping would land unseen in
 * the next.  So shm/ is compiled with mmap and munmap renamed to
 * fuzz_mmap() and fuzz_munmap() below (run.sh), which put every mapping
 * between two ranges of inaccessible pages: a read out of it faults.
 *
 * Beyond crashes, it aborts on answers the design rules out: a reader that
 * attaches to what validation refuses; a refusal without a reason; a
 * descriptor the reader did not close; two final reads of an unchanged
 * segment that differ; a live read that does not sum what the final read
 * sums (nobody writes the segment here, so the three generations are the
 * same counters however a read splits them); a state, cut, slot count
 * or order of class bounds that the snapshot's documentation rules out;
 * a profile that breaks what reader.h promises of it (a stack of no frame
 * or too many, more frees, freed bytes or freed weight than allocated, a
 * stack listed twice, a module
 * with an unterminated path or a build id longer than its array, more
 * entries than the region's capacity), or that is not the profile the
 * region holds, as model_profile() reads it from the file's bytes.
 *
 * Built and run by tests/fuzz/run.sh; `build-fuzz/fuzz_reader FILE...` runs
 * inputs again (a crash it saved, say).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"
#include <mstatshm.h>
#include "shm/owner.h"
#include "shm/reader.h"
#include "shm/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest segment a valid header can describe with its parts packed:
 * the most classes a snapshot holds, the most slots, the largest profile a
 * reader accepts (125 MiB; a writer makes at most 96 MiB and 468 KiB, with
 * 146 classes).  The memfd is sparse: only the pages the reader touches
 * cost memory. */
#define FUZZ_SEGMENT_MAX                                                     \
	(MSTAT_PROFILE_OFFSET(MSTAT_MAX_CLASSES, MSTAT_SLOTS_MAX) +          \
	 MSTAT_PROFILE_SIZE(MSTAT_STACKS_LIMIT, MSTAT_FRAMES_LIMIT,          \
			    MSTAT_MODULES_LIMIT))
#ifndef FUZZ_PROFILE_AT
#error "FUZZ_PROFILE_AT: where an input's profile region starts (run.sh)"
#endif
/* How much of a class table is copied for mstat_validate_classes(): more
 * than any valid table, and bounded, whatever class_count says. */
#define FUZZ_CLASSES_MAX 1024u

/* Inaccessible address space on each side of every mapping of the
 * reader: more than any read past a slot, a class table or a header can
 * reach (address space only, no memory). */
#define FUZZ_GUARD (UINT64_C(1) << 24)

void *fuzz_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int fuzz_munmap(void *addr, size_t len);

static size_t
page_round(size_t len)
{
	return (len + MSTAT_PAGE - 1) / MSTAT_PAGE * MSTAT_PAGE;
}

void *
fuzz_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	size_t span = page_round(len) + 2 * FUZZ_GUARD;
	char *g;
	void *p;
	int e;

	/* The reader lets the kernel place every mapping, and maps nothing
	 * empty or larger than an address space. */
	if (addr || len == 0 || len > SIZE_MAX / 4) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	g = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (g == MAP_FAILED)
		return MAP_FAILED;
	p = mmap(g + FUZZ_GUARD, len, prot, flags | MAP_FIXED, fd, off);
	if (p == MAP_FAILED) {
		e = errno;
		munmap(g, span);
		errno = e;
	}
	return p;
}

/* Only ever called on what fuzz_mmap() made: the guards go with it. */
int
fuzz_munmap(void *addr, size_t len)
{
	return munmap((char *)addr - FUZZ_GUARD, page_round(len) + 2 * FUZZ_GUARD);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz_reader: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

/* A refusal says why in one line. */
static void
check_reason(int rc, const char *err, const char *what)
{
	if (rc >= 0)
		return;
	if (err[0] == '\0')
		die("%s: refused (%d) without a reason", what, rc);
	if (strchr(err, '\n'))
		die("%s: reason of more than one line: %s", what, err);
}

/* The segment file an input stands for: its bytes up to FUZZ_PROFILE_AT at
 * their own offsets, the rest at `tail_at`, in a file of `file_size`. */
struct image {
	const uint8_t *data;
	size_t size;
	uint64_t tail_at;   /* FUZZ_PROFILE_AT, or the profile's offset */
	uint64_t file_size;
};

static size_t
image_head(const struct image *im)
{
	return im->size < FUZZ_PROFILE_AT ? im->size : FUZZ_PROFILE_AT;
}

/* The part of the input's `n` bytes at `src`, put at file offset `at`,
 * that falls in [off, off + len) of the file. */
static void
copy_piece(uint8_t *dst, uint64_t off, size_t len, const uint8_t *src,
	   size_t n, uint64_t at, uint64_t file_size)
{
	uint64_t lo = off > at ? off : at;
	uint64_t hi = off + len;

	if (hi > at + n)
		hi = at + n;
	if (hi > file_size)
		hi = file_size;
	if (lo < hi)
		memcpy(dst + (lo - off), src + (lo - at), (size_t)(hi - lo));
}

/* The file's bytes [off, off + len): zeros in holes and past its end. */
static void
image_read(const struct image *im, uint64_t off, void *dst, size_t len)
{
	size_t head = image_head(im);

	memset(dst, 0, len);
	copy_piece(dst, off, len, im->data, head, 0, im->file_size);
	copy_piece(dst, off, len, im->data + head, im->size - head, im->tail_at,
		   im->file_size);
}

static bool
header_rc_documented(int rc)
{
	return rc == 0 || rc == -EAGAIN || rc == -EPROTONOSUPPORT ||
	       rc == -EPROTO || rc == -EPERM;
}

/*
 * Validation alone, on private copies of exactly the size it is given.
 * Returns whether the header and class table pass as the reader would
 * check them for the file `im` stands for.
 */
static bool
validate_copies(const struct image *im, const struct mstat_shm_header *h)
{
	char err[200], tiny[1];
	uid_t uid = geteuid();
	uint64_t file_size = im->file_size;
	struct mstat_shm_header *copy;
	uint64_t *table;
	uint32_t n;
	int rc, rc2;

	copy = malloc(sizeof(*copy));
	if (!copy)
		die("out of memory");
	memcpy(copy, h, sizeof(*copy));
	err[0] = '\0';
	rc = mstat_validate_header(copy, file_size, uid, err, sizeof(err));
	if (!header_rc_documented(rc))
		die("mstat_validate_header: undocumented result %d (%s)", rc, err);
	check_reason(rc, err, "mstat_validate_header");
	/* The same with a one-byte buffer, and with none: a reason that
	 * does not fit is cut, never written past the buffer. */
	tiny[0] = 'x';
	if (mstat_validate_header(copy, file_size, uid, tiny, sizeof(tiny)) != rc ||
	    (rc < 0 && tiny[0] != '\0'))
		die("mstat_validate_header: another answer with a short buffer");
	if (mstat_validate_header(copy, file_size, uid, NULL, 0) != rc)
		die("mstat_validate_header: another answer without a buffer");
	/* With the size the header claims: the checks after the size's. */
	err[0] = '\0';
	rc2 = mstat_validate_header(copy, copy->segment_size, uid, err, sizeof(err));
	if (!header_rc_documented(rc2))
		die("mstat_validate_header: undocumented result %d (%s)", rc2, err);
	check_reason(rc2, err, "mstat_validate_header");
	free(copy);

	/* The class table where the header puts it, as the file holds it, in
	 * a buffer of exactly class_count entries. */
	n = h->class_count < FUZZ_CLASSES_MAX ? h->class_count : FUZZ_CLASSES_MAX;
	table = calloc(n ? n : 1, sizeof(uint64_t));
	if (!table)
		die("out of memory");
	image_read(im, h->classes_offset, table, (size_t)n * sizeof(uint64_t));
	err[0] = '\0';
	rc2 = mstat_validate_classes(table, n, err, sizeof(err));
	if (rc2 != 0 && rc2 != -EPROTO)
		die("mstat_validate_classes: undocumented result %d", rc2);
	check_reason(rc2, err, "mstat_validate_classes");
	free(table);
	return rc == 0 && rc2 == 0;
}

static void
write_at(int fd, const uint8_t *data, size_t size, uint64_t at)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = pwrite(fd, data + done, size - done,
				   (off_t)(at + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pwrite: %s", n < 0 ? strerror(errno) : "no progress");
		done += (size_t)n;
	}
}

/* A memfd holding the file `im` stands for (what lands past its end is
 * cut off again). */
static int
make_segment(const struct image *im)
{
	int fd = memfd_create("mstat-fuzz", MFD_CLOEXEC);
	size_t head = image_head(im);

	if (fd < 0)
		die("memfd_create: %s", strerror(errno));
	if (fchmod(fd, 0600) < 0)
		die("fchmod: %s", strerror(errno));
	write_at(fd, im->data, head, 0);
	write_at(fd, im->data + head, im->size - head, im->tail_at);
	if (ftruncate(fd, (off_t)im->file_size) < 0)
		die("ftruncate %llu: %s", (unsigned long long)im->file_size,
		    strerror(errno));
	return fd;
}

/* Another open file description of the same memfd: a lock taken on it is
 * another owner's, as a live target's lock is to a reader. */
static int
reopen(int fd)
{
	char path[64];
	int o;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o = open(path, O_RDWR | O_CLOEXEC);
	if (o < 0)
		die("open %s: %s", path, strerror(errno));
	return o;
}

static void
owner_lock(int fd, short type)
{
	struct flock l = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = MSTAT_OWNER_LOCK_BYTE,
		.l_len = 1,
	};

	if (fcntl(fd, F_OFD_SETLK, &l) < 0)
		die("owner lock: %s", strerror(errno));
}

/* What a snapshot documents about itself, whatever the segment held. */
static void
check_snapshot(const struct mstat_snapshot *s, const struct mstat_shm_header *h,
	       bool dead)
{
	if (s->class_count != h->class_count)
		die("snapshot has %u classes, the header %u", s->class_count,
		    h->class_count);
	if (s->slots_used > h->slot_count)
		die("snapshot has %u slots used of %u", s->slots_used,
		    h->slot_count);
	if (s->cut > s->slots_used)
		die("snapshot has %u updates cut in %u slots", s->cut,
		    s->slots_used);
	for (uint32_t c = 1; c < s->class_count; c++)
		if (s->class_max_size[c] <= s->class_max_size[c - 1])
			die("snapshot has classes out of order at %u", c);
	if (dead) {
		if (s->state != MSTAT_EXITED && s->state != MSTAT_KILLED &&
		    s->state != MSTAT_EXECED)
			die("final read has state %u", s->state);
		if (s->threads != 0)
			die("final read has %u threads", s->threads);
	} else {
		if (s->state != MSTAT_RUNNING && s->state != MSTAT_EXITING &&
		    s->state != MSTAT_EXECED)
			die("live read has state %u", s->state);
		if (s->cut != 0)
			die("live read has %u updates cut", s->cut);
	}
}

/* The counters of two snapshots, class bounds included. */
static bool
same_counts(const struct mstat_snapshot *a, const struct mstat_snapshot *b)
{
	if (a->class_count != b->class_count || a->slots_used != b->slots_used ||
	    memcmp(&a->total, &b->total, sizeof(a->total)) ||
	    memcmp(a->class_max_size, b->class_max_size, sizeof(a->class_max_size)) ||
	    memcmp(a->classes, b->classes, sizeof(a->classes)))
		return false;
#define MSTAT_X(e, f, hh) if (a->f != b->f) return false;
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	return true;
}

/* Snapshots are large; one input at a time uses them. */
static struct mstat_snapshot final_a, final_b, live;

/* A live read's result: 0, or a refusal the API documents, or the
 * membarrier's own failure where the system denies it.  `final_rc` is
 * the final read's: what it refuses, a live read refuses too. */
static void
check_live_rc(int rc, struct mstat_reader *r, const struct mstat_shm_header *h,
	      int barrier_rc, int final_rc)
{
	if (rc == 0) {
		if (final_rc != 0)
			die("a live read took what the final read refused");
		check_snapshot(&live, h, false);
		if (!same_counts(&live, &final_a))
			die("a live read sums other counters than the final read");
		return;
	}
	check_reason(rc, mstat_reader_error(r), "live read");
	if (rc == -EAGAIN || rc == -EPROTO)
		return;
	if (h->writer_mode == MSTAT_MODE_MEMBARRIER && rc == barrier_rc)
		return;
	die("live read: undocumented result %d (%s)", rc, mstat_reader_error(r));
}

/* Stacks by their frames. */
static int
stack_cmp(const struct mstat_profile_stack *x, const struct mstat_profile_stack *y)
{
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->frames, y->frames, x->depth * sizeof(x->frames[0]));
}

static int
stack_order(const void *a, const void *b)
{
	return stack_cmp(a, b);
}

static int
stack_ptr_order(const void *a, const void *b)
{
	return stack_cmp(*(const struct mstat_profile_stack *const *)a,
			 *(const struct mstat_profile_stack *const *)b);
}

static bool
same_stack(const struct mstat_profile_stack *x, const struct mstat_profile_stack *y)
{
	return x->allocs == y->allocs && x->alloc_bytes == y->alloc_bytes &&
	       x->frees == y->frees && x->free_bytes == y->free_bytes &&
	       x->alloc_objects == y->alloc_objects &&
	       x->free_objects == y->free_objects &&
	       x->alloc_weight == y->alloc_weight &&
	       x->free_weight == y->free_weight &&
	       memcmp(x->lifetimes, y->lifetimes, sizeof(x->lifetimes)) == 0 &&
	       x->born_n == y->born_n && x->born_sum == y->born_sum &&
	       x->born_min == y->born_min && stack_cmp(x, y) == 0;
}

static bool
same_module(const struct mstat_profile_module *x, const struct mstat_profile_module *y)
{
	return x->start == y->start && x->end == y->end && x->bias == y->bias &&
	       x->build_id_len == y->build_id_len &&
	       memcmp(x->build_id, y->build_id, sizeof(x->build_id)) == 0 &&
	       strcmp(x->path, y->path) == 0;
}

/* The stacks of `p`, in the order of their frames (p's own order is the
 * reader's business). */
static const struct mstat_profile_stack **
sorted_stacks(const struct mstat_profile *p)
{
	const struct mstat_profile_stack **v = malloc((p->nstacks ? p->nstacks : 1) *
						      sizeof(*v));

	if (!v)
		die("out of memory");
	for (uint32_t i = 0; i < p->nstacks; i++)
		v[i] = &p->stacks[i];
	qsort(v, p->nstacks, sizeof(*v), stack_ptr_order);
	return v;
}

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * The profile the region holds, by reader.h's rules, read from the file's
 * bytes (image_read()), not through the reader's mapping: a read in the
 * wrong place of that mapping, which no guard page catches, shows as a
 * difference.  A module is kept if its range is not empty, with a build id
 * longer than its array taken as none and its path cut to its array; a
 * stack, if it has 1..MSTAT_STACK_DEPTH frames inside the pool, an
 * allocation counted, and no more frees, freed bytes, freed objects or
 * freed weight than allocated; its objects read only from a segment of
 * minor version 1 on (0 before); its freed weight the sum of its
 * lifetime buckets, up to 2^64
 * - 1; its live samples the birth words naming it, whose time parts are
 * summed, counted and the least kept; the stacks with the same frames are
 * one, their counts summed up to 2^64 - 1.  Only entries below the counts
 * used and the capacities.
 */
static void
model_profile(const struct image *im, const struct mstat_shm_header *h,
	      struct mstat_profile *x)
{
	uint64_t at = h->profile_offset;
	struct mstat_shm_profile head;
	uint32_t nm, ns, n = 0, *kept;

	image_read(im, at, &head, sizeof(head));
	memset(x, 0, sizeof(*x));
	x->sample_bytes = atomic_load_explicit(&h->sample_bytes, memory_order_relaxed);
	x->weighted = true;
	x->has_objects = h->version_minor >= 1;
	x->samples = atomic_load_explicit(&head.samples, memory_order_relaxed);
	x->dropped = atomic_load_explicit(&head.dropped, memory_order_relaxed);
	nm = atomic_load_explicit(&head.modules_used, memory_order_relaxed);
	ns = atomic_load_explicit(&head.stacks_used, memory_order_relaxed);
	nm = nm < h->module_capacity ? nm : h->module_capacity;
	ns = ns < h->stack_capacity ? ns : h->stack_capacity;
	x->modules = calloc(nm ? nm : 1, sizeof(*x->modules));
	x->stacks = calloc(ns ? ns : 1, sizeof(*x->stacks));
	kept = calloc(ns ? ns : 1, sizeof(*kept));
	if (!x->modules || !x->stacks || !kept)
		die("out of memory");

	for (uint32_t i = 0; i < nm; i++) {
		struct mstat_shm_module m;
		struct mstat_profile_module *o = &x->modules[x->nmodules];

		image_read(im, at + MSTAT_PROFILE_MODULES_OFFSET(h->stack_capacity,
								 h->frame_capacity) +
				       (uint64_t)i * sizeof(m),
			   &m, sizeof(m));
		if (m.start >= m.end)
			continue;
		o->start = m.start;
		o->end = m.end;
		o->bias = m.bias;
		o->build_id_len = m.build_id_len <= MSTAT_BUILD_ID_MAX ? m.build_id_len : 0;
		memcpy(o->build_id, m.build_id, sizeof(o->build_id));
		memcpy(o->path, m.path, sizeof(o->path) - 1);
		x->nmodules++;
	}

	for (uint32_t i = 0; i < ns; i++) {
		struct mstat_shm_stack e;
		struct mstat_profile_stack *o = &x->stacks[x->nstacks];

		image_read(im, at + MSTAT_PROFILE_STACKS_OFFSET + (uint64_t)i * sizeof(e),
			   &e, sizeof(e));
		uint32_t d = atomic_load_explicit(&e.depth, memory_order_relaxed);
		uint64_t off = e.frames_offset;
		o->allocs = atomic_load_explicit(&e.allocs, memory_order_relaxed);
		o->alloc_bytes = atomic_load_explicit(&e.alloc_bytes, memory_order_relaxed);
		o->frees = atomic_load_explicit(&e.frees, memory_order_relaxed);
		o->free_bytes = atomic_load_explicit(&e.free_bytes, memory_order_relaxed);
		o->alloc_objects = x->has_objects
					   ? atomic_load_explicit(&e.alloc_objects,
								  memory_order_relaxed)
					   : 0;
		o->free_objects = x->has_objects
					  ? atomic_load_explicit(&e.free_objects,
								 memory_order_relaxed)
					  : 0;
		o->alloc_weight = atomic_load_explicit(&e.alloc_weight,
						       memory_order_relaxed);
		struct mstat_shm_lifetimes lt;
		image_read(im, at + MSTAT_PROFILE_LIFETIMES_OFFSET(
					   h->stack_capacity, h->frame_capacity,
					   h->module_capacity) +
				       (uint64_t)i * sizeof(lt),
			   &lt, sizeof(lt));
		o->free_weight = 0;
		for (uint32_t b = 0; b < MSTAT_LIFETIMES; b++) {
			o->lifetimes[b] = atomic_load_explicit(&lt.freed[b],
							       memory_order_relaxed);
			o->free_weight = add_sat(o->free_weight, o->lifetimes[b]);
		}
		o->born_n = o->born_sum = o->born_min = 0;
		if (d == 0 || d > MSTAT_STACK_DEPTH || off + d > h->frame_capacity ||
		    o->allocs == 0 || o->frees > o->allocs ||
		    o->free_bytes > o->alloc_bytes ||
		    o->free_objects > o->alloc_objects ||
		    o->free_weight > o->alloc_weight)
			continue;
		o->depth = d;
		image_read(im, at + MSTAT_PROFILE_FRAMES_OFFSET(h->stack_capacity) +
				       off * sizeof(uint64_t),
			   o->frames, d * sizeof(uint64_t));
		kept[i] = ++x->nstacks;
	}
	uint64_t *births = malloc(MSTAT_LIVE_SAMPLES * sizeof(*births));
	if (!births)
		die("out of memory");
	image_read(im, at + MSTAT_PROFILE_BIRTHS_OFFSET(h->stack_capacity,
							h->frame_capacity,
							h->module_capacity),
		   births, MSTAT_LIVE_SAMPLES * sizeof(*births));
	for (uint32_t i = 0; i < MSTAT_LIVE_SAMPLES; i++) {
		uint64_t w = births[i];
		uint64_t e = (w >> MSTAT_BIRTH_BITS) - 1;
		if (w == 0 || e >= ns || !kept[e])
			continue;
		struct mstat_profile_stack *o = &x->stacks[kept[e] - 1];
		uint64_t t = w & ((UINT64_C(1) << MSTAT_BIRTH_BITS) - 1);
		if (o->born_n == 0 || t < o->born_min)
			o->born_min = t;
		o->born_sum += t;
		o->born_n++;
	}
	free(births);
	free(kept);
	qsort(x->stacks, x->nstacks, sizeof(*x->stacks), stack_order);
	for (uint32_t i = 0; i < x->nstacks; i++) {
		struct mstat_profile_stack *s = &x->stacks[i];
		struct mstat_profile_stack *t = n ? &x->stacks[n - 1] : NULL;

		if (t && stack_cmp(t, s) == 0) {
			t->allocs = add_sat(t->allocs, s->allocs);
			t->alloc_bytes = add_sat(t->alloc_bytes, s->alloc_bytes);
			t->frees = add_sat(t->frees, s->frees);
			t->free_bytes = add_sat(t->free_bytes, s->free_bytes);
			t->alloc_objects = add_sat(t->alloc_objects, s->alloc_objects);
			t->free_objects = add_sat(t->free_objects, s->free_objects);
			t->alloc_weight = add_sat(t->alloc_weight, s->alloc_weight);
			t->free_weight = add_sat(t->free_weight, s->free_weight);
			for (uint32_t b = 0; b < MSTAT_LIFETIMES; b++)
				t->lifetimes[b] = add_sat(t->lifetimes[b],
							  s->lifetimes[b]);
			if (s->born_n && (!t->born_n || s->born_min < t->born_min))
				t->born_min = s->born_min;
			t->born_sum += s->born_sum;
			t->born_n += s->born_n;
		} else {
			x->stacks[n++] = *s;
		}
	}
	x->nstacks = n;
}

/* What reader.h promises of a profile, whatever the region held, and the
 * profile the region holds (model_profile()). */
static void
check_profile(const struct mstat_profile *p, const struct mstat_shm_header *h,
	      const struct image *im)
{
	const struct mstat_profile_stack **got, **want;
	struct mstat_profile x;

	if (p->nstacks > h->stack_capacity || p->nmodules > h->module_capacity)
		die("profile: %u stacks, %u modules, beyond %u and %u", p->nstacks,
		    p->nmodules, h->stack_capacity, h->module_capacity);
	if ((p->nstacks && !p->stacks) || (p->nmodules && !p->modules))
		die("profile: entries counted and not returned");
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct mstat_profile_module *m = &p->modules[i];

		if (!memchr(m->path, '\0', sizeof(m->path)))
			die("profile: module %u has an unterminated path", i);
		if (m->build_id_len > MSTAT_BUILD_ID_MAX)
			die("profile: module %u has a build id of %u bytes", i,
			    m->build_id_len);
	}
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct mstat_profile_stack *st = &p->stacks[i];

		if (st->depth == 0 || st->depth > MSTAT_STACK_DEPTH)
			die("profile: stack %u has %u frames", i, st->depth);
		if (st->frees > st->allocs || st->free_bytes > st->alloc_bytes ||
		    st->free_objects > st->alloc_objects ||
		    st->free_weight > st->alloc_weight)
			die("profile: stack %u has freed %llu of %llu, %llu of "
			    "%llu bytes, %llu of %llu objects, %llu of %llu "
			    "weight", i, (unsigned long long)st->frees,
			    (unsigned long long)st->allocs,
			    (unsigned long long)st->free_bytes,
			    (unsigned long long)st->alloc_bytes,
			    (unsigned long long)st->free_objects,
			    (unsigned long long)st->alloc_objects,
			    (unsigned long long)st->free_weight,
			    (unsigned long long)st->alloc_weight);
		if (!p->weighted && (st->alloc_weight || st->free_weight))
			die("profile: stack %u weighed in a segment of no weights", i);
		if (!p->has_objects && (st->alloc_objects || st->free_objects))
			die("profile: stack %u has objects in a segment of none", i);
		for (uint32_t k = 0; k < st->depth; k++) {
			const struct mstat_profile_module *m =
				mstat_reader_profile_module_of(p, st->frames[k]);

			if (m && (m < p->modules || m >= p->modules + p->nmodules ||
				  st->frames[k] < m->start || st->frames[k] >= m->end))
				die("profile: a frame's module does not hold it");
		}
	}
	got = sorted_stacks(p);
	for (uint32_t i = 1; i < p->nstacks; i++)
		if (stack_cmp(got[i - 1], got[i]) == 0)
			die("profile: a stack listed twice");

	model_profile(im, h, &x);
	if (p->sample_bytes != x.sample_bytes || p->samples != x.samples ||
	    p->dropped != x.dropped || p->weighted != x.weighted ||
	    p->has_objects != x.has_objects)
		die("profile: sample counts other than the segment's");
	if (p->nmodules != x.nmodules)
		die("profile: %u modules, the region %u", p->nmodules, x.nmodules);
	for (uint32_t i = 0; i < p->nmodules; i++)
		if (!same_module(&p->modules[i], &x.modules[i]))
			die("profile: module %u is not the region's", i);
	if (p->nstacks != x.nstacks)
		die("profile: %u stacks, the region %u", p->nstacks, x.nstacks);
	want = sorted_stacks(&x);
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (!same_stack(got[i], want[i]))
			die("profile: a stack that is not the region's");
	free(want);
	free(got);
	mstat_reader_profile_release(&x);
}

/* mstat_reader_profile(): 0 and a profile the checks above pass, or a
 * refusal it documents; nothing cuts the file here, so not -EFAULT. */
static void
read_profile(struct mstat_reader *r, const struct mstat_shm_header *h,
	     const struct image *im, struct mstat_profile *p)
{
	int rc = mstat_reader_profile(r, p);

	if (rc == 0) {
		check_profile(p, h, im);
		return;
	}
	check_reason(rc, mstat_reader_error(r), "profile read");
	if (rc != -ENOMEM)
		die("profile read: undocumented result %d (%s)", rc,
		    mstat_reader_error(r));
	if (p->stacks || p->modules || p->nstacks || p->nmodules)
		die("profile read: refused, yet a profile");
}

/* Puts the two words readers write back as the input had them. */
static void
restore_epochs(int fd, const struct mstat_shm_header *h)
{
	uint64_t w[2] = {
		atomic_load_explicit(&h->epoch, memory_order_relaxed),
		atomic_load_explicit(&h->synced_epoch, memory_order_relaxed),
	};

	_Static_assert(offsetof(struct mstat_shm_header, synced_epoch) ==
			       offsetof(struct mstat_shm_header, epoch) + 8,
		       "the words readers write are adjacent");
	if (pwrite(fd, w, sizeof(w), offsetof(struct mstat_shm_header, epoch)) !=
	    (ssize_t)sizeof(w))
		die("pwrite: %s", strerror(errno));
}

static void
read_segment(struct mstat_reader *r, int lockfd, const struct mstat_shm_header *h,
	     const struct image *im)
{
	static int barrier_rc = 1;
	struct mstat_profile prof_a, prof_b;
	int rc, rc_b;

	if (barrier_rc == 1)
		barrier_rc = mstat_reader_barrier();
	mstat_reader_set_wait_budget(r, 0);

	/* The owner gone: two final reads of a segment nobody changes. */
	if (mstat_reader_alive(r) != 0)
		die("owner alive with no lock held");
	/* A read writes the classes the segment has, no more: what an
	 * earlier input left past them is cleared for the comparisons. */
	memset(&final_a, 0, sizeof(final_a));
	memset(&final_b, 0, sizeof(final_b));
	memset(&live, 0, sizeof(live));
	rc = mstat_reader_snapshot(r, &final_a);
	if (rc != 0 && rc != -EPROTO)
		die("final read: undocumented result %d (%s)", rc,
		    mstat_reader_error(r));
	check_reason(rc, mstat_reader_error(r), "final read");
	rc_b = mstat_reader_snapshot(r, &final_b);
	if (rc_b != rc || (rc == 0 && memcmp(&final_a, &final_b, sizeof(final_a))))
		die("two final reads of an unchanged segment differ");
	if (rc == 0)
		check_snapshot(&final_a, h, true);
	(void)mstat_reader_exit_ns(r);
	/* The profile, whether or not the counters were taken: it is read
	 * apart from them (no lock, no rotation). */
	read_profile(r, h, im, &prof_a);

	/* The owner alive: rotation and handshake, first as mstat-top reads
	 * (a slot inside an update is polled for, then given up on), then,
	 * from the input's epochs again, twice as one target is read: a read
	 * that gave up leaves the next one to catch up. */
	owner_lock(lockfd, F_RDLCK);
	if (mstat_reader_alive(r) != 1)
		die("owner not alive while its lock is held");
	struct mstat_snapshot *out = &live;
	mstat_reader_snapshot_many(&r, 1, &out, &rc_b, 0);
	check_live_rc(rc_b, r, h, barrier_rc, rc);
	restore_epochs(lockfd, h);
	for (int i = 0; i < 2; i++) {
		rc_b = mstat_reader_snapshot(r, &live);
		check_live_rc(rc_b, r, h, barrier_rc, rc);
	}
	owner_lock(lockfd, F_UNLCK);

	/* Gone again: the same counters as before, whatever the live reads
	 * rotated. */
	rc_b = mstat_reader_snapshot(r, &final_b);
	if (rc_b != rc)
		die("final read after live reads: %d, before: %d", rc_b, rc);
	if (rc == 0) {
		final_b.epoch = final_a.epoch;
		if (memcmp(&final_a, &final_b, sizeof(final_a)))
			die("final read after live reads differs");
	}
	/* Nothing wrote the profile region since: the same profile again. */
	read_profile(r, h, im, &prof_b);
	mstat_reader_profile_release(&prof_a);
	mstat_reader_profile_release(&prof_b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mstat_shm_header h;
	struct mstat_reader *r;
	struct image im;
	char err[256];
	bool valid;
	int fd, lockfd, rc;

	memset(&h, 0, sizeof(h));
	memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
	/* A size no segment has (0 in a header of zeros, or more than the
	 * largest layout) leaves the file as long as the input. */
	im = (struct image){ data, size, FUZZ_PROFILE_AT, size };
	if (h.segment_size >= MSTAT_PAGE && h.segment_size <= FUZZ_SEGMENT_MAX &&
	    !(h.reserved0 & 1)) {
		im.file_size = h.segment_size;
		if (h.profile_offset > FUZZ_PROFILE_AT &&
		    h.profile_offset < im.file_size)
			im.tail_at = h.profile_offset;
	}
	valid = validate_copies(&im, &h);

	fd = make_segment(&im);
	lockfd = reopen(fd);
	err[0] = '\0';
	rc = mstat_reader_open_fd(&r, fd, "fuzz", err, sizeof(err));
	/* Refused or not, the descriptor is the reader's to close. */
	if (rc < 0) {
		check_reason(rc, err, "mstat_reader_open_fd");
		if (r)
			die("refused, yet a reader");
	} else {
		if (!valid)
			die("attached to a segment validation refuses");
		if (mstat_reader_info(r)->slot_count != h.slot_count)
			die("reader info disagrees with the header");
		read_segment(r, lockfd, &h, &im);
		mstat_reader_close(r);
	}
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		die("the reader left its descriptor open");
	close(lockfd);
	return 0;
}
