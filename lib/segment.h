/* SPDX-License-Identifier: MIT */
/*
 * segment.h - the target's side of a segment: create, publish, retire.
 *
 * Runs inside the host process, during its start-up, fork or exit, possibly
 * from within malloc: never aborts, never allocates, never uses stdio.
 */
#ifndef MSTAT_LIB_SEGMENT_H
#define MSTAT_LIB_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "name.h"

struct mstat_segment {
	struct mstat_shm_header *hdr; /* the whole segment, mapped read-write */
	uint64_t size;
	char shm_name[MSTAT_SHM_NAME_MAX];
};

/* Creates, sizes (pages allocated now: a full /dev/shm fails here, never
 * later as SIGBUS) and maps this process's segment, and fills in its
 * identity, everything but `magic`.  0, or -errno with a reason in `err`. */
int mstat_segment_create(struct mstat_segment *seg, const char *name,
			 uint32_t slot_count, uint32_t writer_mode, char *err,
			 size_t errlen);

/* Makes the segment visible to readers; call once its counters are set. */
void mstat_segment_publish(struct mstat_segment *seg);

/* Marks the target exiting and, if `unlink_name`, unlinks the name.  The
 * mapping stays: what the process frees from here to its end is still
 * counted, and readers that have it open see it.  A name left in place is
 * for mstat-run, which reads the final totals after the process has ended
 * and then unlinks it. */
void mstat_segment_retire(struct mstat_segment *seg, bool unlink_name);

/* Unmaps a segment inherited from the parent (in a fork child). */
void mstat_segment_forget(struct mstat_segment *seg);

static inline struct mstat_shm_slot *
mstat_segment_slot(const struct mstat_segment *seg, uint32_t i)
{
	return (struct mstat_shm_slot *)((unsigned char *)seg->hdr +
					 seg->hdr->slots_offset +
					 (size_t)i * seg->hdr->slot_size);
}

#endif /* MSTAT_LIB_SEGMENT_H */
