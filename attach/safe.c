/* SPDX-License-Identifier: MIT */
/* safe.c - whether a stopped thread may run the attach; see safe.h. */
#include "attach/safe.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#define FRAMES_MAX 256u
#define MAPS_MAX 8192u

/*
 * glibc's functions a thread may not be inside of (any frame), by name:
 * their aliases share their addresses, and each is looked up in the
 * process's own libc.  The allocator (the attach's dlopen() allocates);
 * the loader's entry points (it loads); fork, its handlers, and the
 * exit and its handlers (their locks, which the library's constructor
 * takes to register its own); thread creation and exit; the
 * environment's setters (the constructor reads it); locales.
 */
static const char *const denied[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
	"aligned_alloc", "posix_memalign", "valloc", "pvalloc",
	"malloc_usable_size", "malloc_trim", "malloc_stats", "malloc_info",
	"mallinfo", "mallinfo2", "mallopt",
	"dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym", "dladdr", "dladdr1",
	"dlinfo", "dlerror", "dl_iterate_phdr", "_dl_find_object",
	"fork", "_Fork", "vfork", "pthread_atfork", "__register_atfork",
	"posix_spawn", "posix_spawnp", "system", "popen",
	"exit", "_exit", "quick_exit", "atexit", "at_quick_exit", "on_exit",
	"__cxa_atexit", "__cxa_finalize", "__cxa_thread_atexit_impl",
	"__libc_freeres",
	"pthread_create", "pthread_exit", "pthread_join",
	"setenv", "unsetenv", "putenv", "clearenv",
	"setlocale", "newlocale", "freelocale", "duplocale",
};
#define DENIED (sizeof(denied) / sizeof(denied[0]))

struct range {
	uint64_t lo, hi;
	const char *name;
};

struct mapping {
	uint64_t start, end;
	dev_t dev;
	ino_t ino;
	bool stack;            /* [stack]: grows down to its limit */
	char path[256];
};

struct safe {
	pid_t pid;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	uint64_t libc_lo, libc_hi, ld_lo, ld_hi;
	struct range deny[DENIED];
	unsigned ndeny;
	struct mapping *maps;
	size_t nmaps;
};

/* The callback's process: libdw's find_elf has no argument of ours. */
static struct safe *current;

static int
read_maps(struct safe *s)
{
	char path[64], line[4352];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	s->maps = calloc(MAPS_MAX, sizeof(*s->maps));
	if (!s->maps) {
		fclose(f);
		return -ENOMEM;
	}
	while (s->nmaps < MAPS_MAX && fgets(line, sizeof(line), f)) {
		struct mapping *m = &s->maps[s->nmaps];
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		int at = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off,
			   &maj, &min, &ino, &at) < 6)
			continue;
		m->start = start;
		m->end = end;
		m->dev = makedev(maj, min);
		m->ino = (ino_t)ino;
		snprintf(m->path, sizeof(m->path), "%s", line + at);
		m->path[strcspn(m->path, "\n")] = '\0';
		m->stack = strcmp(m->path, "[stack]") == 0;
		s->nmaps++;
	}
	fclose(f);
	return 0;
}

/* An object's file as the process maps it: through its own root (a
 * container's files are not the host's), and only if it is the very
 * file mapped (device and inode), or, where allowed, the mapping's own
 * link in map_files.  Frame information of another file would place
 * frames wrongly. */
static int
find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
	 char **file_name, Elf **elfp)
{
	struct safe *s = current;
	char path[4400];
	struct stat st;

	for (size_t i = 0; name[0] == '/' && i < s->nmaps; i++) {
		const struct mapping *m = &s->maps[i];
		if (strcmp(m->path, name) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)s->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(path, sizeof(path), "/proc/%d/root%s", (int)s->pid, name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_ino != m->ino)) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			return -1;
		*file_name = strdup(path);
		return fd;
	}
	/* The vDSO and the like: from the process's memory. */
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

/* The range [lo, hi) of the mapped object that holds `addr`. */
static void
object_range(const struct safe *s, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	Dwfl_Module *m = addr ? dwfl_addrmodule(s->dwfl, addr) : NULL;
	Dwarf_Addr start = 0, end = 0;

	if (m)
		(void)dwfl_module_info(m, NULL, &start, &end, NULL, NULL, NULL, NULL);
	*lo = start;
	*hi = end;
}

/* The denied functions' ranges, in the process's libc. */
static void
deny_ranges(struct safe *s, const struct image *im, const struct image_object *libc)
{
	Dwfl_Module *m = dwfl_addrmodule(s->dwfl, libc->addr);

	for (unsigned i = 0; m && i < DENIED; i++) {
		uint64_t at = mstat_image_symbol(im, libc, denied[i]);
		GElf_Sym sym;
		GElf_Off off;
		if (!at || !dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL) ||
		    off != 0 || sym.st_size == 0)
			continue;
		s->deny[s->ndeny++] = (struct range){ at, at + sym.st_size, denied[i] };
	}
}

static int
warm(Dwfl_Module *m, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	(void)userdata, (void)name, (void)start, (void)arg;
	(void)dwfl_module_eh_cfi(m, &bias);
	(void)dwfl_module_getsymtab(m);
	return DWARF_CB_OK;
}

