/* SPDX-License-Identifier: MIT */
/*
 * memory.c - a process's resident memory in parts; see memory.h, and
 * docs/memory.md for what is measured how.
 *
 * A look walks the process's maps once.  What is the library's (its
 * segment, by device and inode; its pool, by the address its segment
 * gives) and, behind glibc, what is plainly the heap (the brk heap, and
 * each arena's heap: an anonymous read-write mapping whose end, and the
 * inaccessible rest of its reservation after it, fill a 64 MiB-aligned
 * window to its end) is counted at once, in pages in memory (pagemap).
 * Every other anonymous read-write mapping behind glibc may hold mmapped
 * chunks (the kernel merges neighbouring mappings, so one may hold
 * several, and the program's own beside them): its first words are read
 * from the process, if its first page is in memory, in one
 * process_vm_readv for all, and a chunk's header (prev_size 0, the size a
 * multiple of the page with IS_MMAPPED alone set, within the mapping)
 * leads to the next one after it.  A thread's stack (read-write after its
 * guard page) and a library's .bss (read-write after its file's data) are
 * not looked at.
 */
#include "core/memory.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm/clock.h"

#define PAGE UINT64_C(4096)
#define HEAP_MAX (UINT64_C(64) << 20) /* glibc's HEAP_MAX_SIZE, 64-bit */
#define CHUNK_MIN_LIVE (UINT64_C(120) << 10) /* below glibc's least mmap
					      * threshold, 128 KiB */
#define PROBES_MAX 256u   /* pages looked at for chunks, a look */
#define READ_BATCH 64u    /* regions whose first words one read takes */

static const char *const part_names[MSTAT_MEMORY_PART_COUNT] = {
#define MSTAT_X(e, n, h) [MSTAT_MEMORY_##e] = #n,
	MSTAT_MEMORY_PARTS(MSTAT_X)
#undef MSTAT_X
};

static const char *const source_names[MSTAT_MEMORY_SOURCE_COUNT] = {
	[MSTAT_MEMORY_NONE] = "none",
	[MSTAT_MEMORY_GLIBC] = "glibc",
	[MSTAT_MEMORY_GLIBC_PARTIAL] = "glibc-partial",
	[MSTAT_MEMORY_ALLOCATOR] = "allocator",
};

static const char *const allocator_names[] = {
	[MSTAT_ALLOCATOR_UNKNOWN] = NULL,
	[MSTAT_ALLOCATOR_GLIBC] = "glibc",
	[MSTAT_ALLOCATOR_JEMALLOC] = "jemalloc",
	[MSTAT_ALLOCATOR_TCMALLOC] = "tcmalloc",
	[MSTAT_ALLOCATOR_OTHER] = "other",
};

const char *
mstat_memory_part_name(enum mstat_memory_part p)
{
	return (unsigned)p < MSTAT_MEMORY_PART_COUNT ? part_names[p] : "?";
}

const char *
mstat_memory_source_name(enum mstat_memory_source s)
{
	return (unsigned)s < MSTAT_MEMORY_SOURCE_COUNT ? source_names[s] : "?";
}

int
mstat_memory_source_parse(const char *s)
{
	for (int i = 0; i < MSTAT_MEMORY_SOURCE_COUNT; i++)
		if (strcmp(s, source_names[i]) == 0)
			return i;
	return -1;
}

const char *
mstat_memory_allocator_name(uint32_t a)
{
	return a < sizeof(allocator_names) / sizeof(allocator_names[0])
		       ? allocator_names[a]
		       : NULL;
}

int
mstat_memory_allocator_parse(const char *s)
{
	if (!s || !*s)
		return MSTAT_ALLOCATOR_UNKNOWN;
	for (unsigned i = 1; i < sizeof(allocator_names) / sizeof(allocator_names[0]); i++)
		if (strcmp(s, allocator_names[i]) == 0)
			return (int)i;
	return -1;
}

/* ---- the look ---- */

