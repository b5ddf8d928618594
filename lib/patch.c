/* SPDX-License-Identifier: MIT */
/*
 * patch.c - the slots of every loaded object pointed at the library's
 * allocator; see patch.h.
 *
 * The objects are those of the loader's list of the base namespace
 * (_r_debug.r_map), walked without its lock in the constructor (which runs
 * inside dlopen(), holding the loader's lock: nobody changes the list) and
 * at the attach (every other thread stopped outside the loader), and
 * under it later (dl_iterate_phdr(), whose lock every change of the list
 * takes).  An object's slots are found from its dynamic section, in
 * memory: its relocations of a function of the list below, by name.
 * Nothing here allocates: the plan (objects, slots) is in memory of its
 * own.
 */
#include "lib/patch.h"

#include <elf.h>
#include <sched.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib/attached.h"
#include "shm/clock.h"
#include "lib/exit.h"
#include "lib/next.h"
#include "lib/status.h"

_Atomic bool mstat_patch_pending;

/* How long after the attach, or a dlopen() begun, rescans check every
 * slot. */
#define ARMED_NS (1000u * 1000u * 1000u)

/* The dlopen() and dlmopen() of the loaded objects: the library's, which
 * count the call, set mstat_patch_pending and jump on to glibc's, with
 * the caller's
 * return address where it was (dlopen() finds its caller's object, and
 * so the search path, from it).  Their frames are none: a jump. */
extern _Atomic unsigned long mstat_patch_dlopens MSTAT_HIDDEN;
void *mstat_patch_hook_dlopen(const char *file, int mode) MSTAT_HIDDEN;
void *mstat_patch_hook_dlmopen(long ns, const char *file, int mode) MSTAT_HIDDEN;
void *mstat_patch_next_dlopen MSTAT_HIDDEN;
void *mstat_patch_next_dlmopen MSTAT_HIDDEN;

#define HOOK(name)                                                            \
	".text\n"                                                             \
	".globl mstat_patch_hook_" #name "\n"                                 \
	".hidden mstat_patch_hook_" #name "\n"                                \
	".type mstat_patch_hook_" #name ", @function\n"                       \
	"mstat_patch_hook_" #name ":\n"                                       \
	".cfi_startproc\n"                                                    \
	"	lock incq mstat_patch_dlopens(%rip)\n"                          \
	"	movb $1, mstat_patch_pending(%rip)\n"                            \
	"	jmp *mstat_patch_next_" #name "(%rip)\n"                         \
	".cfi_endproc\n"                                                      \
	".size mstat_patch_hook_" #name ", .-mstat_patch_hook_" #name "\n"
__asm__(HOOK(dlopen) HOOK(dlmopen));

/* The functions whose slots are patched: each one's name, the library's
 * function, and glibc's (resolved in mstat_patch_prepare()). */
typedef void (*fn_ptr)(void);
static struct fn {
	const char *name;
	fn_ptr ours;
	uintptr_t real;
	/* Its place in the order the slots are written (write_slots()):
	 * the frees, then the reallocs, then the allocations. */
	unsigned char group;
} fns[] = {
	{ "free", (fn_ptr)mstat_attached_free, 0, 0 },
	{ "_exit", (fn_ptr)mstat_exit_now, 0, 0 },
	{ "_Exit", (fn_ptr)mstat_exit_now, 0, 0 },
	{ "realloc", (fn_ptr)mstat_attached_realloc, 0, 1 },
	{ "reallocarray", (fn_ptr)mstat_attached_reallocarray, 0, 1 },
	{ "malloc", (fn_ptr)mstat_attached_malloc, 0, 2 },
	{ "calloc", (fn_ptr)mstat_attached_calloc, 0, 2 },
	{ "posix_memalign", (fn_ptr)mstat_attached_posix_memalign, 0, 2 },
	{ "aligned_alloc", (fn_ptr)mstat_attached_aligned_alloc, 0, 2 },
	{ "memalign", (fn_ptr)mstat_attached_memalign, 0, 2 },
	{ "valloc", (fn_ptr)mstat_attached_valloc, 0, 2 },
	{ "pvalloc", (fn_ptr)mstat_attached_pvalloc, 0, 2 },
	/* Last: mstat_patch_prepare() takes glibc's from here. */
	{ "dlopen", (fn_ptr)mstat_patch_hook_dlopen, 0, 0 },
	{ "dlmopen", (fn_ptr)mstat_patch_hook_dlmopen, 0, 0 },
};
#define FNS (sizeof(fns) / sizeof(fns[0]))

