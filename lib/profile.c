/* SPDX-License-Identifier: MIT */
/*
 * profile.c - sampling, stacks and modules into the segment's profile
 * region (shm/layout.h, struct mstat_shm_profile); see profile.h.
 *
 * The ordered accesses, named as in docs/design.md ("Heap profile"):
 *   (J) a stack entry's `depth`, stored with release once its frames are
 *       written; readers load it with acquire before the frames.
 *   (K) a stack's `frees`/`free_bytes`/`free_objects` and its lifetime
 *       bucket added with release after its allocation was added (the
 *       block reached the freeing thread through the program's own
 *       synchronisation); readers load them before the allocations',
 *       with acquire: per stack, frees <= allocs, and so on.
 *   (L) `modules_used` stored with release after the module entry.
 *   (U) the reader's `sample_request`, a plain value: relaxed.
 *   (T) a live sample's birth word, stored and cleared relaxed: a word
 *       a reader takes whole, publishing nothing.
 * What stays in process memory: which live block belongs to which stack
 * (the live table), the index that finds a stack's entry from its frames,
 * and which pages of the region have storage.
 *
 * Storage: each page of the region is given its storage (fallocate)
 * before the first write to it, so that a full /dev/shm refuses a sample
 * instead of raising SIGBUS in malloc.  A process that samples a few
 * stacks holds a few pages of it.
 */
#include "lib/own.h"
#include "lib/profile.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib/allocstats.h"
#include "shm/clock.h"
#include "lib/config.h"
#include "lib/probes.h"
#include "lib/segment.h"
#include "lib/status.h"

/* Live sampled blocks remembered; 48 bytes each, pages taken as used.
 * Entry i's birth is word i of the region's births (layout.h). */
#define LIVE_MAX MSTAT_LIVE_SAMPLES
#define LIVE_PROBES 32u
#define LIVE_GONE ((uintptr_t)1)
/* Frames of the library itself above the caller, at most. */
#define OWN_FRAMES 8
/* The stack index: twice the entries, a power of two. */
#define INDEX_MAX (2u * MSTAT_STACKS)
#define REGION_SIZE MSTAT_PROFILE_SIZE(MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES)
#define LIFETIMES_OFFSET \
	MSTAT_PROFILE_LIFETIMES_OFFSET(MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES)
#define BIRTHS_OFFSET \
	MSTAT_PROFILE_BIRTHS_OFFSET(MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES)
#define REGION_PAGES (REGION_SIZE / MSTAT_PAGE)

enum setup { SETUP_NONE, SETUP_BUSY, SETUP_DONE, SETUP_FAILED };

/* A live sampled block.  Its stack is an entry of the region made in
 * fork generation `gen`: a fork child keeps its parent's blocks, counted
 * as they were, but not their stacks, which are the parent's. */
struct mstat_sample {
	_Atomic uintptr_t p; /* 0 free, LIVE_GONE forgotten, else the block */
	uint32_t stack;      /* NO_STACK until one is taken */
	uint32_t gen;
	struct mstat_weight weight; /* what it stands for (countdown.h) */
	uint64_t counted;    /* the size its allocation was counted with */
	uint64_t born;       /* the tick it became the program's */
};
#define NO_STACK UINT32_MAX

/* A module as this process knows it: what the segment's entry says, kept
 * here so that the writer never reads back what a reader might see. */
struct known {
	uintptr_t start, end;
};

/* MSTAT_SAMPLE_BYTES, or the default, once read: every process reads it
 * as it starts. */
static struct {
	_Atomic uint64_t bytes;
	_Atomic bool read;
} sample_env MSTAT_STARTUP;

