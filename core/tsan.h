/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - telling ThreadSanitizer what liburcu's publication orders.
 *
 * liburcu 0.13 publishes with rcu_assign_pointer() (a compiler barrier and
 * a volatile store on x86) and reads with rcu_dereference() (a volatile
 * load): correct, and invisible to ThreadSanitizer, which then reports the
 * reader's loads of a published object as racing with the writes that
 * filled it.  These annotations state the ordering RCU gives, and only
 * that: MSTAT_PUBLISHING(p) just before rcu_assign_pointer() of p, and
 * MSTAT_RECEIVED(p) just after rcu_dereference() returned p.  Outside a
 * -fsanitize=thread build they are nothing.
 */
#ifndef MSTAT_CORE_TSAN_H
#define MSTAT_CORE_TSAN_H

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define MSTAT_PUBLISHING(p) __tsan_release((void *)(p))
#define MSTAT_RECEIVED(p) __tsan_acquire((void *)(p))
#else
#define MSTAT_PUBLISHING(p) ((void)0)
#define MSTAT_RECEIVED(p) ((void)0)
#endif

#endif /* MSTAT_CORE_TSAN_H */