/* What a mapping is, as far as its line in maps says. */
enum kind {
	K_OTHER,   /* a file's, or not read-write: not the heap's */
	K_ANON,    /* anonymous, read-write, private */
	K_GUARD,   /* anonymous and inaccessible (---p) */
	K_BRK,     /* [heap] */
	K_ARENA,   /* glibc named it its arena (glibc.mem.decorate_maps) */
	K_CHUNKS,  /* glibc named it its mmapped chunks */
	K_DATA,    /* a file's read-write data */
};

struct vma {
	uint64_t start, end;
	enum kind kind;
	bool segment;
};

/* A region that may start with mmapped chunks: its first words, when
 * read. */
struct region {
	uint64_t start, end;
	uint64_t at;       /* where a walk of it stopped */
	uint64_t w[4];     /* the words there, if `read` */
	bool read;
};

struct look {
	pid_t pid;
	int pagemap;
	bool glibc;
	bool can_read;     /* process_vm_readv is allowed (until refused) */
	unsigned probes;   /* pages looked at for chunks, left */
	const struct mstat_memory_where *w;
	struct mstat_memory_found *f;
	struct vma prev;   /* the mapping before the one being classified */
	struct region *regions;
	size_t nregions, cap;
};

static enum kind
kind_of(const struct mstat_proc_map *m)
{
	if (strcmp(m->name, "[anon: glibc: malloc arena]") == 0)
		return K_ARENA;
	if (strcmp(m->name, "[anon: glibc: malloc]") == 0)
		return K_CHUNKS;
	if (strcmp(m->perms, "rw-p") == 0 && m->ino == 0)
		return strcmp(m->name, "[heap]") == 0 ? K_BRK
		       : m->name[0] == '\0'           ? K_ANON
						      : K_OTHER;
	if (strcmp(m->perms, "---p") == 0 && m->ino == 0 && m->name[0] == '\0')
		return K_GUARD;
	if (m->perms[1] == 'w' && m->ino != 0)
		return K_DATA;
	return K_OTHER;
}

/* Bytes in memory of [start, end), or 0 if they cannot be told. */
static uint64_t
resident(struct look *l, uint64_t start, uint64_t end)
{
	int64_t b = start < end ? mstat_procfs_resident(l->pagemap, start, end, NULL, NULL)
				: 0;

	return b > 0 ? (uint64_t)b : 0;
}

/* Whether the page at `a` is in memory (its pagemap entry): the words
 * read from it then fault nothing in. */
static bool
present(struct look *l, uint64_t a)
{
	uint64_t e;

	return pread(l->pagemap, &e, sizeof(e), (off_t)(a / PAGE * 8)) == sizeof(e) &&
	       (e >> 63) != 0;
}

/* Reads 32 bytes at each of the regions [from, to) not read yet, in one
 * call as far as it goes. */
static void
read_firsts(struct look *l, size_t from, size_t to)
{
	struct iovec lo[READ_BATCH], re[READ_BATCH];
	size_t at[READ_BATCH];

	while (from < to && l->can_read) {
		size_t n = 0;
		for (; from < to && n < READ_BATCH; from++) {
			struct region *r = &l->regions[from];
			if (r->read || !present(l, r->start))
				continue;
			lo[n] = (struct iovec){ r->w, sizeof(r->w) };
			re[n] = (struct iovec){ (void *)(uintptr_t)r->start, sizeof(r->w) };
			at[n++] = from;
		}
		size_t done = 0;
		while (done < n) {
			ssize_t got = process_vm_readv(l->pid, lo + done, n - done,
						       re + done, n - done, 0);
			l->f->probes += n - done;
			if (got < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS)) {
				l->can_read = false;
				return;
			}
			/* Whole regions read, then the one it stopped at
			 * (unmapped meanwhile) is passed. */
			size_t whole = got > 0 ? (size_t)got / sizeof(l->regions[0].w) : 0;
			for (size_t i = 0; i < whole; i++)
				l->regions[at[done + i]].read = true;
			done += whole + 1;
		}
	}
}

