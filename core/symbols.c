/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - frames to function, file and line with libdw, and those
 * names as a user reads them; see symbols.h.
 */
#include "core/symbols.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The C++ runtime's demangler (libstdc++, <cxxabi.h>): a new string, or
 * NULL with *status < 0 if `mangled` is not a mangled name. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

/* ---- names as a user reads them ---- */

/* The suffixes compilers give a function's clones and parts (GCC:
 * .constprop.N, .isra.N, .part.N, .cold, .lto_priv.N, .localalias;
 * clang's ThinLTO: .llvm.N), with or without a number. */
static bool
clone_kind(const char *k, size_t n)
{
	static const char *const kinds[] = { "constprop", "isra", "part", "cold",
		"lto_priv", "clone", "localalias", "specialized", "llvm" };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i]) == n && memcmp(kinds[i], k, n) == 0)
			return true;
	return false;
}

static bool
all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Cuts the clone suffixes off the end of `s`, however many
 * ("foo.part.0.cold"); a name is never cut to nothing. */
static void
strip_clones(char *s)
{
	for (;;) {
		char *dot = strrchr(s, '.');
		if (!dot || dot == s)
			return;
		char *kind = dot + 1, *end = dot + strlen(dot);
		if (all_digits(dot + 1)) {
			/* ".kind.N": the kind is before the number. */
			*dot = '\0';
			kind = strrchr(s, '.');
			*dot = '.';
			if (!kind || kind == s)
				return;
			end = dot;
			dot = kind++;
		}
		if (!clone_kind(kind, (size_t)(end - kind)))
			return;
		*dot = '\0';
	}
}

char *
mstat_symbols_readable(const char *symbol)
{
	char *s = strdup(symbol), *d;
	int status = -1;

	if (!s)
		return NULL;
	strip_clones(s);
	/* Only a name that says it is mangled: "i" would demangle to
	 * "int". */
	if (strncmp(s, "_Z", 2) != 0)
		return s;
	d = __cxa_demangle(s, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return s;
	}
	free(s);
	return d;
}

/* `path` with empty and "." components dropped and ".." taking the
 * component before it off where there is one (a name, not ".."), into
 * `out`; "/.." is "/".  Lexical, as a compiler's names are: the files
 * need not exist here.  NULL if it does not fit. */
static char *
normalise(char *out, size_t len, const char *path)
{
	size_t n = 0, floor = 0; /* out[0..floor) is never taken off */
	const char *p = path;

	if (len < 2)
		return NULL;
	if (*p == '/')
		out[n++] = '/', floor = 1;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t c = (size_t)(e - p);
		if (c == 0 || (c == 1 && p[0] == '.')) {
			p = e;
			continue;
		}
		if (c == 2 && p[0] == '.' && p[1] == '.' && n > floor) {
			while (n > floor && out[n - 1] != '/')
				n--;
			if (n > floor)
				n--; /* the '/' before it */
			p = e;
			continue;
		}
		if (c == 2 && p[0] == '.' && p[1] == '.' && floor == 1 &&
		    out[0] == '/') {
			p = e; /* "/.." is "/" */
			continue;
		}
		bool sep = n > 0 && out[n - 1] != '/';
		if (n + sep + c + 1 > len)
			return NULL;
		if (sep)
			out[n++] = '/';
		memcpy(out + n, p, c);
		n += c;
		if (c == 2 && p[0] == '.' && p[1] == '.')
			floor = n; /* a leading "..": nothing before it to take */
		p = e;
	}
	if (n == 0)
		out[n++] = '.';
	out[n] = '\0';
	return out;
}

char *
mstat_symbols_source_path(char *out, size_t len, const char *comp_dir, const char *file)
{
	char joined[2 * PATH_MAX];

	if (!len)
		return out;
	if (file[0] == '/' && normalise(out, len, file))
		return out;
	if (file[0] != '/' && comp_dir && comp_dir[0] == '/' &&
	    (size_t)snprintf(joined, sizeof(joined), "%s/%s", comp_dir, file) <
		    sizeof(joined) &&
	    normalise(out, len, joined))
		return out;
	if (!normalise(out, len, file))
		snprintf(out, len, "%s", file);
	return out;
}

