/* SPDX-License-Identifier: MIT */
/*
 * layout.h - the shared-memory segment, as both sides see it.
 *
 * Not a public API: this is the wire format between a target process (the
 * writer, lib/) and its readers (shm/reader.c, core/).  It holds no code
 * and no pointers, only sizes and offsets, so that two programs built apart
 * agree on it byte for byte.  It depends on nothing above it.  The protocol
 * that runs over it is described in docs/design.md; the accesses named
 * (A)..(R) there are marked where the fields are declared.
 *
 * A segment is one POSIX shm object, /dev/shm/mstat.<pid>.<starttime>
 * (or with a suffix .1 ... .7 when that name is taken by a live process):
 *
 *   offset 0                 control page (struct mstat_shm_header; at
 *                            MSTAT_ALLOC_OFFSET, struct mstat_shm_alloc)
 *   offset MSTAT_PAGE        size-class table: class_count x uint64_t
 *   offset slots_offset      slot_count x struct mstat_shm_slot, each a
 *                            whole number of pages
 *   offset profile_offset    the sampled heap profile (struct
 *                            mstat_shm_profile, then its stack table,
 *                            frame pool and module list), profile_size
 *                            bytes, a whole number of pages
 *
 * The object is sparse: the control page, the class table and slot 0 have
 * pages when it is created, and a thread's slot gets its pages when the
 * thread claims it.  Nobody touches a slot at or beyond `slots_used`: its
 * pages may not exist.
 *
 * Liveness: the target holds an open-file-description read lock
 * (F_OFD_SETLK, F_RDLCK) on byte MSTAT_OWNER_LOCK_BYTE for as long as it
 * lives; the kernel drops it when the process dies, whatever the way.
 * Whoever can take a write lock on that byte knows the owner is gone.
 * Readers serialise among themselves with flock() on the whole file, a
 * lock of another kind that never conflicts with it.
 *
 * Readers map the control page read-write (they write only `epoch`,
 * `synced_epoch`, `sample_request` and the allocator's `request`) and
 * everything else read-only.
 */
#ifndef MSTAT_SHM_LAYOUT_H
#define MSTAT_SHM_LAYOUT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <mstatshm_counters.h>
#include "shm/sizeclass.h"

/* "MSTATSHM" in memory order on a little-endian machine. */
#define MSTAT_SHM_MAGIC UINT64_C(0x4d48535441545348)
/* Any change to this file bumps the major version; readers refuse a major
 * they do not know.  1: dense, slots of any size, liveness by pid.
 * 2: sparse, slots of whole pages, liveness by the owner lock.
 * 3: four generations chosen by epoch % 4, counters generation-major,
 *    requested bytes in the slot's first line.
 * 4: the sampled heap profile: its region after the slots, its geometry
 *    and the sampling words in the header.
 * 5: chunk rows after the class rows of each generation.
 * A minor version keeps every field where it was, and gives meaning to
 * words an older one left reserved or never wrote (0): readers accept
 * any minor, and ignore what they do not know.
 * 5.1: a stack entry's weights, and its bytes counted as the slots count
 *      them (requested bytes in 5.0; a 5.0 reader takes them for those,
 *      and unbiases blocks with slack a little low: struct
 *      mstat_shm_stack); the header's `exit_flags`.
 * 5.2: the header's `killed_s` (reserved in 5.1): when a remover first
 *      found the owner killed.  Written by removers only, after the
 *      owner's death, so any segment of 5.x may get it; a reader of 5.1
 *      ignores it, and a remover of 5.1 removes a killed segment at once.
 * 5.3: the allocator's words (struct mstat_shm_alloc) at
 *      MSTAT_ALLOC_OFFSET of the control page, past the header: zeros in
 *      a segment of 5.2 or before, which read as an allocator not known
 *      that never answered; a reader of 5.2 never looks there.
 * 6: the lifetimes of sampled blocks: the profile's tick counter in its
 *    head, a lifetime histogram per stack entry (whose sum is what a
 *    stack's `free_weight` held, now reserved) and a birth word per live
 *    sample, after the module list; 5.3's allocator words, in every
 *    segment.
 * 6.1: a stack entry's objects, the blocks its samples stand for, in
 *      the two words 6.0 left reserved (struct mstat_shm_stack): a 6.0
 *      reader takes a stack's objects for its weight over its average
 *      sample, as before, too few for a stack of many sizes.
 * 6.2: the attach (mstat-attach): the header's `attached_ns`, in the
 *      padding after `name` (0 in a segment of 6.1 or before: not
 *      attached), and the prior rows, a line per generation after the
 *      last generation of each slot, in the room its last page leaves
 *      (the slot's size is what it was), noted by a touched bit no class
 *      row has.  A reader of 6.1 or before reads neither: it takes an
 *      attached process for one counted from its start (its counts are
 *      right, of what it did since the attach) and sees nothing of the
 *      blocks made before. */