/* A slot of an object: its address, which function, and what relocation
 * made it (for a JUMP_SLOT, its index, which its lazy stub pushes). */
struct slot {
	uintptr_t addr;
	uint32_t fn;
	uint32_t type;      /* R_X86_64_JUMP_SLOT, _GLOB_DAT or _64 */
	uint32_t index;
};

/* An object: its link map (and what identifies the object it maps),
 * where its slots are in the plan, the pages the loader made read-only
 * after relocation, and its executable range (where lazy stubs are). */
struct object {
	const struct link_map *map;
	uintptr_t addr;
	const void *ld;
	uint32_t first, n;
	uintptr_t relro_start, relro_end;
	uintptr_t text_start, text_end;
	bool pending;       /* a slot was not relocated yet */
	bool writable;      /* its read-only pages made writable, for now */
	bool todo;          /* its slots to be written by this walk */
};

/* Memory of its own, grown by doubling (mremap): no allocation. */
struct vec {
	void *p;
	size_t n, cap;
};

static struct {
	struct vec objects, slots;
	size_t page;
	const struct link_map *self;  /* this library's object */
	uintptr_t interp;             /* the loader's base (AT_BASE) */
	_Atomic bool rescanning;      /* one rescan at a time */
	_Atomic pid_t rescanner;      /* its thread */
	unsigned long dlopens_seen;   /* mstat_patch_dlopens, at the last */
	_Atomic uint64_t rescan_ns;   /* the last's end (CLOCK_MONOTONIC_COARSE) */
	uint64_t armed_until;         /* rescans check every slot until then */
	unsigned long long adds, subs; /* dl_iterate_phdr()'s, at the last */
	bool unready;                 /* an object was listed but not loaded */
} plan;

static bool
reserve(struct vec *v, size_t elem, size_t need)
{
	if (need <= v->cap)
		return true;
	size_t cap = v->cap ? v->cap : 64;
	while (cap < need)
		cap *= 2;
	void *p = v->p ? mremap(v->p, v->cap * elem, cap * elem, MREMAP_MAYMOVE)
		       : mmap(NULL, cap * elem, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	v->p = p;
	v->cap = cap;
	return true;
}

static void
release(struct vec *v, size_t elem)
{
	if (v->p)
		munmap(v->p, v->cap * elem);
	memset(v, 0, sizeof(*v));
}

#define OBJECTS(v) ((struct object *)(v)->p)
#define SLOTS(v) ((struct slot *)(v)->p)

/* The function a relocation's symbol names, or -1. */
static int
fn_of(const char *name)
{
	for (unsigned i = 0; i < FNS; i++)
		if (name[0] == fns[i].name[0] && strcmp(name, fns[i].name) == 0)
			return (int)i;
	return -1;
}

/* A pointer of the dynamic section: the loader made it absolute, except
 * in a read-only one (the vDSO's). */
static uintptr_t
dyn_ptr(const struct link_map *l, uintptr_t v)
{
	return l->l_addr && v < l->l_addr ? v + l->l_addr : v;
}

/* The program headers of object `l`: the program's from the auxiliary
 * vector, any other's from its ELF header, mapped at its base. */
static const ElfW(Phdr) *
phdrs(const struct link_map *l, unsigned *n)
{
	if (l == _r_debug.r_map) {
		*n = (unsigned)getauxval(AT_PHNUM);
		return (const ElfW(Phdr) *)getauxval(AT_PHDR);
	}
	const ElfW(Ehdr) *e = (const ElfW(Ehdr) *)l->l_addr;
	if (!l->l_addr || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 ||
	    e->e_phentsize != sizeof(ElfW(Phdr)))
		return NULL;
	*n = e->e_phnum;
	return (const ElfW(Phdr) *)(l->l_addr + e->e_phoff);
}

/* Its read-only-after-relocation pages and executable range, as the
 * loader has them (_dl_protect_relro()). */
static void
ranges(const struct link_map *l, struct object *o)
{
	unsigned n = 0;
	const ElfW(Phdr) *ph = phdrs(l, &n);

	for (unsigned i = 0; ph && i < n; i++) {
		uintptr_t start = l->l_addr + ph[i].p_vaddr;
		if (ph[i].p_type == PT_GNU_RELRO) {
			o->relro_start = start & ~(plan.page - 1);
			o->relro_end = (start + ph[i].p_memsz) & ~(plan.page - 1);
		} else if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			if (!o->text_start || start < o->text_start)
				o->text_start = start;
			if (start + ph[i].p_memsz > o->text_end)
				o->text_end = start + ph[i].p_memsz;
		}
	}
}