static struct {
	_Atomic int setup;          /* enum setup */
	_Atomic bool scanning;      /* a thread lists the modules */
	int fd;                     /* the segment's */
	uint64_t region_offset;     /* in the segment */
	/* Bit i: page i of the region has storage.  Relaxed: a thread that
	 * misses a bit set by another gives the page storage again, which
	 * changes nothing. */
	_Atomic uint64_t paged[(REGION_PAGES + 63) / 64];
	bool index_stale;           /* a fork child's, not cleared yet */
	/* Hash of a stack's frames (high half) | its entry + 1 (low half);
	 * 0 free.  Stored once the entry is published.  Whole pages of its
	 * own: a fork child clears it by mapping fresh ones (fresh_index()),
	 * as it sets up. */
	alignas(4096) _Atomic uint64_t index[INDEX_MAX];
	struct mstat_shm_profile *prof;
	struct mstat_shm_stack *stacks;
	uint64_t *frames;
	struct mstat_shm_module *modules;
	struct mstat_shm_lifetimes *lifetimes;
	_Atomic uint64_t *births;
	uint64_t tick0;             /* the head's, kept here */
	/* LIVE_MAX entries, mmap'd at the first sample, kept by a fork
	 * child.  Release store in set_up(); acquire in live_table(). */
	_Atomic(struct mstat_sample *) live;
	uint32_t gen;               /* forks in this process's line */
	/* The dynamic loader's code, [loader_lo, loader_hi): found by
	 * set_up() (mstat_profile_loader()). */
	uintptr_t loader_lo, loader_hi;
	/* libunwind's unw_backtrace(), loaded at the first sample. */
	int (*backtrace)(void **buf, int size);
	_Atomic unsigned nknown;    /* grown under `scanning` */
	struct known known[MSTAT_MODULES];
} prof; /* zeros, in .bss */

_Static_assert(REGION_PAGES <= 64 * sizeof(prof.paged) / sizeof(prof.paged[0]),
	       "a bit for every page of the region");

/* MSTAT_SAMPLE_BYTES, read at the first sampling decision, and again by
 * the library's constructor (a program's .preinit_array allocates before
 * libc has set up the environment). */
static MSTAT_START_TEXT void
read_env(void)
{
	atomic_store_explicit(&sample_env.bytes,
			      mstat_config_number(MSTAT_CONF_SAMPLE_BYTES),
			      memory_order_relaxed);
	/* Release: the value before the flag; pairs with the acquire in
	 * env_bytes().  Two threads may both read it: the same value. */
	atomic_store_explicit(&sample_env.read, true, memory_order_release);
}

/* The writer starts (its `start` hook): MSTAT_SAMPLE_BYTES is read
 * again. */
static MSTAT_START_TEXT void
on_start(void)
{
	/* Allocations before libc's own initialiser (a program's
	 * .preinit_array) find no environment yet: read it again now, and
	 * draw this thread's countdown again from it. */
	read_env();
	mstat_thread.sample_left = 0;
	mstat_thread.countdown.mean = 0;
}

static uint64_t
env_bytes(void)
{
	if (!atomic_load_explicit(&sample_env.read, memory_order_acquire))
		read_env();
	return atomic_load_explicit(&sample_env.bytes, memory_order_relaxed);
}

/* The interval in effect: the reader's request if any, else the
 * environment's.  A request is bounded before use. */
static uint64_t
interval(const struct mstat_shm_header *h)
{
	/* (U) relaxed: a value, publishing nothing. */
	uint64_t req = atomic_load_explicit(&h->sample_request, memory_order_relaxed);
	uint64_t v = req & MSTAT_SAMPLE_REQUEST
			     ? req & ~MSTAT_SAMPLE_REQUEST
			     : env_bytes();

	return v > MSTAT_SAMPLE_MAX ? MSTAT_SAMPLE_MAX : v;
}

/* The thread's random numbers, seeded at its first draw, and again at
 * its first after a fork (fork.c): from the time, the thread and the
 * process, each bit of them spread over the whole state (splitmix64's
 * finaliser), so that a thread's random numbers are its own, whether
 * another's were seeded a microsecond apart, in another thread or in
 * another process. */
static MSTAT_START_TEXT void
seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t z = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
	z ^= (uint64_t)(uintptr_t)&mstat_thread.countdown ^
	     (uint64_t)(uint32_t)mstat_proc.pid << 32;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	mstat_thread.countdown.rng = z ^ z >> 31;
}

/* Storage for bytes [off, off + len) of the region: true, or false if
 * /dev/shm has no room (the caller then writes nothing there). */
static bool
paged(uint64_t off, uint64_t len)
{
	for (uint64_t pg = off / MSTAT_PAGE; pg <= (off + len - 1) / MSTAT_PAGE; pg++) {
		_Atomic uint64_t *w = &prof.paged[pg / 64];
		uint64_t bit = UINT64_C(1) << (pg % 64);
		if (atomic_load_explicit(w, memory_order_relaxed) & bit)
			continue;
		if (fallocate(prof.fd, 0, (off_t)(prof.region_offset + pg * MSTAT_PAGE),
			      MSTAT_PAGE) < 0)
			return false;
		atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
	}
	return true;
}