#define MSTAT_SHM_VERSION_MAJOR 6
#define MSTAT_SHM_VERSION_MINOR 2 /* readers accept any minor */

#define MSTAT_SHM_DIR "/dev/shm"
#define MSTAT_SHM_PREFIX "mstat."   /* shm names: mstat.<pid>.<starttime> */
#define MSTAT_SHM_SUFFIXES 8u        /* the name, then .1 ... .7; then a
					* random .<n> (shm/name.h) */
#define MSTAT_PAGE 4096u             /* the unit of a segment's parts */
#define MSTAT_CACHELINE 64u
#define MSTAT_NAME_MAX 64u           /* bytes of the name, with its NUL */
#define MSTAT_SLOTS_MIN 2u           /* the shared slot and one thread slot */
#define MSTAT_SLOTS_MAX 4096u
#define MSTAT_SLOTS_DEFAULT 4096u    /* capacity costs address space only */
#define MSTAT_OWNER_LOCK_BYTE 0      /* the byte the owner lock covers */

/* Slot 0 is shared: threads beyond the slot capacity, threads that already
 * gave their slot back, and everything counted before the segment existed.
 * Its writers serialise on a process-local lock; readers never take it. */
#define MSTAT_SHARED_SLOT 0u

/* Writer modes: how a writer orders its odd `seq` store before its `epoch`
 * load (StoreLoad).  See docs/design.md, "Fencing modes". */
enum mstat_writer_mode {
	MSTAT_MODE_FENCED = 1,     /* the odd store is an xchg */
	MSTAT_MODE_MEMBARRIER = 2, /* compiler barrier; readers call membarrier */
};

/* exit_flags */
#define MSTAT_EXIT_BUSY 1u
#define MSTAT_EXIT_DONE 2u

/* Target lifecycle, in `state`. */
enum mstat_target_state {
	MSTAT_STATE_RUNNING = 1,
	MSTAT_STATE_EXITING = 2, /* exit began: the name is unlinked; the
				  * exiting thread counts on to its end
				  * (exit_flags) */
	MSTAT_STATE_EXECED = 3,  /* replaced by exec(): the new image, same
				  * pid and start time, set this and made a
				  * segment of its own */
};

/*
 * Counters: the lists MSTAT_CLASS_COUNTERS and MSTAT_TOTAL_COUNTERS of
 * mstatshm_counters.h.  Every size class has one row of counters in each
 * generation; the per-process totals (requested bytes) are kept in the
 * slot's head, one per generation.  A sum (shm/sum.h) has two more rows,
 * after the last class: the totals, and the prior row (below).
 */
enum mstat_class_counter {
#define MSTAT_X(e, f, h) MSTAT_C_##e,
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	MSTAT_ROW_COUNTERS
};

enum mstat_total_counter {
#define MSTAT_X(e, f, h) MSTAT_T_##e,
	MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
	MSTAT_TOTAL_COUNTER_COUNT
};

/* Generations of cumulative counters per slot, chosen by epoch % 4: a
 * mask, where % 3 took a multiply and six more instructions on every
 * update, and 2^64 is a multiple of it.  The protocol needs at least
 * three (docs/design.md); the fourth is one more that is never written
 * between two rotations. */
#define MSTAT_GENS 4
#define MSTAT_GEN_OF(epoch) ((unsigned)((epoch) & (MSTAT_GENS - 1)))
/*
 * Chunk rows: after the class rows of each generation, one row per glibc
 * chunk size 16 * k below MSTAT_CHUNK_LIMIT (k < MSTAT_CHUNKS), of two
 * counts, allocations and frees, of blocks whose usable size is
 * MSTAT_CHUNK_USABLE(k).  Their bytes are the count times that size, so
 * none is kept: a count is one add to a word the chunk's header word
 * addresses (header & ~15 is the row's byte offset).  A reader folds row
 * k into class mstat_small_class[k] (shm/sum.c).  Rows 0 and 1 stay zero:
 * no chunk is that small.
 */
