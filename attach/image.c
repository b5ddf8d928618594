/* SPDX-License-Identifier: MIT */
/* image.c - a running process's loaded objects; see image.h. */
#include "attach/image.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "shm/procfs.h"

#define DYN_MAX 512u    /* entries of a dynamic section read at most */
#define CHAIN_MAX 65536u /* steps along a hash chain at most */

int
mstat_image_peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		return -EFAULT;
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	/* Where the call is refused (a seccomp profile of our own), the
	 * process's memory file. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	int e = n < 0 ? errno : EFAULT;
	close(fd);
	return n == (ssize_t)len ? 0 : -e;
}

/* A NUL-terminated string at `addr`, cut to `len` - 1 bytes: read in
 * pieces that do not cross a page, which may be the last mapped. */
static int
peek_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	buf[0] = '\0';
	while (got + 1 < len) {
		size_t want = 4096 - ((addr + got) & 4095);
		if (want > len - 1 - got)
			want = len - 1 - got;
		int rc = mstat_image_peek(pid, addr + got, buf + got, want);
		if (rc < 0)
			return rc;
		buf[got + want] = '\0';
		if (memchr(buf + got, '\0', want))
			return 0;
		got += want;
	}
	buf[len - 1] = '\0';
	return 0;
}

static uint64_t
rel(const struct image_object *o, uint64_t v)
{
	return o->addr && v < o->addr ? v + o->addr : v;
}

/* The process's auxiliary vector: the program's headers, the loader,
 * and the image's identity, the 16 bytes at AT_RANDOM.  -EPROTO if it
 * has none: its image is being made (an exec() under way). */
