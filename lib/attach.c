/* SPDX-License-Identifier: MIT */
/* attach.c - the entry points of the library mstat-attach injects; see
 * attach.h and shm/inject.h. */
#include "lib/attach.h"

#include <link.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "lib/exit.h"
#include "shm/inject.h"
#include "lib/next.h"
#include "lib/own.h"
#include "lib/patch.h"
#include "lib/shadow.h"
#include "lib/start.h"
#include "lib/status.h"
#include "lib/stop.h"
#include "lib/writer.h"

/* The stack of the thread that makes the segment: start(), and the
 * loading of libunwind. */
#define PUBLISHER_STACK (256u * 1024u)

static struct {
	bool prepared;  /* the constructor did its part */
	bool attached;  /* the slots are patched */
	char why[MSTAT_ATTACH_ERR_MAX]; /* why not prepared */
} att;

static void
refuse(const char *const *parts)
{
	mstat_status_join(att.why, sizeof(att.why), parts);
}

/* Whether another copy of this library is loaded: a second mstat-attach
 * of the same process at the same time.  Constructors run one at a time,
 * inside dlopen(), under the loader's lock: the first copy is in the list
 * when the second's constructor looks. */
static bool
another_copy(void)
{
	const void *self = mstat_next_object_of((const void *)(uintptr_t)mstat_attach_prepare);

	for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
		if (l == self)
			continue;
		const char *strtab = NULL;
		uintptr_t soname = UINTPTR_MAX;
		for (const ElfW(Dyn) *d = l->l_ld; d && d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_STRTAB)
				strtab = (const char *)(d->d_un.d_ptr < l->l_addr && l->l_addr
								? d->d_un.d_ptr + l->l_addr
								: d->d_un.d_ptr);
			else if (d->d_tag == DT_SONAME)
				soname = d->d_un.d_val;
		}
		if (strtab && soname != UINTPTR_MAX &&
		    strcmp(strtab + soname, MSTAT_ATTACH_SONAME) == 0)
			return true;
	}
	return false;
}

void
mstat_attach_prepare(void)
{
	if (another_copy()) {
		refuse((const char *const[]){
			"it counts already: another mstat-attach attached it", NULL });
		return;
	}
	if (mstat_proc.disabled) {
		refuse((const char *const[]){ "its environment has MSTAT_DISABLE", NULL });
		return;
	}
	/* The allocator the process calls (dlsym(RTLD_DEFAULT)), and its
	 * blocks sized from glibc's header (next.c's self-test). */
	if (!mstat_next_ready() || !mstat_next_header()) {
		refuse((const char *const[]){
			"its malloc is not glibc's, or glibc's chunk header is "
			"not what this library reads", NULL });
		return;
	}
	if (!mstat_shadow_init()) {
		refuse((const char *const[]){ "no memory for the map of blocks", NULL });
		return;
	}
	if (mstat_patch_prepare(att.why, sizeof(att.why)) < 0)
		return;
	mstat_status_set((const char *const[]){ "injected, not counting yet", NULL });
	att.prepared = true;
}

static bool
args_ok(struct mstat_attach_args *a)
{
	return a && a->version == MSTAT_ATTACH_ARGS_VERSION &&
	       a->size == sizeof(*a);
}

static void
answer(struct mstat_attach_args *a, const char *why)
{
	mstat_status_join(a->err, sizeof(a->err), (const char *const[]){ why, NULL });
}

/*
 * The attach: this thread is at a point where it holds none of glibc's
 * locks the patching takes (mstat-attach saw to that); the program's
 * other threads run on.  What the library's functions read once called
 * is set before the first slot leads to them: on x86-64 a thread that
 * calls through a slot it loads sees every store made before the slot's.
 * From the first slot written, the process counts, into process memory.
 */
MSTAT_EXPORT struct mstat_attach_state mstat_attach_state;

/* The segment, made as a starting process makes it (start.c), the
 * membarrier registration first; the outcome said. */
static void
publish_now(void)
{
	if (mstat_proc.writer_mode == MSTAT_MODE_MEMBARRIER)
		mstat_stop_start();
	mstat_start_publish_claimed();
	mstat_attach_state.rc = mstat_start_segment() ? 0 : -1;
	mstat_status_join(mstat_attach_state.status, sizeof(mstat_attach_state.status),
			  (const char *const[]){ mstat_proc.status, NULL });
	/* Release: pairs with mstat-attach's read of `done` before the
	 * rest (on x86-64 every store is one). */
	atomic_store_explicit(&mstat_attach_state.done, 1, memory_order_release);
}

static void *
publisher(void *unused)
{
	(void)unused;
	publish_now();
	return NULL;
}

/*
 * The segment is made by a thread of the library's own, which ends then:
 * the registration for membarrier that comes first waits for an RCU grace
 * period once the process has threads (4 to 24 ms here), which the
 * program's thread that runs the attach would wait too.  It blocks every
 * signal (it inherits this thread's mask, all blocked while the attach
 * runs), so that none meant for the process goes to it.  Where no thread
 * can be made, this one does it.  Meanwhile the process counts into
 * process memory, which the segment takes in.
 */
static void
publish(void)
{
	pthread_attr_t at;
	pthread_t t;

	mstat_exit_handlers_attached();
	mstat_own_begin(); /* what glibc allocates for the thread */
	bool threaded = pthread_attr_init(&at) == 0;
	threaded = threaded && pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
		   pthread_attr_setstacksize(&at, PUBLISHER_STACK) == 0 &&
		   pthread_create(&t, &at, publisher, NULL) == 0;
	pthread_attr_destroy(&at);
	mstat_own_end();
	if (!threaded)
		publish_now();
}

/*
 * The attach: this thread is at a point where it holds none of glibc's
 * locks the patching takes (mstat-attach saw to that); the program's
 * other threads run on.  What the library's functions read once called
 * is set before the first slot leads to them: on x86-64 a thread that
 * calls through a slot it loads sees every store made before the slot's.
 * From the first slot written, the process counts, into process memory;
 * then the segment is made by a thread of the library's own (publish()).
 */
MSTAT_EXPORT int
mstat_attach_start(struct mstat_attach_args *a)
{
	if (!args_ok(a))
		return -1;
	if (a->memfd >= 0)
		close(a->memfd); /* the loaded library keeps its mapping */
	if (!att.prepared) {
		answer(a, att.why[0] ? att.why : "the library did not start");
		return -1;
	}
	if (att.attached) {
		answer(a, "it counts already: another mstat-attach attached it");
		return -1;
	}
	a->name[sizeof(a->name) - 1] = '\0';
	if (a->name[0])
		mstat_status_join(mstat_proc.name, sizeof(mstat_proc.name),
				  (const char *const[]){ a->name, NULL });
	mstat_proc.attached_ns = mstat_clock_ns(CLOCK_REALTIME);
	mstat_start_publish_claim();
	mstat_proc.started = true;
	if (mstat_patch_apply(a->err, sizeof(a->err)) < 0) {
		mstat_proc.started = false;
		mstat_proc.attached_ns = 0;
		atomic_store_explicit(&mstat_proc.starting, false, memory_order_relaxed);
		return -1;
	}
	att.attached = true;
	mstat_status_set((const char *const[]){
		"counting in process memory, since the attach", NULL });
	publish();
	a->err[0] = '\0';
	return 0;
}