char *
mstat_symbols_source_shown(char *out, size_t len, const char *comp_dir,
			   const char *file)
{
	size_t up = 0;

	if (!len)
		return out;
	if (file[0] == '/' || !normalise(out, len, file)) {
		snprintf(out, len, "%s", file); /* as recorded */
		return out;
	}
	/* The directory the leading ".." reach from the build directory is
	 * the source tree's: the rest is relative to it. */
	char *rest = out;
	for (; strncmp(rest, "../", 3) == 0; up++)
		rest += 3;
	if (strcmp(rest, "..") == 0 || strcmp(rest, ".") == 0) {
		snprintf(out, len, "%s", file);
		return out;
	}
	/* Unless they climb to / (a build directory outside the tree, as
	 * far from it as from /): then the path from / says more. */
	size_t depth = 0;
	if (up && comp_dir && comp_dir[0] == '/') {
		char dir[PATH_MAX];
		if (normalise(dir, sizeof(dir), comp_dir))
			for (const char *c = dir; *c; c++)
				depth += *c == '/' && c[1];
		if (up >= depth)
			return mstat_symbols_source_path(out, len, comp_dir, file);
	}
	memmove(out, rest, strlen(rest) + 1);
	return out;
}

/* ---- the files, shared ---- */

/*
 * A file of the cache: one ELF file as a module names it, its libdw
 * handle (the file reported at its link-time addresses: a module's
 * frames are looked up at pc - bias, whatever the process loaded it at,
 * so one handle serves every process that loads it), and the names of
 * the addresses looked up in it so far.
 *
 * The cache's lock guards the list and each file's key, refs and links;
 * a file's own lock guards the rest: libdw is not thread-safe, and a
 * lookup that misses the memo calls it.
 */
#define MEMO_MAX 65536u      /* addresses remembered per file */

/* A function symbol of a file. */
struct fsym {
	uint64_t addr, size;     /* size 0: not known */
	const char *name;        /* libdw's, as long as the file is open */
	int rank;                /* at one address, the higher is taken */
	int index;               /* in the symbol table: the earlier is
				  * taken among equals */
};

/* A section of code: [start, end). */
struct code {
	uint64_t start, end;
};

struct named {
	uint64_t addr;           /* in the file; 0 marks an empty slot, and
				  * is never looked up (below) */
	const char *function, *symbol, *file, *path; /* interned, or NULL */
	int line;
};

struct symfile {
	struct symfile *prev, *next;  /* the cache's list, most recent first */
	unsigned refs;
	/* The key: the path, and the build id the process recorded, or,
	 * without one, what stat() said of the file. */
	char path[MSTAT_MODULE_PATH];
	uint32_t build_id_len;
	uint8_t build_id[MSTAT_BUILD_ID_MAX];
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;

	pthread_mutex_t lock;
	bool loaded;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
	Dwfl *dwfl;
	Dwfl_Module *mod;            /* NULL: the file names nothing */
	struct fsym *syms;           /* its functions, by address */
	size_t nsyms;
	struct code *code;           /* its sections of code */
	size_t ncode;
	struct named *memo;          /* open addressing by addr */
	uint32_t memo_n, memo_cap;
	char **strings;              /* interned names, open addressing */
	uint32_t strings_n, strings_cap;
};

struct mstat_symcache {
	pthread_mutex_t lock;
	struct symfile *head, *tail;
	size_t n, max;
};

struct mstat_symcache *
mstat_symbols_cache_new(size_t max_files)
{
	struct mstat_symcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->max = max_files ? max_files : 1;
	return c;
}