/* The words at `a` into w, read now: true if they were. */
static bool
peek(struct look *l, uint64_t a, uint64_t w[4])
{
	uint64_t buf[4];

	if (!l->can_read || !present(l, a))
		return false;
	struct iovec lo = { buf, sizeof(buf) };
	struct iovec re = { (void *)(uintptr_t)a, sizeof(buf) };
	ssize_t got = process_vm_readv(l->pid, &lo, 1, &re, 1, 0);
	l->f->probes++;
	if (got < 0 && (errno == EPERM || errno == EACCES))
		l->can_read = false;
	if (got != (ssize_t)sizeof(buf))
		return false;
	memcpy(w, buf, sizeof(buf));
	return true;
}

/* The size of the mmapped chunk whose header is w, at most `room`; 0 if
 * it is none: prev_size 0 (glibc's mmapped chunks start their mapping),
 * then a size of whole pages with IS_MMAPPED and no other flag. */
static uint64_t
chunk_size(const uint64_t w[4], uint64_t room)
{
	uint64_t size = w[1] & ~UINT64_C(7);

	if (w[0] != 0 || (w[1] & 7) != 2 || size < PAGE || size % PAGE || size > room)
		return 0;
	return size;
}

/* Whether w is the head of a glibc heap of a whole HEAP_MAX (heap_info:
 * its arena, the heap before it, its size and the size made
 * accessible), which has no inaccessible part left to tell it by. */
static bool
full_heap(const uint64_t w[4])
{
	return w[0] != 0 && w[2] == HEAP_MAX && w[3] == HEAP_MAX;
}

/* Runs of pages in memory, as many as fit. */
struct runs {
	uint64_t s[64], e[64];
	unsigned n;
};

static void
add_run(void *arg, uint64_t start, uint64_t end)
{
	struct runs *r = arg;

	if (r->n < 64) {
		r->s[r->n] = start;
		r->e[r->n++] = end;
	}
}

/* The next page at or after `a` in memory, within the runs of [a0, end)
 * read once (runs->n == UINT_MAX: not yet); `end` if none. */
static uint64_t
next_present(struct look *l, struct runs *runs, uint64_t a, uint64_t end)
{
	if (runs->n == ~0u) {
		runs->n = 0;
		(void)mstat_procfs_resident(l->pagemap, a, end, add_run, runs);
	}
	for (unsigned i = 0; i < runs->n; i++)
		if (runs->e[i] > a)
			return runs->s[i] > a ? runs->s[i] : a;
	return end;
}

/* The region r from where a walk stopped (its start, and its first
 * words, at first): its chunks, one after the other.  With `probe`, past
 * something else too (the program's own mapping, merged with them by the
 * kernel): each page of it in memory is looked at, up to PROBES_MAX a
 * look, while fewer chunks were found than live blocks could be. */
static void
walk(struct look *l, struct region *r, bool probe)
{
	struct mstat_memory_found *f = l->f;
	struct runs runs = { .n = ~0u };

	while (r->at < r->end) {
		uint64_t a = r->at, size = r->read ? chunk_size(r->w, r->end - a) : 0;
		if (size) {
			f->chunks++;
			f->chunk_bytes += size;
			f->chunk_resident += resident(l, a, a + size);
			a += size;
		} else if (r->read && a % HEAP_MAX == 0 && r->end - a >= HEAP_MAX &&
			   full_heap(r->w)) {
			f->heap += resident(l, a, a + HEAP_MAX);
			a += HEAP_MAX;
		} else if (probe && f->chunks < l->w->large_objects && l->probes) {
			l->probes--;
			a = next_present(l, &runs, a + PAGE, r->end);
		} else {
			return; /* stopped at something else: r->w says what */
		}
		r->at = a;
		r->read = a < r->end && peek(l, a, r->w);
		if (!l->can_read)
			return;
	}
}