/* libunwind's unw_backtrace(), loaded on first need rather than with the
 * library: most processes never sample (a command that ends within
 * milliseconds never makes a segment), and libunwind, with the library it
 * needs, would cost every start.  Called with no lock of the library
 * held; false (said once) if it cannot be loaded. */
static bool
load_unwinder(void)
{
	static bool tried; /* by one thread at a time: start(), set_up() */

	if (prof.backtrace || tried)
		return prof.backtrace != NULL;
	tried = true;
	/* What the loader allocates for it is the library's own. */
	mstat_own_begin();
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	*(void **)&prof.backtrace = h ? dlsym(h, "unw_backtrace") : NULL;
	mstat_own_end();
	if (!prof.backtrace)
		mstat_status_warn("libunwind.so.8 could not be loaded",
				  "not sampling");
	return prof.backtrace != NULL;
}

/* A segment is being made (the writer's `segment` hook), before it is
 * published: the unwinder is loaded if sampling is on, so that no sample
 * later loads it inside a program's malloc. */
static void
on_segment(void)
{
	int saved = errno;

	/* Inside a sample, as it were: dlopen's own allocations are not
	 * sampled.  The threads that sample later see prof.backtrace through
	 * the segment's publication ((R): release in start(), acquire where
	 * a thread finds the segment). */
	mstat_thread.in_sample = true;
	if (env_bytes() && load_unwinder()) {
		/* libunwind sets itself up on its first call, and a thread's
		 * first call allocates its thread-local block (a library
		 * loaded with dlopen has its TLS on the heap): for this
		 * thread, now rather than inside a sampled malloc. */
		void *buf[2];
		(void)prof.backtrace(buf, 2);
		mstat_thread.unwound = true;
	}
	mstat_thread.in_sample = false;
	errno = saved;
}

/* The addresses an object's loadable segments span, [*lo, *hi): false if
 * it has none. */
static bool
load_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < *lo)
			*lo = s;
		if (s + ph->p_memsz > *hi)
			*hi = s + ph->p_memsz;
	}
	return *lo < *hi;
}

/* The dynamic loader's own __tls_get_addr(), whose object is the loader. */
extern void *__tls_get_addr(void *);

/* dl_iterate_phdr()'s callback: the range of the object holding `arg`,
 * the loader's, into prof. */
static int
find_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t a = (uintptr_t)arg, lo, hi;

	(void)size;
	if (!load_range(info, &lo, &hi) || a - lo >= hi - lo)
		return 0;
	prof.loader_lo = lo;
	prof.loader_hi = hi;
	return 1;
}

/* The stack index emptied in a fork child, once it samples (set_up()).
 * Written over, its 32 KiB were eight copy-on-write faults in every
 * child, most of which exec() or exit at once; zero pages mapped over it
 * fault only where the child samples, and a child that never does makes
 * not even the system call. */