static void
symfile_free(struct symfile *f)
{
	if (f->dwfl)
		dwfl_end(f->dwfl);
	for (uint32_t i = 0; i < f->strings_cap; i++)
		free(f->strings[i]);
	free(f->strings);
	free(f->memo);
	free(f->syms);
	free(f->code);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void
mstat_symbols_cache_free(struct mstat_symcache *c)
{
	if (!c)
		return;
	for (struct symfile *f = c->head, *next; f; f = next) {
		next = f->next;
		symfile_free(f);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

size_t
mstat_symbols_cache_files(struct mstat_symcache *c)
{
	pthread_mutex_lock(&c->lock);
	size_t n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void
unlink_file(struct mstat_symcache *c, struct symfile *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		c->head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		c->tail = f->prev;
	f->prev = f->next = NULL;
}

static void
push_front(struct mstat_symcache *c, struct symfile *f)
{
	f->next = c->head;
	if (c->head)
		c->head->prev = f;
	c->head = f;
	if (!c->tail)
		c->tail = f;
}

/* Whether `f` is the file `m` names, as `st` (NULL: not stat()ed) says. */
static bool
same_key(const struct symfile *f, const struct mstat_profile_module *m,
	 const struct stat *st)
{
	if (strcmp(f->path, m->path) != 0 || f->build_id_len != m->build_id_len)
		return false;
	if (m->build_id_len)
		return memcmp(f->build_id, m->build_id, m->build_id_len) == 0;
	return st && f->dev == st->st_dev && f->ino == st->st_ino &&
	       f->size == st->st_size && f->mtime.tv_sec == st->st_mtim.tv_sec &&
	       f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* The file of module `m`, held (symfile_put() lets it go); NULL if it
 * names none (not a path from /, or, without a build id, a file stat()
 * cannot see) or out of memory.  Its file is opened at its first
 * lookup. */
static struct symfile *
symfile_get(struct mstat_symcache *c, const struct mstat_profile_module *m)
{
	struct stat st;
	bool stated = false;

	if (m->path[0] != '/')
		return NULL; /* the vDSO, or unknown */
	/* A file without a build id is known by what stat() says: one put
	 * in its place since is another file.  (With a build id, the file
	 * opened is checked against it.) */
	if (!m->build_id_len) {
		if (stat(m->path, &st) != 0 || !S_ISREG(st.st_mode))
			return NULL;
		stated = true;
	}
	pthread_mutex_lock(&c->lock);
	struct symfile *f = c->head;
	while (f && !same_key(f, m, stated ? &st : NULL))
		f = f->next;
	if (f) {
		unlink_file(c, f);
		push_front(c, f);
		f->refs++;
		pthread_mutex_unlock(&c->lock);
		return f;
	}
	/* Room for it: the least recently used files nobody holds go. */
	for (struct symfile *o = c->tail, *prev; o && c->n >= c->max; o = prev) {
		prev = o->prev;
		if (o->refs)
			continue;
		unlink_file(c, o);
		c->n--;
		symfile_free(o);
	}
	f = calloc(1, sizeof(*f));
	if (f) {
		snprintf(f->path, sizeof(f->path), "%s", m->path);
		f->build_id_len = m->build_id_len;
		memcpy(f->build_id, m->build_id, sizeof(f->build_id));
		if (stated) {
			f->dev = st.st_dev;
			f->ino = st.st_ino;
			f->size = st.st_size;
			f->mtime = st.st_mtim;
		}
		pthread_mutex_init(&f->lock, NULL);
		f->refs = 1;
		push_front(c, f);
		c->n++;
	}
	pthread_mutex_unlock(&c->lock);
	return f;
}

static void
symfile_put(struct mstat_symcache *c, struct symfile *f)
{
	pthread_mutex_lock(&c->lock);
	f->refs--;
	pthread_mutex_unlock(&c->lock);
}

/* Whether the file reported as `mod` has the build id the target saw. */
static int
same_build(Dwfl_Module *mod, const struct symfile *f)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);

	if (f->build_id_len == 0)
		return 1; /* nothing to compare with */
	return n > 0 && (unsigned)n >= f->build_id_len &&
	       memcmp(bits, f->build_id, f->build_id_len) == 0;
}

static int
by_addr_rank(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->index < y->index) - (x->index > y->index);
}

/*
 * f's functions, sorted by address: libdw's own lookup by address
 * (dwfl_module_addrname) walks the whole symbol table each time, some
 * 400 us in a C library of 10,000 symbols; a search of this table takes
 * a few dozen comparisons.  The symbols are the ones libdw would search
 * (the file's table, or its debug file's, and a MiniDebugInfo's); only
 * functions name code.  At one address (aliases), a symbol of known size
 * is taken before one without, then a global before a weak before a
 * local one, then the first in the table, much as libdw takes them.
 * Beside them, the file's sections of code: a symbol of unknown size
 * names only addresses of its own section.
 */
static void
symbols_sorted(struct symfile *f)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	size_t nscn = 0;
	if (elf && elf_getshdrnum(elf, &nscn) == 0 &&
	    (f->code = calloc(nscn ? nscn : 1, sizeof(*f->code)))) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
			    (sh.sh_flags & SHF_ALLOC) && f->ncode < nscn)
				f->code[f->ncode++] = (struct code){
					sh.sh_addr, sh.sh_addr + sh.sh_size };
		}
	}
	int n = dwfl_module_getsymtab(f->mod);

	if (n <= 1 || !(f->syms = calloc((size_t)n, sizeof(*f->syms))))
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr,
							   &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (!name || !*name || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		f->syms[f->nsyms++] = (struct fsym){
			.addr = addr, .size = sym.st_size, .name = name,
			.rank = (sym.st_size ? 4 : 0) +
				(bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0),
			.index = i,
		};
	}
	qsort(f->syms, f->nsyms, sizeof(*f->syms), by_addr_rank);
}