static int
add_region(struct look *l, uint64_t start, uint64_t end)
{
	if (start >= end)
		return 0;
	if (l->nregions == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct region *r = realloc(l->regions, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		l->regions = r;
		l->cap = cap;
	}
	l->regions[l->nregions++] =
		(struct region){ .start = start, .end = end, .at = start };
	return 0;
}

/* The part of [start, end) outside the pool, as up to two ranges. */
static unsigned
outside_pool(const struct look *l, uint64_t start, uint64_t end, uint64_t out[2][2])
{
	uint64_t pb = l->w->alloc.pool_base, pe = pb + l->w->alloc.pool_size;
	unsigned n = 0;

	if (!pb || end <= pb || start >= pe) {
		out[0][0] = start, out[0][1] = end;
		return 1;
	}
	if (start < pb)
		out[n][0] = start, out[n++][1] = pb;
	if (end > pe)
		out[n][0] = pe, out[n++][1] = end;
	return n;
}

/* The pool's pages in [start, end): its sampled blocks' part is the
 * heap's (they are the program's live blocks, moved), its own part the
 * library's. */
static void
pool_pages(struct look *l, uint64_t start, uint64_t end)
{
	const struct mstat_alloc_info *a = &l->w->alloc;
	uint64_t pb = a->pool_base, own = pb + a->pool_own_offset,
		 pe = pb + a->pool_size;

	if (!pb || end <= pb || start >= pe)
		return;
	uint64_t s = start > pb ? start : pb, e = end < pe ? end : pe;
	l->f->heap += resident(l, s, e < own ? e : own);
	l->f->own += resident(l, s > own ? s : own, e);
}

/* An anonymous read-write mapping behind glibc, `next` after it: the
 * heap's if it is an arena's heap, else a region that may hold mmapped
 * chunks, unless it is a thread's stack or a library's .bss. */
static int
anonymous(struct look *l, const struct vma *v, const struct vma *next)
{
	uint64_t start = v->start, end = v->end;

	if (next && next->kind == K_GUARD && next->start == end) {
		uint64_t heap = (end - 1) / HEAP_MAX * HEAP_MAX;
		if (heap >= start && next->end >= heap + HEAP_MAX) {
			l->f->heap += resident(l, heap, end);
			end = heap; /* below it: merged with it */
		}
	}
	/* A stack after its guard page (not the inaccessible end of an
	 * arena heap's reservation, which ends aligned), a .bss after its
	 * file's data. */
	if (start == v->start && l->prev.end == start &&
	    ((l->prev.kind == K_GUARD && l->prev.end % HEAP_MAX != 0) ||
	     l->prev.kind == K_DATA))
		return 0;
	return add_region(l, start, end);
}

/* Mapping v, its successor `next` (NULL at the end). */
static int
classify(struct look *l, const struct vma *v, const struct vma *next)
{
	uint64_t parts[2][2];
	unsigned n;
	int rc = 0;

	if (v->segment) {
		l->f->segment += resident(l, v->start, v->end);
		return 0;
	}
	pool_pages(l, v->start, v->end);
	if (!l->glibc)
		return 0;
	n = outside_pool(l, v->start, v->end, parts);
	for (unsigned i = 0; i < n && rc == 0; i++) {
		struct vma p = { parts[i][0], parts[i][1], v->kind, false };
		switch (v->kind) {
		case K_BRK:
		case K_ARENA:
			l->f->heap += resident(l, p.start, p.end);
			break;
		case K_CHUNKS:
			rc = add_region(l, p.start, p.end);
			break;
		case K_ANON:
			rc = anonymous(l, &p, p.end == v->end ? next : NULL);
			break;
		default:
			break;
		}
	}
	return rc;
}

/* Every mapping of the process: what is the library's and the heap's, and
 * the regions that may hold chunks.  0, or -errno. */
static int
sweep(struct look *l)
{
	struct mstat_proc_maps maps;
	struct mstat_proc_map m;
	struct vma cur = { 0 }, next;
	bool have = false;
	int rc;

	if ((rc = mstat_procfs_maps_open(&maps, l->pid)) < 0)
		return rc;
	while ((rc = mstat_procfs_maps_next(&maps, &m)) > 0) {
		next = (struct vma){
			m.start, m.end, kind_of(&m),
			m.ino == l->w->seg_ino && m.dev_major == l->w->seg_major &&
				m.dev_minor == l->w->seg_minor && m.ino != 0,
		};
		if (have && (rc = classify(l, &cur, &next)) < 0)
			break;
		if (have)
			l->prev = cur;
		cur = next;
		have = true;
	}
	if (rc == 0 && have)
		rc = classify(l, &cur, NULL);
	mstat_procfs_maps_close(&maps);
	return rc;
}

int
mstat_memory_look(pid_t pid, const struct mstat_memory_where *w,
		  struct mstat_memory_found *f)
{
	struct look l = {
		.pid = pid, .w = w, .f = f, .can_read = true, .probes = PROBES_MAX,
		.glibc = w->alloc.allocator == MSTAT_ALLOCATOR_GLIBC,
	};
	int rc;

	memset(f, 0, sizeof(*f));
	f->alloc = w->alloc;
	if ((rc = mstat_procfs_rss(pid, &f->status)) < 0)
		return rc;
	f->source = MSTAT_MEMORY_NONE;
	if ((l.pagemap = mstat_procfs_pagemap_open(pid)) < 0)
		return 0; /* not ours to read: the status alone */
	if (sweep(&l) == 0) {
		read_firsts(&l, 0, l.nregions);
		/* The chunks each region starts with, then, for chunks still
		 * missing, what follows something else. */
		for (size_t i = 0; i < l.nregions; i++)
			walk(&l, &l.regions[i], false);
		for (size_t i = 0; i < l.nregions && f->chunks < w->large_objects; i++)
			walk(&l, &l.regions[i], true);
		if (l.glibc)
			f->source = l.can_read ? MSTAT_MEMORY_GLIBC
					       : MSTAT_MEMORY_GLIBC_PARTIAL;
	} else {
		f->segment = f->own = f->heap = 0;
		f->chunks = f->chunk_bytes = f->chunk_resident = 0;
	}
	if (!l.glibc && w->alloc.answered &&
	    (w->alloc.allocator == MSTAT_ALLOCATOR_JEMALLOC ||
	     w->alloc.allocator == MSTAT_ALLOCATOR_TCMALLOC))
		f->source = MSTAT_MEMORY_ALLOCATOR;
	free(l.regions);
	close(l.pagemap);
	return 0;
}

/* ---- the parts ---- */

static uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Within the heap's `heap` resident bytes behind glibc: the mmapped
 * chunks' pages are live but their 16-byte headers; the rest of the heap
 * holds the other live bytes, an 8-byte header each, and what is free. */
static void
split_glibc(const struct mstat_memory_found *f, uint64_t heap, uint64_t live,
	    uint64_t objects, uint64_t *part)
{
	uint64_t mm = min64(f->chunk_resident, heap);
	uint64_t mm_head = min64(16 * f->chunks, mm);
	uint64_t arena = heap - mm;
	/* The chunks' usable bytes are live blocks' (glibc unmaps a chunk
	 * as it is freed): the rest of the live bytes are the arenas'. */
	uint64_t mm_usable = f->chunk_bytes - 16 * f->chunks;
	uint64_t live_arena = live - min64(live, mm_usable);
	uint64_t objects_arena = objects - min64(objects, f->chunks);
	uint64_t in_arena = min64(live_arena, arena);
	uint64_t heads = min64(8 * objects_arena, arena - in_arena);

	part[MSTAT_MEMORY_LIVE] = (mm - mm_head) + in_arena;
	part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD] = mm_head + heads;
	part[MSTAT_MEMORY_ALLOCATOR_FREE] = arena - in_arena - heads;
}