#define MSTAT_CHUNK_LIMIT 1024u
#define MSTAT_CHUNKS (MSTAT_CHUNK_LIMIT / 16)
enum mstat_chunk_counter {
	MSTAT_CHUNK_ALLOCS,
	MSTAT_CHUNK_FREES,
	MSTAT_CHUNK_ROW_COUNTERS
};
#define MSTAT_CHUNK_USABLE(k) (16u * (uint64_t)(k) - 8u)
/*
 * (6.2) The prior rows: after a slot's last generation, one line per
 * generation, the counters of MSTAT_PRIOR_COUNTERS (mstatshm_counters.h),
 * then words left 0; in the room the slot's last page leaves, so that no
 * generation moves and the slot's size is what a reader of 6.1 checks.
 * Written only in a process the library was injected into
 * (mstat-attach): what it counts of the blocks made before the attach,
 * which are in no class row.  A slot that writes one sets the touched
 * bit MSTAT_PRIOR_TOUCHED, a bit no class row has (class rows are below
 * MSTAT_MAX_CLASSES), and readers read them only then, and only where
 * they fit the slot (MSTAT_PRIOR_FITS).
 */
enum mstat_prior_counter {
#define MSTAT_X(e, f, h) MSTAT_P_##e,
	MSTAT_PRIOR_COUNTERS(MSTAT_X)
#undef MSTAT_X
	MSTAT_PRIOR_COUNT
};
#define MSTAT_PRIOR_WORDS 8u /* a line */
#define MSTAT_PRIOR_TOUCHED (64u * MSTAT_TOUCHED_WORDS - 1u)
/* Counters of one generation: a row of MSTAT_ROW_COUNTERS per class, then
 * the chunk rows. */
#define MSTAT_CHUNK_COUNTERS (MSTAT_CHUNKS * MSTAT_CHUNK_ROW_COUNTERS)
#define MSTAT_GEN_COUNTERS(classes)                                          \
	((classes) * MSTAT_ROW_COUNTERS + MSTAT_CHUNK_COUNTERS)
/* Where generation g's prior row is, in a slot's counters (`acc`). */
#define MSTAT_PRIOR_OFFSET(classes, g)                                       \
	((size_t)MSTAT_GENS * MSTAT_GEN_COUNTERS(classes) +                  \
	 (size_t)(g) * MSTAT_PRIOR_WORDS)
/* Rows of a sum (shm/sum.h), and of counts kept in process memory
 * (lib/rows.h): the classes, then the totals, then the prior row. */
#define MSTAT_ROWS(classes) ((classes) + 2u)
#define MSTAT_TOTALS_ROW(classes) (classes)
#define MSTAT_PRIOR_ROW(classes) ((classes) + 1u)
#define MSTAT_TOUCHED_WORDS 3u /* bitmap of rows a slot ever wrote */

/*
 * The control page.  Fields up to `name` are written once by the target
 * before it publishes `magic`, and never again.
 */
struct mstat_shm_header {
	_Atomic uint64_t magic;  /* (P) release, last store of creation */
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size;    /* sizeof(struct mstat_shm_header) */
	uint64_t segment_size;   /* bytes of the whole object */
	uint32_t class_count;    /* rows = class_count + 1 */
	uint32_t row_counters;   /* MSTAT_ROW_COUNTERS */
	uint32_t classes_offset; /* uint64_t upper bound of each class */
	uint32_t slots_offset;   /* a multiple of MSTAT_PAGE */
	uint32_t slot_size;      /* a multiple of MSTAT_PAGE */
	uint32_t slot_count;     /* including the shared slot 0 */
	uint32_t writer_mode;    /* enum mstat_writer_mode */
	int32_t pid;             /* in the pid namespace `pid_ns` */
	uint32_t uid;
	uint32_t reserved0;
	uint64_t start_time;     /* /proc/<pid>/stat field 22, clock ticks */
	uint64_t created_ns;     /* CLOCK_REALTIME */
	uint64_t pid_ns;         /* inode of /proc/self/ns/pid, 0 if unknown:
				  * `pid` means something to a reader whose
				  * namespace has the same inode */
	char name[MSTAT_NAME_MAX]; /* NUL-terminated */
	/* (6.2) CLOCK_REALTIME when the library, injected into the running
	 * process (mstat-attach), began to count; 0 in a process counted
	 * from its start, and in a segment of 6.1 or before (padding then).
	 * The counters then hold what was made since, and the prior rows
	 * what became of the blocks made before. */
	uint64_t attached_ns;

	/* Written by the target while it runs; readers only load them. */
	alignas(MSTAT_CACHELINE) _Atomic uint32_t state; /* mstat_target_state */
	_Atomic uint32_t threads;    /* threads holding a slot of their own */
	_Atomic uint32_t slots_used; /* (F) slots with pages, ever used */
	_Atomic uint32_t overflowed; /* threads that found every slot taken */
	/* Set with state EXITING: the exit stops every other thread's
	 * counting and waits for the updates in flight; any seq still odd
	 * after that belongs to an update that added nothing, and the counts
	 * are whole, unless the wait gave up on `exit_cut` slots (stopped
	 * threads). */
	_Atomic uint32_t exit_cut;
	/* (5.1) The exiting thread's: it counts on, through the shared slot,
	 * to the process's end.  MSTAT_EXIT_BUSY while it is inside an
	 * update; MSTAT_EXIT_DONE once its exit has run to its end (what
	 * follows is exit_group()).  A process gone after EXITING without
	 * DONE was killed during its exit; with BUSY, inside an update. */
	_Atomic uint32_t exit_flags;
	_Atomic uint64_t exit_ns;    /* CLOCK_REALTIME when exiting began;
				      * again when it ended (DONE) */

