/* SPDX-License-Identifier: MIT */
/*
 * memory.h - a process's resident memory in parts that add up to its
 * RSS, read from outside: what of it is the live heap, what the allocator
 * holds free, its overhead, memory that is not the heap's, files, shared
 * memory, and the library's own (docs/memory.md says what each part means
 * and how it is measured).
 *
 * Two steps.  mstat_memory_look() reads what the kernel says of the
 * process (/proc/<pid>/status, maps and pagemap, and for glibc a few
 * words of its memory: the headers of its mmapped chunks), and takes the
 * allocator's own figures from its segment (shm/reader.h); it neither
 * stops the process nor takes a lock of its allocator.  Then
 * mstat_memory_split(), pure, makes the parts of what was found and the
 * counters' live bytes: the parts add up to `rss`, which is VmRSS as the
 * status said it, exactly, whatever was found.
 */
#ifndef MSTAT_CORE_MEMORY_H
#define MSTAT_CORE_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/procfs.h"
#include "shm/reader.h"

/* The parts, in their order everywhere: X(ENUM, name, help). */
#define MSTAT_MEMORY_PARTS(X)                                                 \
	X(LIVE, live, "the counters' live bytes, as far as they are "         \
		      "resident")                                             \
	X(ALLOCATOR_FREE, allocator_free, "resident memory the allocator "    \
		"holds and has not handed out: freed blocks, fragmentation, " \
		"its arenas' free space, its caches")                         \
	X(ALLOCATOR_OVERHEAD, allocator_overhead, "the allocator's own "      \
		"resident bytes: block headers (glibc), metadata (jemalloc, " \
		"tcmalloc)")                                                  \
	X(NOT_HEAP, not_heap, "anonymous memory the allocator did not hand "  \
		"out: the program's own mappings, thread stacks, its data")   \
	X(FILE, file, "pages of mapped files: code, libraries, files the "    \
		      "program mapped")                                       \
	X(SHMEM, shmem, "shared memory, but the library's segment")           \
	X(LIBRARY, library, "the library's own: its segment, and its own "    \
		"blocks")

enum mstat_memory_part {
#define MSTAT_X(e, n, h) MSTAT_MEMORY_##e,
	MSTAT_MEMORY_PARTS(MSTAT_X)
#undef MSTAT_X
	MSTAT_MEMORY_PART_COUNT
};

/* The name of a part ("live"), or "?". */
const char *mstat_memory_part_name(enum mstat_memory_part p);

/* How the allocator's memory was told from the rest. */
enum mstat_memory_source {
	/* Not at all (the process's maps were not ours to read; an
	 * allocator that has not answered, or cannot): live bytes are
	 * counted in `live` as far as anonymous memory holds them, and the
	 * rest of it is `not_heap`, the allocator's free memory included. */
	MSTAT_MEMORY_NONE,
	/* glibc's heap found from outside: its brk heap, its arenas' heaps,
	 * its mmapped chunks (their headers read from the process). */
	MSTAT_MEMORY_GLIBC,
	/* The same without reading the process's memory (no ptrace access
	 * to it): mmapped chunks and arena heaps grown to their whole 64
	 * MiB are not found, and count as not_heap. */
	MSTAT_MEMORY_GLIBC_PARTIAL,
	/* The allocator's own figures (jemalloc, tcmalloc), as it answered
	 * last. */
	MSTAT_MEMORY_ALLOCATOR,
	MSTAT_MEMORY_SOURCE_COUNT
};

/* "glibc", "glibc-partial", "allocator", "none". */
const char *mstat_memory_source_name(enum mstat_memory_source s);
/* The source a word names, or -1. */
int mstat_memory_source_parse(const char *s);
/* "glibc", "jemalloc", "tcmalloc", "other", or NULL if not known. */
const char *mstat_memory_allocator_name(uint32_t allocator);
/* The allocator a word names (MSTAT_ALLOCATOR_UNKNOWN for NULL or ""),
 * or -1. */