struct dyn {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Rela) *rela, *jmprel;
	size_t relasz, pltrelsz, relacount;
};

static void
read_dynamic(const struct link_map *l, struct dyn *d)
{
	memset(d, 0, sizeof(*d));
	for (const ElfW(Dyn) *e = l->l_ld; e && e->d_tag != DT_NULL; e++) {
		switch (e->d_tag) {
		case DT_SYMTAB:
			d->symtab = (const void *)dyn_ptr(l, e->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = (const void *)dyn_ptr(l, e->d_un.d_ptr);
			break;
		case DT_RELA:
			d->rela = (const void *)dyn_ptr(l, e->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->relasz = e->d_un.d_val;
			break;
		case DT_RELACOUNT:
			d->relacount = e->d_un.d_val;
			break;
		case DT_JMPREL:
			d->jmprel = (const void *)dyn_ptr(l, e->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->pltrelsz = e->d_un.d_val;
			break;
		}
	}
}

/* The slots of relocations [r, r + n) (`jmprel`: the PLT's, whose index
 * a lazy stub pushes) into the plan. */
static bool
add_slots(const struct link_map *l, const struct dyn *d, const ElfW(Rela) *r,
	  size_t n, bool jmprel)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t type = ELF64_R_TYPE(r[i].r_info);
		uint32_t sym = ELF64_R_SYM(r[i].r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT &&
		     type != R_X86_64_64) || sym == 0 ||
		    (type == R_X86_64_64 && r[i].r_addend != 0))
			continue;
		int f = fn_of(d->strtab + d->symtab[sym].st_name);
		if (f < 0)
			continue;
		if (!reserve(&plan.slots, sizeof(struct slot), plan.slots.n + 1))
			return false;
		SLOTS(&plan.slots)[plan.slots.n++] = (struct slot){
			.addr = l->l_addr + r[i].r_offset,
			.fn = (uint32_t)f,
			.type = type,
			.index = jmprel ? (uint32_t)i : UINT32_MAX,
		};
	}
	return true;
}

/* Object `l` into the plan, with its slots. */
static bool
add_object(const struct link_map *l)
{
	struct dyn d;
	struct object o = { .map = l, .addr = l->l_addr, .ld = l->l_ld,
			    .first = (uint32_t)plan.slots.n };

	if (!reserve(&plan.objects, sizeof(struct object), plan.objects.n + 1))
		return false;
	read_dynamic(l, &d);
	if (d.symtab && d.strtab) {
		size_t skip = d.relacount * sizeof(ElfW(Rela)) <= d.relasz ? d.relacount : 0;
		if ((d.rela && !add_slots(l, &d, d.rela + skip,
					  d.relasz / sizeof(ElfW(Rela)) - skip, false)) ||
		    (d.jmprel && !add_slots(l, &d, d.jmprel,
					    d.pltrelsz / sizeof(ElfW(Rela)), true)))
			return false;
	}
	o.n = (uint32_t)(plan.slots.n - o.first);
	ranges(l, &o);
	OBJECTS(&plan.objects)[plan.objects.n++] = o;
	return true;
}