	/* The only words a reader writes.  Own cache line: every writer loads
	 * `epoch` on every update, and nothing else here changes often. */
	alignas(MSTAT_CACHELINE) _Atomic uint64_t epoch; /* (B) (D) */
	_Atomic uint64_t synced_epoch; /* (G) last epoch whose handshake ended */

	/* The sampled heap profile (docs/design.md, "Heap profile").  Its
	 * geometry is written once, with the identity above. */
	alignas(MSTAT_CACHELINE) uint32_t profile_offset; /* a multiple of MSTAT_PAGE */
	uint32_t profile_size;    /* bytes, a multiple of MSTAT_PAGE */
	uint32_t stack_capacity;  /* entries of the stack table, a power of two */
	uint32_t frame_capacity;  /* uint64_t words of the frame pool */
	uint32_t module_capacity; /* entries of the module list */
	/* (5.2) 0 while nobody has found the owner gone without exiting;
	 * then 1 + the whole seconds from `created_ns` to when the first
	 * remover did (CLOCK_REALTIME; 1 if the clock said earlier).
	 * Written once, by a remover that holds the write lock on the owner
	 * byte (so by one, after the owner's death, never by the target);
	 * relaxed: a time, ordered with nothing (shm/owner.c). */
	_Atomic uint32_t killed_s; /* (Z) */
	/* The mean sampling interval in bytes the target applies now, 0 when
	 * sampling is off; written by the target on its sampling path,
	 * informative (each thread applies a change at its next sample). */
	_Atomic uint64_t sample_bytes;
	/* A reader's request (mstat-top --sample-bytes): 0 for none, else
	 * MSTAT_SAMPLE_REQUEST | the interval (0: off).  Read by the target
	 * on its sampling path only, and bounded there (MSTAT_SAMPLE_MAX). */
	_Atomic uint64_t sample_request; /* (U) */
};

/*
 * (5.3) What the library tells readers of the allocator behind it, on the
 * control page at MSTAT_ALLOC_OFFSET: outside struct mstat_shm_header,
 * whose size every reader of 5.x checks against its own, so that no
 * field of the header moves (docs/memory.md says what readers make of
 * it).
 *
 * Written once, before `magic`: which allocator serves the process's
 * malloc, and the geometry of the library's own pool (lib/pool.h: the
 * blocks sampled objects move to, then, from `pool_own_offset`, the
 * library's own blocks).  `pool_base` is where the pool is once it is
 * mapped, 0 before: the target writes it on its sampling path, relaxed (a
 * value, publishing nothing).
 *
 * The allocator's own figures, for an allocator whose memory cannot be
 * told from outside (jemalloc, tcmalloc), are asked for: a reader adds 1
 * to `request` (N); the target answers at its next sampling decision,
 * off its allocations' fast path (lib/allocstats.h), by asking its
 * allocator and writing the figures between two stores of `seq`, odd
 * then even (O): a reader that loads `seq` even and the same after the
 * figures has figures of one answer.  `answered` is the request the
 * answer saw.  The target reads `request` only to compare it with the
 * last one it answered: a reader's value is never an index or a size.
 */
#define MSTAT_ALLOC_OFFSET 2048u

enum mstat_allocator {
	MSTAT_ALLOCATOR_UNKNOWN = 0, /* a segment of 5.2 or before */
	MSTAT_ALLOCATOR_GLIBC = 1,
	MSTAT_ALLOCATOR_JEMALLOC = 2,
	MSTAT_ALLOCATOR_TCMALLOC = 3,
	MSTAT_ALLOCATOR_OTHER = 4,   /* none the library knows how to ask */
};

struct mstat_shm_alloc {
	uint32_t allocator;        /* enum mstat_allocator */
	uint32_t pool_own_offset;  /* where the pool's own part begins */
	uint64_t pool_size;        /* bytes of the pool's reservation */
	_Atomic uint64_t pool_base; /* 0 until the pool is mapped */

	/* The only word of it a reader writes.  Own cache line. */
	alignas(MSTAT_CACHELINE) _Atomic uint64_t request; /* (N) */

