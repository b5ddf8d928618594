/* SPDX-License-Identifier: MIT */
/* next.c - finding the next allocator, and glibc's self-test; see next.h. */
#include "lib/next.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "lib/status.h"
#include "lib/writer.h"

/* The loaded object (its link map) that holds code address `fn`, or NULL.
 * _dl_find_object() answers without the symbol search dladdr() makes
 * (5 us against 6 ns here), and without a lock. */
MSTAT_START_TEXT const void *
mstat_next_object_of(const void *fn)
{
	struct dl_find_object o;

	return _dl_find_object((void *)fn, &o) == 0 ? o.dlfo_link_map : NULL;
}

/* Whether the next allocator is glibc's and its header says what its
 * malloc_usable_size() says, on small, aligned and calloc'd blocks.
 * Allocates from the next allocator directly: nothing is counted.  Cheap
 * and without side effects on the host: no block reaches glibc's mmap
 * threshold (freeing an mmapped block would raise it), and calloc() zeroes
 * only a few pages a starting process would fault in.  Mmapped chunks are
 * decoded by the same rule of glibc's musable() that these blocks pass:
 * IS_MMAPPED, then a 16-byte header instead of 8. */
static MSTAT_START_TEXT bool
glibc_layout_holds(void)
{
	static const size_t sizes[] = { 0, 24, 25, 1000 };
	const struct link_map *m = mstat_next_object_of(*(void **)&mstat_next.malloc);
	bool ok = true;

	/* Under a valgrind tool that replaces malloc (memcheck, massif,
	 * helgrind, ...), blocks are valgrind's, with no glibc header, and
	 * reading before one is reported.  Such a tool preloads a
	 * vgpreload_<tool> object besides vgpreload_core; callgrind and
	 * cachegrind preload only the core, and run glibc's malloc. */
	const char *v = getenv("LD_PRELOAD");
	for (; v && *v; v++)
		if (memcmp(v, "vgpreload_", 10) == 0 &&
		    memcmp(v + 10, "core", 4) != 0)
			return false;
	/* glibc's: the object that defines getenv() too.  (The blocks
	 * below decide; this only spares another allocator the trial.) */
	char *(*libc_getenv)(const char *) = getenv;
	if (sizeof(size_t) != 8 || !m ||
	    m != mstat_next_object_of(*(void **)&libc_getenv) ||
	    mstat_next_object_of(*(void **)&mstat_next.usable) != m)
		return false;
	for (size_t i = 0; ok && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p[3] = { mstat_next.malloc(sizes[i]),
			       mstat_next.calloc(1, sizes[i]),
			       mstat_next.memalign(256, sizes[i]) };
		for (int k = 0; k < 3; k++) {
			size_t u;
			if (p[k]) {
				(void)mstat_glibc_class(p[k], &u);
				ok &= u == mstat_next.usable(p[k]) &&
				      mstat_glibc_usable(p[k]) == u;
			}
			mstat_next.free(p[k]);
		}
	}
	return ok;
}

/* The next definition: after this library in the loader's order; in the
 * library mstat-attach injects, which is in no order of the process's
 * (loaded RTLD_LOCAL, last), the process's own, by name. */
#if MSTAT_ATTACH
#define NEXT_HANDLE RTLD_DEFAULT
#else
#define NEXT_HANDLE RTLD_NEXT
#endif
#define NEXT(name)                                                           \
	(*(void **)&mstat_next.name = dlsym(NEXT_HANDLE, #name)) != NULL

/* True once the next allocator is known.  False while this thread is in
 * dlsym, while another thread resolves (it is never waited for: it may hold
 * a loader lock this thread's caller holds too), or if resolution failed:
 * the caller then allocates from the arena. */
MSTAT_START_TEXT bool
mstat_next_resolve(void)
{
	/* Acquire: pairs with the releases below (MSTAT_NEXT_FAILED, and the
	 * publication of the resolved pointers); a state seen is complete. */
	int s = atomic_load_explicit(&mstat_next.state, memory_order_acquire);

	if (s != MSTAT_NEXT_NONE || mstat_thread.resolving)
		return s >= MSTAT_NEXT_ASK;
	if (!atomic_compare_exchange_strong_explicit(&mstat_next.state, &s,
						     MSTAT_NEXT_RESOLVING,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return s >= MSTAT_NEXT_ASK;
	mstat_thread.resolving = true;
	bool ok = NEXT(malloc) && NEXT(free) && NEXT(calloc) && NEXT(realloc) &&
		  NEXT(posix_memalign) && NEXT(aligned_alloc) && NEXT(memalign);
	*(void **)&mstat_next.usable = dlsym(NEXT_HANDLE, "malloc_usable_size");
	ok = ok && mstat_next.usable;
	mstat_thread.resolving = false;
	if (!ok) {
		mstat_status_warn("no next malloc to forward to (RTLD_NEXT)",
				  "serving a small static arena only");
		/* Release: pairs with the acquire loads of mstat_next.state. */
		atomic_store_explicit(&mstat_next.state, MSTAT_NEXT_FAILED,
				      memory_order_release);
		return false;
	}
	bool header = glibc_layout_holds();
	/* Before the state: a thread that sees MSTAT_NEXT_HEADER may be handed a
	 * `fast` slot, whose callers read sizes from the header. */
	if (header)
		mstat_slots_header_sizes(true);
	/* Release: publishes every field above; pairs with the acquire in
	 * mstat_next_state() and at the top of this function. */
	atomic_store_explicit(&mstat_next.state,
			      header ? MSTAT_NEXT_HEADER : MSTAT_NEXT_ASK,
			      memory_order_release);
	return true;
}
