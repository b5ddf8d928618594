/* SPDX-License-Identifier: MIT */
/*
 * segments.c - thousands of live segments, cheaply; see segments.h.
 */
#include "bench/segments.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"
#include "shm/name.h"
#include "shm/owner.h"
#include "shm/procfs.h"

#define SLOTS 4u

/* The first pages of a segment of this process with start time `start`
 * and a profile region of the given capacities: header, class table,
 * and slot 0 with counts in 8 classes. */
static void
image(unsigned char *buf, size_t len, uint64_t start, const char *name,
      uint32_t stacks, uint32_t frames, uint32_t modules)
{
	struct mstat_shm_header *h = (struct mstat_shm_header *)buf;
	const uint32_t classes = MSTAT_CLASS_COUNT;

	memset(buf, 0, len);
	mstat_header_geometry(h, classes, SLOTS, stacks, frames, modules);
	atomic_init(&h->sample_bytes, MSTAT_SAMPLE_DEFAULT);
	h->writer_mode = MSTAT_MODE_MEMBARRIER;
	h->pid = getpid();
	h->uid = geteuid();
	h->start_time = start;
	(void)mstat_procfs_pid_ns(&h->pid_ns);
	snprintf(h->name, sizeof(h->name), "%s", name);
	atomic_init(&h->state, MSTAT_STATE_RUNNING);
	atomic_init(&h->slots_used, 1);
	uint64_t *max = (uint64_t *)(buf + MSTAT_CLASSES_OFFSET);
	for (uint32_t c = 0; c < classes; c++)
		max[c] = mstat_class_max_size(c);
	struct mstat_shm_slot *s = (struct mstat_shm_slot *)(buf + h->slots_offset);
	for (unsigned c = 1; c <= 8; c++) {
		_Atomic uint64_t *row = s->acc + (size_t)c * MSTAT_ROW_COUNTERS;
		atomic_init(&row[MSTAT_C_ALLOC_COUNT], 100 * c);
		atomic_init(&row[MSTAT_C_ALLOC_BYTES], 1600 * c * c);
		atomic_init(&s->head.touched[0], atomic_load(&s->head.touched[0]) |
						 (UINT64_C(1) << c));
	}
	atomic_init(&h->magic, MSTAT_SHM_MAGIC);
}

int
mbench_segments_make(unsigned n, int *fds, const char *name)
{
	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	char path[128], seg[64];

	if (!buf)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t start = (UINT64_C(1) << 45) + i;
		mstat_shm_name(seg, sizeof(seg), getpid(), start, 0);
		snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, seg);
		image(buf, len, start, name, MSTAT_STACKS, MSTAT_FRAMES,
		      MSTAT_MODULES);
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || mstat_owner_lock(fd) < 0 ||
		    pwrite(fd, buf, len, 0) != (ssize_t)len ||
		    ftruncate(fd, (off_t)MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS)) < 0) {
			fprintf(stderr, "mstat-bench: %s: %s\n", path,
				strerror(errno));
			free(buf);
			return -1;
		}
		fds[i] = fd;
	}
	free(buf);
	return 0;
}