	/* The answer. */
	alignas(MSTAT_CACHELINE) _Atomic uint64_t seq;     /* (O) */
	_Atomic uint64_t answered;  /* the `request` it answers */
	_Atomic uint64_t answer_ns; /* CLOCK_REALTIME it was made */
	_Atomic uint64_t cost_ns;   /* the asking, in the thread's CPU time */
	/* The allocator's own figures, in bytes, as it counts them: */
	_Atomic uint64_t resident;  /* its pages, as far as it knows them
				     * resident: blocks handed out, free ones
				     * it keeps, its metadata */
	_Atomic uint64_t allocated; /* handed out and not freed */
	_Atomic uint64_t metadata;  /* its own structures */
	_Atomic uint64_t retained;  /* mapped and given back to the system:
				     * not resident (informative) */
};

/* Where `killed_s` is, for tools that read it from outside (tests). */
#define MSTAT_KILLED_S_OFFSET 340u
_Static_assert(offsetof(struct mstat_shm_header, killed_s) ==
		       MSTAT_KILLED_S_OFFSET, "killed_s moved");

#define MSTAT_SAMPLE_REQUEST (UINT64_C(1) << 63)
#define MSTAT_SAMPLE_DEFAULT (512u * 1024u)  /* mean bytes between samples */
#define MSTAT_SAMPLE_MAX (UINT64_C(1) << 40) /* larger intervals are clamped */
#define MSTAT_STACK_DEPTH 64u               /* frames kept per stack */
#define MSTAT_STACKS 2048u                  /* stack table entries */
#define MSTAT_FRAMES 32768u                 /* frame pool words */
#define MSTAT_MODULES 256u                  /* module list entries */
#define MSTAT_MODULE_PATH 240u              /* bytes of a path, with its NUL */
#define MSTAT_BUILD_ID_MAX 20u              /* bytes of a GNU build id kept */
/* What a reader accepts: bounds, so that no size computed from them wraps. */
#define MSTAT_STACKS_LIMIT (1u << 16)
#define MSTAT_FRAMES_LIMIT (1u << 20)
#define MSTAT_MODULES_LIMIT (1u << 12)
/* Live sampled blocks a target remembers at most, each with a birth word
 * (struct mstat_shm_profile). */
#define MSTAT_LIVE_SAMPLES 32768u
/* Lifetime buckets: bucket b holds samples freed [2^b, 2^(b+1)) ticks
 * after they were made (bucket 0: under 2 ticks), the last 2^46 ticks and
 * more: from under a nanosecond to hours at the rates counters run at
 * (about 25 MHz to 5 GHz). */
#define MSTAT_LIFETIMES 47u
#define MSTAT_BIRTH_SHIFT 10u       /* a birth word counts 2^10 ticks */
#define MSTAT_BIRTH_BITS 48u        /* of time, under the stack's index */

/*
 * The profile region.  Only the target writes it, on its sampling path.
 * It is sparse: the target gives each page its storage before it first
 * writes there, so a process that never samples costs no /dev/shm, and one
 * that does costs the pages of the entries it made (a hole reads as
 * zeros: an entry not written yet looks free).  Entries are appended and
 * published, never removed:
 *   - a stack entry is taken by an atomic increment of `stacks_used`,
 *     filled, then published by the release store of `depth` (J); a reader
 *     that sees depth != 0 with acquire sees its frames.  Two threads
 *     entering the same new stack at once may make two entries: readers
 *     merge them.
 *   - a stack's counters are cumulative, updated with atomic adds: an
 *     allocation adds allocs, alloc_bytes, alloc_objects and alloc_weight,
 *     the free of a sampled block the same amounts to frees, free_bytes,
 *     free_objects and its lifetime bucket (struct mstat_shm_lifetimes),
 *     each with release (K); a reader loads the frees' before the
 *     allocations', with acquire, so each is at most its allocations'.
 *   - modules [0, modules_used) are complete: each is written, then
 *     `modules_used` stored with release (L).
 *   - births: word i is the live sampled block of the target's live-table
 *     entry i (lib/profile.c), 0 if none: its stack entry's index + 1 in
 *     the top 16 bits, and in the low MSTAT_BIRTH_BITS when it became the
 *     program's, in units of 2^MSTAT_BIRTH_SHIFT ticks since `tick0`
 *     (wrapping after years).  Stored relaxed when the block is made and
 *     cleared when it is freed: a reader sees each word whole, the block
 *     live or gone, and ages only the blocks of stack entries it read.
 * `tick0` and `ns0`, the tick counter (shm/clock.h) and CLOCK_MONOTONIC
 * read together before the first sample, give a reader the counter's
 * rate: ticks since over nanoseconds since, as it reads both.
 * Counts may exceed the capacities (an entry asked for and refused):
 * readers bound them.
 */
