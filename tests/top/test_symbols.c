/* SPDX-License-Identifier: MIT */
/*
 * test_symbols.c - naming frames from a module list the target wrote
 * (symbols.h).  The list is the target's, so a path may name anything: a
 * FIFO, which a plain open() would wait on for ever, is skipped, and the
 * modules that are ELF files are still used.  Names are shown as a user
 * reads them: C++ demangled, without the compiler's clone suffixes, files
 * relative to the source tree rather than to the build directory; pprof
 * keeps the symbol whole, and the file from /.  The pprof encoder writes
 * Go's heap profile: its sample types, period and labels, and deltas.
 * A cache of files shared by threads names the same, whatever the load
 * address, checks build ids, and stays within its bounds.
 */
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <zlib.h>

#include "core/pprof.h"
#include "core/symbols.h"

__attribute__((noinline)) static int
mstat_test_named_function(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* Functions with the symbols a C++ method and a GCC clone have. */
__attribute__((noinline, used)) static int
cxx_method(int x) __asm__("_ZN5Cache8rememberEm");
__attribute__((noinline, used)) static int
cxx_method(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 2;
}

__attribute__((noinline, used)) static int
gcc_clone(int x) __asm__("renew.constprop.0");
__attribute__((noinline, used)) static int
gcc_clone(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 3;
}

/* The load address of this program (the first object listed). */
static int
first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1;
}

static void
on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: reading the module list hangs\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void
test_fifo_in_module_list(void **state)
{
	char dir[] = "/tmp/mstat-test-symbols.XXXXXX", fifo[64], exe[PATH_MAX];
	struct mstat_profile_module mods[2];
	struct mstat_profile p = { .nmodules = 2, .modules = mods };
	uint64_t bias = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	memset(mods, 0, sizeof(mods));
	memcpy(mods[0].path, fifo, strlen(fifo) + 1);
	mods[0].start = 0x1000;
	mods[0].end = 0x2000;
	dl_iterate_phdr(first_object, &bias);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_true(strlen(exe) < sizeof(mods[1].path));
	memcpy(mods[1].path, exe, strlen(exe) + 1);
	mods[1].bias = bias;
	mods[1].start = (uint64_t)(uintptr_t)mstat_test_named_function - 4096;
	mods[1].end = (uint64_t)(uintptr_t)mstat_test_named_function + 4096;

	signal(SIGALRM, on_alarm);
	alarm(10);
	struct mstat_symbols *s = mstat_symbols_new(&p);
	alarm(0);
	assert_non_null(s);
	struct mstat_frame f;
	mstat_symbols_lookup(s, (uint64_t)(uintptr_t)mstat_test_named_function + 4, &f);
	assert_ptr_equal(f.module, &mods[1]);
	assert_non_null(f.function);
	assert_string_equal(f.function, "mstat_test_named_function");
	mstat_symbols_free(s);
	unlink(fifo);
	rmdir(dir);
}

static void
readable(const char *symbol, const char *want)
{
	char *got = mstat_symbols_readable(symbol);

	assert_non_null(got);
	if (strcmp(got, want) != 0)
		fail_msg("%s: %s, not %s", symbol, got, want);
	free(got);
}

static void
test_readable_names(void **state)
{
	(void)state;
	readable("main", "main");
	readable("i", "i"); /* not "int": only _Z names are mangled */
	readable("_ZN5Cache8rememberEm", "Cache::remember(unsigned long)");
	readable("_ZN5Cache8rememberEm.isra.0", "Cache::remember(unsigned long)");
	readable("renew.constprop.0", "renew");
	readable("renew.constprop.12.isra.0", "renew");
	readable("parse.part.0", "parse");
	readable("parse.part.0.cold", "parse");
	readable("parse.cold", "parse");
	readable("helper.lto_priv.0", "helper");
	readable("helper.llvm.1234567890", "helper");
	readable("_ZN3foo3barEv.cold", "foo::bar()");
	/* Not clone suffixes: kept as they are. */
	readable("v1.2", "v1.2");
	readable("name.with.dots", "name.with.dots");
	readable(".cold", ".cold");
	readable("_Znotmangled", "_Znotmangled");
}

