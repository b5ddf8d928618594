/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - names for the frames of a profile, from the target's module
 * list and the ELF files it names (libdw), without touching the target:
 * no ptrace, and the target may have exited.
 *
 * A module is used only if its file still carries the build id the target
 * recorded (when it recorded one): a file replaced since is not trusted
 * to name anything.
 */
#ifndef MSTAT_CORE_SYMBOLS_H
#define MSTAT_CORE_SYMBOLS_H

#include <stdint.h>

#include "shm/reader.h"

struct mstat_symbols;

/* A frame, named.  The strings are the symbols', valid until the next
 * lookup. */
struct mstat_frame {
	const struct mstat_profile_module *module; /* NULL: in none known */
	/* The function as a user reads it (mstat_symbols_readable()): every
	 * view and output shows this; NULL if unknown. */
	const char *function;
	/* The symbol as the ELF file has it (C++ mangled, with the
	 * compiler's clone suffixes): pprof's system_name. */
	const char *symbol;
	/* The source file as views show it (mstat_symbols_source_shown()); NULL if
	 * unknown. */
	const char *file;
	/* The source file as a path from / where the compilation directory
	 * says (mstat_symbols_source_path()): what pprof looks source up by. */
	const char *path;
	int line;             /* 0 if unknown */
};

/*
 * A cache of the ELF files that name frames, for threads to share
 * (mstat-exporter's profile requests): each file opened once with libdw,
 * at its link-time addresses, so that one serves every process that
 * loads it, and the names of every address looked up in it remembered
 * (up to 65536 addresses a file; later ones are named at each lookup).
 * A file is known by its path and the build id the process recorded (by
 * its path and what stat() says of it if it recorded none), so a file
 * replaced since is another file.  It holds at most `max_files` files
 * that no symbols (below) use, dropping the least recently used.  Each
 * file has a lock of its own (libdw is not thread-safe): lookups in
 * different files run at once.  NULL if out of memory.
 */
struct mstat_symcache;
struct mstat_symcache *mstat_symbols_cache_new(size_t max_files);
/* Every mstat_symbols made with it must have been freed. */
void mstat_symbols_cache_free(struct mstat_symcache *c);
/* The files it holds now (a test's view). */
size_t mstat_symbols_cache_files(struct mstat_symcache *c);

/* Symbols for the modules of `p` (which must outlive them), their files
 * from `c`, or, if NULL, from a cache of their own; NULL only if out of
 * memory.  Files that cannot be read name nothing.  One thread at a time
 * uses them; `c` may be shared. */
struct mstat_symbols *mstat_symbols_new_cached(const struct mstat_profile *p,
					       struct mstat_symcache *c);
struct mstat_symbols *mstat_symbols_new(const struct mstat_profile *p);
void mstat_symbols_free(struct mstat_symbols *s);

/* Frame `pc`, a return address (so the call before it is looked up). */
void mstat_symbols_lookup(struct mstat_symbols *s, uint64_t pc,
			  struct mstat_frame *out);

/*
 * Names as a user reads them; pure functions, for every view and output.
 *
 * mstat_symbols_readable(): `symbol` without the suffixes compilers give
 * the clones of a function (.constprop.N, .isra.N, .part.N, .cold,
 * .lto_priv.N, ... : the same source function), and demangled if it is a
 * C++ name (_Z...; __cxa_demangle).  A new string (free() it), or NULL if
 * out of memory.
 */
char *mstat_symbols_readable(const char *symbol);

/*
 * Source files, named by the compiler relative to `comp_dir`, the
 * compilation directory (DW_AT_comp_dir; NULL if unknown):
 *
 * mstat_symbols_source_shown(): as views show it.  "." and ".." resolved where
 * they can be, and a name relative to a build directory
 * ("../demo/workload.c", as meson and CMake build in one) made relative
 * to the directory its leading ".." reach, the source tree
 * ("demo/workload.c"); if they reach / instead, the path from /.  A name
 * that is not relative to a build directory stays as recorded.
 *
 * mstat_symbols_source_path(): the file from /, `file` in `comp_dir`, "." and
 * ".." resolved (as recorded, resolved, if neither is absolute).
 *
 * Both write at most `len` bytes with the NUL into `out` and return it.
 */
char *mstat_symbols_source_shown(char *out, size_t len, const char *comp_dir,
				 const char *file);
char *mstat_symbols_source_path(char *out, size_t len, const char *comp_dir,
				const char *file);

#endif /* MSTAT_CORE_SYMBOLS_H */
