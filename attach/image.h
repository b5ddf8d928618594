/* SPDX-License-Identifier: MIT */
/*
 * image.h - a running process's loaded objects, read from its memory
 * (image.c), without stopping it: the loader's list of the base
 * namespace (r_debug), each object's dynamic section, its dynamic
 * symbols and versions, found as the loader finds them (GNU hash).
 *
 * What the process says of itself is read, never trusted: every read
 * is bounded, a string is cut, a list is walked a bounded number of
 * steps, and a read that fails is a reason to refuse, not a fault.
 */
#ifndef MSTAT_ATTACH_IMAGE_H
#define MSTAT_ATTACH_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define IMAGE_OBJECTS_MAX 4096u /* objects walked at most */
#define IMAGE_NAME_MAX 512u

struct image_object {
	uint64_t map;          /* its link map, in the target */
	uint64_t addr;         /* l_addr: what its addresses are offset by */
	char name[IMAGE_NAME_MAX]; /* l_name; "" for the program */
	char soname[128];      /* DT_SONAME, "" if none */
	uint64_t symtab, strtab, gnu_hash, versym, verdef;
	uint64_t verdefnum;
};

struct image {
	pid_t pid;
	uint64_t start_time;   /* the process's (/proc), which its pid
				* alone does not tell from a later one's */
	uint64_t interp;       /* the loader's base (AT_BASE), 0: none */
	uint64_t random;       /* AT_RANDOM: where the kernel put 16 random
				* bytes, new at every exec(), and those */
	unsigned char random_bytes[16]; /* bytes: the image's identity
				* (mstat_image_same()); random 0 if unread */
	uint64_t r_debug;      /* the loader's r_debug */
	struct image_object *objects;
	size_t n;
};

/* Whether process `pid` still runs the image `im` was read from (it has
 * not exec()ed, nor ended). */
bool mstat_image_same(const struct image *im, pid_t pid);

/* What became of process `pid` since `im` was read from it (its start
 * time and identity at least), asked once a read of it failed or came
 * back short, which says nothing by itself: a process whose every thread
 * is ending reads so, and one amid an exec(), and one whose main thread
 * ended alone (its memory is reached through that thread), as well as
 * one that refuses for a reason of its own. */
enum image_fate {
	IMAGE_RUNS,       /* it runs that image still: the failure is its own */
	IMAGE_EXITED,     /* gone, a zombie, or every thread of it ending */
	IMAGE_EXECED,     /* another image, or one being made (exec()) */
	IMAGE_LEADERLESS, /* its main thread ended, and the others run on */
};
/* Waits, a bounded time (IMAGE_FATE_WAIT_NS), for an exit under way to
 * show in every thread, and no longer: never while a thread of the
 * process is held. */
#define IMAGE_FATE_WAIT_NS (2000u * 1000u * 1000u)
enum image_fate mstat_image_fate(const struct image *im, pid_t pid);

/* Reads `len` bytes at `addr` of process `pid`: 0 or -errno. */
int mstat_image_peek(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Reads the loaded objects of `pid`: 0, or -errno with a reason in err.
 * -ENOEXEC: it has no loader (a static binary); -EAGAIN: its loader is
 * still loading objects after IMAGE_SETTLE_NS (it is starting, or in
 * dlopen()): the list is read only while the loader says it is whole. */
#define IMAGE_SETTLE_NS (1000u * 1000u * 1000u)
int mstat_image_read(struct image *im, pid_t pid, char *err, size_t len);
void mstat_image_free(struct image *im);

/* The address of `name`, defined by object `o` with a default version
 * (or none), 0 if it defines none. */
uint64_t mstat_image_symbol(const struct image *im, const struct image_object *o,
			    const char *name);

/* Whether object `o` defines version `ver` (a GLIBC_x.y name). */
bool mstat_image_has_version(const struct image *im, const struct image_object *o,
			     const char *ver);

/* The object whose soname is `soname`, or NULL. */
const struct image_object *mstat_image_by_soname(const struct image *im,
						 const char *soname);

/* The first object, in the loader's order, that defines `name`: the
 * definition a call by name binds to (dlsym(RTLD_DEFAULT)); NULL if
 * none. */
const struct image_object *mstat_image_defining(const struct image *im,
						const char *name);

#endif /* MSTAT_ATTACH_IMAGE_H */