/* The section of code of f holding `a`, or NULL. */
static const struct code *
code_of(const struct symfile *f, uint64_t a)
{
	for (size_t i = 0; i < f->ncode; i++)
		if (a - f->code[i].start < f->code[i].end - f->code[i].start)
			return &f->code[i];
	return NULL;
}

/* The function at address `a` of f: the one of known size holding it
 * that starts last (the innermost), or, if none does, the one of unknown
 * size just below it, in its section, with no other in between.  NULL
 * if none. */
static const char *
symbol_at(const struct symfile *f, uint64_t a)
{
	size_t lo = 0, hi = f->nsyms;
	const struct fsym *sizeless = NULL;
	bool blocked = false;

	while (lo < hi) { /* the first symbol above a */
		size_t mid = lo + (hi - lo) / 2;
		if (f->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Down from there, the best of each address first; a function
	 * nested in another is a few entries below at most. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 64; k++) {
		const struct fsym *s = &f->syms[i];
		if (s->size) {
			if (a - s->addr < s->size)
				return s->name;
			blocked = true;
		} else if (!blocked && !sizeless) {
			sizeless = s;
		}
	}
	if (!sizeless)
		return NULL;
	const struct code *c = code_of(f, a);
	return c && c == code_of(f, sizeless->addr) ? sizeless->name : NULL;
}

/* Opens f's file, under its lock: f->mod is NULL if it cannot name
 * anything. */
static void
symfile_load(struct symfile *f)
{
	struct stat st;

	f->loaded = true;
	f->cb.find_elf = dwfl_build_id_find_elf;
	f->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	f->cb.debuginfo_path = &f->debuginfo_path;
	f->dwfl = dwfl_begin(&f->cb);
	if (!f->dwfl)
		return; /* frames stay unnamed */
	/* The path is the target's: opened without waiting (a FIFO would
	 * block open() for ever), and used only if it is a regular file,
	 * and the one its key says.  libdwfl keeps the descriptor if it
	 * takes the file. */
	int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (!f->build_id_len &&
	     (st.st_dev != f->dev || st.st_ino != f->ino || st.st_size != f->size ||
	      st.st_mtim.tv_sec != f->mtime.tv_sec ||
	      st.st_mtim.tv_nsec != f->mtime.tv_nsec))) {
		close(fd);
		return;
	}
	dwfl_report_begin(f->dwfl);
	/* At its link-time addresses (a load bias of 0). */
	Dwfl_Module *mod = dwfl_report_elf(f->dwfl, f->path, f->path, fd, 0, false);
	if (!mod)
		close(fd);
	dwfl_report_end(f->dwfl, NULL, NULL);
	/* A file that no longer has its build id names nothing. */
	if (mod && same_build(mod, f)) {
		f->mod = mod;
		symbols_sorted(f);
	}
}