static void
shown(const char *comp_dir, const char *file, const char *want_shown,
      const char *want_path)
{
	char a[64], b[64];

	mstat_symbols_source_shown(a, sizeof(a), comp_dir, file);
	mstat_symbols_source_path(b, sizeof(b), comp_dir, file);
	if (strcmp(a, want_shown) != 0 || strcmp(b, want_path) != 0)
		fail_msg("%s in %s: shown %s, path %s; not %s, %s", file,
			 comp_dir ? comp_dir : "(null)", a, b, want_shown,
			 want_path);
}

static void
test_source_names(void **state)
{
	(void)state;
	/* meson and CMake: the build directory in the source tree. */
	shown("/src/proj/build", "../demo/workload.c", "demo/workload.c",
	      "/src/proj/demo/workload.c");
	shown("/src/proj/build/x86", "../../lib/./a/../b.c", "lib/b.c",
	      "/src/proj/lib/b.c");
	/* make: in the source tree, as recorded. */
	shown("/src/proj", "demo/workload.c", "demo/workload.c",
	      "/src/proj/demo/workload.c");
	shown("/src/proj", "./workload.c", "workload.c",
	      "/src/proj/workload.c");
	/* Absolute, as recorded (the path resolved). */
	shown("/b", "/src/proj/x.c", "/src/proj/x.c", "/src/proj/x.c");
	shown("/b", "/src/proj/../x.c", "/src/proj/../x.c", "/src/x.c");
	/* A build directory as far from the tree as from /: from /. */
	shown("/tmp/b", "../../src/x.c", "/src/x.c", "/src/x.c");
	/* No compilation directory known. */
	shown(NULL, "../demo/w.c", "demo/w.c", "../demo/w.c");
	shown(NULL, "..", "..", "..");
	/* Too long for the room: as recorded, cut. */
	shown("/b", "../0123456789012345678901234567890123456789"
		    "0123456789012345678901234567890123456789.c",
	      "../012345678901234567890123456789012345678901234567890123456789",
	      "../012345678901234567890123456789012345678901234567890123456789");
}

/* The test's own binary, named: a C++ symbol demangled and a clone's
 * suffix gone in `function`, both whole in `symbol`; its source file
 * relative to the source tree in `file` (meson compiles it as
 * "../tests/top/test_symbols.c" in the build directory), and from /
 * in `path`. */
static void
test_frames_named_readably(void **state)
{
	char exe[PATH_MAX];
	struct mstat_profile_module mod;
	struct mstat_profile p = { .nmodules = 1, .modules = &mod };
	uint64_t bias = 0;
	static const struct {
		int (*fn)(int);
		const char *function, *symbol;
	} want[] = {
		{ cxx_method, "Cache::remember(unsigned long)", "_ZN5Cache8rememberEm" },
		{ gcc_clone, "renew", "renew.constprop.0" },
		{ mstat_test_named_function, "mstat_test_named_function",
		  "mstat_test_named_function" },
	};

	(void)state;
	dl_iterate_phdr(first_object, &bias);
	assert_non_null(realpath("/proc/self/exe", exe));
	memset(&mod, 0, sizeof(mod));
	memcpy(mod.path, exe, strlen(exe) + 1);
	mod.bias = bias;
	mod.start = 0;
	mod.end = UINT64_MAX;
	struct mstat_symbols *s = mstat_symbols_new(&p);
	assert_non_null(s);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mstat_frame f;
		mstat_symbols_lookup(s, (uint64_t)(uintptr_t)want[i].fn + 4, &f);
		assert_non_null(f.function);
		assert_string_equal(f.function, want[i].function);
		assert_string_equal(f.symbol, want[i].symbol);
		assert_non_null(f.file);
		assert_non_null(f.path);
		static const char src[] = "tests/top/test_symbols.c";
		size_t n = strlen(f.file), m = strlen(f.path);
		if (n < sizeof(src) - 1 || strcmp(f.file + n - (sizeof(src) - 1), src) ||
		    strncmp(f.file, "../", 3) == 0 || strstr(f.file, "/../"))
			fail_msg("file %s", f.file);
		if (f.path[0] != '/' || strstr(f.path, "/../") ||
		    strstr(f.path, "/./") || m < sizeof(src) ||
		    strcmp(f.path + m - (sizeof(src) - 1), src) ||
		    f.path[m - sizeof(src)] != '/' || access(f.path, R_OK) != 0)
			fail_msg("path %s", f.path);
		assert_true(f.line > 0);
	}
	mstat_symbols_free(s);
}