int
mbench_segment_self(const char *name)
{
	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	char path[128], seg[64];
	uint64_t start;
	int fd = -1;

	if (!buf || mstat_procfs_start_time(0, &start) < 0) {
		free(buf);
		return -1;
	}
	mstat_shm_name(seg, sizeof(seg), getpid(), start, 0);
	snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, seg);
	image(buf, len, start, name, MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || mstat_owner_lock(fd) < 0 ||
	    pwrite(fd, buf, len, 0) != (ssize_t)len ||
	    ftruncate(fd, (off_t)MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, SLOTS)) < 0) {
		fprintf(stderr, "mstat-bench: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(buf);
	return fd;
}

void
mbench_segments_remove(unsigned n, int *fds)
{
	char seg[64];

	for (unsigned i = 0; i < n; i++) {
		mstat_shm_name(seg, sizeof(seg), getpid(), (UINT64_C(1) << 45) + i, 0);
		shm_unlink(seg);
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

void
mbench_segments_note(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "note: %s\n", line);
}

/* ---- a segment with a profile ---- */

/* This process's loaded objects, as the library lists them
 * (lib/profile.c): their loaded span, load bias, build id and path; and
 * its code, to draw return addresses from. */
struct objects {
	struct mstat_shm_module mods[MSTAT_MODULES];
	uint32_t n;
	uint64_t code_lo[MSTAT_MODULES], code_hi[MSTAT_MODULES];
};

static int
list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects *o = arg;
	struct mstat_shm_module *m = &o->mods[o->n];
	uint64_t lo = UINT64_MAX, hi = 0, clo = UINT64_MAX, chi = 0;

	(void)size;
	if (o->n == MSTAT_MODULES)
		return 1;
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		if (ph->p_type == PT_LOAD) {
			lo = s < lo ? s : lo;
			hi = e > hi ? e : hi;
			if ((ph->p_flags & PF_X) && e - s > chi - clo) {
				clo = s;
				chi = e;
			}
		}
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *n = (const void *)s, *end = n + ph->p_memsz;
		while (n + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)n;
			const unsigned char *desc = n + sizeof(*nh) +
						    ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(n + sizeof(*nh), "GNU", 4) == 0 &&
			    nh->n_descsz <= MSTAT_BUILD_ID_MAX) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = nh->n_descsz;
			}
			n = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;
	if (!path[0]) /* the program */
		path = realpath("/proc/self/exe", exe) ? exe : "";
	if (path[0] != '/' || clo >= chi || strlen(path) >= sizeof(m->path))
		return 0; /* the vDSO, or nothing to sample */
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->start = lo;
	m->end = hi;
	m->bias = info->dlpi_addr;
	o->code_lo[o->n] = clo;
	o->code_hi[o->n] = chi;
	o->n++;
	return 0;
}

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 31;
	x *= UINT64_C(0x7fb5d329728ea185);
	x ^= x >> 27;
	x *= UINT64_C(0x81dadef4bc2dd44d);
	return x ^ (x >> 33);
}