/*
 * Whether object `l` is loaded whole: relocated, and its read-only pages
 * made so.  The loader lists an object as soon as it has mapped it, and
 * relocates it after, holding its own lock but not dl_iterate_phdr()'s:
 * an object of the list may be under relocation in another thread, and
 * writing its slots then, and making its pages read-only after, would
 * make the loader's next write fault.  _dl_find_object() (glibc 2.35 on,
 * lock-free) knows an object from the end of its relocation, when the
 * loader adds it to its table, to its unloading, under the lock this
 * walk holds; an object it does not know yet is looked at again later.
 * Its table is updated after the relocation, in the loading thread: once
 * seen, that thread's writes to the slots are too (x86-64 keeps stores
 * in order).
 */
static bool
loaded(const struct link_map *l)
{
	struct dl_find_object f;

	return _dl_find_object((void *)l->l_ld, &f) == 0 && f.dlfo_link_map == l;
}

/* Objects that are not patched: the library itself, the loader, and the
 * vDSO (it has no such slots; its dynamic section is read-only). */
static bool
skipped(const struct link_map *l)
{
	return l == plan.self || (plan.interp && l->l_addr == plan.interp) ||
	       (l->l_name && strncmp(l->l_name, "linux-vdso", 10) == 0);
}

/* Whether `v` is the lazy stub of the PLT's relocation `index` in `o`:
 * `push $index`, after an endbr64 where the PLT has them. */
static bool
lazy_stub(const struct object *o, uintptr_t v, uint32_t index)
{
	static const unsigned char endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	const unsigned char *b = (const unsigned char *)v;

	if (index == UINT32_MAX || v < o->text_start || o->text_end - v < 9)
		return false;
	if (memcmp(b, endbr, 4) == 0)
		b += 4;
	return b[0] == 0x68 && memcmp(b + 1, &index, 4) == 0;
}

enum verdict { V_DONE, V_WRITE, V_PENDING, V_LEAVE };

static enum verdict
verdict(const struct object *o, const struct slot *s, uintptr_t v)
{
	const struct fn *f = &fns[s->fn];

	if (v == (uintptr_t)f->ours)
		return V_DONE;
	if (f->real && v == f->real)
		return V_WRITE;
	if (s->type == R_X86_64_JUMP_SLOT && lazy_stub(o, v, s->index))
		return V_WRITE;
	/* Not relocated yet (a load under way): 0, or a link-time value. */
	if (v == 0 || (o->addr && v < o->addr))
		return s->type == R_X86_64_64 ? V_LEAVE : V_PENDING;
	return V_LEAVE;
}

static _Atomic uintptr_t *
word(const struct slot *s)
{
	return (_Atomic uintptr_t *)s->addr;
}

static bool
in_relro(const struct object *o, uintptr_t addr)
{
	return addr >= o->relro_start && addr < o->relro_end;
}

/*
 * The slots of the objects [first, plan.objects.n) written, while the
 * program's threads run, in an order that keeps every count whole: the
 * frees first, in every object, then the reallocs, then the allocations.
 * A thread that calls through a slot not written yet reaches glibc, and
 * what it makes there is a block made before the attach; a block the
 * library made is freed through a slot written before its allocation's
 * (on x86-64, stores are seen in the order they are made), so never by
 * glibc's free behind the library's back.  Each write is one aligned
 * 8-byte store, which a thread calling through the slot sees whole.
 *
 * The pages the loader made read-only after relocation are made
 * writable for it, all of them before any write, and read-only again
 * after: an mprotect() refused leaves every slot as it was (-errno, and
 * *failed the object's name).
 */
/* The objects made writable, read-only again. */
static void
protect(int prot)
{
	for (size_t i = 0; i < plan.objects.n; i++) {
		struct object *o = &OBJECTS(&plan.objects)[i];
		if (o->writable)
			mprotect((void *)o->relro_start, o->relro_end - o->relro_start, prot);
		if (prot == PROT_READ)
			o->writable = false;
	}
}

