/* SPDX-License-Identifier: MIT */
/* validate.c - checks a reader makes before trusting a segment. */
#include "shm/validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int
refuse(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int
mstat_validate_stat(const struct stat *st, uid_t uid, char *err, size_t errlen)
{
	if (S_ISLNK(st->st_mode))
		return refuse(-ELOOP, err, errlen, "is a symbolic link");
	if (!S_ISREG(st->st_mode))
		return refuse(-EINVAL, err, errlen, "is not a regular file");
	if (uid != MSTAT_UID_CALLER && st->st_uid != uid)
		return refuse(-EPERM, err, errlen, "is owned by uid %u, not %u",
			      (unsigned)st->st_uid, (unsigned)uid);
	/* Empty: what an older library's creator made before it sized it
	 * (its mode may still be the umask's); this one names its file only
	 * once whole.  Looked at again later. */
	if (st->st_size == 0)
		return refuse(-EAGAIN, err, errlen, "is empty");
	if ((st->st_mode & 07777) != 0600)
		return refuse(-EPERM, err, errlen, "has mode %04o, not 0600",
			      (unsigned)(st->st_mode & 07777));
	if (st->st_size < (off_t)MSTAT_PAGE)
		return refuse(-ENODATA, err, errlen,
			      "is %lld bytes, smaller than a header",
			      (long long)st->st_size);
	return 0;
}

int
mstat_validate_header(const struct mstat_shm_header *h, uint64_t file_size,
		      uid_t uid, char *err, size_t errlen)
{
	uint64_t magic = atomic_load_explicit(&h->magic, memory_order_relaxed);

	if (magic == 0)
		return refuse(-EAGAIN, err, errlen, "has no magic yet (0)");
	if (magic != MSTAT_SHM_MAGIC)
		return refuse(-EPROTO, err, errlen,
			      "has bad magic %#llx: not an mstat segment",
			      (unsigned long long)magic);
	if (h->version_major != MSTAT_SHM_VERSION_MAJOR)
		return refuse(-EPROTONOSUPPORT, err, errlen,
			      "has format version %u.%u; this reader reads %u.x",
			      h->version_major, h->version_minor,
			      MSTAT_SHM_VERSION_MAJOR);
	if (h->header_size < sizeof(struct mstat_shm_header) ||
	    h->header_size > MSTAT_PAGE)
		return refuse(-EPROTO, err, errlen, "has header size %u",
			      h->header_size);
	if (h->row_counters != MSTAT_ROW_COUNTERS)
		return refuse(-EPROTO, err, errlen,
			      "has %u counters per class, not %u",
			      h->row_counters, MSTAT_ROW_COUNTERS);
	if (h->class_count == 0 || h->class_count > MSTAT_MAX_CLASSES)
		return refuse(-EPROTO, err, errlen,
			      "has %u size classes (1..%u allowed)",
			      h->class_count, MSTAT_MAX_CLASSES);
	if (h->slot_count < MSTAT_SLOTS_MIN || h->slot_count > MSTAT_SLOTS_MAX)
		return refuse(-EPROTO, err, errlen,
			      "has %u slots (%u..%u allowed)", h->slot_count,
			      MSTAT_SLOTS_MIN, MSTAT_SLOTS_MAX);
	if (h->slot_size != MSTAT_SLOT_SIZE(h->class_count))
		return refuse(-EPROTO, err, errlen,
			      "has slot size %u, not %zu for %u classes",
			      h->slot_size, (size_t)MSTAT_SLOT_SIZE(h->class_count),
			      h->class_count);
	if (h->classes_offset < MSTAT_PAGE || h->classes_offset % 8)
		return refuse(-EPROTO, err, errlen,
			      "has its class table at offset %u",
			      h->classes_offset);
	/* All in 64 bits: each term is bounded above, none can wrap. */
	if ((uint64_t)h->classes_offset + (uint64_t)h->class_count * 8 >
		    h->slots_offset ||
	    h->slots_offset % MSTAT_PAGE)
		return refuse(-EPROTO, err, errlen,
			      "has its slots at offset %u", h->slots_offset);
	uint64_t want = (uint64_t)h->slots_offset +
			(uint64_t)h->slot_count * h->slot_size;
	if (h->profile_offset != want)
		return refuse(-EPROTO, err, errlen,
			      "has its profile at offset %u, not %llu",
			      h->profile_offset, (unsigned long long)want);
	if (h->stack_capacity == 0 || h->stack_capacity > MSTAT_STACKS_LIMIT ||
	    (h->stack_capacity & (h->stack_capacity - 1)) ||
	    h->frame_capacity == 0 || h->frame_capacity > MSTAT_FRAMES_LIMIT ||
	    h->module_capacity == 0 || h->module_capacity > MSTAT_MODULES_LIMIT)
		return refuse(-EPROTO, err, errlen,
			      "has a profile of %u stacks, %u frames, %u modules",
			      h->stack_capacity, h->frame_capacity,
			      h->module_capacity);
	if (h->profile_size != MSTAT_PROFILE_SIZE(h->stack_capacity,
						  h->frame_capacity,
						  h->module_capacity))
		return refuse(-EPROTO, err, errlen,
			      "has a profile of %u bytes; its layout needs %llu",
			      h->profile_size,
			      (unsigned long long)MSTAT_PROFILE_SIZE(
				      h->stack_capacity, h->frame_capacity,
				      h->module_capacity));
	want += h->profile_size;
	if (h->segment_size != want)
		return refuse(-EPROTO, err, errlen,
			      "says it is %llu bytes; its layout needs %llu",
			      (unsigned long long)h->segment_size,
			      (unsigned long long)want);
	if (h->segment_size != file_size)
		return refuse(-EPROTO, err, errlen,
			      "is %llu bytes; its header says %llu",
			      (unsigned long long)file_size,
			      (unsigned long long)h->segment_size);
	if (h->writer_mode != MSTAT_MODE_FENCED &&
	    h->writer_mode != MSTAT_MODE_MEMBARRIER)
		return refuse(-EPROTO, err, errlen, "has unknown writer mode %u",
			      h->writer_mode);
	if (h->pid <= 0)
		return refuse(-EPROTO, err, errlen, "has pid %d", (int)h->pid);
	if (uid != MSTAT_UID_CALLER && h->uid != uid)
		return refuse(-EPERM, err, errlen, "says uid %u, not %u",
			      h->uid, (unsigned)uid);
	if (!memchr(h->name, '\0', sizeof(h->name)))
		return refuse(-EPROTO, err, errlen, "has an unterminated name");
	return 0;
}

int
mstat_validate_classes(const uint64_t *max_size, uint32_t n, char *err,
		       size_t errlen)
{
	for (uint32_t c = 1; c < n; c++)
		if (max_size[c] <= max_size[c - 1])
			return refuse(-EPROTO, err, errlen,
				      "has size classes out of order at class %u",
				      c);
	return 0;
}