struct mstat_shm_profile {
	_Atomic uint32_t stacks_used;  /* entries taken */
	_Atomic uint32_t frames_used;  /* frame pool words taken */
	_Atomic uint32_t modules_used; /* (L) */
	uint32_t reserved0;
	_Atomic uint64_t samples;      /* samples taken */
	_Atomic uint64_t dropped;      /* samples not kept: a table was full,
					* or /dev/shm */
	uint64_t tick0, ns0;           /* 6: written before any entry is
					* published (J) */
};

/*
 * A stack entry.  Bytes are the sizes the blocks were counted with (the
 * allocator's usable size, as the slots count them); 5.0 kept requested
 * bytes there.  Each sample stands for 1/p blocks, p being the
 * probability it had of being sampled (computed from its requested
 * bytes, which its countdown counted, and the mean interval of that
 * countdown: lib/countdown.h): its weight is its counted bytes over p,
 * rounded to a byte (5.1), and its objects 1/p, in MSTAT_OBJECT_UNITS of
 * one, rounded (6.1).  Their sums are unbiased estimates of the bytes
 * and the blocks the stack allocated and freed, whatever the interval
 * did and whatever the sizes; a free adds what its allocation added.
 */
#define MSTAT_OBJECT_UNITS 256u
struct mstat_shm_stack {
	_Atomic uint64_t alloc_objects; /* 6.1: the objects they stand for */
	_Atomic uint32_t depth;        /* (J) frames, 1..MSTAT_STACK_DEPTH */
	uint32_t frames_offset;        /* index of its first frame in the pool */
	_Atomic uint64_t allocs;       /* (K) sampled allocations */
	_Atomic uint64_t alloc_bytes;  /* their counted bytes */
	_Atomic uint64_t frees;        /* (K) sampled allocations freed */
	_Atomic uint64_t free_bytes;
	_Atomic uint64_t alloc_weight; /* 5.1: the sum of their weights */
	_Atomic uint64_t free_objects; /* (K) 6.1; 5.x: free_weight, the sum
					* of the freed weights, which in 6 the
					* lifetime buckets sum */
};

/* The lifetimes of a stack entry's freed samples (6): entry i of the
 * lifetime table is stack entry i's.  Bucket b sums the weights of its
 * samples freed [2^b, 2^(b+1)) ticks after they were made (bucket 0: 0 or
 * 1 tick; the last, 2^46 and more), each added with release (K). */
struct mstat_shm_lifetimes {
	_Atomic uint64_t freed[MSTAT_LIFETIMES];
	uint64_t reserved0;
};

/* A loaded object: the addresses of its loaded segments, its load bias
 * (a frame's file address is pc - bias), its GNU build id, its path. */
struct mstat_shm_module {
	uint64_t start, end;  /* [start, end) */
	uint64_t bias;
	uint32_t build_id_len;
	uint8_t build_id[MSTAT_BUILD_ID_MAX];
	char path[MSTAT_MODULE_PATH]; /* NUL-terminated; "" if unknown */
};

#define MSTAT_PROFILE_STACKS_OFFSET MSTAT_CACHELINE
#define MSTAT_PROFILE_FRAMES_OFFSET(stacks)                                  \
	(MSTAT_PROFILE_STACKS_OFFSET + (uint64_t)(stacks) * sizeof(struct mstat_shm_stack))
#define MSTAT_PROFILE_MODULES_OFFSET(stacks, frames)                         \
	(MSTAT_PROFILE_FRAMES_OFFSET(stacks) + (uint64_t)(frames) * sizeof(uint64_t))
#define MSTAT_PROFILE_LIFETIMES_OFFSET(stacks, frames, modules)              \
	(MSTAT_PROFILE_MODULES_OFFSET(stacks, frames) +                      \
	 (uint64_t)(modules) * sizeof(struct mstat_shm_module))
#define MSTAT_PROFILE_BIRTHS_OFFSET(stacks, frames, modules)                 \
	(MSTAT_PROFILE_LIFETIMES_OFFSET(stacks, frames, modules) +           \
	 (uint64_t)(stacks) * sizeof(struct mstat_shm_lifetimes))
#define MSTAT_PROFILE_SIZE(stacks, frames, modules)                          \
	MSTAT_ALIGN_UP(MSTAT_PROFILE_BIRTHS_OFFSET(stacks, frames, modules) + \
			       (uint64_t)MSTAT_LIVE_SAMPLES * sizeof(uint64_t), \
		       MSTAT_PAGE)

/*
 * One slot.  Only the thread owning it writes it (slot 0: whoever holds the
 * process-local shared lock).  `seq` is odd while its writer is inside an
 * update section.  Counters are cumulative: a section adds into generation
 * `epoch % 4`; the value of a counter is the sum of its four generations.
 *
 * What an update writes is on as few lines as it can be: the first line
 * holds `seq`, which every update writes twice, the requested bytes, which
 * every allocation adds to, and the touched bitmap, written once per row;
 * and counters are generation-major, so that the classes a thread uses
 * most, small and adjacent, share lines in the generation it writes
 * (two classes to a line).
 */