int
mbench_segment_profiled(unsigned stacks, unsigned depth, unsigned pcs,
			bool random, const char *name)
{
	uint32_t cap = 1;
	while (cap < stacks)
		cap *= 2;
	uint32_t frames = stacks * depth;
	const uint64_t start = (UINT64_C(1) << 46);
	struct objects *o = calloc(1, sizeof(*o));
	uint64_t *pool = calloc(pcs, sizeof(*pool));
	struct mstat_shm_header hdr;
	char path[128], seg[64];

	if (!o || !pool || depth == 0 || depth > MSTAT_STACK_DEPTH ||
	    (1ull << (depth < 32 ? depth : 31)) < stacks ||
	    cap > MSTAT_STACKS_LIMIT || frames > MSTAT_FRAMES_LIMIT) {
		fprintf(stderr, "mstat-bench: no profile of %u stacks of %u frames\n",
			stacks, depth);
		free(o);
		free(pool);
		return -1;
	}
	dl_iterate_phdr(list_object, o);
	/* Return addresses spread over the objects' code, a pool of `pcs`
	 * that the stacks draw from, as a program's call sites are shared
	 * by many of its stacks. */
	uint64_t code = 0;
	for (uint32_t i = 0; i < o->n; i++)
		code += o->code_hi[i] - o->code_lo[i];
	for (unsigned i = 0; i < pcs; i++) {
		uint64_t at = mix(i + 1) % code;
		uint32_t k = 0;
		while (at >= o->code_hi[k] - o->code_lo[k]) {
			at -= o->code_hi[k] - o->code_lo[k];
			k++;
		}
		pool[i] = o->code_lo[k] + at + 1;
	}

	size_t len = MSTAT_SLOTS_OFFSET(MSTAT_CLASS_COUNT) + MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT);
	unsigned char *buf = malloc(len);
	mstat_header_geometry(&hdr, MSTAT_CLASS_COUNT, SLOTS, cap, frames,
			      MSTAT_MODULES);
	size_t plen = hdr.profile_size;
	unsigned char *prof = calloc(1, plen);
	if (!buf || !prof) {
		free(o);
		free(pool);
		free(buf);
		free(prof);
		return -1;
	}
	image(buf, len, start, name, cap, frames, MSTAT_MODULES);
	struct mstat_shm_profile *hp = (void *)prof;
	struct mstat_shm_stack *st = (void *)(prof + MSTAT_PROFILE_STACKS_OFFSET);
	uint64_t *fr = (void *)(prof + MSTAT_PROFILE_FRAMES_OFFSET(cap));
	struct mstat_shm_module *mods =
		(void *)(prof + MSTAT_PROFILE_MODULES_OFFSET(cap, frames));
	struct mstat_shm_lifetimes *lt = (void *)(prof + MSTAT_PROFILE_LIFETIMES_OFFSET(
							  cap, frames, MSTAT_MODULES));
	memcpy(mods, o->mods, o->n * sizeof(*mods));
	/* The stacks are the paths of a call tree: the outer frames shared
	 * by all (main, a loop), then each level splitting in two, as many
	 * levels as `stacks` distinct stacks need, down to the allocating
	 * call; a node's return address is drawn from the pool by the path
	 * to it.  With `random`, every frame is drawn at random instead:
	 * nothing shared, the worst case for the encoder's gzip. */
	unsigned split = 0;
	while ((1u << split) < stacks)
		split++;
	for (unsigned i = 0; i < stacks; i++) {
		for (unsigned k = 0; k < depth; k++) {
			/* k counts from the leaf; level from the root. */
			unsigned level = depth - 1 - k;
			unsigned deep = level < depth - split ? 0
					: level - (depth - split) + 1;
			uint64_t node = deep ? (i >> (split - deep)) | (UINT64_C(1) << deep)
					     : 0;
			/* Two children of a node take neighbouring addresses
			 * of the pool: distinct paths, distinct stacks. */
			uint64_t at = random ? mix((uint64_t)i * 64 + k)
					     : mix((uint64_t)level << 32 | node >> 1) +
						       (node & 1);
			fr[i * depth + k] = pool[at % pcs];
		}
		st[i].frames_offset = i * depth;
		atomic_init(&st[i].depth, depth);
		/* A sample kept and a sample freed of 1 KiB, each standing
		 * for 512 KiB, 512 blocks: the default interval's weight; the
		 * one freed after about a millisecond (2^21 ticks). */
		atomic_init(&st[i].allocs, 2);
		atomic_init(&st[i].alloc_bytes, 2048);
		atomic_init(&st[i].alloc_objects, 2 * 512 * MSTAT_OBJECT_UNITS);
		atomic_init(&st[i].frees, 1);
		atomic_init(&st[i].free_bytes, 1024);
		atomic_init(&st[i].free_objects, 512 * MSTAT_OBJECT_UNITS);
		atomic_init(&st[i].alloc_weight, 2 * MSTAT_SAMPLE_DEFAULT);
		atomic_init(&lt[i].freed[21], MSTAT_SAMPLE_DEFAULT);
	}
	atomic_init(&hp->stacks_used, stacks);
	atomic_init(&hp->frames_used, frames);
	atomic_init(&hp->modules_used, o->n);
	atomic_init(&hp->samples, 2 * (uint64_t)stacks);
	free(o);
	free(pool);

	mstat_shm_name(seg, sizeof(seg), getpid(), start, 0);
	snprintf(path, sizeof(path), "%s/%s", MSTAT_SHM_DIR, seg);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || mstat_owner_lock(fd) < 0 ||
	    ftruncate(fd, (off_t)hdr.segment_size) < 0 ||
	    pwrite(fd, prof, plen, hdr.profile_offset) != (ssize_t)plen ||
	    pwrite(fd, buf, len, 0) != (ssize_t)len) {
		fprintf(stderr, "mstat-bench: %s: %s\n", path, strerror(errno));
		if (fd >= 0) {
			unlink(path);
			close(fd);
		}
		fd = -1;
	}
	free(buf);
	free(prof);
	return fd;
}

void
mbench_segment_profiled_remove(int fd)
{
	char seg[64];

	mstat_shm_name(seg, sizeof(seg), getpid(), UINT64_C(1) << 46, 0);
	shm_unlink(seg);
	close(fd);
}