static int
auxv(pid_t pid, uint64_t *phdr, uint64_t *phnum, uint64_t *base, uint64_t *random,
     unsigned char bytes[16])
{
	char path[64];
	uint64_t v[2];

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*phdr = *phnum = *base = *random = 0;
	while (read(fd, v, sizeof(v)) == sizeof(v) && v[0] != AT_NULL) {
		if (v[0] == AT_RANDOM)
			*random = v[1];
		else if (v[0] == AT_PHDR)
			*phdr = v[1];
		else if (v[0] == AT_PHNUM)
			*phnum = v[1];
		else if (v[0] == AT_BASE)
			*base = v[1];
	}
	close(fd);
	if (!*phdr || !*random)
		return -EPROTO;
	return mstat_image_peek(pid, *random, bytes, 16);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
pause_ms(void)
{
	struct timespec ts = { 0, 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/* The loader's r_debug, from the program's DT_DEBUG. */
static int
find_r_debug(pid_t pid, uint64_t phdr, uint64_t phnum, uint64_t *r_debug)
{
	ElfW(Phdr) ph[64];
	uint64_t bias = 0, dyn = 0;
	ElfW(Dyn) d[DYN_MAX];

	if (phnum == 0 || phnum > 64 || mstat_image_peek(pid, phdr, ph, phnum * sizeof(ph[0])) < 0)
		return -EPROTO;
	for (uint64_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = phdr - ph[i].p_vaddr;
	for (uint64_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = bias + ph[i].p_vaddr;
	if (!dyn)
		return -ENOEXEC;
	if (mstat_image_peek(pid, dyn, d, sizeof(d)) < 0 &&
	    mstat_image_peek(pid, dyn, d, 64 * sizeof(d[0])) < 0)
		return -EPROTO;
	for (unsigned i = 0; i < DYN_MAX && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_DEBUG) {
			*r_debug = d[i].d_un.d_ptr;
			return *r_debug ? 0 : -EAGAIN; /* not set yet */
		}
	return -EPROTO;
}

/* Object `o`'s dynamic section, at `ld`. */
static void
read_dynamic(pid_t pid, uint64_t ld, struct image_object *o)
{
	ElfW(Dyn) d[64];
	uint64_t soname = UINT64_MAX;

	for (unsigned at = 0; at < DYN_MAX; at += 64) {
		if (mstat_image_peek(pid, ld + at * sizeof(d[0]), d, sizeof(d)) < 0)
			break;
		for (unsigned i = 0; i < 64; i++) {
			uint64_t v = d[i].d_un.d_val;
			switch (d[i].d_tag) {
			case DT_NULL:
				goto done;
			case DT_SYMTAB: o->symtab = rel(o, v); break;
			case DT_STRTAB: o->strtab = rel(o, v); break;
			case DT_GNU_HASH: o->gnu_hash = rel(o, v); break;
			case DT_VERSYM: o->versym = rel(o, v); break;
			case DT_VERDEF: o->verdef = rel(o, v); break;
			case DT_VERDEFNUM: o->verdefnum = v; break;
			case DT_SONAME: soname = v; break;
			}
		}
	}
done:
	if (soname != UINT64_MAX && o->strtab)
		(void)peek_string(pid, o->strtab + soname, o->soname, sizeof(o->soname));
}

/* The loader's r_debug, once its list of objects is whole: 0; -EAGAIN,
 * not yet after IMAGE_SETTLE_NS (the loader sets r_state to RT_ADD
 * while it adds objects, at its start and in dlopen()); -ENOEXEC, no
 * loader; -EPROTO. */
static int
settled_r_debug(struct image *im, uint64_t phdr, uint64_t phnum, struct r_debug *rd)
{
	uint64_t deadline = now_ns() + IMAGE_SETTLE_NS;

	for (;;) {
		int rc = find_r_debug(im->pid, phdr, phnum, &im->r_debug);
		if (rc == 0 && mstat_image_peek(im->pid, im->r_debug, rd, sizeof(*rd)) < 0)
			rc = -EPROTO;
		else if (rc == 0 && (!rd->r_map || rd->r_state != RT_CONSISTENT))
			rc = -EAGAIN;
		if (rc != -EAGAIN || now_ns() >= deadline)
			return rc;
		pause_ms();
	}
}

int
mstat_image_read(struct image *im, pid_t pid, char *err, size_t len)
{
	uint64_t phdr = 0, phnum = 0, map;
	struct r_debug rd;
	int rc;

	memset(im, 0, sizeof(*im));
	im->pid = pid;
	if ((rc = mstat_procfs_start_time(pid, &im->start_time)) < 0 ||
	    (rc = auxv(pid, &phdr, &phnum, &im->interp, &im->random, im->random_bytes)) < 0) {
		im->random = 0;
		snprintf(err, len, "cannot read its auxiliary vector: %s", strerror(-rc));
		return rc;
	}
	if (!im->interp || (rc = settled_r_debug(im, phdr, phnum, &rd)) == -ENOEXEC) {
		snprintf(err, len, "it is statically linked: it has no dynamic loader "
			 "to load a library");
		return -ENOEXEC;
	}
	if (rc == -EAGAIN) {
		snprintf(err, len, "its dynamic loader is still loading objects after "
			 "%u s (it is starting, or in dlopen()): attach it once it is done",
			 IMAGE_SETTLE_NS / 1000000000u);
		return -EAGAIN;
	}
	if (rc < 0) {
		snprintf(err, len, "cannot find its dynamic loader's list of objects");
		return -EPROTO;
	}
	im->objects = calloc(IMAGE_OBJECTS_MAX, sizeof(*im->objects));
	if (!im->objects)
		return -ENOMEM;
	for (map = (uint64_t)(uintptr_t)rd.r_map; map && im->n < IMAGE_OBJECTS_MAX;) {
		struct link_map l;
		struct image_object *o = &im->objects[im->n];
		if (mstat_image_peek(pid, map, &l, sizeof(l)) < 0) {
			snprintf(err, len, "cannot read its dynamic loader's list of objects");
			return -EPROTO;
		}
		o->map = map;
		o->addr = l.l_addr;
		if (l.l_name)
			(void)peek_string(pid, (uint64_t)(uintptr_t)l.l_name, o->name,
					  sizeof(o->name));
		if (l.l_ld)
			read_dynamic(pid, (uint64_t)(uintptr_t)l.l_ld, o);
		im->n++;
		map = (uint64_t)(uintptr_t)l.l_next;
	}
	return 0;
}

/* The identity of the image `pid` runs now, compared with `im`'s: 0
 * (the same), 1 (another), or -errno (none to read: an exec() under
 * way, or not this program's to read). */
static int
identity(const struct image *im, pid_t pid)
{
	uint64_t phdr, phnum, base, random;
	unsigned char bytes[16];
	int rc = auxv(pid, &phdr, &phnum, &base, &random, bytes);

	if (rc < 0)
		return rc;
	return random != im->random || memcmp(bytes, im->random_bytes, 16) != 0;
}

bool
mstat_image_same(const struct image *im, pid_t pid)
{
	return im->random && identity(im, pid) == 0;
}

/* Whether every thread of `pid` is ending (PF_EXITING) or has ended: a
 * thread gone since it was listed has. */
static bool
all_ending(pid_t pid)
{
	char path[64];
	bool ending = true;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return true;
	for (struct dirent *e; ending && (e = readdir(d));) {
		struct mstat_proc_life l;
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && mstat_procfs_life(pid, tid, &l) == 0)
			ending = (l.flags & MSTAT_PF_EXITING) || mstat_proc_state_ended(l.state);
	}
	closedir(d);
	return ending;
}

enum image_fate
mstat_image_fate(const struct image *im, pid_t pid)
{
	uint64_t deadline = now_ns() + IMAGE_FATE_WAIT_NS;
	struct mstat_proc_life l;

	/* A read fails for an exit once the main thread has let go of the
	 * memory (exit_mm()), so once it is ending.  Each other thread
	 * shows it is ending once it has run since the kill that ends it:
	 * until then the process looks like one whose main thread ended
	 * alone, which it is if that lasts. */
	for (;;) {
		int rc = mstat_procfs_life(pid, 0, &l);
		if (rc == -ENOENT || rc == -ESRCH ||
		    (rc == 0 && im->start_time && l.start_time != im->start_time))
			return IMAGE_EXITED; /* reaped, its pid maybe taken since */
		if (rc < 0)
			return IMAGE_RUNS; /* it cannot be told */
		if (!(l.flags & MSTAT_PF_EXITING) && !mstat_proc_state_ended(l.state))
			break;
		if (all_ending(pid))
			return IMAGE_EXITED;
		if (now_ns() >= deadline)
			return IMAGE_LEADERLESS;
		pause_ms();
	}
	/* Its main thread runs: an image other than the one read, or none
	 * yet (the kernel makes the new one's auxiliary vector last), is an
	 * exec().  An image not read at all (its first read failed) that
	 * can be read now was being made then. */
	int rc = identity(im, pid);
	if (rc == -EPERM || rc == -EACCES)
		return IMAGE_RUNS;
	return rc == 0 && im->random ? IMAGE_RUNS : IMAGE_EXECED;
}

void
mstat_image_free(struct image *im)
{
	free(im->objects);
	im->objects = NULL;
	im->n = 0;
}

static uint32_t
gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

/* Whether dynamic symbol `idx` of `o` is a definition of `name` with a
 * default version; its address in *at. */
static bool
defines(const struct image *im, const struct image_object *o, uint32_t idx,
	const char *name, uint64_t *at)
{
	ElfW(Sym) s;
	char got[256];
	uint16_t ver = 0;

	if (mstat_image_peek(im->pid, o->symtab + (uint64_t)idx * sizeof(s), &s, sizeof(s)) < 0 ||
	    s.st_shndx == SHN_UNDEF || s.st_value == 0 ||
	    peek_string(im->pid, o->strtab + s.st_name, got, sizeof(got)) < 0 ||
	    strcmp(got, name) != 0)
		return false;
	if (o->versym && mstat_image_peek(im->pid, o->versym + (uint64_t)idx * 2, &ver, 2) == 0 &&
	    (ver & 0x8000)) /* hidden: not the default version */
		return false;
	*at = o->addr + s.st_value;
	return true;
}

uint64_t
mstat_image_symbol(const struct image *im, const struct image_object *o, const char *name)
{
	uint32_t head[4], idx, c, h = gnu_hash(name);
	uint64_t at;

	if (!o->gnu_hash || !o->symtab || !o->strtab ||
	    mstat_image_peek(im->pid, o->gnu_hash, head, sizeof(head)) < 0 ||
	    head[0] == 0 || head[0] > (1u << 24) || head[2] > (1u << 24))
		return 0;
	uint64_t buckets = o->gnu_hash + 16 + (uint64_t)head[2] * 8;
	uint64_t chains = buckets + (uint64_t)head[0] * 4;
	if (mstat_image_peek(im->pid, buckets + (uint64_t)(h % head[0]) * 4, &idx, 4) < 0 ||
	    idx < head[1])
		return 0;
	for (unsigned steps = 0; steps < CHAIN_MAX; steps++, idx++) {
		if (mstat_image_peek(im->pid, chains + (uint64_t)(idx - head[1]) * 4, &c, 4) < 0)
			return 0;
		if ((c | 1) == (h | 1) && defines(im, o, idx, name, &at))
			return at;
		if (c & 1)
			return 0;
	}
	return 0;
}

bool
mstat_image_has_version(const struct image *im, const struct image_object *o,
			const char *ver)
{
	uint64_t at = o->verdef;

	for (uint64_t i = 0; at && o->strtab && i < o->verdefnum && i < 1024; i++) {
		ElfW(Verdef) vd;
		ElfW(Verdaux) va;
		char name[64];
		if (mstat_image_peek(im->pid, at, &vd, sizeof(vd)) < 0 ||
		    mstat_image_peek(im->pid, at + vd.vd_aux, &va, sizeof(va)) < 0 ||
		    peek_string(im->pid, o->strtab + va.vda_name, name, sizeof(name)) < 0)
			return false;
		if (strcmp(name, ver) == 0)
			return true;
		if (!vd.vd_next)
			break;
		at += vd.vd_next;
	}
	return false;
}

const struct image_object *
mstat_image_by_soname(const struct image *im, const char *soname)
{
	for (size_t i = 0; i < im->n; i++) {
		const struct image_object *o = &im->objects[i];
		const char *base = strrchr(o->name, '/');
		if (strcmp(o->soname, soname) == 0 ||
		    strcmp(base ? base + 1 : o->name, soname) == 0)
			return o;
	}
	return NULL;
}

const struct image_object *
mstat_image_defining(const struct image *im, const char *name)
{
	for (size_t i = 0; i < im->n; i++)
		if (mstat_image_symbol(im, &im->objects[i], name))
			return &im->objects[i];
	return NULL;
}