struct mstat_shm_slot_head {
	_Atomic uint64_t seq;     /* (A) odd store, (C) even store */
	/* Bytes callers asked for (MSTAT_T_REQUESTED_BYTES), per generation. */
	_Atomic uint64_t requested[MSTAT_GENS];
	/* Bit r set once any section of this slot wrote class row r.  Readers
	 * skip rows never written: their counters are zero in every
	 * generation. */
	_Atomic uint64_t touched[MSTAT_TOUCHED_WORDS];
	/* Second line: written when the slot changes hands. */
	alignas(MSTAT_CACHELINE) _Atomic uint32_t tid; /* current owner, 0 when
							* free; informative */
	uint32_t reserved0;
};

struct mstat_shm_slot {
	alignas(MSTAT_CACHELINE) struct mstat_shm_slot_head head;
	/* acc[gen][class][counter], then acc[gen][chunk][counter] */
	alignas(MSTAT_CACHELINE) _Atomic uint64_t acc[];
};

#define MSTAT_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
/* Bytes of one slot for a given class count: whole pages, so that a slot's
 * pages can be reserved on their own. */
#define MSTAT_SLOT_SIZE(classes)                                             \
	MSTAT_ALIGN_UP(offsetof(struct mstat_shm_slot, acc) +                \
			       MSTAT_GENS * MSTAT_GEN_COUNTERS(classes) *    \
				       sizeof(uint64_t),                     \
		       MSTAT_PAGE)
/* Whether a slot of `size` bytes has room for the prior rows (6.2) after
 * its generations of `classes` class rows. */
#define MSTAT_PRIOR_FITS(classes, size)                                      \
	(offsetof(struct mstat_shm_slot, acc) +                              \
		 MSTAT_PRIOR_OFFSET(classes, MSTAT_GENS) * sizeof(uint64_t) <= \
	 (size_t)(size))
#define MSTAT_CLASSES_OFFSET MSTAT_PAGE
#define MSTAT_SLOTS_OFFSET(classes)                                          \
	MSTAT_ALIGN_UP(MSTAT_CLASSES_OFFSET + (classes) * sizeof(uint64_t),  \
		       MSTAT_PAGE)
#define MSTAT_PROFILE_OFFSET(classes, slots)                                 \
	(MSTAT_SLOTS_OFFSET(classes) + (uint64_t)(slots) * MSTAT_SLOT_SIZE(classes))
#define MSTAT_SEGMENT_SIZE(classes, slots)                                   \
	(MSTAT_PROFILE_OFFSET(classes, slots) +                              \
	 MSTAT_PROFILE_SIZE(MSTAT_STACKS, MSTAT_FRAMES, MSTAT_MODULES))

/*
 * A header's geometry, as a writer sets it before anything else and a
 * reader checks it (validate.c): the format's version, the offsets and
 * sizes for `classes` class rows, `slots` slots and a profile region of
 * the given capacities, and the whole segment's size.  The class table
 * itself (mstat_class_max_size() of each class) is the writer's to fill.
 */
static inline void
mstat_header_geometry(struct mstat_shm_header *h, uint32_t classes, uint32_t slots,
		      uint32_t stacks, uint32_t frames, uint32_t modules)
{
	h->version_major = MSTAT_SHM_VERSION_MAJOR;
	h->version_minor = MSTAT_SHM_VERSION_MINOR;
	h->header_size = sizeof(*h);
	h->class_count = classes;
	h->row_counters = MSTAT_ROW_COUNTERS;
	h->classes_offset = MSTAT_CLASSES_OFFSET;
	h->slots_offset = MSTAT_SLOTS_OFFSET(classes);
	h->slot_size = MSTAT_SLOT_SIZE(classes);
	h->slot_count = slots;
	h->profile_offset = (uint32_t)MSTAT_PROFILE_OFFSET(classes, slots);
	h->stack_capacity = stacks;
	h->frame_capacity = frames;
	h->module_capacity = modules;
	h->profile_size = (uint32_t)MSTAT_PROFILE_SIZE(stacks, frames, modules);
	h->segment_size = (uint64_t)h->profile_offset + h->profile_size;
}

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "atomic counters are plain words");
_Static_assert(sizeof(struct mstat_shm_header) <= MSTAT_PAGE,
	       "the header fits the control page");