static int
write_slots(const char **failed)
{
	size_t n = plan.objects.n;

	for (size_t i = 0; i < n; i++) {
		struct object *o = &OBJECTS(&plan.objects)[i];
		struct slot *s = SLOTS(&plan.slots) + o->first;
		if (!o->todo)
			continue;
		o->pending = false;
		for (uint32_t k = 0; k < o->n; k++) {
			enum verdict v = verdict(o, &s[k], atomic_load_explicit(
				word(&s[k]), memory_order_relaxed));
			o->pending |= v == V_PENDING;
			if (v == V_WRITE && in_relro(o, s[k].addr) && !o->writable) {
				if (mprotect((void *)o->relro_start,
					     o->relro_end - o->relro_start,
					     PROT_READ | PROT_WRITE) < 0) {
					int e = errno;
					protect(PROT_READ);
					*failed = o->map->l_name && *o->map->l_name
							  ? o->map->l_name : "the program";
					return -e;
				}
				o->writable = true;
			}
		}
	}
	for (unsigned g = 0; g < 3; g++)
		for (size_t i = 0; i < n; i++) {
			struct object *o = &OBJECTS(&plan.objects)[i];
			struct slot *s = SLOTS(&plan.slots) + o->first;
			for (uint32_t k = 0; o->todo && k < o->n; k++)
				if (fns[s[k].fn].group == g &&
				    verdict(o, &s[k], atomic_load_explicit(
					    word(&s[k]), memory_order_relaxed)) == V_WRITE)
					/* Relaxed: the library's functions need
					 * nothing of this thread's but what the
					 * attach published before (attach.c). */
					atomic_store_explicit(word(&s[k]),
							      (uintptr_t)fns[s[k].fn].ours,
							      memory_order_relaxed);
		}
	protect(PROT_READ);
	return 0;
}

int
mstat_patch_prepare(char *err, size_t len)
{
	plan.page = (size_t)getpagesize();
	plan.self = mstat_next_object_of((const void *)(uintptr_t)mstat_patch_prepare);
	plan.interp = getauxval(AT_BASE);
	for (unsigned i = 0; i < FNS; i++)
		fns[i].real = (uintptr_t)dlsym(RTLD_DEFAULT, fns[i].name);
	mstat_patch_next_dlopen = (void *)fns[FNS - 2].real;
	mstat_patch_next_dlmopen = (void *)fns[FNS - 1].real;
	if (!mstat_patch_next_dlopen || !mstat_patch_next_dlmopen) {
		mstat_status_join(err, len, (const char *const[]){
			"the process's libc has no dlopen or dlmopen", NULL });
		return -1;
	}
	for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
		if (!skipped(l) && loaded(l) && !add_object(l)) {
			mstat_status_join(err, len, (const char *const[]){
				"no memory for the list of slots to patch", NULL });
			return -1;
		}
	return 0;
}

/* ---- the list of objects, walked under the loader's lock ---- */

/*
 * Objects in the list now: the plan's entries of those it had, and new
 * ones for the others; those no longer loaded dropped.  Then the slots of
 * every object new or pending written (`all`: of every object).  0, or
 * -errno (*failed: which object's pages could not be made writable).
 */
static int
walk_list(bool all, const char **failed)
{
	struct vec had_o = plan.objects, had_s = plan.slots;
	bool ok = true;

	memset(&plan.objects, 0, sizeof(plan.objects));
	memset(&plan.slots, 0, sizeof(plan.slots));
	plan.unready = false;
	for (const struct link_map *l = _r_debug.r_map; l && ok; l = l->l_next) {
		if (skipped(l))
			continue;
		if (!loaded(l)) { /* under way: new when loaded */
			plan.unready = true;
			continue;
		}
		const struct object *h = NULL;
		for (size_t i = 0; i < had_o.n && !h; i++)
			if (OBJECTS(&had_o)[i].map == l &&
			    OBJECTS(&had_o)[i].addr == l->l_addr &&
			    OBJECTS(&had_o)[i].ld == l->l_ld)
				h = &OBJECTS(&had_o)[i];
		if (!h) {
			if ((ok = add_object(l)))
				OBJECTS(&plan.objects)[plan.objects.n - 1].todo = true;
			continue;
		}
		/* Known: kept, with its slots; written again if asked, or if
		 * some were not relocated yet. */
		struct object c = *h;
		ok = reserve(&plan.objects, sizeof(c), plan.objects.n + 1) &&
		     reserve(&plan.slots, sizeof(struct slot), plan.slots.n + c.n);
		if (!ok)
			break;
		if (c.n) /* none: the lists may have no storage, memcpy's NULL */
			memcpy(SLOTS(&plan.slots) + plan.slots.n, SLOTS(&had_s) + c.first,
			       c.n * sizeof(struct slot));
		c.first = (uint32_t)plan.slots.n;
		c.todo = all || c.pending;
		plan.slots.n += c.n;
		OBJECTS(&plan.objects)[plan.objects.n++] = c;
	}
	if (!ok) { /* no memory: the plan as it was, looked at again later */
		release(&plan.objects, sizeof(struct object));
		release(&plan.slots, sizeof(struct slot));
		plan.objects = had_o;
		plan.slots = had_s;
		return -ENOMEM;
	}
	release(&had_o, sizeof(struct object));
	release(&had_s, sizeof(struct slot));
	return write_slots(failed);
}

