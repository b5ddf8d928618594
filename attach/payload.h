/* SPDX-License-Identifier: MIT */
/*
 * payload.h - the library mstat-attach injects (payload.c):
 * libmstatshm-attach.so.0, found next to the program (the build tree, or
 * the installed library directory), read whole, and what its ELF file
 * says mstat-attach needs: where its entry points are, and which
 * versions of glibc's symbols it needs, which the target's glibc must
 * have.
 */
#ifndef MSTAT_ATTACH_PAYLOAD_H
#define MSTAT_ATTACH_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#define PAYLOAD_VERSIONS_MAX 32u

struct payload {
	char path[4096];
	unsigned char *bytes;
	size_t size;
	uint64_t start;          /* the entry point's offset (shm/inject.h) */
	uint64_t state;          /* MSTAT_ATTACH_STATE's */
	/* Versions it needs, of libc.so.6 and of the loader ("GLIBC_2.35"). */
	char versions[PAYLOAD_VERSIONS_MAX][32];
	unsigned nversions;
};

/* Finds and reads the library: 0, or -errno with a reason in err. */
int mstat_payload_load(struct payload *p, char *err, size_t len);
void mstat_payload_free(struct payload *p);

#endif /* MSTAT_ATTACH_PAYLOAD_H */
