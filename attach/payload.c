/* SPDX-License-Identifier: MIT */
/* payload.c - the library mstat-attach injects; see payload.h. */
#include "attach/payload.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/inject.h"

/* Where the library is, relative to this executable's directory: the
 * build tree first, then the installed layout (set by meson). */
static const char *const lib_dirs[] = {
	"../lib",
	MSTAT_ATTACH_LIBDIR_REL,
};

static int
find(struct payload *p)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", self, lib_dirs[i],
			 MSTAT_ATTACH_SONAME);
		if (realpath(path, p->path))
			return 0;
	}
	return -ENOENT;
}

/* Section `i`'s header (mstat_payload_load() checked that the file
 * holds the table). */
static const Elf64_Shdr *
header(const struct payload *p, unsigned i)
{
	const Elf64_Ehdr *e = (const void *)p->bytes;

	return (const void *)(p->bytes + e->e_shoff + (size_t)i * sizeof(Elf64_Shdr));
}

/* Section `i`'s header, if the file holds it whole. */
static const Elf64_Shdr *
section(const struct payload *p, unsigned i)
{
	const Elf64_Ehdr *e = (const void *)p->bytes;

	if (i >= e->e_shnum)
		return NULL;
	const Elf64_Shdr *s = header(p, i);
	return s->sh_offset <= p->size && s->sh_size <= p->size - s->sh_offset ? s : NULL;
}

/* A string of section `strtab` at `off`, or NULL. */
static const char *
string(const struct payload *p, const Elf64_Shdr *strtab, uint64_t off)
{
	if (!strtab || off >= strtab->sh_size)
		return NULL;
	const char *s = (const char *)p->bytes + strtab->sh_offset + off;
	return memchr(s, '\0', strtab->sh_size - off) ? s : NULL;
}

static void
entry_points(struct payload *p, const Elf64_Shdr *dynsym)
{
	const Elf64_Shdr *str = section(p, dynsym->sh_link);
	const Elf64_Sym *sym = (const void *)(p->bytes + dynsym->sh_offset);

	for (size_t i = 0; i < dynsym->sh_size / sizeof(*sym); i++) {
		const char *name = string(p, str, sym[i].st_name);
		if (!name || sym[i].st_shndx == SHN_UNDEF)
			continue;
		if (strcmp(name, MSTAT_ATTACH_START) == 0)
			p->start = sym[i].st_value;
		else if (strcmp(name, MSTAT_ATTACH_STATE) == 0)
			p->state = sym[i].st_value;
	}
}

static void
needed_versions(struct payload *p, const Elf64_Shdr *verneed)
{
	const Elf64_Shdr *str = section(p, verneed->sh_link);
	uint64_t at = 0;

	for (unsigned i = 0; i < verneed->sh_info && at + sizeof(Elf64_Verneed) <= verneed->sh_size; i++) {
		const Elf64_Verneed *vn = (const void *)(p->bytes + verneed->sh_offset + at);
		uint64_t aux = at + vn->vn_aux;
		for (unsigned k = 0; k < vn->vn_cnt && aux + sizeof(Elf64_Vernaux) <= verneed->sh_size; k++) {
			const Elf64_Vernaux *va = (const void *)(p->bytes + verneed->sh_offset + aux);
			const char *name = string(p, str, va->vna_name);
			if (name && strncmp(name, "GLIBC_", 6) == 0 &&
			    p->nversions < PAYLOAD_VERSIONS_MAX &&
			    strlen(name) < sizeof(p->versions[0]))
				strcpy(p->versions[p->nversions++], name);
			if (!va->vna_next)
				break;
			aux += va->vna_next;
		}
		if (!vn->vn_next)
			break;
		at += vn->vn_next;
	}
}

/* What the loader reads of the file: up to the end of its last loaded
 * segment, or 0 if the program headers are not in that part. */
static size_t
loaded_end(const struct payload *p)
{
	const Elf64_Ehdr *e = (const void *)p->bytes;
	size_t end = 0;

	if (e->e_phentsize != sizeof(Elf64_Phdr) || e->e_phoff > p->size ||
	    (size_t)e->e_phnum * sizeof(Elf64_Phdr) > p->size - e->e_phoff)
		return 0;
	const Elf64_Phdr *ph = (const void *)(p->bytes + e->e_phoff);
	for (unsigned i = 0; i < e->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
			end = ph[i].p_offset + ph[i].p_filesz;
	if (end < e->e_phoff + (size_t)e->e_phnum * sizeof(Elf64_Phdr) || end > p->size)
		return 0;
	return end;
}

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)
#define SHSTRTAB ".shstrtab"

/* Whether section `s` is a note beyond the loaded part, `end`:
 * .note.stapsdt, the USDT probes' notes, is not loaded. */
static bool
moved(const Elf64_Shdr *s, size_t end)
{
	return s->sh_type == SHT_NOTE && s->sh_offset + s->sh_size > end;
}

/* A section kept in the trimmed file: one in the loaded part, or a note. */
static bool
kept(const struct payload *p, unsigned i, size_t end)
{
	const Elf64_Shdr *s = header(p, i);

	return s->sh_type == SHT_NOBITS ||
	       (section(p, i) && (moved(s, end) || s->sh_offset + s->sh_size <= end));
}

/* Index `i` of the file, in the trimmed one (map[]), or 0 if dropped. */
static uint32_t
kept_index(const struct payload *p, const uint32_t *map, uint32_t i)
{
	const Elf64_Ehdr *e = (const void *)p->bytes;

	return i < e->e_shnum ? map[i] : 0;
}

/*
 * The trimmed file: bytes [0, end) as they are, then the notes that lie
 * beyond them, a table of section names, and the headers of the kept
 * sections, renumbered; NULL if it cannot be made.  `map` gives each
 * section's new index (0: dropped), `n` how many headers there are, the
 * new name table's last; *size the file's size.
 */
