/* SPDX-License-Identifier: MIT */
/*
 * layout.h - the shared-memory segment, as both sides see it.
 *
 * Not a public API: this is the wire format between a target process (the
 * writer, lib/) and its readers (shm/reader.c, observer/).  It holds no code
 * and no pointers, only sizes and offsets, so that two programs built apart
 * agree on it byte for byte.  It depends on nothing above it.  The protocol
 * that runs over it is described in docs/design.md; the accesses named
 * (A)..(R) there are marked where the fields are declared.
 *
 * A segment is one POSIX shm object, /dev/shm/mstat.<pid>.<starttime>
 * (or with a suffix .1 ... .7 when that name is taken by a live process):
 *
 *   offset 0                 control page (struct mstat_shm_header)
 *   offset MSTAT_PAGE        size-class table: class_count x uint64_t
 *   offset slots_offset      slot_count x struct mstat_shm_slot, each a
 *                            whole number of pages
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
 * Readers map the control page read-write (they write only `epoch` and
 * `synced_epoch`) and everything else read-only.
 */
#ifndef MSTAT_SHM_LAYOUT_H
#define MSTAT_SHM_LAYOUT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mstatshm_counters.h"
#include "sizeclass.h"

/* "MSTATSHM" in memory order on a little-endian machine. */
#define MSTAT_SHM_MAGIC UINT64_C(0x4d48535441545348)
/* Any change to this file bumps the major version; readers refuse a major
 * they do not know.  1: dense, slots of any size, liveness by pid.
 * 2: sparse, slots of whole pages, liveness by the owner lock.
 * 3: four generations chosen by epoch % 4, counters generation-major,
 *    requested bytes in the slot's first line. */
#define MSTAT_SHM_VERSION_MAJOR 3
#define MSTAT_SHM_VERSION_MINOR 0 /* readers accept any minor */

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

/* Target lifecycle, in `state`. */
enum mstat_target_state {
	MSTAT_STATE_RUNNING = 1,
	MSTAT_STATE_EXITING = 2, /* exit began: counts are final, the name is
				  * unlinked; the process may still run */
	MSTAT_STATE_EXECED = 3,  /* replaced by exec(): the new image, same
				  * pid and start time, set this and made a
				  * segment of its own */
};

/*
 * Counters: the lists MSTAT_CLASS_COUNTERS and MSTAT_TOTAL_COUNTERS of
 * mstatshm_counters.h.  Every size class has one row of counters in each
 * generation; the per-process totals (requested bytes) are kept in the
 * slot's head, one per generation.  A sum (shm/sum.h) has one more row,
 * after the last class, for the totals.
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
/* Counters of one generation: a row of MSTAT_ROW_COUNTERS per class. */
#define MSTAT_GEN_COUNTERS(classes) ((classes) * MSTAT_ROW_COUNTERS)
#define MSTAT_ROWS(classes) ((classes) + 1u) /* of a sum: classes + totals */
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

	/* Written by the target while it runs; readers only load them. */
	alignas(MSTAT_CACHELINE) _Atomic uint32_t state; /* mstat_target_state */
	_Atomic uint32_t threads;    /* threads holding a slot of their own */
	_Atomic uint32_t slots_used; /* (F) slots with pages, ever used */
	_Atomic uint32_t overflowed; /* threads that found every slot taken */
	/* Set with state EXITING: the exit stops counting and waits for the
	 * updates in flight; any seq still odd after that belongs to an
	 * update that added nothing, and the counts are whole, unless the
	 * wait gave up on `exit_cut` slots (stopped threads). */
	_Atomic uint32_t exit_cut;
	uint32_t reserved1;
	_Atomic uint64_t exit_ns;    /* CLOCK_REALTIME when exiting began */

	/* The only words a reader writes.  Own cache line: every writer loads
	 * `epoch` on every update, and nothing else here changes often. */
	alignas(MSTAT_CACHELINE) _Atomic uint64_t epoch; /* (B) (D) */
	_Atomic uint64_t synced_epoch; /* (G) last epoch whose handshake ended */
};

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
	/* acc[gen][class][counter] */
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
#define MSTAT_CLASSES_OFFSET MSTAT_PAGE
#define MSTAT_SLOTS_OFFSET(classes)                                          \
	MSTAT_ALIGN_UP(MSTAT_CLASSES_OFFSET + (classes) * sizeof(uint64_t),  \
		       MSTAT_PAGE)
#define MSTAT_SEGMENT_SIZE(classes, slots)                                   \
	(MSTAT_SLOTS_OFFSET(classes) + (uint64_t)(slots) * MSTAT_SLOT_SIZE(classes))

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "atomic counters are plain words");
_Static_assert(sizeof(struct mstat_shm_header) <= MSTAT_PAGE,
	       "the header fits the control page");
_Static_assert(offsetof(struct mstat_shm_header, epoch) % MSTAT_CACHELINE == 0,
	       "epoch starts its own cache line");
_Static_assert(offsetof(struct mstat_shm_header, name) == 88,
	       "identity fields are packed without holes");
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
_Static_assert(MSTAT_SLOT_SIZE(MSTAT_CLASS_COUNT) == 5 * MSTAT_PAGE,
	       "a slot is 20 KiB: what a thread costs in /dev/shm");

#endif /* MSTAT_SHM_LAYOUT_H */
