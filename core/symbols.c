/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - frames to function, file and line with libdw, and those
 * names as a user reads them; see symbols.h.
 */
#include "symbols.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <limits.h>
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

struct mstat_symbols {
	const struct mstat_profile *p;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
	/* The last lookup's names (struct mstat_frame points here). */
	char *function;
	char file[PATH_MAX], path[PATH_MAX];
};

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
mstat_symbol_readable(const char *symbol)
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
mstat_source_path(char *out, size_t len, const char *comp_dir, const char *file)
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
mstat_source_shown(char *out, size_t len, const char *comp_dir,
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
			return mstat_source_path(out, len, comp_dir, file);
	}
	memmove(out, rest, strlen(rest) + 1);
	return out;
}

/* ---- frames ---- */

/* Whether the file reported as `mod` has the build id the target saw. */
static int
same_build(Dwfl_Module *mod, const struct mstat_profile_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);

	if (m->build_id_len == 0)
		return 1; /* nothing to compare with */
	return n > 0 && (unsigned)n >= m->build_id_len &&
	       memcmp(bits, m->build_id, m->build_id_len) == 0;
}

struct mstat_symbols *
mstat_symbols_new(const struct mstat_profile *p)
{
	struct mstat_symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->p = p;
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl)
		return s; /* frames stay unnamed */
	dwfl_report_begin(s->dwfl);
	for (uint32_t i = 0; i < p->nmodules; i++) {
		const struct mstat_profile_module *m = &p->modules[i];
		if (m->path[0] != '/')
			continue; /* the vDSO, or unknown */
		/* The path is the target's: opened without waiting (a
		 * FIFO would block open() for ever), and used only if it is
		 * a regular file.  One that no longer matches its build id
		 * is reported too, and ignored by lookups (which compare
		 * it).  libdwfl keeps the descriptor if it takes the file. */
		int fd = open(m->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		struct stat st;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    !dwfl_report_elf(s->dwfl, m->path, m->path, fd, m->bias, false))
			close(fd);
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	return s;
}

void
mstat_symbols_free(struct mstat_symbols *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s->function);
	free(s);
}

void
mstat_symbols_lookup(struct mstat_symbols *s, uint64_t pc, struct mstat_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->module = mstat_profile_module_of(s->p, pc);
	if (!s->dwfl || !out->module || pc == 0)
		return;
	Dwarf_Addr a = pc - 1; /* the call, not the instruction after it */
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, a);
	if (!mod || !same_build(mod, out->module))
		return;
	out->symbol = dwfl_module_addrname(mod, a);
	if (out->symbol) {
		free(s->function);
		s->function = mstat_symbol_readable(out->symbol);
		out->function = s->function ? s->function : out->symbol;
	}
	Dwfl_Line *line = dwfl_module_getsrc(mod, a);
	if (line) {
		int l = 0;
		const char *f = dwfl_lineinfo(line, NULL, &l, NULL, NULL, NULL);
		if (f) {
			const char *dir = dwfl_line_comp_dir(line);
			out->file = mstat_source_shown(s->file, sizeof(s->file),
						       dir, f);
			out->path = mstat_source_path(s->path, sizeof(s->path),
						      dir, f);
			out->line = l;
		}
	}
}