void
mstat_memory_split(const struct mstat_memory_found *f, uint64_t live,
		   uint64_t objects, uint64_t time_ns, struct mstat_memory *m)
{
	uint64_t anon = f->status.anon, shmem = f->status.shmem;
	uint64_t *part = m->part;

	memset(m, 0, sizeof(*m));
	m->rss = anon + f->status.file + shmem;
	m->allocator = f->alloc.allocator;
	m->source = f->source;
	m->time_ns = time_ns;
	/* The library's: its segment's pages, and its own blocks'. */
	uint64_t seg = min64(f->segment, shmem), own = min64(f->own, anon);
	anon -= own;
	part[MSTAT_MEMORY_FILE] = f->status.file;
	part[MSTAT_MEMORY_SHMEM] = shmem - seg;
	part[MSTAT_MEMORY_LIBRARY] = seg + own;
	/* The heap, within what is left of anonymous memory. */
	uint64_t heap;
	switch (f->source) {
	case MSTAT_MEMORY_GLIBC:
	case MSTAT_MEMORY_GLIBC_PARTIAL:
		heap = min64(f->heap + f->chunk_resident, anon);
		split_glibc(f, heap, live, objects, part);
		break;
	case MSTAT_MEMORY_ALLOCATOR:
		/* Its own estimate, which counts pages it mapped and never
		 * touched as resident too: no more than there is. */
		heap = min64(f->alloc.resident, anon);
		part[MSTAT_MEMORY_LIVE] = min64(live, heap);
		part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD] =
			min64(f->alloc.metadata, heap - part[MSTAT_MEMORY_LIVE]);
		part[MSTAT_MEMORY_ALLOCATOR_FREE] =
			heap - part[MSTAT_MEMORY_LIVE] -
			part[MSTAT_MEMORY_ALLOCATOR_OVERHEAD];
		m->allocator_ns = f->alloc.answer_ns;
		break;
	default:
		heap = min64(live, anon);
		part[MSTAT_MEMORY_LIVE] = heap;
		break;
	}
	part[MSTAT_MEMORY_NOT_HEAP] = anon - heap;
	m->live_not_resident = live - min64(live, part[MSTAT_MEMORY_LIVE]);
}