int mstat_memory_allocator_parse(const char *s);

/* A process's memory, as rows show it. */
struct mstat_memory {
	uint64_t rss;          /* VmRSS: the sum of the parts */
	uint64_t part[MSTAT_MEMORY_PART_COUNT];
	/* Live bytes the counters count that no resident page holds (pages
	 * of a live block never touched, or swapped out): not a part. */
	uint64_t live_not_resident;
	uint32_t allocator;    /* enum mstat_allocator */
	uint32_t source;       /* enum mstat_memory_source */
	uint64_t time_ns;      /* CLOCK_REALTIME of the look */
	uint64_t allocator_ns; /* CLOCK_REALTIME of the allocator's figures
				* used, 0 if none */
};

/* What a look at a process found, in bytes. */
struct mstat_memory_found {
	struct mstat_proc_rss status;
	enum mstat_memory_source source;
	uint64_t segment;      /* its segment's pages (in RssShmem) */
	uint64_t own;          /* the pool's own part (anonymous) */
	uint64_t heap;         /* glibc: the brk heap, the arenas' heaps and
				* the pool's part for sampled blocks */
	uint64_t chunks, chunk_bytes, chunk_resident; /* glibc's mmapped
						       * chunks */
	struct mstat_alloc_info alloc;
	uint64_t probes;       /* words read from the process */
};

/* Where to look, from the segment. */
struct mstat_memory_where {
	uint32_t seg_major, seg_minor; /* the segment file's device */
	uint64_t seg_ino;
	struct mstat_alloc_info alloc;
	/* Live blocks that may be glibc mmapped chunks (of 128 KiB or
	 * more): past a mapping that holds none, pages are looked at for
	 * chunks until this many are found. */
	uint64_t large_objects;
};

/* Reads what the kernel says of process `pid` (in this process's pid
 * namespace) and its memory into *f: 0, or -errno if not even its status
 * could be read (it is gone).  What cannot be read beyond the status is
 * said by f->source. */
int mstat_memory_look(pid_t pid, const struct mstat_memory_where *w,
		      struct mstat_memory_found *f);

/* The parts of what was found, given the counters' live bytes and
 * objects; `time_ns` is when (CLOCK_REALTIME). */
void mstat_memory_split(const struct mstat_memory_found *f, uint64_t live_bytes,
			uint64_t live_objects, uint64_t time_ns,
			struct mstat_memory *m);

/*
 * What a read went by, to tell at the next whether anything moved: the
 * process's resident pages and those of files and shared memory
 * (/proc/<pid>/statm), the counters' live bytes and objects, the
 * allocator's answer.  Zero: nothing read yet.
 */
struct mstat_memory_mark {
	uint64_t resident, shared;
	uint64_t live_bytes, live_objects;
	uint64_t answer_ns;
	unsigned same;         /* reads in a row that found nothing moved */
};
/* A full look at least every this many reads, whatever moved. */
#define MSTAT_MEMORY_SAME_MAX 8u

/*
 * Both steps for a process that counts into reader `r`'s segment, at
 * `pid` in this process's pid namespace, whose counters read `snap` at
 * the same tick: its allocator asked for its figures (if it answers:
 * jemalloc, tcmalloc) for a later read, the look, and the parts into *m.
 * If `mark` says that *m was read from the same process and that nothing
 * it went by has moved since, *m stands, with the time of this read
 * (/proc/<pid>/statm alone is read: a tenth of a look), but after
 * MSTAT_MEMORY_SAME_MAX such reads.  Returns 1 for a full look, 0 for a
 * read that found nothing moved, or -errno (nothing could be read: *m
 * and *mark are untouched).
 */
int mstat_memory_read(struct mstat_reader *r, pid_t pid,
		      const struct mstat_snapshot *snap,
		      struct mstat_memory_mark *mark, struct mstat_memory *m);

#endif /* MSTAT_CORE_MEMORY_H */