int
mstat_safe_open(struct safe **out, pid_t pid, const struct image *im, char *err, size_t len)
{
	const struct image_object *libc = mstat_image_by_soname(im, "libc.so.6");
	struct safe *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->pid = pid;
	current = s;
	if ((rc = read_maps(s)) < 0) {
		snprintf(err, len, "cannot read its memory map: %s", strerror(-rc));
		free(s);
		return rc;
	}
	s->cb.find_elf = find_elf;
	s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl || dwfl_linux_proc_report(s->dwfl, pid) != 0 ||
	    dwfl_report_end(s->dwfl, NULL, NULL) != 0 ||
	    dwfl_linux_proc_attach(s->dwfl, pid, true) != 0) {
		snprintf(err, len, "cannot read its objects to unwind its stacks: %s",
			 dwfl_errmsg(-1));
		mstat_safe_close(s);
		return -EPROTO;
	}
	if (libc) {
		object_range(s, libc->addr, &s->libc_lo, &s->libc_hi);
		deny_ranges(s, im, libc);
	}
	object_range(s, im->interp, &s->ld_lo, &s->ld_hi);
	/* Every object's frame information and symbols read now, so that
	 * a stopped thread's unwinding has no file to open. */
	(void)dwfl_getmodules(s->dwfl, warm, NULL, 0);
	*out = s;
	return 0;
}

void
mstat_safe_close(struct safe *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s->maps);
	free(s);
	current = NULL;
}

struct frames {
	uint64_t pc[FRAMES_MAX];
	bool activation[FRAMES_MAX];
	unsigned n;
};

static int
on_frame(Dwfl_Frame *frame, void *arg)
{
	struct frames *f = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return -1;
	if (f->n >= FRAMES_MAX)
		return DWARF_CB_ABORT;
	f->pc[f->n] = pc;
	f->activation[f->n] = activation;
	f->n++;
	return DWARF_CB_OK;
}

/* Whether `pc`, in libc, is in one of its exported functions. */
static bool
exported(const struct safe *s, uint64_t pc)
{
	Dwfl_Module *m = dwfl_addrmodule(s->dwfl, pc);
	GElf_Sym sym;
	GElf_Off off;

	return m && dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL) &&
	       off < sym.st_size && GELF_ST_BIND(sym.st_info) != STB_LOCAL;
}

static bool
refuse(char *why, size_t len, const char *fmt, const char *what)
{
	snprintf(why, len, fmt, what);
	return false;
}

/* Frame i's address: exact in the innermost frame and in one a signal
 * interrupted (libdw's "activation"), else a return address, looked up
 * as the call before it. */
static uint64_t
frame_pc(const struct frames *f, unsigned i)
{
	return f->pc[i] - !f->activation[i];
}

/* The rules of safe.h over the frames, innermost first. */
static bool
frames_allowed(const struct safe *s, const struct frames *f, char *why, size_t len)
{
	/* The run of glibc's frames the thread executes, if any: frames 0
	 * to the first that is not glibc's. */
	bool run = f->n > 0 && frame_pc(f, 0) >= s->libc_lo && frame_pc(f, 0) < s->libc_hi;

	for (unsigned i = 0; i < f->n; i++) {
		uint64_t pc = frame_pc(f, i);
		if (i > 0 && f->activation[i])
			return refuse(why, len, "it is in a signal handler%s", "");
		if (pc >= s->ld_lo && pc < s->ld_hi)
			return refuse(why, len, "it is inside the dynamic loader%s", "");
		for (unsigned k = 0; k < s->ndeny; k++)
			if (pc >= s->deny[k].lo && pc < s->deny[k].hi)
				return refuse(why, len, "it is inside glibc's %s()",
					      s->deny[k].name);
		if (run && !(pc >= s->libc_lo && pc < s->libc_hi)) {
			/* The run ended at frame i - 1: entered through an
			 * exported function, a call of the program's. */
			if (!exported(s, frame_pc(f, i - 1)))
				return refuse(why, len, "it is inside glibc's own "
					      "internals%s", "");
			run = false;
		}
	}
	/* Every frame glibc's: a thread that began or ends in it. */
	if (run && !exported(s, frame_pc(f, f->n - 1)))
		return refuse(why, len, "it is inside glibc's own internals%s", "");
	return true;
}

bool
mstat_safe_thread(struct safe *s, pid_t tid, uint64_t sp, uint64_t *floor, char *why,
		  size_t len)
{
	struct frames f = { .n = 0 };

	current = s;
	*floor = 0;
	for (size_t i = 0; i < s->nmaps; i++)
		if (sp > s->maps[i].start && sp <= s->maps[i].end)
			*floor = s->maps[i].stack ? sp - (sp < (8u << 20) ? sp : (8u << 20))
						  : s->maps[i].start;
	if (!*floor || sp - *floor < SAFE_STACK_ROOM)
		return refuse(why, len, "its stack has too little room left%s", "");
	int rc = dwfl_getthread_frames(s->dwfl, tid, on_frame, &f);
	if (rc != 0 || f.n == 0)
		return refuse(why, len, "its stack cannot be unwound: %s",
			      rc == DWARF_CB_ABORT ? "too deep" : dwfl_errmsg(-1));
	return frames_allowed(s, &f, why, len);
}