static unsigned char *
rebuild(const struct payload *p, size_t end, const uint32_t *map, unsigned n,
	size_t *size)
{
	const Elf64_Ehdr *e = (const void *)p->bytes;
	const Elf64_Shdr *names = section(p, e->e_shstrndx);
	size_t at = end, strtab, shoff, used = 1;

	for (unsigned i = 1; i < e->e_shnum; i++)
		if (map[i] && moved(header(p, i), end))
			at = ALIGN8(at) + header(p, i)->sh_size;
	strtab = at;
	for (unsigned i = 1; i < e->e_shnum; i++) {
		const char *name = map[i] ? string(p, names, header(p, i)->sh_name) : NULL;
		at += name ? strlen(name) + 1 : 0;
	}
	at += 1 + sizeof(SHSTRTAB);
	shoff = ALIGN8(at);
	*size = shoff + (size_t)n * sizeof(Elf64_Shdr);
	unsigned char *b = calloc(1, *size);
	if (!b)
		return NULL;
	memcpy(b, p->bytes, end);
	Elf64_Shdr *out = (void *)(b + shoff);
	at = end;
	for (unsigned i = 1; i < e->e_shnum; i++) {
		if (!map[i])
			continue;
		const Elf64_Shdr *s = header(p, i);
		const char *name = string(p, names, s->sh_name);
		Elf64_Shdr *o = &out[map[i]];
		*o = *s;
		o->sh_name = name ? (uint32_t)used : 0;
		if (name) {
			memcpy(b + strtab + used, name, strlen(name) + 1);
			used += strlen(name) + 1;
		}
		o->sh_link = kept_index(p, map, s->sh_link);
		if (s->sh_flags & SHF_INFO_LINK)
			o->sh_info = kept_index(p, map, s->sh_info);
		if (moved(s, end)) {
			at = ALIGN8(at);
			memcpy(b + at, p->bytes + s->sh_offset, s->sh_size);
			o->sh_offset = at;
			at += s->sh_size;
		}
	}
	memcpy(b + strtab + used, SHSTRTAB, sizeof(SHSTRTAB));
	out[n - 1] = (Elf64_Shdr){ .sh_name = (uint32_t)used, .sh_type = SHT_STRTAB,
				   .sh_offset = strtab, .sh_size = used + sizeof(SHSTRTAB),
				   .sh_addralign = 1 };
	Elf64_Ehdr *h = (void *)b;
	h->e_shoff = shoff;
	h->e_shnum = (uint16_t)n;
	h->e_shstrndx = (uint16_t)(n - 1);
	return b;
}

/*
 * What the process is given of the file: what the loader reads, up to
 * the end of its last loaded segment, and what a tracer reads to find
 * the USDT probes in the process's mapping of it (docs/profiles.md): the
 * notes, and the section headers of what is kept, which say where they
 * are.  The symbol table and debug information are left out: what is
 * written into the process, in the taken thread's time, is often a fifth
 * of the file.  Where the sections cannot be kept, the header says there
 * are none.
 */
static void
trim(struct payload *p)
{
	Elf64_Ehdr *e = (void *)p->bytes;
	size_t end = loaded_end(p), size;
	unsigned char *b = NULL;
	uint32_t *map;
	unsigned n = 1;

	if (!end)
		return;
	if (e->e_shnum > 0 && e->e_shnum < SHN_LORESERVE &&
	    (map = calloc(e->e_shnum, sizeof(*map)))) {
		for (unsigned i = 1; i < e->e_shnum; i++)
			if (i != e->e_shstrndx && kept(p, i, end))
				map[i] = n++;
		b = rebuild(p, end, map, n + 1, &size);
		free(map);
	}
	if (!b) { /* no sections */
		e->e_shoff = 0;
		e->e_shnum = 0;
		e->e_shstrndx = SHN_UNDEF;
		p->size = end;
		return;
	}
	free(p->bytes);
	p->bytes = b;
	p->size = size;
}

int
mstat_payload_load(struct payload *p, char *err, size_t len)
{
	struct stat st;
	int fd, rc;

	memset(p, 0, sizeof(*p));
	if ((rc = find(p)) < 0) {
		snprintf(err, len, "%s not found next to this program", MSTAT_ATTACH_SONAME);
		return rc;
	}
	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
	    !(p->bytes = malloc((size_t)st.st_size)) ||
	    read(fd, p->bytes, (size_t)st.st_size) != st.st_size) {
		rc = -errno;
		snprintf(err, len, "%s: cannot be read", p->path);
		if (fd >= 0)
			close(fd);
		return rc ? rc : -EIO;
	}
	close(fd);
	p->size = (size_t)st.st_size;
	const Elf64_Ehdr *e = (const void *)p->bytes;
	if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_shentsize != sizeof(Elf64_Shdr) ||
	    e->e_shoff > p->size || (size_t)e->e_shnum * sizeof(Elf64_Shdr) > p->size - e->e_shoff) {
		snprintf(err, len, "%s: not an ELF library", p->path);
		return -ENOEXEC;
	}
	for (unsigned i = 0; i < e->e_shnum; i++) {
		const Elf64_Shdr *s = section(p, i);
		if (s && s->sh_type == SHT_DYNSYM)
			entry_points(p, s);
		else if (s && s->sh_type == SHT_GNU_verneed)
			needed_versions(p, s);
	}
	if (!p->start || !p->state) {
		snprintf(err, len, "%s: its entry points are missing", p->path);
		return -ENOEXEC;
	}
	trim(p);
	return 0;
}

void
mstat_payload_free(struct payload *p)
{
	free(p->bytes);
	p->bytes = NULL;
}