/* dlopen() and dlmopen() calls begun, counted by the hooks. */
_Atomic unsigned long mstat_patch_dlopens;

/* Whether a slot or an object is not relocated yet: rescans go on. */
static bool
any_pending(void)
{
	if (plan.unready)
		return true;
	for (size_t i = 0; i < plan.objects.n; i++)
		if (OBJECTS(&plan.objects)[i].pending)
			return true;
	return false;
}

struct walk {
	bool all;          /* every object (the attach), or the new ones */
	bool changed;      /* objects were loaded or unloaded since the last */
	bool busy;         /* the list was in the middle of a change */
	int rc;
	const char *failed;
};

static int
on_list(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;

	(void)size;
	w->changed = info->dlpi_adds != plan.adds || info->dlpi_subs != plan.subs;
	if (!w->all && !w->changed && !any_pending())
		return 1;
	/* A change of the list under way: the loader holds this lock for it,
	 * so only a signal handler of the thread that makes it, whose lock
	 * this is, gets here meanwhile. */
	if (_r_debug.r_state != RT_CONSISTENT) {
		w->busy = true;
		return 1;
	}
	plan.adds = info->dlpi_adds;
	plan.subs = info->dlpi_subs;
	w->rc = walk_list(w->all, &w->failed);
	return 1; /* the first object is enough: the list is walked whole */
}

/*
 * The attach, the program's threads running: every object of the list,
 * under dl_iterate_phdr()'s lock, which every change of the list takes.
 * A lazy binding under way in another thread (_dl_fixup(), which stores
 * glibc's function once it has found it) may write a slot over after
 * this: rescans for a second after find and write it again, as they do
 * after a dlopen().
 */
/*
 * fork().  glibc does not reset dl_iterate_phdr()'s lock in the child:
 * a fork while another thread rescans (holding it) would leave the
 * child's first rescan waiting for ever.  So a fork waits for a rescan
 * under way to end, and holds the next ones off until it is made; a
 * handler of the rescanning thread itself that forks does not wait (that
 * thread goes on in the child, and ends its rescan there too).  In the
 * child, a thread of the program's that it does not have may have held
 * that lock, or the loader's, at the fork: it rescans again only once a
 * dlopen() of its own has begun (which needs them as well), so that it
 * never waits for a lock the program itself would not have waited for.
 * Objects the parent had not patched yet are then not counted in it.
 */
static bool held_for_fork;

static void
fork_prepare(void)
{
	pid_t self = gettid();

	held_for_fork = false;
	for (;;) {
		bool no = false;
		/* Acquire, as a rescan: the plan of the last. */
		if (atomic_compare_exchange_strong_explicit(&plan.rescanning, &no, true,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			held_for_fork = true;
			return;
		}
		if (atomic_load_explicit(&plan.rescanner, memory_order_relaxed) == self)
			return;
		sched_yield(); /* a rescan under way: a walk of the list */
	}
}

static void
fork_parent(void)
{
	if (held_for_fork)
		/* Release: pairs with fork_prepare()'s acquire, as a rescan's. */
		atomic_store_explicit(&plan.rescanning, false, memory_order_release);
}

static void
fork_child(void)
{
	plan.armed_until = 0;
	plan.dlopens_seen = atomic_load_explicit(&mstat_patch_dlopens, memory_order_relaxed);
	plan.unready = false;
	for (size_t i = 0; i < plan.objects.n; i++)
		OBJECTS(&plan.objects)[i].pending = false;
	atomic_store_explicit(&mstat_patch_pending, false, memory_order_relaxed);
	atomic_store_explicit(&plan.rescanner, 0, memory_order_relaxed);
	if (held_for_fork)
		atomic_store_explicit(&plan.rescanning, false, memory_order_release);
}

extern void *__dso_handle;
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);