/* ---- the shared cache ---- */

/* This program as a profile's module: its path, load bias, range and,
 * if `with_id`, the build id its notes hold. */
static int
own_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mstat_profile_module *m = arg;

	(void)size;
	m->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *n = (const void *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = n + ph->p_memsz;
		while (n + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *h = (const void *)n;
			const unsigned char *name = n + sizeof(*h);
			const unsigned char *desc = name + ((h->n_namesz + 3) & ~3u);
			if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 &&
			    h->n_descsz <= MSTAT_BUILD_ID_MAX) {
				memcpy(m->build_id, desc, h->n_descsz);
				m->build_id_len = h->n_descsz;
			}
			n = desc + ((h->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

static void
own_module(struct mstat_profile_module *m, bool with_id)
{
	char exe[PATH_MAX];

	memset(m, 0, sizeof(*m));
	dl_iterate_phdr(own_build_id, m);
	assert_true(m->build_id_len > 0);
	if (!with_id)
		m->build_id_len = 0;
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_true(strlen(exe) < sizeof(m->path));
	memcpy(m->path, exe, strlen(exe) + 1);
	m->start = m->bias;
	m->end = m->bias + (UINT64_C(1) << 32);
}

static const struct {
	int (*fn)(int);
	const char *function;
} known[] = {
	{ cxx_method, "Cache::remember(unsigned long)" },
	{ gcc_clone, "renew" },
	{ mstat_test_named_function, "mstat_test_named_function" },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

/* Every known function named through `s`, for a module loaded `shift`
 * bytes above where this process has it. */
static void
expect_named(struct mstat_symbols *s, uint64_t shift)
{
	for (size_t i = 0; i < NKNOWN; i++) {
		struct mstat_frame f;
		mstat_symbols_lookup(s, (uint64_t)(uintptr_t)known[i].fn + 4 + shift, &f);
		if (!f.function || strcmp(f.function, known[i].function) != 0)
			fail_msg("%s named %s", known[i].function,
				 f.function ? f.function : "(nothing)");
		assert_non_null(f.file);
		assert_true(f.line > 0);
	}
}

/* One file for every process that loads it, wherever: two profiles of
 * the same build loaded at different addresses name the same functions
 * through one file of the cache. */
static void
test_cache_one_file_any_bias(void **state)
{
	struct mstat_profile_module a, b;
	struct mstat_profile pa = { .nmodules = 1, .modules = &a };
	struct mstat_profile pb = { .nmodules = 1, .modules = &b };
	const uint64_t shift = UINT64_C(0x7000000000);

	(void)state;
	own_module(&a, true);
	b = a;
	b.bias += shift;
	b.start += shift;
	b.end += shift;
	struct mstat_symcache *c = mstat_symbols_cache_new(8);
	assert_non_null(c);
	struct mstat_symbols *sa = mstat_symbols_new_cached(&pa, c);
	struct mstat_symbols *sb = mstat_symbols_new_cached(&pb, c);
	expect_named(sa, 0);
	expect_named(sb, shift);
	assert_int_equal(mstat_symbols_cache_files(c), 1);
	/* Remembered: the same names again, from the memo. */
	expect_named(sb, shift);
	mstat_symbols_free(sa);
	mstat_symbols_free(sb);
	mstat_symbols_cache_free(c);
}

/* A build id the file does not carry (it was replaced since the process
 * loaded it) names nothing, and is another file of the cache than the
 * right one, which still names. */
static void
test_cache_build_id_checked(void **state)
{
	struct mstat_profile_module good, bad;
	struct mstat_profile pg = { .nmodules = 1, .modules = &good };
	struct mstat_profile pb = { .nmodules = 1, .modules = &bad };

	(void)state;
	own_module(&good, true);
	bad = good;
	bad.build_id[0] ^= 0xff;
	struct mstat_symcache *c = mstat_symbols_cache_new(8);
	struct mstat_symbols *sb = mstat_symbols_new_cached(&pb, c);
	struct mstat_frame f;
	mstat_symbols_lookup(sb, (uint64_t)(uintptr_t)cxx_method + 4, &f);
	assert_ptr_equal(f.module, &bad);
	assert_null(f.function);
	assert_null(f.file);
	struct mstat_symbols *sg = mstat_symbols_new_cached(&pg, c);
	expect_named(sg, 0);
	assert_int_equal(mstat_symbols_cache_files(c), 2);
	/* Without a build id: known by what stat() says, and named. */
	struct mstat_profile_module none;
	struct mstat_profile pn = { .nmodules = 1, .modules = &none };
	own_module(&none, false);
	struct mstat_symbols *sn = mstat_symbols_new_cached(&pn, c);
	expect_named(sn, 0);
	assert_int_equal(mstat_symbols_cache_files(c), 3);
	mstat_symbols_free(sb);
	mstat_symbols_free(sg);
	mstat_symbols_free(sn);
	mstat_symbols_cache_free(c);
}

/* At most max_files files nobody uses are kept, the least recently used
 * going first; files in use are never dropped. */
static void
test_cache_bounded(void **state)
{
	struct mstat_profile_module m[3];
	struct mstat_profile p[3];
	struct mstat_symbols *s[3];

	(void)state;
	struct mstat_symcache *c = mstat_symbols_cache_new(2);
	for (int i = 0; i < 3; i++) {
		own_module(&m[i], true);
		/* Three files, as keys go, none of them the right one. */
		m[i].build_id[0] ^= (uint8_t)(i + 1);
		p[i] = (struct mstat_profile){ .nmodules = 1, .modules = &m[i] };
		s[i] = mstat_symbols_new_cached(&p[i], c);
		struct mstat_frame f;
		mstat_symbols_lookup(s[i], (uint64_t)(uintptr_t)cxx_method + 4, &f);
	}
	/* All three in use: none dropped. */
	assert_int_equal(mstat_symbols_cache_files(c), 3);
	for (int i = 0; i < 3; i++)
		mstat_symbols_free(s[i]);
	/* A fourth: room is made for it, down to two. */
	own_module(&m[0], true);
	s[0] = mstat_symbols_new_cached(&p[0], c);
	expect_named(s[0], 0);
	assert_int_equal(mstat_symbols_cache_files(c), 2);
	mstat_symbols_free(s[0]);
	mstat_symbols_cache_free(c);
}

/* More addresses than a file remembers: the later ones are named all
 * the same. */
static void
test_cache_memo_full(void **state)
{
	struct mstat_profile_module m;
	struct mstat_profile p = { .nmodules = 1, .modules = &m };

	(void)state;
	own_module(&m, true);
	struct mstat_symcache *c = mstat_symbols_cache_new(1);
	struct mstat_symbols *s = mstat_symbols_new_cached(&p, c);
	struct mstat_frame f;
	/* 70000 addresses never looked up again, past the program's end. */
	for (uint64_t i = 0; i < 70000; i++)
		mstat_symbols_lookup(s, m.bias + (UINT64_C(1) << 30) + 16 * i, &f);
	expect_named(s, 0);
	expect_named(s, 0);
	mstat_symbols_free(s);
	mstat_symbols_cache_free(c);
}

struct lookups {
	struct mstat_symcache *c;
	const struct mstat_profile *p;
	int bad;
};

static void *
look_up_many(void *arg)
{
	struct lookups *l = arg;
	struct mstat_symbols *s = mstat_symbols_new_cached(l->p, l->c);

	for (int k = 0; s && k < 2000; k++) {
		size_t i = (size_t)k % NKNOWN;
		struct mstat_frame f;
		mstat_symbols_lookup(s, (uint64_t)(uintptr_t)known[i].fn + 4 + 16 * (k % 7),
				     &f);
		if (k % 7 == 0 && (!f.function ||
				   strcmp(f.function, known[i].function) != 0))
			l->bad++;
	}
	mstat_symbols_free(s);
	return NULL;
}

/* Threads looking up through one cache at once (run it under TSan: the
 * locks are what this checks). */
static void
test_cache_threads(void **state)
{
	struct mstat_profile_module m;
	struct mstat_profile p = { .nmodules = 1, .modules = &m };
	pthread_t t[4];
	struct lookups l[4];

	(void)state;
	own_module(&m, true);
	struct mstat_symcache *c = mstat_symbols_cache_new(4);
	for (int i = 0; i < 4; i++) {
		l[i] = (struct lookups){ c, &p, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, look_up_many, &l[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(l[i].bad, 0);
	}
	assert_int_equal(mstat_symbols_cache_files(c), 1);
	mstat_symbols_cache_free(c);
}

/* ---- the pprof file: names and symbols (profile.proto) ---- */

static uint64_t
get_varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;

	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return v;
}

/* Field `want` (a varint) of the message p[0..n). */
static uint64_t
msg_varint(const unsigned char *p, size_t n, unsigned want)
{
	const unsigned char *end = p + n;

	while (p < end) {
		uint64_t key = get_varint(&p, end);
		if ((key & 7) == 0) {
			uint64_t v = get_varint(&p, end);
			if (key >> 3 == want)
				return v;
		} else {
			p += get_varint(&p, end); /* length-delimited */
		}
	}
	return 0;
}

/* A profile of one stack, the C++ method's and the clone's frames, written
 * by mstat_pprof_write() with the test's own symbols: each Function's name
 * is what views show, its system_name the symbol whole, its file from /. */
static void
test_pprof_keeps_symbols(void **state)
{
	char exe[PATH_MAX], dir[] = "/tmp/mstat-test-pprof.XXXXXX", path[64], err[256];
	struct mstat_profile_module mod;
	struct mstat_profile_stack st = { .allocs = 1, .alloc_bytes = 64,
					  .depth = 2 };
	struct mstat_profile p = { .sample_bytes = 1, .nstacks = 1, .stacks = &st,
				   .nmodules = 1, .modules = &mod };
	uint64_t bias = 0;

	(void)state;
	dl_iterate_phdr(first_object, &bias);
	assert_non_null(realpath("/proc/self/exe", exe));
	memset(&mod, 0, sizeof(mod));
	memcpy(mod.path, exe, strlen(exe) + 1);
	mod.bias = bias;
	mod.end = UINT64_MAX;
	st.frames[0] = (uint64_t)(uintptr_t)cxx_method + 4;
	st.frames[1] = (uint64_t)(uintptr_t)gcc_clone + 4;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/heap.pb.gz", dir);
	struct mstat_symbols *sym = mstat_symbols_new(&p);
	assert_int_equal(mstat_pprof_write(&p, sym, 1, path, err, sizeof(err)), 0);
	mstat_symbols_free(sym);

	static unsigned char buf[1 << 20];
	gzFile gz = gzopen(path, "rb");
	assert_non_null(gz);
	int n = gzread(gz, buf, sizeof(buf));
	gzclose(gz);
	unlink(path);
	rmdir(dir);
	assert_true(n > 0 && n < (int)sizeof(buf));

	/* The string table, then the functions by it. */
	const char *str[256];
	size_t nstr = 0;
	struct { const unsigned char *p; size_t n; } fn[8];
	size_t nfn = 0;
	for (const unsigned char *q = buf, *end = buf + n; q < end;) {
		uint64_t key = get_varint(&q, end);
		if ((key & 7) == 0) {
			get_varint(&q, end);
			continue;
		}
		size_t len = (size_t)get_varint(&q, end);
		if (key >> 3 == 6 && nstr < 256) { /* string_table */
			char *copy = malloc(len + 1);
			memcpy(copy, q, len);
			copy[len] = '\0';
			str[nstr++] = copy;
		} else if (key >> 3 == 5 && nfn < 8) { /* function */
			fn[nfn].p = q;
			fn[nfn++].n = len;
		}
		q += len;
	}
	assert_int_equal(nfn, 2);
	int seen = 0;
	for (size_t i = 0; i < nfn; i++) {
		uint64_t name = msg_varint(fn[i].p, fn[i].n, 2);
		uint64_t system = msg_varint(fn[i].p, fn[i].n, 3);
		uint64_t file = msg_varint(fn[i].p, fn[i].n, 4);
		assert_true(name < nstr && system < nstr && file < nstr);
		if (strcmp(str[system], "_ZN5Cache8rememberEm") == 0) {
			assert_string_equal(str[name], "Cache::remember(unsigned long)");
			seen |= 1;
		} else {
			assert_string_equal(str[system], "renew.constprop.0");
			assert_string_equal(str[name], "renew");
			seen |= 2;
		}
		assert_true(str[file][0] == '/' && !strstr(str[file], "/../"));
	}
	assert_int_equal(seen, 3);
	for (size_t i = 0; i < nstr; i++)
		free((void *)str[i]);
}

/* A profile as mstat_pprof_encode() writes it, decoded: what the tests
 * below look at. */
struct decoded {
	char *str[64];
	size_t nstr;
	uint64_t type[4][2]; /* sample_type: type, unit (string ids) */
	size_t ntypes;
	int64_t value[8][4];
	uint64_t label_key[8], label_num[8];
	size_t nsamples;
	uint64_t period_type[2], period, time_ns, duration_ns, default_type;
};

static void
decode(const unsigned char *gz, size_t len, struct decoded *d)
{
	static unsigned char buf[1 << 20];
	z_stream z = { 0 };

	memset(d, 0, sizeof(*d));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK); /* gzip */
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = sizeof(buf);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	size_t n = sizeof(buf) - z.avail_out;
	inflateEnd(&z);
	for (const unsigned char *q = buf, *end = buf + n; q < end;) {
		uint64_t key = get_varint(&q, end);
		if ((key & 7) == 0) {
			uint64_t v = get_varint(&q, end);
			if (key >> 3 == 12)
				d->period = v;
			else if (key >> 3 == 9)
				d->time_ns = v;
			else if (key >> 3 == 10)
				d->duration_ns = v;
			else if (key >> 3 == 14)
				d->default_type = v;
			continue;
		}
		size_t l = (size_t)get_varint(&q, end);
		const unsigned char *m = q, *mend = q + l;
		q += l;
		switch (key >> 3) {
		case 1: /* sample_type */
			assert_true(d->ntypes < 4);
			d->type[d->ntypes][0] = msg_varint(m, l, 1);
			d->type[d->ntypes++][1] = msg_varint(m, l, 2);
			break;
		case 11: /* period_type */
			d->period_type[0] = msg_varint(m, l, 1);
			d->period_type[1] = msg_varint(m, l, 2);
			break;
		case 6: /* string_table */
			assert_true(d->nstr < 64);
			d->str[d->nstr] = calloc(1, l + 1);
			memcpy(d->str[d->nstr++], m, l);
			break;
		case 2: { /* sample: packed values, a label */
			assert_true(d->nsamples < 8);
			size_t k = d->nsamples++;
			while (m < mend) {
				uint64_t f = get_varint(&m, mend);
				size_t fl = (size_t)get_varint(&m, mend);
				const unsigned char *v = m;
				m += fl;
				if (f >> 3 == 2)
					for (int i = 0; i < 4; i++)
						d->value[k][i] = (int64_t)get_varint(&v, m);
				else if (f >> 3 == 3) {
					d->label_key[k] = msg_varint(v, fl, 1);
					d->label_num[k] = msg_varint(v, fl, 3);
				}
			}
			break;
		}
		}
	}
}

static void
decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstr; i++)
		free(d->str[i]);
}

static void
expect_values(const struct decoded *d, size_t k, int64_t a, int64_t b,
	      int64_t c, int64_t e)
{
	const int64_t *v = d->value[k];

	if (v[0] != a || v[1] != b || v[2] != c || v[3] != e)
		fail_msg("sample %zu: %lld %lld %lld %lld, not %lld %lld %lld %lld",
			 k, (long long)v[0], (long long)v[1], (long long)v[2],
			 (long long)v[3], (long long)a, (long long)b, (long long)c,
			 (long long)e);
}

/* Go's heap profile: its four sample types in Go's order, period
 * space/bytes at the interval, a default sample type only when asked
 * (Go's /debug/pprof/allocs), each sample's average block as the
 * numeric label "bytes"; and a delta: every type minus the base's, in
 * use ones negative where frees outran allocations, unchanged stacks
 * left out, the duration said. */
static void
test_pprof_encode(void **state)
{
	/* Weighted, no objects (format 6.0): bytes are the weights, objects
	 * n * w / b. */
	struct mstat_profile_stack now[3] = {
		{ .allocs = 4, .alloc_bytes = 400, .frees = 1, .free_bytes = 100,
		  .alloc_weight = 4000, .free_weight = 1000, .depth = 1,
		  .frames = { 0x1000 } },
		{ .allocs = 2, .alloc_bytes = 2000, .alloc_weight = 20000,
		  .depth = 1, .frames = { 0x2000 } },
		{ .allocs = 2, .alloc_bytes = 200, .alloc_weight = 2000,
		  .frees = 2, .free_bytes = 200, .free_weight = 2000,
		  .depth = 2, .frames = { 0x3000, 0x1000 } },
	};
	struct mstat_profile_stack then[3] = {
		{ .allocs = 2, .alloc_bytes = 200, .alloc_weight = 2000,
		  .frees = 1, .free_bytes = 100, .free_weight = 1000,
		  .depth = 1, .frames = { 0x1000 } },
		now[1],
		{ .allocs = 2, .alloc_bytes = 200, .alloc_weight = 2000,
		  .depth = 2, .frames = { 0x3000, 0x1000 } },
	};
	struct mstat_profile p = { .sample_bytes = 4096, .weighted = true,
				   .nstacks = 3, .stacks = now };
	/* The base in another order: found by its frames. */
	struct mstat_profile_stack then_shuffled[3] = { then[2], then[0], then[1] };
	struct mstat_profile base = { .sample_bytes = 4096, .weighted = true,
				      .nstacks = 3, .stacks = then_shuffled };
	static const char *const types[4][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	struct mstat_pprof_options o = { .default_sample_type = "alloc_space",
					 .time_ns = 123 };
	unsigned char *gz;
	size_t len;
	char err[256];
	struct decoded d;

	(void)state;
	assert_int_equal(mstat_pprof_encode(&p, NULL, &o, &gz, &len, err,
					    sizeof(err)), 0);
	decode(gz, len, &d);
	free(gz);
	assert_int_equal(d.ntypes, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(d.str[d.type[i][0]], types[i][0]);
		assert_string_equal(d.str[d.type[i][1]], types[i][1]);
	}
	assert_string_equal(d.str[d.period_type[0]], "space");
	assert_string_equal(d.str[d.period_type[1]], "bytes");
	assert_int_equal(d.period, 4096);
	assert_int_equal(d.time_ns, 123);
	assert_int_equal(d.duration_ns, 0);
	assert_string_equal(d.str[d.default_type], "alloc_space");
	assert_int_equal(d.nsamples, 3);
	expect_values(&d, 0, 40, 4000, 30, 3000);
	expect_values(&d, 1, 20, 20000, 20, 20000);
	expect_values(&d, 2, 20, 2000, 0, 0);
	assert_string_equal(d.str[d.label_key[0]], "bytes");
	assert_int_equal(d.label_num[0], 100);
	assert_int_equal(d.label_num[1], 1000);
	decoded_free(&d);

	/* Go's heap profile has no default sample type. */
	o.default_sample_type = NULL;
	assert_int_equal(mstat_pprof_encode(&p, NULL, &o, &gz, &len, err,
					    sizeof(err)), 0);
	decode(gz, len, &d);
	free(gz);
	assert_int_equal(d.default_type, 0);
	decoded_free(&d);

	/* A delta against `base`. */
	o.base = &base;
	o.duration_ns = 5000000000u;
	assert_int_equal(mstat_pprof_encode(&p, NULL, &o, &gz, &len, err,
					    sizeof(err)), 0);
	decode(gz, len, &d);
	free(gz);
	assert_int_equal(d.duration_ns, 5000000000u);
	assert_int_equal(d.nsamples, 2); /* the second is unchanged */
	expect_values(&d, 0, 20, 2000, 20, 2000);
	expect_values(&d, 1, 0, 0, -20, -2000);
	decoded_free(&d);
}

/* A profile whose stacks count their objects (format 6.1): objects are
 * their sums, in 256ths (20.5 is 21), whatever the bytes and weights say,
 * and each sample's "bytes" label is its bytes over its objects. */
static void
test_pprof_objects(void **state)
{
	enum { U = MSTAT_OBJECT_UNITS };
	/* 396 blocks of 40 bytes and 4 of 65,544, sampled 4 and 4 times:
	 * the samples average 32,792 bytes, the blocks 695. */
	struct mstat_profile_stack st[2] = {
		{ .allocs = 8, .alloc_bytes = 4 * 40 + 4 * 65544,
		  .alloc_weight = 396 * 40 + 4 * 65544, .alloc_objects = 400 * U,
		  .frees = 4, .free_bytes = 4 * 40, .free_weight = 396 * 40,
		  .free_objects = 396 * U, .depth = 1, .frames = { 0x1000 } },
		{ .allocs = 2, .alloc_bytes = 200, .alloc_weight = 20000,
		  .alloc_objects = 20 * U + U / 2, .depth = 1, .frames = { 0x2000 } },
	};
	struct mstat_profile p = { .sample_bytes = 4096, .weighted = true,
				   .has_objects = true, .nstacks = 2, .stacks = st };
	struct mstat_pprof_options o = { .time_ns = 1 };
	unsigned char *gz;
	size_t len;
	char err[256];
	struct decoded d;

	(void)state;
	assert_int_equal(mstat_pprof_encode(&p, NULL, &o, &gz, &len, err,
					    sizeof(err)), 0);
	decode(gz, len, &d);
	free(gz);
	assert_int_equal(d.nsamples, 2);
	expect_values(&d, 0, 400, 278016, 4, 262176);
	expect_values(&d, 1, 21, 20000, 21, 20000);
	assert_string_equal(d.str[d.label_key[0]], "bytes");
	assert_int_equal(d.label_num[0], 695);
	assert_int_equal(d.label_num[1], 976);
	decoded_free(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_in_module_list),
		cmocka_unit_test(test_readable_names),
		cmocka_unit_test(test_source_names),
		cmocka_unit_test(test_frames_named_readably),
		cmocka_unit_test(test_pprof_keeps_symbols),
		cmocka_unit_test(test_pprof_encode),
		cmocka_unit_test(test_pprof_objects),
		cmocka_unit_test(test_cache_one_file_any_bias),
		cmocka_unit_test(test_cache_build_id_checked),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_cache_memo_full),
		cmocka_unit_test(test_cache_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
