/* SPDX-License-Identifier: MIT */
/* attach.c - the entry points of the library mstat-attach injects; see
 * attach.h and shm/inject.h. */
#include "attach.h"

#include <string.h>
#include <time.h>

#include "clock.h"
#include "exit.h"
#include "inject.h"
#include "next.h"
#include "patch.h"
#include "shadow.h"
#include "start.h"
#include "status.h"
#include "writer.h"

static struct {
	bool prepared;  /* the constructor did its part */
	bool attached;  /* the slots are patched */
	char why[MSTAT_ATTACH_ERR_MAX]; /* why not prepared */
} att;

static void
refuse(const char *const *parts)
{
	mstat_join(att.why, sizeof(att.why), parts);
}

void
mstat_attach_prepare(void)
{
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
	mstat_join(a->err, sizeof(a->err), (const char *const[]){ why, NULL });
}

/*
 * The attach: every other thread is stopped, none inside the loader or
 * this library (mstat-attach saw to that), and this one is not inside
 * the allocator.  It takes no lock and allocates nothing: a stopped
 * thread may hold glibc's.  What the library's functions read once
 * called is set before the first slot leads to them: on x86-64 a thread
 * that calls through a slot it loads sees every store made before the
 * slot's.
 */
MSTAT_EXPORT int
mstat_attach_start(struct mstat_attach_args *a)
{
	if (!args_ok(a))
		return -1;
	if (!att.prepared) {
		answer(a, att.why[0] ? att.why : "the library did not start");
		return -1;
	}
	if (att.attached) {
		answer(a, "attached already");
		return -1;
	}
	a->name[sizeof(a->name) - 1] = '\0';
	if (a->name[0])
		mstat_join(mstat_proc.name, sizeof(mstat_proc.name),
			   (const char *const[]){ a->name, NULL });
	mstat_proc.attached_ns = mstat_clock_ns(CLOCK_REALTIME);
	mstat_publish_claim();
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
	a->err[0] = '\0';
	return 0;
}

/* The segment, made as a starting process makes it: the other threads
 * run, and count into process memory meanwhile. */
MSTAT_EXPORT int
mstat_attach_publish(struct mstat_attach_args *a)
{
	if (!args_ok(a))
		return -1;
	if (!att.attached) {
		answer(a, "not attached");
		return -1;
	}
	mstat_exit_handlers_attached();
	mstat_publish_claimed();
	mstat_join(a->err, sizeof(a->err), (const char *const[]){ mstat_proc.status, NULL });
	return mstat_writer_segment() ? 0 : -1;
}