static uint64_t
hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x;
}

static uint64_t
hash_str(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* `s` interned in f (a copy, kept as long as f), or NULL if out of
 * memory or if `s` is NULL. */
static const char *
intern(struct symfile *f, const char *s)
{
	if (!s)
		return NULL;
	if ((f->strings_n + 1) * 2 > f->strings_cap) {
		uint32_t cap = f->strings_cap ? 2 * f->strings_cap : 256;
		char **t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (uint32_t i = 0; i < f->strings_cap; i++) {
			if (!f->strings[i])
				continue;
			uint32_t k = (uint32_t)hash_str(f->strings[i]) & (cap - 1);
			while (t[k])
				k = (k + 1) & (cap - 1);
			t[k] = f->strings[i];
		}
		free(f->strings);
		f->strings = t;
		f->strings_cap = cap;
	}
	uint32_t k = (uint32_t)hash_str(s) & (f->strings_cap - 1);
	for (; f->strings[k]; k = (k + 1) & (f->strings_cap - 1))
		if (strcmp(f->strings[k], s) == 0)
			return f->strings[k];
	if (!(f->strings[k] = strdup(s)))
		return NULL;
	f->strings_n++;
	return f->strings[k];
}

/* The memo's slot of `addr`: its entry, or the empty slot for it (NULL
 * if there is no memo yet). */
static struct named *
memo_slot(struct symfile *f, uint64_t addr)
{
	if (!f->memo_cap)
		return NULL;
	uint32_t k = (uint32_t)hash64(addr) & (f->memo_cap - 1);
	while (f->memo[k].addr && f->memo[k].addr != addr)
		k = (k + 1) & (f->memo_cap - 1);
	return &f->memo[k];
}

/* Room in the memo for one more entry: false once it holds MEMO_MAX
 * (what is looked up beyond that is named each time) or out of memory. */
static bool
memo_room(struct symfile *f)
{
	if (f->memo_n >= MEMO_MAX)
		return false;
	if ((f->memo_n + 1) * 2 <= f->memo_cap)
		return true;
	uint32_t cap = f->memo_cap ? 2 * f->memo_cap : 1024;
	struct named *t = calloc(cap, sizeof(*t)), *old = f->memo;
	uint32_t oldcap = f->memo_cap;
	if (!t)
		return false;
	f->memo = t;
	f->memo_cap = cap;
	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].addr)
			*memo_slot(f, old[i].addr) = old[i];
	free(old);
	return true;
}

/* ---- frames ---- */

struct mstat_symbols {
	const struct mstat_profile *p;
	struct mstat_symcache *cache;
	bool own_cache;
	struct symfile **files;  /* by module of p: held, or NULL */
	bool *got;               /* by module: files[] asked for */
	/* The last lookup's names, when its file does not keep them
	 * (struct mstat_frame points here). */
	char *function, *symbol;
	char file[PATH_MAX], path[PATH_MAX];
};