_Static_assert(sizeof(struct mstat_shm_header) <= MSTAT_ALLOC_OFFSET &&
		       MSTAT_ALLOC_OFFSET + sizeof(struct mstat_shm_alloc) <= MSTAT_PAGE &&
		       MSTAT_ALLOC_OFFSET % MSTAT_CACHELINE == 0,
	       "the allocator's words are on the control page, past the header");
_Static_assert(offsetof(struct mstat_shm_alloc, request) == MSTAT_CACHELINE &&
		       offsetof(struct mstat_shm_alloc, seq) == 2 * MSTAT_CACHELINE,
	       "a reader's request and the target's answer on lines of their own");
_Static_assert(offsetof(struct mstat_shm_header, epoch) % MSTAT_CACHELINE == 0,
	       "epoch starts its own cache line");
_Static_assert(offsetof(struct mstat_shm_header, name) == 88,
	       "identity fields are packed without holes");
_Static_assert(offsetof(struct mstat_shm_header, attached_ns) == 152 &&
		       offsetof(struct mstat_shm_header, state) == 192,
	       "6.2's attach time is in what was padding: nothing moved");
_Static_assert(offsetof(struct mstat_shm_slot_head, tid) == MSTAT_CACHELINE,
	       "seq, requested bytes and the touched bitmap share one cache line");
_Static_assert(offsetof(struct mstat_shm_slot, acc) == 2 * MSTAT_CACHELINE,
	       "counters start on the line after the head");
_Static_assert((MSTAT_GENS & (MSTAT_GENS - 1)) == 0 && MSTAT_GENS >= 3,
	       "at least three generations, a power of two");
_Static_assert(MSTAT_ROW_COUNTERS * sizeof(uint64_t) * 2 == MSTAT_CACHELINE,
	       "two class rows to a line, each row within one");
_Static_assert(MSTAT_CLASS_COUNT <= 64 * MSTAT_TOUCHED_WORDS,
	       "the touched bitmap covers every class row");
_Static_assert(MSTAT_CLASS_COUNT <= MSTAT_MAX_CLASSES,
	       "a snapshot holds every class");
_Static_assert((int)MSTAT_TOTAL_COUNTER_COUNT == 1,
	       "the one total, requested bytes, is kept in the head");
_Static_assert(sizeof(struct mstat_shm_profile) <= MSTAT_PROFILE_STACKS_OFFSET,
	       "the profile's head fits its first line");
_Static_assert(sizeof(struct mstat_shm_stack) == MSTAT_CACHELINE,
	       "a stack entry is one line");
_Static_assert(sizeof(struct mstat_shm_module) == 288, "a module entry is packed");
_Static_assert(sizeof(struct mstat_shm_lifetimes) == 6 * MSTAT_CACHELINE,
	       "a lifetime entry is six lines, and the births after them "
	       "aligned");
_Static_assert(MSTAT_STACKS < (1u << (64 - MSTAT_BIRTH_BITS)),
	       "a birth word holds the index + 1 of every stack entry a "
	       "writer makes");
_Static_assert((MSTAT_STACKS & (MSTAT_STACKS - 1)) == 0, "stack table: a power of two");
_Static_assert(MSTAT_SEGMENT_SIZE(MSTAT_CLASS_COUNT, MSTAT_SLOTS_MAX) < (UINT64_C(1) << 32),
	       "offsets fit 32 bits");
_Static_assert(MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT) == 6 * MSTAT_PAGE,
	       "a slot is 24 KiB: what a thread costs in /dev/shm");
_Static_assert(MSTAT_CHUNK_LIMIT == MSTAT_TABLE_MAX,
	       "every chunk row has a class in the size table");
_Static_assert(MSTAT_GEN_COUNTERS(MSTAT_CLASS_COUNT) * sizeof(uint64_t) % MSTAT_CACHELINE == 0,
	       "each generation starts a line: its chunk rows are four to a line");
_Static_assert(MSTAT_PRIOR_OFFSET(MSTAT_CLASS_COUNT, 0) * sizeof(uint64_t) % MSTAT_CACHELINE == 0 &&
		       MSTAT_PRIOR_WORDS * sizeof(uint64_t) == MSTAT_CACHELINE,
	       "each prior row is a line of its own");
_Static_assert(MSTAT_PRIOR_FITS(MSTAT_CLASS_COUNT, MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT)),
	       "the prior rows fit the room a slot's last page leaves");
_Static_assert((int)MSTAT_PRIOR_COUNT <= (int)MSTAT_ROW_COUNTERS && MSTAT_PRIOR_COUNT <= MSTAT_PRIOR_WORDS,
	       "the prior counters fit a row of a sum, and their line");
_Static_assert(MSTAT_PRIOR_TOUCHED >= MSTAT_MAX_CLASSES,
	       "the prior row's touched bit is no class row's");

#endif /* MSTAT_SHM_LAYOUT_H */
