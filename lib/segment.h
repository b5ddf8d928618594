/* SPDX-License-Identifier: MIT */
/*
 * segment.h - the target's side of a segment: create, reserve slots,
 * publish, retire.
 *
 * Runs inside the host process, during its start-up, a thread's first
 * count, fork or exit, possibly from within malloc: never aborts, never
 * allocates, never uses stdio.
 *
 * The writer never trusts the segment's header for its own layout: a
 * reader may write there (it maps the control page read-write).  What the
 * writer needs is copied here, in process memory, when the segment is
 * made.
 */
#ifndef MSTAT_LIB_SEGMENT_H
#define MSTAT_LIB_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/layout.h"
#include "shm/name.h"
#include "shm/owner.h"

struct mstat_segment {
	struct mstat_shm_header *hdr; /* the whole segment, mapped read-write */
	uint64_t size;
	int fd;                /* kept open: it holds the owner lock */
	pid_t pid;             /* of the process that made it */
	uint32_t slots_offset; /* private copies of the layout */
	uint32_t slot_size;
	uint32_t slot_count;
	struct mstat_reaped id; /* who made it: pid, start time, pid namespace */
	bool named;            /* linked as shm_name in /dev/shm */
	char shm_name[MSTAT_SHM_NAME_MAX];
};

/*
 * Creates this process's segment, a file of /dev/shm without a name yet
 * (sparse; the control page, the class table and slot 0 get their pages
 * now, so a full /dev/shm fails here, never later as SIGBUS), takes its
 * owner lock, maps it and fills in its identity, everything but `magic`.
 * `attached_ns`: when the library was injected into the process, 0 if it
 * was not.  0, or -errno with a reason in `err`.
 */
int mstat_segment_create(struct mstat_segment *seg, const char *name,
			 uint32_t slot_count, uint32_t writer_mode,
			 uint64_t attached_ns, char *err, size_t errlen);

/*
 * Names the published segment in /dev/shm, where readers find it.  A name
 * taken by a live process, or by a file the library did not make, is
 * left to it and the next suffix is tried; a dead process's segment is
 * removed, and if it was this process's image before an exec, marked
 * so.  0, or -errno with a reason in `err` (the segment is then still
 * unnamed: mstat_segment_forget() drops it).
 */
int mstat_segment_name(struct mstat_segment *seg, char *err, size_t errlen);

/* Gives slot `i` its pages: 0, or -errno (-ENOSPC: /dev/shm is full). */
int mstat_segment_reserve(const struct mstat_segment *seg, uint32_t i);

/* Makes the segment valid for readers; call once its counters are set,
 * before naming it. */
void mstat_segment_publish(struct mstat_segment *seg);

/* A descriptor of the segment of its own (close-on-exec), to hand to
 * another process (shm/report.h): not seg->fd, whose open file holds the
 * owner lock, and would keep it held in the other process.  -errno if
 * the name cannot be opened. */
int mstat_segment_reopen(const struct mstat_segment *seg);

/* Marks the target exiting, with the time and the slots whose update the
 * exit could not wait for (`cut`), and unlinks the name.  The mapping and
 * the owner lock stay until the process ends: readers that have it open
 * see the counts go on to the end of the exit, and it is `exiting`, not
 * gone. */
void mstat_segment_retire(struct mstat_segment *seg, uint32_t cut);

/* An exec() begins (`execing`): marks a running segment EXECED; or it
 * failed: marks it RUNNING again.  A segment whose exit has begun stays
 * EXITING. */
void mstat_segment_exec(struct mstat_segment *seg, bool execing);

/* The exit has run to its end: exit_ns says when. */
void mstat_segment_ended(struct mstat_segment *seg);

/* Unmaps and closes a segment: one never named (it is gone with its
 * descriptor), or one inherited from the parent (in a fork child: the
 * parent's owner lock is the parent's, and stays held). */
void mstat_segment_forget(struct mstat_segment *seg);

/* A segment inherited from the parent, let go of in a fork child: its
 * descriptor closed at once (it would hold the parent's owner lock), its
 * mapping kept in `map` for mstat_segment_unmap() to unmap later.  A
 * child that exec()s or exits at once makes no system call for it, and
 * binds no munmap() of its own (lazy binding, done again in every
 * child, is a symbol lookup and a few page faults a fork). */
struct mstat_mapping {
	void *addr;
	uint64_t size;
};
void mstat_segment_let_go(struct mstat_segment *seg, struct mstat_mapping *map);
void mstat_segment_unmap(struct mstat_mapping *map);

static inline struct mstat_shm_slot *
mstat_segment_slot(const struct mstat_segment *seg, uint32_t i)
{
	return (struct mstat_shm_slot *)((unsigned char *)seg->hdr +
					 seg->slots_offset +
					 (size_t)i * seg->slot_size);
}

#endif /* MSTAT_LIB_SEGMENT_H */