static void
fresh_index(void)
{
	if (mmap((void *)prof.index, sizeof(prof.index), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		memset((void *)prof.index, 0, sizeof(prof.index));
}

/* The region's addresses and the live table, once, with the storage of
 * the region's first page (its head), and where the loader is; false if
 * there is no storage (then sampling stays off, said once). */
static bool
set_up(const struct mstat_segment *seg)
{
	int r = atomic_load_explicit(&prof.setup, memory_order_acquire);

	if (r == SETUP_DONE)
		return true;
	if (r != SETUP_NONE ||
	    !atomic_compare_exchange_strong_explicit(&prof.setup, &r, SETUP_BUSY,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false; /* another thread sets up: not waited for */
	/* Loaded as the segment was made, unless sampling was off then and
	 * a reader has asked for it since. */
	if (!load_unwinder()) {
		atomic_store_explicit(&prof.setup, SETUP_FAILED, memory_order_relaxed);
		return false;
	}
	prof.fd = seg->fd;
	prof.region_offset = MSTAT_PROFILE_OFFSET(MSTAT_CLASS_COUNT, seg->slot_count);
	if (!prof.loader_hi)
		dl_iterate_phdr(find_loader, (void *)(uintptr_t)&__tls_get_addr);
	/* A fork child's: its parent's entries, whose stacks are not in
	 * this segment.  No thread reads it until DONE. */
	if (prof.index_stale) {
		fresh_index();
		prof.index_stale = false;
	}
	/* A fork child has its parent's table. */
	void *live = atomic_load_explicit(&prof.live, memory_order_relaxed);
	if (!live)
		live = mmap(NULL, LIVE_MAX * sizeof(struct mstat_sample),
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (live == MAP_FAILED || !paged(0, MSTAT_PROFILE_STACKS_OFFSET)) {
		mstat_status_warn("no room for the heap profile in " MSTAT_SHM_DIR,
				  "not sampling");
		atomic_store_explicit(&prof.setup, SETUP_FAILED, memory_order_relaxed);
		return false;
	}
	unsigned char *base = (unsigned char *)seg->hdr + prof.region_offset;
	prof.prof = (struct mstat_shm_profile *)base;
	prof.stacks = (struct mstat_shm_stack *)(base + MSTAT_PROFILE_STACKS_OFFSET);
	prof.frames = (uint64_t *)(base + MSTAT_PROFILE_FRAMES_OFFSET(MSTAT_STACKS));
	prof.modules = (struct mstat_shm_module *)(base + MSTAT_PROFILE_MODULES_OFFSET(
								 MSTAT_STACKS, MSTAT_FRAMES));
	prof.lifetimes = (struct mstat_shm_lifetimes *)(base + LIFETIMES_OFFSET);
	prof.births = (_Atomic uint64_t *)(base + BIRTHS_OFFSET);
	/* The counter and CLOCK_MONOTONIC at once, for readers to measure
	 * the counter's rate: published with the first entry (J), as a
	 * thread that publishes one saw DONE below. */
	prof.tick0 = prof.prof->tick0 = mstat_clock_ticks();
	prof.prof->ns0 = mstat_clock_mono_ns();
	/* Release: the table's pages, to live_table()'s acquire. */
	atomic_store_explicit(&prof.live, live, memory_order_release);
	/* Release: the fields above, to the threads that see DONE (acquire
	 * at the top of this function, and in begin()). */
	atomic_store_explicit(&prof.setup, SETUP_DONE, memory_order_release);
	return true;
}

static bool begin(size_t n);

/* Inside malloc: errno is the program's, whatever the sampling path
 * called (strtoull, fallocate, mmap, readlink, the unwinder). */
MSTAT_START_TEXT bool
mstat_profile_begin(size_t n)
{
	int saved = errno;
	bool yes = begin(n);

	errno = saved;
	return yes;
}

static bool
begin(size_t n)
{
	struct mstat_thread *t = &mstat_thread;
	const struct mstat_segment *seg = t->in_sample ? NULL : mstat_start_segment();

	if (t->countdown.rng == 0)
		seed();
	if (!seg) {
		/* An allocation inside a sample (the unwinder's, a signal
		 * handler's, the loader's: on_segment()), or with no
		 * segment (not yet, or no more): no sample.  The next
		 * countdown is drawn as any, at the running one's mean inside
		 * a sample, else at the environment's. */
		uint64_t mean = t->in_sample && t->countdown.mean ? t->countdown.mean
								  : env_bytes();
		(void)mstat_countdown_expired(&t->countdown, &t->sample_left, n, mean);
		return false;
	}
	/* A countdown's end: the slow path where readers' questions of the
	 * allocator are answered (allocstats.h). */
	mstat_allocstats_poll(seg);
	uint64_t mean = interval(seg->hdr);
	if (atomic_load_explicit(&seg->hdr->sample_bytes, memory_order_relaxed) != mean)
		atomic_store_explicit(&seg->hdr->sample_bytes, mean, memory_order_relaxed);
	/* Sampled at the mean its countdown was drawn from, whatever the
	 * interval is now (countdown.h). */
	uint64_t at = mstat_countdown_expired(&t->countdown, &t->sample_left, n, mean);
	if (at == 0)
		return false;
	t->in_sample = true;
	if (!set_up(seg)) {
		t->in_sample = false;
		return false;
	}
	t->sample_interval = at;
	return true;
}

bool
mstat_profile_loader(const void *caller)
{
	/* Set up: begin() said so, with an acquire of `setup`. */
	return (uintptr_t)caller - prof.loader_lo < prof.loader_hi - prof.loader_lo;
}

void
mstat_profile_cancel(void)
{
	mstat_thread.in_sample = false;
}

static uint64_t
hash_frames(const uint64_t *f, unsigned n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;

	for (unsigned i = 0; i < n; i++) {
		h ^= f[i];
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	return h | 1;
}

static void
dropped(void)
{
	atomic_fetch_add_explicit(&prof.prof->dropped, 1, memory_order_relaxed);
}

/* The entry of these frames, made if new; -1 if there is no room. */
static int
intern(const uint64_t *f, unsigned n)
{
	const uint64_t h = hash_frames(f, n) & ~UINT64_C(0xffffffff);
	const uint32_t mask = INDEX_MAX - 1;
	uint32_t k = (uint32_t)(h >> 32) & mask, i;

	for (i = 0; i < INDEX_MAX; i++, k = (k + 1) & mask) {
		/* Acquire: pairs with the release CAS below; the entry it
		 * names is published. */
		uint64_t w = atomic_load_explicit(&prof.index[k], memory_order_acquire);
		if (w == 0)
			break;
		uint32_t e = (uint32_t)w - 1;
		if ((w & ~UINT64_C(0xffffffff)) != h || e >= MSTAT_STACKS)
			continue;
		const struct mstat_shm_stack *s = &prof.stacks[e];
		if (atomic_load_explicit(&s->depth, memory_order_relaxed) == n &&
		    memcmp(prof.frames + s->frames_offset, f, n * sizeof(*f)) == 0)
			return (int)e;
	}

	/* New: an entry and frames, each with storage, then published. */
	uint32_t e = atomic_fetch_add_explicit(&prof.prof->stacks_used, 1,
					       memory_order_relaxed);
	if (e >= MSTAT_STACKS)
		return -1;
	uint32_t off = atomic_fetch_add_explicit(&prof.prof->frames_used, n,
						 memory_order_relaxed);
	if (off > MSTAT_FRAMES - n ||
	    !paged(MSTAT_PROFILE_STACKS_OFFSET + (uint64_t)e * sizeof(struct mstat_shm_stack),
		   sizeof(struct mstat_shm_stack)) ||
	    !paged(MSTAT_PROFILE_FRAMES_OFFSET(MSTAT_STACKS) + (uint64_t)off * sizeof(*f),
		   n * sizeof(*f)) ||
	    !paged(LIFETIMES_OFFSET + (uint64_t)e * sizeof(struct mstat_shm_lifetimes),
		   sizeof(struct mstat_shm_lifetimes)))
		return -1; /* the entry stays depth 0: readers skip it */
	struct mstat_shm_stack *s = &prof.stacks[e];
	memcpy(prof.frames + off, f, n * sizeof(*f));
	s->frames_offset = off;
	/* (J) release: the frames and their offset before the depth; pairs
	 * with the reader's acquire. */
	atomic_store_explicit(&s->depth, n, memory_order_release);
	/* Into the index, where the search above stopped or after.  Full
	 * (never, at twice the entries): the stack is not found again, and
	 * its next sample makes another entry, which readers merge. */
	for (; i < INDEX_MAX; i++, k = (k + 1) & mask) {
		uint64_t zero = 0;
		/* Release: the entry's publication, to the acquire above. */
		if (atomic_compare_exchange_strong_explicit(&prof.index[k], &zero,
							    h | (e + 1),
							    memory_order_release,
							    memory_order_relaxed))
			break;
	}
	return (int)e;
}

/* ---- modules ---- */

/* Whether pc lies in one of the first n modules known. */
static bool
known_in(uintptr_t pc, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (pc - prof.known[i].start < prof.known[i].end - prof.known[i].start)
			return true;
	return false;
}

/* Whether every frame lies in a module known, by any thread, without
 * waiting for one that scans. */
static bool
all_known(const uint64_t *f, unsigned n)
{
	/* Acquire: pairs with the release in add_module(); the entries
	 * below the count are written, and are not written again while it
	 * stands (a fork child's reset aside: it is its only thread). */
	unsigned k = atomic_load_explicit(&prof.nknown, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (!known_in((uintptr_t)f[i], k))
			return false;
	return true;
}

/* The GNU build id among an object's notes, into m. */
static void
build_id(const struct dl_phdr_info *info, struct mstat_shm_module *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;
		while (left >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name = (nh->n_namesz + 3) & ~(size_t)3;
			size_t desc = (nh->n_descsz + 3) & ~(size_t)3;
			size_t len = sizeof(*nh) + name + desc;
			if (len > left)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + sizeof(*nh), "GNU", 4) == 0) {
				uint32_t n = nh->n_descsz < MSTAT_BUILD_ID_MAX
						     ? nh->n_descsz
						     : MSTAT_BUILD_ID_MAX;
				memcpy(m->build_id, p + sizeof(*nh) + name, n);
				m->build_id_len = n;
				return;
			}
			p += len;
			left -= len;
		}
	}
}

static int
add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	/* Relaxed: under `scanning`, the count is this thread's own. */
	unsigned k = atomic_load_explicit(&prof.nknown, memory_order_relaxed);
	uintptr_t lo, hi;

	(void)size;
	(void)arg;
	if (!load_range(info, &lo, &hi) || known_in(lo, k))
		return 0;
	uint32_t n = atomic_load_explicit(&prof.prof->modules_used, memory_order_relaxed);
	if (n >= MSTAT_MODULES || k >= MSTAT_MODULES ||
	    !paged(MSTAT_PROFILE_MODULES_OFFSET(MSTAT_STACKS, MSTAT_FRAMES) +
			   (uint64_t)n * sizeof(struct mstat_shm_module),
		   sizeof(struct mstat_shm_module)))
		return 1;
	struct mstat_shm_module *m = &prof.modules[n];
	memset(m, 0, sizeof(*m));
	m->start = lo;
	m->end = hi;
	m->bias = info->dlpi_addr;
	build_id(info, m);
	const char *name = info->dlpi_name;
	if (name && *name) {
		size_t l = strnlen(name, MSTAT_MODULE_PATH - 1);
		memcpy(m->path, name, l);
	} else if (n == 0 || !name) {
		/* The program itself (the first object listed). */
		ssize_t l = readlink("/proc/self/exe", m->path, MSTAT_MODULE_PATH - 1);
		m->path[l > 0 ? l : 0] = '\0';
	}
	prof.known[k].start = lo;
	prof.known[k].end = hi;
	/* Release: the entry before its count; pairs with the acquire in
	 * all_known(), which threads make outside the scan. */
	atomic_store_explicit(&prof.nknown, k + 1, memory_order_release);
	/* (L) release: the entry before its count; pairs with the reader's
	 * acquire of modules_used. */
	atomic_store_explicit(&prof.prof->modules_used, n + 1, memory_order_release);
	return 0;
}

/* Lists the loaded objects not listed yet, if a frame lies outside every
 * one known.  One thread at a time; another one skips it (a later sample
 * of the same frames lists them). */
static void
note_modules(const uint64_t *f, unsigned n)
{
	bool busy = false;

	/* Nearly always: no write to a line every thread shares, and no
	 * scan held, which made a thread with a new module's frame skip
	 * its listing while another only looked. */
	if (all_known(f, n))
		return;
	if (!atomic_compare_exchange_strong_explicit(&prof.scanning, &busy, true,
						     memory_order_acquire,
						     memory_order_relaxed))
		return;
	if (!all_known(f, n)) /* again: a thread may have listed them since */
		dl_iterate_phdr(add_module, NULL);
	/* Release: the known list, to the next thread that scans (the
	 * acquire above). */
	atomic_store_explicit(&prof.scanning, false, memory_order_release);
}

/* ---- live sampled blocks ---- */

/* By 16-byte granule: the pool (pool.h) packs many sampled blocks into
 * a page. */
static inline uint32_t
live_hash(uintptr_t p)
{
	return (uint32_t)(((p >> 4) * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (LIVE_MAX - 1);
}

_Atomic uint16_t mstat_sample_filter[MSTAT_SAMPLE_FILTER];

#if defined(MSTAT_USDT) && (defined(__x86_64__) || defined(__aarch64__))
/* The probes' semaphores (probes.h), where tracers look for them. */
__attribute__((section(".probes"))) unsigned short otel_memory_alloc_semaphore;
__attribute__((section(".probes"))) unsigned short otel_memory_free_semaphore;
#endif

static inline struct mstat_sample *
live_table(void)
{
	/* Acquire: pairs with the release in set_up(); the table is there. */
	return atomic_load_explicit(&prof.live, memory_order_acquire);
}

struct mstat_sample *
mstat_profile_note(void *p, size_t requested, size_t counted)
{
	/* Set up: begin() said so, with an acquire of `setup`. */
	struct mstat_sample *live = atomic_load_explicit(&prof.live, memory_order_relaxed);

	for (uint32_t i = 0, k = live_hash((uintptr_t)p); i < LIVE_PROBES;
	     i++, k = (k + 1) & (LIVE_MAX - 1)) {
		struct mstat_sample *e = &live[k];
		uintptr_t cur = atomic_load_explicit(&e->p, memory_order_relaxed);
		/* The CAS acquires: pairs with the release in
		 * mstat_profile_freed(), so the entry's old fields were read
		 * before they are overwritten. */
		if ((cur == 0 || cur == LIVE_GONE) &&
		    atomic_compare_exchange_strong_explicit(&e->p, &cur, (uintptr_t)p,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			e->stack = NO_STACK;
			e->gen = prof.gen;
			e->weight = mstat_countdown_weight(requested, counted,
							   mstat_thread.sample_interval);
			e->counted = counted;
			/* Before the block is the program's: see profile.h. */
			atomic_fetch_add_explicit(&mstat_sample_filter[mstat_sample_bucket(p)],
						  1, memory_order_relaxed);
			return e;
		}
	}
	return NULL;
}

static struct mstat_sample *
live_find(const void *p)
{
	struct mstat_sample *live = live_table();

	if (!live || !mstat_sample_maybe(p))
		return NULL;
	for (uint32_t i = 0, k = live_hash((uintptr_t)p); i < LIVE_PROBES;
	     i++, k = (k + 1) & (LIVE_MAX - 1)) {
		struct mstat_sample *e = &live[k];
		/* Relaxed: the block reached this thread through the
		 * program's own synchronisation, which orders its entry. */
		uintptr_t cur = atomic_load_explicit(&e->p, memory_order_relaxed);
		if (cur == (uintptr_t)p)
			return e;
		if (cur == 0)
			return NULL;
	}
	return NULL;
}

static void record(struct mstat_sample *e, const void *caller);

/* Whether the region's page holding byte `off` has storage. */
static bool
has_storage(uint64_t off)
{
	uint64_t pg = off / MSTAT_PAGE;

	return atomic_load_explicit(&prof.paged[pg / 64], memory_order_relaxed) &
	       (UINT64_C(1) << (pg % 64));
}

/* Sampled block e is the program's from now: its birth, and, with its
 * stack, the word readers age it by (layout.h), where it has storage.
 * (T) relaxed: a word a reader takes whole, ordering nothing. */
static void
born(struct mstat_sample *e)
{
	e->born = mstat_clock_ticks();
	if (e->stack >= MSTAT_STACKS)
		return;
	uint64_t i = (uint64_t)(e - atomic_load_explicit(&prof.live, memory_order_relaxed));
	if (!paged(BIRTHS_OFFSET + i * sizeof(uint64_t), sizeof(uint64_t)))
		return;
	uint64_t t = (e->born - prof.tick0) >> MSTAT_BIRTH_SHIFT;
	atomic_store_explicit(&prof.births[i],
			      (uint64_t)(e->stack + 1) << MSTAT_BIRTH_BITS |
			      (t & ((UINT64_C(1) << MSTAT_BIRTH_BITS) - 1)),
			      memory_order_relaxed);
}

/* The lifetime bucket of `ticks`: floor(log2), the last one open. */
static inline unsigned
lifetime_bucket(uint64_t ticks)
{
	unsigned b = 63u - (unsigned)__builtin_clzll(ticks | 1);

	return b < MSTAT_LIFETIMES ? b : MSTAT_LIFETIMES - 1;
}

void
mstat_profile_record(struct mstat_sample *e, const void *caller)
{
	int saved = errno;

	record(e, caller);
	if (e) {
		born(e);
		mstat_probe_alloc(atomic_load_explicit(&e->p, memory_order_relaxed),
				  e->counted, e->weight.bytes);
	}
	mstat_thread.in_sample = false;
	errno = saved;
}

/* The return addresses of this thread's stack, into buf.  Its first
 * stack makes libunwind's thread-local block (a library loaded with
 * dlopen has its TLS on the heap): the library's own work.  Later ones
 * allocate nothing, and are not, so that a sample makes no system call
 * for it (own.h). */
static int
unwind(void **buf, int n)
{
	if (mstat_thread.unwound)
		return prof.backtrace(buf, n);
	mstat_own_begin();
	int got = prof.backtrace(buf, n);
	mstat_own_end();
	mstat_thread.unwound = true;
	return got;
}

static void
record(struct mstat_sample *e, const void *caller)
{
	void *buf[MSTAT_STACK_DEPTH + OWN_FRAMES];
	uint64_t f[MSTAT_STACK_DEPTH];
	int first = 0, got;
	unsigned n = 0;

	atomic_fetch_add_explicit(&prof.prof->samples, 1, memory_order_relaxed);
	if (!e) {
		dropped();
		return;
	}
	got = unwind(buf, (int)(sizeof(buf) / sizeof(buf[0])));
	/* The frames above the caller are the library's. */
	for (int i = 0; i < got && i < OWN_FRAMES; i++)
		if (buf[i] == caller) {
			first = i;
			break;
		}
	for (int i = first; i < got && n < MSTAT_STACK_DEPTH; i++)
		f[n++] = (uint64_t)(uintptr_t)buf[i];
	int k = -1;
	if (n > 0) {
		note_modules(f, n);
		k = intern(f, n);
	}
	if (k < 0) {
		dropped(); /* the block stays remembered, with no stack */
		return;
	}
	e->stack = (uint32_t)k;
	struct mstat_shm_stack *st = &prof.stacks[k];
	/* Relaxed: the frees that follow are ordered after these by (K). */
	atomic_fetch_add_explicit(&st->alloc_weight, e->weight.bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->alloc_objects, e->weight.objects,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&st->alloc_bytes, e->counted, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->allocs, 1, memory_order_relaxed);
}

bool
mstat_profile_owns(const void *p, size_t *counted)
{
	struct mstat_sample *e = live_find(p);

	if (e && counted)
		*counted = e->counted;
	return e != NULL;
}

bool
mstat_profile_freed(void *p, size_t *counted)
{
	struct mstat_sample *e = live_find(p);

	if (!e)
		return false;
	uint64_t now = mstat_clock_ticks();
	uint32_t k = e->stack, gen = e->gen;
	struct mstat_weight weight = e->weight;
	uint64_t age = now - e->born;
	*counted = e->counted;
	mstat_probe_free((uintptr_t)p);
	bool ours = k < MSTAT_STACKS && gen == prof.gen;
	uint64_t i = (uint64_t)(e - atomic_load_explicit(&prof.live, memory_order_relaxed));
	if (ours && has_storage(BIRTHS_OFFSET + i * sizeof(uint64_t)))
		/* (T) relaxed, before the entry can be reused (below), whose
		 * next birth then comes after. */
		atomic_store_explicit(&prof.births[i], 0, memory_order_relaxed);
	/* Release: the fields are read before the entry can be reused; pairs
	 * with the acquire CAS in mstat_profile_note(). */
	atomic_store_explicit(&e->p, LIVE_GONE, memory_order_release);
	atomic_fetch_sub_explicit(&mstat_sample_filter[mstat_sample_bucket(p)], 1,
				  memory_order_relaxed);
	if (ours) {
		struct mstat_shm_stack *s = &prof.stacks[k];
		/* A counter a CPU read a little behind another's: no age. */
		unsigned b = lifetime_bucket((int64_t)age < 0 ? 0 : age);
		/* (K) release: after the allocation's adds, which happened
		 * before this free; pairs with the reader's acquire loads of
		 * frees, free_bytes, free_objects and the lifetime buckets,
		 * made before it loads the allocation's.  The very amounts its
		 * allocation added: the buckets sum to the weights freed. */
		atomic_fetch_add_explicit(&prof.lifetimes[k].freed[b], weight.bytes,
					  memory_order_release);
		atomic_fetch_add_explicit(&s->free_objects, weight.objects,
					  memory_order_release);
		atomic_fetch_add_explicit(&s->free_bytes, *counted, memory_order_release);
		atomic_fetch_add_explicit(&s->frees, 1, memory_order_release);
	}
	return true;
}

_Static_assert(sizeof(prof.index) % 4096 == 0, "the stack index is whole pages");

/* A fork child is about to make a segment of its own (the writer's
 * `fork_child` hook): the parent's region is not the child's.  Its live
 * sampled blocks are, with the sizes they were counted with. */
static void
on_fork_child(void)
{
	/* One thread, the forking one, outside any sample: nothing races.
	 * The live table and its filter stay: the parent's sampled blocks
	 * are the child's too, and their frees are counted with the sizes
	 * their allocations were.  Their stacks are the parent's. */
	prof.gen++;
	prof.prof = NULL;
	prof.stacks = NULL;
	prof.frames = NULL;
	prof.modules = NULL;
	atomic_store_explicit(&prof.nknown, 0, memory_order_relaxed);
	memset((void *)prof.paged, 0, sizeof(prof.paged));
	prof.index_stale = true;
	atomic_store_explicit(&prof.scanning, false, memory_order_relaxed);
	atomic_store_explicit(&prof.setup, SETUP_NONE, memory_order_relaxed);
}

/* The profile's part in the writer's life, registered before the writer
 * starts. */
__attribute__((constructor(MSTAT_HOOKS_PRIORITY))) static MSTAT_START_TEXT void
register_hooks(void)
{
	static const struct mstat_writer_hooks hooks = {
		.start = on_start,
		.segment = on_segment,
		.fork_child = on_fork_child,
	};

	mstat_start_hooks(&hooks);
}
