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
 * On that file, mstat_reader_open_fd(), and if it attaches, snapshots:
 *   - with no owner lock held: the final read of a dead target;
 *   - with the owner lock held on a second open file description of the
 *     memfd, as a live target holds it: catch-up, rotation and handshake,
 *     by mstat_reader_snapshot() and mstat_reader_snapshot_many().  The
 *     wait budget is 0, so an odd seq makes a read give up, not wait.
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
 * or order of class bounds that the snapshot's documentation rules out.
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

#include "layout.h"
#include "mstatshm.h"
#include "owner.h"
#include "reader.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest segment a valid header can describe with its parts packed:
 * the most classes a snapshot holds, the most slots (80 MiB and 8 KiB; a
 * writer makes at most 64 MiB and 8 KiB, with 146 classes).  The memfd is
 * sparse: only the pages the reader touches cost memory. */
#define FUZZ_SEGMENT_MAX MSTAT_SEGMENT_SIZE(MSTAT_MAX_CLASSES, MSTAT_SLOTS_MAX)
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

static bool
header_rc_documented(int rc)
{
	return rc == 0 || rc == -EAGAIN || rc == -EPROTONOSUPPORT ||
	       rc == -EPROTO || rc == -EPERM;
}

/*
 * Validation alone, on private copies of exactly the size it is given.
 * Returns whether the header and class table pass as the reader would
 * check them for a file of `file_size` bytes, whose contents are the
 * input up to that size and zeros after.
 */
static bool
validate_copies(const uint8_t *data, size_t size, uint64_t file_size,
		const struct mstat_shm_header *h)
{
	char err[200], tiny[1];
	uid_t uid = geteuid();
	struct mstat_shm_header *copy;
	uint64_t *table;
	size_t avail = size < file_size ? size : (size_t)file_size;
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

	/* The class table where the header puts it, zeros past the file's
	 * bytes, in a buffer of exactly class_count entries. */
	n = h->class_count < FUZZ_CLASSES_MAX ? h->class_count : FUZZ_CLASSES_MAX;
	table = calloc(n ? n : 1, sizeof(uint64_t));
	if (!table)
		die("out of memory");
	if (h->classes_offset < avail) {
		size_t len = avail - h->classes_offset;

		if (len > (size_t)n * sizeof(uint64_t))
			len = (size_t)n * sizeof(uint64_t);
		memcpy(table, data + h->classes_offset, len);
	}
	err[0] = '\0';
	rc2 = mstat_validate_classes(table, n, err, sizeof(err));
	if (rc2 != 0 && rc2 != -EPROTO)
		die("mstat_validate_classes: undocumented result %d", rc2);
	check_reason(rc2, err, "mstat_validate_classes");
	free(table);
	return rc == 0 && rc2 == 0;
}

/* A memfd holding the input, sized as described above. */
static int
make_segment(const uint8_t *data, size_t size, uint64_t file_size)
{
	int fd = memfd_create("mstat-fuzz", MFD_CLOEXEC);

	if (fd < 0)
		die("memfd_create: %s", strerror(errno));
	if (fchmod(fd, 0600) < 0)
		die("fchmod: %s", strerror(errno));
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, data + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write: %s", n < 0 ? strerror(errno) : "no progress");
		done += (size_t)n;
	}
	if (ftruncate(fd, (off_t)file_size) < 0)
		die("ftruncate %llu: %s", (unsigned long long)file_size,
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
read_segment(struct mstat_reader *r, int lockfd, const struct mstat_shm_header *h)
{
	static int barrier_rc = 1;
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
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mstat_shm_header h;
	struct mstat_reader *r;
	char err[256];
	uint64_t file_size;
	bool valid;
	int fd, lockfd, rc;

	memset(&h, 0, sizeof(h));
	memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
	/* A size no segment has (0 in a header of zeros, or more than the
	 * largest layout) leaves the file as long as the input. */
	file_size = size;
	if (h.segment_size >= MSTAT_PAGE && h.segment_size <= FUZZ_SEGMENT_MAX &&
	    !(h.reserved0 & 1))
		file_size = h.segment_size;
	valid = validate_copies(data, size, file_size, &h);

	fd = make_segment(data, size, file_size);
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
		read_segment(r, lockfd, &h);
		mstat_reader_close(r);
	}
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		die("the reader left its descriptor open");
	close(lockfd);
	return 0;
}
