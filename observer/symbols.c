/* SPDX-License-Identifier: MIT */
/* symbols.c - frames to function, file and line with libdw; see symbols.h. */
#include "symbols.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mstat_symbols {
	const struct mstat_profile *p;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
};

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
	out->function = dwfl_module_addrname(mod, a);
	Dwfl_Line *line = dwfl_module_getsrc(mod, a);
	if (line) {
		int l = 0;
		const char *f = dwfl_lineinfo(line, NULL, &l, NULL, NULL, NULL);
		if (f) {
			out->file = f;
			out->line = l;
		}
	}
}