struct mstat_symbols *
mstat_symbols_new_cached(const struct mstat_profile *p, struct mstat_symcache *c)
{
	struct mstat_symbols *s = calloc(1, sizeof(*s));
	size_t n = p->nmodules ? p->nmodules : 1;

	if (!s)
		return NULL;
	s->p = p;
	s->files = calloc(n, sizeof(*s->files));
	s->got = calloc(n, sizeof(*s->got));
	s->cache = c;
	if (!c) {
		s->cache = mstat_symbols_cache_new(n);
		s->own_cache = true;
	}
	if (!s->files || !s->got || !s->cache) {
		mstat_symbols_free(s);
		return NULL;
	}
	return s;
}

struct mstat_symbols *
mstat_symbols_new(const struct mstat_profile *p)
{
	return mstat_symbols_new_cached(p, NULL);
}

void
mstat_symbols_free(struct mstat_symbols *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->files && s->cache && i < s->p->nmodules; i++)
		if (s->files[i])
			symfile_put(s->cache, s->files[i]);
	if (s->own_cache)
		mstat_symbols_cache_free(s->cache);
	free(s->files);
	free(s->got);
	free(s->function);
	free(s->symbol);
	free(s);
}

/* Names `a`, an address of f's file, into `n`, under f's lock: the
 * strings in s's buffers (keep: false) or interned in f (keep). */
static void
name_address(struct mstat_symbols *s, struct symfile *f, uint64_t a,
	     struct named *n, bool keep)
{
	const char *symbol = symbol_at(f, a);
	char *readable = symbol ? mstat_symbols_readable(symbol) : NULL;
	char file[PATH_MAX], path[PATH_MAX];
	const char *shown = NULL, *full = NULL;
	int line = 0;

	Dwfl_Line *l = dwfl_module_getsrc(f->mod, a);
	if (l) {
		const char *src = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
		if (src) {
			const char *dir = dwfl_line_comp_dir(l);
			shown = mstat_symbols_source_shown(file, sizeof(file), dir, src);
			full = mstat_symbols_source_path(path, sizeof(path), dir, src);
		} else {
			line = 0;
		}
	}
	n->addr = a;
	n->line = line;
	if (keep) {
		n->symbol = intern(f, symbol);
		n->function = readable ? intern(f, readable) : n->symbol;
		n->file = intern(f, shown);
		n->path = intern(f, full);
		free(readable);
		return;
	}
	free(s->symbol);
	free(s->function);
	s->symbol = symbol ? strdup(symbol) : NULL;
	s->function = readable ? readable : symbol ? strdup(symbol) : NULL;
	n->symbol = s->symbol;
	n->function = s->function;
	n->file = shown ? snprintf(s->file, sizeof(s->file), "%s", shown), s->file : NULL;
	n->path = full ? snprintf(s->path, sizeof(s->path), "%s", full), s->path : NULL;
}

void
mstat_symbols_lookup(struct mstat_symbols *s, uint64_t pc, struct mstat_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->module = mstat_reader_profile_module_of(s->p, pc);
	if (!out->module || pc == 0)
		return;
	uint32_t i = (uint32_t)(out->module - s->p->modules);
	if (!s->got[i]) {
		s->got[i] = true;
		s->files[i] = symfile_get(s->cache, out->module);
	}
	struct symfile *f = s->files[i];
	/* The call, not the instruction after it, at the file's address. */
	uint64_t a = pc - 1 - out->module->bias;
	if (!f || a == 0)
		return;
	struct named n = { 0 };
	pthread_mutex_lock(&f->lock);
	if (!f->loaded)
		symfile_load(f);
	if (f->mod) {
		struct named *slot = memo_slot(f, a);
		if (slot && slot->addr) {
			n = *slot;
		} else if (memo_room(f)) {
			name_address(s, f, a, &n, true);
			*memo_slot(f, a) = n;
			f->memo_n++;
		} else {
			name_address(s, f, a, &n, false);
		}
	}
	pthread_mutex_unlock(&f->lock);
	out->symbol = n.symbol;
	out->function = n.function;
	if (n.file) {
		out->file = n.file;
		out->path = n.path;
		out->line = n.line;
	}
}