int
mstat_patch_apply(char *err, size_t len)
{
	struct walk w = { .all = true };

	__register_atfork(fork_prepare, fork_parent, fork_child, __dso_handle);

	for (unsigned tries = 0; tries < 1000; tries++) {
		w.busy = false;
		dl_iterate_phdr(on_list, &w);
		if (!w.busy)
			break;
		struct timespec ts = { 0, 1000000 }; /* a load under way */
		nanosleep(&ts, NULL);
	}
	if (w.busy || w.rc < 0) {
		mstat_status_join(err, len, (const char *const[]){
			w.busy ? "the loader stayed busy" :
			w.rc == -ENOMEM ? "no memory for the list of slots to patch"
					: "cannot make the read-only slots of ",
			w.failed ? w.failed : "", w.failed ? " writable: mprotect: " : "",
			w.failed ? mstat_strerror(-w.rc) : "", NULL });
		return -1;
	}
	plan.armed_until = mstat_clock_ns(CLOCK_MONOTONIC_COARSE) + ARMED_NS;
	atomic_store_explicit(&mstat_patch_pending, true, memory_order_relaxed);
	return 0;
}

/*
 * A dlopen() began: its objects are patched once loaded, by the first
 * allocation after, in whatever thread (a dlopen() returns straight to
 * its caller, and its end cannot be seen).  So a rescan is due for a
 * while: an allocation at least a millisecond after the last rescan
 * makes one (by the coarse clock, whose read costs a few nanoseconds
 * every allocation meanwhile, and whose tick, 1 to 4 ms, spaces them
 * out), until a second has passed since a dlopen() was last seen
 * begun (or the attach), and once more after that; one of objects not
 * relocated yet, as long as there are.  A rescan that finds nothing
 * loaded or unloaded since the last (dl_iterate_phdr()'s counts) walks
 * no object, unless the window is open: then it checks every slot again
 * (a lazy binding of the attach's time may have written one over).
 */
void
mstat_patch_rescan(void)
{
	uint64_t now = mstat_clock_ns(CLOCK_MONOTONIC_COARSE);
	bool no = false;

	/* Relaxed: a time, which the rescan that stores it orders with
	 * nothing; the flag below orders the plan. */
	if (now - atomic_load_explicit(&plan.rescan_ns, memory_order_relaxed) < 1000000 ||
	    !atomic_compare_exchange_strong_explicit(&plan.rescanning, &no, true,
						     memory_order_acquire,
						     memory_order_relaxed))
		return; /* not due, or another thread rescans */
	atomic_store_explicit(&plan.rescanner, gettid(), memory_order_relaxed);
	unsigned long n = atomic_load_explicit(&mstat_patch_dlopens, memory_order_relaxed);
	if (n != plan.dlopens_seen) {
		plan.dlopens_seen = n;
		plan.armed_until = now + ARMED_NS;
	}
	struct walk w = { .all = now < plan.armed_until };
	dl_iterate_phdr(on_list, &w);
	if (w.rc < 0 && w.failed)
		mstat_status_warn("an object loaded since the attach is not "
				  "counted: mprotect", mstat_strerror(-w.rc));
	atomic_store_explicit(&mstat_patch_pending,
			      w.busy || w.rc == -ENOMEM || now < plan.armed_until ||
				      any_pending(),
			      memory_order_relaxed);
	atomic_store_explicit(&plan.rescan_ns, mstat_clock_ns(CLOCK_MONOTONIC_COARSE),
			      memory_order_relaxed);
	atomic_store_explicit(&plan.rescanner, 0, memory_order_relaxed);
	/* Release: the plan, to the next thread that rescans. */
	atomic_store_explicit(&plan.rescanning, false, memory_order_release);
}