int
mstat_memory_read(struct mstat_reader *r, pid_t pid,
		  const struct mstat_snapshot *snap, struct mstat_memory_mark *mark,
		  struct mstat_memory *m)
{
	struct mstat_memory_where w = { 0 };
	struct mstat_memory_found f;
	struct mstat_memory_mark now = {
		.live_bytes = mstat_live_bytes(&snap->total),
		.live_objects = mstat_live_objects(&snap->total),
	};
	struct stat st;
	int rc;

	/* The allocator asked again: its answer comes at its next sample,
	 * for a later read. */
	if ((rc = mstat_reader_alloc(r, true, &w.alloc)) < 0 ||
	    (rc = mstat_procfs_statm(pid, &now.resident, &now.shared)) < 0)
		return rc;
	now.answer_ns = w.alloc.answer_ns;
	if (mark->resident && mark->same < MSTAT_MEMORY_SAME_MAX &&
	    now.resident == mark->resident && now.shared == mark->shared &&
	    now.live_bytes == mark->live_bytes &&
	    now.live_objects == mark->live_objects &&
	    now.answer_ns == mark->answer_ns) {
		mark->same++;
		m->time_ns = mstat_clock_wall_ns();
		return 0;
	}
	if (fstat(mstat_reader_fd(r), &st) < 0)
		return -errno;
	w.seg_major = major(st.st_dev);
	w.seg_minor = minor(st.st_dev);
	w.seg_ino = (uint64_t)st.st_ino;
	for (uint32_t c = 0; c < snap->class_count && c < MSTAT_MAX_CLASSES; c++)
		if (snap->class_max_size[c] >= CHUNK_MIN_LIVE)
			w.large_objects += mstat_live_objects(&snap->classes[c]);
	if ((rc = mstat_memory_look(pid, &w, &f)) < 0)
		return rc;
	mstat_memory_split(&f, now.live_bytes, now.live_objects,
			   mstat_clock_wall_ns(), m);
	*mark = now;
	return 1;
}
