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
#ifndef MSTAT_OBSERVER_SYMBOLS_H
#define MSTAT_OBSERVER_SYMBOLS_H

#include <stdint.h>

#include "reader.h"

struct mstat_symbols;

struct mstat_frame {
	const struct mstat_profile_module *module; /* NULL: in none known */
	const char *function; /* NULL if unknown; owned by the symbols */
	const char *file;     /* source file, NULL if unknown */
	int line;             /* 0 if unknown */
};

/* Symbols for the modules of `p` (which must outlive them); NULL only if
 * out of memory.  Files that cannot be read are skipped. */
struct mstat_symbols *mstat_symbols_new(const struct mstat_profile *p);
void mstat_symbols_free(struct mstat_symbols *s);

/* Frame `pc`, a return address (so the call before it is looked up). */
void mstat_symbols_lookup(struct mstat_symbols *s, uint64_t pc,
			  struct mstat_frame *out);

#endif /* MSTAT_OBSERVER_SYMBOLS_H */
